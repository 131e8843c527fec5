"""Scoring a Spark DataFrame: :func:`score_spark` (``mapInPandas`` with a fixed schema)."""

from __future__ import annotations

from functools import partial

from ..errors import MissingDependencyError
from ..scoring import SPARK_SCHEMA, score_frame

__all__ = ["score_spark"]

_INPUT = ("id", "query", "context", "output", "task_type", "metadata", "label")


def _require_pyspark():
    try:
        import pyspark.sql  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("evqual.engines.spark", "spark", "pyspark") from exc
    return pyspark.sql


def _score_batches(batches, *, model, policy, batch_size, limits):
    """``mapInPandas`` function: score each Arrow batch (a pandas frame) of a partition."""
    for pdf in batches:
        yield score_frame(pdf.reset_index(drop=True), model, policy, batch_size=batch_size, limits=limits)


def score_spark(sdf, model=None, policy=None, *, batch_size: int = 64, limits=None):
    """Score every row of a Spark DataFrame with ``mapInPandas``, lazily.

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        One answer per row: ``id``, ``context`` (a string or an array of
        strings) and ``output`` are required; ``query``, ``task_type``,
        ``label`` (0/1) and ``metadata`` (a struct of the metadata keys) are
        read when present, every other column is ignored (join the result
        on ``id``).
    model : None, str, Path or Detector, optional
        ``None``: the shipped model; a folder: that saved model (readable at
        the same path on every executor).  Either is loaded once per Python
        worker process (Spark reuses its Python workers by default).  A
        Detector is pickled with the task.
    policy : None, Policy, str or Path, optional
    batch_size : int, default=64
    limits : evqual.data.Limits, optional

    Returns
    -------
    pyspark.sql.DataFrame
        The columns of :data:`evqual.scoring.SPARK_SCHEMA` (the Spark form of
        :data:`evqual.scoring.FRAME_SCHEMA`), one row per input row.

    Raises
    ------
    evqual.errors.MissingDependencyError
        Without pyspark (``pip install "evqual[spark]"``).
    """
    _require_pyspark()
    if not hasattr(sdf, "mapInPandas"):
        raise TypeError(f"sdf must be a Spark DataFrame (pyspark.sql.DataFrame); got {type(sdf).__name__}")
    missing = [c for c in ("id", "context", "output") if c not in sdf.columns]
    if missing:
        raise ValueError(f"sdf has no column {missing[0]!r}; score_spark needs 'id', 'context' and 'output'")
    cols = [c for c in _INPUT if c in sdf.columns]
    fn = partial(_score_batches, model=model, policy=policy, batch_size=batch_size, limits=limits)
    return sdf.select(*cols).mapInPandas(fn, schema=SPARK_SCHEMA)
