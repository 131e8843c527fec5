"""scripts/seed_spread.py on the embedded sample: models per seed, both suites scored, usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "seed_spread.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def test_one_model_per_seed_and_both_suites(tmp_path):
    from evqual.data import sample_path

    out = tmp_path / "spread.json"
    r = _run("--data", str(sample_path()), "--seeds", "3", "--out", str(tmp_path / "m"), "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    (row,) = res["rows"]
    assert row["seed"] == 3 and 0 < row["threshold"] < 1
    for suite in ("dev", "heldout"):
        assert set(row[suite]) == {"auroc", "pair_accuracy", "recall", "false_alarm"}
        assert res["mean"][suite] == row[suite]  # the mean of one seed is that seed
        assert set(res["spread"][suite].values()) == {0.0}  # and one seed spreads nothing
    assert res["crossfit"] is None and res["spread"]["threshold"] == 0.0
    assert (tmp_path / "m" / "seed-3" / "meta.json").is_file()
    again = _run("--data", str(sample_path()), "--seeds", "3", "--out", str(tmp_path / "m2"), "--json",
                 str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again.json").read_text())["rows"] == res["rows"]  # deterministic per seed


def test_usage_errors(tmp_path):
    assert _run("--seeds", "a", "--out", str(tmp_path)).returncode == 2
    assert _run("--jobs", "0", "--out", str(tmp_path)).returncode == 2
    r = _run("--crossfit", "1", "--out", str(tmp_path))
    assert r.returncode == 2 and "--crossfit must be at least 2" in r.stderr
    r = _run("--data", str(tmp_path / "missing"), "--out", str(tmp_path))
    assert r.returncode == 2 and "no data" in r.stderr


def test_crossfit_is_passed_to_the_detector(tmp_path):
    from evqual.data import sample_path
    from evqual.models import read_meta

    out = tmp_path / "spread.json"
    r = _run("--data", str(sample_path()), "--seeds", "3", "--crossfit", "3", "--out", str(tmp_path / "m"),
             "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["crossfit"] == 3
    meta = read_meta(tmp_path / "m" / "seed-3")
    assert meta["crossfit"] == 3 and meta["rows"]["validation"] == meta["rows"]["train"] == 72
