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

from .._deadline import check_deadline
from .._gcpause import untrack_atomic
from ..text import STOP_WORDS, US_STATES, context_number_values
from ..text import TOKEN_PATTERN, TextWords


__all__ = ["ContextIndex", "SentenceMatch", "ContextCache", "BM25_K1", "BM25_B", "BM25_EPSILON"]


def _sparse():
    """scipy.sparse, imported on first use: only the large inputs' paths need it, and importing it costs a
    scoring process a fifth of a second at start-up (issue 41)."""
    from scipy import sparse

    return sparse


BM25_K1, BM25_B, BM25_EPSILON = 1.5, 0.75, 0.25
_IDF_FLOOR = 1e-3
_DENSE_LIMIT = 100_000  # C * V below which chunk matrices are kept dense
_TOKEN_RE = re.compile(TOKEN_PATTERN)
# two capitals standing alone, "(?<![\w.])[A-Z]{2}(?![\w.])", written to start with a character class (re skips to
# the next capital instead of testing the look-behind at every position; the same matches: tests/test_fastpaths.py)
_STATE_CODE_RE = re.compile(r"[A-Z](?<![\w.][A-Z])[A-Z](?![\w.])")


def context_aliases(chunk_texts) -> frozenset:
    """Words a context supports without writing them: the names of the US states it writes as postal
    codes ("state: TX" supports "Texas"; :data:`evqual.text.US_STATES`), lower case, stop words left out.

    >>> sorted(context_aliases(["city: Austin", "state: TX"]))
    ['texas']
    """
    out = set()
    for text in chunk_texts:
        for code in _STATE_CODE_RE.findall(text):
            name = US_STATES.get(code)
            if name:
                out.update(t for t in name.lower().split() if t not in STOP_WORDS)
    return frozenset(out)


def split_tokens(text: str) -> tuple[list[str], int]:
    """Content tokens of ``text`` and the count of all its tokens."""
    return content_split(_TOKEN_RE.findall(text.lower()))


def content_split(toks: list) -> tuple[list[str], int]:
    """The content tokens of ``toks`` (lower-case tokens; stop words left out) and how many ``toks`` are."""
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
        self.chunk_words = [TextWords(t) for t in self.chunk_texts]
        """Each chunk's words (:class:`~evqual.text.TextWords`), found once for every reader of the context."""
        vocab: dict[str, int] = {}
        indptr, indices, data = [0], [], []
        dl, n_tokens = [], 0
        chunk_tokens: list[list[str]] = []
        context_words: set[str] = set()  # distinct tokens, stop words included (spelled-out numbers)
        canon: dict[str, str] = {}  # one string object per distinct token, however often it occurs
        intern = canon.setdefault
        stop = STOP_WORDS
        for words in self.chunk_words:
            check_deadline()
            all_toks = words.lower_tokens()
            toks = [intern(t, t) for t in all_toks if t not in stop]
            context_words.update(all_toks)
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
        self._term_chunk = None
        if C * V <= _DENSE_LIMIT:
            mats = []
            for v in (np.ones_like(vals), tfidf_vals, bm25_vals):
                m = np.zeros((C, V))
                m[rows, cols] = v
                mats.append(m)
            self._mats = tuple(mats)
            self._dense = True
            self._entry_values = (np.ones_like(vals), tfidf_vals, bm25_vals)
        else:
            self._mats = tuple(_sparse().csc_matrix((v, (rows, cols)), shape=(C, V))
                               for v in (np.ones_like(vals), tfidf_vals, bm25_vals))
            self._dense = False
            # a chunks x terms CSC matrix is, transposed, the terms x chunks CSR one (shared arrays)
            self._term_chunk = tuple(m.T for m in self._mats)
        # one pass over the chunks joined by new lines (no number spans a chunk boundary that way);
        # per-chunk sets are computed only when a numeric-conflict check needs them
        self.numbers: set[str] = context_number_values("\n".join(self.chunk_texts), context_words)
        self._chunk_numbers: dict[int, set[str]] = {}
        self.chunk_tokens = chunk_tokens
        self._bigrams = None
        self._fields = None
        self._field_lookup = None
        self._evidence_units = None
        self._evidence_index = None
        self.kept = True
        """False when a :class:`ContextCache` indexed the context without keeping it (too large)."""
        self._stem_vocab = None
        self._negation: dict[int, tuple] = {}
        self.aliases = context_aliases(self.chunk_texts)
        """Words the context supports without writing them (:func:`context_aliases`); not in ``vocab``,
        so they weigh in no BM25 or TF-IDF score, only in the support of names and novel words."""

    @property
    def bigrams(self) -> frozenset:
        """Adjacent content-token pairs of every chunk (computed on first use; a frozenset of tuples of strings,
        which the garbage collector need not walk for as long as the context is cached)."""
        if self._bigrams is None:
            self._bigrams = frozenset([p for toks in self.chunk_tokens for p in zip(toks, toks[1:])])
            untrack_atomic((self._bigrams,))
        return self._bigrams

    @property
    def stem_vocab(self) -> frozenset:
        """Snowball stems of :attr:`vocab` and :attr:`aliases` (computed on first use): "sources" is not
        novel against "source", "Texas" not against "state: TX"."""
        if self._stem_vocab is None:
            from ._checks import stem

            self._stem_vocab = frozenset(map(stem, self.vocab)) | frozenset(map(stem, self.aliases))
        return self._stem_vocab

    @property
    def fields(self):
        """``(fields, keys)`` of :func:`evqual.features._structure.parse_fields` (computed on first use)."""
        if self._fields is None:
            from ._structure import parse_fields

            self._fields = parse_fields(self.chunk_texts)
        return self._fields

    @property
    def field_lookup(self) -> dict:
        """:func:`evqual.features._structure.field_lookup` of :attr:`fields` (computed on first use)."""
        if self._field_lookup is None:
            from ._structure import field_lookup

            self._field_lookup = field_lookup(self.fields[0])
        return self._field_lookup

    def release_readers(self) -> None:
        """Drop the checks' evidence units and the engine's reading (rebuilt if asked for again).

        The cache calls it when it lets a context go, and :func:`~evqual.features.analyze` when the context
        was too large to keep: an analysis keeps its ``ContextIndex`` for the explanations, which read
        neither, so that the two largest views of a context live no longer than the cache keeps it."""
        self._evidence_units = None
        self._evidence_index = None

    @property
    def evidence_index(self):
        """The evidence engine's reading of the context (:class:`evqual.evidence.EvidenceIndex`, built on first
        use from :attr:`chunk_words`): kept here, with every other reader's view of the context, so that one
        cache holds one analysis per context."""
        if self._evidence_index is None:
            from ..evidence import EvidenceIndex

            self._evidence_index = EvidenceIndex(self.chunk_texts, words=self.chunk_words)
        return self._evidence_index

    @property
    def evidence_units(self):
        """The context's checkable items for the ``check`` family (:class:`~evqual.features._checks.EvidenceUnits`,
        built on first use)."""
        if self._evidence_units is None:
            from ._checks import EvidenceUnits

            self._evidence_units = EvidenceUnits(self.chunk_texts, words=self.chunk_words)
        return self._evidence_units

    def chunk_negation(self, k: int) -> tuple[bool, set]:
        """Whether chunk ``k`` has a negation cue, and its content-token set."""
        got = self._negation.get(k)
        if got is None:
            from ._structure import has_negation

            got = self._negation[k] = (has_negation(self.chunk_texts[k]),
                                       set(self.chunk_tokens[k]))
        return got

    def chunk_numbers(self, k: int) -> set[str]:
        """Number values of chunk ``k`` (computed on first use)."""
        got = self._chunk_numbers.get(k)
        if got is None:
            got = self._chunk_numbers[k] = context_number_values(self.chunk_texts[k])
        return got

    @property
    def term_chunk(self) -> tuple:
        """``(binary, tfidf, bm25)`` term x chunk CSR matrices (V x C).

        For a large context these are the transposes of the chunk x term
        matrices (no copy); for a small one they are built on first use.

        Row ``j`` lists the chunks holding term ``j`` (its postings) with the
        chunk-side values of each measure; the sparse path of
        :class:`SentenceMatch` multiplies sentence-term rows by them.
        """
        if self._term_chunk is None:
            rows, cols, _ = self._coo
            shape = (len(self.vocab), self.n_chunks)
            order = np.lexsort((rows, cols))  # by term, then chunk: CSR order without duplicates
            indptr = np.zeros(shape[0] + 1, dtype=np.int64)
            np.cumsum(np.bincount(cols, minlength=shape[0]), out=indptr[1:])
            self._term_chunk = tuple(_sparse().csr_matrix((v[order], rows[order], indptr), shape=shape)
                                     for v in self._entry_values)
        return self._term_chunk

    @property
    def chunk_term(self) -> tuple:
        """``(binary, tfidf, bm25)`` chunk x term CSR matrices (C x V): :attr:`term_chunk` transposed (made
        on first use, for the sparse path's largest inputs)."""
        got = getattr(self, "_chunk_term", None)
        if got is None:
            got = self._chunk_term = tuple(m.T.tocsr() for m in self.term_chunk)
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

    Notes
    -----
    Two evaluation paths compute the same measures.  Small inputs (every
    dense sentences x terms, sentences x chunks and chunks x terms matrix at
    most :data:`DENSE_CELLS` cells: every RAGTruth answer) use dense numpy
    products, as evqual always has, so the values the shipped models were
    trained on are kept bit for bit.  Larger inputs use a sparse
    sentence-term matrix (never sentences x vocabulary) and sparse products
    against the context's term-chunk matrices, a block of sentences at a
    time, keeping only the per-sentence results: time and memory grow with
    the tokens and the (sentence, chunk) pairs that share a term.  The two
    paths agree up to rounding in the last bits of sums (a dense BLAS
    product's summation order depends on the matrices' shapes; the sparse
    path adds each sentence's terms in a fixed order).

    Beyond :data:`EXACT_PAIRS` (sentence, chunk) pairs sharing a term (tens of
    thousands of sentences against tens of thousands of passages), comparing
    every pair would cost time in proportion to their product; the pairs then
    come from the rarer terms only (a pair sharing only words that most
    passages hold is not compared), while every pair compared gets its exact
    value over all the terms it shares.  Time then grows with sentences plus
    passages.
    """

    def __init__(self, index: ContextIndex, sentences_tokens):
        S = len(sentences_tokens)
        C = index.n_chunks
        vocab = index.vocab
        self._sentences_tokens = sentences_tokens
        self._vocab = vocab
        self._novel = None
        # local columns: context terms first (in vocabulary order), novel terms after (first appearance)
        lengths = [len(toks) for toks in sentences_tokens]
        flat_toks = [t for toks in sentences_tokens for t in toks]
        ids = np.fromiter((vocab.get(t, -1) for t in flat_toks), dtype=np.int64, count=len(flat_toks))
        rows = np.repeat(np.arange(S, dtype=np.int64), lengths)
        is_known = ids >= 0
        known_ids = ids[is_known]
        # np.unique's values, by a sort and a mask (np.unique imports numpy.ma on its first call, 18 ms of
        # a process's first score; with an inverse it costs more per answer than this)
        cols = np.sort(known_ids)
        distinct = np.empty(len(cols), dtype=bool)
        distinct[:1] = True
        np.not_equal(cols[1:], cols[:-1], out=distinct[1:])
        cols = cols[distinct]
        k_local = np.searchsorted(cols, known_ids)
        u = len(cols)
        novel_list = [t for t, j in zip(flat_toks, ids.tolist()) if j < 0]
        novel_cols = {t: i for i, t in enumerate(dict.fromkeys(novel_list))}
        nv = len(novel_cols)
        width = u + nv
        local = np.empty(len(flat_toks), dtype=np.int64)
        local[is_known] = k_local
        local[~is_known] = np.fromiter((novel_cols[t] for t in novel_list), dtype=np.int64,
                                       count=len(novel_list)) + u
        if S * width <= DENSE_CELLS and S * C <= DENSE_CELLS and C * u <= DENSE_CELLS:
            self._dense(index, S, C, rows, local, cols, u, nv, width)
        else:
            self._sparse(index, S, C, rows, local, cols, u, nv, width)

    # ------------------------------------------------------------------ small inputs: dense products
    def _dense(self, index, S, C, rows, local, cols, u, nv, width):
        Q = np.bincount(rows * width + local, minlength=S * width).astype(np.float64).reshape(S, width)
        present = Q > 0
        n_uniq = present.sum(axis=1).astype(np.float64)
        n_known = present[:, :u].sum(axis=1).astype(np.float64)
        self.n_content = n_uniq
        empty = n_uniq == 0
        safe_n = np.maximum(n_uniq, 1.0)
        self.support = np.where(empty, 1.0, n_known / safe_n)
        if C == 0:
            self._no_chunk(S, empty)
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
        # BM25: best chunk score over the sentence's score against itself
        best = (Qk @ Msub.T).max(axis=1)
        len_s = Q.sum(axis=1)
        k_s = BM25_K1 * (1 - BM25_B + BM25_B * len_s / index._avgdl_safe)
        idf_b = np.concatenate([index.idf_bm25_floored[cols], np.full(nv, index.idf_bm25_novel)])
        self_score = (Q * idf_b * Q * (BM25_K1 + 1) / (Q + k_s[:, None])).sum(axis=1)
        self._finish(index, empty, safe_n, nearest, inter_n, jac.max(axis=1), best_cos, best, self_score)

    # ------------------------------------------------------------------ large inputs: sparse, in blocks
    def _sparse(self, index, S, C, rows, local, cols, u, nv, width):
        # one entry per (sentence, distinct term), sorted by sentence then local column: the CSR layout
        keys, counts = np.unique(rows * width + local, return_counts=True)
        e_row, e_col = keys // width, keys % width
        q = counts.astype(np.float64)
        n_uniq = np.bincount(e_row, minlength=S).astype(np.float64)
        known = e_col < u
        n_known = np.bincount(e_row[known], minlength=S).astype(np.float64)
        self.n_content = n_uniq
        empty = n_uniq == 0
        safe_n = np.maximum(n_uniq, 1.0)
        self.support = np.where(empty, 1.0, n_known / safe_n)
        if C == 0:
            self._no_chunk(S, empty)
            return
        k_term = cols[e_col[known]]  # vocabulary id of each known entry
        idf_t = np.full(len(q), index.idf_tfidf_novel)
        idf_t[known] = index.idf_tfidf[k_term]
        qw = q * idf_t
        # per-row sums add each sentence's terms in column order
        snorm = np.sqrt(np.bincount(e_row, weights=qw * qw, minlength=S))
        len_s = np.bincount(e_row, weights=q, minlength=S)
        k_s = BM25_K1 * (1 - BM25_B + BM25_B * len_s / index._avgdl_safe)
        idf_b = np.full(len(q), index.idf_bm25_novel)
        idf_b[known] = index.idf_bm25_floored[k_term]
        self_score = np.bincount(e_row, weights=q * idf_b * q * (BM25_K1 + 1) / (q + k_s[e_row]), minlength=S)
        nearest = np.zeros(S, dtype=np.int64)
        inter_n, jac_max = np.zeros(S), np.zeros(S)
        best_cos, best = np.zeros(S), np.zeros(S)
        # sentence-term matrices over the context vocabulary (known terms only), CSR
        k_row = e_row[known]
        indptr = np.zeros(S + 1, dtype=np.int64)
        np.cumsum(np.bincount(k_row, minlength=S), out=indptr[1:])
        data = (np.ones(len(k_row)), qw[known], q[known])
        TB, TT, TM = index.term_chunk
        # blocks of sentences whose (sentence, chunk) pairs stay under a budget
        postings = np.diff(TB.indptr)[k_term].astype(np.float64)
        # above EXACT_PAIRS pairs in all, the pairs come from the rarer terms only (see the class notes)
        pairing = _pairing_terms(postings)
        common = None if pairing is None else ~pairing
        if pairing is not None:
            chunk_term = index.chunk_term
        cost_w = postings if pairing is None else np.where(pairing, postings, 0.0)
        cost = np.concatenate([[0.0], np.cumsum(np.bincount(k_row, weights=cost_w, minlength=S) + 1.0)])
        V = len(index.vocab)
        r0 = 0
        while r0 < S:
            check_deadline()
            r1 = int(np.searchsorted(cost, cost[r0] + _PAIR_BUDGET, side="right")) - 1
            r1 = min(max(r1, r0 + 1), S)
            a, b = int(indptr[r0]), int(indptr[r1])
            if b > a:
                n = r1 - r0
                shape = (n, V)
                if pairing is None:
                    ptr = indptr[r0:r1 + 1] - a
                    inter, cnum, bm = _sorted_alike(
                        [_sparse().csr_matrix((d[a:b], k_term[a:b], ptr), shape=shape) @ m
                         for d, m in zip(data, (TB, TT, TM))])
                else:
                    inter, cnum, bm = _paired_block(data, k_row, k_term, pairing[a:b], common[a:b], a, b, r0, n,
                                                    shape, (TB, TT, TM), chunk_term)
                # every product is positive exactly where a sentence and a chunk share a term: one pattern
                if not (np.array_equal(cnum.indices, inter.indices) and np.array_equal(bm.indices, inter.indices)):
                    raise AssertionError("sparse products of one block differ in pattern")
                e_r = np.repeat(np.arange(n), np.diff(inter.indptr))
                g = e_r + r0
                iv = inter.data
                cos = cnum.data / np.maximum(snorm[g], 1e-12)
                jac = iv / np.maximum(n_uniq[g] + index.chunk_uniq[inter.indices] - iv, 1.0)
                mx, pos = _row_max_first(inter.indptr, cos, n)
                hit = pos >= 0
                best_cos[r0:r1] = mx
                nearest[r0:r1][hit] = inter.indices[pos[hit]]
                inter_n[r0:r1][hit] = iv[pos[hit]]
                jac_max[r0:r1] = _row_max_first(inter.indptr, jac, n)[0]
                best[r0:r1] = _row_max_first(bm.indptr, bm.data, n)[0]
            r0 = r1
        self._finish(index, empty, safe_n, nearest, inter_n, jac_max, best_cos, best, self_score)

    # ------------------------------------------------------------------ shared
    def _no_chunk(self, S, empty):
        zeros = np.where(empty, 1.0, 0.0)
        self.nearest = np.full(S, -1, dtype=np.int64)
        self.jaccard = self.recall = self.tfidf = self.bm25 = zeros
        self.precision = np.zeros(S)

    def _finish(self, index, empty, safe_n, nearest, inter_n, jac_max, best_cos, best, self_score):
        cu = index.chunk_uniq[nearest]
        self.recall = np.where(empty, 1.0, inter_n / safe_n)
        self.precision = np.where(empty | (cu == 0), 0.0, inter_n / np.maximum(cu, 1.0))
        bm25 = np.where(empty, 1.0, best / np.maximum(self_score, 1e-12))
        self.nearest = nearest
        self.jaccard = np.where(empty, 1.0, jac_max)
        self.tfidf = np.where(empty, 1.0, np.clip(best_cos, 0.0, 1.0))
        self.bm25 = np.clip(bm25, 0.0, 1.0)

    @property
    def novel_tokens(self) -> list[list[str]]:
        """Per sentence, its distinct content tokens absent from the context (in order)."""
        if self._novel is None:
            vocab = self._vocab
            self._novel = [list(dict.fromkeys(t for t in toks if t not in vocab))
                           for toks in self._sentences_tokens]
        return self._novel


DENSE_CELLS = 1 << 18
"""Largest dense matrix (cells) :class:`SentenceMatch` builds; larger inputs take the sparse path."""

_PAIR_BUDGET = 1 << 20  # (sentence, chunk) pairs per block of the sparse path (a few tens of MB at most)
EXACT_PAIRS = 1 << 25
"""(sentence, chunk) pairs sharing a term up to which :class:`SentenceMatch` compares every such pair; above
(tens of thousands of sentences against tens of thousands of passages), pairs come from the rarer terms only."""


def _pairing_terms(postings: np.ndarray):
    """Which (sentence, term) entries make (sentence, chunk) pairs: all (``None``) when their postings add up
    to at most :data:`EXACT_PAIRS`, else those of the rarest terms whose postings fit in it."""
    total = float(postings.sum())
    if total <= EXACT_PAIRS:
        return None
    df = np.sort(postings)
    k = int(np.searchsorted(np.cumsum(df), EXACT_PAIRS, side="right"))
    limit = df[k - 1] if k > 0 else 0.0
    return postings <= limit


def _paired_block(data, k_row, k_term, pairing, common, a, b, r0, n, shape, term_chunk, chunk_term):
    """The three products of one block when pairs come from the rarer terms: the pairs (and their values
    over those terms) from the rarer terms' products, plus the common terms' part of each pair's value,
    gathered pair by pair (so each pair's value is over all the terms it shares)."""
    rows = k_row[a:b] - r0
    cols = k_term[a:b]
    out = []
    for d, m in zip(data, term_chunk):
        vals = d[a:b]
        rare = _sparse().csr_matrix((vals[pairing], (rows[pairing], cols[pairing])), shape=shape)
        out.append(rare @ m)
    out = _sorted_alike(out)
    if common.any():
        pattern = out[0]
        pr = np.repeat(np.arange(n), np.diff(pattern.indptr))
        pc = pattern.indices
        for prod, d, ct in zip(out, data, chunk_term):
            vals = d[a:b]
            part = _sparse().csr_matrix((vals[common], (rows[common], cols[common])), shape=shape)
            extra = np.asarray(part[pr].multiply(ct[pc]).sum(axis=1)).ravel()
            prod.data = prod.data + extra
    return out


def _sorted(m):
    """``m`` as CSR with sorted column indices (scipy's product leaves rows unsorted)."""
    m = m.tocsr()
    m.sort_indices()
    return m


def _sorted_alike(prods: list) -> list:
    """:func:`_sorted` of each of a block's three products, with one sort.  Their patterns are one (a sentence
    and a chunk share a term), and scipy's product lays out equal patterns in one order: scipy sorts the
    entries' positions (``0 .. nnz-1`` as values, exact in floats) once, and each product's values are
    gathered in that order (the per-row sorts were a seventh of a 10k x 10k case, issue 41).  Products laid
    out differently are sorted one by one."""
    prods = [m.tocsr() for m in prods]
    first = prods[0]
    if not all(np.array_equal(m.indptr, first.indptr) and np.array_equal(m.indices, first.indices)
               for m in prods[1:]):
        return [_sorted(m) for m in prods]
    if first.has_sorted_indices:
        return prods
    # (the first product's column indices are sorted in place here, and become every product's)
    order = _sparse().csr_matrix((np.arange(first.nnz, dtype=np.float64), first.indices, first.indptr),
                                 shape=first.shape, copy=False)
    order.sort_indices()
    indices, perm = order.indices, order.data.astype(np.int64)
    del order
    for m in prods:  # one product at a time: at most two arrays of nnz numbers more than before
        m.data = m.data[perm]
        m.indices = indices
        m.has_sorted_indices = True
    return prods


def _row_max_first(indptr, values, n):
    """Per row of a CSR matrix with sorted columns: the largest value and the entry of its first column.

    Empty rows get maximum 0 and entry ``-1``.  Stored values are positive,
    so taking the first stored column of the maximum is what ``argmax`` over
    the dense row gives (and an empty row's ``argmax`` is column 0).
    """
    counts = np.diff(indptr)
    nz = counts > 0
    mx = np.zeros(n)
    pos = np.full(n, -1, dtype=np.int64)
    if not nz.any():
        return mx, pos
    starts = indptr[:-1][nz]
    mx[nz] = np.maximum.reduceat(values, starts)
    e_r = np.repeat(np.arange(n), counts)
    entry = np.where(values == mx[e_r], np.arange(len(values)), np.iinfo(np.int64).max)
    pos[nz] = np.minimum.reduceat(entry, starts)
    return mx, pos


class ContextCache:
    """A small LRU cache of :class:`ContextIndex` keyed by context and chunk offsets.

    Responses to the same source share their context (six per source in
    RAGTruth), so indexing each context once saves most of the work.

    Parameters
    ----------
    maxsize : int, default=64
        Contexts kept, at most.
    max_chars : int or None, default=None
        Total characters of the contexts kept, at most (``None``: no bound);
        a context longer than this alone is indexed and not kept.
    """

    def __init__(self, maxsize: int = 64, max_chars: int | None = None):
        self.maxsize = maxsize
        self.max_chars = max_chars
        self._items: OrderedDict = OrderedDict()
        self._chars = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, example) -> ContextIndex:
        key = (example.context, tuple((c.start, c.end) for c in example.chunks))
        idx = self._items.get(key)
        if idx is not None:
            self._items.move_to_end(key)
            return idx
        idx = ContextIndex(example.chunk_texts)
        size = len(example.context)
        if self.max_chars is not None and size > self.max_chars:
            idx.kept = False
            return idx
        self._items[key] = idx
        self._chars += size
        while len(self._items) > self.maxsize or (self.max_chars is not None and self._chars > self.max_chars):
            old, evicted = self._items.popitem(last=False)
            self._chars -= len(old[0])
            evicted.release_readers()
        return idx
