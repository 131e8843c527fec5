"""Instructions per featurized answer, counted by valgrind (callgrind): a speed measure that a busy machine
does not disturb, for comparing two checkouts in the same run.

    python scripts/bench_instructions.py --data ../shared/data/ragtruth --json new.json
    PYTHONPATH=/tmp/old python scripts/bench_instructions.py --data ../shared/data/ragtruth --json old.json

(the second line counts the evqual of a worktree at ``/tmp/old``: ``git worktree add /tmp/old <commit>``, built
with ``python setup.py build_ext --inplace`` there when the compiled path is to be compared).

Wall time on a shared VM varies by 30% or more from one run to the next; the count of instructions a process
executes varies by well under 1%.  The script runs a child process under ``valgrind --tool=callgrind`` twice:
it loads the data, fits ``EvidenceFeaturizer`` on the first 20 answers and transforms the first ``--small``
answers, then the first ``--large``.  The difference of the two counts over ``--large - --small`` answers is
the instructions per answer, start-up and loading cancelled out.  The child runs with ``PYTHONHASHSEED=0``.
Instructions are not time (a cache miss costs more than an add), so the script complements the timed
benchmarks of ``scripts/bench.py``; it does not replace them.  Needs valgrind (Debian: ``apt-get install
valgrind``); exit status 2 when valgrind is missing or the child fails.
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


def _count(data: str, n: int, timeout: float) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           os.path.realpath(sys.executable), "-c", _CHILD, data, str(n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"the child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    m = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    if m is None:
        raise RuntimeError("valgrind printed no instruction count")
    return int(m.group(1))


def bench_instructions(data: str | None = None, *, small: int = 40, large: int = 240,
                       timeout: float = 3600.0) -> dict:
    """``{"instructions_per_answer": ..., ...}`` (see the module docstring)."""
    if large <= small:
        raise ValueError(f"large ({large}) must be above small ({small})")
    a = _count(data or "", small, timeout)
    b = _count(data or "", large, timeout)
    import evqual

    return {"small": small, "large": large, "instructions_small": a, "instructions_large": b,
            "instructions_per_answer": round((b - a) / (large - small)), "evqual": str(evqual.__file__),
            "path": evqual.build_info()["path"] if hasattr(evqual, "build_info") else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    ap.add_argument("--small", type=int, default=40, help="answers of the first run (default 40)")
    ap.add_argument("--large", type=int, default=240, help="answers of the second run (default 240)")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    try:
        out = bench_instructions(args.data, small=args.small, large=args.large)
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
