"""Conversion of examples to a :class:`pandas.DataFrame` and back."""

from __future__ import annotations

from ._records import Example
from ._targets import response_label

__all__ = ["to_frame", "FRAME_COLUMNS"]

FRAME_COLUMNS = ["id", "source_id", "split", "task_type", "model", "temperature", "quality",
                 "query", "context", "output", "label", "n_spans", "label_types", "chunks", "spans"]


def to_frame(examples, *, exclude_implicit_true: bool = False):
    """One row per example with the columns of :data:`FRAME_COLUMNS`.

    ``chunks`` holds ``(id, start, end)`` tuples and ``spans`` holds
    ``(start, end, label_type)`` tuples, so that
    :class:`~evqual.features.EvidenceFeaturizer` gives the same features on
    the frame as on the examples.

    Examples
    --------
    >>> from evqual.data import load_ragtruth, sample_path, to_frame
    >>> df = to_frame(load_ragtruth(sample_path()))
    >>> list(df.columns[:4])
    ['id', 'source_id', 'split', 'task_type']
    """
    import pandas as pd

    rows = []
    for ex in examples:
        if not isinstance(ex, Example):
            raise TypeError(f"to_frame expects Example objects; got {type(ex).__name__}.")
        spans = ex.spans or ()
        rows.append({
            "id": ex.id,
            "source_id": ex.source_id,
            "split": ex.split,
            "task_type": ex.task_type,
            "model": ex.model,
            "temperature": ex.temperature,
            "quality": ex.quality,
            "query": ex.query,
            "context": ex.context,
            "output": ex.output,
            "label": response_label(ex, exclude_implicit_true=exclude_implicit_true),
            "n_spans": None if ex.spans is None else len(ex.spans),
            "label_types": "|".join(sorted({s.label_type for s in spans if s.label_type})),
            "chunks": [(c.id, c.start, c.end) for c in ex.chunks],
            "spans": None if ex.spans is None else [(s.start, s.end, s.label_type) for s in spans],
        })
    df = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    df["label"] = df["label"].astype("Int64")
    df["n_spans"] = df["n_spans"].astype("Int64")
    return df
