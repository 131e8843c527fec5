"""Explaining scored answers: reason codes, provenance templates, audit reports in HTML and markdown.

>>> from evqual.explain import REASONS
>>> "ENTITY_UNSUPPORTED" in REASONS
True
"""

from ._reasons import (
    CONTRADICTION_KINDS,
    LOW_SUPPORT_ECS,
    MAX_CLAIM_REASONS,
    REASONS,
    ReasonCode,
    citation_for,
    claim_reasons,
    explanation_text,
    model_risk_reason,
    sentence_reasons,
)
from ._render import SORTS, iter_html, iter_markdown, render_html, render_markdown, write_report

__all__ = [
    "CONTRADICTION_KINDS",
    "LOW_SUPPORT_ECS",
    "MAX_CLAIM_REASONS",
    "claim_reasons",
    "REASONS",
    "SORTS",
    "ReasonCode",
    "citation_for",
    "explanation_text",
    "iter_html",
    "iter_markdown",
    "model_risk_reason",
    "render_html",
    "render_markdown",
    "sentence_reasons",
    "write_report",
]
