"""Claims, the claim-level model, the rules judge and the claim verifier (issue 11, sections 1 and 3)."""

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evqual.data import load_sample
from evqual.models import ModelLoadError, default_model_path
from evqual.text import spacy_available
from evqual.verify import (
    ClaimExtractor,
    ClaimModel,
    ClaimVerifier,
    Evidence,
    Judgement,
    RulesJudge,
    answer_from,
    claim_dataset,
    extract_claims,
    is_opinion,
    is_question,
    load_claim_model,
    save_claim_model,
    tier_of,
)

CTX = ["The Golden Gate Bridge opened in 1937 after four years of construction. It is 2.7 km long.",
       "Paris is the capital of France."]


# ----------------------------------------------------------------------------------------------- claims
def test_claims_are_spans_of_the_output():
    out = "The plant opened in 1932, but it closed in 1990; staff moved to Leeds. Why?"
    claims = extract_claims(out)
    assert [c.text for c in claims] == ["The plant opened in 1932", "but it closed in 1990", "staff moved to Leeds."]
    assert all(out[c.start:c.end] == c.text for c in claims)


@pytest.mark.parametrize("text", ["Did the bridge open in 1932?", "What happened next?\u201d"])
def test_questions_are_not_claims(text):
    assert is_question(text)
    assert extract_claims(text) == []


@pytest.mark.parametrize("text", ["I think the plan is good.", "In my opinion, it failed.", "Personally, I like it.",
                                  "I hope this helps!", "Feel free to ask more."])
def test_opinions_are_not_claims(text):
    assert is_opinion(text)
    assert extract_claims(text) == []


@pytest.mark.parametrize("text", ["The plan was approved in 2020.", "Thinking machines were built in 1950.",
                                  "We think tanks are useful."[3:]])
def test_facts_are_kept(text):
    assert not is_opinion(text) and not is_question(text)
    assert len(extract_claims(text)) == 1


def test_bad_backend_and_input():
    with pytest.raises(ValueError, match="backend must be one of"):
        ClaimExtractor(backend="llm")
    with pytest.raises(TypeError, match="output 1 must be a string"):
        ClaimExtractor().extract_batch(["ok", 3])


@given(st.text(max_size=300))
@settings(max_examples=150, deadline=None)
def test_claims_fuzz(text):
    claims = extract_claims(text)
    prev = -1
    for c in claims:
        assert 0 <= c.start < c.end <= len(text) and text[c.start:c.end] == c.text
        assert c.start >= prev
        prev = c.end


@pytest.mark.skipif(not spacy_available(), reason="needs the ner extra")
def test_spacy_claims_have_triples():
    claims = ClaimExtractor(backend="spacy").extract(
        "The council approved the budget and rejected the stadium plan. Was it wise?")
    assert [c.text for c in claims] == ["The council approved the budget", "and rejected the stadium plan."]
    assert claims[0].triple == ("The council", "approved", "the budget")
    assert claims[1].triple == ("The council", "rejected", "the stadium plan")


# ----------------------------------------------------------------------------------------- claim model
@pytest.fixture(scope="module")
def sample_model():
    X, y, owner, _ = claim_dataset(load_sample(), ClaimExtractor())
    return ClaimModel(max_iter=30).fit(X, y, groups=owner), X, y


def test_claim_dataset_labels_follow_spans():
    ex = load_sample()
    X, y, owner, claims = claim_dataset(ex, ClaimExtractor())
    assert len(X) == len(y) == len(owner) == len(claims) and 0 < y.mean() < 1
    examples = list(ex.examples)
    for k in range(len(claims)):
        spans = examples[owner[k]].spans or ()
        c = claims[k]
        assert y[k] == int(any(s.start < c.end and c.start < s.end for s in spans))


def test_claim_model_probabilities(sample_model):
    model, X, y = sample_model
    p = model.predict_proba(X)
    assert p.shape == (len(X), 2) and np.allclose(p.sum(1), 1) and ((p >= 0) & (p <= 1)).all()
    assert model.predict_proba(X[:0]).shape == (0, 2)


def test_claim_model_needs_two_classes():
    X, y, owner, _ = claim_dataset(load_sample(), ClaimExtractor())
    with pytest.raises(ValueError, match="both classes"):
        ClaimModel(max_iter=5).fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match="calibration must be"):
        ClaimModel(max_iter=5, calibration="beta").fit(X, y)


def test_claim_model_roundtrip(sample_model, tmp_path):
    model, X, _ = sample_model
    folder = save_claim_model(model, tmp_path / "claims")
    loaded = load_claim_model(folder)
    assert np.array_equal(loaded.predict_proba(X[:20]), model.predict_proba(X[:20]))
    assert json.loads((folder / "meta.json").read_text())["format"] == "evqual-claim-model/1"


def test_claim_model_tampered_file_is_refused(sample_model, tmp_path):
    folder = save_claim_model(sample_model[0], tmp_path / "claims")
    data = bytearray((folder / "model.skops").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / "model.skops").write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="SHA-256"):
        load_claim_model(folder)


def test_claim_model_meta_is_validated(sample_model, tmp_path):
    folder = save_claim_model(sample_model[0], tmp_path / "claims")
    meta = json.loads((folder / "meta.json").read_text())
    for key, value, message in (("format", "other/1", "field 'format'"),
                                ("features", ["made.up.v9"], "does not compute"),
                                ("model_sha256", 3, "model_sha256")):
        bad = dict(meta, **{key: value})
        (folder / "meta.json").write_text(json.dumps(bad))
        with pytest.raises(ModelLoadError, match=message):
            load_claim_model(folder)
    (folder / "meta.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="meta.json"):
        load_claim_model(folder)
    with pytest.raises(ModelLoadError, match="no such file"):
        load_claim_model(tmp_path / "nowhere")


def test_a_detector_file_is_not_a_claim_model(sample_model, tmp_path):
    """Another trusted evqual object under a claim model's name: refused by the root-type audit."""
    folder = save_claim_model(sample_model[0], tmp_path / "claims")
    shutil.copy(default_model_path() / "model.evqpack", folder / "model.skops")  # content decides the format
    import hashlib

    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256((folder / "model.skops").read_bytes()).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="the root must be an evqual.verify._claim_model.ClaimModel"):
        load_claim_model(folder)


def test_shipped_claim_model_loads():
    model = load_claim_model()
    assert model.meta_["training_data"]["claims"] > 1000


# ------------------------------------------------------------------------------------------------ judge
@pytest.fixture(scope="module")
def judge():
    return RulesJudge()


def test_rules_judge_verdicts(judge):
    js = judge.judge(["The bridge opened in 1937.", "The bridge is 3.5 km long.", "Paris is the capital of Spain."],
                     [[], [], []], chunks=CTX)
    assert [j.verdict for j in js] == ["SUPPORTED", "REFUTED", "REFUTED"]
    assert js[1].reason.startswith("number") and "3.5" in js[1].reason
    assert js[2].evidence[0].chunk == 1  # the disagreeing passage first
    assert all(0 <= j.probability <= 1 for j in js)


def test_rules_judge_bad_input(judge):
    assert judge.judge([], [], chunks=CTX) == []
    with pytest.raises(ValueError, match="2 statements but 1 evidence"):
        judge.judge(["a", "b"], [[]], chunks=CTX)
    j = judge.judge([None], [[]], chunks=CTX)[0]
    assert j.verdict == "NO_EVIDENCE" and "not a string" in j.error


def test_answer_from():
    assert answer_from(Judgement("SUPPORTED", 0.95)) == "YES"
    assert answer_from(Judgement("REFUTED", 0.95)) == "NO"
    assert answer_from(Judgement("NO_EVIDENCE", 0.2)) == "NO"
    assert answer_from(Judgement("NO_EVIDENCE", 0.6)) == "NOT SURE"
    assert answer_from(Judgement("NO_EVIDENCE", 0.6, answer="YES")) == "YES"


# --------------------------------------------------------------------------------------------- verifier
def test_tiers():
    assert [tier_of(x) for x in (1.0, 0.85, 0.84, 0.6, 0.59, None)] == \
        ["accept", "accept", "revise", "revise", "reject", "accept"]
    assert tier_of(0.7, (0.9, 0.8)) == "reject"


@pytest.fixture(scope="module")
def verifier(judge):
    return ClaimVerifier(judge=judge)


def test_verifier_flags_a_wrong_year(verifier):
    ok = verifier.verify(query="q", context=CTX, output="The bridge opened in 1937. It is 2.7 km long.")
    bad = verifier.verify(query="q", context=CTX, output="The bridge opened in 1932. It is 2.7 km long.")
    assert (ok.score, ok.flagged, ok.tier, ok.factual_precision) == (0.0, False, "accept", 1.0)
    assert (bad.score, bad.flagged, bad.tier) == (0.5, True, "reject")
    c = bad.claims[0]
    assert c.verdict == "REFUTED" and c.evidence[0]["chunk"] == 0
    ev = c.evidence[0]
    assert CTX[0] in ev["text"] and ev["end"] - ev["start"] == len(ev["text"])
    d = bad.to_dict()
    assert json.loads(json.dumps(d)) == d


def test_verifier_tau_moves_verdicts(judge):
    # no name: the engine reads "Joseph Strauss" against the bridge's name as a swap, which refutes below tau
    out = "The bridge was painted red by a local firm."
    strict = ClaimVerifier(judge=judge, tau=0.99).verify(context=CTX, output=out)
    lax = ClaimVerifier(judge=judge, tau=0.0).verify(context=CTX, output=out)
    assert strict.claims[0].verdict == "NO_EVIDENCE" and lax.claims[0].verdict == "SUPPORTED"


def test_verifier_no_claims(verifier):
    r = verifier.verify(context=CTX, output="Is it long?")
    assert (r.score, r.flagged, r.tier, r.factual_precision, r.claims) == (0.0, False, "accept", None, [])


def test_verifier_errors_are_results(verifier):
    r = verifier.verify(context=CTX, output=None)
    assert r.error.startswith("TypeError") and r.score is None and r.flagged is None
    r = verifier.verify(context=3.5, output="The bridge opened.")
    assert r.error is not None


@pytest.mark.parametrize("kw, message", [({"tau": 1.5}, "tau must be"), ({"tiers": (0.5, 0.9)}, "tiers must be"),
                                         ({"tiers": (0.9,)}, "tiers must be")])
def test_verifier_parameters(kw, message, judge):
    with pytest.raises(ValueError, match=message):
        ClaimVerifier(judge=judge, **kw).verify(context=CTX, output="x")


class _Failing:
    name = "failing"

    def judge(self, statements, evidence, *, query="", chunks=()):
        return [Judgement("NO_EVIDENCE", 0.0, [Evidence(0, -1, -1, "")], error="backend down") for _ in statements]


def test_every_claim_failing_is_an_answer_error():
    r = ClaimVerifier(judge=_Failing()).verify(context=CTX, output="The bridge opened in 1937.")
    assert r.error.startswith("every claim failed") and r.score is None
    assert r.claims[0].evidence[0]["start"] == 0  # a chunk named by index gets its offsets


@given(st.text(max_size=200), st.lists(st.text(max_size=80), max_size=3))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_verifier_fuzz(verifier, output, context):
    r = verifier.verify(context=context or [""], output=output)
    assert r.error is None or r.score is None
    if r.error is None:
        assert 0.0 <= r.score <= 1.0 and r.tier in ("accept", "revise", "reject")
        for c in r.claims:
            assert output[c.start:c.end] == c.text and c.verdict in ("SUPPORTED", "REFUTED", "NO_EVIDENCE")


def test_a_negated_wrong_value_is_not_refuted(judge):
    """issue 11: "did not open in 1932" against "opened in 1937" was REFUTED (the date check ignores negation)."""
    plain, negated = judge.judge(["The bridge opened in 1932.", "The bridge did not open in 1932."], [[], []],
                                 chunks=CTX)
    assert plain.verdict == "REFUTED" and negated.verdict != "REFUTED"


def test_a_negation_of_a_wrong_value_is_supported_and_answers_yes(judge):
    """issue 24: the rules judge answered NO to "did not open in 1932" where the evidence says 1937, so
    MetaRAG's antonyms of a false factoid carried no penalty.  The negation the evidence does not share
    ("no more than 12" against "do not take more than 8") is not made true by the other value."""
    negated, never, right = judge.judge(["The bridge did not open in 1932.", "The bridge never opened in 1932.",
                                         "The bridge did not open in 1937."], [[], [], []], chunks=CTX)
    assert (negated.verdict, negated.answer) == ("SUPPORTED", "YES") and "1937" in negated.reason
    assert never.answer == "YES"
    assert right.answer is None  # no value differs: the probability decides, as before
    leaflet = ["Adults: take one or two tablets every 4 to 6 hours. Do not take more than 8 tablets in 24 hours."]
    for bound in ("Adults can take no more than 12 tablets in 24 hours.",
                  "Adults should not take more than 12 tablets in 24 hours."):
        j = judge.judge([bound], [[]], chunks=leaflet)[0]
        assert j.answer is None and j.verdict != "SUPPORTED", bound


def test_the_claim_verifier_keeps_a_support_the_judge_decided_by_a_check():
    """issue 24: the judge's SUPPORTED for "did not open in 1932" (evidence: 1937) became NO_EVIDENCE in the
    claim verifier, which re-derived every verdict but REFUTED from the probability."""
    from evqual.verify import make_verifier

    r = make_verifier("claims").verify(context=CTX, output="The Golden Gate Bridge did not open in 1932.")
    assert [c.verdict for c in r.claims] == ["SUPPORTED"] and not r.flagged


def test_building_the_verifier_is_not_the_first_answers_latency(monkeypatch):
    """issue 24: the first answer's latency_ms included loading the claim model (0.5-1.4 s)."""
    import time

    from evqual.verify import make_verifier

    for method in ("claims", "metarag"):
        v = make_verifier(method)
        if method == "claims":
            real = v._parts

            def slow_parts(real=real):
                time.sleep(1.5)
                return real()

            monkeypatch.setattr(v, "_parts", slow_parts)
        else:
            real = v._mutator

            def slow_mutator(real=real):
                time.sleep(1.5)
                return real()

            monkeypatch.setattr(v, "_mutator", slow_mutator)
        r = v.verify(context=["It opened in 1937."], output="It opened in 1952.", query="When did it open?")
        # the building sleeps 1.5 s; an answer takes ~0.01-0.3 s (more on a loaded machine: 400 ms was flaky)
        assert r.error is None and r.latency_ms < 1500, (method, r.latency_ms)


def test_claims_carry_p_supported_and_evidence_overlap_on_a_one_passage_context():
    """issue 24: the claim's probability is named for what it is (P(supported), whatever the verdict), and each
    evidence passage has an overlap in [0, 1] beside BM25's score, which is 0 or negative on one or two passages."""
    from evqual.verify import ClaimVerifier, RulesJudge

    r = ClaimVerifier(judge=RulesJudge()).verify(
        context=["Joseph Strauss designed the Golden Gate Bridge, which opened in 1937."],
        output="Joseph Strauss designed the bridge. It opened in 1932.")
    d = r.to_dict()
    for c in d["claims"]:
        assert "probability" not in c and 0.0 <= c["p_supported"] <= 1.0
        for e in c["evidence"]:
            assert 0.0 <= e["overlap"] <= 1.0 and "score" in e
    first = d["claims"][0]
    assert first["evidence"][0]["overlap"] >= 0.75  # "Joseph Strauss designed the bridge": all but none new
    assert any(c["verdict"] == "REFUTED" for c in d["claims"])
