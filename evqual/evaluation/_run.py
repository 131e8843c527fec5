"""Run a method under a protocol and collect pooled held-out predictions and metrics."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..models import Detector, FrameBuilder, MethodSpec, crossfit_folds, get_method, validation_split
from ..models import SENT, TOK
from ..models import project_sentences, span_scores
from ._metrics import binary_metrics, grouped_metrics, type_metrics
from ._protocols import protocol_splits, transfer_units

__all__ = ["EvaluationResult", "evaluate", "build_frame", "transfer_summary"]


@dataclass
class EvaluationResult:
    """Pooled held-out predictions, metrics and the fitted per-fold detectors."""

    protocol: str
    method: str
    predictions: object  # DataFrame: one row per held-out response
    sentences: object | None  # DataFrame: one row per held-out sentence (sentence-level methods)
    metrics: dict
    detectors: list = field(default_factory=list)
    folds: list = field(default_factory=list)  # (fold, train positions, test positions)


def build_frame(data, *, entity_backend: str = "regex", exclude_implicit_true: bool = False):
    """Featurize a dataset once; returns ``(frame, builder, seconds)``."""
    from ..features import as_examples

    examples = as_examples(data)
    start = time.perf_counter()
    builder = FrameBuilder(entity_backend=entity_backend, exclude_implicit_true=exclude_implicit_true)
    frame = builder.fit_transform(examples)
    return frame, builder, time.perf_counter() - start


def evaluate(data=None, method: str = "evqual", protocol: str = "cv5", *, frame=None, featurize_seconds=None,
             calibration: str = "sigmoid", threshold_rule: str = "f1", random_state: int = 42,
             n_splits: int = 5, entity_backend: str = "regex", progress=None, augment: str | None = None,
             augment_rate: float = 0.5, builder=None, evidence_floor: bool | str = True,
             compose: str = "bounds", crossfit: int | None = None, heldout_split: str = "test",
             trainable=None, copies=None) -> EvaluationResult:
    """Evaluate ``method`` under ``protocol`` (see :mod:`evqual.evaluation._protocols`).

    Parameters
    ----------
    data : examples or None
        Featurized here unless ``frame`` is given.
    method : str
        A name from :data:`evqual.models.METHODS`.
    protocol : {"cv5", "official", "transfer"}
        ``transfer`` needs several sources (:func:`evqual.data.load_sources`): each source, and each task
        of a source of several tasks, is held out in turn (:func:`transfer_units`); ``metrics["transfer"]``
        holds the metrics of each held-out unit.
    frame : DataFrame, optional
        A detector frame from :func:`build_frame`, shared across methods.
    featurize_seconds : float, optional
        Time it took to build ``frame`` (for the latency report).
    calibration, threshold_rule : see :class:`evqual.models.Detector`
    n_splits : int, default=5
        Folds of ``cv5`` (fewer only for tiny data such as the embedded sample).
    augment : {None, "contrastive.v1"}, default=None
        Contrastive augmentation (:func:`evqual.data.augment_contrastive`) of
        each fold's fitting rows only: the edited twins of rows in the fitting
        part join it; validation (calibration, threshold) and held-out rows are
        never augmented. Needs ``data`` (the examples the frame was built from).
    evidence_floor : bool or {"binding", "fired"}, default=True
        Passed to :class:`~evqual.models.Detector`.
    compose : {"bounds", "none"}, default="bounds"
        Passed to :class:`~evqual.models.Detector`.
    crossfit : int or None, default=None
        Passed to :class:`~evqual.models.Detector`: each fold's calibration and thresholds are cross-fitted
        over the whole of its validation pool (under ``cv5`` the training side's test-split rows) with this many
        inner folds, and its model refitted on the whole training side; the held-out fold is never seen.
    augment_rate : float, default=0.5
    heldout_split : str, default="test"
        ``transfer``: the split of a held-out source that is scored (``"dev"`` while developing).
    trainable : array of bool, optional
        ``transfer``: the rows the sources' specs keep for training (default: every row).
    copies : array of int, optional
        How many times each row is fitted on when it is on a fitting side (a source's ``weight``:
        :func:`evqual.data.group_copies`); held-out and validation rows are never copied.
    builder : FrameBuilder, optional
        The builder that made ``frame`` (from :func:`build_frame`); used to
        featurize the augmented rows (default: one fitted on ``data``).

    Returns
    -------
    EvaluationResult
    """
    import pandas as pd

    spec = method if isinstance(method, MethodSpec) else get_method(method)
    method = spec.name
    if frame is None:
        frame, built, featurize_seconds = build_frame(data, entity_backend=entity_backend)
        builder = builder if builder is not None else built
    frame = frame.reset_index(drop=True)
    augmented = _augmented_rows(data, frame, builder, augment, augment_rate, random_state, entity_backend)
    rows, sent_rows, detectors, folds = [], [], [], []
    span_rows, flagged = [], []  # (task, gold, projection, tagger) per held-out response; flagged sentences
    predict_seconds = 0.0
    n_pred = 0
    if protocol == "transfer":
        units = transfer_units(frame, heldout_split=heldout_split, trainable=trainable)
        unit_names = [name for name, _, _ in units]
        splits = [(k, tr, te) for k, (_, tr, te) in enumerate(units)]
    else:
        unit_names = None
        splits = protocol_splits(frame, protocol, n_splits=n_splits, random_state=random_state)
    for fold, train_idx, test_idx in splits:
        det = Detector(spec, calibration=calibration, threshold_rule=threshold_rule,
                       random_state=random_state, entity_backend=entity_backend, evidence_floor=evidence_floor,
                       compose=compose, crossfit=crossfit)

        def fitting_frame(idx):
            fit_frame = frame.iloc[idx]
            if copies is not None:
                fit_frame = frame.iloc[np.repeat(idx, np.asarray(copies)[idx])].reset_index(drop=True)
            if augmented is not None:
                aug_frame, parents = augmented
                keep = np.flatnonzero(np.isin(parents, frame["id"].to_numpy()[idx]))
                fit_frame = pd.concat([fit_frame, aug_frame.iloc[keep]], ignore_index=True)
            return fit_frame

        if crossfit is not None:
            # the validation pool as _validation draws it: the training side's test-split rows under cv5
            side = frame.iloc[train_idx]
            folds = crossfit_folds(side, crossfit, validation_pool=_POOLS.get(protocol),
                                   random_state=random_state)
            det.fit_crossfit_frames(side, folds, lambda idx, t=train_idx: fitting_frame(t[idx]))
        else:
            fit_idx, val_idx = _validation(frame, train_idx, protocol, random_state)
            det.fit_frames(fitting_frame(fit_idx), frame.iloc[val_idx])
        test = frame.iloc[test_idx]
        start = time.perf_counter()
        risk = det.predict_proba_frame(test)
        sent_risk = det.sentence_proba_frame(test)
        predict_seconds += time.perf_counter() - start
        n_pred += len(test)
        part = test[["id", "source_id", "task_type", "model", "quality", "split", "label", "label_types"]].copy()
        part["fold"] = fold
        part["risk"] = risk
        part["threshold"] = det.threshold_
        part["pred"] = (risk >= det.threshold_).astype(int)
        ood = det.ood_distance_frame(test)
        part["ood"] = (ood > 1.0) if ood is not None else False
        rows.append(part)
        if sent_risk is not None and det.sentence_threshold_ is not None:
            tagged = det.predict_spans_frame(test, sent_risk) if TOK in test.columns else None
            ecs_col = _ecs_column(test)
            for k, ((_, r), block, sr) in enumerate(zip(test.iterrows(), test[SENT], sent_risk)):
                for j in np.flatnonzero(sr >= det.sentence_threshold_):
                    flagged.append((block.nearest[j] >= 0 if block.nearest else False,
                                    float(block.values[j, ecs_col]) if ecs_col is not None else np.nan))
                tok = test[TOK].iloc[k] if TOK in test.columns else None
                if tok is not None and tok.gold is not None:
                    span_rows.append((r["task_type"], tok.gold,
                                      project_sentences(block.offsets, sr, det.sentence_threshold_),
                                      tagged[k] if tagged is not None else None))
                if block.labels is None:
                    continue
                for j, ((s, e), lab, rk) in enumerate(zip(block.offsets, block.labels, sr)):
                    sent_rows.append((r["id"], j, s, e, int(lab), float(rk), det.sentence_threshold_, fold,
                                      r["task_type"], r["model"]))
        detectors.append(det)
        folds.append((fold, train_idx, test_idx))
        if progress is not None:
            progress(fold + 1)
    preds = pd.concat(rows).sort_index()
    sentences = None
    if sent_rows:
        sentences = pd.DataFrame(sent_rows, columns=["id", "sentence", "start", "end", "label", "risk", "threshold",
                                                     "fold", "task_type", "model"])
    metrics = summarize(preds, sentences, protocol=protocol, method=method, spec=spec,
                        featurize_ms=1000.0 * (featurize_seconds or 0.0) / max(1, len(frame)),
                        predict_ms=1000.0 * predict_seconds / max(1, n_pred),
                        calibration=calibration, threshold_rule=threshold_rule)
    # how often the out-of-distribution warning (W004) fires on held-out answers
    metrics["ood_rate"] = float(preds["ood"].mean()) if len(preds) else None
    if unit_names is not None:
        metrics["transfer"] = transfer_summary(preds, unit_names)
        metrics["heldout_split"] = heldout_split
    metrics["crossfit"] = crossfit  # the recipe: None (one validation part) or K cross-fitted folds
    metrics["span"] = span_summary(span_rows)
    fallback = next((d.fallback_ for d in detectors if getattr(d, "fallback_", None)), None)
    if fallback:  # trained as its response-level variant (labels without spans)
        metrics["fallback"] = fallback
    metrics["attribution"] = attribution_summary(flagged)
    # the validation parts of the training sides only (never the held-out folds): for model selection
    val = [d.validation_metrics_ for d in detectors]
    metrics["validation"] = {k: float(np.mean([v[k] for v in val if v.get(k) is not None]))
                             for k in ("f1", "auroc", "auprc", "brier", "sentence_auroc", "span_f1")
                             if any(v.get(k) is not None for v in val)}
    return EvaluationResult(protocol, method, preds, sentences, metrics, detectors, folds)


def _augmented_rows(data, frame, builder, augment, rate, random_state, entity_backend):
    """``(frame of every row's contrastive edit, parent id of each)`` or ``None`` without ``augment``.

    Each edit depends only on its parent row (and the seed), so editing all
    rows once and keeping, per fold, the edits of that fold's fitting rows is
    the same as editing the fitting rows of each fold.
    """
    if augment is None:
        return None
    from ..data import augment_contrastive
    from ..features import as_examples

    if data is None:
        raise ValueError("augment needs data: the examples the frame was built from")
    examples = as_examples(data)
    ids = frame["id"].astype(str).to_numpy()
    if len(examples) != len(ids) or any(str(ex.id) != i for ex, i in zip(examples, ids)):
        raise ValueError("augment: data and frame do not hold the same rows in the same order")
    edits = augment_contrastive(examples, version=augment, rate=rate, seed=random_state)
    if builder is None:
        builder = FrameBuilder(entity_backend=entity_backend).fit(examples)
    parents = np.array([e.id.rsplit("~aug.", 1)[0] for e in edits], dtype=object)
    return builder.transform(edits), parents


def _ecs_column(frame):
    names = frame[SENT].iloc[0].names if len(frame) else ()
    return list(names).index("sent.chain.ecs.v2") if "sent.chain.ecs.v2" in names else None


def span_summary(span_rows) -> dict | None:
    """Character-level metrics (seed 004): the tagger's when there is one, and the sentence projection's.

    ``{"precision", "recall", "f1", "source", "projection": {...}, "tagger": {...} | None, "per_task":
    {task: {"projection": {...}, "tagger": {...}}}}``; top-level keys are the tagger's (else the projection's).
    """
    if not span_rows:
        return None

    def scores(rows):
        gold = [r[1] for r in rows]
        proj = span_scores([r[2] for r in rows], gold)
        tag = span_scores([r[3] for r in rows], gold) if rows and rows[0][3] is not None else None
        return proj, tag

    proj, tag = scores(span_rows)
    best = tag if tag is not None else proj
    out = {"precision": best["precision"], "recall": best["recall"], "f1": best["f1"],
           "source": "tagger" if tag is not None else "projection", "projection": proj, "tagger": tag,
           "per_task": {}}
    for task in sorted({r[0] for r in span_rows}):
        p, t = scores([r for r in span_rows if r[0] == task])
        out["per_task"][task] = {"projection": p, "tagger": t}
    return out


def attribution_summary(flagged) -> dict | None:
    """Seed 004 Table 10: flagged held-out sentences linked to a non-empty nearest evidence chunk."""
    if not flagged:
        return None
    with_ev = sum(1 for has, _ in flagged if has)
    ecs = [e for _, e in flagged if not np.isnan(e)]
    return {"flagged_sentences": len(flagged), "with_evidence": with_ev, "coverage": with_ev / len(flagged),
            "mean_ecs_flagged": float(np.mean(ecs)) if ecs else None}


_POOLS = {"cv5": "test", "transfer": "test+dev"}
"""The splits a training side's calibration and threshold part is drawn from, by protocol."""


def transfer_summary(preds, unit_names) -> dict:
    """The metrics of each held-out unit of the ``transfer`` protocol, with the share of its faithful
    answers flagged (``faithful_flagged``: false alarms over faithful answers)."""
    out = {}
    for fold, name in enumerate(unit_names):
        part = preds[preds["fold"] == fold]
        y = part["label"].astype(int).to_numpy()
        m = binary_metrics(y, part["risk"].to_numpy(), part["threshold"].to_numpy())
        m["faithful_flagged"] = m["fp"] / max(1, m["fp"] + m["tn"])
        m["ood_rate"] = float(part["ood"].mean()) if len(part) else None
        out[name] = m
    return out


def _validation(frame, train_idx, protocol: str, random_state: int):
    """Grouped validation part of a training side.

    Under ``cv5`` it is drawn from the training side's *test-split* rows (the
    other four folds; 25% of their sources) so that calibration and thresholds
    are tuned on the distribution being tested, not on the QA-heavy train split;
    the train-split rows always stay on the fitting side.  Under ``official``
    it is 20% of the train split's sources.
    """
    if protocol in _POOLS:
        split = frame["split"].astype(str).to_numpy()[train_idx]
        in_pool = np.isin(split, _POOLS[protocol].split("+"))
        pool, rest = train_idx[in_pool], train_idx[~in_pool]
        if len(pool) and len(np.unique(frame["source_id"].to_numpy()[pool])) >= 4:
            fit_idx, val_idx = validation_split(frame, pool, size=0.25, random_state=random_state)
            sources = frame["source_id"].to_numpy()
            rest = rest[~np.isin(sources[rest], sources[val_idx])]  # a validation source never trains
            return np.concatenate([fit_idx, rest]), val_idx
    return validation_split(frame, train_idx, random_state=random_state)


def summarize(preds, sentences, *, protocol, method, spec, featurize_ms, predict_ms, calibration,
              threshold_rule) -> dict:
    """The ``metrics.json`` dictionary."""
    y = preds["label"].astype(int).to_numpy()
    risk = preds["risk"].to_numpy()
    thr = preds["threshold"].to_numpy()
    out = {
        "protocol": protocol,
        "method": method,
        "method_source": spec.source,
        "uses_metadata": spec.uses_metadata,
        "calibration": calibration,
        "threshold_rule": threshold_rule,
        "n": int(len(preds)),
        "folds": int(preds["fold"].nunique()),
        "fold_thresholds": [float(t) for t in preds.groupby("fold")["threshold"].first().tolist()],
        "response": binary_metrics(y, risk, thr),
        "per_task": grouped_metrics(y, risk, thr, preds["task_type"].tolist()),
        "per_model": grouped_metrics(y, risk, thr, preds["model"].tolist()),
        "per_quality": grouped_metrics(y, risk, thr, preds["quality"].tolist()),
        "per_type": type_metrics(preds["label_types"].tolist(), y, risk, thr),
        "sentence": None,
        "sentence_per_task": None,
        "latency": {"featurize_ms_per_item": round(featurize_ms, 4), "predict_ms_per_item": round(predict_ms, 4)},
    }
    if sentences is not None and len(sentences):
        sy, sr, st = sentences["label"].to_numpy(), sentences["risk"].to_numpy(), sentences["threshold"].to_numpy()
        out["sentence"] = binary_metrics(sy, sr, st)
        out["sentence_per_task"] = grouped_metrics(sy, sr, st, sentences["task_type"].tolist())
    return out
