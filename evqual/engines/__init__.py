"""Adapters that score answers on distributed engines: Apache Spark and Dask (optional extras).

Each adapter maps :func:`evqual.scoring.score_frame` over the partitions of
the engine's DataFrame, so every partition is scored by the same code as a
local pandas frame, and the model (given by path, or ``None`` for the shipped
one) is loaded once per worker process.  The engines are imported only when
an adapter is called; without them, a :class:`~evqual.errors.MissingDependencyError`
names the extra to install (``pip install "evqual[spark]"``, ``"evqual[dask]"``).

See ``docs/batch.md`` for a Ray Data recipe.

>>> from evqual.engines import score_dask, score_spark
>>> callable(score_dask) and callable(score_spark)
True
"""

from .dask import score_dask
from .spark import score_spark

__all__ = ["score_dask", "score_spark"]
