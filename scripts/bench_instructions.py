"""Instructions per featurized answer, counted by valgrind (callgrind): a speed measure that a busy machine
does not disturb, for comparing two checkouts in the same run.

    python scripts/bench_instructions.py --data ../shared/data/ragtruth --json new.json
    PYTHONPATH=/tmp/old python scripts/bench_instructions.py --data ../shared/data/ragtruth --json old.json

(the second line counts the evqual of a worktree at ``/tmp/old``: ``git worktree add /tmp/old <commit>``, built
with ``python setup.py build_ext --inplace`` there when the compiled path is to be compared).  The children run
in the folder holding the evqual this process imported, and the result's ``"evqual"`` is the file a child
imports, checked to be this process's: before issue 41's session 9 a child started from a checkout imported
that checkout's evqual whatever ``PYTHONPATH`` named.

Wall time on a shared VM varies by 30% or more from one run to the next; the count of instructions a process
executes varies by well under 1%.  The script runs a child process once without valgrind (to write Python's
bytecode caches, so that neither count includes compiling them) and then under ``valgrind --tool=callgrind`` twice:
it loads the data, fits ``EvidenceFeaturizer`` on the first 20 answers and transforms the first ``--small``
answers, then the first ``--large``.  The difference of the two counts over ``--large - --small`` answers is
the instructions per answer, start-up and loading cancelled out.  The child runs with ``PYTHONHASHSEED=0``.
Instructions are not time (a cache miss costs more than an add), so the script complements the timed
benchmarks of ``scripts/bench.py``; it does not replace them.  Needs valgrind (Debian: ``apt-get install
valgrind``); exit status 2 when valgrind is missing or the child fails.

``--startup`` counts start-up instead: the instructions of a fresh process that imports ``evqual.scoring`` and
runs ``Scorer.load()`` (the shipped model), and of a one-line ``python -m evqual score`` run, each after one
untimed run that writes Python's bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped).

    python scripts/bench_instructions.py --startup --json startup.json

``--score`` counts scoring instead of featurizing: the child loads the shipped model (``Scorer.load()``) and scores
the answers one at a time with ``score_batch([answer])``, as ``scripts/bench.py score`` times them (features,
models, span tagger, reasons, policy).  The result is the instructions per scored answer.

    python scripts/bench_instructions.py --score --data ../shared/data/ragtruth --json score.json

``--functions K`` also lists where an answer's instructions go, exactly: callgrind keeps both counted runs'
profiles, and each function's count in the larger run minus the smaller's, over the answers between them, is
its share of an answer (``callgrind_annotate``, part of valgrind, reads them). The K evqual functions with the
most instructions per answer, callees included, and the K functions of any library with the most of their own.
Cython's names are shortened (``evqual.features._checks.claim_checks``).

    python scripts/bench_instructions.py --data ../shared/data/ragtruth --functions 25 --json where.json

``--new-contexts`` (with ``--score``) keeps only the first answer to each context, as ``scripts/bench.py score
--new-contexts`` does: every answer brings a context that has not been indexed yet.

    python scripts/bench_instructions.py --score --new-contexts --data ../shared/data/ragtruth --json new.json

``--case NAME`` counts the instructions of scoring one case of ``scripts/bench.py sizes`` (for example
``product_3kx2k``): a process that loads the scorer, scores a warm-up answer, builds the case and scores it,
minus one that stops before scoring it.

    python scripts/bench_instructions.py --case product_3kx2k --json case.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

_CHILD = """
import sys, warnings
warnings.simplefilter("ignore")
from evqual.data import load_data, sample_path
from evqual.features import EvidenceFeaturizer
data = sys.argv[1] or sample_path()
examples = load_data(data).examples[:int(sys.argv[2])]
EvidenceFeaturizer().fit(examples[:20]).transform(examples)
"""

_SCORE_CHILD = """
import sys, warnings
warnings.simplefilter("ignore")
from evqual.data import load_data, sample_path
from evqual.scoring import Scorer
data = sys.argv[1] or sample_path()
examples = load_data(data).examples
if sys.argv[3] == "1":  # --new-contexts: the first answer to each context only
    seen = set()
    examples = [e for e in examples if not (e.context in seen or seen.add(e.context))]
examples = examples[:int(sys.argv[2])]
scorer = Scorer.load()
for ex in examples:
    scorer.score_batch([ex])
"""


def _child_env() -> tuple[dict, str]:
    """``(environment, working directory)`` of a child: the evqual this process imported first on its path.

    A child started with ``-c`` puts its working directory first on ``sys.path``.  Started from a checkout,
    it imported that checkout's evqual whatever ``PYTHONPATH`` named: counting a worktree of the previous
    main from the current checkout counted the current checkout twice (issue 41, session 9).  The child now
    runs in the folder that holds this process's evqual, which ``PYTHONPATH`` names first as well."""
    import evqual

    root = os.path.dirname(os.path.dirname(os.path.abspath(evqual.__file__)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env, root


def child_evqual(timeout: float = 120.0) -> str:
    """The ``evqual/__init__.py`` a child imports; a RuntimeError when it is not the one this process imported."""
    import evqual

    env, cwd = _child_env()
    proc = subprocess.run([os.path.realpath(sys.executable), "-c", "import evqual; print(evqual.__file__)"],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    got = proc.stdout.strip()
    if proc.returncode != 0 or os.path.realpath(got) != os.path.realpath(evqual.__file__):
        raise RuntimeError(f"the child imports evqual from {got or proc.stderr[-500:]!r}, this process from "
                           f"{evqual.__file__!r}")
    return got


def _callgrind(argv: list, env: dict, timeout: float, cwd: str | None = None, out_file: str | None = None) -> int:
    """Instructions of ``python *argv`` under callgrind (``out_file``: where callgrind writes its profile)."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file or '/dev/null'}",
                           os.path.realpath(sys.executable), *argv],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"the child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    m = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    if m is None:
        raise RuntimeError("valgrind printed no instruction count")
    return int(m.group(1))


def _count(data: str, n: int, timeout: float, score: bool = False, warm: bool = False,
           out_file: str | None = None, new_contexts: bool = False) -> int:
    """Instructions of the featurizing (scoring) child on the first ``n`` answers; ``warm``: after one untimed run
    of it, so that neither counted run compiles bytecode (a fresh worktree's first run compiles evqual's
    uncompiled modules: counted in the smaller run only, it made a previous main's answers look cheaper)."""
    argv = ["-c", _SCORE_CHILD if score else _CHILD, os.path.abspath(data) if data else "", str(n)]
    if score:
        argv.append("1" if new_contexts else "0")
    if warm:
        return _count_argv(argv, timeout, out_file)
    env, cwd = _child_env()
    return _callgrind(argv, env, timeout, cwd, out_file)


_ONE_LINE = {"id": "1", "query": "When did the bridge open?", "output": "The bridge opened in 1932.",
             "context": "The bridge opened in 1932 after four years of work."}


def _count_argv(argv: list, timeout: float, out_file: str | None = None) -> int:
    """Instructions of ``python *argv`` under callgrind, after one untimed run (bytecode caches written)."""
    env, cwd = _child_env()
    subprocess.run([os.path.realpath(sys.executable), *argv], capture_output=True, env=env, cwd=cwd,
                   timeout=timeout, check=False)
    return _callgrind(argv, env, timeout, cwd, out_file)


_ANNOTATED_RE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*?)(?:\s+\[[^\]]*\])?\s*$")
_CYTHON_RE = re.compile(r"__pyx_(p[wf]|f)_(\d.*)$")


def readable_function(name: str) -> str:
    """A callgrind function name, shortened: ``file.c:__pyx_pf_6evqual_8features_7_checks_73claim_checks`` (a
    Cython function) is ``evqual.features._checks.claim_checks``, and ``__pyx_f_6evqual_8evidence_7_engine__read_claim``
    (a ``cdef`` function, which the inclusive list missed before session 14 of issue 41)
    ``evqual.evidence._engine._read_claim``; any other keeps its file's base name.

    >>> readable_function("build/cython/evqual/evidence/_engine.c:"
    ...                   "__pyx_pw_6evqual_8evidence_7_engine_14EvidenceEngine_6_claim.constprop.0")
    'evqual.evidence._engine.EvidenceEngine._claim'
    >>> readable_function("/tmp/Python-3.11.7/./Modules/_sre/sre_lib.h:sre_ucs1_match")
    'sre_lib.h:sre_ucs1_match'
    """
    name = re.sub(r"\.constprop\.\d+|'\d+$", "", name)
    file, _, func = name.rpartition(":")
    m = _CYTHON_RE.match(func)
    if m is None:
        return f"{os.path.basename(file)}:{func}" if file else func
    if m.group(1) == "f":  # a cdef function: the length-prefixed module (and class), then its name, no counter
        s, i, parts = m.group(2), 0, []
        while i < len(s) and s[i].isdigit():
            j = i
            while j < len(s) and s[j].isdigit():
                j += 1
            end = j + int(s[i:j])
            parts.append(s[j:end])
            if end < len(s) - 1 and s[end] == "_" and s[end + 1].isdigit():
                i = end + 1
                continue
            if end < len(s) - 1:
                parts.append(s[end + 1:])
            break
        return ".".join(parts)
    s, i, parts = m.group(2), 0, []
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        end = j + n
        if end == len(s) or (end < len(s) - 1 and s[end] == "_" and s[end + 1].isdigit()):
            parts.append(s[j:end])  # a length-prefixed part (module, package, class, or the name itself)
            i = end + 1
        elif s.startswith("___", end):  # a special method's body: "12ContextIndex___init__"
            parts += [s[j:end], s[end + 1:]]
            break
        else:
            parts.append(s[j:])  # a counter, then the function's name
            break
    return ".".join(parts)


def _annotated(path: str, inclusive: bool) -> dict:
    """``{function: instructions}`` of one callgrind profile (``callgrind_annotate``), names shortened and the
    Cython wrapper and body of a function joined (self costs added, inclusive costs the larger)."""
    proc = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100",
                           path], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind_annotate failed ({proc.returncode}): {proc.stderr[-500:]}")
    out: dict = {}
    for line in proc.stdout.splitlines():
        m = _ANNOTATED_RE.match(line)
        if m is None or "PROGRAM TOTALS" in line or "=>" in line or "events annotated" in line:
            continue
        name, n = readable_function(m.group(2)), int(m.group(1).replace(",", ""))
        out[name] = max(out.get(name, 0), n) if inclusive else out.get(name, 0) + n
    return out


def per_answer_functions(small_file: str, large_file: str, answers: int, top: int) -> dict:
    """The ``top`` functions by instructions per answer: the larger run's count of each function minus the
    smaller's, over the answers between them (start-up and loading cancelled out as for the total).
    ``inclusive`` lists evqual's functions with their callees; ``exclusive`` any function's own code."""
    result = {}
    for kind, inclusive in (("inclusive", True), ("exclusive", False)):
        small, large = _annotated(small_file, inclusive), _annotated(large_file, inclusive)
        per = {k: (large.get(k, 0) - small.get(k, 0)) / answers for k in set(small) | set(large)}
        if inclusive:
            per = {k: v for k, v in per.items() if k.startswith("evqual.")}
        ranked = sorted(per.items(), key=lambda kv: -kv[1])[:top]
        result[kind] = [[k, round(v)] for k, v in ranked]
    return result


def bench_startup_instructions(*, timeout: float = 1800.0) -> dict:
    """``{"scorer_import_and_load": ..., "score_one_line": ...}``: instructions of the two start-up runs."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        line = os.path.join(tmp, "one.jsonl")
        with open(line, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(_ONE_LINE) + "\n")
        load = _count_argv(["-c", "from evqual.scoring import Scorer; Scorer.load()"], timeout)
        score = _count_argv(["-m", "evqual", "score", line, "--out", os.path.join(tmp, "out.jsonl"),
                             "--no-progress"], timeout)
    return {"scorer_import_and_load": load, "score_one_line": score, "evqual": child_evqual()}


_CASE = """
import sys, warnings
warnings.simplefilter("ignore")
from evqual.bench import size_case_example
from evqual.data import make_example
from evqual.scoring import Scorer
scorer = Scorer.load()
scorer.score_examples([make_example(query="q?", context=["The bridge opened."], output="It opened.",
                                    task_type="QA")])
ex = size_case_example(sys.argv[1])
if sys.argv[2] == "1":
    scorer.score_examples([ex])
"""


def bench_case_instructions(case: str, *, timeout: float = 7200.0) -> dict:
    """``{"case": ..., "instructions": ...}``: the instructions of scoring one size case (see the docstring)."""
    from evqual.bench import size_case_example

    size_case_example(case)  # an unknown case is a ValueError here, before valgrind runs
    without = _count_argv(["-c", _CASE, case, "0"], timeout)
    with_case = _count_argv(["-c", _CASE, case, "1"], timeout)
    return {"case": case, "instructions": with_case - without, "instructions_with": with_case,
            "instructions_without": without, "evqual": child_evqual()}


def bench_instructions(data: str | None = None, *, small: int = 40, large: int = 240, score: bool = False,
                       timeout: float = 3600.0, functions: int = 0, new_contexts: bool = False) -> dict:
    """``{"instructions_per_answer": ..., ...}`` (see the module docstring); ``score``: per scored answer;
    ``functions``: also the instructions per answer of that many functions (``"per_answer_functions"``);
    ``new_contexts`` (with ``score``): the first answer to each context only."""
    import tempfile

    if large <= small:
        raise ValueError(f"large ({large}) must be above small ({small})")
    if functions < 0:
        raise ValueError(f"functions ({functions}) must be 0 or more")
    if new_contexts and not score:
        raise ValueError("new_contexts counts scoring: use it with score")
    where = child_evqual()  # (before the counts: a child that would count another checkout stops here)
    with tempfile.TemporaryDirectory() as tmp:
        files = [os.path.join(tmp, "small.out"), os.path.join(tmp, "large.out")] if functions else [None, None]
        a = _count(data or "", small, timeout, score, warm=True, out_file=files[0], new_contexts=new_contexts)
        b = _count(data or "", large, timeout, score, out_file=files[1], new_contexts=new_contexts)
        per_function = per_answer_functions(*files, large - small, functions) if functions else None
    import evqual

    mode = ("score_new_contexts" if new_contexts else "score") if score else "featurize"
    result = {"mode": mode, "small": small, "large": large,
              "instructions_small": a, "instructions_large": b,
              "instructions_per_answer": round((b - a) / (large - small)), "evqual": where,
              "path": evqual.build_info()["path"] if hasattr(evqual, "build_info") else None}
    if per_function is not None:
        result["per_answer_functions"] = per_function
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    ap.add_argument("--small", type=int, default=40, help="answers of the first run (default 40)")
    ap.add_argument("--large", type=int, default=240, help="answers of the second run (default 240)")
    ap.add_argument("--startup", action="store_true",
                    help="count start-up instead: import and load the shipped model; a one-line `evqual score`")
    ap.add_argument("--score", action="store_true",
                    help="count scoring one answer at a time with the shipped model instead of featurizing")
    ap.add_argument("--new-contexts", action="store_true",
                    help="with --score: the first answer to each context only, so that every answer brings a "
                         "context not indexed yet (as `bench.py score --new-contexts`)")
    ap.add_argument("--case", default=None, metavar="NAME",
                    help="count the scoring of one `bench.py sizes` case instead (for example product_3kx2k)")
    ap.add_argument("--functions", type=int, default=0, metavar="K",
                    help="also list the K functions with the most instructions per answer (evqual's with their "
                         "callees, and any function's own code); needs callgrind_annotate, part of valgrind")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    try:
        if args.startup:
            out = bench_startup_instructions()
        elif args.case is not None:
            out = bench_case_instructions(args.case)
        else:
            out = bench_instructions(args.data, small=args.small, large=args.large, score=args.score,
                                     functions=args.functions, new_contexts=args.new_contexts)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
