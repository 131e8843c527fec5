"""Issue 41, session 5: the share of featurizing spent in Python's cyclic garbage collector.

    python experiments/issue41_gc_share.py ../shared/data/ragtruth               # as evqual runs it
    python experiments/issue41_gc_share.py ../shared/data/ragtruth --no-pause    # the collector left on

Fits ``EvidenceFeaturizer`` on 20 answers, transforms answers 100 to 2,400 of the data set and times every
collection through ``gc.callbacks``: collections per generation, their seconds and their share of the
transform's wall time.  ``--no-pause`` replaces the featurizer's pause (``evqual._gcpause.gc_paused``, a private
part, which is why this lives here and not in ``scripts/``) by a block that does nothing, which is what evqual
did before the session.  Result: ``docs/RESULTS.md``, issue 41 session 5, "The collector".
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
import warnings

from evqual.data import load_data
from evqual.features import EvidenceFeaturizer


def main(data: str, pause: bool) -> None:
    warnings.simplefilter("ignore")
    if not pause:
        from evqual.features import _analysis, _featurizer

        _analysis.gc_paused = _featurizer.gc_paused = contextlib.nullcontext
    examples = load_data(data).examples[:2400]
    featurizer = EvidenceFeaturizer().fit(examples[:20])
    spent = {0: 0.0, 1: 0.0, 2: 0.0}
    runs = {0: 0, 1: 0, 2: 0}
    started = [0.0]

    def callback(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - started[0]
            runs[info["generation"]] += 1

    gc.callbacks.append(callback)
    start = time.perf_counter()
    featurizer.transform(examples[100:2400])
    total = time.perf_counter() - start
    gc.callbacks.remove(callback)
    collected = sum(spent.values())
    print(f"transform {total:.2f} s; collections (count, s) by generation "
          f"{ {g: (runs[g], round(spent[g], 3)) for g in spent} }; collector {collected:.2f} s, "
          f"{100 * collected / total:.1f}% of the transform")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "../shared/data/ragtruth", "--no-pause" not in sys.argv)
