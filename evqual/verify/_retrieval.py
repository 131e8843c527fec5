"""Evidence retrieval for claim verification (seed 003, Stage 1): sparse BM25, score fusion and rank fusion.

A claim is checked against the passages most likely to hold its evidence.
:class:`SparseRetriever` ranks passages with BM25 (rank-bm25's ``BM25Okapi``,
``k1 = 1.5``, ``b = 0.75`` as seed 003 says); a dense retriever (sentence
embeddings, the optional ``embeddings`` extra) ranks them by cosine
similarity.  Two ways to combine rankers:

* :func:`minmax_fusion`: each ranker's scores min-max normalised to [0, 1] over
  the candidates, then a convex combination (seed 003: ``0.6 * dense + 0.4 *
  sparse``);
* :func:`rrf_fusion`: reciprocal rank fusion, ``sum_r 1 / (k + rank_r(d))`` with
  ``k = 60`` (Cormack et al., 2009), which needs ranks only.

Everything here is deterministic: ties are broken by passage index.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..text import content_tokens, english_stemmer

__all__ = ["SparseRetriever", "minmax_fusion", "rrf_fusion", "rank_order"]


def rank_order(scores) -> np.ndarray:
    """Passage indices from the best score to the worst (ties: lower index first).

    Examples
    --------
    >>> rank_order([0.2, 0.9, 0.9, 0.1]).tolist()
    [1, 2, 0, 3]
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional; got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError("scores must not be NaN")
    return np.lexsort((np.arange(len(s)), -s))


def _minmax(s: np.ndarray) -> np.ndarray:
    lo, hi = s.min(), s.max()
    return np.zeros_like(s) if hi == lo else (s - lo) / (hi - lo)


def minmax_fusion(dense, sparse, *, alpha: float = 0.6) -> np.ndarray:
    """``alpha * minmax(dense) + (1 - alpha) * minmax(sparse)`` per passage (seed 003's hybrid).

    Parameters
    ----------
    dense, sparse : array-like of shape (n_passages,)
        Scores of the same passages by the two rankers.
    alpha : float, default=0.6
        Weight of the dense scores, in [0, 1].

    Returns
    -------
    numpy.ndarray of shape (n_passages,), values in [0, 1]
        A ranker whose scores are all equal contributes 0.

    Examples
    --------
    >>> minmax_fusion([0.1, 0.5, 0.3], [4.0, 0.0, 2.0]).round(3).tolist()
    [0.4, 0.6, 0.5]
    """
    if not isinstance(alpha, Real) or isinstance(alpha, bool) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1]; got {alpha!r}")
    d, s = np.asarray(dense, dtype=np.float64), np.asarray(sparse, dtype=np.float64)
    if d.shape != s.shape or d.ndim != 1:
        raise ValueError(f"dense and sparse must be one-dimensional and of one length; got {d.shape} and {s.shape}")
    if not len(d):
        return d
    if not (np.isfinite(d).all() and np.isfinite(s).all()):
        raise ValueError("scores must be finite")
    return alpha * _minmax(d) + (1.0 - alpha) * _minmax(s)


def rrf_fusion(*rankings, k: int = 60, n: int | None = None) -> np.ndarray:
    """Reciprocal rank fusion: ``sum_r 1 / (k + rank_r(d))``, ranks from 1, per passage.

    Parameters
    ----------
    *rankings : sequences of passage indices, best first
        A passage a ranking leaves out gets nothing from it.
    k : int, default=60
    n : int, optional
        Number of passages (default: one more than the largest index given).

    Returns
    -------
    numpy.ndarray of shape (n,)

    Examples
    --------
    >>> rrf_fusion([0, 1, 2], [2, 1, 0], k=1).round(3).tolist()
    [0.75, 0.667, 0.75]
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be an integer >= 0; got {k!r}")
    ranks = [np.asarray(r, dtype=np.int64).reshape(-1) for r in rankings]
    top = max((int(r.max()) + 1 for r in ranks if len(r)), default=0)
    n = top if n is None else n
    if n < top:
        raise ValueError(f"n={n} but a ranking names passage {top - 1}")
    out = np.zeros(n, dtype=np.float64)
    for r in ranks:
        if (r < 0).any():
            raise ValueError("passage indices must be >= 0")
        if len(np.unique(r)) != len(r):
            raise ValueError("a ranking names a passage twice")
        out[r] += 1.0 / (k + np.arange(1, len(r) + 1))
    return out


class SparseRetriever:
    """BM25 over a fixed list of passages (rank-bm25 ``BM25Okapi``).

    Parameters
    ----------
    k1 : float, default=1.5
    b : float, default=0.75
        Seed 003's values.
    stem : bool, default=True
        Compare Snowball English stems of the content words ("bridges" meets
        "bridge"); ``False`` compares the words as written.

    Attributes
    ----------
    n_passages_ : int

    Examples
    --------
    >>> r = SparseRetriever().fit(["The bridge opened in 1932.", "Paris is in France.", "Bridges need steel."])
    >>> r.search("When did the bridge open?", k=2).tolist()
    [0, 2]
    """

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, stem: bool = True):
        self.k1 = k1
        self.b = b
        self.stem = stem

    def _tokens(self, text: str) -> list:
        words = content_tokens(text)
        if not self.stem:
            return words
        return english_stemmer().stemWords(words)

    def fit(self, passages):
        """Index ``passages`` (a sequence of str)."""
        for name, value in (("k1", self.k1), ("b", self.b)):
            if not isinstance(value, Real) or isinstance(value, bool) or value < 0 or (name == "b" and value > 1):
                raise ValueError(f"{name} must be a number >= 0{' and <= 1' if name == 'b' else ''}; got {value!r}")
        passages = list(passages)
        bad = [i for i, p in enumerate(passages) if not isinstance(p, str)]
        if bad:
            raise TypeError(f"passages[{bad[0]}] must be a string; got {type(passages[bad[0]]).__name__}")
        from rank_bm25 import BM25Okapi

        if not isinstance(self.stem, bool):
            raise ValueError(f"stem must be a bool; got {self.stem!r}")
        tokens = [self._tokens(p) for p in passages]
        # rank-bm25 divides by the mean passage length: an index of empty passages scores 0 everywhere
        self._bm25 = BM25Okapi(tokens, k1=self.k1, b=self.b) if any(tokens) else None
        self.n_passages_ = len(passages)
        return self

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (shape ``(n_passages_,)``)."""
        if not hasattr(self, "n_passages_"):
            raise ValueError("this SparseRetriever is not fitted; call fit(passages) first")
        if not isinstance(query, str):
            raise TypeError(f"query must be a string; got {type(query).__name__}")
        q = self._tokens(query)
        if self._bm25 is None or not q:
            return np.zeros(self.n_passages_)
        return np.asarray(self._bm25.get_scores(q), dtype=np.float64)

    def search(self, query: str, k: int | None = None) -> np.ndarray:
        """Indices of the ``k`` best passages for ``query`` (all, without ``k``), best first."""
        order = rank_order(self.scores(query))
        return order if k is None else order[:k]
