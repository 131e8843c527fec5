"""Speed must not change what evqual says (issue 23): a pinned subset scores exactly as recorded.

``tests/data/identical/input.jsonl`` holds 46 pairs of the two development suites (every sixth pair, both
answers); ``expected.jsonl`` is ``evqual score --no-context`` of it with the shipped model.  An optimisation
must leave it byte-identical.  A deliberate change of results is explained, measured on quality and
committed on its own, with ``python scripts/identical_results.py pin``.
"""

import importlib.util
import json
from pathlib import Path

import pytest

from evqual.cli import main

ROOT = Path(__file__).resolve().parent.parent
PINNED = ROOT / "tests" / "data" / "identical"


def _script():
    spec = importlib.util.spec_from_file_location("identical_results", ROOT / "scripts" / "identical_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_pinned_answers_score_exactly_as_recorded(tmp_path):
    out = tmp_path / "got.jsonl"
    assert main(["score", str(PINNED / "input.jsonl"), "--out", str(out), "--no-context", "--no-progress"]) == 0
    got = out.read_text(encoding="utf-8").splitlines()
    want = (PINNED / "expected.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(got) == len(want) == 92
    diff = _script()._diff_fields
    for i, (g, w) in enumerate(zip(got, want), 1):
        assert g == w, f"line {i} differs at {diff(json.loads(w), json.loads(g))[:8]}"


def test_the_pinned_input_covers_every_task_and_both_labels():
    rows = [json.loads(line) for line in (PINNED / "input.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["task_type"] for r in rows} == {"QA", "Summary", "Data2txt"}
    assert {r["id"].rsplit("/", 1)[1] for r in rows} == {"faithful", "hallucinated"}
    expected = [json.loads(line) for line in (PINNED / "expected.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["id"] for e in expected] == [r["id"] for r in rows]
    # the subset exercises the decisions and the reasons, not only quiet answers
    assert {e["decision"] for e in expected} >= {"show", "escalate"} and any(e["flagged"] for e in expected)
    assert any(s["reasons"] for e in expected for s in e["sentences"])


def test_compare_names_the_fields_that_differ(tmp_path, capsys):
    mod = _script()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    line = {"id": "x", "risk": 0.25, "sentences": [{"risk": 0.1, "reasons": []}], "spans": []}
    (a / "ragtruth.jsonl").write_text(json.dumps(line) + "\n")
    (b / "ragtruth.jsonl").write_text(json.dumps(line) + "\n")
    (a / "ragtruth.input.jsonl").write_text("not compared\n")
    assert mod.main(["compare", str(a), str(b)]) == 0
    assert "identical (1 lines)" in capsys.readouterr().out
    changed = dict(line, sentences=[{"risk": 0.1 + 1e-12, "reasons": []}])
    (b / "ragtruth.jsonl").write_text(json.dumps(changed) + "\n")
    assert mod.main(["compare", str(a), str(b)]) == 1
    assert "line 1: sentences[0].risk" in capsys.readouterr().out
    (b / "ragtruth.jsonl").unlink()
    assert mod.main(["compare", str(a), str(b)]) == 1
    assert "missing" in capsys.readouterr().out
    assert mod.main(["compare", str(tmp_path / "absent"), str(b)]) == 2
    assert "no dump there" in capsys.readouterr().err


def test_compare_can_leave_out_a_named_field_and_only_that_one(tmp_path, capsys):
    """A new model file changes model.sha256 in every line; --ignore model.sha256 compares everything else."""
    mod = _script()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    line = {"id": "x", "risk": 0.25, "model": {"sha256": "aa", "method": "evqual"}}
    (a / "ragtruth.jsonl").write_text(json.dumps(line) + "\n")
    (b / "ragtruth.jsonl").write_text(json.dumps(dict(line, model={"sha256": "bb", "method": "evqual"})) + "\n")
    assert mod.main(["compare", str(a), str(b)]) == 1
    assert "line 1: model.sha256" in capsys.readouterr().out
    assert mod.main(["compare", str(a), str(b), "--ignore", "model.sha256"]) == 0
    assert "leaving out model.sha256" in capsys.readouterr().out
    (b / "ragtruth.jsonl").write_text(json.dumps(dict(line, risk=0.5, model={"sha256": "bb", "method": "evqual"}))
                                      + "\n")
    assert mod.main(["compare", str(a), str(b), "--ignore", "model.sha256"]) == 1
    assert "line 1: risk" in capsys.readouterr().out


def test_diff_fields_compares_exactly():
    diff = _script()._diff_fields
    assert diff({"a": [1, 2]}, {"a": [1, 2]}) == []
    assert diff({"a": 1}, {"a": 1.0}) == ["a"]  # a type change is a change
    assert diff({"a": [1]}, {"a": [1, 2]}) == ["a[len 1 != 2]"]
    assert diff({"a": 1}, {"b": 1}) == ["a", "b"]


def test_dump_needs_a_ragtruth_folder(tmp_path, capsys):
    assert _script().main(["dump", "--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "response.jsonl" in capsys.readouterr().err


@pytest.mark.slow
def test_dump_scores_ragtruth_and_both_suites(tmp_path):
    mod = _script()
    manifest = mod.dump(ROOT / "tests" / "fixtures" / "ragtruth_small", tmp_path / "d", log=lambda *_: None)
    assert set(manifest) == {"ragtruth", "contrastive", "heldout_types"}
    assert manifest["ragtruth"]["lines"] == 4 and manifest["contrastive"]["lines"] == 282
    assert mod.compare(tmp_path / "d", tmp_path / "d", log=lambda *_: None)


def _profile_top():
    spec = importlib.util.spec_from_file_location("profile_top", ROOT / "scripts" / "profile_top.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_profile_top_counts_self_and_inclusive_samples(tmp_path, capsys):
    mod = _profile_top()
    raw = tmp_path / "p.txt"
    raw.write_text("main (/x/site-packages/evqual/bench.py:1);read (/x/evqual/evidence/_engine.py:9) 3\n"
                   "main (/x/site-packages/evqual/bench.py:1);main (/x/site-packages/evqual/bench.py:1) 1\n"
                   "main (/x/site-packages/evqual/bench.py:1);lib (/x/site-packages/numpy/core.py:2) 1\n")
    total, self_c, incl = mod.tops(raw.read_text().splitlines())
    assert total == 5
    assert self_c["read (evqual/evidence/_engine.py)"] == 3 and self_c["lib (numpy/core.py)"] == 1
    assert incl["main (evqual/bench.py)"] == 5  # a recursive frame counts once per sample
    assert mod.main([str(raw), "--top", "5"]) == 0
    rows = [r.split("|") for r in capsys.readouterr().out.splitlines() if r.startswith("| ") and "%" in r]
    assert rows[0][1:3] == [" 60.0% ", " `read (evqual/evidence/_engine.py)` "]
    inclusive = [r[5].strip() for r in rows if r[5].strip()]
    assert inclusive[0] == "`main (evqual/bench.py)`" and not any("numpy" in c for c in inclusive)  # --only evqual
    assert any("numpy" in r[2] for r in rows)  # self time keeps every library
    bad = tmp_path / "bad.txt"
    bad.write_text("no count here\n")
    assert mod.main([str(bad)]) == 2 and "line 1" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert mod.main([str(empty)]) == 2 and "no samples" in capsys.readouterr().err
