"""Scoring a JSONL file with several worker processes: ``evqual score --jobs N``.

The parent process reads and checks the input lines in order (exactly as
:func:`score_file` does: the same error records for invalid JSON, missing
fields, duplicate ids), sends blocks of ``batch_size`` answers to a pool of
worker processes that each received the model once (at start-up), and writes
the results strictly in input order.  So the output is byte for byte the
output of the serial path (``--jobs 1``), whatever ``jobs``.

Memory is bounded: at most ``4 * jobs`` blocks are in flight.  A worker
process that dies (killed, out of memory, a crash in native code) costs no
line: the blocks that were in flight are scored again one by one in a fresh
pool, and the block that kills a worker again gets an error record (E110) per
line.  Audit records are written by the parent.
"""

from __future__ import annotations

import os
import warnings
from collections import deque

from ._frame import _scorer
from ._stream import _Output, count_lines, score_block, score_file

__all__ = ["score_file_parallel", "resolve_jobs", "usable_cores"]

_IN_FLIGHT_PER_JOB = 4  # blocks in flight per worker process
_MAX_QUEUED_ERRORS = 4096  # error records waiting behind the blocks in flight


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity (:func:`os.cpu_count` where that is unknown), and no
    more than a cgroup v2 CPU quota allows (``cpu.max``: a container given one CPU of a larger machine gets 1,
    rounded up), whichever is smaller."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return max(1, min(cores, quota)) if quota is not None else cores


def _cgroup_cpu_quota(path: str = "/sys/fs/cgroup/cpu.max"):
    """The CPUs a cgroup v2 quota gives (``"quota period"``, rounded up), or None (no quota, no file).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".max", delete=False) as f:
    ...     _ = f.write("150000 100000\\n")
    >>> _cgroup_cpu_quota(f.name), os.unlink(f.name)
    (2, None)
    """
    try:
        with open(path, encoding="ascii") as fh:
            quota, _, period = fh.read().strip().partition(" ")
        if quota == "max":
            return None
        q, p = int(quota), int(period or 100000)
        return -(-q // p) if q > 0 and p > 0 else None
    except (OSError, ValueError):
        return None


def resolve_jobs(jobs, *, blocks: int | None = None) -> int:
    """The number of worker processes of ``jobs``: ``None`` or 0 mean every usable core.

    Never more than the usable cores (:func:`usable_cores`: more processes than cores only add memory; each
    worker holds a model) nor, when ``blocks`` is given, than the blocks there are to score.

    Examples
    --------
    >>> from evqual.scoring import resolve_jobs
    >>> resolve_jobs(1)
    1
    >>> resolve_jobs(64) == resolve_jobs(0) == usable_cores()
    True
    >>> resolve_jobs(64, blocks=1)
    1
    >>> resolve_jobs(-1)
    Traceback (most recent call last):
    ...
    ValueError: jobs must be >= 0 (0: every core); got -1
    """
    if jobs is None:
        jobs = 0
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"jobs must be an integer; got {type(jobs).__name__}")
    if jobs < 0:
        raise ValueError(f"jobs must be >= 0 (0: every core); got {jobs}")
    cores = usable_cores()
    jobs = min(jobs or cores, cores)
    if blocks is not None:
        jobs = min(jobs, max(1, blocks))
    return jobs


# ------------------------------------------------------------------ worker side
_WORKER: dict = {}


def _init_worker(scorer, path: str, include_context: bool = True) -> None:
    """Worker initializer: keep the scorer (received once per process); one BLAS/OpenMP thread.

    ``jobs`` processes share the cores: a thread pool per worker would only
    oversubscribe them (and an OpenMP pool inherited through ``fork`` cannot
    be used).
    """
    warnings.simplefilter("ignore")
    try:
        from threadpoolctl import threadpool_limits

        _WORKER["limits"] = threadpool_limits(1)
    except Exception:  # noqa: BLE001 - threadpoolctl comes with scikit-learn; without it, keep the defaults
        pass
    _WORKER["scorer"], _WORKER["path"], _WORKER["context"] = scorer, path, include_context


def _score_block(block):
    """Score ``[(line, Example, extra), ...]`` in a worker, exactly as the serial path does (:func:`score_block`)."""
    return score_block(_WORKER["scorer"], block, path=_WORKER["path"], include_context=_WORKER["context"])


# ------------------------------------------------------------------ parent side
def _discard(pool) -> None:
    """Shut a broken pool down: stop its surviving workers first (Python 3.11 would wait for them forever)."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except Exception:  # noqa: BLE001 - already gone
            pass
    pool.shutdown(wait=True, cancel_futures=True)


class _Block:
    __slots__ = ("items", "future", "results")

    def __init__(self, items, future):
        self.items, self.future, self.results = items, future, None


def _context(start_method):
    import multiprocessing  # here, not at import: a process that scores on one core never loads it

    methods = multiprocessing.get_all_start_methods()
    if start_method is None:
        # forkserver: workers start from a clean, single-threaded process (fork after OpenMP or threads can
        # hang); spawn where there is no forkserver (Windows, macOS keeps it too)
        start_method = "forkserver" if "forkserver" in methods else "spawn"
    ctx = multiprocessing.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload(["evqual.models", "evqual.scoring"])
    return ctx


def score_file_parallel(path, out, scorer, *, jobs=None, policy=None, audit=None, progress=None,
                        batch_size: int = 16, limits=None, include_context: bool = True,
                        start_method: str | None = None, stats: dict | None = None):
    """:func:`score_file` with ``jobs`` worker processes: the same output, byte for byte, in input order.

    Parameters
    ----------
    path : str or Path
        A generic JSONL or a RAGTruth ``response.jsonl``.
    out : text stream
        Receives one JSON line per input line (see :func:`score_file`).
    scorer : Scorer
        The scoring pipeline (:class:`evqual.scoring.Scorer`; it is sent to
        every worker process once, when the worker starts).  A fitted
        Detector, a model folder or ``None`` (the shipped model) are taken
        too.
    jobs : int, optional
        Worker processes; ``None`` or 0: every core.  Capped at the usable
        cores and at the number of blocks of ``batch_size`` lines in the
        file (:func:`resolve_jobs`).  With 1 the file is scored in this
        process by :func:`score_file`.
    policy : Policy, optional
        Overrides the scorer's policy.
    audit : AuditLog, optional
        Written by this process, one record per line, in input order.
    progress : callable, optional
        Called with the number of lines written.
    batch_size : int, default=16
        Answers per block sent to a worker.  Results do not depend on it.
    limits : evqual.data.Limits, optional
    include_context : bool, default=True
        False: each result's ``context`` is left out (``evqual score --no-context``).
    start_method : str, optional
        ``"forkserver"`` (default where available), ``"spawn"`` or ``"fork"``
        (fastest start, but safe only in a process without threads that has
        not scored yet: ``evqual score`` uses it on Linux).  With
        ``forkserver`` and ``spawn`` the calling script needs the usual
        ``if __name__ == "__main__":`` guard.

    Returns
    -------
    (n_ok, n_failed) : tuple of int

    Raises
    ------
    StreamAborted
        When ``out`` or the audit log cannot be written.
    evqual.errors.EvqualDataError
        When ``path`` cannot be opened or read.

    Examples
    --------
    >>> import io, json, os, tempfile
    >>> from evqual.scoring import Scorer, score_file_parallel
    >>> answer = {"query": "When?", "context": ["The bridge opened in 1932."], "output": "It opened in 1932."}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write("".join(json.dumps({"id": f"a{i}", **answer}) + "\\n" for i in range(3)) + "{bad\\n")
    >>> buf = io.StringIO()
    >>> score_file_parallel(f.name, buf, Scorer.load(), jobs=2, batch_size=2)
    (3, 1)
    >>> [json.loads(line).get("id") for line in buf.getvalue().splitlines()]
    ['a0', 'a1', 'a2', None]
    >>> os.unlink(f.name)
    """
    from ..data import iter_records
    from ..errors import DataIssue, EvqualDataError

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    blocks = None
    if not hasattr(path, "read"):  # a file: no more workers than blocks of lines
        try:
            blocks = -(-count_lines(path) // batch_size)
        except OSError:
            blocks = None
    jobs = resolve_jobs(jobs, blocks=blocks)
    scoring = _scorer(scorer, policy)
    if jobs == 1:
        return score_file(path, out, scoring, audit=audit, progress=progress, batch_size=batch_size, limits=limits,
                          include_context=include_context, stats=stats)
    from concurrent.futures import ProcessPoolExecutor  # here: one-core scoring never loads them
    from concurrent.futures.process import BrokenProcessPool

    policy = getattr(scoring, "policy", None)
    policy_dict = policy.to_dict() if policy is not None and audit is not None else None
    ctx = _context(start_method)
    spath = str(path)

    sink = _Output(out, audit, policy_dict, progress)
    emit_error = sink.error
    pending: list = []  # (line, example, extra) of the next block
    slots: deque = deque()  # _Block or (line, issues, id) of an error record, in input order
    n_in_flight = 0
    max_in_flight = _IN_FLIGHT_PER_JOB * jobs
    pool = None

    def new_pool():
        return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                   initargs=(scoring, spath, include_context))

    def died(block, exc):
        why = f"scoring failed: the worker process died ({type(exc).__name__}: {exc})"[:500]
        return [(None, DataIssue("E110", spath, line, None, why)) for line, _, _ in block]

    def recover():
        """The pool broke: score every unfinished block again, alone, in a fresh pool."""
        nonlocal pool
        _discard(pool)
        pool = new_pool()
        for blk in slots:
            if not isinstance(blk, _Block) or blk.results is not None:
                continue
            fut = blk.future
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                blk.results = fut.result()
                continue
            fut = pool.submit(_score_block, blk.items)
            try:
                blk.results = fut.result()
            except BrokenProcessPool as exc:  # this block kills its worker: its lines fail, the others go on
                blk.results = died(blk.items, exc)
                _discard(pool)
                pool = new_pool()
            except Exception as exc:  # noqa: BLE001
                blk.results = died(blk.items, exc)

    def results_of(blk):
        if blk.results is None:
            try:
                blk.results = blk.future.result()
            except BrokenProcessPool:
                recover()
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be sent back
                blk.results = died(blk.items, exc)
        return blk.results

    def drain(*, wait: bool):
        """Write the finished slots at the head; with ``wait``, until the limits hold (or all, at the end)."""
        nonlocal n_in_flight
        while slots:
            head = slots[0]
            if isinstance(head, _Block):
                must = wait and (n_in_flight >= max_in_flight or len(slots) > _MAX_QUEUED_ERRORS or not reading)
                if head.results is None and not head.future.done() and not must:
                    return
                sink.block(head.items, results_of(head))
                slots.popleft()
                n_in_flight -= 1
                sink.flush(head.items[-1][0])
            else:
                line, issues, rid = slots.popleft()
                emit_error(line, issues, rid)

    def submit():
        nonlocal n_in_flight
        if pending:
            items = list(pending)
            pending.clear()
            try:
                future = pool.submit(_score_block, items)
            except BrokenProcessPool:  # a worker died since the last check: recover the blocks in flight first
                recover()
                future = pool.submit(_score_block, items)
            slots.append(_Block(items, future))
            n_in_flight += 1
            drain(wait=True)

    def queue_error(line, issues, rid):
        submit()  # keep the input order
        slots.append((line, issues, rid))
        drain(wait=True)

    reading = True
    seen_ids: dict = {}
    try:
        pool = new_pool()
        try:
            for line, ex, issues, record_id, extra in iter_records(path, limits=limits, with_extra=True):
                if ex is None:
                    queue_error(line, issues, record_id)
                    continue
                if ex.id is not None:
                    first = seen_ids.setdefault(ex.id, line)
                    if first != line:  # as the loaders do (E108): an id names one answer
                        queue_error(line, [DataIssue("E108", spath, line, "id",
                                                     f"id {ex.id!r} already used on line {first}")], ex.id)
                        continue
                pending.append((line, ex, extra))
                if len(pending) >= batch_size:
                    submit()
        except EvqualDataError:  # the input cannot be read further: what was read is still scored and written
            reading = False
            submit()
            drain(wait=True)
            out.flush()
            raise
        reading = False
        submit()
        drain(wait=True)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    sink.flush(sink.n_ok + sink.n_bad)
    if stats is not None:
        stats["warnings"] = dict(sink.warned)
    return sink.n_ok, sink.n_bad
