"""Issue 41, session 7: what a context not seen before leaves for the garbage collector when it is scored.

    python experiments/issue41_gc_new_contexts.py ../shared/data/ragtruth
    PYTHONPATH=<worktree of the previous main> python experiments/issue41_gc_new_contexts.py ../shared/data/ragtruth

Scores the first answer to each of the first 400 distinct RAGTruth contexts, one at a time with the shipped
model (``Scorer.score``), as a stream of answers to new contexts is scored.  Two measures:

* the objects the collector tracks that one new context leaves behind (the context's cached indexes), by type:
  40 contexts scored with the collector off and a full collection after each, counting ``gc.get_objects()``
  before and after;
* the collections while the 400 are scored, timed through ``gc.callbacks``: their number per generation, their
  seconds and their share of the wall time.

Every collection finds nothing (the reading makes no reference cycles): the time is the walk over the objects
the caches keep, which is what fewer tracked objects shortens.  It counts objects by walking
``gc.get_objects()``, which is why it lives here and not in ``scripts/``.  Result: ``docs/RESULTS.md``, issue 41
session 7, "The collector and new contexts".
"""

from __future__ import annotations

import collections
import gc
import sys
import time
import warnings

from evqual.data import load_data
from evqual.scoring import Scorer


def _first_answers(data: str, n: int) -> list:
    seen: set = set()
    out = []
    for ex in load_data(data).examples:
        if ex.context not in seen:
            seen.add(ex.context)
            out.append(ex)
        if len(out) >= n:
            break
    return out


def _score(scorer, ex) -> None:
    scorer.score(query=ex.query, context=ex.context, output=ex.output, task_type=ex.task_type)


def kept_per_context(scorer, answers) -> tuple[float, list]:
    """Tracked objects one new context leaves behind, on average, and the most common types."""
    gc.collect()
    gc.disable()
    try:
        kept: collections.Counter = collections.Counter()
        for ex in answers:
            before = collections.Counter(type(o).__name__ for o in gc.get_objects())
            _score(scorer, ex)
            gc.collect()
            kept.update(collections.Counter(type(o).__name__ for o in gc.get_objects()) - before)
    finally:
        gc.enable()
    n = len(answers)
    return sum(kept.values()) / n, [(k, round(v / n, 1)) for k, v in kept.most_common(8)]


def collections_while_scoring(scorer, answers) -> dict:
    seconds: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    started = [0.0]

    def callback(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            seconds[info["generation"]] += time.perf_counter() - started[0]
            count[info["generation"]] += 1

    gc.collect()
    gc.callbacks.append(callback)
    try:
        t0 = time.perf_counter()
        for ex in answers:
            _score(scorer, ex)
        wall = time.perf_counter() - t0
    finally:
        gc.callbacks.remove(callback)
    return {"answers": len(answers), "wall_s": round(wall, 3),
            "collections": {g: (count[g], round(seconds[g], 3)) for g in sorted(count)},
            "collector_share": round(sum(seconds.values()) / wall, 4)}


def main(data: str) -> None:
    warnings.simplefilter("ignore")
    answers = _first_answers(data, 445)
    scorer = Scorer.load()
    for ex in answers[:5]:  # warm: the model and the first caches
        _score(scorer, ex)
    mean, types = kept_per_context(scorer, answers[5:45])
    print(f"{Scorer.__module__}: tracked objects kept per new context {mean:.0f}; by type {types}")
    print("while scoring 400 new contexts:", collections_while_scoring(scorer, answers[45:445]))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ragtruth")
