"""A time limit on the work of the current thread, checked where scoring loops.

The service gives each request a deadline; a request that passes it must free
its scoring worker, not keep it busy until the job ends by itself (issue 39:
one 122 KB request held the worker for 198 s after its 503).  Code that loops
over claims, sentences or items calls :func:`check_deadline`, which raises
:class:`~evqual.errors.DeadlineExceeded` once the limit set by
:func:`deadline` has passed.  Without a deadline (every caller but the
service) the check is a thread-local read and nothing else.

:class:`~evqual.errors.DeadlineExceeded` derives from ``BaseException``, so
the per-answer isolation of :func:`evqual.scoring.score_file` (which turns an
``Exception`` into the line's ``E110`` record) lets it through: the run stops,
what was written stays written.

>>> import time
>>> with deadline(time.monotonic() - 1):
...     try:
...         check_deadline()
...     except DeadlineExceeded:
...         print("stopped")
stopped
>>> check_deadline()  # no deadline: returns
"""

from __future__ import annotations

import contextlib
import threading
import time

from .errors import DeadlineExceeded

__all__ = ["deadline", "check_deadline", "DeadlineExceeded"]

_LOCAL = threading.local()
_OPEN = [0]  # deadline blocks open in any thread: with none, a check reads this and returns
_OPEN_LOCK = threading.Lock()


@contextlib.contextmanager
def deadline(at: float | None):
    """Limit the work of this thread to ``time.monotonic() <= at`` inside the block (``None``: no limit;
    nested limits keep the earlier one)."""
    previous = getattr(_LOCAL, "at", None)
    with _OPEN_LOCK:
        _OPEN[0] += 1
    _LOCAL.at = at if previous is None else (previous if at is None else min(previous, at))
    try:
        yield
    finally:
        _LOCAL.at = previous
        with _OPEN_LOCK:
            _OPEN[0] -= 1


def check_deadline() -> None:
    """Raise :class:`~evqual.errors.DeadlineExceeded` when this thread's deadline has passed."""
    if not _OPEN[0]:  # no deadline anywhere (every caller but the service): the check called per claim is free
        return
    at = getattr(_LOCAL, "at", None)
    if at is not None and time.monotonic() > at:
        raise DeadlineExceeded(f"the time limit passed {time.monotonic() - at:.3f} s ago")
