"""Issue 41, session 4: the sparse sentence-chunk matching's products sorted once (``_sorted_alike``) against
three per-product sorts (scipy's ``sort_indices``), on the size cases of ``scripts/bench.py sizes``.

    python experiments/issue41_sort_once.py product_3kx2k product_3kx20k      # ROUNDS=1 for one round

Scores each case with each way in turn (``ROUNDS`` rounds, default 2) in one process pinned to its core and
prints the process CPU time spent sorting, the blocks and entries sorted, the case's CPU time and its risk
(equal both ways).  It replaces a private function of ``evqual.features._similarity`` for the measurement,
which is why it lives here and not in ``scripts/`` (public API only).  Result: ``docs/RESULTS.md``, issue 41
session 4, "Sizes".
"""

from __future__ import annotations

import os
import sys
import time

from evqual.bench import size_case_example
from evqual.data import make_example
from evqual.features import _similarity as S
from evqual.scoring import Scorer


def main(cases) -> None:
    scorer = Scorer.load()
    scorer.score_examples([make_example(query="q?", context=["The bridge opened."], output="It opened.",
                                        task_type="QA")])
    one = S._sorted_alike

    def three(prods):
        return [S._sorted(m.tocsr()) for m in prods]

    try:
        for case in cases:
            ex = size_case_example(case)
            for name, way in (("one sort", one), ("three sorts", three)) * int(os.environ.get("ROUNDS", "2")):
                spent = [0.0, 0, 0]

                def timed(prods, way=way, spent=spent):
                    start = time.process_time()
                    out = way(prods)
                    spent[0] += time.process_time() - start
                    spent[1] += 1
                    spent[2] += prods[0].nnz
                    return out

                S._sorted_alike = timed
                start = time.process_time()
                risk = scorer.score_examples([ex])[0].risk
                total = time.process_time() - start
                print(f"{case} {name}: sort CPU {spent[0]:.3f} s, {spent[1]} blocks, {spent[2]} entries, "
                      f"case CPU {total:.2f} s, risk {risk:.6f}", flush=True)
    finally:
        S._sorted_alike = one


if __name__ == "__main__":
    main(sys.argv[1:] or ["product_3kx2k"])
