# cython: language_level=3
"""The compiled tree walker of :mod:`evqual.models._fasttrees` (issue 41): each row walks every tree in turn.

One row at a time, its raw score is the baseline plus each tree's leaf value, added one tree after another
in scikit-learn's order (``HistGradientBoostingClassifier._raw_predict``), with scikit-learn's split rule (a
missing value goes where ``missing_go_to_left`` says; otherwise left when ``x <= threshold``): the same float
as scikit-learn and as the numpy walker, for any batch (``tests/test_lean.py`` and
``tests/test_fastpaths.py`` compare them).  :func:`raw_scores` checks bounds on every read; :class:`Forest`
checks the arrays once, when it is made, and then reads without a check (every read of a walk lands inside the
arrays it checked and copied).  Both refuse a walk longer than the deepest tree, whatever the arrays hold.
Without a compiler the numpy walker runs instead.
"""

cimport cython
from libc.math cimport isnan

import numpy as np


def raw_scores(const double[:, ::1] X, const long long[::1] feature, const double[::1] threshold,
               const long long[::1] left, const long long[::1] right, const unsigned char[::1] leaf,
               const double[::1] value, const unsigned char[::1] missing_left, const long long[::1] roots,
               double baseline, int depth, double[::1] out):
    """Fill ``out[i]`` with row ``i``'s raw score (see the module docstring); ``depth``: the deepest tree's."""
    cdef Py_ssize_t n = X.shape[0], n_trees = roots.shape[0], i, t, node
    cdef int steps
    cdef double acc, x
    if out.shape[0] != n:
        raise ValueError("out must hold one value per row")
    for i in range(n):
        acc = 0.0
        acc += baseline
        for t in range(n_trees):
            node = roots[t]
            steps = 0
            while not leaf[node]:
                steps += 1
                if steps > depth:
                    raise ValueError("a tree is deeper than its declared depth")
                x = X[i, feature[node]]
                if isnan(x):
                    node = left[node] if missing_left[node] else right[node]
                elif x <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            acc += value[node]
        out[i] = acc


cdef class Forest:
    """The trees of one model, checked once and then walked without a bounds check per read.

    The arrays are copied (nothing outside can change them after the check), and the check makes every read of
    a walk land inside them: every split node's children and every root are nodes of the arrays, and every
    split's feature is a column the rows must have (:meth:`raw` refuses narrower rows).  A walk longer than
    ``depth`` is refused, as :func:`raw_scores` refuses it, so a cycle in the children cannot loop.  The
    scores are :func:`raw_scores`'s (the same code, the same order of additions)."""

    cdef object _keep
    cdef const long long[::1] feature, left, right, roots
    cdef const double[::1] threshold, value
    cdef const unsigned char[::1] leaf, missing_left
    cdef readonly double baseline
    cdef readonly int depth
    cdef readonly Py_ssize_t n_features  # the columns a row needs: one past the largest feature a split reads

    def __init__(self, feature, threshold, left, right, leaf, value, missing_left, roots, double baseline,
                 int depth):
        arrays = (np.array(feature, dtype=np.int64), np.array(threshold, dtype=np.float64),
                  np.array(left, dtype=np.int64), np.array(right, dtype=np.int64), np.array(leaf, dtype=np.uint8),
                  np.array(value, dtype=np.float64), np.array(missing_left, dtype=np.uint8),
                  np.array(roots, dtype=np.int64))
        n = len(arrays[0])
        for a in arrays:
            if a.ndim != 1:
                raise ValueError("the tree arrays must be one-dimensional")
        for a in arrays[1:7]:
            if len(a) != n:
                raise ValueError("the tree arrays differ in length")
        split = arrays[4] == 0
        for child in (arrays[2][split], arrays[3][split], arrays[7]):
            if child.size and (child.min() < 0 or child.max() >= n):
                raise ValueError("a tree points to a node outside the trees")
        used = arrays[0][split]
        if used.size and used.min() < 0:
            raise ValueError("a split reads a negative feature")
        if depth < 0:
            raise ValueError("depth must be at least 0")
        self.n_features = int(used.max()) + 1 if used.size else 0
        self._keep = arrays
        self.feature, self.threshold, self.left, self.right = arrays[0], arrays[1], arrays[2], arrays[3]
        self.leaf, self.value, self.missing_left, self.roots = arrays[4], arrays[5], arrays[6], arrays[7]
        self.baseline = baseline
        self.depth = depth

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def raw(self, const double[:, ::1] X, double[::1] out):
        """Fill ``out[i]`` with row ``i``'s raw score (the rows need :attr:`n_features` columns)."""
        cdef Py_ssize_t n = X.shape[0], n_trees = self.roots.shape[0], i, t, node
        cdef int steps
        cdef double acc, x
        if out.shape[0] != n:
            raise ValueError("out must hold one value per row")
        if n and X.shape[1] < self.n_features:
            raise ValueError(f"the rows have {X.shape[1]} columns; the trees read {self.n_features}")
        for i in range(n):
            acc = 0.0
            acc += self.baseline
            for t in range(n_trees):
                node = self.roots[t]
                steps = 0
                while not self.leaf[node]:
                    steps += 1
                    if steps > self.depth:
                        raise ValueError("a tree is deeper than its declared depth")
                    x = X[i, self.feature[node]]
                    if isnan(x):
                        node = self.left[node] if self.missing_left[node] else self.right[node]
                    elif x <= self.threshold[node]:
                        node = self.left[node]
                    else:
                        node = self.right[node]
                acc += self.value[node]
            out[i] = acc
