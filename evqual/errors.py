"""Error codes, exceptions and the data-issue record shared by the whole package.

Every problem evqual reports about *data* carries a stable code (``E1xx``), the
file, the 1-based line (or row) number and the field it concerns, so that a
user can fix the offending row without guessing.  Codes are never re-used.

========  ==============================================================
code      meaning
========  ==============================================================
E101      a line is not valid JSON, or not a JSON object
E102      a required field is missing
E103      a field has the wrong type or an invalid value
E104      a hallucination span lies outside the response text
E105      a span's ``text`` does not match ``response[start:end]``
E106      a response refers to a ``source_id`` absent from source_info
E107      the file or folder layout is not one evqual can read
E108      an id occurs twice in one file
E109      the file cannot be read (missing, permission, encoding)
E110      a valid row could not be scored (an internal error; ``evqual score``)
E111      a row could not be read (an internal error while validating it)
========  ==============================================================

Parameter errors raise plain :class:`ValueError` / :class:`TypeError` with
scikit-learn's wording ("The 'level' parameter of EvidenceFeaturizer must be
...").  A missing optional dependency raises :class:`MissingDependencyError`
with the ``pip install`` line that fixes it.  Training data too small or
one-sided to fit, calibrate and tune a detector raises
:class:`TrainingDataError` (a :class:`ValueError`) with the counts found and
needed; a method that falls back to a response-level variant (labels without
spans) warns with :class:`ResponseLevelFallbackWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DataIssue",
    "DeadlineExceeded",
    "EvqualDataError",
    "MissingDependencyError",
    "ResponseLevelFallbackWarning",
    "TrainingDataError",
    "ERROR_CODES",
]

ERROR_CODES = {
    "E101": "invalid JSON",
    "E102": "missing field",
    "E103": "invalid field value",
    "E104": "span out of range",
    "E105": "span text mismatch",
    "E106": "unknown source_id",
    "E107": "unsupported layout",
    "E108": "duplicate id",
    "E109": "unreadable file",
    "E110": "scoring failed",
    "E111": "row could not be read",
}


@dataclass(frozen=True)
class DataIssue:
    """One problem found in one row of an input file.

    Attributes
    ----------
    code : str
        Stable error code, a key of :data:`ERROR_CODES`.
    file : str
        Path of the file the row came from.
    line : int or None
        1-based line number (JSONL) or data row number (CSV/parquet, header
        excluded); ``None`` when the issue concerns the whole file.
    field : str or None
        The offending field, dotted for nested fields (``labels[2].end``).
    message : str
        What is wrong, in words.
    unit : str
        ``"line"`` for JSONL files, ``"row"`` for tables (data rows counted
        from 1, header excluded).
    """

    code: str
    file: str
    line: int | None
    field: str | None
    message: str
    unit: str = "line"

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", {self.unit} {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return f"[{self.code}] {where}: {self.message}"

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "message": self.message,
            "unit": self.unit,
        }


class EvqualDataError(ValueError):
    """Raised for bad input data; carries every :class:`DataIssue` found.

    In strict mode the loaders raise it at the first bad row; in the default
    mode they collect issues and only raise when nothing usable was loaded.
    """

    def __init__(self, issues, *, n_ok: int | None = None):
        self.issues = list(issues)
        self.n_ok = n_ok
        super().__init__(self._summary())

    def _summary(self, max_shown: int = 5) -> str:
        n = len(self.issues)
        head = f"{n} bad row{'s' if n != 1 else ''}"
        if self.n_ok is not None:
            head += f" ({self.n_ok} good rows kept)"
        shown = "\n".join(f"  {issue}" for issue in self.issues[:max_shown])
        more = f"\n  ... and {n - max_shown} more" if n > max_shown else ""
        return f"{head}:\n{shown}{more}" if n else head


class MissingDependencyError(ImportError):
    """An optional dependency is needed for the requested feature.

    The message names the feature, the package and both install commands: from
    PyPI (``pip install "evqual[extra]"``) and from a clone of the repository
    (``pip install -e ".[extra]"``, run in the clone).

    >>> print(MissingDependencyError("writing parquet", "parquet", "pyarrow"))
    writing parquet needs the optional package 'pyarrow'. Install it with: pip install "evqual[parquet]" (from PyPI), or pip install -e ".[parquet]" (in a clone of the evqual repository)
    """

    def __init__(self, what: str, extra: str, package: str):
        self.extra, self.package = extra, package
        super().__init__(
            f"{what} needs the optional package '{package}'. "
            f'Install it with: pip install "evqual[{extra}]" (from PyPI), '
            f'or pip install -e ".[{extra}]" (in a clone of the evqual repository)'
        )


class TrainingDataError(ValueError):
    """Too little (or one-sided) labelled data to fit, calibrate and tune a detector.

    The message says what was found (rows, hallucinated and grounded answers,
    sources) and what is needed; the counts are attributes too.
    """

    def __init__(self, message: str, *, rows: int, positives: int, sources: int):
        self.rows, self.positives, self.sources = rows, positives, sources
        super().__init__(message)


class ResponseLevelFallbackWarning(UserWarning):
    """A sentence-level method was trained as its response-level variant (labels but no spans)."""


class DeadlineExceeded(BaseException):
    """The time limit of the current thread's work has passed (:mod:`evqual._deadline`; the service's
    ``request_timeout``).

    A ``BaseException``, like ``KeyboardInterrupt``: the handlers that keep one bad answer from ending a run
    (``except Exception``: its line gets an ``E110`` record) must not turn a stopped job into error records.
    """
