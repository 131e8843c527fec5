"""Binary detection metrics at a threshold (the validation metrics a :class:`Detector` keeps).

:mod:`evqual.evaluation` builds its subgroup tables on :func:`binary_metrics`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["binary_metrics", "METRIC_KEYS"]

METRIC_KEYS = ("n", "accuracy", "precision", "recall", "f1", "macro_f1", "mcc", "auroc", "auprc", "brier",
               "tp", "fp", "tn", "fn", "threshold")


def binary_metrics(y, risk, threshold: float) -> dict:
    """Every metric of :data:`METRIC_KEYS` for targets ``y`` and risks ``risk``.

    The positive class is "hallucinated"; a prediction is positive when
    ``risk >= threshold``.  ``threshold`` may hold one value per row (pooled
    out-of-fold predictions, each fold with its own threshold); the reported
    ``threshold`` is then their mean.  Ranking metrics (AUROC, AUPRC) are ``None`` when
    ``y`` has a single class.

    Examples
    --------
    >>> from evqual.models import binary_metrics
    >>> m = binary_metrics([0, 0, 1, 1], [0.1, 0.6, 0.7, 0.9], 0.5)
    >>> m["tp"], m["fp"], m["precision"], m["auroc"]
    (2, 1, 0.6666666666666666, 1.0)
    """
    from sklearn.metrics import (accuracy_score, average_precision_score, brier_score_loss, confusion_matrix,
                                 f1_score, matthews_corrcoef, precision_score, recall_score, roc_auc_score)

    y = np.asarray(y).astype(int)
    risk = np.asarray(risk, dtype=float)
    threshold = np.asarray(threshold, dtype=float)  # a scalar, or one per row (pooled folds)
    pred = (risk >= threshold).astype(int)
    both = len(np.unique(y)) == 2
    tn, fp, fn, tp = confusion_matrix(y, pred, labels=[0, 1]).ravel() if len(y) else (0, 0, 0, 0)
    return {
        "n": int(len(y)),
        "accuracy": float(accuracy_score(y, pred)) if len(y) else None,
        "precision": float(precision_score(y, pred, zero_division=0)),
        "recall": float(recall_score(y, pred, zero_division=0)),
        "f1": float(f1_score(y, pred, zero_division=0)),
        "macro_f1": float(f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0)) if len(y) else None,
        "mcc": float(matthews_corrcoef(y, pred)) if both else 0.0,
        "auroc": float(roc_auc_score(y, risk)) if both else None,
        "auprc": float(average_precision_score(y, risk)) if both else None,
        "brier": float(brier_score_loss(y, np.clip(risk, 0, 1), labels=[0, 1])) if len(y) else None,
        "tp": int(tp), "fp": int(fp), "tn": int(tn), "fn": int(fn),
        "threshold": float(np.mean(threshold)) if threshold.size else None,
    }
