"""Pause Python's cyclic garbage collector over a batch of analyses.

Analysing an answer allocates many short-lived containers (tuples, lists,
dicts) and keeps long-lived ones in the context caches.  Every 700 net
allocations CPython runs a collection, and every 100th of them walks every
tracked object of the process, caches included: about 10% of featurising
RAGTruth went to collections that found nothing (issue 41, session 5:
``gc.callbacks`` timing).  The analysis creates no reference cycles (a test
analyses the sample with the collector off and finds no garbage), so
reference counting frees all of it and the collector has nothing to do.

:func:`gc_paused` turns automatic collection off inside the block and back on
when the last block open in any thread closes, if it was on when the first
one opened; a caller who turned it off keeps it off.  Garbage that a caller's
own code makes inside the block (an entity backend's objects, a progress
callback's) waits for the next collection after the block, so callers pause a
bounded batch, not a whole run.

>>> import gc
>>> with gc_paused():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import contextlib
import gc
import threading

from ._build import kernel

__all__ = ["gc_paused", "untrack_atomic", "untrack_settled"]

_LOCK = threading.Lock()
_STATE = {"depth": 0, "was_enabled": False}


@contextlib.contextmanager
def gc_paused():
    """Automatic garbage collection off inside the block (see the module docstring); nests and is thread-safe."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["was_enabled"] = gc.isenabled()
            gc.disable()
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["was_enabled"]:
                gc.enable()


_UNTRACK = kernel("evqual._untrack", "untrack_atomic")


def _untrack_atomic_fallback(objs) -> None:
    """Untrack the tuples, frozensets and dicts of ``objs`` that hold nothing the collector tracks (strings,
    numbers, such containers), so that no collection walks them (``evqual/_untrack.pyx``); without the compiled
    kernel, nothing (the collector walks them, as before).  Only for containers a cache keeps and no code
    changes once made: a context's postings, items and token rows.

    >>> t = (1, "a", (2, 3))
    >>> _ = untrack_atomic([t])  # (this function without the kernel, the kernel's own with it)
    >>> gc.is_tracked(t) == (_UNTRACK is None)
    True
    """


_UNTRACK_SETTLED = kernel("evqual._untrack", "untrack_settled")


def _untrack_settled_fallback(objs) -> None:
    """Untrack each object of ``objs`` whose references are all untracked (``evqual/_untrack.pyx``): for the
    instances of evqual's own classes that a cache keeps and no code changes once made; without the compiled
    kernel, nothing."""


# with the compiled kernel, the names are its functions: a call costs no Python frame (the analysis of an answer
# untracks about 170 times; a frame each was 2% of scoring an answer to a new context, issue 41, session 14)
untrack_atomic = _UNTRACK if _UNTRACK is not None else _untrack_atomic_fallback
untrack_settled = _UNTRACK_SETTLED if _UNTRACK_SETTLED is not None else _untrack_settled_fallback
