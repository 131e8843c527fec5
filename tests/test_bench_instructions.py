"""scripts/bench_instructions.py: instructions per answer under callgrind; bad arguments, a missing valgrind and
unreadable data exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_instructions.py"


def _run(*args, env=None, timeout=900):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_without_valgrind_it_says_so_and_exits_2(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # a PATH with no valgrind on it
    r = _run(env=env)
    assert r.returncode == 2 and "valgrind is not installed" in r.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_bad_sizes_and_missing_data_exit_2(tmp_path):
    r = _run("--small", "5", "--large", "5")
    assert r.returncode == 2 and "must be above" in r.stderr
    r = _run("--data", str(tmp_path / "missing.jsonl"), "--small", "1", "--large", "2")
    assert r.returncode == 2 and "missing.jsonl" in r.stderr
    r = _run("--case", "nosuchcase")  # not a size case: the child fails, the script says so
    assert r.returncode == 2 and "unknown size case" in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_instructions_per_answer_on_the_sample(tmp_path):
    out = tmp_path / "ins.json"
    r = _run("--small", "2", "--large", "6", "--json", str(out), timeout=1800)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["instructions_large"] > res["instructions_small"] > 0
    assert res["instructions_per_answer"] == round((res["instructions_large"] - res["instructions_small"]) / 4)
    assert res["mode"] == "featurize"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_instructions_per_scored_answer_on_the_sample(tmp_path):
    out = tmp_path / "score.json"
    r = _run("--score", "--small", "2", "--large", "6", "--json", str(out), timeout=1800)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["mode"] == "score" and res["instructions_large"] > res["instructions_small"] > 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_start_up_instructions(tmp_path):
    out = tmp_path / "startup.json"
    r = _run("--startup", "--json", str(out), timeout=1800)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["score_one_line"] > res["scorer_import_and_load"] > 10**8
