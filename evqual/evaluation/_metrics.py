"""Metrics at a threshold and by subgroup (seed 002 Tables 5-11, seed 004 Tables 6-9)."""

from __future__ import annotations

import numpy as np

from ..models import METRIC_KEYS, binary_metrics

__all__ = ["binary_metrics", "grouped_metrics", "type_metrics", "METRIC_KEYS"]


def grouped_metrics(y, risk, threshold: float, groups) -> dict:
    """:func:`binary_metrics` within each value of ``groups`` (missing values as ``"unknown"``)."""
    y = np.asarray(y)
    risk = np.asarray(risk)
    threshold = np.broadcast_to(np.asarray(threshold, dtype=float), risk.shape)
    g = np.array(["unknown" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in groups])
    return {str(value): binary_metrics(y[g == value], risk[g == value], threshold[g == value])
            for value in sorted(set(g.tolist()))}


def type_metrics(label_types, y, risk, threshold: float) -> dict:
    """Detection by hallucination type (seed 002 Table 11).

    For each RAGTruth span type, the responses containing at least one span of
    that type: ``n``, ``correct_rate`` (share flagged) and ``mean_risk``.
    ``"grounded"`` reports the responses without spans (correct = not flagged).
    """
    y = np.asarray(y).astype(int)
    risk = np.asarray(risk, dtype=float)
    pred = risk >= np.asarray(threshold, dtype=float)
    out = {}
    types = sorted({t for s in label_types for t in str(s).split("|") if t})
    for t in types:
        m = np.array([t in str(s).split("|") for s in label_types])
        out[t] = {"n": int(m.sum()), "correct_rate": float(pred[m].mean()), "mean_risk": float(risk[m].mean())}
    neg = y == 0
    if neg.any():
        out["grounded"] = {"n": int(neg.sum()), "correct_rate": float((~pred[neg]).mean()),
                           "mean_risk": float(risk[neg].mean())}
    return out
