"""What held under attack stays held (issue 8): concurrent audit appenders, threads, processes.

Risk always finite in [0, 1] is checked by the fuzz tests of tests/test_stream_hardening.py, HTML
escaping by tests/test_render.py, the audit log under SIGKILL by tests/test_audit.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from evqual.data import load_sample
from evqual.scoring import Scorer, read_audit_log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def det():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Scorer.load()


def test_three_concurrent_appenders_write_whole_records(tmp_path):
    path = tmp_path / "audit.jsonl"
    script = textwrap.dedent(f"""
        import sys
        from evqual.scoring import AuditLog, ScoreResult
        who = sys.argv[1]
        with AuditLog({str(path)!r}, fsync=False) as log:
            for i in range(200):
                log.write(ScoreResult(id=f"{{who}}-{{i}}", risk=0.5, flagged=False, decision="show",
                                      threshold=0.5, output="x" * (i * 37 % 5000)))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(k)], cwd=ROOT) for k in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = read_audit_log(path)  # raises on any torn or interleaved line
    assert len(records) == 600
    for k in range(3):
        assert [r["id"] for r in records if r["id"].startswith(f"{k}-")] == [f"{k}-{i}" for i in range(200)]


def test_eight_threads_on_one_detector_give_the_sequential_results(det):
    examples = list(load_sample())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = [r.to_dict() for r in det.score_batch(examples, batch_size=8)]
        parts = [examples[k::8] for k in range(8)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(lambda part: [r.to_dict() for r in det.score_batch(part, batch_size=3)], parts))
    by_id = {d["id"]: d for part in got for d in part}
    assert [by_id[d["id"]] for d in expected] == expected


def test_scores_are_identical_across_processes(det, tmp_path):
    out = tmp_path / "scored.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-m", "evqual", "score", "--out", str(out), "--no-progress"], cwd=ROOT,
                   env=env, check=True, capture_output=True, timeout=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        here = [r.to_dict() for r in det.score_batch(list(load_sample()), batch_size=16)]
    there = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [{k: v for k, v in d.items() if k != "line"} for d in there] == json.loads(json.dumps(here))
