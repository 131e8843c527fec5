"""Evaluation: protocols, metrics, reports.

>>> from evqual.evaluation import PROTOCOLS
>>> PROTOCOLS
('cv5', 'official', 'transfer')
"""

from ._contrastive import contrastive_markdown, evaluate_contrastive, load_pairs, pairs_to_examples
from ._metrics import METRIC_KEYS, binary_metrics, grouped_metrics, type_metrics
from ._policy import policy_summary, policy_table
from ._protocols import PROTOCOLS, protocol_splits, transfer_units
from .._markdown import markdown_table
from ._reproduce import reproduce
from ._report import feature_importances, metrics_table, write_comparison, write_report
from ._reproduce import merge_block, render_block, reproduce, update_results_block
from ._run import EvaluationResult, build_frame, evaluate, transfer_summary
from ._signal import univariate_auroc

__all__ = [
    "transfer_units",
    "transfer_summary",
    "markdown_table",
    "reproduce",
    "contrastive_markdown", "evaluate_contrastive", "load_pairs", "pairs_to_examples",
    "policy_summary",
    "merge_block",
    "render_block",
    "reproduce",
    "update_results_block",
    "policy_table",
    "METRIC_KEYS",
    "PROTOCOLS",
    "EvaluationResult",
    "binary_metrics",
    "build_frame",
    "evaluate",
    "feature_importances",
    "metrics_table",
    "write_comparison",
    "write_report",
    "grouped_metrics",
    "protocol_splits",
    "type_metrics",
    "univariate_auroc",
]
