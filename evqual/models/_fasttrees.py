"""Fast prediction for small batches: fitted tree ensembles and text models as flat arrays.

scikit-learn's ``HistGradientBoostingClassifier.predict_proba`` walks its trees
one Python call per tree, about 4 microseconds each; for one response and the
~550 trees of evqual's two boosted models that alone costs ~2 ms.
:func:`hgb_proba` traverses every tree at once with numpy (one step per tree
level) and gives the same probabilities (a test checks equality).  Compiled
arrays are cached per fitted estimator in memory; nothing is added to saved
models.

Only numerical splits are compiled (evqual's features are all numerical); an
estimator with categorical splits falls back to scikit-learn.
"""

from __future__ import annotations

import weakref

import numpy as np
from scipy.special import expit
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

__all__ = ["hgb_proba", "fast_proba"]

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _Compiled:
    __slots__ = ("feature", "threshold", "left", "right", "leaf", "value", "missing_left", "roots", "baseline",
                 "depth", "left_loop", "right_loop", "threshold_loop", "feature_loop", "missing_loop")

    def __init__(self, est: HistGradientBoostingClassifier):
        feats, thr, left, right, leaf, value, miss, roots = [], [], [], [], [], [], [], []
        offset, depth = 0, 0
        for (pred,) in est._predictors:
            nodes = pred.nodes
            roots.append(offset)
            feats.append(nodes["feature_idx"].astype(np.int64))
            thr.append(nodes["num_threshold"].astype(np.float64))
            left.append(nodes["left"].astype(np.int64) + offset)
            right.append(nodes["right"].astype(np.int64) + offset)
            leaf.append(nodes["is_leaf"].astype(bool))
            value.append(nodes["value"].astype(np.float64))
            miss.append(nodes["missing_go_to_left"].astype(bool))
            depth = max(depth, int(nodes["depth"].max()))
            offset += len(nodes)
        self.feature = np.concatenate(feats)
        self.threshold = np.concatenate(thr)
        self.left = np.concatenate(left)
        self.right = np.concatenate(right)
        self.leaf = np.concatenate(leaf)
        self.value = np.concatenate(value)
        self.missing_left = np.concatenate(miss)
        self.roots = np.asarray(roots, dtype=np.int64)
        self.baseline = float(np.asarray(est._baseline_prediction).ravel()[0])
        self.depth = depth
        # leaves loop onto themselves (threshold +inf: always "left" = self), so that small batches can
        # take a fixed number of steps without tracking which pairs are done
        ids = np.arange(len(self.leaf))
        self.left_loop = np.where(self.leaf, ids, self.left)
        self.right_loop = np.where(self.leaf, ids, self.right)
        self.threshold_loop = np.where(self.leaf, np.inf, self.threshold)
        self.feature_loop = np.where(self.leaf, 0, self.feature)
        self.missing_loop = np.where(self.leaf, True, self.missing_left)

    def raw(self, X: np.ndarray) -> np.ndarray:
        """Raw scores: every (row, tree) pair walks down at once; pairs leave the arrays at their leaf."""
        n, T = len(X), len(self.roots)
        Xf = np.ascontiguousarray(X, dtype=np.float64)
        n_features = Xf.shape[1] if Xf.ndim == 2 else 0
        Xf = Xf.ravel()
        has_nan = bool(np.isnan(Xf).any())
        node = np.tile(self.roots, n)
        base = np.repeat(np.arange(n, dtype=np.int64) * n_features, T)
        if n * T <= _LOOP_PAIRS:
            for _ in range(self.depth):
                x = Xf[base + self.feature_loop[node]]
                go_left = x <= self.threshold_loop[node]
                if has_nan:
                    go_left = np.where(np.isnan(x), self.missing_loop[node], go_left)
                node = np.where(go_left, self.left_loop[node], self.right_loop[node])
            return self.value[node].reshape(n, T).sum(axis=1) + self.baseline
        pos = np.arange(n * T)
        final = np.empty(n * T, dtype=np.int64)
        while len(node):
            at_leaf = self.leaf[node]
            if at_leaf.any():
                final[pos[at_leaf]] = node[at_leaf]
                walking = ~at_leaf
                node, base, pos = node[walking], base[walking], pos[walking]
                if not len(node):
                    break
            x = Xf[base + self.feature[node]]
            go_left = x <= self.threshold[node]
            if has_nan:
                go_left = np.where(np.isnan(x), self.missing_left[node], go_left)
            node = np.where(go_left, self.left[node], self.right[node])
        return self.value[final].reshape(n, T).sum(axis=1) + self.baseline


_LOOP_PAIRS = 4096  # (row, tree) pairs up to which every pair takes every step (fewer numpy calls)


def _compiled(est):
    got = _CACHE.get(est)
    if got is None:
        got = _Compiled(est)
        _CACHE[est] = got
    return got


def _compilable(est) -> bool:
    return (isinstance(est, HistGradientBoostingClassifier) and len(getattr(est, "classes_", ())) == 2
            and getattr(est, "is_categorical_", None) is None)


def hgb_proba(est: HistGradientBoostingClassifier, X) -> np.ndarray:
    """``est.predict_proba(X)`` for a fitted binary HistGradientBoostingClassifier, all trees at once."""
    if not _compilable(est):
        return est.predict_proba(X)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[-1] if X.ndim else 0} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input.")
    p = expit(_compiled(est).raw(X))
    return np.column_stack([1.0 - p, p])


def _lean_tfidf_ok(vec) -> bool:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return (isinstance(vec, TfidfVectorizer) and vec.norm == "l2" and vec.use_idf and vec.binary is False
            and vec.dtype in (np.float64, float) and hasattr(vec, "idf_"))


class _LeanText:
    __slots__ = ("analyzer", "vocab", "weights")

    def __init__(self, vec, lr):
        self.analyzer = vec.build_analyzer()
        self.vocab = vec.vocabulary_
        # per term: (idf, coefficient)
        self.weights = (np.asarray(vec.idf_, dtype=np.float64), lr.coef_.ravel().astype(np.float64))


def _tfidf_dot(vec, doc: str, lr) -> float:
    """``vec.transform([doc]) @ lr.coef_`` for an l2-normalised TF-IDF row, without building the sparse matrix."""
    lean = _CACHE.get(vec)
    if lean is None or lean[0] is not lr:
        lean = (lr, _LeanText(vec, lr))
        _CACHE[vec] = lean
    lean = lean[1]
    counts: dict[int, int] = {}
    vocab = lean.vocab
    for term in lean.analyzer(doc):
        j = vocab.get(term)
        if j is not None:
            counts[j] = counts.get(j, 0) + 1
    if not counts:
        return 0.0
    idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    if vec.sublinear_tf:
        tf = np.log(tf) + 1.0
    idf, coef = lean.weights
    w = tf * idf[idx]
    norm = np.sqrt(w @ w)
    return float((w @ coef[idx]) / norm) if norm > 0 else 0.0


SMALL_BATCH = 256
"""Batches up to this many rows take the fast paths; larger ones use scikit-learn (compiled, threaded)."""


def fast_proba(est, X) -> np.ndarray:
    """``predict_proba`` with fast paths for small batches (up to :data:`SMALL_BATCH` rows).

    * a binary HistGradientBoostingClassifier: :func:`hgb_proba`;
    * a pipeline ``[..., vectoriser, LogisticRegression]`` (evqual's text
      models): the earlier steps' ``transform`` then the logistic function
      of the linear score, without scikit-learn's per-call validation;
    * anything else: ``est.predict_proba(X)``.
    """
    if len(X) > SMALL_BATCH:
        return est.predict_proba(X)
    if _compilable(est):
        return hgb_proba(est, X)
    if isinstance(est, Pipeline) and isinstance(est.steps[-1][1], LogisticRegression):
        lr = est.steps[-1][1]
        if len(lr.classes_) == 2:
            Z = X
            for _, step in est.steps[:-2]:
                Z = step.transform(Z)
            vec = est.steps[-2][1]
            if _lean_tfidf_ok(vec):
                z = np.array([_tfidf_dot(vec, doc, lr) for doc in Z])
            else:
                z = np.asarray(vec.transform(Z) @ lr.coef_.ravel()).ravel()
            p = expit(z + lr.intercept_[0])
            return np.column_stack([1.0 - p, p])
    return est.predict_proba(X)
