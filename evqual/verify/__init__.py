"""The verification stage behind the pre-filter: claims, evidence retrieval, judges, MetaRAG.

Data flows one way: answer -> claims or factoids (:class:`ClaimExtractor`) ->
evidence per statement (:class:`EvidenceRetriever`: BM25, dense embeddings of the
``embeddings`` extra, or their fusion) -> a judge (``rules``: :class:`RulesJudge`, the
claim-level model and the high-precision checks, no LLM; ``llm``: :class:`LLMJudge`
over an OpenAI-compatible server) -> :class:`ClaimVerifier` (seed 003: verdicts,
factual precision, tiers) or :class:`MetaRAG` (seed 000: mutations, Table 1
penalties, ``H = max S_i``) -> :class:`VerificationResult`.

:func:`make_verifier` builds either by name; :func:`verify_file` streams a JSONL
(``evqual verify``); ``Scorer(verifier=...)`` verifies the answers the policy
escalates (``evqual score --verify``).

>>> from evqual.verify import ClaimVerifier
>>> r = ClaimVerifier().verify(query="When did it open?", context=["The bridge opened in 1937."],
...                            output="The bridge opened in 1932.")
>>> r.flagged, r.claims[0].verdict
(True, 'REFUTED')
"""

from ._claims import CLAIM_EXTRACTORS, Claim, ClaimExtractor, extract_claims, is_opinion, is_question
from ._claim_model import (
    CLAIM_FAMILIES,
    CLAIM_MODEL_FORMAT,
    ClaimModel,
    claim_dataset,
    claim_example,
    default_claim_model_path,
    load_claim_model,
    save_claim_model,
)
from ._pipeline import BACKENDS, DEFAULT_TIERS, ClaimVerifier, make_judge, tier_of
from ._rules import REFUTING_CHECKS, REFUTING_KINDS, RulesJudge, answer_from
from ._stream import METHODS, make_verifier, verify_file
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
from ._llm import ENV_VARS, KEY_PREFIX_CHARS, MAX_QUOTED_CHARS, LLMClient, LLMError, LLMReply
from ._llm_backend import JUDGE_MODES, LLMFactoidExtractor, LLMJudge, LLMMutator, align_span
from ._prompts import PROMPTS, load_prompt
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
    "METHODS",
    "make_verifier",
    "verify_file",
    "BACKENDS",
    "CLAIM_MODEL_FORMAT",
    "ClaimVerifier",
    "DEFAULT_TIERS",
    "REFUTING_CHECKS",
    "REFUTING_KINDS",
    "RulesJudge",
    "answer_from",
    "default_claim_model_path",
    "load_claim_model",
    "make_judge",
    "save_claim_model",
    "tier_of",
    "CLAIM_EXTRACTORS",
    "CLAIM_FAMILIES",
    "Claim",
    "ClaimExtractor",
    "ClaimModel",
    "claim_dataset",
    "claim_example",
    "extract_claims",
    "is_opinion",
    "is_question",
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
    "ENV_VARS",
    "JUDGE_MODES",
    "LLMClient",
    "LLMError",
    "MAX_QUOTED_CHARS",
    "KEY_PREFIX_CHARS",
    "LLMFactoidExtractor",
    "LLMJudge",
    "LLMMutator",
    "LLMReply",
    "PROMPTS",
    "align_span",
    "load_prompt",
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
