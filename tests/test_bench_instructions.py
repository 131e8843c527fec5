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


def test_the_children_import_the_evqual_the_script_imported(tmp_path):
    """Issue 41, session 9: run from a checkout with PYTHONPATH naming a worktree of the previous main, the
    script imported the worktree's evqual but its ``-c`` children the checkout's (a child puts its working
    directory first on its path): the previous main's counts were the checkout's.  The children now run in the
    folder of the script's evqual."""
    checkout = tmp_path / "checkout"
    (checkout / "evqual").mkdir(parents=True)
    (checkout / "evqual" / "__init__.py").write_text("")  # another checkout's evqual, where the script is run
    parent = tmp_path / "parent.py"
    parent.write_text(f"import sys\nsys.path.insert(0, {str(SCRIPT.parent)!r})\nimport evqual, bench_instructions\n"
                      "print(evqual.__file__)\nprint(bench_instructions.child_evqual())\n")
    root = str(SCRIPT.parents[1])
    env = dict(os.environ, PYTHONPATH=root)
    r = subprocess.run([sys.executable, str(parent)], cwd=checkout, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    mine, child = r.stdout.split()
    assert os.path.realpath(child) == os.path.realpath(mine) == os.path.realpath(os.path.join(root, "evqual",
                                                                                              "__init__.py"))


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
    r = _run("--small", "2", "--large", "6", "--functions", "3", "--json", str(out), timeout=1800)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["instructions_large"] > res["instructions_small"] > 0
    assert res["instructions_per_answer"] == round((res["instructions_large"] - res["instructions_small"]) / 4)
    assert res["mode"] == "featurize"
    inclusive = res["per_answer_functions"]["inclusive"]
    assert len(inclusive) == 3 and all(name.startswith("evqual.") for name, _ in inclusive)
    assert inclusive[0][1] <= res["instructions_per_answer"] and len(res["per_answer_functions"]["exclusive"]) == 3


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


def test_the_counted_runs_follow_an_uncounted_one_that_writes_bytecode(monkeypatch):
    """Regression (issue 41, session 7): on a fresh worktree the smaller counted run compiled evqual's bytecode and
    the larger did not, so the previous main's instructions per scored answer came out 32.1 M instead of 34.2 M.
    An untimed run now comes first, and every run may write bytecode caches."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_instructions_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    calls = []
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(mod.subprocess, "run", lambda argv, **kw: calls.append(("plain", argv[1:], kw["env"],
                                                                                   kw["cwd"])))
    monkeypatch.setattr(mod, "child_evqual", lambda timeout=120.0: "evqual/__init__.py")

    def fake_callgrind(argv, env, timeout, cwd=None, out_file=None):
        calls.append(("counted", argv, env, cwd))
        return 10**9 + 10**6 * int(argv[-2])

    monkeypatch.setattr(mod, "_callgrind", fake_callgrind)
    res = mod.bench_instructions("data.jsonl", small=2, large=6, score=True)
    assert [c[0] for c in calls] == ["plain", "counted", "counted"]
    assert calls[0][1] == calls[1][1] and calls[1][1][-2] == "2" and calls[2][1][-2] == "6"
    assert calls[1][1][-1] == calls[2][1][-1] == "0"  # every answer, not only the first to each context
    assert all("PYTHONDONTWRITEBYTECODE" not in env and env["PYTHONHASHSEED"] == "0" for _, _, env, _ in calls)
    # every run in the folder of this process's evqual, the data named by an absolute path (issue 41, session 9)
    root = str(SCRIPT.parents[1])
    assert all(os.path.realpath(cwd) == os.path.realpath(root) for *_, cwd in calls)
    assert calls[1][1][-3] == os.path.abspath("data.jsonl")
    assert res["instructions_per_answer"] == 10**6 and res["mode"] == "score"


def test_new_contexts_counts_the_first_answer_to_each_context(monkeypatch, tmp_path):
    """--new-contexts (issue 41, session 14): the scoring child keeps the first answer to each context, and the flag
    is refused without --score."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("bench_instructions_new_contexts", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(ValueError, match="score"):
        mod.bench_instructions("data.jsonl", small=2, large=6, new_contexts=True)
    argvs, run = [], subprocess.run
    monkeypatch.setattr(mod.subprocess, "run", lambda argv, **kw: None)
    monkeypatch.setattr(mod, "child_evqual", lambda timeout=120.0: "evqual/__init__.py")
    monkeypatch.setattr(mod, "_callgrind", lambda argv, *a, **kw: argvs.append(argv) or 10**9 * int(argv[-2]))
    res = mod.bench_instructions("data.jsonl", small=1, large=2, score=True, new_contexts=True)
    assert [a[-1] for a in argvs] == ["1", "1"] and res["mode"] == "score_new_contexts"
    # the child's selection, run without scoring: three answers, two contexts
    rows = [{"id": str(i), "query": "q?", "output": "An answer.", "context": ctx}
            for i, ctx in enumerate(["The bridge opened.", "The bridge opened.", "Trams run hourly."])]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    child = mod._SCORE_CHILD.replace("scorer = Scorer.load()", "print([e.id for e in examples]); raise SystemExit")
    for flag, want in (("1", "['0', '2']"), ("0", "['0', '1', '2']")):
        out = run([sys.executable, "-c", child, str(data), "10", flag], capture_output=True, text=True,
                  timeout=120, check=True)
        assert out.stdout.strip() == want


def _module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_instructions_functions", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("raw, want", [
    ("build/cython/evqual/features/_checks.c:__pyx_pw_6evqual_8features_7_checks_73claim_checks",
     "evqual.features._checks.claim_checks"),
    ("build/cython/evqual/evidence/_engine.c:__pyx_pf_6evqual_8evidence_7_engine_14EvidenceEngine_6_claim"
     ".constprop.0", "evqual.evidence._engine.EvidenceEngine._claim"),
    ("x/_engine.c:__pyx_pw_6evqual_8evidence_7_engine_14EvidenceEngine_5read", "evqual.evidence._engine.EvidenceEngine.read"),
    ("x/_analysis.c:__pyx_pw_6evqual_8features_9_analysis_9analyze_many", "evqual.features._analysis.analyze_many"),
    ("x/_analysis.c:__pyx_pf_6evqual_8features_9_analysis_6analyze", "evqual.features._analysis.analyze"),
    ("x/_similarity.c:__pyx_pf_6evqual_8features_11_similarity_12ContextIndex___init__",
     "evqual.features._similarity.ContextIndex.__init__"),
    ("x/_similarity.c:__pyx_pw_6evqual_8features_11_similarity_12ContextIndex_1__init__",
     "evqual.features._similarity.ContextIndex.__init__"),
    ("/tmp/Python-3.11.7/./Modules/_sre/sre_lib.h:sre_ucs1_match'2", "sre_lib.h:sre_ucs1_match"),
    # cdef functions and methods (session 14: they were left under their C names, out of the inclusive list)
    ("x/_engine.c:__pyx_f_6evqual_8evidence_7_engine__read_claim", "evqual.evidence._engine._read_claim"),
    ("x/_checks.c:__pyx_f_6evqual_8features_7_checks_13EvidenceUnits_candidates",
     "evqual.features._checks.EvidenceUnits.candidates"),
    ("x/_checks.c:__pyx_f_6evqual_8features_7_checks_check_item.constprop.0", "evqual.features._checks.check_item"),
])
def test_callgrind_names_are_made_readable(raw, want):
    assert _module().readable_function(raw) == want


def test_per_answer_functions_are_the_difference_of_the_two_runs_over_the_answers(monkeypatch):
    """Issue 41, session 9: where an answer's instructions go, from the two counted runs' profiles."""
    mod = _module()
    runs = {
        ("small", True): "  1,000 (100.0%)  PROGRAM TOTALS\n  400 (40%)  a/_x.c:__pyx_pw_6evqual_4text_2_x_5split\n"
                         "  900 (90%)  a/_y.c:__pyx_pf_6evqual_4text_2_y_4read [lib.so]\n",
        ("large", True): "  5,000 (100.0%)  PROGRAM TOTALS\n  2,400 (48%)  a/_x.c:__pyx_pw_6evqual_4text_2_x_5split\n"
                         "  1,300 (26%)  a/_y.c:__pyx_pf_6evqual_4text_2_y_4read [lib.so]\n"
                         "  4,000 (80%)  sre_lib.h:sre_search\n",
        ("small", False): "  100 (10%)  sre_lib.h:sre_search\n  50 (5%)  a/_x.c:__pyx_pw_6evqual_4text_2_x_5split\n"
                          "  20 (2%)  a/_x.c:__pyx_pf_6evqual_4text_2_x_4split.constprop.0\n",
        ("large", False): "  1,100 (22%)  sre_lib.h:sre_search\n  250 (5%)  a/_x.c:__pyx_pw_6evqual_4text_2_x_5split\n"
                          "  220 (4%)  a/_x.c:__pyx_pf_6evqual_4text_2_x_4split.constprop.0\n",
    }

    class Done:
        returncode = 0
        stderr = ""

        def __init__(self, stdout):
            self.stdout = stdout

    def fake_run(argv, **kw):
        return Done(runs[(argv[-1], argv[1] == "--inclusive=yes")])

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    got = mod.per_answer_functions("small", "large", 4, 5)
    # evqual's functions only, callees included: (2,400 - 400) / 4 and (1,300 - 900) / 4
    assert got["inclusive"] == [["evqual.text._x.split", 500], ["evqual.text._y.read", 100]]
    # own code of any function, a Cython wrapper and its body added: (1,100 - 100) / 4, (470 - 70) / 4
    assert got["exclusive"] == [["sre_lib.h:sre_search", 250], ["evqual.text._x.split", 100]]
