# cython: language_level=3, boundscheck=True, wraparound=False
"""The compiled sequence alignment of :func:`evqual.evidence._engine._blocks` (issue 41).

``difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()`` on two sequences of integer ids, with
difflib's algorithm step for step: the longest matching block of a range (the first one found on a tie:
the earliest end in ``a``, then in ``b``), the ranges left of it and right of it in difflib's queue order,
the blocks sorted and adjacent ones joined, the opcodes read off them.  So the blocks are difflib's own,
which ``tests/test_evidence.py`` checks on random sequences.  An id below 0 in ``a`` matches nothing (the
caller gives every claim item absent from the evidence -1).  Without a compiler the engine calls difflib.

:func:`float_row` makes a claim's feature row (``np.array(row, dtype=np.float64)`` without numpy's per-item
type discovery); without a compiler the engine calls numpy.
"""

from cpython.float cimport PyFloat_AsDouble
from libc.stdlib cimport malloc, free

import numpy as np


cdef void _longest(const long long* a, const long long* b, const Py_ssize_t* starts, const Py_ssize_t* pos,
                   Py_ssize_t n_ids, Py_ssize_t alo, Py_ssize_t ahi, Py_ssize_t blo, Py_ssize_t bhi,
                   Py_ssize_t* prev, Py_ssize_t* cur, Py_ssize_t* touched_prev, Py_ssize_t* touched_cur,
                   Py_ssize_t* out) noexcept nogil:
    """difflib's ``find_longest_match(alo, ahi, blo, bhi)`` with no junk: ``out = (i, j, size)``.

    ``prev[j + 1]`` is the length of the match ending at ``a[i - 1]``, ``b[j]`` (difflib's ``j2len``); only
    the entries set in the last step are non-zero, and they are cleared after the next one."""
    cdef Py_ssize_t besti = alo, bestj = blo, bestsize = 0
    cdef Py_ssize_t n_prev = 0, n_cur = 0, i, p, j, k, t
    cdef Py_ssize_t* swap
    cdef long long x
    for i in range(alo, ahi):
        x = a[i]
        n_cur = 0
        if 0 <= x < n_ids:
            for p in range(starts[x], starts[x + 1]):
                j = pos[p]
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = prev[j] + 1
                cur[j + 1] = k
                touched_cur[n_cur] = j + 1
                n_cur += 1
                if k > bestsize:
                    besti = i - k + 1
                    bestj = j - k + 1
                    bestsize = k
        for t in range(n_prev):
            prev[touched_prev[t]] = 0
        swap = prev
        prev = cur
        cur = swap
        swap = touched_prev
        touched_prev = touched_cur
        touched_cur = swap
        n_prev = n_cur
    for t in range(n_prev):
        prev[touched_prev[t]] = 0
    # difflib widens the block over equal neighbours (none is left once the longest is found; kept for parity)
    while besti > alo and bestj > blo and a[besti - 1] == b[bestj - 1]:
        besti -= 1
        bestj -= 1
        bestsize += 1
    while besti + bestsize < ahi and bestj + bestsize < bhi and a[besti + bestsize] == b[bestj + bestsize]:
        bestsize += 1
    out[0] = besti
    out[1] = bestj
    out[2] = bestsize


def nonequal_blocks(a, b):
    """``(blocks, lo, hi)``: the non-equal opcodes ``(i1, i2, j1, j2)`` of aligning ``a`` with ``b`` (lists of
    ints; ``b``'s from 0 up, ``a``'s below 0 for items absent from ``b``) and the ``b`` range ``[lo, hi)`` from
    the first equal block's start to the last one's end (``(0, 0)`` without one), as difflib gives them."""
    cdef Py_ssize_t la = len(a), lb = len(b), i, n_ids = 0, x, size
    cdef Py_ssize_t ai, bj, i1, j1, k1, i2, j2, k2
    cdef long long* ca = NULL
    cdef long long* cb = NULL
    cdef Py_ssize_t* starts = NULL
    cdef Py_ssize_t* pos = NULL
    cdef Py_ssize_t* work = NULL
    cdef Py_ssize_t m[3]
    for i in range(lb):
        x = b[i]
        if x < 0:
            raise ValueError("the evidence ids must be 0 or more")
        if x + 1 > n_ids:
            n_ids = x + 1
    if n_ids > lb:
        raise ValueError("the evidence ids must be numbered from 0 without gaps")
    try:
        ca = <long long*> malloc((la + 1) * sizeof(long long))
        cb = <long long*> malloc((lb + 1) * sizeof(long long))
        starts = <Py_ssize_t*> malloc((n_ids + 2) * sizeof(Py_ssize_t))
        pos = <Py_ssize_t*> malloc((lb + 1) * sizeof(Py_ssize_t))
        work = <Py_ssize_t*> malloc(4 * (lb + 2) * sizeof(Py_ssize_t))
        if ca == NULL or cb == NULL or starts == NULL or pos == NULL or work == NULL:
            raise MemoryError()
        for i in range(la):
            ca[i] = a[i]
        for i in range(lb):
            cb[i] = b[i]
        # b's positions of each id, in order (difflib's b2j)
        for i in range(n_ids + 2):
            starts[i] = 0
        for i in range(lb):
            starts[cb[i] + 2] += 1
        for i in range(2, n_ids + 2):
            starts[i] += starts[i - 1]
        for i in range(lb):
            pos[starts[cb[i] + 1]] = i
            starts[cb[i] + 1] += 1
        for i in range(4 * (lb + 2)):
            work[i] = 0
        blocks = []
        queue = [(0, la, 0, lb)]
        while queue:
            alo, ahi, blo, bhi = queue.pop()
            _longest(ca, cb, starts, pos, n_ids, alo, ahi, blo, bhi, work, work + (lb + 2),
                     work + 2 * (lb + 2), work + 3 * (lb + 2), m)
            if m[2]:
                blocks.append((m[0], m[1], m[2]))
                if alo < m[0] and blo < m[1]:
                    queue.append((alo, m[0], blo, m[1]))
                if m[0] + m[2] < ahi and m[1] + m[2] < bhi:
                    queue.append((m[0] + m[2], ahi, m[1] + m[2], bhi))
    finally:
        free(ca)
        free(cb)
        free(starts)
        free(pos)
        free(work)
    blocks.sort()
    # adjacent blocks joined, then the opcodes (difflib's get_matching_blocks and get_opcodes)
    joined = []
    i1 = j1 = k1 = 0
    for i2, j2, k2 in blocks:
        if i1 + k1 == i2 and j1 + k1 == j2:
            k1 += k2
        else:
            if k1:
                joined.append((i1, j1, k1))
            i1, j1, k1 = i2, j2, k2
    if k1:
        joined.append((i1, j1, k1))
    joined.append((la, lb, 0))
    out = []
    lo = hi = 0
    first = True
    i1 = j1 = 0
    for ai, bj, size in joined:
        if i1 < ai or j1 < bj:
            out.append((i1, ai, j1, bj))
        i1, j1 = ai + size, bj + size
        if size:
            if first:
                lo = bj
                first = False
            hi = j1
    return out, lo, hi


def float_row(list values):
    """``np.array(values, dtype=np.float64)`` for a list of numbers (a claim's feature row), without numpy's
    per-item type discovery (about 4x faster for the engine's 97 features): a float is itself, an int or a bool
    ``float(value)``, as numpy converts them; a list holding anything else goes to numpy."""
    cdef Py_ssize_t n = len(values), i
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] view = out
    for i in range(n):
        v = values[i]
        if type(v) is float or type(v) is int or type(v) is bool:
            view[i] = PyFloat_AsDouble(v)
        else:
            return np.array(values, dtype=np.float64)
    return out
