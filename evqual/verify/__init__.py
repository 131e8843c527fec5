"""The verification stage behind the pre-filter (issue 11, in progress): evidence retrieval and its metrics.

Built so far: sparse retrieval (BM25), seed 003's score fusion and reciprocal
rank fusion, retrieval metrics, and MetaRAG (seed 000) with LLM-free
mutations (:class:`MetaRAG`, :class:`RulesMutator`).

>>> from evqual.verify import SparseRetriever, retrieval_metrics
>>> r = SparseRetriever().fit(["The bridge opened in 1932.", "Paris is in France."])
>>> retrieval_metrics([r.search("When did the bridge open?")], [{0}], ks=(1,))["recall@1"]
1.0
"""

from ._evidence import RETRIEVAL_METHODS, EvidenceRetriever
from ._types import (
    ANSWERS,
    MUTATION_KINDS,
    PENALTIES,
    VERDICTS,
    ClaimResult,
    Evidence,
    FactoidResult,
    Judge,
    Judgement,
    Mutator,
    Usage,
    Variant,
    VerificationResult,
    penalty,
)
from ._metarag import AGGREGATES, DEFAULT_TAU, MetaRAG, extract_factoids, metarag_answer
from ._mutations import ANTONYM_SETS, MUTATION_SETS, SYNONYM_SETS, RulesMutator, load_synonyms
from ._metrics import ndcg_at_k, recall_at_k, reciprocal_rank, retrieval_metrics
from ._retrieval import SparseRetriever, minmax_fusion, rank_order, rrf_fusion

__all__ = [
    "AGGREGATES",
    "ANTONYM_SETS",
    "DEFAULT_TAU",
    "MUTATION_SETS",
    "MetaRAG",
    "RulesMutator",
    "SYNONYM_SETS",
    "extract_factoids",
    "load_synonyms",
    "metarag_answer",
    "ANSWERS",
    "MUTATION_KINDS",
    "PENALTIES",
    "RETRIEVAL_METHODS",
    "VERDICTS",
    "ClaimResult",
    "Evidence",
    "EvidenceRetriever",
    "FactoidResult",
    "Judge",
    "Judgement",
    "Mutator",
    "Usage",
    "Variant",
    "VerificationResult",
    "penalty",
    "SparseRetriever",
    "minmax_fusion",
    "ndcg_at_k",
    "rank_order",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_metrics",
    "rrf_fusion",
]
