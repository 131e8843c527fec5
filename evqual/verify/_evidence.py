"""Evidence retrieval per statement inside one answer's context (seed 003, Stage 1).

:class:`EvidenceRetriever` indexes the chunks of one context (as
:func:`evqual.data.chunk_context` cuts them) and returns, for each statement,
the ``k`` best chunks as :class:`~evqual.verify.Evidence`: sparse (BM25),
dense (sentence embeddings, the ``embeddings`` extra) or hybrid (seed 003's
min-max fusion, 0.6 dense + 0.4 sparse, or reciprocal rank fusion).
"""

from __future__ import annotations

import numpy as np

from ..data import chunk_context
from ._retrieval import SparseRetriever, minmax_fusion, rank_order, rrf_fusion
from ._types import Evidence

__all__ = ["EvidenceRetriever", "RETRIEVAL_METHODS"]

RETRIEVAL_METHODS = ("sparse", "dense", "hybrid", "rrf")


class EvidenceRetriever:
    """The ``k`` best chunks of one context for each statement.

    Parameters
    ----------
    k : int, default=3
        Chunks returned per statement (fewer when the context has fewer).
    method : {"sparse", "dense", "hybrid", "rrf"}, default="sparse"
        ``hybrid`` is seed 003's min-max normalised ``alpha * dense + (1 - alpha) * sparse``;
        ``rrf`` is reciprocal rank fusion of the two rankings.  ``dense``,
        ``hybrid`` and ``rrf`` need an ``encoder`` or the ``embeddings`` extra.
    alpha : float, default=0.6
        Weight of the dense score in ``hybrid``.
    encoder : object, optional
        Anything with ``encode(list_of_str) -> ndarray`` of L2-normalised rows;
        by default :class:`evqual.verify.DenseEncoder` (loaded once, lazily).

    Attributes
    ----------
    context_text_ : str
    chunks_ : list of Evidence
        Every chunk of the context, in order, with score 0.

    Examples
    --------
    >>> r = EvidenceRetriever(k=1).fit(["The bridge opened in 1932.", "Paris is in France."])
    >>> [e.text for e in r.retrieve("When did the bridge open?")]
    ['The bridge opened in 1932.']
    """

    def __init__(self, *, k: int = 3, method: str = "sparse", alpha: float = 0.6, encoder=None):
        self.k = k
        self.method = method
        self.alpha = alpha
        self.encoder = encoder

    def _validate(self):
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ValueError(f"k must be an int >= 1; got {self.k!r}")
        if self.method not in RETRIEVAL_METHODS:
            raise ValueError(f"method must be one of {RETRIEVAL_METHODS}; got {self.method!r}")
        if not isinstance(self.alpha, (int, float)) or not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be a number in [0, 1]; got {self.alpha!r}")

    def _encoder(self):
        if self.encoder is None:
            from ._dense import default_encoder

            self.encoder = default_encoder()
        return self.encoder

    def fit(self, context, task_type: str | None = None):
        """Index the chunks of ``context`` (str, list of str or record dict)."""
        self._validate()
        text, chunks = chunk_context(context, task_type)
        self.context_text_ = text
        self.chunks_ = [Evidence(i, c.start, c.end, text[c.start:c.end]) for i, c in enumerate(chunks)]
        passages = [e.text for e in self.chunks_]
        self._sparse = SparseRetriever().fit(passages)
        self._stems = [frozenset(self._sparse._tokens(p)) for p in passages]
        self._dense = None
        if self.method != "sparse" and passages:
            self._dense = np.asarray(self._encoder().encode(passages), dtype=np.float64)
        return self

    def scores(self, statement: str) -> np.ndarray:
        """The score of every chunk for ``statement`` (fused scores lie in [0, 1])."""
        if not hasattr(self, "chunks_"):
            raise ValueError("this EvidenceRetriever is not fitted; call fit(context) first")
        if not self.chunks_:
            return np.zeros(0)
        sparse = self._sparse.scores(statement)
        if self.method == "sparse":
            return sparse
        q = np.asarray(self._encoder().encode([statement]), dtype=np.float64)[0]
        dense = self._dense @ q
        if self.method == "dense":
            return dense
        if self.method == "hybrid":
            return minmax_fusion(dense, sparse, alpha=self.alpha)
        return rrf_fusion(rank_order(dense), rank_order(sparse), n=len(self.chunks_))

    def retrieve(self, statement: str, k: int | None = None) -> list:
        """The best ``k`` chunks for ``statement`` as :class:`Evidence`, best first."""
        s = self.scores(statement)
        order = rank_order(s)[: (k or self.k)]
        words = set(self._sparse._tokens(statement))
        return [Evidence(e.chunk, e.start, e.end, e.text, round(float(s[i]), 6),
                         round(len(words & self._stems[i]) / len(words), 6) if words else 0.0)
                for i in order for e in (self.chunks_[i],)]
