"""Retrieval metrics: Recall@k, MRR and NDCG@k over queries with known relevant passages.

Each query has a ranking (passage indices, best first) and a set of relevant
passages (binary relevance).  Means are taken over the queries that have at
least one relevant passage.
"""

from __future__ import annotations

import math

__all__ = ["recall_at_k", "reciprocal_rank", "ndcg_at_k", "retrieval_metrics"]


def _check(ranking, relevant, k=None):
    ranking = list(ranking)
    if len(set(ranking)) != len(ranking):
        raise ValueError("a ranking names a passage twice")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be an integer >= 1; got {k!r}")
    return ranking, set(relevant)


def recall_at_k(ranking, relevant, k: int) -> float:
    """Share of the relevant passages among the first ``k`` of ``ranking``.

    Examples
    --------
    >>> recall_at_k([3, 1, 2], {1, 5}, k=2)
    0.5
    """
    ranking, relevant = _check(ranking, relevant, k)
    if not relevant:
        raise ValueError("relevant must not be empty")
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def reciprocal_rank(ranking, relevant) -> float:
    """``1 / rank`` of the first relevant passage (ranks from 1); 0 when none is ranked.

    Examples
    --------
    >>> reciprocal_rank([3, 1, 2], {1, 2})
    0.5
    """
    ranking, relevant = _check(ranking, relevant)
    for i, p in enumerate(ranking, start=1):
        if p in relevant:
            return 1.0 / i
    return 0.0


def ndcg_at_k(ranking, relevant, k: int = 10) -> float:
    """Binary-relevance NDCG@k: ``DCG@k / IDCG@k`` with gains ``1 / log2(rank + 1)``.

    Examples
    --------
    >>> round(ndcg_at_k([3, 1, 2], {1}, k=10), 4)
    0.6309
    >>> ndcg_at_k([1, 3], {1}, k=10)
    1.0
    """
    ranking, relevant = _check(ranking, relevant, k)
    if not relevant:
        raise ValueError("relevant must not be empty")
    dcg = sum(1.0 / math.log2(i + 1) for i, p in enumerate(ranking[:k], start=1) if p in relevant)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(relevant)) + 1))
    return dcg / idcg


def retrieval_metrics(rankings, relevants, *, ks=(1, 5, 20), ndcg_k: int = 10) -> dict:
    """Mean Recall@k for each ``k`` in ``ks``, MRR and NDCG@``ndcg_k`` over queries.

    Parameters
    ----------
    rankings : sequence of rankings (passage indices, best first), one per query
    relevants : sequence of sets of relevant passage indices, one per query
        Queries without a relevant passage are left out (and counted).

    Returns
    -------
    dict
        ``{"n_queries", "n_without_relevant", "recall@1", ..., "mrr", "ndcg@10"}``.

    Examples
    --------
    >>> m = retrieval_metrics([[0, 1], [1, 0]], [{0}, {0}], ks=(1,))
    >>> m["recall@1"], m["mrr"], round(m["ndcg@10"], 3)
    (0.5, 0.75, 0.815)
    """
    rankings, relevants = list(rankings), [set(r) for r in relevants]
    if len(rankings) != len(relevants):
        raise ValueError(f"{len(rankings)} rankings for {len(relevants)} sets of relevant passages")
    pairs = [(r, rel) for r, rel in zip(rankings, relevants) if rel]
    out = {"n_queries": len(pairs), "n_without_relevant": len(rankings) - len(pairs)}
    for k in ks:
        out[f"recall@{k}"] = (sum(recall_at_k(r, rel, k) for r, rel in pairs) / len(pairs)) if pairs else None
    out["mrr"] = (sum(reciprocal_rank(r, rel) for r, rel in pairs) / len(pairs)) if pairs else None
    out[f"ndcg@{ndcg_k}"] = (sum(ndcg_at_k(r, rel, ndcg_k) for r, rel in pairs) / len(pairs)) if pairs else None
    return out
