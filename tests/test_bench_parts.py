"""scripts/bench_parts.py: runs on the embedded sample, and refuses bad arguments and data with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_parts.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_parts_on_the_embedded_sample(tmp_path):
    out = tmp_path / "parts.json"
    r = _run("--limit", "4", "--repeat", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["answers"] == 4
    for part in ("engine_ms", "featurize_ms", "models_ms"):
        assert res[part] > 0


def test_bad_arguments_and_missing_data_exit_2(tmp_path):
    assert _run("--parts", "engine,trees").returncode == 2
    assert _run("--limit", "0").returncode == 2
    r = _run("--data", str(tmp_path / "missing.jsonl"), "--parts", "engine")
    assert r.returncode == 2 and "missing.jsonl" in r.stderr
