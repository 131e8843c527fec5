"""Evidence-quality features.

The :class:`EvidenceFeaturizer` turns (query, context, output) examples into
numeric rows.  Every feature has a stable, versioned name in :data:`FEATURES`
(see :func:`describe_features` for the definitions and ranges), grouped in
families that can be switched on and off.

>>> from evqual.features import EvidenceFeaturizer, list_features
>>> list_features(families=["number"])
['number.count.v2', 'number.unsupported_count.v2', 'number.new_rate.v2', 'number.conflict.v2']
"""

from ._analysis import Analysis, SentenceEvidence, analyze, analyze_many, claim_sentences
from ._featurizer import (CONTEXT_CACHE_CHARS, CONTEXT_CACHE_SIZE, TRANSFORM_CHUNK, EvidenceFeaturizer,
                          InvalidParameterError, as_examples)
from ._lexical import ECS_WEIGHTS
from ._checks import CHECKS, split_claims
from ._novelty import ANTONYMS, is_novel, query_stems
from ._registry import (
    CONTENT_FAMILIES,
    EVIDENCE_MIN,
    FAMILIES,
    FEATURES,
    FeatureSpec,
    describe_features,
    feature_spec,
    list_features,
    meta_feature_name,
)
from ._similarity import ContextCache, ContextIndex
from ._structure import (KNOWN_ATTRIBUTES, NEGATION_RE, NEGATION_WORDS, candidate_fields, field_lookup, has_negation,
                         mentions_field, token_set)
from ._surface import REFUSAL_PATTERN, is_refusal
from ._token_features import TOKEN_FEATURE_NAMES, TokenBlock, token_block

__all__ = [
    "ANTONYMS",
    "CHECKS",
    "split_claims",
    "KNOWN_ATTRIBUTES",
    "NEGATION_RE",
    "NEGATION_WORDS",
    "has_negation",
    "candidate_fields",
    "field_lookup",
    "mentions_field",
    "token_set",
    "is_novel",
    "query_stems",
    "CONTENT_FAMILIES",
    "EVIDENCE_MIN",
    "claim_sentences",
    "ECS_WEIGHTS",
    "FAMILIES",
    "FEATURES",
    "REFUSAL_PATTERN",
    "TOKEN_FEATURE_NAMES",
    "TokenBlock",
    "Analysis",
    "CONTEXT_CACHE_CHARS",
    "CONTEXT_CACHE_SIZE",
    "TRANSFORM_CHUNK",
    "ContextCache",
    "ContextIndex",
    "EvidenceFeaturizer",
    "FeatureSpec",
    "InvalidParameterError",
    "SentenceEvidence",
    "analyze",
    "analyze_many",
    "as_examples",
    "describe_features",
    "feature_spec",
    "is_refusal",
    "list_features",
    "meta_feature_name",
    "token_block",
]
