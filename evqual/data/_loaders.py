"""Loaders for the three supported layouts, with row-level validation.

Layouts
-------
``ragtruth``
    A folder (or its ``response.jsonl``) holding RAGTruth's original
    ``response.jsonl`` and ``source_info.jsonl``.
``table``
    The RAGTruth-processed table (CSV or parquet) with columns ``query,
    context, output`` and optionally ``id, source_id, split, task_type,
    quality, model, temperature, hallucination_labels,
    hallucination_labels_processed, label``.
``jsonl``
    A generic JSONL of RAG logs, one object per line::

        {"id"?, "query"?, "context": str | [str, ...] | {record}, "output",
         "label"?, "spans"?: [{"start", "end"}], "task_type"?, "model"?,
         "split"?, "source_id"?, "temperature"?, "quality"?}

Validation
----------
Every row is checked (JSON syntax, required fields, types, span offsets and
span text).  Each problem becomes a :class:`~evqual.errors.DataIssue` naming
file, line and field.  With ``strict=True`` the first problem raises
:class:`~evqual.errors.EvqualDataError`; by default bad rows are left out,
*reported* (a warning with the count and the first few, and the full list on
``LoadResult.issues``) and every good row is kept.  Blank lines are not rows.
"""

from __future__ import annotations

import contextlib

import csv
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataIssue, EvqualDataError
from ._chunking import chunk_context, derive_query
from ._json import DepthError, LongInt, check_value, loads_bounded, loads_literal
from ._limits import DEFAULT_LIMITS, Limits
from ._records import Example, Span

__all__ = [
    "LoadResult",
    "EvqualDataWarning",
    "load_data",
    "load_ragtruth",
    "load_table",
    "load_jsonl",
    "detect_layout",
    "iter_records",
]

RAGTRUTH_TASKS = ("QA", "Summary", "Data2txt")


class EvqualDataWarning(UserWarning):
    """Some rows were bad and left out (their issues are on the result)."""


@dataclass
class LoadResult:
    """What a loader returns: the good examples and every issue found.

    Attributes
    ----------
    examples : list of Example
        Good rows, in file order.
    issues : list of DataIssue
        One entry per problem; rows with an issue are not in ``examples``.
    layout : str
        ``"ragtruth"``, ``"table"`` or ``"jsonl"``.
    paths : list of str
        Files read.
    """

    examples: list[Example]
    issues: list[DataIssue] = field(default_factory=list)
    layout: str = ""
    paths: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self):
        return iter(self.examples)

    def __getitem__(self, i):
        return self.examples[i]

    @property
    def n_bad(self) -> int:
        """Number of distinct bad rows (a row may have several issues)."""
        return len({(i.file, i.line) for i in self.issues})

    def report(self, max_shown: int = 5) -> str:
        """Human-readable summary: counts and the first ``max_shown`` issues."""
        head = f"{len(self.examples)} examples loaded ({self.layout})"
        if not self.issues:
            return head
        lines = [f"{head}; {self.n_bad} bad rows left out ({len(self.issues)} issues):"]
        lines += [f"  {i}" for i in self.issues[:max_shown]]
        if len(self.issues) > max_shown:
            lines.append(f"  ... and {len(self.issues) - max_shown} more")
        return "\n".join(lines)

    def to_frame(self):
        """The examples as a :class:`pandas.DataFrame` (see :func:`to_frame`)."""
        from ._frame import to_frame

        return to_frame(self.examples)


class _Collector:
    """Collects issues; raises at the first one in strict mode."""

    def __init__(self, strict: bool, unit: str = "line"):
        self.strict = strict
        self.unit = unit
        self.issues: list[DataIssue] = []

    def add(self, code, file, line, fld, message):
        issue = DataIssue(code, str(file), line, fld, message, self.unit)
        self.issues.append(issue)
        if self.strict:
            raise EvqualDataError([issue])


class _RowError(Exception):
    """Internal: the current row is bad (already recorded)."""


def _finish(result: LoadResult, warn: bool = True) -> LoadResult:
    if result.issues and not result.examples:
        raise EvqualDataError(result.issues, n_ok=0)
    if result.issues and warn:
        warnings.warn(result.report(), EvqualDataWarning, stacklevel=3)
    return result


def _parse_line(raw: bytes | None, path: Path, line_no: int, col: _Collector, limits: Limits = DEFAULT_LIMITS):
    """The JSON object of one line, or ``None`` after recording why it is not one (E101).

    ``raw`` is ``None`` for a line longer than ``limits.max_line_bytes`` (skipped unread)."""
    if raw is None:
        col.add("E101", path, line_no, None, f"line is longer than {limits.max_line_bytes:,} bytes "
                                              "(Limits.max_line_bytes); skipped")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        col.add("E101", path, line_no, None, f"line is not valid UTF-8 ({exc.reason} at byte {exc.start + 1})")
        return None
    try:
        obj = loads_bounded(text)
    except ValueError as exc:
        if isinstance(exc, DepthError):
            col.add("E101", path, line_no, exc.field, f"JSON {exc}")
        elif hasattr(exc, "colno"):
            col.add("E101", path, line_no, None, f"invalid JSON: {exc.msg} at column {exc.colno}")
        else:
            col.add("E101", path, line_no, None, f"invalid JSON: {exc}")
        return None
    if not isinstance(obj, dict):
        col.add("E101", path, line_no, None, f"expected a JSON object, got {_type_name(obj)}")
        return None
    return obj


def _type_name(value) -> str:
    return "an integer literal too long to read" if isinstance(value, LongInt) else type(value).__name__


_BOM = b"\xef\xbb\xbf"


def _raw_lines(fh, max_bytes: int | None):
    """``(line_no, bytes)`` per line of a binary file; ``bytes`` is ``None`` for a line over ``max_bytes``.

    A line over the cap is skipped in pieces, never held in memory whole."""
    line_no = 0
    while True:
        raw = fh.readline() if max_bytes is None else fh.readline(max_bytes + 1)
        if not raw:
            return
        line_no += 1
        if line_no == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]  # a UTF-8 byte-order mark (Windows editors write one) is not data
        if max_bytes is not None and len(raw) > max_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(1 << 20)
            yield line_no, None
            continue
        yield line_no, raw


def _iter_jsonl(path: Path, col: _Collector, limits: Limits = DEFAULT_LIMITS):
    """Yield ``(line_no, obj)`` for every parseable JSON-object line."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        col.add("E109", path, None, None, f"cannot open file: {exc.strerror or exc}")
        return
    with fh:
        for line_no, raw in _raw_lines(fh, limits.max_line_bytes):
            if raw is not None and not raw.strip():
                continue
            obj = _parse_line(raw, path, line_no, col, limits)
            if obj is not None:
                yield line_no, obj


def _check_fields(obj: dict, keys, col: _Collector, path, line, prefix: str = "", names=None) -> None:
    """Record E103 and raise _RowError when a known field holds a value no field accepts.

    (nesting deeper than the limit, an over-long integer literal, an unpaired surrogate); ``names``
    maps a key to the name the user knows it by."""
    for key in keys:
        if key in obj:
            problem = check_value(obj[key], f"{prefix}{(names or {}).get(key, key)}")
            if problem is not None:
                fld, _, message = problem.partition(": ")
                col.add("E103", path, line, fld, message)
                raise _RowError


def _check_sizes(col: _Collector, path, line, limits: Limits, *, output, context, query) -> None:
    over = limits.check_sizes(output=output, context=context, query=query)
    if over is not None:
        col.add("E103", path, line, over[0], over[1])
        raise _RowError


def _chunk(context, task, col: _Collector, path, line, fld: str):
    """``chunk_context`` with its errors recorded as E103 on ``fld``."""
    try:
        return chunk_context(context, task)
    except (TypeError, ValueError) as exc:
        col.add("E103", path, line, fld, str(exc))
        raise _RowError from None


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
               list: "a list", dict: "an object"}


def _get(obj, key, types, col, path, line, *, required=True, nullable=False, prefix=""):
    """Fetch ``obj[key]`` checking its type; record an issue and raise _RowError if bad."""
    fld = f"{prefix}{key}"
    if key not in obj:
        if required:
            col.add("E102", path, line, fld, "required field is missing")
            raise _RowError
        return None
    value = obj[key]
    if value is None:
        if nullable or not required:
            return None
        col.add("E103", path, line, fld, "must not be null")
        raise _RowError
    if isinstance(value, bool) and bool not in types:
        ok = False
    elif float in types and isinstance(value, int):
        ok = True
    else:
        ok = isinstance(value, types)
    if float in types and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if not ok:
        want = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
        col.add("E103", path, line, fld, f"must be {want}; got {_describe(value)}")
        raise _RowError
    return value


def _describe(value) -> str:
    if isinstance(value, LongInt):
        return repr(value)
    if isinstance(value, str) and len(value) > 40:
        value = value[:40]  # never repr a long text whole
    elif isinstance(value, (list, dict)) and len(value) > 8:
        value = type(value)(list(value.items())[:8] if isinstance(value, dict) else value[:8])
    try:
        text = repr(value)
    except RecursionError:  # pragma: no cover - values are depth-checked before
        text = "..."
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _parse_spans(items, output: str, col, path, line, *, prefix="labels", require_text=False):
    """Validate a list of span dicts against ``output``; return Spans or raise _RowError."""
    spans = []
    bad = False
    for k, item in enumerate(items):
        pre = f"{prefix}[{k}]."
        if not isinstance(item, dict):
            col.add("E103", path, line, f"{prefix}[{k}]", f"must be an object; got {_describe(item)}")
            bad = True
            continue
        try:
            start = _get(item, "start", (int,), col, path, line, prefix=pre)
            end = _get(item, "end", (int,), col, path, line, prefix=pre)
            text = _get(item, "text", (str,), col, path, line, required=require_text, nullable=not require_text,
                        prefix=pre)
            label_type = item.get("label_type", item.get("label"))
            if label_type is not None and not isinstance(label_type, str):
                col.add("E103", path, line, f"{pre}label_type", f"must be a string; got {_describe(label_type)}")
                raise _RowError
            implicit = _get(item, "implicit_true", (bool,), col, path, line, required=False, prefix=pre)
            due = _get(item, "due_to_null", (bool,), col, path, line, required=False, prefix=pre)
            meta = item.get("meta")
        except _RowError:
            bad = True
            continue
        if not (0 <= start < end <= len(output)):
            col.add("E104", path, line, f"{pre}start/end",
                    f"span [{start}, {end}) is empty or outside the output (length {len(output)})")
            bad = True
            continue
        if text is not None and output[start:end] != text:
            col.add("E105", path, line, f"{pre}text",
                    f"span text {text[:40]!r} does not match output[{start}:{end}] = {output[start:end][:40]!r}")
            bad = True
            continue
        spans.append(Span(start, end, text, label_type, bool(implicit), bool(due),
                          meta if isinstance(meta, str) else None))
    if bad:
        raise _RowError
    return tuple(spans)


# --------------------------------------------------------------------- RAGTruth
def _ragtruth_files(path: Path) -> tuple[Path, Path]:
    if path.is_dir():
        return path / "response.jsonl", path / "source_info.jsonl"
    return path, path.with_name("source_info.jsonl")


def _ragtruth_sources(src_path: Path, col: _Collector, limits: Limits = DEFAULT_LIMITS) -> dict[str, tuple]:
    """``source_id`` -> (task, query, (context, chunks), line) of a ``source_info.jsonl``."""
    sources: dict[str, tuple] = {}
    for line, obj in _iter_jsonl(src_path, col, limits):
        try:
            _guarded(_ragtruth_source, col, src_path, line, obj, sources, src_path, line, col, limits)
        except _RowError:
            continue
    return sources


def _ragtruth_source(obj, sources, src_path: Path, line: int, col: _Collector, limits: Limits) -> None:
    """Add one ``source_info.jsonl`` line to ``sources`` (raises _RowError after recording the problem)."""
    _check_fields(obj, ("source_id", "task_type", "source_info", "prompt"), col, src_path, line)
    sid = _get(obj, "source_id", (str, int), col, src_path, line)
    task = _get(obj, "task_type", (str,), col, src_path, line)
    if task not in RAGTRUTH_TASKS:
        col.add("E103", src_path, line, "task_type", f"must be one of {RAGTRUTH_TASKS}; got {task!r}")
        raise _RowError
    info = _get(obj, "source_info", (str, dict), col, src_path, line)
    question = None
    if task == "QA":
        if not isinstance(info, dict):
            col.add("E103", src_path, line, "source_info", "must be an object {question, passages} for QA")
            raise _RowError
        question = _get(info, "question", (str,), col, src_path, line, prefix="source_info.")
        context_in = _get(info, "passages", (str, list), col, src_path, line, prefix="source_info.")
        if isinstance(context_in, list):
            for k, item in enumerate(context_in):
                if not isinstance(item, str):
                    col.add("E103", src_path, line, f"source_info.passages[{k}]",
                            f"must be a string; got {_describe(item)}")
                    raise _RowError
    elif task == "Summary":
        if not isinstance(info, str):
            col.add("E103", src_path, line, "source_info", "must be the article text (a string) for Summary")
            raise _RowError
        context_in = info
    else:
        context_in = info
    sid = str(sid)
    if sid in sources:
        col.add("E108", src_path, line, "source_id", f"source_id {sid!r} already defined on line {sources[sid][3]}")
        raise _RowError
    context, chunks = _chunk(context_in, task, col, src_path, line, "source_info")
    _check_sizes(col, src_path, line, limits, output="", context=context, query=question)
    sources[sid] = (task, derive_query(task, question), (context, chunks), line)


def _guarded(fn, col: _Collector, path, line, *args):
    """``fn(*args)``; an unexpected error becomes an E111 issue of the row (and _RowError), never a crash."""
    try:
        return fn(*args)
    except (_RowError, EvqualDataError):
        raise
    except Exception as exc:  # noqa: BLE001 - one row must never end a run
        col.add("E111", path, line, None, f"could not read the row: {type(exc).__name__}: {str(exc)[:200]}")
        raise _RowError from None


def _ragtruth_row(obj, sources, resp_path: Path, src_path: Path, line: int, col: _Collector,
                  limits: Limits = DEFAULT_LIMITS) -> Example:
    """One ``response.jsonl`` row to an Example (raises _RowError after recording the problem)."""
    _check_fields(obj, ("id", "source_id", "response", "split", "model", "temperature", "quality", "labels"),
                  col, resp_path, line)
    rid = _get(obj, "id", (str, int), col, resp_path, line)
    sid = _get(obj, "source_id", (str, int), col, resp_path, line)
    output = _get(obj, "response", (str,), col, resp_path, line)
    split = _get(obj, "split", (str,), col, resp_path, line, required=False, nullable=True)
    model = _get(obj, "model", (str,), col, resp_path, line, required=False, nullable=True)
    temp = _get(obj, "temperature", (float,), col, resp_path, line, required=False, nullable=True)
    quality = _get(obj, "quality", (str,), col, resp_path, line, required=False, nullable=True)
    labels = _get(obj, "labels", (list,), col, resp_path, line)
    over = limits.check_sizes(output=output, context="", query=None)
    if over is not None:
        col.add("E103", resp_path, line, "response", over[1])
        raise _RowError
    spans = _parse_spans(labels, output, col, resp_path, line)
    rid, sid = str(rid), str(sid)
    if sid not in sources:
        col.add("E106", resp_path, line, "source_id", f"source_id {sid!r} is not in {src_path.name}")
        raise _RowError
    task, query, (context, chunks), _ = sources[sid]
    return Example(id=rid, query=query, context=context, output=output, chunks=chunks, task_type=task,
                   source_id=sid, split=split, model=model, temperature=float(temp) if temp is not None else None,
                   quality=quality, spans=spans, label=int(bool(spans)), origin=f"{resp_path}:{line}")


def iter_records(path, *, limits: Limits | None = None, with_ids: bool = False, with_extra: bool = False):
    """Stream a generic JSONL or a RAGTruth ``response.jsonl``, one item per line.

    Yields ``(line_no, example, issues)`` for *every* line but the blank lines
    at the end of the file (an editor's trailing newline is not a record; a
    blank line before a record is reported, E101): ``example`` is ``None``
    when the line is bad, and ``issues`` then lists its
    :class:`~evqual.errors.DataIssue` (file, line, field, reason).  Nothing
    else is skipped, so a caller can write exactly one output per input
    record line, and no line, however malformed, ends the stream (an
    unexpected error becomes an E111 issue of its line).  A UTF-8
    byte-order mark before the first line is ignored.  A RAGTruth file is
    recognised by a ``source_info.jsonl`` beside it (read first, whole).

    Parameters
    ----------
    path : str or Path
    limits : Limits, optional
        Size caps per row (default :data:`~evqual.data.DEFAULT_LIMITS`).
    with_ids : bool, default=False
        Yield ``(line_no, example, issues, id)`` instead: ``id`` is the
        line's ``"id"`` (a string or an integer, as a string) when the line
        is a JSON object that has one, even when the line is bad, so that an
        error record can name the answer it is about; else ``None``.
    with_extra : bool, default=False
        Yield ``(line_no, example, issues, id, extra)``: ``extra`` holds the
        fields of a generic JSONL line that evqual does not read (passed
        through to results), ``{}`` for RAGTruth rows and bad lines.

    ``path`` may also be a binary stream (standard input: ``sys.stdin.buffer``),
    read as a generic JSONL and named by its ``name`` (``<stdin>``) in issues.

    Raises
    ------
    EvqualDataError
        (E109) Only when the file cannot be opened or read at all; the lines
        yielded before a read error stay valid.

    Examples
    --------
    >>> import json, tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps({"context": "a", "output": "b", "query": "q"}) + "\\n{bad\\n")
    >>> [(n, ex is not None, [i.code for i in issues]) for n, ex, issues in iter_records(f.name)]
    [(1, True, []), (2, False, ['E101'])]
    >>> os.unlink(f.name)
    """
    limits = DEFAULT_LIMITS if limits is None else limits
    col = _Collector(strict=False)
    if hasattr(path, "read"):  # a binary stream, such as standard input: a generic JSONL
        fh = contextlib.nullcontext(path)
        path = Path(str(getattr(path, "name", "<stream>")))
        ragtruth, sources, src_path, bad_sources = False, None, None, []
    else:
        path = Path(path)
        if path.is_dir():
            path = path / "response.jsonl"
        src_path = path.with_name("source_info.jsonl")
        ragtruth = src_path.is_file() and path.name != src_path.name
        sources = _ragtruth_sources(src_path, col, limits) if ragtruth else None
        if not path.is_file():
            col.add("E109", path, None, None, "file not found")
            raise EvqualDataError(col.issues, n_ok=0)
        # source problems matter only for the rows that use them: such a row gets E106, told about them
        bad_sources = list(col.issues)
        col.issues.clear()
        try:
            fh = open(path, "rb")
        except OSError as exc:
            col.add("E109", path, None, None, f"cannot open file: {exc.strerror or exc}")
            raise EvqualDataError(col.issues, n_ok=0) from None
    with fh as fh:
        lines = _raw_lines(fh, limits.max_line_bytes)
        line_no = 0
        blanks: list = []  # blank lines seen since the last record: reported only when a record follows
        while True:
            try:
                item = next(lines, None)
            except OSError as exc:
                col.add("E109", path, line_no + 1, None, f"cannot read the file: {exc.strerror or exc}")
                raise EvqualDataError(col.issues[-1:], n_ok=None) from None
            if item is None:
                return  # blank lines at the end of the file are no records: nothing to report
            line_no, raw = item
            if raw is not None and not raw.strip():
                blanks.append(line_no)
                continue
            for blank in blanks:
                col.add("E101", path, blank, None, "blank line (no JSON object)")
                issue = col.issues.pop()
                yield ((blank, None, [issue], None, {}) if with_extra else
                       (blank, None, [issue], None) if with_ids else (blank, None, [issue]))
            blanks.clear()
            before = len(col.issues)
            ex = None
            obj = _parse_line(raw, path, line_no, col, limits)
            if obj is not None:
                try:
                    if ragtruth:
                        ex = _guarded(_ragtruth_row, col, path, line_no, obj, sources, path, src_path, line_no, col,
                                      limits)
                    else:
                        ex = _guarded(_generic_row, col, path, line_no, obj, path, line_no, col, limits)
                except _RowError:
                    ex = None
            issues = list(col.issues[before:])
            if bad_sources and any(i.code == "E106" for i in issues):
                first = bad_sources[0]
                note = (f" ({len(bad_sources)} line(s) of {src_path.name} are invalid, the first at line "
                        f"{first.line}: {first.field or 'line'}: {first.message})")
                issues = [i if i.code != "E106" else DataIssue(i.code, i.file, i.line, i.field, i.message + note,
                                                                 i.unit) for i in issues]
            col.issues.clear()
            if with_extra:
                extra = ({k: v for k, v in obj.items() if k not in _GENERIC_FIELDS}
                         if ex is not None and not ragtruth and isinstance(obj, dict) else {})
                yield line_no, ex, issues, _record_id(obj), extra
            elif with_ids:
                yield line_no, ex, issues, _record_id(obj)
            else:
                yield line_no, ex, issues


def _record_id(obj):
    """The ``"id"`` of a parsed line as a string (a string or an integer of at most 200 characters), else None."""
    if not isinstance(obj, dict):
        return None
    value = obj.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value) if not isinstance(value, int) or abs(value) < 10 ** 200 else None
    return text if text is not None and len(text) <= 200 else None


def load_ragtruth(path, *, strict: bool = False, splits=None, warn: bool = True,
                  limits: Limits | None = None) -> LoadResult:
    """Load RAGTruth in its original schema.

    Parameters
    ----------
    path : str or Path
        The folder holding ``response.jsonl`` and ``source_info.jsonl`` (or
        the path of ``response.jsonl`` itself).
    strict : bool, default=False
        Raise :class:`~evqual.errors.EvqualDataError` at the first bad row
        instead of reporting bad rows and keeping the good ones.
    splits : iterable of str, optional
        Keep only these splits (``"train"``, ``"test"``).
    warn : bool, default=True
        Emit an :class:`EvqualDataWarning` summarising bad rows.
    limits : Limits, optional
        Size caps per row (default :data:`~evqual.data.DEFAULT_LIMITS`).

    Returns
    -------
    LoadResult

    Notes
    -----
    The query is the question for QA and a fixed instruction for Summary and
    Data2txt (:data:`evqual.data.TASK_QUERIES`).  Contexts are chunked per
    task (:func:`evqual.data.chunk_context`).  ``temperature`` and
    ``quality`` stay ``None`` when missing; they are never imputed.

    Examples
    --------
    >>> from evqual.data import load_ragtruth, sample_path
    >>> data = load_ragtruth(sample_path())
    >>> sorted({ex.task_type for ex in data})
    ['Data2txt', 'QA', 'Summary']
    """
    path = Path(path)
    resp_path, src_path = _ragtruth_files(path)
    col = _Collector(strict)
    for p in (resp_path, src_path):
        if not p.is_file():
            col.add("E109", p, None, None, "file not found (a RAGTruth folder holds response.jsonl "
                                         "and source_info.jsonl)")
            raise EvqualDataError(col.issues, n_ok=0)
    keep_splits = set(splits) if splits is not None else None
    limits = DEFAULT_LIMITS if limits is None else limits

    sources = _ragtruth_sources(src_path, col, limits)

    examples: list[Example] = []
    seen_ids: dict[str, int] = {}
    for line, obj in _iter_jsonl(resp_path, col, limits):
        try:
            ex = _guarded(_ragtruth_row, col, resp_path, line, obj, sources, resp_path, src_path, line, col, limits)
        except _RowError:
            continue
        if ex.id in seen_ids:
            col.add("E108", resp_path, line, "id", f"id {ex.id!r} already used on line {seen_ids[ex.id]}")
            continue
        seen_ids[ex.id] = line
        if keep_splits is not None and ex.split not in keep_splits:
            continue
        examples.append(ex)
    return _finish(LoadResult(examples, col.issues, "ragtruth", [str(resp_path), str(src_path)]), warn)


# --------------------------------------------------------------------- generic JSONL

def load_jsonl(path, *, strict: bool = False, warn: bool = True, limits: Limits | None = None) -> LoadResult:
    """Load a generic JSONL of RAG logs (see the module docstring for fields).

    ``query``, ``context`` and ``output`` are required; ``query`` may be
    ``null`` for Summary/Data2txt-style tasks, where a fixed instruction is
    used.  ``label`` is 0/1 (or false/true); ``spans`` are ``{start, end}``
    objects with optional ``text`` (checked) and ``label_type``.  A row
    without ``id`` gets ``"<file stem>:<line>"``.

    Examples
    --------
    >>> import json, tempfile, os
    >>> row = {"query": "Where is Paris?", "context": ["Paris is in France."],
    ...        "output": "Paris is in Spain.", "spans": [{"start": 12, "end": 17}]}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps(row) + "\\n")
    >>> data = load_jsonl(f.name)
    >>> data[0].label, data[0].spans[0].start
    (1, 12)
    >>> os.unlink(f.name)
    """
    path = Path(path)
    col = _Collector(strict)
    limits = DEFAULT_LIMITS if limits is None else limits
    if not path.is_file():
        col.add("E109", path, None, None, "file not found")
        raise EvqualDataError(col.issues, n_ok=0)
    examples: list[Example] = []
    seen: dict[str, int] = {}
    for line, obj in _iter_jsonl(path, col, limits):
        try:
            ex = _guarded(_generic_row, col, path, line, obj, path, line, col, limits)
        except _RowError:
            continue
        if ex.id in seen:
            col.add("E108", path, line, "id", f"id {ex.id!r} already used on line {seen[ex.id]}")
            continue
        seen[ex.id] = line
        examples.append(ex)
    return _finish(LoadResult(examples, col.issues, "jsonl", [str(path)]), warn)


_GENERIC_FIELDS = ("id", "query", "context", "output", "label", "spans", "task_type", "model", "split",
                   "source_id", "temperature", "quality")
_GROUP_FIELDS = ("pair", "dataset")
"""Fields a generic row may hold that evqual reads and still passes through to ``evqual score``'s output:
``pair`` (answers to the same item; the grouping key when ``source_id`` is absent) and ``dataset``."""


def _readable_name(value, key: str) -> str | None:
    """A ``pair`` or ``dataset`` value as text (a string or an integer of at most 200 characters that any
    strict JSON output holds), else None: these are pass-through fields too, so a value of another kind
    is left alone, never a row error."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value) if isinstance(value, str) or abs(value) < 10 ** 200 else ""
    if not text or len(text) > 200 or check_value(text, key) is not None:
        return None
    return text


def _label(value, col: _Collector, path, line) -> int | None:
    """The 0/1 label of a row: true/false, or a number equal to 0 or 1 (the same rule for every layout)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in _LABEL_WORDS:
        return _LABEL_WORDS[value.strip().lower()]
    col.add("E103", path, line, "label", f"must be 0 or 1 (or false/true); got {_describe(value)}")
    raise _RowError


_LABEL_WORDS = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}


def _generic_row(obj: dict, path: Path, line: int, col: _Collector, limits: Limits = DEFAULT_LIMITS, *,
                 spans_field: str = "spans", where: str = "", label_strings: bool = False) -> Example:
    """One generic row to an Example; ``where`` is the row's name in ids and origins ("row 3").

    ``label_strings`` accepts "0"/"1"/"true"/"false" labels (table cells are text)."""
    where = where or f"{line}"
    _check_fields(obj, _GENERIC_FIELDS, col, path, line, names={"spans": spans_field})
    missing = [key for key in ("context", "output") if key not in obj]
    if missing:  # every missing required field named, not only the first
        for key in missing:
            col.add("E102", path, line, key, "required field is missing")
        raise _RowError
    task = _get(obj, "task_type", (str,), col, path, line, required=False, nullable=True)
    # optional, as in the Python API (make_example): a missing or null query is derived from the task type
    query = _get(obj, "query", (str,), col, path, line, required=False, nullable=True)
    context = _get(obj, "context", (str, list, dict), col, path, line)
    if isinstance(context, list):
        for k, item in enumerate(context):
            if not isinstance(item, str):
                col.add("E103", path, line, f"context[{k}]", f"must be a string; got {_describe(item)}")
                raise _RowError
    output = _get(obj, "output", (str,), col, path, line)
    rid = _get(obj, "id", (str, int), col, path, line, required=False, nullable=True)
    raw_label = obj.get("label")
    if isinstance(raw_label, str) and not label_strings:
        col.add("E103", path, line, "label", f"must be 0 or 1 (or false/true); got {_describe(raw_label)}")
        raise _RowError
    label = _label(raw_label, col, path, line)
    _check_sizes(col, path, line, limits, output=output, context="", query=query)
    raw_spans = _get(obj, "spans", (list,), col, path, line, required=False, nullable=True)
    spans = (_parse_spans(raw_spans, output, col, path, line, prefix=spans_field)
             if raw_spans is not None else None)
    if spans is not None and label is not None and label == 0 and spans:
        col.add("E103", path, line, "label", f"label is 0 but {len(spans)} spans are given")
        raise _RowError
    model = _get(obj, "model", (str,), col, path, line, required=False, nullable=True)
    split = _get(obj, "split", (str,), col, path, line, required=False, nullable=True)
    sid = _get(obj, "source_id", (str, int), col, path, line, required=False, nullable=True)
    # pass-through fields evqual also reads: a value of another type is left alone, never a row error
    pair, dataset = (_readable_name(obj.get(key), key) for key in _GROUP_FIELDS)
    if sid is None and pair is not None:
        sid = pair  # answers to the same item share a group: no split puts one on each side
    temp = _get(obj, "temperature", (float,), col, path, line, required=False, nullable=True)
    quality = _get(obj, "quality", (str,), col, path, line, required=False, nullable=True)
    text, chunks = _chunk(context, task, col, path, line, "context")
    _check_sizes(col, path, line, limits, output="", context=text, query=None)
    if label is None and spans is not None:
        label = int(bool(spans))
    return Example(
        id=str(rid) if rid is not None else f"{path.stem}:{where}",
        query=query if query is not None else derive_query(task),
        context=text,
        output=output,
        chunks=chunks,
        task_type=task,
        source_id=str(sid) if sid is not None else None,
        split=split,
        model=model,
        temperature=float(temp) if temp is not None else None,
        quality=quality,
        spans=spans,
        label=label,
        dataset=dataset,
        origin=f"{path}:{where}",
    )


# --------------------------------------------------------------------- table layout
_TABLE_TEXT = ("id", "query", "context", "output", "task_type", "model", "split", "source_id", "quality")
_NA_WORDS = frozenset({"", "nan", "NaN", "NA", "N/A", "n/a", "null", "None", "<NA>"})


def _cell(value):
    """Pandas cell to plain Python (NaN/NA to None, numpy scalars to Python)."""
    if value is None:
        return None
    try:
        import pandas as pd

        if not isinstance(value, (list, dict, tuple)) and pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return value


def _table_row(raw: dict, path: Path, row_no: int, col: _Collector, limits: Limits) -> Example:
    """One table row (cells as plain Python values; text cells as strings) to an Example."""
    obj = {k: raw[k] for k in _TABLE_TEXT if k in raw}
    obj = {k: (str(v) if k in ("id", "source_id") and v is not None else v) for k, v in obj.items()}
    temp = raw.get("temperature")
    if isinstance(temp, str):
        if temp.strip() in _NA_WORDS:
            temp = None
        else:
            try:
                temp = float(temp)
            except ValueError:
                col.add("E103", path, row_no, "temperature", f"must be a number; got {_describe(temp)}")
                raise _RowError from None
    if temp is not None:
        obj["temperature"] = temp
    labels = raw.get("hallucination_labels")
    if isinstance(labels, str):
        labels = None if labels.strip() in _NA_WORDS else labels
        if labels is not None:
            try:
                labels = loads_literal(labels)
            except ValueError as exc:
                col.add("E103", path, row_no, "hallucination_labels", f"not a JSON or Python list of spans ({exc})")
                raise _RowError from None
    if labels is not None:
        obj["spans"] = labels
    label = raw.get("label")
    if isinstance(label, str) and label.strip() in _NA_WORDS:
        label = None
    processed = raw.get("hallucination_labels_processed")
    if isinstance(processed, str) and processed.strip() in _NA_WORDS:
        processed = None
    if label is None and processed is not None:
        if isinstance(processed, str):
            try:
                processed = loads_literal(processed)
            except ValueError:
                processed = None
        if not isinstance(processed, dict) or check_value(processed, "") is not None:
            col.add("E103", path, row_no, "hallucination_labels_processed",
                    "must be an object such as {\"evident_conflict\": 0, \"baseless_info\": 1}")
            raise _RowError
        label = int(any(bool(v) for v in processed.values()))
    if label is not None:
        obj["label"] = label
    return _generic_row(obj, path, row_no, col, limits, spans_field="hallucination_labels", where=f"row{row_no}",
                        label_strings=True)


def _decode_lines(data: bytes):
    """Physical lines of a CSV as text (ends kept), and ``{line_no: (column, reason)}`` of undecodable ones."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines, bad = [], {}
    for n, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad[n] = (exc.start + 1, f"byte 0x{raw[exc.start]:02x} is not valid UTF-8")
            lines.append(raw.decode("utf-8", errors="replace"))
    return lines, bad


def _csv_records(path: Path, data: bytes, col: _Collector):
    """Yield ``(row_no, first_line, cells)`` per data record of a CSV, recording the malformed ones.

    Parsed with :mod:`csv` in strict mode, so that an unclosed or stray quote
    is an error of its record (pandas silently merges the following rows into
    it); reading then resumes on the line after the bad record's first line,
    so the rows after it are kept.  A record with more or fewer fields than
    the header, or with an undecodable byte, is reported and left out.
    """
    lines, bad_bytes = _decode_lines(data)
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, min(len(data) + 1, 2**31 - 1)))
    try:
        header = None
        row_no, k = 0, 0
        while k < len(lines):
            reader = csv.reader(iter(lines[k:]), strict=True)
            consumed = 0
            try:
                for rec in reader:
                    first, consumed = k + consumed + 1, reader.line_num
                    last = k + consumed
                    if not rec or (len(rec) == 1 and not rec[0].strip()):
                        continue  # blank line: not a row
                    if header is None:
                        header = [h.strip() for h in rec]
                        if first in bad_bytes:
                            col.add("E109", path, None, None, f"line {first}: header {bad_bytes[first][1]}")
                            raise EvqualDataError(col.issues, n_ok=0)
                        yield 0, first, header
                        continue
                    row_no += 1
                    where = f"line {first}" if last == first else f"lines {first}-{last}"
                    undecodable = [n for n in range(first, last + 1) if n in bad_bytes]
                    if undecodable:
                        n = undecodable[0]
                        col.add("E101", path, row_no, None,
                                f"{bad_bytes[n][1]} (line {n}, column {bad_bytes[n][0]}); the row is left out")
                        continue
                    if len(rec) != len(header):
                        col.add("E103", path, row_no, None,
                                f"has {len(rec)} fields where the header has {len(header)} ({where}); "
                                "the row is left out")
                        continue
                    yield row_no, first, {h: (v if v != "" else None) for h, v in zip(header, rec)}
                break
            except csv.Error as exc:
                first = k + consumed + 1
                if header is None:
                    col.add("E109", path, None, None, f"line {first}: the header is not valid CSV ({exc})")
                    raise EvqualDataError(col.issues, n_ok=0) from None
                row_no += 1
                col.add("E103", path, row_no, None,
                        f"malformed CSV from line {first}: {exc} (an unclosed or stray quote?); the row is "
                        f"left out and reading resumes on line {first + 1}")
                k = first  # 0-based index of the line after the bad record's first line
        if header is None:
            col.add("E107", path, None, None, "the file is empty: a table needs a header line naming its columns")
            raise EvqualDataError(col.issues, n_ok=0)
    finally:
        csv.field_size_limit(old_limit)


def load_table(path, *, strict: bool = False, warn: bool = True, limits: Limits | None = None) -> LoadResult:
    """Load the RAGTruth-processed table layout from CSV or parquet.

    Required columns: ``query, context, output``.  Spans come from
    ``hallucination_labels`` (a list, or a JSON/Python-literal string of a
    list, of ``{start, end, text?, label_type? | label?}``); without spans
    the response label comes from ``label`` (0 or 1, true or false; anything
    else is an error, as in every layout) or from
    ``hallucination_labels_processed`` (any non-zero value = hallucinated).
    Issues name the *data row* (1-based, header excluded) in ``line``; for
    CSV the message also names the file line.

    CSV is read with :mod:`csv` in strict mode: a row with an unclosed or stray
    quote, with more or fewer fields than the header, or with a byte that is
    not UTF-8 is reported and left out, and every other row is kept.  Empty
    cells are missing values; text cells are taken as written (``"NA"`` is
    text, not a missing value).

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> df = pd.DataFrame({"query": ["q"], "context": ["Paris is in France."],
    ...                    "output": ["Paris is in Spain."], "task_type": ["QA"],
    ...                    "hallucination_labels": ['[{"start": 12, "end": 17}]']})
    >>> with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as f:
    ...     df.to_csv(f.name, index=False)
    >>> load_table(f.name)[0].label
    1
    >>> os.unlink(f.name)
    """
    path = Path(path)
    col = _Collector(strict, unit="row")
    limits = DEFAULT_LIMITS if limits is None else limits
    if not path.is_file():
        col.add("E109", path, None, None, "file not found")
        raise EvqualDataError(col.issues, n_ok=0)
    if path.suffix.lower() == ".parquet":
        rows = _parquet_rows(path, col)
    else:
        try:
            data = path.read_bytes()
        except OSError as exc:
            col.add("E109", path, None, None, f"cannot read table: {exc.strerror or exc}")
            raise EvqualDataError(col.issues, n_ok=0) from None
        rows = _csv_records(path, data, col)
    examples: list[Example] = []
    seen: dict[str, int] = {}
    for row_no, first, raw in rows:
        if row_no == 0:  # the header
            missing = [c for c in ("context", "output") if c not in raw]  # query is optional, as in JSONL
            if missing:
                col.add("E107", path, None, ", ".join(missing), "required column(s) missing from the table")
                raise EvqualDataError(col.issues, n_ok=0)
            continue
        before = len(col.issues)
        try:
            ex = _guarded(_table_row, col, path, row_no, raw, path, row_no, col, limits)
        except _RowError:
            if first is not None:
                col.issues[before:] = [DataIssue(i.code, i.file, i.line, i.field, f"{i.message} (line {first})",
                                                 i.unit) for i in col.issues[before:]]
            continue
        if ex.id in seen:
            col.add("E108", path, row_no, "id", f"id {ex.id!r} already used on row {seen[ex.id]}")
            continue
        seen[ex.id] = row_no
        examples.append(ex)
    return _finish(LoadResult(examples, col.issues, "table", [str(path)]), warn)


def _parquet_rows(path: Path, col: _Collector):
    """Yield ``(row_no, None, cells)`` per row of a parquet file."""
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except ImportError as exc:
        from ..errors import MissingDependencyError

        raise MissingDependencyError("reading parquet", "parquet", "pyarrow") from exc
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own error types for broken files
        col.add("E109", path, None, None, f"cannot read table: {type(exc).__name__}: {str(exc)[:200]}")
        raise EvqualDataError(col.issues, n_ok=0) from None
    columns = [str(c) for c in df.columns]
    yield 0, None, columns
    for row_no, values in enumerate(df.itertuples(index=False, name=None), start=1):
        yield row_no, None, {c: _cell(v) for c, v in zip(columns, values)}


# --------------------------------------------------------------------- dispatch
def detect_layout(path) -> str:
    """Which loader reads ``path``: ``"ragtruth"``, ``"table"`` or ``"jsonl"``.

    Raises
    ------
    EvqualDataError
        (E107/E109) when the path is missing or of no known layout.
    """
    p = Path(path)
    if p.is_dir():
        if (p / "response.jsonl").is_file() and (p / "source_info.jsonl").is_file():
            return "ragtruth"
        raise EvqualDataError([DataIssue("E107", str(p), None, None,
                                         "folder has no response.jsonl + source_info.jsonl (RAGTruth layout)")])
    if not p.exists():
        raise EvqualDataError([DataIssue("E109", str(p), None, None, "no such file or folder")])
    suffix = p.suffix.lower()
    if suffix in (".csv", ".parquet"):
        return "table"
    if suffix in (".jsonl", ".json", ".ndjson"):
        if p.name == "response.jsonl" and p.with_name("source_info.jsonl").is_file():
            return "ragtruth"
        return "jsonl"
    raise EvqualDataError([DataIssue("E107", str(p), None, None,
                                     f"unknown file type {suffix!r}: expected a RAGTruth folder, "
                                     ".jsonl, .csv or .parquet")])


def load_data(path, *, strict: bool = False, warn: bool = True, limits: Limits | None = None,
              **kwargs) -> LoadResult:
    """Load any supported layout, detected from the path (see :func:`detect_layout`).

    ``limits`` caps the size of each row (default
    :data:`~evqual.data.DEFAULT_LIMITS`). Extra keyword arguments go to the
    layout's loader (``splits`` for RAGTruth).

    Examples
    --------
    >>> from evqual.data import load_data, sample_path
    >>> result = load_data(sample_path())
    >>> result.layout, len(result) > 0, result.issues
    ('ragtruth', True, [])
    """
    layout = detect_layout(path)
    if layout == "ragtruth":
        return load_ragtruth(path, strict=strict, warn=warn, limits=limits, **kwargs)
    if kwargs:
        raise TypeError(f"unexpected arguments for the {layout} layout: {sorted(kwargs)}")
    if layout == "table":
        return load_table(path, strict=strict, warn=warn, limits=limits)
    return load_jsonl(path, strict=strict, warn=warn, limits=limits)


def default_ragtruth_path() -> Path:
    """``$EVQUAL_RAGTRUTH`` or ``../shared/data/ragtruth`` relative to the working directory."""
    return Path(os.environ.get("EVQUAL_RAGTRUTH", os.path.join("..", "shared", "data", "ragtruth")))
