"""Scoring answers in production: result objects, decision policy, topics, audit log.

>>> from evqual.scoring import DECISIONS
>>> DECISIONS
('show', 'warn', 'regenerate', 'abstain', 'escalate')
"""

from ._audit import AuditLog, input_sha256, read_audit_log
from ._policy import Decision, Policy, load_policy
from ._result import DECISIONS, Citation, ModelInfo, Reason, ScoreResult, SentenceResult, SpanResult
from ._topics import BUILTIN_TOPICS, Topic, TopicTagger
from ._frame import FRAME_COLUMNS, FRAME_SCHEMA, SPARK_SCHEMA, empty_result_frame, score_frame
from ._parallel import resolve_jobs, score_file_parallel

__all__ = [
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
]
