"""The production scoring path: Scorer.score / score_batch, reasons, policy, JSON, CLI, audit log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from evqual.cli import main
from evqual.data import make_example
from evqual.explain import REASONS, sentence_reasons
from evqual.features._analysis import analyze
from evqual.models import Detector
from evqual.scoring import Scorer, Policy, ScoreResult, read_audit_log
from evqual.text._entities import RegexEntityExtractor


@pytest.fixture(scope="module")
def det():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Scorer.load()


BRIDGE = dict(query="When did the bridge open?", context=["The bridge opened in 1932 after six years of work.",
                                                          "It is painted orange."],
              output="The bridge opened in 1935. It was designed by Joseph Strauss.")


def test_score_result_fields(det):
    r = det.score(**BRIDGE, id="b1")
    assert isinstance(r, ScoreResult) and r.id == "b1"
    assert 0.0 <= r.risk <= 1.0
    assert r.flagged == (r.risk >= r.threshold)
    assert r.model.method == det.detector.spec.name and len(r.model.sha256) == 64 and r.model.name == "default"
    assert [s.text for s in r.sentences] == ["The bridge opened in 1935.", "It was designed by Joseph Strauss."]
    for s in r.sentences:
        assert r.output[s.start:s.end] == s.text
        assert 0.0 <= s.risk <= 1.0
        assert s.evidence is not None
        joined = "\n\n".join(BRIDGE["context"])
        assert joined[s.evidence.start:s.evidence.end] == s.evidence.text
    assert r.sentences[0].reasons[0].code == "DATE_CONFLICT"
    assert "'1935'" in r.sentences[0].reasons[0].text and "'1932'" in r.sentences[0].reasons[0].text
    for sp in r.spans:
        assert r.output[sp.start:sp.end] == sp.text and 0 <= sp.risk <= 1


def test_every_flagged_sentence_cites_evidence(det):
    results = det.score_batch([BRIDGE, {**BRIDGE, "output": "Joseph Strauss built it in 1877 with 69 million."}])
    for r in results:
        if r.flagged:
            assert any(s.flagged for s in r.sentences)
        for s in r.sentences:
            if s.flagged:
                assert s.evidence is not None and s.evidence in r.citations


def test_json_round_trip(det):
    r = det.score(**BRIDGE)
    text = r.to_json()
    assert ScoreResult.from_json(text) == r
    assert json.loads(text)["sentences"][0]["reasons"][0]["code"] == "DATE_CONFLICT"
    with pytest.raises(ValueError, match="unknown ScoreResult fields"):
        ScoreResult.from_dict({**r.to_dict(), "bogus": 1})


def test_score_batch_keeps_order_and_matches_score(det):
    items = [{**BRIDGE, "id": f"x{i}", "output": out} for i, out in enumerate(
        ["The bridge opened in 1932.", "It is painted green.", "", "The bridge opened in 1935 and cost $9."])]
    batch = det.score_batch(items, batch_size=3)
    assert [r.id for r in batch] == ["x0", "x1", "x2", "x3"]
    single = [det.score(**it) for it in items]
    assert [round(r.risk, 12) for r in batch] == [round(r.risk, 12) for r in single]


def test_score_rejects_bad_input(det):
    with pytest.raises(TypeError, match="output must be a string"):
        det.score(context="c", output=3)
    with pytest.raises(TypeError, match=r"context\[1\] must be a string"):
        det.score(context=["a", 2], output="x")
    with pytest.raises(ValueError, match="unknown metadata keys"):
        det.score(context="c", output="x", metadata={"gender": "f"})


def test_topic_threshold_applies(det):
    r = det.score(query="Can pregnant women take ibuprofen for back pain?",
                  context=["Ibuprofen is contraindicated in the third trimester of pregnancy."],
                  output="Yes, ibuprofen is safe throughout pregnancy.")
    assert "healthcare" in r.topics and r.sensitive and r.threshold == 0.3
    plain = det.score(**BRIDGE)
    assert plain.topics == () and plain.threshold == det.detector.threshold_  # the policy follows the model
    strict = det.score(**BRIDGE, policy=Policy(general_threshold=0.0, sensitive_threshold=0.0, escalate_band=None,
                                               escalate_reasons=()))
    assert strict.flagged and strict.decision in ("warn", "regenerate", "abstain")


# ---------------------------------------------------------------- every reason code, by hand
def _reasons(query, context, output, task_type=None, risk=None):
    ex = make_example(query=query, context=context, output=output, task_type=task_type)
    an = analyze(ex, RegexEntityExtractor().extract(ex.output))
    return {r.code for i in range(len(an.offsets)) for r in sentence_reasons(ex, an, i, risk=risk)}


REASON_CASES = {
    "NUMBER_CONFLICT": ("How long?", ["The bridge is 500 metres long and carries six lanes."],
                        "The bridge is 300 metres long."),
    "DATE_CONFLICT": ("When?", ["The bridge opened in 1932."], "The bridge opened in 1935."),
    "UNIT_CONFLICT": ("Dose?", ["The usual adult dose is 500 mg every six hours."],
                      "The usual adult dose is 500 g every six hours."),
    "ENTITY_CONFLICT": ("Capital?", ["Paris is the capital and largest city of France."],
                        "Paris is the capital of Spain."),
    "QUANTIFIER_SHIFT": ("Register?", ["The committee said residents must register their bicycles with the city."],
                         "The committee said residents may register their bicycles with the city."),
    "NEGATION_CONFLICT": ("Budget?", ["The council approved the new budget on Monday after a long debate."],
                          "The council did not approve the new budget on Monday."),
    "ROLE_SWAP": ("Who won?", ["In the final, Arsenal beat Chelsea 2-1 on Sunday."],
                  "In the final, Chelsea beat Arsenal 2-1 on Sunday."),
    "UNSUPPORTED_CLAIM": ("When?", ["The bridge opened in 1932 after six years of work."],
                          "The bridge opened in 1932. Critics praised its elegant suspension towers and graceful "
                          "cables."),
    "NUMBER_UNSUPPORTED": ("How long?", ["The bridge is long."], "The bridge is 300 long."),
    "ENTITY_UNSUPPORTED": ("Who?", ["The bridge was designed by an engineer."],
                           "The bridge was designed by Joseph Strauss."),
    "NOVEL_PHRASE": ("What?", ["The bridge opened in 1932."], "The bridge was painted bright orange."),
    "NOVEL_WORDS": ("What?", ["The bridge opened in 1932 to traffic."], "The bridge opened in 1932 to heavy traffic."),
    "LOW_SUPPORT": ("What?", ["The bridge opened in 1932."], "Tourists enjoy ferry rides around islands."),
    "LOGIC_CONFLICT": ("Why?", ["Rainfall is associated with lower sales at the market."],
                       "Rainfall causes lower sales at the market."),
    "LOGIC_ADDED": ("Why?", ["The road closed. Heavy snow fell overnight."], "The road closed because of snow."),
    "LOGIC_DROPPED": ("Open?", ["The bridge is usually closed in winter."], "The bridge is closed in winter."),
    "BORROWED": ("Who?", ["Anna Berg founded the bakery in 1990.", "The weather in Bergen is rainy."],
                 "Anna Berg founded the bakery in Bergen in 1990."),
    "ANTONYM": ("Sales?", ["Sales increased in 2020 across the region."],
                "Sales decreased in 2020 across the region."),
    "FIELD_CONFLICT": (None, {"name": "Cafe", "attributes": {"OutdoorSeating": False}}, "Cafe has outdoor seating."),
    "FIELD_NULL": (None, {"name": "Cafe", "attributes": {"RestaurantsReservations": None}},
                   "Cafe takes reservations."),
    "FIELD_ABSENT": (None, {"name": "Cafe", "attributes": {"OutdoorSeating": True}}, "Cafe accepts credit cards."),
    "REFUSAL_WITH_CONTEXT": ("When was the bridge opened?", ["The bridge opened in 1932."],
                             "I am unable to answer when the bridge opened."),
    "NO_EVIDENCE": ("When?", [], "The bridge opened in 1932."),
    "MODEL_RISK": ("When?", ["The bridge opened in 1932."], "The bridge opened in 1932."),
}


@pytest.mark.parametrize("code", sorted(REASONS))
def test_every_reason_code_is_reachable(code):
    query, context, output = REASON_CASES[code]
    task = "Data2txt" if isinstance(context, dict) else None
    got = _reasons(query, context, output, task, risk=0.9)
    assert code in got, got


def test_reason_cases_cover_the_table():
    assert set(REASON_CASES) == set(REASONS)


def test_supported_sentence_has_no_gap():
    assert _reasons("When?", ["The bridge opened in 1932."], "The bridge opened in 1932.") == set()


# ---------------------------------------------------------------- CLI
def _write(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def test_cli_score_one_line_per_input(tmp_path, capsys):
    src, out, audit = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "audit.jsonl"
    huge = " ".join(f"Sentence {i} says the bridge opened in {1900 + i % 90}." for i in range(4000))
    _write(src, [
        {**BRIDGE, "id": "ok"},
        "{not json",
        "",
        {"id": "empty-output", "query": "q", "context": ["Some context."], "output": ""},
        {"id": "empty-context", "query": "q", "context": [], "output": "An answer."},
        {"id": "empty-context-str", "query": "q", "context": "", "output": "An answer."},
        {"id": "huge", "query": "When?", "context": huge, "output": "The bridge opened in 1901."},
        {"id": "bad-type", "query": "q", "context": "c", "output": 7},
        "[1, 2]",
    ])
    status = main(["score", str(src), "--out", str(out), "--audit-log", str(audit), "--no-progress"])
    assert status == 1
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 9
    recs = [json.loads(x) for x in lines]
    assert [r["line"] for r in recs] == list(range(1, 10))
    assert [("error" in r) for r in recs] == [False, True, True, False, False, False, False, True, True]
    assert "E103" in recs[7]["error"] and "output" in recs[7]["error"]
    assert recs[6]["id"] == "huge" and 0 <= recs[6]["risk"] <= 1
    log = read_audit_log(audit)
    assert len(log) == 9 and sum("error" in r for r in log) == 4
    assert "scored" in capsys.readouterr().err


def test_cli_score_exit_codes(tmp_path):
    src = tmp_path / "in.jsonl"
    _write(src, [{**BRIDGE, "id": "a"}])
    assert main(["score", str(src), "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 0
    assert main(["score", str(tmp_path / "missing.jsonl")]) == 2
    bad = tmp_path / "p.toml"
    bad.write_text("[thresholds]\ngeneral = 2\n")
    assert main(["score", str(src), "--policy", str(bad)]) == 2
    assert main(["score", str(src), "--model", str(tmp_path)]) == 2


def test_cli_score_ragtruth_file(tmp_path):
    from evqual.data import sample_path

    out = tmp_path / "o.jsonl"
    assert main(["score", str(sample_path()), "--out", str(out), "--no-progress"]) == 0
    n_in = sum(1 for line in open(sample_path() / "response.jsonl") if line.strip())
    assert len(out.read_text().splitlines()) == n_in


def test_cli_explain_html_and_markdown(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write(src, [{**BRIDGE, "id": "a"}, {**BRIDGE, "id": "b", "output": "It is painted orange."}])
    assert main(["score", str(src), "--out", str(out), "--no-progress"]) == 0
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["explain", str(out), "--html", str(html), "--markdown", str(md)]) == 0
    page = html.read_text()
    assert page.count('<article class="card c-') == 2 and "Joseph Strauss" in page
    assert "## a" in md.read_text()
    # raw answers are scored first
    html2 = tmp_path / "r2.html"
    assert main(["explain", str(src), "--html", str(html2)]) == 0
    assert html2.read_text().count('<article class="card c-') == 2
    assert main(["explain", str(src)]) == 2


def test_audit_log_survives_a_killed_scoring_run(tmp_path):
    src, out, audit = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "audit.jsonl"
    _write(src, [{**BRIDGE, "id": f"r{i}", "output": f"The bridge opened in {1900 + i}."} for i in range(3000)])
    proc = subprocess.Popen([sys.executable, "-m", "evqual", "score", str(src), "--out", str(out),
                             "--audit-log", str(audit), "--batch-size", "1", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        if audit.exists() and audit.read_text().count("\n") >= 20:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    text = audit.read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]  # every complete line parses
    assert text.endswith("\n")
    # --out is renamed into place only when whole: after a kill it is absent, and the lines flushed so far
    # are in the temporary file beside it
    assert not out.exists()
    [partial] = [p for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl.") and p.name.endswith(".tmp")]
    n_out = len(partial.read_text(encoding="utf-8").splitlines())
    assert 20 <= len(records) < 3000
    assert n_out <= len(records) <= n_out + 1  # at most the answer in flight is missing from the output
    assert [r["id"] for r in records] == [f"r{i}" for i in range(len(records))]


# ---------------------------------------------------------------- fast paths give the same answers
def test_lite_frame_predictions_equal_pandas_frame(det):
    import numpy as np

    from evqual.data import load_sample

    exs = load_sample().examples[:20]
    full = det.detector.builder_.transform(exs, with_targets=False)
    lite, _, _ = det.detector.builder_.transform_with_analyses(exs, with_targets=False, lite=True)
    r1, s1 = det.detector.predict_proba_and_sentences_frame(full)
    r2, s2 = det.detector.predict_proba_and_sentences_frame(lite)
    np.testing.assert_array_equal(r1, r2)
    for a, b in zip(s1, s2):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(r1, det.detector.predict_proba(exs), rtol=0, atol=1e-12)
    assert det.detector.predict_spans_frame(full, s1) == det.detector.predict_spans_frame(lite, s2)


def test_lite_frame_column_selections_are_kept_and_exact():
    """A LiteFrame keeps each column list's positions for the next frame of the same names (issue 41); what it
    selects is what indexing by name gives, in the order asked."""
    import numpy as np

    from evqual.models import LiteFrame

    values = np.arange(12.0).reshape(3, 4)
    names = ["a", "b", "c", "d"]
    first = LiteFrame(values, names, {"task_type": ["QA"] * 3})
    assert first[["c", "a"]].to_numpy().tolist() == values[:, [2, 0]].tolist()
    again = LiteFrame(values + 1, list(names), {})
    np.testing.assert_array_equal(again[["c", "a"]].to_numpy(), (values + 1)[:, [2, 0]])
    np.testing.assert_array_equal(again[("a", "d")].to_numpy(), (values + 1)[:, [0, 3]])
    assert again["b"].tolist() == [2.0, 6.0, 10.0] and first["task_type"].tolist() == ["QA"] * 3
    other = LiteFrame(values, ["d", "c", "b", "a"], {})  # the same names in another order: other positions
    assert other[["c", "a"]].to_numpy().tolist() == values[:, [1, 3]].tolist()
    with pytest.raises(KeyError):
        first[["a", "missing"]]


def test_shipped_model_has_a_span_tagger_and_records_it(det):
    from evqual.features import TOKEN_FEATURE_NAMES
    from evqual.models import read_meta

    assert det.detector.span_tagger_ is not None and 0 < det.detector.span_threshold_ < 1
    meta = read_meta(__import__("evqual.models", fromlist=["x"]).default_model_path())
    assert meta["span_tagger"]["token_features"] == list(TOKEN_FEATURE_NAMES)
    assert meta["span_tagger"]["threshold"] == det.detector.span_threshold_


def test_model_with_other_token_features_is_refused(tmp_path):
    import shutil

    from evqual.models import ModelLoadError, default_model_path, load_detector

    dst = tmp_path / "m"
    shutil.copytree(default_model_path(), dst)
    meta = json.loads((dst / "meta.json").read_text())
    meta["span_tagger"]["token_features"] = meta["span_tagger"]["token_features"][:-1]
    (dst / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="token features"):
        load_detector(dst)


def test_span_gate_scores_fewer_tokens_but_same_shape(det):
    import numpy as np

    from evqual.data import load_sample
    from evqual.models._frame import TOK

    exs = load_sample().examples[:10]
    fr, _, _ = det.detector.builder_.transform_with_analyses(exs, with_targets=False, lite=True)
    _, sr = det.detector.predict_proba_and_sentences_frame(fr)
    cr = det.detector.claim_proba_frame(fr)
    full = det.detector.span_tagger_.token_proba(fr, sr, claim_risks=cr)
    gated = det.detector.span_tagger_.token_proba(fr, sr, gate=0.5, claim_risks=cr)
    for tok, f, g, r in zip(fr[TOK], full, gated, sr):
        assert len(f) == len(g) == len(tok.offsets)
        low = np.asarray(r)[tok.sentence] < 0.5
        assert (g[low] == 0).all()
        np.testing.assert_allclose(g[~low], f[~low])


def test_iter_records_one_item_per_line(tmp_path):
    from evqual.data import iter_records

    src = tmp_path / "in.jsonl"
    _write(src, [{**BRIDGE, "id": "a"}, "", "{x", {"query": "q", "context": "c"}, [1]])
    got = [(n, ex is not None, [i.code for i in issues]) for n, ex, issues in iter_records(src)]
    assert got == [(1, True, []), (2, False, ["E101"]), (3, False, ["E101"]), (4, False, ["E102"]),
                   (5, False, ["E101"])]


def test_iter_records_ragtruth_unknown_source(tmp_path):
    from evqual.data import iter_records

    (tmp_path / "source_info.jsonl").write_text(json.dumps(
        {"source_id": "s1", "task_type": "QA", "source_info": {"question": "q?", "passages": "p one"}}) + "\n")
    rows = [{"id": "r1", "source_id": "s1", "response": "p one", "labels": []},
            {"id": "r2", "source_id": "s9", "response": "x", "labels": []}]
    (tmp_path / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = list(iter_records(tmp_path))
    assert got[0][1].id == "r1" and got[0][1].task_type == "QA"
    assert got[1][1] is None and got[1][2][0].code == "E106" and got[1][2][0].line == 2


# ---------------------------------------------------------------- JSON round trip, as a property
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from evqual.scoring import Citation, ModelInfo, Reason, SentenceResult, SpanResult  # noqa: E402

_text = st.text(max_size=40)
_prob = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_detail = st.dictionaries(st.text(min_size=1, max_size=8),
                          st.one_of(_text, st.integers(-10**6, 10**6), _prob, st.lists(_text, max_size=3)),
                          max_size=3)
_sentences = st.lists(st.builds(
    SentenceResult, index=st.integers(0, 50), start=st.integers(0, 500), end=st.integers(0, 500), text=_text,
    risk=_prob, flagged=st.booleans(),
    evidence=st.one_of(st.none(), st.builds(Citation, chunk_id=_text, chunk_index=st.integers(0, 9),
                                            start=st.integers(0, 99), end=st.integers(0, 99), text=_text,
                                            support=_prob)),
    reasons=st.lists(st.builds(Reason, code=st.sampled_from(sorted(REASONS)), text=_text, details=_detail),
                     max_size=3).map(tuple),
    explanation=_text), max_size=3).map(tuple)


@settings(max_examples=60, deadline=None)
@given(st.builds(ScoreResult, id=_text, risk=_prob, flagged=st.booleans(),
                 decision=st.sampled_from(["show", "warn", "regenerate", "abstain", "escalate"]), threshold=_prob,
                 output=_text, query=_text, task_type=st.one_of(st.none(), _text), verify=st.booleans(),
                 topics=st.lists(_text, max_size=3).map(tuple), sensitive=st.booleans(), sentences=_sentences,
                 spans=st.lists(st.builds(SpanResult, start=st.integers(0, 99), end=st.integers(0, 99), text=_text,
                                          risk=_prob, sentence=st.integers(-1, 9)), max_size=3).map(tuple),
                 model=st.builds(ModelInfo, name=_text, method=_text, version=_text, sha256=_text,
                                 entity_backend=_text)))
def test_json_round_trip_property(result):
    assert ScoreResult.from_json(result.to_json()) == result
    import dataclasses

    # to_dict's own conversion (faster than dataclasses.asdict) gives what asdict gives, types and all
    assert result.to_dict() == dataclasses.asdict(result)
    assert repr(result.to_dict()) == repr(dataclasses.asdict(result))


def test_to_dict_copies_mutable_fields():
    r = ScoreResult(id="a", risk=0.1, flagged=False, decision="show", threshold=0.5,
                    extra={"tags": ["x"], "meta": {"k": [1]}}, verification={"claims": [{"verdict": "SUPPORTED"}]})
    d = r.to_dict()
    d["extra"]["tags"].append("y")
    d["extra"]["meta"]["k"].append(2)
    d["verification"]["claims"][0]["verdict"] = "REFUTED"
    assert r.extra == {"tags": ["x"], "meta": {"k": [1]}}
    assert r.verification["claims"][0]["verdict"] == "SUPPORTED"


def test_response_level_method_points_at_the_sentence_with_most_gaps():
    from evqual.data import load_sample

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("evidence-lr").fit(load_sample())
    r = Scorer(det).score(query="When did the bridge open?",
                          context=["The bridge opened in 1932 after six years of work."],
                          output="The bridge opened in 1932. Joseph Strauss built it with 69 million dollars in 1930.",
                          policy=Policy(general_threshold=0.0, sensitive_threshold=0.0, escalate_band=None))
    assert r.flagged and r.spans == ()
    flagged = [s for s in r.sentences if s.flagged]
    assert [s.index for s in flagged] == [1] and flagged[0].evidence is not None
    assert "riskiest sentence" in flagged[0].explanation
    assert {x.code for x in flagged[0].reasons} >= {"NUMBER_UNSUPPORTED"} or \
        {x.code for x in flagged[0].reasons} >= {"NUMBER_CONFLICT"}


def test_iter_records_names_the_invalid_source_line(tmp_path):
    from evqual.data import iter_records

    (tmp_path / "source_info.jsonl").write_text(
        json.dumps({"source_id": "s1", "task_type": "QA", "source_info": {"question": "q?", "passages": "p"}}) + "\n"
        + json.dumps({"source_id": "s2", "task_type": "Poetry", "source_info": "x"}) + "\n")
    (tmp_path / "response.jsonl").write_text(json.dumps({"id": "r", "source_id": "s2", "response": "x",
                                                         "labels": []}) + "\n")
    (_, ex, issues), = list(iter_records(tmp_path))
    assert ex is None and issues[0].code == "E106"
    assert "line 2" in issues[0].message and "task_type" in issues[0].message


# ---------------------------------------------------------------- issue 10: one rule for flags, notes, labels
def _sample_results(det):
    from evqual.data import load_sample

    return det.score_batch(list(load_sample()), batch_size=16)


def test_an_answer_is_flagged_exactly_when_a_sentence_is(det):
    results = _sample_results(det)
    assert {r.decision for r in results} >= {"show", "escalate"}
    for r in results:
        assert r.flagged is (r.decision != "show")
        assert r.flagged is any(s.flagged for s in r.sentences), r.id
        assert not any(s.note for s in r.sentences) or not r.flagged  # notes only in shown answers
        assert r.verify is (r.decision == "escalate")


def test_shown_answers_keep_their_signals_as_notes(det):
    shown = [r for r in _sample_results(det) if r.decision == "show"]
    assert any(s.note for r in shown for s in r.sentences)  # the sample has shown answers with signals
    for r in shown:
        for s in r.sentences:
            assert not s.flagged
            if s.note:
                assert s.explanation.startswith("Note, not flagged")
        assert r.reason_codes == [] and r.note_codes == list(dict.fromkeys(
            x.code for s in r.sentences for x in s.reasons))


def test_every_sentence_carries_its_reasons_flagged_or_not(det):
    r = det.score(query="When did the bridge open?",
                  context=["The bridge opened in 1932 after six years of work."],
                  output="The bridge opened in 1932. It was painted by Joseph Strauss in 1990.",
                  policy=Policy(general_threshold=0.99, sensitive_threshold=0.99, escalate_band=None,
                                escalate_reasons=()))
    assert r.decision == "show" and not r.flagged
    assert r.sentences[1].reasons and r.note_codes  # the gaps are there, as notes


def test_a_high_precision_conflict_is_escalated_at_least(det):
    r = det.score(**BRIDGE, policy=Policy(general_threshold=0.99, sensitive_threshold=0.99, escalate_band=None))
    assert r.decision == "escalate" and r.rule == "reason:DATE_CONFLICT" and r.flagged and r.verify
    assert any(s.flagged for s in r.sentences)


def test_label_and_extra_fields_pass_through(det):
    r = det.score(**BRIDGE, id="x1", label=1, user="u7", tags=["a", {"b": None}])
    assert r.label == 1 and r.extra == {"user": "u7", "tags": ["a", {"b": None}]}
    assert ScoreResult.from_json(r.to_json()) == r
    batch = det.score_batch([{**BRIDGE, "label": 0, "session": 3}, BRIDGE])
    assert [b.label for b in batch] == [0, None] and batch[0].extra == {"session": 3} and batch[1].extra == {}
    assert batch[0].context.startswith("The bridge opened in 1932")
    with pytest.raises(ValueError, match="label must be 0 or 1"):
        det.score(**BRIDGE, label=0.5)
    with pytest.raises(ValueError, match="extra field"):
        det.score(**BRIDGE, bad=float("nan"))


def test_score_reads_standard_input_and_passes_extra_fields_through(tmp_path):
    lines = [json.dumps({**BRIDGE, "id": "a", "label": 1, "user": "u7"}), "{bad", json.dumps({"id": "c"})]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-m", "evqual", "score", "-", "--no-context"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=root, timeout=300)
    assert proc.returncode == 1, proc.stderr
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [o["line"] for o in out] == [1, 2, 3]
    assert out[0]["extra"] == {"user": "u7"} and out[0]["label"] == 1 and out[0]["context"] == ""
    assert "E101" in out[1]["error"] and out[2]["id"] == "c" and "E102" in out[2]["error"]
    assert "1 answer scored, 2 lines failed" in proc.stderr


@pytest.mark.ragtruth
def test_every_decision_is_reachable_with_the_shipped_model(det, ragtruth_path):
    # issue 10: abstain could never happen (highest calibrated risk 0.874 < 0.9)
    from evqual.data import load_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(ragtruth_path).examples
    risks = det.detector.predict_proba(examples[::3])
    policy = Policy()
    assert risks.max() >= policy.abstain_at
    decisions = {policy.decide(float(r), model_threshold=det.detector.threshold_).decision for r in risks}
    assert decisions >= {"show", "warn", "escalate", "regenerate", "abstain"}


def test_a_non_english_answer_carries_a_warning(det):
    # issue 10: a wrong year in French got 0.075 and no word of caution
    fr = det.score(query="Quand le pont a-t-il été ouvert ?",
                   context=["Le pont a été ouvert en 1932 après six ans de travaux et de nombreux retards."],
                   output="Le pont a été ouvert en 1935 après six ans de travaux et de nombreux retards.")
    # W004 (outside the training data) may join it: a one-line answer is unlike RAGTruth's
    ws = [w for w in fr.warnings if w["code"] != "W004"]
    assert [w["code"] for w in ws] == ["W001"] and ws[0]["details"]["field"] == "output"
    en = det.score(**BRIDGE)
    assert [w for w in en.warnings if w["code"] != "W004"] == []
    ctx = det.score(context=["Der Brückenbau begann im Jahr 1926 und die Brücke wurde im Jahr 1932 für den "
                             "Verkehr freigegeben, nachdem es viele Verzögerungen gegeben hatte."],
                    output="The bridge opened in 1932.")
    assert [w["details"]["field"] for w in ctx.warnings if w["code"] != "W004"] == ["context"]
    assert ScoreResult.from_json(fr.to_json()) == fr



def test_every_missing_required_field_is_named_in_both_paths():
    """issue 24: a line without context and output named only the first; the Python API says the same."""
    import io

    from evqual.data import iter_records
    from evqual.scoring import as_scoring_example

    stream = io.BytesIO(b'{"query": "q"}\n{"query": "q", "context": "c"}\n')
    stream.name = "<test>"
    rows = list(iter_records(stream))
    assert [(i.code, i.field) for i in rows[0][2]] == [("E102", "context"), ("E102", "output")]
    assert [(i.code, i.field) for i in rows[1][2]] == [("E102", "output")]
    with pytest.raises(ValueError, match="missing required fields 'context' and 'output'"):
        as_scoring_example({"query": "q"})
    with pytest.raises(ValueError, match="missing required field 'output'$"):
        as_scoring_example({"query": "q", "context": "c"})


def test_verified_lines_carry_final_flagged_and_it_round_trips(tmp_path):
    """issue 24: `evqual score --verify` lines lacked final_flagged (only the Python property had it)."""
    in_path = tmp_path / "in.jsonl"
    in_path.write_text(json.dumps({"id": "a", "query": "When did it open?", "context": ["It opened in 1937."],
                                   "output": "It opened in 1952."}) + "\n", encoding="utf-8")
    policy = tmp_path / "p.toml"
    policy.write_text("[bands]\nescalate = [0.0, 1.0]\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(in_path), "--out", str(out), "--policy", str(policy), "--verify", "claims",
                 "--no-progress"]) == 0
    line = json.loads(out.read_text(encoding="utf-8"))
    assert line["verification"] is not None and line["final_flagged"] == bool(line["verification"]["flagged"])
    back = ScoreResult.from_dict({k: v for k, v in line.items() if k != "line"})
    assert back.final_flagged == line["final_flagged"] and back.to_dict()["final_flagged"] == line["final_flagged"]
    with pytest.raises(ValueError, match="final_flagged"):
        ScoreResult.from_dict({**{k: v for k, v in line.items() if k != "line"},
                               "final_flagged": not line["final_flagged"]})
    plain = ScoreResult(id="x", risk=0.1, flagged=False, decision="show", threshold=0.5).to_dict()
    assert "final_flagged" not in plain  # unverified lines are unchanged
