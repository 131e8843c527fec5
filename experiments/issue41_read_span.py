"""Issue 41, session 6: microseconds per context sentence of the engine's span reader (``read_span``).

    python experiments/issue41_read_span.py ../shared/data/ragtruth
    PYTHONPATH=<worktree of the previous main> python experiments/issue41_read_span.py ../shared/data/ragtruth

Reads every sentence of the first 200 distinct RAGTruth contexts (about 3,300 sentences) with
``evqual.evidence._reading.read_span`` (a private part, which is why this lives here and not in ``scripts/``),
seven passes, and prints the best pass's time per sentence: the part of a new context's cost that the
evidence engine's index spends reading its sentences.  Result: ``docs/RESULTS.md``, issue 41 session 6.

Instructions instead of time (issue 41, session 7): run it under callgrind with ``--passes 1`` and with
``--passes 2``; the difference of the two totals over the sentences is one warm pass per sentence.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null python experiments/issue41_read_span.py DATA --passes 1
    valgrind --tool=callgrind --callgrind-out-file=/dev/null python experiments/issue41_read_span.py DATA --passes 2
"""

from __future__ import annotations

import sys
import time
import warnings

from evqual.data import load_data
from evqual.evidence import _reading
from evqual.text import split_sentences


def main(data: str, contexts: int = 200, passes: int = 7) -> None:
    warnings.simplefilter("ignore")
    seen: set = set()
    pieces = []
    for ex in load_data(data).examples:
        if ex.context in seen:
            continue
        seen.add(ex.context)
        for c in ex.chunks:
            text = ex.context[c.start:c.end]
            pieces.extend(text[s:e] for s, e in split_sentences(text))
        if len(seen) >= contexts:
            break
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        for p in pieces:
            _reading.read_span(p)
        best = min(best, time.perf_counter() - start)
    print(f"{_reading.__file__}: {len(pieces)} sentences, read_span {1e6 * best / len(pieces):.2f} us per sentence "
          f"(best of {passes})")


if __name__ == "__main__":
    args = sys.argv[1:]
    passes = 7
    if "--passes" in args:
        i = args.index("--passes")
        passes = int(args[i + 1])
        del args[i:i + 2]
    main(args[0] if args else "../shared/data/ragtruth", passes=passes)
