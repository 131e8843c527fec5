"""Scoring answers in production: the :class:`Scorer` pipeline, decision policy, topics, audit log.

The result types (:class:`ScoreResult` and its parts) live in :mod:`evqual.results` and are
re-exported here.

>>> from evqual.scoring import DECISIONS
>>> DECISIONS
('show', 'warn', 'regenerate', 'abstain', 'escalate')
"""

from ._audit import AuditLog, input_sha256, read_audit_log
from ._policy import Decision, Policy, load_policy
from ._scorer import Scorer, as_scoring_example, input_warnings
from ._stream import (
    StreamAborted,
    count_lines,
    dumps_line,
    error_record,
    parse_results,
    read_results,
    score_block,
    score_file,
)
from ..results import DECISIONS, Citation, ModelInfo, Reason, ScoreResult, SentenceResult, SpanResult
from ._topics import BUILTIN_TOPICS, Topic, TopicTagger
from ._frame import FRAME_COLUMNS, FRAME_SCHEMA, SPARK_SCHEMA, empty_result_frame, score_frame
from ._parallel import resolve_jobs, score_file_parallel, usable_cores

__all__ = [
    "StreamAborted",
    "count_lines",
    "dumps_line",
    "error_record",
    "parse_results",
    "read_results",
    "score_block",
    "score_file",
    "Scorer",
    "as_scoring_example",
    "input_warnings",
    "DECISIONS",
    "Citation",
    "ModelInfo",
    "Reason",
    "ScoreResult",
    "SentenceResult",
    "SpanResult",
    "BUILTIN_TOPICS",
    "Topic",
    "TopicTagger",
    "Decision",
    "Policy",
    "load_policy",
    "AuditLog",
    "input_sha256",
    "read_audit_log",
    "score_frame",
    "FRAME_SCHEMA",
    "FRAME_COLUMNS",
    "SPARK_SCHEMA",
    "empty_result_frame",
    "score_file_parallel",
    "resolve_jobs",
    "usable_cores",
]
