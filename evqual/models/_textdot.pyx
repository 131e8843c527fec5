# cython: language_level=3, boundscheck=True, wraparound=False
"""The compiled text model of :mod:`evqual.models._fasttrees` (issue 41): one answer's TF-IDF vector times a
logistic regression's coefficients, without making its terms.

scikit-learn's word analyser with the default token pattern ``(?u)\\b\\w\\w+\\b`` finds the maximal runs of
``re``'s word characters (``Py_UNICODE_ISALNUM`` or ``_``) two or more long, after lower-casing the text; its
bigrams are two such tokens joined by a space.  :class:`TermIndex` numbers every word of the vocabulary's terms
once, in a hash table of its own: a token is looked up by its characters where the text holds them (no str is
made for it) and a bigram as a pair of numbers (no joined str, no ``Counter``).  The arithmetic is
:func:`~evqual.models._fasttrees._tfidf_dot`'s, in its order: the counts in column order, ``log(tf) + 1`` read
from a table numpy computed (its ``log`` and libm's may differ in the last bit), times the IDF, the squares
added one after another, divided by their root, then the products with the coefficients added one after
another, plus the intercept: the same float (``tests/test_textdot.py``).  Without a compiler the Python path
runs instead.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport Py_UNICODE_ISALNUM
from libc.math cimport sqrt
from libc.stdint cimport uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memset

import numpy as np

LOG_TF_MAX = 4096
"""Term counts up to this read ``log(tf) + 1`` from the table; an answer with a term counted more often takes
the Python path."""

cdef uint64_t _FNV_OFFSET = 14695981039346656037ULL
cdef uint64_t _FNV_PRIME = 1099511628211ULL
cdef uint64_t _EMPTY = 0xFFFFFFFFFFFFFFFFULL


cdef inline bint _word_char(Py_UCS4 c):
    """``re``'s ``\\w`` in a str pattern: ``Py_UNICODE_ISALNUM`` or the underscore (ASCII decided inline)."""
    if c < 128:
        return (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or (c >= 48 and c <= 57) or c == 95
    return Py_UNICODE_ISALNUM(c)


cdef inline uint64_t _hash(str s, Py_ssize_t a, Py_ssize_t b):
    """FNV-1a over the code points of ``s[a:b]``."""
    cdef uint64_t h = _FNV_OFFSET
    cdef Py_ssize_t i
    for i in range(a, b):
        h = (h ^ <uint64_t> s[i]) * _FNV_PRIME
    return h if h != _EMPTY else 0  # (all ones marks an empty slot)


cdef inline Py_ssize_t _slot(uint64_t h, Py_ssize_t mask):
    """A table slot of hash ``h``: splitmix64's finaliser spreads every bit of ``h`` over the slot's bits (FNV's
    low bits, and a pair's packed numbers, alone fill a few slots)."""
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL
    h = h ^ (h >> 31)
    return <Py_ssize_t> (h & <uint64_t> mask)


cdef int _compare_ll(const void* x, const void* y) noexcept nogil:
    cdef long long a = (<long long*> x)[0], b = (<long long*> y)[0]
    return (a > b) - (a < b)


cdef class TermIndex:
    """The terms of a fitted word vectoriser (unigrams, and bigrams when ``bigrams``), numbered for
    :meth:`decision`.

    Parameters
    ----------
    vocabulary : dict of str to int
        The vectoriser's ``vocabulary_`` (term to column).
    idf, coef : 1-d float64 arrays
        Per column: the IDF and the logistic regression's coefficient.
    intercept : float
    sublinear : bool
        ``log(tf) + 1`` instead of ``tf``.
    bigrams : bool
        Count bigrams as well (``ngram_range=(1, 2)``; else ``(1, 1)``).
    """

    cdef list terms  # the vocabulary's terms: a word's characters are read where its first term holds them
    # the words: an open-addressing table of (hash, word number) by hash; per number, where its characters are
    cdef uint64_t* word_hash
    cdef int* word_slot
    cdef Py_ssize_t word_mask
    cdef int* word_term  # word number -> index in terms
    cdef int* word_start
    cdef int* word_len
    cdef int* unigram  # word number -> its unigram's column, or -1
    cdef long long n_words
    # the bigrams: an open-addressing table keyed by (first word's number, second's)
    cdef uint64_t* pair_key
    cdef int* pair_col
    cdef Py_ssize_t pair_mask
    cdef const double[::1] idf
    cdef const double[::1] coef
    cdef double[::1] log_tf
    cdef double intercept
    cdef bint sublinear, bigrams
    cdef bint ready  # set when __init__ finished: an index made otherwise, or half made, is never read
    cdef Py_ssize_t n_cols

    def __cinit__(self):
        self.ready = False
        self.word_hash = NULL
        self.word_slot = NULL
        self.word_term = NULL
        self.word_start = NULL
        self.word_len = NULL
        self.unigram = NULL
        self.pair_key = NULL
        self.pair_col = NULL

    def __dealloc__(self):
        PyMem_Free(self.word_hash)
        PyMem_Free(self.word_slot)
        PyMem_Free(self.word_term)
        PyMem_Free(self.word_start)
        PyMem_Free(self.word_len)
        PyMem_Free(self.unigram)
        PyMem_Free(self.pair_key)
        PyMem_Free(self.pair_col)

    def __init__(self, dict vocabulary, idf, coef, double intercept, bint sublinear, bint bigrams):
        cdef Py_ssize_t n_terms = len(vocabulary), size, t, i, a, sp, n, k
        cdef long long col, w1, w2
        cdef str term
        if self.word_hash != NULL:
            raise RuntimeError("a TermIndex is made once")
        self.idf = np.ascontiguousarray(idf, dtype=np.float64)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64)
        self.n_cols = self.idf.shape[0]
        if self.coef.shape[0] != self.n_cols:
            raise ValueError("idf and coef must have one value per column")
        self.terms = list(vocabulary)
        cols = list(vocabulary.values())
        for term_obj in self.terms:
            if type(term_obj) is not str:
                raise TypeError("vocabulary terms must be str")
        if n_terms >= (1 << 30) or self.n_cols >= (1 << 31):
            raise ValueError("a vocabulary of 2**30 terms or more")
        # at most two words a term are numbered, and one bigram a term: tables at most half full
        size = 16
        while size < 2 * 2 * max(1, n_terms):
            size *= 2
        self.word_mask = size - 1
        self.word_hash = <uint64_t*> PyMem_Malloc(size * sizeof(uint64_t))
        self.word_slot = <int*> PyMem_Malloc(size * sizeof(int))
        self.word_term = <int*> PyMem_Malloc(2 * max(1, n_terms) * sizeof(int))
        self.word_start = <int*> PyMem_Malloc(2 * max(1, n_terms) * sizeof(int))
        self.word_len = <int*> PyMem_Malloc(2 * max(1, n_terms) * sizeof(int))
        self.unigram = <int*> PyMem_Malloc(2 * max(1, n_terms) * sizeof(int))
        size = 16
        while size < 2 * max(1, n_terms):
            size *= 2
        self.pair_mask = size - 1
        self.pair_key = <uint64_t*> PyMem_Malloc(size * sizeof(uint64_t))
        self.pair_col = <int*> PyMem_Malloc(size * sizeof(int))
        if (self.word_hash == NULL or self.word_slot == NULL or self.word_term == NULL or self.word_start == NULL
                or self.word_len == NULL or self.unigram == NULL or self.pair_key == NULL or self.pair_col == NULL):
            raise MemoryError()
        memset(self.word_hash, 0xFF, (self.word_mask + 1) * sizeof(uint64_t))
        memset(self.pair_key, 0xFF, (self.pair_mask + 1) * sizeof(uint64_t))
        self.n_words = 0
        for t in range(n_terms):
            term = <str> self.terms[t]
            col = cols[t]
            if col < 0 or col >= self.n_cols:
                raise ValueError(f"vocabulary column {col} is outside the {self.n_cols} columns")
            n = len(term)
            if n >= (1 << 31):
                raise ValueError("a vocabulary term of 2**31 characters or more")
            sp = -1
            k = 0  # spaces
            for i in range(n):
                if term[i] == u" ":
                    k += 1
                    if sp < 0:
                        sp = i
            if sp < 0:
                w1 = self._word(t, 0, n)
                self.unigram[w1] = <int> col
            elif bigrams and k == 1 and sp > 0 and sp + 1 < n:
                w1 = self._word(t, 0, sp)
                w2 = self._word(t, sp + 1, n)
                self._pair_put(w1, w2, col)
            # (a term of three or more words, or with an empty part, is never one of these n-grams)
        self.log_tf = np.log(np.arange(1, LOG_TF_MAX + 1, dtype=np.float64)) + 1.0
        self.intercept = intercept
        self.sublinear = sublinear
        self.bigrams = bigrams
        self.ready = True

    cdef long long _word(self, Py_ssize_t t, Py_ssize_t a, Py_ssize_t b) except -1:
        """The number of the word ``terms[t][a:b]``, given a new one (without a unigram) when it has none."""
        cdef str term = <str> self.terms[t]
        cdef uint64_t h = _hash(term, a, b)
        cdef long long got = self._find(h, term, a, b)
        if got >= 0:
            return got
        cdef Py_ssize_t slot = _slot(h, self.word_mask)
        while self.word_hash[slot] != _EMPTY:
            slot = (slot + 1) & self.word_mask
        got = self.n_words
        self.word_hash[slot] = h
        self.word_slot[slot] = got
        self.word_term[got] = <int> t
        self.word_start[got] = <int> a
        self.word_len[got] = <int> (b - a)
        self.unigram[got] = -1
        self.n_words += 1
        return got

    cdef inline long long _find(self, uint64_t h, str s, Py_ssize_t a, Py_ssize_t b):
        """The number of the word whose characters are ``s[a:b]`` (hash ``h``), or -1."""
        cdef Py_ssize_t slot = _slot(h, self.word_mask), k, start, n = b - a
        cdef long long w
        cdef str term
        while self.word_hash[slot] != _EMPTY:
            if self.word_hash[slot] == h:
                w = self.word_slot[slot]
                if self.word_len[w] == n:
                    term = <str> self.terms[self.word_term[w]]
                    start = self.word_start[w]
                    k = 0
                    while k < n and term[start + k] == s[a + k]:
                        k += 1
                    if k == n:
                        return w
            slot = (slot + 1) & self.word_mask
        return -1

    cdef inline uint64_t _pair(self, long long w1, long long w2):
        return (<uint64_t> w1 << 32) | <uint64_t> w2

    cdef void _pair_put(self, long long w1, long long w2, long long col):
        cdef uint64_t key = self._pair(w1, w2)
        cdef Py_ssize_t slot = _slot(key, self.pair_mask)
        while self.pair_key[slot] != _EMPTY and self.pair_key[slot] != key:
            slot = (slot + 1) & self.pair_mask
        self.pair_key[slot] = key
        self.pair_col[slot] = <int> col

    cdef inline long long _pair_get(self, long long w1, long long w2):
        cdef uint64_t key = self._pair(w1, w2)
        cdef Py_ssize_t slot = _slot(key, self.pair_mask)
        while self.pair_key[slot] != _EMPTY:
            if self.pair_key[slot] == key:
                return self.pair_col[slot]
            slot = (slot + 1) & self.pair_mask
        return -1

    def decision(self, str doc):
        """The decision value of ``doc`` (already lower-cased when the vectoriser lower-cases), or ``None``
        when a term is counted more than :data:`LOG_TF_MAX` times (then the Python path decides)."""
        cdef Py_ssize_t n = len(doc), i = 0, a, k, m = 0, runs, cap
        cdef long long prev = -1, wid, col, count
        cdef double tf, ss, acc, norm
        cdef long long* hits
        cdef long long* run_col
        cdef double* w
        if not self.ready:
            raise RuntimeError("this TermIndex was not made by TermIndex(...), or its making failed")
        # at most one unigram and one bigram per token, and a token is two characters or more
        cap = n + 2
        hits = <long long*> PyMem_Malloc(cap * sizeof(long long))
        run_col = <long long*> PyMem_Malloc(cap * sizeof(long long))
        w = <double*> PyMem_Malloc(cap * sizeof(double))
        if hits == NULL or run_col == NULL or w == NULL:
            PyMem_Free(hits)
            PyMem_Free(run_col)
            PyMem_Free(w)
            raise MemoryError()
        try:
            while i < n:
                if not _word_char(doc[i]):
                    i += 1
                    continue
                a = i
                i += 1
                while i < n and _word_char(doc[i]):
                    i += 1
                if i - a < 2:  # (a one-character run is no token: it neither counts nor breaks a bigram)
                    continue
                wid = self._find(_hash(doc, a, i), doc, a, i)
                if wid < 0:  # (no term holds the word: no bigram with it either)
                    prev = -1
                    continue
                col = self.unigram[wid]
                if col >= 0:
                    hits[m] = col
                    m += 1
                if self.bigrams and prev >= 0:
                    col = self._pair_get(prev, wid)
                    if col >= 0:
                        hits[m] = col
                        m += 1
                prev = wid
            if m == 0:
                return 0.0 + self.intercept
            qsort(hits, m, sizeof(long long), _compare_ll)
            # runs of one column: its count; the weights in column order
            runs = 0
            k = 0
            while k < m:
                col = hits[k]
                count = 0
                while k < m and hits[k] == col:
                    count += 1
                    k += 1
                tf = <double> count
                if self.sublinear:
                    if count > LOG_TF_MAX:
                        return None
                    tf = self.log_tf[count - 1]
                run_col[runs] = col
                w[runs] = tf * self.idf[col]
                runs += 1
            ss = w[0] * w[0]
            for k in range(1, runs):
                ss += w[k] * w[k]
            if ss != 0.0:
                norm = sqrt(ss)
                for k in range(runs):
                    w[k] = w[k] / norm
            acc = w[0] * self.coef[run_col[0]]
            for k in range(1, runs):
                acc += w[k] * self.coef[run_col[k]]
            return acc + self.intercept
        finally:
            PyMem_Free(hits)
            PyMem_Free(run_col)
            PyMem_Free(w)
