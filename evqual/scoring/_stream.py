"""Scoring a JSONL file line by line: one output line per input line, in order.

Used by ``evqual score`` (and ``evqual explain`` on raw inputs).  A bad line
(invalid JSON, a missing or mistyped field, an unknown RAGTruth source) gets
an *error record* naming its line, field and reason, and the run goes on.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

from ._audit import input_sha256
from ..results import ScoreResult

__all__ = ["score_file", "score_block", "count_lines", "dumps_line", "error_record", "parse_results", "read_results", "StreamAborted"]


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


class StreamAborted(OSError):
    """An output (the results or the audit log) could not be written: the run stops here.

    Attributes
    ----------
    line : int
        The input line whose output failed.
    n_written : int
        Output lines written (and flushed) before the failure.
    target : str
        ``"output"`` or ``"audit log"``.
    """

    def __init__(self, target: str, line: int, n_written: int, cause: BaseException):
        self.target, self.line, self.n_written, self.cause = target, line, n_written, cause
        why = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        super().__init__(f"cannot write the {target} (input line {line}): {why}; "
                         f"{n_written} output lines were written before it")


_LINE_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def dumps_line(record: dict) -> str:
    """One line of strict JSON (RFC 8259); text that cannot be UTF-8 (unpaired surrogates) is written with
    \\u escapes.

    A number JSON cannot hold (``NaN``, ``Infinity``) raises :class:`ValueError` instead of being written
    as a bare ``NaN`` most JSON readers reject; callers turn it into an error record of its line.

    >>> dumps_line({"risk": 0.5})
    '{"risk": 0.5}\\n'
    >>> dumps_line({"id": "a\u2028b"})  # one line for every reader
    '{"id": "a\\\\u2028b"}\\n'
    >>> dumps_line({"risk": float("nan")})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Out of range float values are not JSON compliant...
    """
    text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(record, ensure_ascii=True, allow_nan=False)
    # characters that some readers take for line breaks (str.splitlines, JavaScript before ES2019) are
    # escaped: in JSON text they can only stand inside strings, so the value is unchanged
    if _LINE_BREAKS.search(text):
        text = _LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
    return text + "\n"


class _Output:
    """The writing side of a scoring run, shared by :func:`score_file` and the ``--jobs`` path.

    Writes results and error records in the order it is given them, the audit
    record of a line before the line itself, and counts what was written;
    a failed write raises :class:`StreamAborted` naming the input line.
    """

    def __init__(self, out, audit=None, policy_dict=None, progress=None):
        self.out, self.audit, self.policy_dict, self.progress = out, audit, policy_dict, progress
        self.n_ok = self.n_bad = self.n_flushed = 0
        self.warned: dict = {}  # warning code -> answers that got it (the run's summary line)

    def _write(self, line, text):
        try:
            self.out.write(text)
        except (OSError, ValueError) as exc:  # ValueError: a closed stream
            raise StreamAborted("output", line, self.n_flushed, exc) from exc

    def _audited(self, line, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except (OSError, ValueError) as exc:
            raise StreamAborted("audit log", line, self.n_flushed, exc) from exc

    def error(self, line, issues, id=None):
        """The error record of input line ``line``."""
        self.n_bad += 1
        if self.audit is not None:
            self._audited(line, self.audit.write_error, line,
                          "; ".join(f"{i.code} {i.field or 'line'}: {i.message}" for i in issues), id=id)
        self._write(line, dumps_line(error_record(line, issues, id)))

    def scored(self, line, ex, text, res):
        """The result ``res`` of example ``ex`` (input line ``line``), already serialised as ``text``."""
        if self.audit is not None:
            self._audited(line, self.audit.write, res, policy=self.policy_dict,
                          input_sha256=input_sha256(ex.query, ex.context, ex.output))
        self._write(line, text)
        self.n_ok += 1
        for code in {w.get("code") for w in getattr(res, "warnings", ()) or () if isinstance(w, dict)}:
            self.warned[code] = self.warned.get(code, 0) + 1

    def block(self, items, results):
        """The output of a scored block: ``items`` ``(line, Example, extra)``, ``results`` of :func:`score_block`."""
        for (line, ex, _), (text, res) in zip(items, results):
            if text is None:
                self.error(line, [res], ex.id)
            else:
                self.scored(line, ex, text, res)

    def flush(self, last_line):
        """Flush the output; ``progress`` hears how many lines are done."""
        try:
            self.out.flush()
        except (OSError, ValueError) as exc:
            raise StreamAborted("output", last_line, self.n_flushed, exc) from exc
        self.n_flushed = self.n_ok + self.n_bad
        if self.progress is not None:
            self.progress(self.n_flushed)


def score_block(scorer, block, *, path: str = "<input>", policy=None, include_context: bool = True) -> list:
    """Score one block of ``[(line, Example, extra), ...]`` as :func:`score_file` writes it.

    Returns, per line, ``(json_line, ScoreResult)`` or ``(None, DataIssue)``:
    a block that fails is retried answer by answer (one answer can never take
    the others down), and a result that cannot be written as JSON is an error
    (E110) of its line.  The serial and the ``--jobs`` paths both score
    through this function, so their outputs are the same bytes.
    """
    from ..errors import DataIssue

    def score_one(line, ex, extra):
        try:
            return scorer.score_examples([ex], policy=policy, extras=[extra])[0]
        except Exception as exc:  # noqa: BLE001 - one answer must never end the run
            return DataIssue("E110", path, line, None, f"scoring failed: {type(exc).__name__}: {exc}"[:500])

    try:
        results = scorer.score_examples([ex for _, ex, _ in block], policy=policy,
                                        extras=[extra for _, _, extra in block])
    except Exception:  # noqa: BLE001 - isolate the answer that fails, keep the others
        results = [score_one(line, ex, extra) for line, ex, extra in block]
    out = []
    for (line, _, _), res in zip(block, results):
        if not isinstance(res, DataIssue) and not _finite_risks(res):
            res = DataIssue("E110", path, line, None, "scoring failed: the model gave a risk that is not a finite "
                                                      "number (a malformed model)")
        if not isinstance(res, DataIssue):
            if not include_context:
                res = dataclasses.replace(res, context="")
            try:
                out.append((dumps_line({"line": line, **res.to_dict()}), res))
                continue
            except Exception as exc:  # noqa: BLE001 - a result that cannot be serialised is an error of its line
                res = DataIssue("E110", path, line, None,
                                f"result could not be written: {type(exc).__name__}: {exc}"[:500])
        out.append((None, res))
    return out


def _finite_risks(res) -> bool:
    """Whether every risk of a result (answer, sentences, spans) is a finite number."""
    risks = [res.risk, *(s.risk for s in res.sentences), *(s.risk for s in res.spans)]
    try:
        return all(math.isfinite(r) for r in risks)
    except TypeError:
        return False


def score_file(path, out, scorer, *, policy=None, audit=None, progress=None, batch_size: int = 16,
               limits=None, include_context: bool = True, stats: dict | None = None):
    """Score every line of ``path`` and write one JSON line per input line to ``out`` (a text stream).

    No input line can stop the run: a line that cannot be read or scored gets
    an error record (code, line, field, reason) and every other line is
    scored.  Only a failure to *write* (``out`` or the audit log: a full disk,
    a closed pipe) stops it, with :class:`StreamAborted`; a scored line is
    never written when its audit record could not be.

    Parameters
    ----------
    path : str, Path or binary stream
        A generic JSONL or a RAGTruth ``response.jsonl``, or a binary stream
        of generic JSONL such as ``sys.stdin.buffer`` (see
        :func:`evqual.data.iter_records`).  Fields of a line that evqual does
        not read pass through to the result's ``extra``.
    out : text stream
        Receives ``{"line": n, **ScoreResult.to_dict()}`` or an error record
        ``{"line": n, "id", "error", "issues"}`` per input line, flushed after
        every batch.
    scorer : Scorer
        The scoring pipeline (see :class:`evqual.scoring.Scorer`).
    policy : Policy, optional
        Overrides the scorer's policy.
    audit : AuditLog, optional
        Gets one record per scored answer (written before its output line)
        and one per failed line.
    progress : callable, optional
        Called with the number of lines done.
    batch_size : int, default=16
        Answers featurized together (a batch that fails is retried answer by
        answer so that one bad answer cannot take others down).  Results do
        not depend on it.
    limits : evqual.data.Limits, optional
        Size caps per line (default :data:`evqual.data.DEFAULT_LIMITS`).
    include_context : bool, default=True
        Write each answer's context in its result (``False``: ``"context":
        ""``, for smaller outputs; reports then cannot show it).
    stats : dict, optional
        Filled with ``{"warnings": {code: answers}}``: how many scored answers got each warning (``W004``:
        outside what the model knows), for a run's summary line.

    Returns
    -------
    (n_ok, n_failed) : tuple of int

    Raises
    ------
    StreamAborted
        When ``out`` or the audit log cannot be written.
    evqual.errors.EvqualDataError
        When ``path`` cannot be opened or read.
    """
    from ..data import iter_records
    from ..errors import DataIssue, EvqualDataError

    pending: list = []  # (line, example, extra)
    policy = policy if policy is not None else getattr(scorer, "policy", None)
    policy_dict = policy.to_dict() if policy is not None and audit is not None else None
    where = str(getattr(path, "name", "<stream>")) if hasattr(path, "read") else str(path)
    sink = _Output(out, audit, policy_dict, progress)
    emit_error = sink.error

    def flush():
        if not pending:
            return
        sink.block(pending, score_block(scorer, pending, path=where, policy=policy, include_context=include_context))
        last = pending[-1][0]
        pending.clear()
        sink.flush(last)

    seen_ids: dict = {}
    try:
        for line, ex, issues, record_id, extra in iter_records(path, limits=limits, with_extra=True):
            if ex is None:
                flush()  # keep the input order
                emit_error(line, issues, record_id)  # the id of a bad line, when it has one
                continue
            if ex.id is not None:
                first = seen_ids.setdefault(ex.id, line)
                if first != line:  # as the loaders do (E108): an id names one answer
                    flush()
                    emit_error(line, [DataIssue("E108", str(path), line, "id",
                                                f"id {ex.id!r} already used on line {first}")], ex.id)
                    continue
            pending.append((line, ex, extra))
            if len(pending) >= batch_size:
                flush()
    except EvqualDataError:  # the input cannot be read further: what was read is still scored and written
        flush()
        out.flush()
        raise
    flush()
    sink.flush(sink.n_ok + sink.n_bad)
    if stats is not None:
        stats["warnings"] = dict(sink.warned)
    return sink.n_ok, sink.n_bad


def parse_results(lines, source: str = "<results>", on_error=None, check=None) -> list[ScoreResult]:
    """Results from the lines ``evqual score`` writes; error records go to ``on_error(record)`` (or are skipped).

    A results file may have been edited by hand: a line that is not JSON, not an object, not a result
    (:meth:`ScoreResult.from_dict` fails) or that ``check(result)`` rejects becomes an error record
    ``{"line", "id", "error"}`` of its own line, and the other lines are read.
    """
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except (ValueError, RecursionError) as exc:
            if on_error is not None:
                on_error({"line": n, "id": None, "error": f"{source}: not valid JSON ({_short(exc)})"})
            continue
        if not isinstance(d, dict) or "error" in d:
            if on_error is not None:
                on_error(d if isinstance(d, dict) else {"line": n, "id": None,
                                                        "error": f"{source}: not a JSON object"})
            continue
        d.pop("line", None)
        try:
            result = ScoreResult.from_dict(d)
            if check is not None:
                check(result)
        except Exception as exc:  # noqa: BLE001 - a hand-edited record: an error of its line, never of the file
            if on_error is not None:
                rid = d.get("id") if isinstance(d.get("id"), (str, int)) else None
                on_error({"line": n, "id": rid, "error": f"not a valid result ({type(exc).__name__}: {_short(exc)})"})
            continue
        out.append(result)
    return out


def _short(exc, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_results(path) -> list[ScoreResult]:
    """Read an ``evqual score`` output file back (error records are skipped)."""
    with open(path, encoding="utf-8") as fh:
        return parse_results(fh, str(path))
