# cython: language_level=3
"""The compiled tree walker of :mod:`evqual.models._fasttrees` (issue 41): each row walks every tree in turn.

One row at a time, its raw score is the baseline plus each tree's leaf value, added one tree after another
in scikit-learn's order (``HistGradientBoostingClassifier._raw_predict``), with scikit-learn's split rule (a
missing value goes where ``missing_go_to_left`` says; otherwise left when ``x <= threshold``): the same float
as scikit-learn and as the numpy walker, for any batch (``tests/test_lean.py`` and
``tests/test_fastpaths.py`` compare them).  Bounds are checked on every read and a walk longer than the
deepest tree is refused, whatever the arrays hold.  Without a compiler the numpy walker runs instead.
"""

from libc.math cimport isnan


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
