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

        {"id"?, "query", "context": str | [str, ...] | {record}, "output",
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

import ast
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataIssue, EvqualDataError
from ._chunking import chunk_context, derive_query
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


def _parse_line(raw: bytes, path: Path, line_no: int, col: _Collector):
    """The JSON object of one line, or ``None`` after recording why it is not one (E101)."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        col.add("E101", path, line_no, None, f"line is not valid UTF-8 ({exc.reason})")
        return None
    except json.JSONDecodeError as exc:
        col.add("E101", path, line_no, None, f"invalid JSON: {exc.msg} at column {exc.colno}")
        return None
    if not isinstance(obj, dict):
        col.add("E101", path, line_no, None, f"expected a JSON object, got {type(obj).__name__}")
        return None
    return obj


def _iter_jsonl(path: Path, col: _Collector):
    """Yield ``(line_no, obj)`` for every parseable JSON-object line."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        col.add("E109", path, None, None, f"cannot open file: {exc.strerror or exc}")
        return
    with fh:
        for line_no, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            obj = _parse_line(raw, path, line_no, col)
            if obj is not None:
                yield line_no, obj


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
    text = repr(value)
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


def _ragtruth_sources(src_path: Path, col: _Collector) -> dict[str, tuple]:
    """``source_id`` -> (task, query, (context, chunks), line) of a ``source_info.jsonl``."""
    sources: dict[str, tuple] = {}
    for line, obj in _iter_jsonl(src_path, col):
        try:
            sid = _get(obj, "source_id", (str, int), col, src_path, line)
            task = _get(obj, "task_type", (str,), col, src_path, line)
            if task not in RAGTRUTH_TASKS:
                col.add("E103", src_path, line, "task_type", f"must be one of {RAGTRUTH_TASKS}; got {task!r}")
                continue
            info = _get(obj, "source_info", (str, dict), col, src_path, line)
            question = None
            if task == "QA":
                if not isinstance(info, dict):
                    col.add("E103", src_path, line, "source_info",
                            "must be an object {question, passages} for QA")
                    continue
                question = _get(info, "question", (str,), col, src_path, line, prefix="source_info.")
                passages = _get(info, "passages", (str, list), col, src_path, line, prefix="source_info.")
                context_in = passages
            elif task == "Summary":
                if not isinstance(info, str):
                    col.add("E103", src_path, line, "source_info", "must be the article text (a string) for Summary")
                    continue
                context_in = info
            else:
                context_in = info
        except _RowError:
            continue
        sid = str(sid)
        if sid in sources:
            col.add("E108", src_path, line, "source_id", f"source_id {sid!r} already defined on line "
                                                        f"{sources[sid][3]}")
            continue
        context, chunks = chunk_context(context_in, task)
        sources[sid] = (task, derive_query(task, question), (context, chunks), line)

    return sources


def _ragtruth_row(obj, sources, resp_path: Path, src_path: Path, line: int, col: _Collector) -> Example:
    """One ``response.jsonl`` row to an Example (raises _RowError after recording the problem)."""
    rid = _get(obj, "id", (str, int), col, resp_path, line)
    sid = _get(obj, "source_id", (str, int), col, resp_path, line)
    output = _get(obj, "response", (str,), col, resp_path, line)
    split = _get(obj, "split", (str,), col, resp_path, line, required=False, nullable=True)
    model = _get(obj, "model", (str,), col, resp_path, line, required=False, nullable=True)
    temp = _get(obj, "temperature", (float,), col, resp_path, line, required=False, nullable=True)
    quality = _get(obj, "quality", (str,), col, resp_path, line, required=False, nullable=True)
    labels = _get(obj, "labels", (list,), col, resp_path, line)
    spans = _parse_spans(labels, output, col, resp_path, line)
    rid, sid = str(rid), str(sid)
    if sid not in sources:
        col.add("E106", resp_path, line, "source_id", f"source_id {sid!r} is not in {src_path.name}")
        raise _RowError
    task, query, (context, chunks), _ = sources[sid]
    return Example(id=rid, query=query, context=context, output=output, chunks=chunks, task_type=task,
                   source_id=sid, split=split, model=model, temperature=float(temp) if temp is not None else None,
                   quality=quality, spans=spans, label=int(bool(spans)), origin=f"{resp_path}:{line}")


def iter_records(path):
    """Stream a generic JSONL or a RAGTruth ``response.jsonl``, one item per line.

    Yields ``(line_no, example, issues)`` for *every* line, blank ones
    included: ``example`` is ``None`` when the line is bad (or blank), and
    ``issues`` then lists its :class:`~evqual.errors.DataIssue` (file, line,
    field, reason).  Nothing is skipped silently, so a caller can write
    exactly one output per input line.  A RAGTruth file is recognised
    by a ``source_info.jsonl`` beside it (read first, whole).

    Examples
    --------
    >>> import json, tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps({"context": "a", "output": "b", "query": "q"}) + "\\n{bad\\n")
    >>> [(n, ex is not None, [i.code for i in issues]) for n, ex, issues in iter_records(f.name)]
    [(1, True, []), (2, False, ['E101'])]
    >>> os.unlink(f.name)
    """
    path = Path(path)
    if path.is_dir():
        path = path / "response.jsonl"
    col = _Collector(strict=False)
    src_path = path.with_name("source_info.jsonl")
    ragtruth = src_path.is_file() and path.name != src_path.name
    sources = _ragtruth_sources(src_path, col) if ragtruth else None
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
    with fh:
        for line_no, raw in enumerate(fh, start=1):
            before = len(col.issues)
            ex = None
            if not raw.strip():
                col.add("E101", path, line_no, None, "blank line (no JSON object)")
                yield line_no, None, list(col.issues[before:])
                continue
            obj = _parse_line(raw, path, line_no, col)
            if obj is not None:
                try:
                    ex = (_ragtruth_row(obj, sources, path, src_path, line_no, col) if ragtruth
                          else _generic_row(obj, path, line_no, col))
                except _RowError:
                    ex = None
            issues = list(col.issues[before:])
            if bad_sources and any(i.code == "E106" for i in issues):
                first = bad_sources[0]
                note = (f" ({len(bad_sources)} line(s) of {src_path.name} are invalid, the first at line "
                        f"{first.line}: {first.field or 'line'}: {first.message})")
                issues = [i if i.code != "E106" else DataIssue(i.code, i.file, i.line, i.field, i.message + note,
                                                                 i.unit) for i in issues]
            yield line_no, ex, issues


def load_ragtruth(path, *, strict: bool = False, splits=None, warn: bool = True) -> LoadResult:
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

    sources = _ragtruth_sources(src_path, col)

    examples: list[Example] = []
    seen_ids: dict[str, int] = {}
    for line, obj in _iter_jsonl(resp_path, col):
        try:
            ex = _ragtruth_row(obj, sources, resp_path, src_path, line, col)
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
_JSONL_KNOWN = {"id", "query", "context", "output", "label", "spans", "task_type", "model", "split",
                "source_id", "temperature", "quality"}


def load_jsonl(path, *, strict: bool = False, warn: bool = True) -> LoadResult:
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
    if not path.is_file():
        col.add("E109", path, None, None, "file not found")
        raise EvqualDataError(col.issues, n_ok=0)
    examples: list[Example] = []
    seen: dict[str, int] = {}
    for line, obj in _iter_jsonl(path, col):
        try:
            ex = _generic_row(obj, path, line, col)
        except _RowError:
            continue
        if ex.id in seen:
            col.add("E108", path, line, "id", f"id {ex.id!r} already used on line {seen[ex.id]}")
            continue
        seen[ex.id] = line
        examples.append(ex)
    return _finish(LoadResult(examples, col.issues, "jsonl", [str(path)]), warn)


def _generic_row(obj: dict, path: Path, line: int, col: _Collector, *, spans_field: str = "spans",
                 where: str = "") -> Example:
    """One generic row to an Example; ``where`` is the row's name in ids and origins ("row 3")."""
    where = where or f"{line}"
    task = _get(obj, "task_type", (str,), col, path, line, required=False, nullable=True)
    query = _get(obj, "query", (str,), col, path, line, nullable=True)
    context = _get(obj, "context", (str, list, dict), col, path, line)
    if isinstance(context, list):
        for k, item in enumerate(context):
            if not isinstance(item, str):
                col.add("E103", path, line, f"context[{k}]", f"must be a string; got {_describe(item)}")
                raise _RowError
    output = _get(obj, "output", (str,), col, path, line)
    rid = _get(obj, "id", (str, int), col, path, line, required=False, nullable=True)
    label = _get(obj, "label", (int, bool), col, path, line, required=False, nullable=True)
    if label is not None and int(label) not in (0, 1):
        col.add("E103", path, line, "label", f"must be 0 or 1; got {label!r}")
        raise _RowError
    raw_spans = _get(obj, "spans", (list,), col, path, line, required=False, nullable=True)
    spans = (_parse_spans(raw_spans, output, col, path, line, prefix=spans_field)
             if raw_spans is not None else None)
    if spans is not None and label is not None and int(label) == 0 and spans:
        col.add("E103", path, line, "label", f"label is 0 but {len(spans)} spans are given")
        raise _RowError
    model = _get(obj, "model", (str,), col, path, line, required=False, nullable=True)
    split = _get(obj, "split", (str,), col, path, line, required=False, nullable=True)
    sid = _get(obj, "source_id", (str, int), col, path, line, required=False, nullable=True)
    temp = _get(obj, "temperature", (float,), col, path, line, required=False, nullable=True)
    quality = _get(obj, "quality", (str,), col, path, line, required=False, nullable=True)
    text, chunks = chunk_context(context, task)
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
        label=int(label) if label is not None else None,
        origin=f"{path}:{where}",
    )


# --------------------------------------------------------------------- table layout
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


def _parse_literal(value):
    """A JSON (or Python-literal) string to an object; other values unchanged."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return json.loads(value)
    except ValueError:
        return ast.literal_eval(value)


def load_table(path, *, strict: bool = False, warn: bool = True) -> LoadResult:
    """Load the RAGTruth-processed table layout from CSV or parquet.

    Required columns: ``query, context, output``.  Spans come from
    ``hallucination_labels`` (a list, or a JSON/Python-literal string of a
    list, of ``{start, end, text?, label_type? | label?}``); without spans
    the response label comes from ``label`` or from
    ``hallucination_labels_processed`` (any non-zero value = hallucinated).
    Issues name the *data row* (1-based, header excluded) in ``line``.

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
    import pandas as pd

    path = Path(path)
    col = _Collector(strict, unit="row")
    if not path.is_file():
        col.add("E109", path, None, None, "file not found")
        raise EvqualDataError(col.issues, n_ok=0)
    try:
        if path.suffix.lower() == ".parquet":
            try:
                df = pd.read_parquet(path)
            except ImportError as exc:
                from ..errors import MissingDependencyError

                raise MissingDependencyError("reading parquet", "parquet", "pyarrow") from exc
        else:
            df = pd.read_csv(path, keep_default_na=True, dtype={"id": str, "source_id": str})
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        col.add("E109", path, None, None, f"cannot read table: {exc}")
        raise EvqualDataError(col.issues, n_ok=0) from exc
    missing = [c for c in ("query", "context", "output") if c not in df.columns]
    if missing:
        col.add("E107", path, None, ", ".join(missing), "required column(s) missing from the table")
        raise EvqualDataError(col.issues, n_ok=0)
    examples: list[Example] = []
    seen: dict[str, int] = {}
    columns = list(df.columns)
    for row_no, values in enumerate(df.itertuples(index=False, name=None), start=1):
        raw = {c: _cell(v) for c, v in zip(columns, values)}
        obj = {k: raw.get(k) for k in ("id", "query", "context", "output", "task_type", "model", "split",
                                       "source_id", "quality") if k in raw}
        obj = {k: (str(v) if k in ("id", "source_id") and v is not None else v) for k, v in obj.items()}
        if "temperature" in raw:
            obj["temperature"] = raw["temperature"]
        try:
            labels = raw.get("hallucination_labels")
            if labels is not None:
                try:
                    labels = _parse_literal(labels)
                except (ValueError, SyntaxError):
                    col.add("E103", path, row_no, "hallucination_labels", "not a JSON list of spans")
                    raise _RowError from None
                if labels is not None:
                    obj["spans"] = labels
            label = raw.get("label")
            if label is None and raw.get("hallucination_labels_processed") is not None:
                try:
                    processed = _parse_literal(raw["hallucination_labels_processed"])
                except (ValueError, SyntaxError):
                    processed = None
                if not isinstance(processed, dict):
                    col.add("E103", path, row_no, "hallucination_labels_processed",
                            "must be an object such as {\"evident_conflict\": 0, \"baseless_info\": 1}")
                    raise _RowError
                label = int(any(bool(v) for v in processed.values()))
            if label is not None:
                obj["label"] = int(label) if isinstance(label, (int, float, bool)) else label
            ex = _generic_row(obj, path, row_no, col, spans_field="hallucination_labels", where=f"row{row_no}")
        except _RowError:
            continue
        if ex.id in seen:
            col.add("E108", path, row_no, "id", f"id {ex.id!r} already used on row {seen[ex.id]}")
            continue
        seen[ex.id] = row_no
        examples.append(ex)
    return _finish(LoadResult(examples, col.issues, "table", [str(path)]), warn)


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


def load_data(path, *, strict: bool = False, warn: bool = True, **kwargs) -> LoadResult:
    """Load any supported layout, detected from the path (see :func:`detect_layout`).

    Extra keyword arguments go to the layout's loader (``splits`` for RAGTruth).

    Examples
    --------
    >>> from evqual.data import load_data, sample_path
    >>> result = load_data(sample_path())
    >>> result.layout, len(result) > 0, result.issues
    ('ragtruth', True, [])
    """
    layout = detect_layout(path)
    if layout == "ragtruth":
        return load_ragtruth(path, strict=strict, warn=warn, **kwargs)
    if kwargs:
        raise TypeError(f"unexpected arguments for the {layout} layout: {sorted(kwargs)}")
    if layout == "table":
        return load_table(path, strict=strict, warn=warn)
    return load_jsonl(path, strict=strict, warn=warn)


def default_ragtruth_path() -> Path:
    """``$EVQUAL_RAGTRUTH`` or ``../shared/data/ragtruth`` relative to the working directory."""
    return Path(os.environ.get("EVQUAL_RAGTRUTH", os.path.join("..", "shared", "data", "ragtruth")))
