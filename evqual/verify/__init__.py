"""The verification stage behind the pre-filter (issue 11, in progress): evidence retrieval and its metrics.

Built so far: sparse retrieval (BM25), dense retrieval (all-MiniLM-L6-v2
sentence embeddings, the optional ``embeddings`` extra), seed 003's score
fusion and reciprocal rank fusion, and retrieval metrics.  Claim verification and MetaRAG are not
built yet.

>>> from evqual.verify import SparseRetriever, retrieval_metrics
>>> r = SparseRetriever().fit(["The bridge opened in 1932.", "Paris is in France."])
>>> retrieval_metrics([r.search("When did the bridge open?")], [{0}], ks=(1,))["recall@1"]
1.0
"""

from ._dense import (
    HYBRID_METHODS,
    DenseEncoder,
    DenseRetriever,
    HybridRetriever,
    default_encoder,
    embeddings_available,
    require_embeddings,
)
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
from ._metrics import ndcg_at_k, recall_at_k, reciprocal_rank, retrieval_metrics
from ._retrieval import SparseRetriever, minmax_fusion, rank_order, rrf_fusion

__all__ = [
    "ANSWERS",
    "HYBRID_METHODS",
    "MUTATION_KINDS",
    "PENALTIES",
    "RETRIEVAL_METHODS",
    "VERDICTS",
    "ClaimResult",
    "DenseEncoder",
    "DenseRetriever",
    "Evidence",
    "EvidenceRetriever",
    "FactoidResult",
    "HybridRetriever",
    "Judge",
    "Judgement",
    "Mutator",
    "Usage",
    "Variant",
    "VerificationResult",
    "penalty",
    "default_encoder",
    "embeddings_available",
    "require_embeddings",
    "SparseRetriever",
    "minmax_fusion",
    "ndcg_at_k",
    "rank_order",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_metrics",
    "rrf_fusion",
]
