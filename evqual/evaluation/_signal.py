"""Univariate signal of each feature: how well it alone ranks hallucinated rows."""

from __future__ import annotations

import numpy as np

__all__ = ["univariate_auroc"]


def univariate_auroc(X, y, names, *, groups=None):
    """AUROC of each feature column used alone as a score.

    Parameters
    ----------
    X : array of shape (n, d)
    y : array of shape (n,)
        Binary targets (1 = hallucinated).
    names : sequence of str
        Column names.
    groups : array of shape (n,), optional
        Also report the AUROC within each group (for example the task).

    Returns
    -------
    pandas.DataFrame
        One row per feature: ``feature``, ``auroc`` (``max(a, 1 - a)``),
        ``direction`` (``"+"`` when higher values mean more hallucination) and
        one ``auroc[<group>]`` column per group; sorted by ``auroc``.
        Constant columns get AUROC 0.5.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.1, 5], [0.2, 5], [0.8, 5], [0.9, 5]])
    >>> univariate_auroc(X, [0, 0, 1, 1], ["a", "b"])[["feature", "auroc", "direction"]].values.tolist()
    [['a', 1.0, '+'], ['b', 0.5, '+']]
    """
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    X = np.asarray(X, dtype=float)
    y = np.asarray(y).astype(int)

    def auc(col, yy):
        if len(np.unique(yy)) < 2 or np.all(col == col[0]):
            return 0.5
        return float(roc_auc_score(yy, col))

    rows = []
    for j, name in enumerate(names):
        a = auc(X[:, j], y)
        row = {"feature": name, "auroc": max(a, 1 - a), "direction": "+" if a >= 0.5 else "-"}
        if groups is not None:
            g = np.asarray(groups)
            for value in sorted(set(g.tolist())):
                m = g == value
                ga = auc(X[m, j], y[m])
                row[f"auroc[{value}]"] = ga if a >= 0.5 else 1 - ga
        rows.append(row)
    return pd.DataFrame(rows).sort_values("auroc", ascending=False, kind="stable").reset_index(drop=True)
