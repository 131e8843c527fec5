"""Scoring a pandas DataFrame: the picklable batch entry point of the engines.

:func:`score_frame` takes a frame of answers (one row per answer, columns
named like :meth:`evqual.models.Detector.score`'s arguments) and returns a
frame with a fixed schema (:data:`FRAME_SCHEMA`), one row per input row, in
the same order and with the same index.  It is a plain module-level function
of picklable arguments, so Spark (``mapInPandas``), Dask
(``map_partitions``), Ray Data (``map_batches``) or a
``ProcessPoolExecutor`` can ship it to worker processes; a model given by
path (or ``None``: the shipped ``models/default``) is loaded once per process
and reused by every later call.

All model loading and scoring of this module and of
:func:`evqual.scoring.score_file_parallel` goes through :func:`_scorer`.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

__all__ = ["score_frame", "FRAME_SCHEMA", "FRAME_COLUMNS", "SPARK_SCHEMA", "empty_result_frame"]

#: Input columns :func:`score_frame` reads (every other column is ignored).
INPUT_COLUMNS = ("id", "query", "context", "output", "task_type", "metadata", "label")

#: The output schema of :func:`score_frame`: ``(column, pandas dtype, meaning)``.
FRAME_SCHEMA = (
    ("id", "object", "the row's ``id`` as a string (without an ``id`` column: the row's index label)"),
    ("risk", "float64", "calibrated probability that the answer holds a hallucination (NaN on error)"),
    ("flagged", "boolean", "``risk >= threshold`` (null on error)"),
    ("decision", "object", "show, warn, regenerate, abstain or escalate (null on error)"),
    ("threshold", "float64", "the (topic-aware) threshold applied (NaN on error)"),
    ("topics", "object", "list of topic labels"),
    ("reason_codes", "object", "list of the distinct reason codes of the flagged sentences"),
    ("spans", "object", "list of predicted hallucinated spans ``{start, end, text, risk}`` of the output"),
    ("result", "object", "the full :class:`ScoreResult` as JSON (``ScoreResult.from_json`` reads it back)"),
    ("error", "object", "null when scored; else why the row could not be scored"),
)

#: Column names of :data:`FRAME_SCHEMA`, in order.
FRAME_COLUMNS = tuple(name for name, _, _ in FRAME_SCHEMA)

#: The same schema as a Spark DDL string (for ``mapInPandas``).
SPARK_SCHEMA = ("id string, risk double, flagged boolean, decision string, threshold double, "
                "topics array<string>, reason_codes array<string>, "
                "spans array<struct<start:int,end:int,text:string,risk:double>>, result string, error string")

_SPAN_KEYS = ("start", "end", "text", "risk")


# ------------------------------------------------------------------ the one place that loads and scores
_LOCK = threading.Lock()
_DETECTORS: dict = {}  # (resolved model path, sha256) -> Detector, per process
_POLICIES: dict = {}  # (resolved policy path, mtime) -> Policy, per process


def _policy_of(policy):
    """A Policy from ``None`` (kept), a Policy or the path of a policy TOML (read once per process)."""
    if policy is None or not isinstance(policy, (str, os.PathLike)):
        return policy
    from ._policy import load_policy

    path = Path(policy)
    try:
        key = (str(path.resolve()), path.stat().st_mtime_ns)
    except OSError:
        return load_policy(path)  # its error names the file
    with _LOCK:
        if key not in _POLICIES:
            _POLICIES[key] = load_policy(path)
        return _POLICIES[key]


def _scorer(model=None, policy=None, *, sha256: str | None = None):
    """The :class:`Scorer` of ``model`` and ``policy``; a model given by path is loaded once per process.

    ``model`` is ``None`` (the shipped ``models/default``), a model folder,
    a :class:`Scorer`, a fitted :class:`~evqual.models.Detector`, or another
    object with ``score_batch(items, *, batch_size, limits)`` (used as it
    is).  ``policy`` is ``None`` (the scorer's policy), a :class:`Policy` or
    the path of a policy TOML; it replaces the policy of a given Scorer.
    """
    from ..models import Detector
    from ._scorer import Scorer

    policy = _policy_of(policy)
    if isinstance(model, Scorer):
        return model if policy is None else Scorer(model.detector, policy=policy)
    if isinstance(model, Detector):
        return Scorer(model, policy=policy)
    if model is not None and not isinstance(model, (str, os.PathLike)):
        if (hasattr(model, "score_batch") or hasattr(model, "score_examples")) and policy is None:
            return model
        raise TypeError(f"model must be None, a model folder, a Scorer or a Detector; got {type(model).__name__}")
    from ..models import default_model_path, load_detector

    path = Path(model) if model is not None else Path(default_model_path())
    sha = sha256 if sha256 is not None else os.environ.get("EVQUAL_MODEL_SHA256") or None
    key = (str(path.resolve()), sha)
    with _LOCK:  # a threaded worker (Dask, Spark) loads the model once
        det = _DETECTORS.get(key)
        if det is None:
            det = _DETECTORS[key] = load_detector(path, sha256=sha)
    return Scorer(det, policy=policy)


# ------------------------------------------------------------------ frames
def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _plain(value):
    """A cell as score() takes it: arrays and tuples become lists, missing values None."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays (Spark, Arrow lists)
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    try:
        import pandas as pd

        if not isinstance(value, (list, dict)) and pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return value


def _item(row: dict, fallback_id) -> dict:
    item = {}
    for key in ("query", "context", "output", "task_type", "metadata", "label"):
        if key in row:
            value = _plain(row[key])
            if value is not None:
                item[key] = value
    rid = _plain(row.get("id")) if "id" in row else None
    item["id"] = str(rid) if rid is not None else str(fallback_id)
    return item


def empty_result_frame(index=None):
    """An empty frame with the columns and dtypes of :data:`FRAME_SCHEMA` (e.g. Dask's ``meta``).

    Examples
    --------
    >>> from evqual.scoring import FRAME_COLUMNS, empty_result_frame
    >>> list(empty_result_frame().columns) == list(FRAME_COLUMNS)
    True
    >>> str(empty_result_frame().dtypes["flagged"])
    'boolean'
    """
    import pandas as pd

    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype, _ in FRAME_SCHEMA},
                        index=index if index is not None else pd.RangeIndex(0))


def _result_row(res) -> dict:
    d = res.to_dict()
    return {"id": d["id"], "risk": d["risk"], "flagged": d["flagged"], "decision": d["decision"],
            "threshold": d["threshold"], "topics": list(d["topics"]), "reason_codes": list(res.reason_codes),
            "spans": [{k: s[k] for k in _SPAN_KEYS} for s in d["spans"]],
            "result": res.to_json(), "error": None}


def _error_row(rid: str, exc: BaseException) -> dict:
    why = f"{type(exc).__name__}: {exc}"[:500]
    return {"id": rid, "risk": math.nan, "flagged": None, "decision": None, "threshold": math.nan,
            "topics": [], "reason_codes": [], "spans": [], "result": None, "error": why}


def score_frame(df, model=None, policy=None, *, batch_size: int = 64, limits=None):
    """Score every row of a pandas DataFrame; one output row per input row, same order and index.

    Parameters
    ----------
    df : pandas.DataFrame
        One answer per row.  Columns read: ``context`` and ``output``
        (required), ``query``, ``task_type``, ``metadata`` (a dict),
        ``label`` (0/1, carried into the result) and ``id``; any other
        column is ignored (join the output back on the index or on ``id``).  A missing value (None, NaN) counts as absent;
        arrays (as Spark and Arrow give list columns) are read as lists.
        Without an ``id`` column a row's id is its index label.
    model : None, str, Path, Scorer or Detector, optional
        ``None``: the shipped ``models/default``; a folder: that saved model
        (``$EVQUAL_MODEL_SHA256`` pins its hash).  Either is loaded once per
        process and reused by later calls.  A :class:`Scorer` or a fitted
        :class:`~evqual.models.Detector` is used as it is.
    policy : None, Policy, str or Path, optional
        The decision policy (default: the scorer's, else the built-in one),
        or the path of a policy TOML (read once per process).
    batch_size : int, default=64
        Answers featurized together; results do not depend on it.
    limits : evqual.data.Limits, optional
        Size caps per answer (default :data:`evqual.data.DEFAULT_LIMITS`).

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`FRAME_SCHEMA` with their dtypes.  A row that
        cannot be scored (a missing ``output``, a text over its limit) gets
        its ``error`` and no result; it never stops the other rows.

    Examples
    --------
    >>> import pandas as pd
    >>> from evqual.scoring import score_frame
    >>> df = pd.DataFrame({"id": ["a", "b"], "query": ["When did the bridge open?"] * 2,
    ...                    "context": ["The bridge opened in 1932."] * 2,
    ...                    "output": ["The bridge opened in 1932.", None]})
    >>> out = score_frame(df)
    >>> list(out.columns)
    ['id', 'risk', 'flagged', 'decision', 'threshold', 'topics', 'reason_codes', 'spans', 'result', 'error']
    >>> out.loc[0, "decision"], out.loc[1, "error"]
    ('show', "ValueError: missing required field 'output'")
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    scorer = _scorer(model, policy)
    cols = [c for c in INPUT_COLUMNS if c in df.columns]
    sub = df[cols]
    items = [_item(dict(zip(cols, values)), label) for label, values in zip(df.index, sub.itertuples(index=False))]
    rows: list = [None] * len(items)
    for lo in range(0, len(items), batch_size):
        chunk = items[lo:lo + batch_size]
        try:
            results = scorer.score_batch(chunk, batch_size=len(chunk), limits=limits)
        except Exception:  # noqa: BLE001 - find the row that fails, keep the others
            results = []
            for it in chunk:
                try:
                    results.append(scorer.score_batch([it], batch_size=1, limits=limits)[0])
                except Exception as exc:  # noqa: BLE001
                    results.append(exc)
        for k, (it, res) in enumerate(zip(chunk, results)):
            rows[lo + k] = _error_row(it["id"], res) if isinstance(res, BaseException) else _result_row(res)
    if not rows:
        return empty_result_frame(df.index)
    data = {name: pd.Series([r[name] for r in rows], dtype=dtype, index=df.index) for name, dtype, _ in FRAME_SCHEMA}
    return pd.DataFrame(data, index=df.index)
