"""The evidence engine inside the detector (issue 22): claim blocks, the claim model stage, claim risks for the
span tagger, and one scale for answer and sentence risks."""

import json
import shutil
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.data import Span, load_sample, make_example
from evqual.evidence import CLAIM_FEATURES, EvidenceEngine
from evqual.models import (
    CLAIM,
    SENT,
    TOK,
    Detector,
    FrameBuilder,
    ModelLoadError,
    claim_block,
    compose_risks,
    load_detector,
    save_detector,
)
from evqual.models._estimators import (
    CLAIM_AGGREGATE_NAMES,
    aggregate_claim_risks,
    sentence_claim_risks,
)
from evqual.models._spans import _token_claim_risks


@pytest.fixture(scope="module")
def sample_frame():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FrameBuilder().fit_transform(load_sample())


@pytest.fixture(scope="module")
def detector(evqual_sample_detector):
    return evqual_sample_detector


# ------------------------------------------------------------------ claim blocks
def test_claim_block_labels_claims_that_a_gold_span_overlaps():
    output = "The museum opens at noon. It closes at 9 pm on Sundays."
    reading = EvidenceEngine().read(output, ["The museum opens at noon and closes at 6 pm."])
    gold = [Span(output.index("9 pm"), output.index("9 pm") + 4)]
    block = claim_block(reading, [(0, 25), (26, len(output))], gold)
    assert block.values.shape == (len(reading.claims), len(CLAIM_FEATURES))
    assert block.sentence.tolist() == [0, 1]
    assert block.labels.tolist() == [0, 1]
    assert claim_block(reading, [(0, 25), (26, len(output))], None).labels is None


def test_frame_holds_claims_and_transformed_claims_only_with_targets(sample_frame):
    blocks = sample_frame[CLAIM].tolist()
    assert len(blocks) == len(sample_frame)
    assert all(b.values.shape[1] == len(CLAIM_FEATURES) for b in blocks)
    assert all(len(b.sentence) == len(b.values) for b in blocks)
    assert sum(b.extra_values is not None for b in blocks) > 0
    extra = [b.extra_labels for b in blocks if b.extra_labels is not None]
    assert set(np.concatenate(extra).tolist()) == {0, 1}
    builder = FrameBuilder().fit(load_sample())
    bare = builder.transform(load_sample(), with_targets=False, with_tokens=False)[CLAIM].tolist()
    assert all(b.labels is None and b.extra_values is None for b in bare)
    # the transformations are seeded by the answer: the same frame twice
    again = builder.transform(load_sample())[CLAIM].tolist()
    for a, b in zip(blocks, again):
        assert (a.extra_values is None) == (b.extra_values is None)
        if a.extra_values is not None:
            np.testing.assert_array_equal(a.extra_values, b.extra_values)


def test_transformed_claims_carry_their_tags_and_can_be_left_out(sample_frame):
    # leave-one-type-out (scripts/loto_detector.py): a refit without the transformations of some tags
    from evqual.evidence import ClaimModel
    from evqual.models import StackedEvidenceClassifier

    blocks = [b for b in sample_frame[CLAIM] if b.extra_values is not None]
    assert all(len(b.extra_tags) == len(b.extra_labels) for b in blocks)
    tags = np.concatenate([b.extra_tags for b in blocks])
    flips = sorted({t for b in blocks for t, y in zip(b.extra_tags, b.extra_labels) if y == 1})
    assert flips and all(isinstance(t, str) and t for t in tags)
    seen = []

    class Spy(ClaimModel):
        def fit(self, X, y, sample_weight=None, **kw):
            seen.append(len(y))
            return super().fit(X, y, sample_weight=sample_weight, **kw)

    rows = range(len(sample_frame))
    for exclude in ((), (flips[0],)):
        est = StackedEvidenceClassifier(None, None, claim_estimator=Spy(max_iter=5), claim_exclude_tags=exclude)
        est._fit_claims(sample_frame, rows)
    assert seen[1] == seen[0] - int((tags == flips[0]).sum()) and seen[1] < seen[0]
    # a frame without tags (built before they existed) cannot be filtered: a clear error, not a silent no-op
    old = sample_frame.copy()
    old[CLAIM] = [b._replace(extra_tags=None) for b in sample_frame[CLAIM]]
    est = StackedEvidenceClassifier(None, None, claim_estimator=Spy(max_iter=5), claim_exclude_tags=(flips[0],))
    with pytest.raises(ValueError, match="transformation tags"):
        est._fit_claims(old, rows)


def test_training_split_is_the_detectors_split(sample_frame):
    from evqual.models import training_split

    fit_idx, val_idx = training_split(sample_frame, validation_pool="test")
    assert not set(fit_idx) & set(val_idx) and len(fit_idx) + len(val_idx) <= len(sample_frame)
    src = sample_frame["source_id"].to_numpy()
    assert not set(src[fit_idx]) & set(src[val_idx])  # grouped by source


def test_no_transformed_claims_at_rate_zero():
    frame = FrameBuilder(claim_transform_rate=0.0).fit_transform(list(load_sample())[:10])
    assert all(b.extra_values is None for b in frame[CLAIM])


# ------------------------------------------------------------------ aggregates
def test_sentence_claim_risks_take_max_noisy_or_and_count_per_sentence():
    class B:  # the one field sentence_claim_risks reads
        sentence = np.array([0, 0, 2])

    (a,) = sentence_claim_risks([B()], [np.array([0.5, 0.2, 0.9])], [3])
    np.testing.assert_allclose(a, [[0.5, 0.6, 2], [0, 0, 0], [0.9, 0.9, 1]])


@given(st.lists(st.floats(0, 1), max_size=8))
@settings(max_examples=60, deadline=None)
def test_claim_aggregates_are_bounded(risks):
    agg = aggregate_claim_risks([np.array(risks)])[0]
    names = dict(zip(CLAIM_AGGREGATE_NAMES, agg))
    if risks:
        assert names["agg.claim.max"] == max(risks)
        assert max(risks) - 1e-12 <= names["agg.claim.noisy_or"] <= 1.0
        assert names["agg.claim.count50"] == sum(r > 0.5 for r in risks)
    else:
        assert not agg.any()


def test_token_claim_risk_is_the_risk_of_the_claim_holding_it():
    from evqual.features import TokenBlock
    from evqual.models import ClaimBlock

    tok = TokenBlock(np.zeros((4, 1), dtype=np.float32), np.array([[0, 3], [4, 8], [10, 12], [20, 24]]),
                     np.array([0, 0, 0, 1]))
    block = ClaimBlock(np.zeros((2, 1)), np.array([[0, 9], [10, 15]]), np.array([0, 0]), None)
    out = _token_claim_risks(tok, block, np.array([0.2, 0.7]), n_sentences=2)
    # tokens 0-1 in claim 0, token 2 in claim 1, token 3 in no claim; the sentence maximum is 0.7 / 0
    np.testing.assert_allclose(out, [[0.2, 0.7], [0.2, 0.7], [0.7, 0.7], [0.0, 0.0]])


# ------------------------------------------------------------------ the claim stage
def test_detector_fits_a_claim_model_and_feeds_its_risks_on(detector, sample_frame):
    model = detector.model_
    assert model.claim_model_ is not None
    assert set(CLAIM_AGGREGATE_NAMES) <= set(model.feature_names_)
    risks = detector.claim_proba_frame(sample_frame)
    assert [len(r) for r in risks] == [len(b.values) for b in sample_frame[CLAIM]]
    assert all(((r >= 0) & (r <= 1)).all() for r in risks)
    assert detector.span_tagger_ is not None and detector.span_tagger_.uses_claim_risks_
    with pytest.raises(ValueError, match="claim risks"):
        detector.span_tagger_.token_proba(sample_frame, detector.sentence_proba_frame(sample_frame))
    # the engine's own features reach the tagger only through the claim risks
    assert not any(c.startswith("evidence.") for c in detector.span_tagger_.response_columns_)


def test_a_riskier_claim_never_lowers_the_answer_score(detector, sample_frame):
    model = detector.model_
    risks = model.claim_proba(sample_frame)
    sent = model.sentence_model_.sentence_proba(sample_frame, extra=model._sentence_extra(sample_frame, risks))
    M = model._response_matrix(sample_frame, sent, model._text_risks(sample_frame), risks)
    j = model.feature_names_.index("agg.claim.max")
    low, high = M.copy(), M.copy()
    low[:, j], high[:, j] = 0.0, 1.0
    p_low = model.response_model_.predict_proba(low)[:, 1]
    p_high = model.response_model_.predict_proba(high)[:, 1]
    assert (p_high >= p_low - 1e-12).all()


def test_stage_without_claim_estimator_is_the_old_model(sample_frame):
    from evqual.models._estimators import StackedEvidenceClassifier
    from sklearn.ensemble import HistGradientBoostingClassifier as H

    y = sample_frame["label"].astype(int).to_numpy()
    m = StackedEvidenceClassifier(H(max_iter=5), H(max_iter=5), cv=2).fit(sample_frame, y)
    assert m.claim_model_ is None and m.claim_proba(sample_frame) is None
    assert not any(n.startswith("agg.claim.") for n in m.feature_names_)


# ------------------------------------------------------------------ one scale
@given(st.floats(0, 1), st.lists(st.floats(0, 1), max_size=6))
@settings(max_examples=100, deadline=None)
def test_composed_risk_lies_between_the_highest_sentence_and_the_union_bound(answer, sentences):
    (r,) = compose_risks(np.array([answer]), [np.array(sentences)])
    if not sentences:
        assert r == answer
        return
    assert max(sentences) - 1e-12 <= r <= min(1.0, sum(sentences)) + 1e-12
    if max(sentences) <= answer <= min(1.0, sum(sentences)):
        assert r == answer


def test_issue_examples_of_inconsistent_scales_cannot_happen():
    # issue 22: an answer at 0.168 whose sentence is at 0.593; an answer at 0.80 whose only sentence is at 0.031
    out = compose_risks(np.array([0.168, 0.80]), [np.array([0.593, 0.1]), np.array([0.031])])
    assert out[0] >= 0.593 and out[1] == pytest.approx(0.031)


def test_detector_risks_are_composed_with_calibrated_sentence_risks(detector):
    d = detector.detect(load_sample())
    assert detector.compose == "bounds" and detector.sentence_calibrator_ is not None
    for risk, sent in zip(d.risk, d.sentence_risk):
        if len(sent):
            # the evidence floors act on the sentences, so the floored answer keeps within the bounds too
            assert sent.max() - 1e-9 <= risk <= min(1.0, sent.sum()) + 1e-9


@pytest.mark.slow
def test_risks_without_floors_are_composed_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        free = Detector("evqual", evidence_floor=False).fit(load_sample())
    d = free.detect(load_sample())
    for risk, sent in zip(d.risk, d.sentence_risk):
        if len(sent):
            assert sent.max() - 1e-9 <= risk <= min(1.0, sent.sum()) + 1e-9


def test_unknown_composition_is_refused_before_fitting():
    with pytest.raises(ValueError, match="compose must be one of"):
        Detector("evqual", compose="max").fit(load_sample())


@pytest.mark.slow
def test_compose_none_keeps_the_calibrated_answer_risk():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("evqual", compose="none").fit(load_sample())
    assert det.sentence_calibrator_ is None


def test_saved_detector_keeps_its_composition(detector, tmp_path):
    save_detector(detector, tmp_path / "m")
    again = load_detector(tmp_path / "m")
    assert again.compose == "bounds"
    data = load_sample()
    np.testing.assert_array_equal(again.predict_proba(data), detector.predict_proba(data))
    # meta.json and the model must agree on the composition
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "m", bad)
    meta = json.loads((bad / "meta.json").read_text())
    meta["compose"] = "none"
    (bad / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="compose"):
        load_detector(bad)


def test_saved_detector_records_how_its_floors_were_estimated(detector, tmp_path):
    save_detector(detector, tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert meta["evidence_floor_mode"] == ("fired" if detector.evidence_floor_ else None)
    for value, field in (("binding", "evidence_floor"), ("often", "evidence_floor_mode")):
        bad = tmp_path / f"bad-{value}"
        shutil.copytree(tmp_path / "m", bad)
        m = dict(meta, evidence_floor_mode=value)
        (bad / "meta.json").write_text(json.dumps(m))
        with pytest.raises(ModelLoadError, match=field):
            load_detector(bad)


def test_frame_columns_for_the_tagger(sample_frame):
    assert {SENT, TOK, CLAIM} <= set(sample_frame.columns)
    ex = make_example(query="q", context="Paris is in France.", output="Paris is in Spain.")
    frame = FrameBuilder().fit([ex]).transform([ex])
    assert len(frame[CLAIM].iloc[0].values) == 1


def test_one_scale_script_counts_flagged_answers_without_a_flagged_sentence(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "predictions.csv").write_text("id,label,risk,threshold\na,1,0.9,0.5\nb,0,0.6,0.5\nc,0,0.1,0.5\n")
    (tmp_path / "sentences.csv").write_text("id,risk,threshold\na,0.8,0.4\nb,0.3,0.4\nb,0.35,0.4\nc,0.1,0.4\n")
    script = Path(__file__).resolve().parent.parent / "scripts" / "one_scale.py"
    proc = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    # b is flagged (0.6 >= 0.5) with no sentence at 0.4; a's risk is above the sum of its one sentence's
    assert got["flagged"] == 2 and got["flagged_without_a_flagged_sentence"] == 1
    assert got["risk_above_sum_of_sentences"] == 1 and got["risk_below_riskiest_sentence"] == 0
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "absent")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "absent" in proc.stderr


def test_a_contradiction_floors_its_sentence_and_the_answer_shows_it(detector):
    # regression (issue 22, session 3): a wrong date floored the answer at 0.80 while its only sentence kept
    # risk 0.11; the floor now acts on the sentence the check fired on, before the composition
    from evqual.models import FLOOR_CHECKS

    assert detector.evidence_floor_ and all(k.split(":", 1)[1] in FLOOR_CHECKS for k in detector.evidence_floor_)
    ex = make_example(query="When did the bridge open?", context=["The bridge opened in 1932 after six years."],
                      output="The bridge opened in 1935.", task_type="QA")
    d = detector.detect([ex])
    floor = detector.evidence_floor_.get("QA:check.date.v1", detector.evidence_floor_.get("*:check.date.v1"))
    assert floor and d.sentence_risk[0][0] >= floor - 1e-9
    assert d.risk[0] == pytest.approx(d.sentence_risk[0][0])


def test_sentence_level_floors_are_precisions_of_sentence_labels(sample_frame):
    from evqual.models import evidence_floors

    floors = evidence_floors(sample_frame, level="sentence", prior=(0.0, 0.0), min_precision=0.0)
    blocks = [(b, t) for b, t in zip(sample_frame[SENT], sample_frame["task_type"]) if b.labels is not None]
    j = list(blocks[0][0].names).index("sent.check.number.v1")
    fired = np.concatenate([b.values[:, j] > 0 for b, _ in blocks])
    y = np.concatenate([b.labels for b, _ in blocks])
    if fired.any():
        assert floors["*:check.number.v1"] == pytest.approx(y[fired].mean())
    with pytest.raises(ValueError, match="level must be"):
        evidence_floors(sample_frame, level="claim")


def test_a_name_of_several_words_is_one_reason():
    # regression (issue 22, session 3): "Joseph Strauss" gave two ENTITY_UNSUPPORTED reasons, one per word
    from evqual.scoring import Scorer

    r = Scorer.load().score(query="Who designed the bridge?", context=["The bridge opened in 1932."],
                            output="It was designed by Joseph Strauss.", task_type="QA")
    mentions = [x.details.get("mention") for s in r.sentences for x in s.reasons if x.code == "ENTITY_UNSUPPORTED"]
    assert "Joseph Strauss" in mentions and "Joseph" not in mentions and "Strauss" not in mentions
