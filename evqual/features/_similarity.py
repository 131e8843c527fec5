"""Sentence-versus-chunk similarity, computed once per context and vectorised.

:class:`ContextIndex` tokenises a context's chunks once (content tokens) and
keeps per-chunk term statistics; :meth:`ContextIndex.match` then scores every
output sentence against every chunk in a few small matrix products.

Definitions (for sentence token multiset ``s`` and chunk ``c``; sets are the
distinct tokens; tokens of ``s`` absent from the whole context are *novel*):

* **Jaccard** ``|s & c| / |s | c|``.
* **recall** ``|s & c| / |s|`` and **precision** ``|s & c| / |c|``.
* **TF-IDF cosine**: raw term counts times scikit-learn's smooth IDF fitted on
  the context's chunks, ``ln((1 + C) / (1 + df)) + 1``; novel terms get the
  IDF of an unseen term, ``ln(1 + C) + 1``, so they lower the cosine.
* **BM25**: rank-bm25's ``BM25Okapi`` (k1=1.5, b=0.75, epsilon=0.25) over the
  chunks as documents and the sentence as the query.  ``bm25_scores`` gives
  exactly rank-bm25's scores (a test checks it).  For the *normalised* support
  the IDF is floored at ``1e-3`` (rank-bm25's epsilon floor can be negative
  for contexts of one or two chunks) and the best chunk's score is divided by
  the sentence's score against itself (the sentence taken as a document of the
  same corpus, novel terms at the IDF of an unseen term), then clipped to
  ``[0, 1]``: 1 means a chunk matches the sentence at least as well as the
  sentence itself would.

A sentence with no content token is vacuously supported: Jaccard, recall,
TF-IDF and BM25 support are all 1 and precision 0.  With no chunk (empty
context) every other sentence gets 0 and no nearest chunk (``-1``).
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict

import numpy as np
from scipy import sparse

from ..text import STOP_WORDS, context_number_values
from ..text._tokens import TOKEN_PATTERN

__all__ = ["ContextIndex", "SentenceMatch", "ContextCache", "BM25_K1", "BM25_B", "BM25_EPSILON"]

BM25_K1, BM25_B, BM25_EPSILON = 1.5, 0.75, 0.25
_IDF_FLOOR = 1e-3
_DENSE_LIMIT = 100_000  # C * V below which chunk matrices are kept dense
_TOKEN_RE = re.compile(TOKEN_PATTERN)


def split_tokens(text: str) -> tuple[list[str], int]:
    """Content tokens of ``text`` and the count of all its tokens."""
    toks = _TOKEN_RE.findall(text.lower())
    stop = STOP_WORDS
    return [t for t in toks if t not in stop], len(toks)


class ContextIndex:
    """Token statistics of one context's chunks.

    Parameters
    ----------
    chunk_texts : list of str
        The chunk texts, in order.

    Attributes
    ----------
    vocab : dict
        Content token to column index.
    n_chunks : int
    n_tokens : int
        All tokens (stop words included) over the chunks.
    numbers : set of str
        Number values present in the chunks
        (:func:`evqual.text.context_number_values`).
    """

    def __init__(self, chunk_texts):
        self.chunk_texts = list(chunk_texts)
        vocab: dict[str, int] = {}
        indptr, indices, data = [0], [], []
        dl, n_tokens = [], 0
        chunk_tokens: list[list[str]] = []
        all_context_tokens: list[str] = []
        stop = STOP_WORDS
        for text in self.chunk_texts:
            all_toks = _TOKEN_RE.findall(text.lower())
            toks = [t for t in all_toks if t not in stop]
            all_context_tokens.extend(all_toks)
            chunk_tokens.append(toks)
            n_tokens += len(all_toks)
            # Counter keeps first-appearance order, so ids and column order are as a token loop gives them
            counts = Counter(toks)
            for t in counts:
                if t not in vocab:
                    vocab[t] = len(vocab)
            indices.extend(vocab[t] for t in counts)
            data.extend(counts.values())
            indptr.append(len(indices))
            dl.append(len(toks))
        C, V = len(self.chunk_texts), len(vocab)
        self.vocab, self.n_chunks, self.n_tokens = vocab, C, n_tokens
        self.doc_len = np.asarray(dl, dtype=np.float64)
        self.avgdl = float(self.doc_len.sum() / C) if C else 0.0
        self._avgdl_safe = self.avgdl if self.avgdl > 0 else 1.0
        rows = np.repeat(np.arange(C), np.diff(indptr))
        cols = np.asarray(indices, dtype=np.int64)
        vals = np.asarray(data, dtype=np.float64)
        self._coo = (rows, cols, vals)
        self.chunk_uniq = np.diff(np.asarray(indptr)).astype(np.float64)
        df = np.bincount(cols, minlength=V).astype(np.float64)
        # TF-IDF: scikit-learn smooth idf, raw tf, rows L2-normalised
        self.idf_tfidf = np.log((1.0 + C) / (1.0 + df)) + 1.0
        self.idf_tfidf_novel = math.log(1.0 + C) + 1.0
        w = vals * self.idf_tfidf[cols]
        norms = np.sqrt(np.bincount(rows, weights=w * w, minlength=C))
        norms[norms == 0] = 1.0
        tfidf_vals = w / norms[rows]
        # BM25Okapi statistics (rank-bm25), idf floored for normalisation
        if V:
            idf = np.log(C - df + 0.5) - np.log(df + 0.5)
            eps = BM25_EPSILON * float(idf.sum() / V)
            idf = np.where(idf < 0, eps, idf)
        else:
            idf = np.zeros(0)
        self.idf_bm25 = idf
        self.idf_bm25_floored = np.maximum(idf, _IDF_FLOOR)
        self.idf_bm25_novel = math.log(C + 0.5) - math.log(0.5)
        k_c = BM25_K1 * (1 - BM25_B + BM25_B * self.doc_len / self._avgdl_safe)
        bm25_vals = self.idf_bm25_floored[cols] * vals * (BM25_K1 + 1) / (vals + k_c[rows])
        if C * V <= _DENSE_LIMIT:
            mats = []
            for v in (np.ones_like(vals), tfidf_vals, bm25_vals):
                m = np.zeros((C, V))
                m[rows, cols] = v
                mats.append(m)
            self._mats = tuple(mats)
            self._dense = True
        else:
            self._mats = tuple(sparse.csc_matrix((v, (rows, cols)), shape=(C, V))
                               for v in (np.ones_like(vals), tfidf_vals, bm25_vals))
            self._dense = False
        # one pass over the chunks joined by new lines (no number spans a chunk boundary that way);
        # per-chunk sets are computed only when a numeric-conflict check needs them
        self.numbers: set[str] = context_number_values("\n".join(self.chunk_texts), all_context_tokens)
        self._chunk_numbers: dict[int, set[str]] = {}
        self.chunk_tokens = chunk_tokens
        self._bigrams = None
        self._fields = None
        self._negation: dict[int, tuple] = {}

    @property
    def bigrams(self) -> set:
        """Adjacent content-token pairs of every chunk (computed on first use)."""
        if self._bigrams is None:
            self._bigrams = {p for toks in self.chunk_tokens for p in zip(toks, toks[1:])}
        return self._bigrams

    @property
    def fields(self):
        """``(fields, keys)`` of :func:`evqual.features._structure.parse_fields` (computed on first use)."""
        if self._fields is None:
            from ._structure import parse_fields

            self._fields = parse_fields(self.chunk_texts)
        return self._fields

    def chunk_negation(self, k: int) -> tuple[bool, set]:
        """Whether chunk ``k`` has a negation cue, and its content-token set."""
        got = self._negation.get(k)
        if got is None:
            from ._structure import NEGATION_RE

            got = self._negation[k] = (NEGATION_RE.search(self.chunk_texts[k]) is not None,
                                       set(self.chunk_tokens[k]))
        return got

    def chunk_numbers(self, k: int) -> set[str]:
        """Number values of chunk ``k`` (computed on first use)."""
        got = self._chunk_numbers.get(k)
        if got is None:
            got = self._chunk_numbers[k] = context_number_values(self.chunk_texts[k])
        return got

    def _columns(self, cols: np.ndarray):
        if self._dense:
            return tuple(m[:, cols] for m in self._mats)
        return tuple(m[:, cols].toarray() for m in self._mats)

    def bm25_scores(self, query_tokens) -> np.ndarray:
        """rank-bm25 ``BM25Okapi.get_scores`` for a token list, vectorised.

        Examples
        --------
        >>> idx = ContextIndex(["paris is in france", "berlin is in germany", "rome is in italy"])
        >>> idx.bm25_scores(["paris"]).round(3).tolist()
        [0.511, 0.0, 0.0]
        """
        scores = np.zeros(self.n_chunks)
        if not self.n_chunks:
            return scores
        k_c = BM25_K1 * (1 - BM25_B + BM25_B * self.doc_len / self._avgdl_safe)
        rows, cols, vals = self._coo
        for q in query_tokens:
            j = self.vocab.get(q)
            if j is None:
                continue
            col = np.zeros(self.n_chunks)
            sel = cols == j
            col[rows[sel]] = vals[sel]
            scores += self.idf_bm25[j] * (col * (BM25_K1 + 1) / (col + k_c))
        return scores

    def match(self, sentences_tokens) -> "SentenceMatch":
        """Score each sentence (a list of content tokens) against every chunk."""
        return SentenceMatch(self, sentences_tokens)


class SentenceMatch:
    """Per-sentence evidence measures against one :class:`ContextIndex`.

    Attributes (arrays of length S = number of sentences)
    ------------------------------------------------------
    nearest : int array
        Index of the nearest chunk (highest TF-IDF cosine, first on ties;
        ``-1`` with no chunk).
    jaccard, recall, precision, tfidf, bm25, support : float arrays
        See the module docstring; ``recall`` and ``precision`` are against the
        nearest chunk, ``support`` against the whole context.
    n_content : float array
        Distinct content tokens per sentence.
    """

    def __init__(self, index: ContextIndex, sentences_tokens):
        S = len(sentences_tokens)
        C = index.n_chunks
        vocab = index.vocab
        # local columns: context terms first (in order of appearance), novel terms after
        lengths = [len(toks) for toks in sentences_tokens]
        flat_toks = [t for toks in sentences_tokens for t in toks]
        ids = np.array([vocab.get(t, -1) for t in flat_toks], dtype=np.int64)
        rows = np.repeat(np.arange(S, dtype=np.int64), lengths)
        is_known = ids >= 0
        # context terms: local columns in vocabulary order; novel terms after them
        known_ids = ids[is_known]
        cols = np.unique(known_ids)
        k_local = np.searchsorted(cols, known_ids)
        u = len(cols)
        novel_list = [t for t, j in zip(flat_toks, ids.tolist()) if j < 0]
        novel_cols = {t: i for i, t in enumerate(dict.fromkeys(novel_list))}
        nv = len(novel_cols)
        width = u + nv
        local = np.empty(len(flat_toks), dtype=np.int64)
        local[is_known] = k_local
        local[~is_known] = np.array([novel_cols[t] for t in novel_list], dtype=np.int64) + u
        Q = np.bincount(rows * width + local, minlength=S * width).astype(np.float64).reshape(S, width)
        self._sentences_tokens = sentences_tokens
        self._vocab = vocab
        present = Q > 0
        n_uniq = present.sum(axis=1).astype(np.float64)
        n_known = present[:, :u].sum(axis=1).astype(np.float64)
        self.n_content = n_uniq
        empty = n_uniq == 0
        safe_n = np.maximum(n_uniq, 1.0)
        self.support = np.where(empty, 1.0, n_known / safe_n)
        if C == 0:
            zeros = np.where(empty, 1.0, 0.0)
            self.nearest = np.full(S, -1, dtype=np.int64)
            self.jaccard = self.recall = self.tfidf = self.bm25 = zeros
            self.precision = np.zeros(S)
            return
        Bsub, Tsub, Msub = index._columns(cols)
        Qk = Q[:, :u]
        inter = present[:, :u].astype(np.float64) @ Bsub.T  # S x C
        union = n_uniq[:, None] + index.chunk_uniq[None, :] - inter
        jac = inter / np.maximum(union, 1.0)
        # TF-IDF cosine; novel terms count in the sentence norm only
        idf_t = np.concatenate([index.idf_tfidf[cols], np.full(nv, index.idf_tfidf_novel)])
        qw = Q * idf_t
        snorm = np.sqrt((qw * qw).sum(axis=1))
        cos = (qw[:, :u] @ Tsub.T) / np.maximum(snorm, 1e-12)[:, None]
        nearest = np.argmax(cos, axis=1)
        best_cos = cos[np.arange(S), nearest]
        no_cos = best_cos <= 0  # no shared term: rank by Jaccard (first on ties)
        if no_cos.any():
            nearest = np.where(no_cos, np.argmax(jac, axis=1), nearest)
        ar = np.arange(S)
        inter_n = inter[ar, nearest]
        cu = index.chunk_uniq[nearest]
        self.recall = np.where(empty, 1.0, inter_n / safe_n)
        self.precision = np.where(empty | (cu == 0), 0.0, inter_n / np.maximum(cu, 1.0))
        # BM25: best chunk score over the sentence's score against itself
        best = (Qk @ Msub.T).max(axis=1)
        len_s = Q.sum(axis=1)
        k_s = BM25_K1 * (1 - BM25_B + BM25_B * len_s / index._avgdl_safe)
        idf_b = np.concatenate([index.idf_bm25_floored[cols], np.full(nv, index.idf_bm25_novel)])
        self_score = (Q * idf_b * Q * (BM25_K1 + 1) / (Q + k_s[:, None])).sum(axis=1)
        bm25 = np.where(empty, 1.0, best / np.maximum(self_score, 1e-12))
        self.nearest = nearest
        self.jaccard = np.where(empty, 1.0, jac.max(axis=1))
        self.tfidf = np.where(empty, 1.0, np.clip(best_cos, 0.0, 1.0))
        self.bm25 = np.clip(bm25, 0.0, 1.0)


    @property
    def novel_tokens(self) -> list[list[str]]:
        """Per sentence, its distinct content tokens absent from the context (in order)."""
        vocab = self._vocab
        return [list(dict.fromkeys(t for t in toks if t not in vocab)) for toks in self._sentences_tokens]


class ContextCache:
    """A small LRU cache of :class:`ContextIndex` keyed by context and chunk offsets.

    Responses to the same source share their context (six per source in
    RAGTruth), so indexing each context once saves most of the work.
    """

    def __init__(self, maxsize: int = 64):
        self.maxsize = maxsize
        self._items: OrderedDict = OrderedDict()

    def get(self, example) -> ContextIndex:
        key = (example.context, tuple((c.start, c.end) for c in example.chunks))
        idx = self._items.get(key)
        if idx is not None:
            self._items.move_to_end(key)
            return idx
        idx = ContextIndex(example.chunk_texts)
        self._items[key] = idx
        if len(self._items) > self.maxsize:
            self._items.popitem(last=False)
        return idx
