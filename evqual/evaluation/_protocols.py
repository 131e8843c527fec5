"""Evaluation protocols.

``cv5`` (the headline protocol on the shared copy)
    Five folds over the *test* split, grouped by ``source_id`` (no source on
    both sides) and stratified by task and label, shuffled with seed 42.  Each
    fold trains on the other four folds plus every row of the other splits
    (RAGTruth's train split) whose source is not in the held-out fold.  Within that training side a grouped validation
    part (:func:`evqual.models.validation_split`, seed 42) is held out for
    calibration and thresholds: 25% of the sources of its *test-split* rows,
    so that thresholds are tuned on the task mix being tested rather than on
    the QA-heavy train split.  The held-out fold is never seen before
    prediction.  Out-of-fold predictions are pooled for metrics.
    Data without a ``test`` split is cross-validated as a whole.

``official``
    Fit on the train split, calibrate and tune on a grouped validation split
    of it (seed 42), test once on the test split (seeds 002 and 004).  On the
    shared copy the train split is almost only QA, so this protocol is
    QA-heavy there; it is meant for users with the full release.
"""

from __future__ import annotations

import numpy as np

from ..models import grouped_folds

__all__ = ["PROTOCOLS", "protocol_splits"]

PROTOCOLS = ("cv5", "official")


def _strata(frame, idx):
    sub = frame.iloc[idx]
    return (sub["task_type"].astype(str) + "|" + sub["label"].astype(str)).to_numpy()


def protocol_splits(frame, protocol: str = "cv5", *, n_splits: int = 5, random_state: int = 42):
    """Yield ``(fold, train_positions, test_positions)`` for a protocol.

    Examples
    --------
    >>> from evqual.data import load_sample
    >>> from evqual.models import FrameBuilder
    >>> frame = FrameBuilder().fit_transform(load_sample())
    >>> folds = list(protocol_splits(frame, "cv5", n_splits=3))
    >>> sorted(np.concatenate([te for _, _, te in folds]).tolist()) == list(range(len(frame)))
    True
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}; got {protocol!r}")
    split = frame["split"].astype(str).to_numpy()
    all_idx = np.arange(len(frame))
    if protocol == "official":
        train = all_idx[split == "train"]
        test = all_idx[split == "test"]
        if len(train) == 0 or len(test) == 0:
            raise ValueError("the official protocol needs rows of both splits 'train' and 'test'")
        yield 0, train, test
        return
    test_rows = all_idx[split == "test"]
    extra = all_idx[split != "test"]
    if len(test_rows) == 0:
        test_rows, extra = all_idx, all_idx[:0]
    groups = frame["source_id"].to_numpy()[test_rows]
    if len(np.unique(groups)) < n_splits:
        raise ValueError(f"cv needs at least {n_splits} sources; got {len(np.unique(groups))}")
    splitter = grouped_folds(n_splits, random_state)
    sources = frame["source_id"].to_numpy()
    for fold, (tr, te) in enumerate(splitter.split(test_rows, _strata(frame, test_rows), groups)):
        # rows of other splits join the training side, unless their source is held out in this fold
        held_out = np.isin(sources[extra], sources[test_rows[te]])
        yield fold, np.concatenate([test_rows[tr], extra[~held_out]]), test_rows[te]
