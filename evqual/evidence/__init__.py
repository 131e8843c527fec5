"""The evidence engine: how evqual reads an answer against its evidence.

One mechanism for every kind of error.  Each claim (clause) of an answer is
aligned to the context sentence that supports it best; the difference between
the two is read in both directions and sorted into classes of words that
carry logic (``logic.tsv``: polarity, modality, quantity, condition,
direction, comparison, order, time, frequency, cause, role), values (numbers
with units, dates, durations, rates; ``_values.py``), names and plain words,
each marked as aligned, borrowed from another sentence, or novel.  A learned
claim model (:class:`ClaimModel`) turns those features into a risk; the
differences (:class:`Difference`) are what explanations quote.

>>> from evqual.evidence import EvidenceEngine
>>> r = EvidenceEngine().read("The museum opens after noon.", ["The museum opens before noon daily."])
>>> [(d.cls, d.kind, d.claim_text, d.evidence_text) for d in r.claims[0].differences]
[('time', 'conflict', 'after', 'before')]

Public names
------------
:class:`EvidenceEngine`, :class:`EvidenceIndex`, :class:`Reading`, :class:`ClaimEvidence`,
:class:`Difference`, :data:`CLAIM_FEATURES`, :data:`CLAIM_FEATURE_TABLE`,
:func:`split_claims`; the data readers :func:`read_values`,
:func:`read_span`, :func:`logic_lexicon`, :data:`LOGIC_CLASSES`; the learner
:class:`ClaimModel`, :func:`claim_rows`, :func:`transformed_rows`,
:func:`monotonic_constraints`; the transformations :func:`transform_evidence`,
:func:`flip_claim`, :func:`preserve_claim`, :data:`FLIP_TAGS`,
:data:`PRESERVE_TAGS`.
"""

from ._engine import (
    CLAIM_FEATURE_TABLE,
    CLAIM_FEATURES,
    ClaimEvidence,
    Difference,
    EvidenceEngine,
    EvidenceIndex,
    Reading,
)
from ._lexicon import LOGIC_CLASSES, LogicLexicon, inflections, logic_lexicon, stem, synonym_map
from ._model import ClaimModel, aggregate_constraints, claim_rows, monotonic_constraints, transformed_rows
from ._reading import SpanReading, read_span
from ._transforms import FLIP_TAGS, PRESERVE_TAGS, TransformedClaim, flip_claim, preserve_claim, transform_evidence
from ._values import Value, read_values
from ..text import split_claims  # the rules the engine cuts claims by (shared with the check family)

__all__ = [
    "EvidenceIndex",
    "CLAIM_FEATURES",
    "CLAIM_FEATURE_TABLE",
    "ClaimEvidence",
    "ClaimModel",
    "Difference",
    "EvidenceEngine",
    "FLIP_TAGS",
    "LOGIC_CLASSES",
    "LogicLexicon",
    "PRESERVE_TAGS",
    "Reading",
    "SpanReading",
    "TransformedClaim",
    "Value",
    "aggregate_constraints",
    "claim_rows",
    "flip_claim",
    "inflections",
    "logic_lexicon",
    "monotonic_constraints",
    "preserve_claim",
    "read_span",
    "read_values",
    "split_claims",
    "stem",
    "synonym_map",
    "transform_evidence",
    "transformed_rows",
]
