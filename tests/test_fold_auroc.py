"""scripts/fold_auroc.py: pooled against per-fold AUROC of a cv5 reports folder."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fold_auroc.py"


def _module():
    spec = importlib.util.spec_from_file_location("fold_auroc", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_pooling_folds_on_different_scales_lowers_the_auroc():
    # each fold ranks perfectly, but fold 1's risks all sit below fold 0's: pooled, its positives fall
    # under fold 0's negatives
    frame = pd.DataFrame({"label": [0, 0, 1, 1, 0, 0, 1, 1],
                          "risk": [0.50, 0.51, 0.60, 0.61, 0.10, 0.11, 0.20, 0.21],
                          "fold": [0, 0, 0, 0, 1, 1, 1, 1]})
    r = _module().fold_auroc(frame)
    assert r["folds"] == [1.0, 1.0] and r["fold_mean"] == 1.0
    assert r["pooled"] == 0.75
    assert r["risk_ranges"] == [[0.5, 0.61], [0.1, 0.21]]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0, 1)), min_size=4, max_size=40))
def test_one_fold_pooled_equals_the_fold(rows):
    frame = pd.DataFrame({"label": [a for a, _ in rows], "risk": [b for _, b in rows], "fold": 0})
    r = _module().fold_auroc(frame)
    if frame["label"].nunique() == 2:
        assert r["pooled"] == r["fold_mean"] == r["folds"][0]
    else:  # one class: no AUROC at all, and no error
        assert r["pooled"] is None and r["fold_mean"] is None


def test_reads_a_reports_folder_and_writes_json(tmp_path):
    method = tmp_path / "cv5" / "rule"
    method.mkdir(parents=True)
    pd.DataFrame({"id": list("abcd"), "label": [0, 1, 0, 1], "risk": [0.1, 0.9, 0.2, 0.8],
                  "fold": [0, 0, 1, 1]}).to_csv(method / "predictions.csv", index=False)
    out = tmp_path / "r.json"
    r = _run("--reports", str(tmp_path / "cv5"), "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "| rule | response | 4 | 1.0 | 1.0 |" in r.stdout
    assert json.loads(out.read_text())["rule"]["response"]["folds"] == [1.0, 1.0]


def test_bad_input_exits_2_naming_the_file(tmp_path):
    assert _run("--reports", str(tmp_path)).returncode == 2  # no reports
    method = tmp_path / "m"
    method.mkdir()
    (method / "predictions.csv").write_text("id,label\na,1\n")  # no risk or fold column
    r = _run("--reports", str(tmp_path))
    assert r.returncode == 2 and "predictions.csv" in r.stderr
