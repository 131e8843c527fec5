"""Evaluation helpers (the evaluation harness grows here)."""

from ._signal import univariate_auroc

__all__ = ["univariate_auroc"]
