"""An append-only JSON Lines audit log of scored answers.

Each scored answer becomes one line: when it was scored, by which model,
under which threshold and topics, its risk and decision, the predicted
spans, the reason codes and the flagged sentences with their evidence. The
scored texts themselves are not stored: no query, context or answer text,
no span text, no quoted reason (spans and sentences are character offsets,
reasons are codes, evidence is a chunk id); ``input_sha256`` (see
:func:`input_sha256`) identifies the input without keeping it.  The file is
created readable and writable by its owner only (``0600``; the umask can
only make it stricter).

Guarantee
---------
:meth:`AuditLog.write` builds the whole record first, then writes it as one
line with a single ``write`` call, flushes it and (by default) calls ``os.fsync``
before returning. The file is opened in append mode. A crash in the
middle of a batch therefore loses at most the answer being scored: every
record whose ``write`` returned is on disk and whole. Should a crash ever
cut a line short, the next :class:`AuditLog` opened on the file ends that
fragment with a newline so it cannot corrupt the next record, and
:func:`read_audit_log` reports it with its line number.

Examples
--------
>>> import tempfile, os
>>> from evqual.scoring import AuditLog, ScoreResult, read_audit_log
>>> path = os.path.join(tempfile.mkdtemp(), "audit.jsonl")
>>> r = ScoreResult(id="a1", risk=0.2, flagged=False, decision="show", threshold=0.5)
>>> with AuditLog(path) as log:
...     _ = log.write(r)
>>> [rec["decision"] for rec in read_audit_log(path)]
['show']
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from datetime import datetime, timezone

from ..results import ScoreResult

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: appends stay atomic, the open check is unlocked
    fcntl = None

__all__ = ["AuditLog", "input_sha256", "read_audit_log"]


def _now() -> str:
    """The current UTC time, ISO-8601 with milliseconds and a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def input_sha256(query, context, output) -> str:
    """SHA-256 of a scored input, without storing the input.

    The hash is taken over the canonical JSON (sorted keys, no spaces,
    UTF-8) of ``{"query", "context", "output"}``. A context given as a list
    of passages hashes differently from the same passages joined into one
    string.

    Parameters
    ----------
    query : str
    context : str or list of str
    output : str

    Returns
    -------
    str
        64 hexadecimal digits.

    Examples
    --------
    >>> h = input_sha256("Who?", ["Ada wrote it."], "Ada.")
    >>> len(h), h == input_sha256("Who?", ["Ada wrote it."], "Ada.")
    (64, True)
    """
    if not isinstance(context, str):
        context = list(context)
    canonical = json.dumps({"query": query, "context": context, "output": output},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # surrogatepass: text with an unpaired surrogate (not valid Unicode) still hashes, and valid text
    # hashes exactly as with plain UTF-8
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


class _FileLock:
    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)


class AuditLog:
    """Append scored answers to a JSON Lines audit log.

    The file is opened in append mode (UTF-8) when the log is created and
    closed by :meth:`close` or on leaving a ``with`` block. Earlier lines
    are never rewritten.

    Each record is written whole with one ``write`` call, flushed and, when
    ``fsync`` is true, ``fsync``-ed before :meth:`write` returns, so a crash
    in the middle of a batch loses at most the answer being scored.

    Parameters
    ----------
    path : str or path-like
        The log file; created if absent (its folder must exist).
    fsync : bool, default=True
        ``os.fsync`` after each record, so that records survive a power
        loss as well as a crash of the process. Costs a disk round trip
        per record.

    Notes
    -----
    A score record has the keys ``time`` (UTC, ISO-8601, ``Z``), ``id``,
    ``model`` (``name``, ``method``, ``version``, ``sha256``),
    ``threshold``, ``topics``, ``sensitive``, ``risk``, ``flagged``,
    ``decision``, ``rule`` (the policy rule that decided), ``verify``,
    ``spans`` (``start``, ``end``, ``risk``), ``reason_codes``
    (of the flagged sentences), ``flagged_sentences`` (``index``,
    ``start``, ``end``, ``risk``, ``reasons`` as codes,
    ``evidence_chunk_id``), ``note_codes`` and ``notes`` (the same for
    every sentence that is not flagged but has reasons, with ``note``: its
    own signals would have flagged it in an answer that is shown),
    ``label`` (the gold or user label, or None), ``warnings`` (codes),
    ``input_sha256`` and ``policy`` (None when not given).  As in every
    output, an answer is flagged exactly when ``flagged_sentences`` is not
    empty. An error record (:meth:`write_error`) has ``time``, ``id``,
    ``line`` and ``error``. Records are strict JSON: a NaN risk is refused
    before anything is written.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "audit.jsonl")
    >>> r = ScoreResult(id="q7", risk=0.8, flagged=True, decision="regenerate", threshold=0.5)
    >>> with AuditLog(path, fsync=False) as log:
    ...     rec = log.write(r, input_sha256=input_sha256("q", "c", "o"))
    ...     err = log.write_error(3, "missing field 'output'")
    >>> rec["decision"], rec["flagged"], err["line"]
    ('regenerate', True, 3)
    """

    def __init__(self, path, *, fsync=True):
        self.path = path
        self.fsync = fsync
        self._lock = threading.Lock()
        # unbuffered: a record is handed to the kernel by one os.write, so a failed write (a full disk)
        # leaves nothing behind in a buffer to be written later, out of order
        # owner only: the log says what was scored and decided, for whom
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            with self._locked():
                self._end_torn_line()
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def _end_torn_line(self):
        """End a line a crash left without its newline, so the next record starts clean."""
        st = os.fstat(self._fd)
        size = st.st_size
        if size == 0 or not stat.S_ISREG(st.st_mode):
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            last = f.read(1)
        if last != b"\n":
            self._write_all(b"\n")

    def _write_all(self, data: bytes):
        """One ``os.write`` (looping only on a short write), then ``fsync`` when asked."""
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        if self.fsync:
            os.fsync(self._fd)

    def _locked(self):
        """An exclusive advisory lock on the file (POSIX ``flock``) shared by every evqual writer.

        Appends are atomic on their own; the lock also keeps the torn-line check at open from reading
        another process's record while it is being written (which would add a stray empty line)."""
        return _FileLock(self._fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self):
        """Close the file (records are already on disk)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"AuditLog({os.fspath(self.path)!r}, fsync={self.fsync!r})"

    def _append(self, record: dict) -> dict:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
        data = line.encode("utf-8", errors="backslashreplace")  # never fails, even on unpaired surrogates
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self!r} is closed")
            with self._locked():
                self._write_all(data)  # one write call per record
        return record

    def write(self, result: ScoreResult, *, policy=None, input_sha256=None, request_id=None) -> dict:
        """Append the record of one scored answer.

        Parameters
        ----------
        result : ScoreResult
        policy : dict, default=None
            The policy that decided, e.g. :meth:`evqual.scoring.Policy.to_dict`.
        input_sha256 : str, default=None
            The hash of the scored input (see :func:`input_sha256`).
        request_id : str, default=None
            The service request that scored it (``evqual serve``); the record gets a ``request_id`` key only
            when it is given.

        Returns
        -------
        dict
            The record as written.
        """
        if not isinstance(result, ScoreResult):
            raise TypeError(f"result must be a ScoreResult; got {type(result).__name__}")
        m = result.model
        record = {
            "time": _now(),
            "id": result.id,
            "model": {"name": m.name, "method": m.method, "version": m.version, "sha256": m.sha256},
            "threshold": result.threshold,
            "topics": list(result.topics),
            "sensitive": result.sensitive,
            "risk": result.risk,
            "flagged": result.flagged,
            "decision": result.decision,
            "rule": result.rule,
            "verify": result.verify,
            "verification": _verification_record(result.verification),
            "final_flagged": result.final_flagged,
            "spans": [{"start": s.start, "end": s.end, "risk": s.risk} for s in result.spans],
            "reason_codes": result.reason_codes,
            "flagged_sentences": [
                {"index": s.index, "start": s.start, "end": s.end, "risk": s.risk,
                 "reasons": [r.code for r in s.reasons],
                 "evidence_chunk_id": s.evidence.chunk_id if s.evidence is not None else None}
                for s in result.sentences if s.flagged
            ],
            "note_codes": result.note_codes,
            "notes": [
                {"index": s.index, "start": s.start, "end": s.end, "risk": s.risk, "note": s.note,
                 "reasons": [r.code for r in s.reasons],
                 "evidence_chunk_id": s.evidence.chunk_id if s.evidence is not None else None}
                for s in result.sentences if not s.flagged and (s.reasons or s.note)
            ],
            "label": result.label,
            "warnings": [w.get("code") if isinstance(w, dict) else str(w) for w in result.warnings],
            "input_sha256": input_sha256,
            "policy": policy,
        }
        if request_id is not None:
            record["request_id"] = str(request_id)
        return self._append(record)

    def write_error(self, line_no, message, id=None, request_id=None) -> dict:
        """Append the record of an input that could not be scored.

        Parameters
        ----------
        line_no : int
            1-based line (or row) of the input.
        message : str
        id : str, default=None
            The input's id, when it could be read.
        request_id : str, default=None
            The service request it came in (a ``request_id`` key only when given).

        Returns
        -------
        dict
            The record as written.
        """
        record = {"time": _now(), "id": id, "line": line_no, "error": str(message)}
        if request_id is not None:
            record["request_id"] = str(request_id)
        return self._append(record)


def read_audit_log(path) -> list:
    """Read every record of an audit log.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list of dict
        The records, in file order.

    Raises
    ------
    ValueError
        If a line is not a JSON object (naming the file and the 1-based
        line), e.g. a line a crash cut short.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "audit.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"id": "a"}\\n{"id": "b", "ris')
    >>> read_audit_log(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...audit.jsonl, line 2, column 13: not valid JSON (...); the line may have been cut short by a crash
    """
    records = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                record = json.loads(raw.decode("utf-8").removesuffix("\n"))
            except UnicodeDecodeError as e:
                raise ValueError(f"{os.fspath(path)}, line {n}: not UTF-8 ({e.reason})") from e
            except json.JSONDecodeError as e:
                raise ValueError(f"{os.fspath(path)}, line {n}, column {e.pos + 1}: not valid JSON ({e.msg}); "
                                 "the line may have been cut short by a crash") from e
            if not isinstance(record, dict):
                raise ValueError(f"{os.fspath(path)}, line {n}: not a JSON object; got {type(record).__name__}")
            records.append(record)
    return records


def _reason_code(reason):
    """The code of a verification reason (``"date: '1932' vs '1937'"`` -> ``"date"``): the quoted words are
    text of the answer and the evidence, which the log does not keep."""
    if not isinstance(reason, str) or not reason:
        return None
    code = reason.split(":", 1)[0].strip()
    return code if code.replace("_", "").replace(" ", "").isalnum() and len(code) <= 40 else "other"


def _verification_record(v):
    """What the audit log keeps of a verification: the verdict, its cost, and per claim or factoid the span,
    verdict or score, and the evidence chunks it was checked against."""
    if not v:
        return None
    items = []
    for c in v.get("claims") or ():
        items.append({"start": c.get("start"), "end": c.get("end"), "verdict": c.get("verdict"),
                      "p_supported": c.get("p_supported", c.get("probability")), "reason": _reason_code(c.get("reason")),
                      "evidence_chunks": [e.get("chunk") for e in c.get("evidence") or ()]})
    for f in v.get("factoids") or ():
        items.append({"start": f.get("start"), "end": f.get("end"), "score": f.get("score"),
                      "flagged": f.get("flagged"),
                      "answers": [[x.get("kind"), x.get("answer")] for x in f.get("variants") or ()],
                      "evidence_chunks": [e.get("chunk") if isinstance(e, dict) else getattr(e, "chunk", None)
                                          for e in f.get("evidence") or ()]})
    return {"method": v.get("method"), "backend": v.get("backend"), "score": v.get("score"),
            "flagged": v.get("flagged"), "tier": v.get("tier"), "tau": v.get("tau"), "error": v.get("error"),
            "latency_ms": v.get("latency_ms"), "usage": v.get("usage"), "items": items}
