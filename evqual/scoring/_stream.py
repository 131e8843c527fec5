"""Scoring a JSONL file line by line: one output line per input line, in order.

Used by ``evqual score`` (and ``evqual explain`` on raw inputs).  A bad line
(invalid JSON, a missing or mistyped field, an unknown RAGTruth source) gets
an *error record* naming its line, field and reason, and the run goes on.
"""

from __future__ import annotations

import json

from ._audit import input_sha256
from ._result import ScoreResult

__all__ = ["score_file", "count_lines", "error_record", "parse_results", "read_results"]


def count_lines(path) -> int:
    """Lines of a file (the last one counted even without a final newline)."""
    n, last = 0, b"\n"
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def error_record(line: int, issues, id=None) -> dict:
    """The output record of a bad input line."""
    return {"line": line, "id": id, "error": "; ".join(f"{i.code} {i.field or 'line'}: {i.message}"
                                                      for i in issues),
            "issues": [{"code": i.code, "field": i.field, "message": i.message} for i in issues]}


def score_file(path, out, detector, *, policy=None, audit=None, progress=None, batch_size: int = 16):
    """Score every line of ``path`` and write one JSON line per input line to ``out`` (a text stream).

    Parameters
    ----------
    path : str or Path
        A generic JSONL or a RAGTruth ``response.jsonl`` (see
        :func:`evqual.data.iter_records`).
    out : text stream
        Receives ``{"line": n, **ScoreResult.to_dict()}`` or an error record
        ``{"line": n, "id", "error", "issues"}`` per input line, flushed after
        every batch.
    detector : Detector
    policy : Policy, optional
    audit : AuditLog, optional
        Gets one record per scored answer (written before its output line)
        and one per failed line.
    progress : callable, optional
        Called with the number of lines done.
    batch_size : int, default=16
        Answers featurized together (a batch that fails is retried answer by
        answer so that one bad answer cannot take others down).

    Returns
    -------
    (n_ok, n_failed) : tuple of int
    """
    from ..data import iter_records
    from ..errors import DataIssue

    n_ok = n_bad = done = 0
    pending: list = []  # (line, example)
    policy_dict = policy.to_dict() if policy is not None and audit is not None else None

    def emit_error(line, issues, id=None):
        nonlocal n_bad
        n_bad += 1
        if audit is not None:
            audit.write_error(line, "; ".join(f"{i.code} {i.field or 'line'}: {i.message}" for i in issues), id=id)
        out.write(json.dumps(error_record(line, issues, id), ensure_ascii=False) + "\n")

    def flush():
        nonlocal n_ok, done
        if not pending:
            return
        try:
            results = detector.score_batch([ex for _, ex in pending], policy=policy, batch_size=len(pending))
        except Exception:  # noqa: BLE001 - isolate the answer that fails, keep the others
            results = []
            for line, ex in pending:
                try:
                    results.append(detector.score_batch([ex], policy=policy)[0])
                except Exception as exc:  # noqa: BLE001
                    results.append(DataIssue("E110", str(path), line, None, f"scoring failed: {exc!r}"))
        for (line, ex), res in zip(pending, results):
            if isinstance(res, DataIssue):
                emit_error(line, [res], ex.id)
                continue
            if audit is not None:
                audit.write(res, policy=policy_dict, input_sha256=input_sha256(ex.query, ex.context, ex.output))
            out.write(json.dumps({"line": line, **res.to_dict()}, ensure_ascii=False) + "\n")
            n_ok += 1
        done += len(pending)
        pending.clear()
        out.flush()
        if progress is not None:
            progress(done + n_bad)

    for line, ex, issues in iter_records(path):
        if ex is None:
            flush()  # keep the input order
            emit_error(line, issues)
            continue
        pending.append((line, ex))
        if len(pending) >= batch_size:
            flush()
    flush()
    return n_ok, n_bad


def parse_results(lines, source: str = "<results>", on_error=None) -> list[ScoreResult]:
    """Results from the lines ``evqual score`` writes; error records go to ``on_error(record)`` (or are skipped)."""
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source}:{n}: invalid JSON: {exc.msg}") from None
        if "error" in d:
            if on_error is not None:
                on_error(d)
            continue
        d.pop("line", None)
        out.append(ScoreResult.from_dict(d))
    return out


def read_results(path) -> list[ScoreResult]:
    """Read an ``evqual score`` output file back (error records are skipped)."""
    with open(path, encoding="utf-8") as fh:
        return parse_results(fh, str(path))
