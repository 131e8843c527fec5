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

``transfer`` (several sources: :func:`evqual.data.load_sources`)
    Judges what a model does on data it never trained on.  *Leave one source
    out*: for each source, a model is trained on every other source's
    training rows and scored on the held-out source's rows of the held-out
    split (``heldout_split``, default ``"test"``; ``"dev"`` while
    developing).  *Leave one task out* inside every source with several
    tasks (RAGTruth: QA, Summary, Data2txt): trained on everything but that
    source's rows of the task, scored on its held-out-split rows of the task.
    A source's training rows are those its spec keeps (``PATH:split=dev``);
    the held-out rows are read whatever the spec keeps.  Calibration and
    thresholds are tuned on a grouped part of the training side's ``test``
    and ``dev`` rows (25% of their sources).  Nothing of a held-out unit is
    seen before prediction.
"""

from __future__ import annotations

import numpy as np

from ..models import grouped_folds

__all__ = ["PROTOCOLS", "protocol_splits", "transfer_units"]

PROTOCOLS = ("cv5", "official", "transfer")


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
    if protocol == "transfer":
        for fold, (_, train, test) in enumerate(transfer_units(frame)):
            yield fold, train, test
        return
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


def transfer_units(frame, *, heldout_split: str = "test", trainable=None) -> list:
    """The held-out units of the ``transfer`` protocol: ``[(name, train_positions, test_positions)]``.

    ``name`` is ``"source:<dataset>"`` (leave one source out) or ``"task:<dataset>/<task>"`` (leave one
    task out inside a source of several tasks).  ``trainable`` (one bool per row, default all) marks
    the rows a source's spec keeps for training.  A unit with no row of ``heldout_split`` is left out.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "task_type": ["QA", "QA", "QA", "Summary"],
    ...                       "split": ["test", "train", "test", "test"], "source_id": list("wxyz")})
    >>> [(n, tr.tolist(), te.tolist()) for n, tr, te in transfer_units(frame)]
    [('source:a', [2, 3], [0]), ('source:b', [0, 1], [2, 3]), ('task:b/QA', [0, 1, 3], [2]), ('task:b/Summary', [0, 1, 2], [3])]
    """
    if "dataset" not in frame.columns:
        raise ValueError("the transfer protocol needs several sources (evqual.data.load_sources)")
    dataset = frame["dataset"].astype(str).to_numpy()
    task = frame["task_type"].astype(str).to_numpy()
    split = frame["split"].astype(str).to_numpy()
    ok = np.ones(len(frame), dtype=bool) if trainable is None else np.asarray(trainable, dtype=bool)
    names = list(dict.fromkeys(dataset.tolist()))
    if len(names) < 2:
        raise ValueError(f"the transfer protocol needs at least 2 sources; got {len(names)} ({', '.join(names)})")
    all_idx = np.arange(len(frame))
    units = []
    for name in names:
        test = all_idx[(dataset == name) & (split == heldout_split)]
        if len(test):
            units.append((f"source:{name}", all_idx[(dataset != name) & ok], test))
    for name in names:
        tasks = list(dict.fromkeys(task[dataset == name].tolist()))
        if len(tasks) < 2:
            continue
        for t in tasks:
            out = (dataset == name) & (task == t)
            test = all_idx[out & (split == heldout_split)]
            if len(test):
                units.append((f"task:{name}/{t}", all_idx[~out & ok], test))
    return units
