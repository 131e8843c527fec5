"""The verification stage behind the pre-filter (issue 11, in progress): evidence retrieval and its metrics.

Built so far: sparse retrieval (BM25), seed 003's score fusion and reciprocal
rank fusion, retrieval metrics, and the ``llm`` backend (an OpenAI-compatible
client, seed 000's prompts as editable files, an LLM judge, mutator and
factoid extractor).

>>> from evqual.verify import SparseRetriever, retrieval_metrics
>>> r = SparseRetriever().fit(["The bridge opened in 1932.", "Paris is in France."])
>>> retrieval_metrics([r.search("When did the bridge open?")], [{0}], ks=(1,))["recall@1"]
1.0
"""

from ._claims import CLAIM_EXTRACTORS, Claim, ClaimExtractor, extract_claims, is_opinion, is_question
from ._claim_model import (
    CLAIM_FAMILIES,
    CLAIM_MODEL_FORMAT,
    ClaimModel,
    chunk_texts,
    claim_dataset,
    claim_example,
    default_claim_model_path,
    load_claim_model,
    save_claim_model,
)
from ._pipeline import BACKENDS, DEFAULT_TIERS, ClaimVerifier, make_judge, tier_of
from ._rules import REFUTING_CHECKS, RulesJudge, answer_from
from ._stream import METHODS, make_verifier, verify_file
from ._evidence import RETRIEVAL_METHODS, EvidenceRetriever
from ._llm import ENV_VARS, LLMClient, LLMError, LLMReply
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
    "chunk_texts",
    "claim_dataset",
    "claim_example",
    "extract_claims",
    "is_opinion",
    "is_question",
    "ANSWERS",
    "ENV_VARS",
    "JUDGE_MODES",
    "LLMClient",
    "LLMError",
    "LLMFactoidExtractor",
    "LLMJudge",
    "LLMMutator",
    "LLMReply",
    "PROMPTS",
    "align_span",
    "load_prompt",
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
