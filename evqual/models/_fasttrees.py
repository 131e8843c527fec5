"""Fast prediction: fitted tree ensembles and text models as flat arrays.

scikit-learn's ``HistGradientBoostingClassifier.predict_proba`` walks its trees
one Python call per tree, about 4 microseconds each; for one response and the
~550 trees of evqual's two boosted models that alone costs ~2 ms.
:func:`hgb_proba` traverses every tree at once with numpy (one step per tree
level) and gives bit for bit the probabilities scikit-learn gives: each row's
raw score is its trees' leaf values added one tree at a time after the
baseline, in scikit-learn's order (a test checks equality).  Compiled
arrays are cached per fitted estimator in memory; nothing is added to saved
models.

A row's probability never depends on the other rows predicted with it
(:func:`fast_proba`): every path computes each row alone in a fixed order,
so results do not change with the batch size.

Only numerical splits are compiled (evqual's features are all numerical); an
estimator with categorical splits falls back to scikit-learn.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections import Counter

import numpy as np

from .._build import kernel
from ._lean import LeanObject

__all__ = ["hgb_proba", "fast_proba", "fast_decision", "fast_calibrate"]

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def expit(z) -> np.ndarray:
    """``scipy.special.expit``: ``1 / (1 + exp(-z))`` with the C library's ``exp``, element by element.

    scipy computes each element with the same formula and the same ``exp``,
    so the floats are the same to the last bit (``tests/test_lean.py`` checks
    half a million values, infinities, NaN and the overflow edges); importing
    ``scipy.special`` alone took 0.1-0.2 s of a scoring process's start.

    >>> expit(np.array([0.0, 2.0, -800.0])).tolist()
    [0.5, 0.8807970779778823, 0.0]
    """
    z = np.asarray(z, dtype=np.float64)
    exp = math.exp
    out = []
    for v in z.ravel().tolist():
        try:
            out.append(1.0 / (1.0 + exp(-v)))
        except OverflowError:  # exp(-v) past the largest float: C gives inf, and 1 / inf is 0
            out.append(0.0)
    return np.array(out, dtype=np.float64).reshape(z.shape)


def _is(obj, module: str, name: str) -> bool:
    """``isinstance(obj, module.name)`` without importing ``module``: an object of a scikit-learn class exists
    only once its module is imported (scoring imports no scikit-learn, issue 41); a lean load's stand-in
    (:mod:`evqual.models._lean`) is one of the class it stands in for."""
    if isinstance(obj, LeanObject):
        full = f"{module}.{name}"
        return type(obj).stands_for == full or getattr(type(obj), "also", None) == full
    mod = sys.modules.get(module)
    return mod is not None and isinstance(obj, getattr(mod, name))


def _is_hgb(est) -> bool:
    return _is(est, "sklearn.ensemble._hist_gradient_boosting.gradient_boosting", "HistGradientBoostingClassifier")


class _Compiled:
    __slots__ = ("feature", "threshold", "left", "right", "leaf", "value", "missing_left", "roots", "baseline",
                 "depth", "left_loop", "right_loop", "threshold_loop", "feature_loop", "missing_loop", "_forest")

    def __init__(self, est):
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
        """Raw scores: the compiled walker row by row (:mod:`evqual.models._treewalk`) where it is built,
        else numpy: every (row, tree) pair walks down at once; pairs leave the arrays at their leaf."""
        forest = self._compiled_forest()
        if forest is not None:
            Xc = np.ascontiguousarray(X, dtype=np.float64)
            if Xc.ndim != 2:
                Xc = Xc.reshape(len(Xc), -1)
            out = np.empty(len(Xc))
            forest.raw(Xc, out)
            return out
        return self.raw_numpy(X)

    def _compiled_forest(self):
        """The compiled walker's :class:`~evqual.models._treewalk.Forest` of these trees (made, and its arrays
        checked, on first use), or None without the compiled walker."""
        forest = getattr(self, "_forest", None)
        if forest is None:
            cls = kernel("evqual.models._treewalk", "Forest")
            if cls is None:
                return None
            forest = self._forest = cls(self.feature, self.threshold, self.left, self.right, self.leaf, self.value,
                                        self.missing_left, self.roots, self.baseline, self.depth)
        return forest

    def raw_numpy(self, X: np.ndarray) -> np.ndarray:
        """:meth:`raw` with numpy alone (the fallback, and the reference the compiled walker is tested on)."""
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
            return self._add_trees(self.value[node].reshape(n, T))
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
        return self._add_trees(self.value[final].reshape(n, T))

    def _add_trees(self, leaf_values: np.ndarray) -> np.ndarray:
        """Raw scores as scikit-learn adds them: the baseline, then each tree's leaf value in tree order.

        ``np.cumsum`` adds strictly one term after another, so each row gets
        exactly scikit-learn's sum (``np.sum`` would add pairwise).
        """
        n = len(leaf_values)
        terms = np.empty((n, leaf_values.shape[1] + 1))
        terms[:, 0] = self.baseline
        terms[:, 1:] = leaf_values
        return np.cumsum(terms, axis=1)[:, -1]


_LOOP_PAIRS = 4096  # (row, tree) pairs up to which every pair takes every step (fewer numpy calls)
def _kernel():
    """The compiled walker's ``raw_scores``, or ``None`` (not built, or ``EVQUAL_PURE_PYTHON`` set)."""
    return kernel("evqual.models._treewalk", "raw_scores")


def _compiled(est):
    got = _CACHE.get(est)
    if got is None:
        got = _Compiled(est)
        _CACHE[est] = got
    return got


def _compilable(est) -> bool:
    return (_is_hgb(est) and len(getattr(est, "classes_", ())) == 2
            and getattr(est, "is_categorical_", None) is None)


def hgb_proba(est, X) -> np.ndarray:
    """``est.predict_proba(X)`` for a fitted binary HistGradientBoostingClassifier, all trees at once.

    Equal to scikit-learn's result bit for bit; rows are walked
    :data:`CHUNK_ROWS` at a time, so memory stays bounded for any ``X``.
    """
    if not _compilable(est):
        return est.predict_proba(X)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[-1] if X.ndim else 0} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input.")
    comp = _compiled(est)
    raw = np.concatenate([comp.raw(X[i:i + CHUNK_ROWS]) for i in range(0, len(X), CHUNK_ROWS)]) if len(X) \
        else np.zeros(0)
    p = expit(raw)
    return np.column_stack([1.0 - p, p])


def _lean_tfidf_ok(vec) -> bool:
    return (_is(vec, "sklearn.feature_extraction.text", "TfidfVectorizer")
            and (not isinstance(vec, LeanObject) or vec.analyser_supported()) and vec.norm == "l2" and vec.use_idf and vec.binary is False
            and vec.dtype in (np.float64, float) and hasattr(vec, "idf_"))


_DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def _term_index(vec, lr, idf, coef):
    """The compiled :class:`~evqual.models._textdot.TermIndex` of a word vectoriser with scikit-learn's
    default analyser (its token pattern, no preprocessor, tokenizer, accent stripping or stop words; unigrams,
    or unigrams and bigrams), or ``None`` (not built, or another analyser: the Python path runs)."""
    cls = kernel("evqual.models._textdot", "TermIndex")
    if cls is None:
        return None
    p = {k: getattr(vec, k, None) for k in ("analyzer", "token_pattern", "preprocessor", "tokenizer",
                                             "strip_accents", "stop_words", "ngram_range", "lowercase",
                                             "vocabulary_")}
    ngrams = tuple(p["ngram_range"]) if isinstance(p["ngram_range"], (tuple, list)) else None
    if not (p["analyzer"] == "word" and p["token_pattern"] == _DEFAULT_TOKEN_PATTERN
            and p["preprocessor"] is None and p["tokenizer"] is None and p["strip_accents"] is None
            and p["stop_words"] is None and ngrams in ((1, 1), (1, 2)) and isinstance(p["lowercase"], bool)
            and type(p["vocabulary_"]) is dict):
        return None
    try:
        return cls(p["vocabulary_"], idf, coef, float(lr.intercept_[0]), bool(vec.sublinear_tf), ngrams == (1, 2))
    except (TypeError, ValueError, OverflowError):  # (a vocabulary the index cannot hold: the Python path reads it)
        return None


class _LeanText:
    __slots__ = ("analyzer", "vocab", "weights", "index", "lowercase")

    def __init__(self, vec, lr):
        self.analyzer = vec.build_analyzer()
        self.vocab = vec.vocabulary_
        # per term: (idf, coefficient)
        self.weights = (np.asarray(vec.idf_, dtype=np.float64), lr.coef_.ravel().astype(np.float64))
        self.index = _term_index(vec, lr, *self.weights)
        self.lowercase = getattr(vec, "lowercase", True)


def _tfidf_dot(vec, doc: str, lr) -> float:
    """The decision value ``vec.transform([doc]) @ lr.coef_.T + lr.intercept_``, without the sparse matrix.

    Every step is scikit-learn's, in its order: term counts in column order,
    ``log(tf) + 1`` when sublinear, times the IDF, divided by the L2 norm
    (squares added one after another), then the products with the
    coefficients added one after another (scipy's sparse product), plus the
    intercept: the same float as scikit-learn's, whatever else is predicted
    with it.
    """
    lean = _CACHE.get(vec)
    if lean is None or lean[0] is not lr:
        lean = (lr, _LeanText(vec, lr))
        _CACHE[vec] = lean
    lean = lean[1]
    if lean.index is not None and type(doc) is str:
        got = lean.index.decision(doc.lower() if lean.lowercase else doc)
        if got is not None:
            return got
    vocab = lean.vocab
    # each distinct term counted in C, then looked up once (the order of the counts does not matter: they are
    # sorted by column below)
    terms = Counter(lean.analyzer(doc))
    counts = {j: n for term, n in terms.items() if (j := vocab.get(term)) is not None}
    intercept = float(lr.intercept_[0])
    if not counts:
        return 0.0 + intercept
    idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    order = np.argsort(idx, kind="stable")
    idx, tf = idx[order], tf[order]
    if vec.sublinear_tf:
        tf = np.log(tf) + 1.0
    idf, coef = lean.weights
    w = tf * idf[idx]
    ss = float(np.cumsum(w * w)[-1])
    if ss != 0.0:
        w = w / math.sqrt(ss)
    return float(np.cumsum(w * coef[idx])[-1]) + intercept


def _linear_scores(Z, coef: np.ndarray, intercept: float) -> np.ndarray:
    """``Z @ coef + intercept`` row by row, each row's products added one after another.

    A BLAS product's summation order depends on the matrix's shape (its
    rows are handled in blocks), so a row's score would depend on the rows
    around it; here it does not.  Sparse ``Z`` uses scipy's row-wise product.
    """
    from scipy import sparse

    if sparse.issparse(Z):
        return np.asarray(Z @ coef).ravel() + intercept
    Z = np.asarray(Z, dtype=np.float64)
    out = np.empty(len(Z))
    for i in range(0, len(Z), CHUNK_ROWS):
        part = Z[i:i + CHUNK_ROWS] * coef
        out[i:i + CHUNK_ROWS] = np.cumsum(part, axis=1)[:, -1] if part.shape[1] else 0.0
    return out + intercept


SMALL_BATCH = 96
"""Without the compiled walker (:mod:`evqual.models._treewalk`, built at install), binary HistGradientBoosting
batches up to this many rows take :func:`hgb_proba`'s numpy walker and larger ones scikit-learn's threaded
predictor (a lean model, which has no scikit-learn predictor, always the walker).  With it, every batch takes
the compiled walker: 2-5x faster than scikit-learn's predictor on one core from 1 to 6,400 rows (issue 41).
Every path gives the same floats, so the switch never changes a result.

Measured on one core (``python scripts/bench.py trees``, the shipped model's four boosted models of
150-300 trees): the walker takes 0.08-0.10 ms for one row against scikit-learn's 0.85-1.65 ms, and the two
cross between 96 and 128 rows (at 256 rows scikit-learn is 1.4x faster); 256 was the earlier guess."""

CHUNK_ROWS = 4096
"""Rows handled at once by the numpy paths (bounded memory for any batch)."""


def fast_proba(est, X) -> np.ndarray:
    """``predict_proba`` whose rows never depend on each other (and fast for small batches).

    * a binary HistGradientBoostingClassifier: :func:`hgb_proba` (the compiled walker; without it, up to
      :data:`SMALL_BATCH` rows, scikit-learn above; the same floats);
    * a pipeline ``[..., vectoriser, LogisticRegression]`` (evqual's text
      models, scaled linear models): the earlier steps' ``transform`` then
      the logistic function of the linear score, each row's score summed in a
      fixed order (an l2 TF-IDF vectoriser is evaluated document by document,
      equal to scikit-learn; other inputs by :func:`_linear_scores`);
    * anything else: ``est.predict_proba(X)`` (random forests, extra trees
      and gradient boosting score each row alone).
    """
    if _compilable(est):
        if len(X) <= SMALL_BATCH or _kernel() is not None or isinstance(est, LeanObject):
            return hgb_proba(est, X)
        return est.predict_proba(X)
    z = _pipeline_linear_score(est, X)
    if z is not None:
        p = expit(z)
        return np.column_stack([1.0 - p, p])
    return est.predict_proba(X)


def _pipeline_linear_score(est, X):
    """The linear score of a pipeline ``[..., step, binary LogisticRegression]`` summed row by row in a
    fixed order (``None`` for any other estimator)."""
    if not (_is(est, "sklearn.pipeline", "Pipeline") and len(est.steps) >= 2
            and _is(est.steps[-1][1], "sklearn.linear_model._logistic", "LogisticRegression")):
        return None
    lr = est.steps[-1][1]
    if len(lr.classes_) != 2:
        return None
    Z = X
    for _, step in est.steps[:-2]:
        Z = step.transform(Z)
    vec = est.steps[-2][1]
    if _lean_tfidf_ok(vec):
        return np.array([_tfidf_dot(vec, doc, lr) for doc in Z], dtype=np.float64)
    return _linear_scores(vec.transform(Z), lr.coef_.ravel().astype(np.float64), float(lr.intercept_[0]))


def fast_decision(est, X) -> np.ndarray:
    """``decision_function`` whose rows never depend on each other.

    A pipeline ending in a binary logistic regression (``metadata-lr``,
    ``evidence-lr``, ``tfidf-lr``) sums each row's linear score in a fixed
    order (:func:`_linear_scores`); scikit-learn's product goes through BLAS,
    whose rounding depends on the batch's shape.  Other estimators (gradient
    boosting scores each row alone) use their own ``decision_function``.
    """
    z = _pipeline_linear_score(est, X)
    if z is not None:
        return z
    return np.asarray(est.decision_function(X), dtype=float).ravel()


def _is_sigmoid(cal) -> bool:
    if isinstance(cal, LeanObject):
        return type(cal).stands_for == "sklearn.calibration._SigmoidCalibration"
    mod = sys.modules.get("sklearn.calibration")
    return mod is not None and type(cal) is mod._SigmoidCalibration


def fast_calibrate(cal, score) -> np.ndarray:
    """``cal.predict(score)``: for Platt's sigmoid (``_SigmoidCalibration``) on a 1-d float64 array, its
    formula without scikit-learn's input validation (the same floats; the validation alone took about
    0.1 ms a call); any other calibrator or input goes to its own ``predict``."""
    if _is_sigmoid(cal) and isinstance(score, np.ndarray) and score.ndim == 1 \
            and score.dtype == np.float64:
        return expit(-(cal.a_ * score + cal.b_))
    return cal.predict(score)
