"""scripts/bench_service.py on the embedded sample: a real server, a few answers, both modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_service.py"


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


def test_load_runs_against_in_process(tmp_path):
    out = tmp_path / "svc.json"
    r = _run("--answers", "4", "--workers", "1", "--concurrency", "1,2", "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["in_process"]["answers"] == 4
    assert [(x["workers"], x["concurrency"]) for x in res["runs"]] == [(1, 1), (1, 2)]
    assert all(x["errors"] == 0 and x["requests"] == 4 and x["p50_ms"] > 0 for x in res["runs"])
    assert res["overhead_p50_ms"] is not None


def test_soak_samples_rss(tmp_path):
    out = tmp_path / "soak.json"
    r = _run("--answers", "3", "--workers", "1", "--concurrency", "2", "--soak", "3", "--sample", "1",
             "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["errors"] == 0 and res["requests"] >= 3 and len(res["samples"]) >= 3
    assert res["rss_mb_first"] > 10


def test_usage_errors():
    assert _run("--workers", "a").returncode == 2
    assert _run("--answers", "0").returncode == 2
