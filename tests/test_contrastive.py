"""The contrastive development suite: loading, examples, metrics, report and script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from evqual.evaluation import contrastive_markdown, evaluate_contrastive, load_pairs, pairs_to_examples
from evqual.evaluation._contrastive import PAIR_KEYS, error_span
from evqual.scoring import Policy, Reason, ScoreResult, SentenceResult

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "contrastive_small.jsonl"
SUITE = ROOT / "tests" / "data" / "contrastive"
SCRIPT = ROOT / "scripts" / "contrastive.py"


def _fixture_pairs() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


PAIR = _fixture_pairs()[0]


def _write(path: Path, *records) -> Path:
    """One line per record: a dict is dumped as JSON, a string written as it is."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _pair(i: int, **changes) -> dict:
    return dict(PAIR, pair=f"p{i}", **changes)


# ---------------------------------------------------------------------------------------------- loading


def test_load_fixture():
    pairs = load_pairs(FIXTURE)
    assert [p["pair"] for p in pairs] == [p["pair"] for p in _fixture_pairs()]
    assert 4 <= len(pairs) <= 6
    for p in pairs:
        assert list(p) == list(PAIR_KEYS)
        assert p["error"] in p["hallucinated"] and p["faithful"] != p["hallucinated"]
    assert {type(p["context"]) for p in pairs} == {list, str, dict}  # every context form is covered
    assert load_pairs(str(FIXTURE)) == load_pairs([FIXTURE]) == pairs


def test_load_folder_sorted_blank_lines_and_bom(tmp_path):
    _write(tmp_path / "b.jsonl", _pair(2))
    _write(tmp_path / "a.jsonl", "", _pair(1), "   ", _pair(3))
    raw = (tmp_path / "a.jsonl").read_bytes()
    (tmp_path / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"))
    (tmp_path / "notes.txt").write_text("not a pair file", encoding="utf-8")
    assert [p["pair"] for p in load_pairs(tmp_path)] == ["p1", "p3", "p2"]
    assert [p["pair"] for p in load_pairs([tmp_path / "b.jsonl", tmp_path / "a.jsonl"])] == ["p2", "p1", "p3"]


def test_load_empty_file_and_empty_folder(tmp_path):
    _write(tmp_path / "empty.jsonl", "")
    assert load_pairs(tmp_path / "empty.jsonl") == []
    (tmp_path / "none").mkdir()
    with pytest.raises(ValueError, match="no \\*.jsonl"):
        load_pairs(tmp_path / "none")


def _bad(**changes):
    rec = _pair(9)
    for key, value in changes.items():
        if value is _DROP:
            del rec[key]
        else:
            rec[key] = value
    return rec


_DROP = object()

BAD_LINES = {
    "missing key": (_bad(error=_DROP), "error", "missing"),
    "error not a substring": (_bad(error="thirteen rooms"), "error", "not a substring"),
    "wrong type (bool)": (_bad(paraphrase="yes"), "paraphrase", "true or false"),
    "wrong type (int for bool)": (_bad(distractor=1), "distractor", "true or false"),
    "wrong type (string)": (_bad(faithful=42), "faithful", "must be a string"),
    "wrong type (context)": (_bad(context=42), "context", "must be a string, a list"),
    "context item": (_bad(context=["ok", 7]), "context[1]", "must be a string"),
    "empty context list": (_bad(context=[]), "context", "at least one passage"),
    "empty string": (_bad(query="  "), "query", "non-empty"),
    "null": (_bad(type=None), "type", "null"),
    "unknown key": (dict(_pair(9), label=1), "label", "unknown field"),
    "identical answers": (_bad(hallucinated=PAIR["faithful"], error="rooms"), "hallucinated", "identical"),
    "surrogate": (_bad(note="bad \ud800 text"), "note", "surrogate"),
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_line_names_file_line_and_field(tmp_path, name):
    record, field, words = BAD_LINES[name]
    path = tmp_path / "pairs_b.jsonl"
    line = json.dumps(record, ensure_ascii=True)  # ensure_ascii: a lone surrogate survives as \ud800
    _write(path, _pair(1), "", line)
    with pytest.raises(ValueError) as info:
        load_pairs(path)
    msg = str(info.value)
    assert "pairs_b.jsonl" in msg and "line 3" in msg and f"field '{field}'" in msg, msg
    assert words in msg, msg
    assert len(info.value.issues) == 1 and info.value.issues[0].line == 3


@pytest.mark.parametrize("line, words", [('{"pair": "p9", ', "invalid JSON"), ("[1, 2]", "JSON object"),
                                         ("nan", "invalid JSON")])
def test_bad_json_names_file_and_line(tmp_path, line, words):
    path = _write(tmp_path / "pairs_b.jsonl", _pair(1), _pair(2), line)
    with pytest.raises(ValueError, match=r"pairs_b\.jsonl, line 3") as info:
        load_pairs(path)
    assert words in str(info.value)


def test_not_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "pairs_b.jsonl"
    path.write_bytes(json.dumps(_pair(1)).encode() + b"\n" + b'{"pair": "\xff"}\n')
    with pytest.raises(ValueError, match=r"pairs_b\.jsonl, line 2.*UTF-8"):
        load_pairs(path)


def test_duplicate_pair_ids_across_files(tmp_path):
    _write(tmp_path / "pairs_a.jsonl", _pair(1), _pair(2))
    _write(tmp_path / "pairs_b.jsonl", _pair(3), "", _pair(2, note="another note"))
    with pytest.raises(ValueError) as info:
        load_pairs(tmp_path)
    msg = str(info.value)
    assert "pairs_b.jsonl, line 3, field 'pair'" in msg and "'p2'" in msg, msg
    assert "pairs_a.jsonl line 2" in msg, msg  # where it was first seen
    with pytest.raises(ValueError, match="duplicate"):
        load_pairs([tmp_path / "pairs_a.jsonl", tmp_path / "pairs_a.jsonl"])


def test_every_bad_line_is_reported(tmp_path):
    path = _write(tmp_path / "pairs_b.jsonl", _bad(error=_DROP), _pair(1), "{", _bad(paraphrase=0))
    with pytest.raises(ValueError) as info:
        load_pairs(path)
    assert [(i.line, i.field) for i in info.value.issues] == [(1, "error"), (3, None), (4, "paraphrase")]


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.jsonl.*not found"):
        load_pairs(tmp_path / "nope.jsonl")


def test_pairs_to_examples_checks_hand_built_pairs():
    with pytest.raises(ValueError, match=r"pairs\[1\].*field 'error'"):
        pairs_to_examples([_pair(1), _pair(2, error="nowhere")])
    with pytest.raises(ValueError, match="duplicate"):
        pairs_to_examples([_pair(1), _pair(1)])


@pytest.mark.parametrize("name", ["pairs_a.jsonl", "pairs_b.jsonl"])
def test_real_suite_file_loads(name):
    path = SUITE / name
    if not path.is_file():
        pytest.skip(f"{path} does not exist (yet)")
    pairs = load_pairs(path)
    n_lines = sum(1 for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip())
    assert len(pairs) == n_lines > 0
    assert len(pairs_to_examples(pairs)) == 2 * n_lines


def test_real_suite_loads_as_a_whole():
    files = sorted(SUITE.glob("*.jsonl")) if SUITE.is_dir() else []
    if not files:
        pytest.skip(f"no suite files under {SUITE}")
    pairs = load_pairs(SUITE)  # pair ids are unique across the files
    assert len(pairs) == sum(len(load_pairs(f)) for f in files)


# ---------------------------------------------------------------------------------------------- examples


def test_pairs_to_examples_labels_and_spans():
    pairs = load_pairs(FIXTURE)
    examples = pairs_to_examples(pairs)
    assert len(examples) == 2 * len(pairs)
    for pair, fa, ha in zip(pairs, examples[::2], examples[1::2]):
        assert (fa.id, fa.label, fa.spans) == (f"{pair['pair']}/faithful", 0, ())
        assert (ha.id, ha.label) == (f"{pair['pair']}/hallucinated", 1)
        assert fa.output == pair["faithful"] and ha.output == pair["hallucinated"]
        assert fa.query == ha.query == pair["query"] and fa.task_type == pair["task_type"]
        assert fa.source_id == ha.source_id == pair["pair"]
        assert fa.context == ha.context and len(fa.chunks) > 0
        (span,) = ha.spans
        start = pair["hallucinated"].index(pair["error"])
        assert (span.start, span.end) == (start, start + len(pair["error"]))
        assert ha.output[span.start:span.end] == span.text == pair["error"]
    data2txt = [ex for ex in examples if ex.task_type == "Data2txt"][0]
    assert len(data2txt.chunks) > 1  # a record, chunked by field


def test_error_span_prefers_the_edited_occurrence():
    pair = {"faithful": "Open 9 am to 5 pm; the 10 am tour is free.",
            "hallucinated": "Open 10 am to 5 pm; the 10 am tour is free.", "error": "10 am"}
    assert error_span(pair) == (5, 10)
    pair = {"faithful": "Tours at 9 am; the 10 am bus.", "hallucinated": "Tours at 9 am; the 10 am bus and 10 am.",
            "error": "10 am"}
    assert error_span(pair) == (33, 38)  # the added text, not the earlier copy


# ---------------------------------------------------------------------------------------------- metrics


class FakeDetector:
    """score_batch returns stub results: risks chosen per example id, decision from the risk (show below 0.5)."""

    def __init__(self, risks: dict, reasons: dict | None = None):
        self.risks = risks
        self.reasons = reasons or {}
        self.calls = []

    def score_batch(self, examples, *, policy=None):
        self.calls.append((len(examples), policy))
        out = []
        for ex in examples:
            risk = self.risks[ex.id]
            reasons = tuple(Reason(code, ex.output) for code in self.reasons.get(ex.id, ()))
            sent = SentenceResult(index=0, start=0, end=len(ex.output), text=ex.output, risk=risk,
                                  flagged=risk >= 0.5, reasons=reasons)
            out.append(ScoreResult(id=ex.id, risk=risk, flagged=risk >= 0.5,
                                   decision="warn" if risk >= 0.5 else "show", threshold=0.5,
                                   output=ex.output, sentences=(sent,)))
        return out


def _fake(pairs, risk_pairs, reasons=None):
    risks = {}
    for p, (rf, rh) in zip(pairs, risk_pairs):
        risks[f"{p['pair']}/faithful"] = rf
        risks[f"{p['pair']}/hallucinated"] = rh
    return FakeDetector(risks, reasons)


def test_metrics_exact_with_a_fake_detector():
    pairs = [_pair(1, type="number", paraphrase=True), _pair(2, type="number", paraphrase=False),
             _pair(3, type="entity", paraphrase=True, task_type="Summary"), _pair(4, type="entity", paraphrase=False)]
    risks = [(0.1, 0.9), (0.5, 0.5), (0.8, 0.2), (0.3, 0.6)]
    det = _fake(pairs, risks, reasons={"p1/hallucinated": ["NUMBER_CONFLICT", "LOW_SUPPORT"],
                                       "p2/hallucinated": ["NUMBER_CONFLICT"],
                                       "p3/faithful": ["LOW_SUPPORT"], "p4/faithful": ["NUMBER_CONFLICT"]})
    policy = Policy(escalate_band=None)
    res = evaluate_contrastive(det, pairs, policy=policy)
    assert det.calls == [(8, policy)]
    o = res["overall"]
    assert o["n_pairs"] == 4 and o["n_paraphrase"] == 2
    assert o["pair_accuracy"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert o["recall"] == 0.75  # 0.9, 0.5, 0.6 reach "warn"; 0.2 is shown
    assert o["false_alarm"] == 0.5  # 0.5 and 0.8
    assert o["false_alarm_paraphrase"] == 0.5  # p1 shown, p3 flagged
    y = [0, 0, 0, 0, 1, 1, 1, 1]
    assert o["auroc"] == pytest.approx(roc_auc_score(y, [0.1, 0.5, 0.8, 0.3, 0.9, 0.5, 0.2, 0.6]))
    assert o["mean_risk_faithful"] == pytest.approx(0.425) and o["mean_risk_hallucinated"] == pytest.approx(0.55)
    num, ent = res["by_type"]["number"], res["by_type"]["entity"]
    assert (num["n_pairs"], num["pair_accuracy"], num["recall"], num["false_alarm"]) == (2, 0.75, 1.0, 0.5)
    assert num["auroc"] == pytest.approx(roc_auc_score([0, 0, 1, 1], [0.1, 0.5, 0.9, 0.5]))
    assert (ent["n_pairs"], ent["pair_accuracy"], ent["recall"], ent["false_alarm"]) == (2, 0.5, 0.5, 0.5)
    assert ent["false_alarm_paraphrase"] == 1.0
    assert sorted(res["by_task"]) == ["QA", "Summary"]
    assert res["by_task"]["Summary"]["n_pairs"] == 1 and res["by_task"]["Summary"]["pair_accuracy"] == 0.0
    assert res["by_task"]["Summary"]["auroc"] == 0.0
    assert res["reasons"] == {
        "LOW_SUPPORT": {"faithful": 1, "hallucinated": 1, "at_error": 1, "precision": 0.5},
        "NUMBER_CONFLICT": {"faithful": 1, "hallucinated": 2, "at_error": 2, "precision": 2 / 3},
    }
    assert [(r["pair"], r["which"], r["decision"], r["flagged"]) for r in res["rows"][:2]] == [
        ("p1", "faithful", "show", False), ("p1", "hallucinated", "warn", True)]
    assert res["rows"][1]["reasons"] == ["NUMBER_CONFLICT", "LOW_SUPPORT"]
    assert res["flag_rule"] == "decision != 'show'"
    assert res["policy"]["escalate_band"] is None
    assert res["model"]["name"] == "" and "prediction_fingerprint" not in res["model"]
    assert json.loads(json.dumps(res)) == res  # JSON-ready


def test_ties_count_half_and_single_class_groups():
    pairs = [_pair(1), _pair(2)]
    res = evaluate_contrastive(_fake(pairs, [(0.4, 0.4), (0.7, 0.7)]), pairs)
    assert res["overall"]["pair_accuracy"] == 0.5 and res["overall"]["auroc"] == 0.5
    assert res["overall"]["false_alarm_paraphrase"] is None  # the fixture's first pair is no paraphrase
    assert res["reasons"] == {}


def test_at_error_counts_only_the_sentence_with_the_error():
    pair = _pair(1)  # "The Harbour View Hotel has 84 rooms, each with a sea view."
    out = pair["hallucinated"]
    cut = out.index(",")

    class TwoSentences(FakeDetector):
        def score_batch(self, examples, *, policy=None):
            res = []
            for ex in examples:
                s0 = SentenceResult(0, 0, cut, ex.output[:cut], 0.9, True, reasons=(Reason("A", ""),))
                s1 = SentenceResult(1, cut, len(ex.output), ex.output[cut:], 0.1, False, reasons=(Reason("B", ""),))
                res.append(ScoreResult(ex.id, 0.9 if ex.label else 0.1, bool(ex.label),
                                       "warn" if ex.label else "show", 0.5, sentences=(s0, s1)))
            return res

    res = evaluate_contrastive(TwoSentences({}), [pair])
    assert res["reasons"]["A"]["at_error"] == 1 and res["reasons"]["B"]["at_error"] == 0
    assert res["reasons"]["B"] == {"faithful": 1, "hallucinated": 1, "at_error": 0, "precision": 0.5}


def test_evaluate_rejects_a_short_answer_list():
    class Short:
        def score_batch(self, examples, *, policy=None):
            return []

    with pytest.raises(ValueError, match="0 results for 2 answers"):
        evaluate_contrastive(Short(), [_pair(1)])


def test_evaluate_empty():
    res = evaluate_contrastive(FakeDetector({}), [])
    assert res["overall"]["n_pairs"] == 0 and res["overall"]["auroc"] is None and res["by_type"] == {}
    assert "overall" in contrastive_markdown(res)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]),
                          st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0])), min_size=1, max_size=8))
def test_pair_accuracy_and_auroc_match_brute_force(risk_pairs):
    pairs = [_pair(i) for i in range(len(risk_pairs))]
    res = evaluate_contrastive(_fake(pairs, risk_pairs), pairs)["overall"]
    wins = sum(1.0 if h > f else 0.5 if h == f else 0.0 for f, h in risk_pairs)
    assert res["pair_accuracy"] == pytest.approx(wins / len(risk_pairs))
    fs, hs = [f for f, _ in risk_pairs], [h for _, h in risk_pairs]
    mann_whitney = sum(1.0 if h > f else 0.5 if h == f else 0.0 for f in fs for h in hs) / len(fs) ** 2
    assert res["auroc"] == pytest.approx(mann_whitney)
    assert res["recall"] == pytest.approx(np.mean([h >= 0.5 for h in hs]))
    assert res["false_alarm"] == pytest.approx(np.mean([f >= 0.5 for f in fs]))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 0.49), min_size=1, max_size=6), st.lists(st.floats(0.5, 1.0), min_size=1, max_size=6))
def test_perfectly_separated_risks_give_auroc_one(low, high):
    n = min(len(low), len(high))
    pairs = [_pair(i) for i in range(n)]
    res = evaluate_contrastive(_fake(pairs, list(zip(low[:n], high[:n]))), pairs)["overall"]
    assert res["auroc"] == pytest.approx(1.0, abs=1e-12) and res["pair_accuracy"] == 1.0  # (a trapezoid sum)
    assert res["recall"] == 1.0 and res["false_alarm"] == 0.0


# ---------------------------------------------------------------------------------------------- shipped model


@pytest.fixture(scope="module")
def shipped_result():
    from evqual.models import Detector

    from evqual.scoring import Scorer

    return evaluate_contrastive(Scorer.load(), load_pairs(FIXTURE))


def test_shipped_model_on_the_fixture(shipped_result):
    res = shipped_result
    pairs = load_pairs(FIXTURE)
    n = len(pairs)
    assert res["overall"]["n_pairs"] == n and len(res["rows"]) == 2 * n
    assert sum(g["n_pairs"] for g in res["by_type"].values()) == n
    assert sum(g["n_pairs"] for g in res["by_task"].values()) == n
    assert sorted(res["by_type"]) == sorted({p["type"] for p in pairs})
    assert res["overall"]["n_paraphrase"] == sum(p["paraphrase"] for p in pairs)
    for group in [res["overall"], *res["by_type"].values(), *res["by_task"].values()]:
        for key in ("auroc", "pair_accuracy", "recall", "false_alarm", "false_alarm_paraphrase"):
            assert group[key] is None or 0.0 <= group[key] <= 1.0
    rows = res["rows"]
    assert all(r["flagged"] == (r["decision"] != "show") for r in rows)
    assert all(0.0 <= r["risk"] <= 1.0 for r in rows)
    fa, ha = rows[::2], rows[1::2]
    assert all(f["which"] == "faithful" and h["which"] == "hallucinated" and f["pair"] == h["pair"]
               for f, h in zip(fa, ha))
    wins = [1.0 if h["risk"] > f["risk"] else 0.5 if h["risk"] == f["risk"] else 0.0 for f, h in zip(fa, ha)]
    assert res["overall"]["pair_accuracy"] == pytest.approx(np.mean(wins))
    assert res["overall"]["recall"] == pytest.approx(np.mean([h["flagged"] for h in ha]))
    assert res["overall"]["false_alarm"] == pytest.approx(np.mean([f["flagged"] for f in fa]))
    for code, entry in res["reasons"].items():
        assert entry["faithful"] == sum(code in r["reasons"] for r in fa)
        assert entry["hallucinated"] == sum(code in r["reasons"] for r in ha)
        assert entry["precision"] == pytest.approx(entry["hallucinated"] / (entry["hallucinated"] + entry["faithful"]))
        assert 0 <= entry["at_error"] <= entry["hallucinated"]
    assert res["model"]["name"] == "default" and len(res["model"]["sha256"]) == 64
    assert "prediction_fingerprint" in res["model"]
    assert json.loads(json.dumps(res)) == res


def test_markdown_lists_each_type(shipped_result):
    text = contrastive_markdown(shipped_result)
    for t in shipped_result["by_type"]:
        assert f"| {t} |" in text
    for task in shipped_result["by_task"]:
        assert f"| {task} |" in text
    assert "| **overall** |" in text and "AUROC" in text and "pair acc" in text
    for code in shipped_result["reasons"]:
        assert f"| {code} |" in text
    assert contrastive_markdown(json.loads(json.dumps(shipped_result))) == text


def test_markdown_escapes_type_names():
    pairs = [_pair(1, type="a|b\nc"), _pair(2, type="x")]
    text = contrastive_markdown(evaluate_contrastive(_fake(pairs, [(0.1, 0.9), (0.2, 0.3)]), pairs))
    assert "| a\\|b c |" in text
    assert all(line.count(" | ") >= 6 for line in text.splitlines() if line.startswith("| a"))


# ---------------------------------------------------------------------------------------------- script


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_script_help():
    proc = _run("--help")
    assert proc.returncode == 0 and "--pairs" in proc.stdout and "--markdown" in proc.stdout


def test_script_on_the_fixture(tmp_path):
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    proc = _run("--pairs", FIXTURE, "--json", out, "--markdown", md)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["overall"]["n_pairs"] == len(_fixture_pairs()) and len(res["rows"]) == 2 * len(_fixture_pairs())
    assert md.read_text(encoding="utf-8").strip() == proc.stdout.strip()
    assert "| **overall** |" in proc.stdout


def test_script_bad_pair_file_exits_2(tmp_path):
    bad = _write(tmp_path / "pairs_b.jsonl", _pair(1), _bad(error="nowhere"))
    proc = _run("--pairs", bad)
    assert proc.returncode == 2
    assert "pairs_b.jsonl, line 2, field 'error'" in proc.stderr and proc.stdout == ""
    proc = _run("--pairs", tmp_path / "missing.jsonl")
    assert proc.returncode == 2 and "missing.jsonl" in proc.stderr
