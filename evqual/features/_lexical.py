"""Families ``coverage``, ``support``, ``semantic`` and ``chain`` (lexical evidence).

See :mod:`evqual.features._registry` for the definitions and
:mod:`evqual.features._similarity` for the per-sentence measures.

The Evidence-Chain Score of a sentence (seed 004) is the weighted mean

    0.25 recall + 0.15 Jaccard + 0.20 TF-IDF + 0.20 BM25
    + 0.10 (1 - unsupported-number rate) + 0.10 (1 - unsupported-entity rate)

with lexical recall given the largest weight because it is the most direct
"is this sentence's content in the evidence" signal, and the two drift terms
small weights because most sentences carry no number or entity.
"""

from __future__ import annotations

import math

import numpy as np
from ._reduce import _MAX, _MIN, _SUM

ECS_WEIGHTS = {"recall": 0.25, "jaccard": 0.15, "tfidf": 0.20, "bm25": 0.20, "number": 0.10, "entity": 0.10}


def ecs(match, number_rate: np.ndarray, entity_rate: np.ndarray) -> np.ndarray:
    """Evidence-Chain Score per sentence, in [0, 1]."""
    w = ECS_WEIGHTS
    return (w["recall"] * match.recall + w["jaccard"] * match.jaccard + w["tfidf"] * match.tfidf
            + w["bm25"] * match.bm25 + w["number"] * (1.0 - number_rate) + w["entity"] * (1.0 - entity_rate))


def _share(part: set, whole: set | dict, empty: float) -> float:
    if not part:
        return empty
    return sum(1 for t in part if t in whole) / len(part)


def normalized_entropy(values: np.ndarray) -> float:
    """Entropy of ``values / values.sum()`` over log(n); 1 for n <= 1, 0 if all zero."""
    n = len(values)
    if n <= 1:
        return 1.0
    total = float(_SUM(values, None))
    if total <= 0:
        return 0.0
    p = values / total
    p = p[p > 0]
    h = float(-_SUM(p * np.log(p), None))
    return min(1.0, max(0.0, h / math.log(n)))


def coverage_features(out_tokens: set, query_tokens: set, vocab) -> dict:
    return {
        "coverage.output_context.v1": _share(out_tokens, vocab, 1.0),
        "coverage.query_context.v1": _share(query_tokens, vocab, 0.0),
        "coverage.query_output.v1": _share(query_tokens, out_tokens, 0.0),
    }


def support_features(match) -> dict:
    s = match.support
    if len(s) == 0:
        return {"support.mean.v1": 1.0, "support.min.v1": 1.0, "support.max.v1": 1.0,
                "support.margin.v1": 0.0, "support.entropy.v1": 1.0}
    lo, hi = float(_MIN(s, None)), float(_MAX(s, None))
    return {
        "support.mean.v1": float(s.mean()),
        "support.min.v1": lo,
        "support.max.v1": hi,
        "support.margin.v1": hi - lo,
        "support.entropy.v1": normalized_entropy(s),
    }


def semantic_features(match, coverage: float) -> dict:
    mean_tfidf = float(match.tfidf.mean()) if len(match.tfidf) else 1.0
    return {"semantic.support.v1": 0.5 * mean_tfidf + 0.5 * coverage}


def chain_features(match, ecs_values: np.ndarray) -> dict:
    if len(ecs_values) == 0:
        ones = {k: 1.0 for k in ("chain.jaccard.mean.v1", "chain.jaccard.min.v1", "chain.recall.mean.v1",
                                 "chain.recall.min.v1", "chain.bm25.mean.v1", "chain.bm25.min.v1",
                                 "chain.tfidf.mean.v1", "chain.tfidf.min.v1", "chain.ecs.mean.v2",
                                 "chain.ecs.min.v2", "chain.ecs.max.v2")}
        ones["chain.precision.mean.v1"] = 0.0
        return ones
    M = np.vstack([match.jaccard, match.recall, match.precision, match.bm25, match.tfidf, ecs_values])
    mean, lo = M.mean(axis=1).tolist(), M.min(axis=1).tolist()
    return {
        "chain.jaccard.mean.v1": mean[0],
        "chain.jaccard.min.v1": lo[0],
        "chain.recall.mean.v1": mean[1],
        "chain.recall.min.v1": lo[1],
        "chain.precision.mean.v1": mean[2],
        "chain.bm25.mean.v1": mean[3],
        "chain.bm25.min.v1": lo[3],
        "chain.tfidf.mean.v1": mean[4],
        "chain.tfidf.min.v1": lo[4],
        "chain.ecs.mean.v2": mean[5],
        "chain.ecs.min.v2": lo[5],
        "chain.ecs.max.v2": float(_MAX(ecs_values, None)),
    }


def sentence_lexical(match, ecs_values: np.ndarray) -> dict:
    return {
        "sent.chain.jaccard.v1": match.jaccard,
        "sent.chain.recall.v1": match.recall,
        "sent.chain.precision.v1": match.precision,
        "sent.chain.bm25.v1": match.bm25,
        "sent.chain.tfidf.v1": match.tfidf,
        "sent.chain.ecs.v2": ecs_values,
        "sent.support.v1": match.support,
    }
