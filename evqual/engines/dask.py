"""Scoring a Dask DataFrame: :func:`score_dask` (``map_partitions`` with a fixed ``meta``)."""

from __future__ import annotations

from ..errors import MissingDependencyError
from ..scoring import empty_result_frame, score_frame

__all__ = ["score_dask"]


def _require_dask():
    try:
        import dask.dataframe as dd  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("evqual.engines.dask", "dask", "dask[dataframe]") from exc
    return dd


def score_dask(ddf, model=None, policy=None, *, batch_size: int = 64, limits=None):
    """Score every row of a Dask DataFrame, partition by partition, lazily.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One answer per row, with the columns :func:`evqual.scoring.score_frame`
        reads (``context``, ``output``; ``query``, ``task_type``,
        ``metadata``, ``id``).  Without an ``id`` column a row's id is its
        index label.
    model : None, str, Path or Detector, optional
        ``None``: the shipped model; a folder: that saved model (it must be
        readable at the same path on every worker).  Either is loaded once per
        worker process.  A Detector is sent with the task graph.
    policy : None, Policy, str or Path, optional
        Decision policy (or the path of its TOML; read on the workers).
    batch_size : int, default=64
    limits : evqual.data.Limits, optional

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy; its partitions are the output of :func:`~evqual.scoring.score_frame`
        (columns and dtypes of :data:`evqual.scoring.FRAME_SCHEMA`, the input's
        index and divisions).  ``.compute()`` it, or write it
        (``to_parquet``).

    Raises
    ------
    evqual.errors.MissingDependencyError
        Without ``dask[dataframe]`` (``pip install "evqual[dask]"``).

    Notes
    -----
    Untrusted text needs one Dask setting.  Dask converts the object columns
    of a DataFrame built from pandas to Arrow strings (``dataframe.convert-string``,
    on by default), and that conversion fails the *whole job* on a row holding
    an unpaired surrogate or an integer of more than 4,300 digits, before
    evqual sees any row.  Build such DataFrames with
    ``dask.config.set({"dataframe.convert-string": False})`` (and object
    columns in pandas): every row then reaches evqual, a bad row gets its
    error as in local scoring, and the result equals local scoring
    (``tests/test_engines.py``).  Parquet input cannot hold such values.
    """
    dd = _require_dask()
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"ddf must be a dask DataFrame; got {type(ddf).__name__}")
    missing = [c for c in ("context", "output") if c not in ddf.columns]
    if missing:
        raise ValueError(f"ddf has no column {missing[0]!r}; score_dask needs 'context' and 'output'")
    meta = empty_result_frame(ddf._meta.index)
    return ddf.map_partitions(score_frame, model=model, policy=policy, batch_size=batch_size, limits=limits,
                              meta=meta, align_dataframes=False)
