"""The claim model: P(a claim is not supported | what the engine read), learned, not written.

Training rows come from two places:

* :func:`claim_rows`: the claims of labelled answers (a claim is positive
  when a gold span overlaps it), read by the engine against their context;
* :func:`transformed_rows`: claims made from the same training data by
  :mod:`evqual.evidence._transforms` (label-flipping and label-preserving
  edits of faithful claims and of evidence sentences), weighted by
  ``augment_weight``.

:class:`ClaimModel` is a gradient-boosted classifier over
:data:`~evqual.evidence.CLAIM_FEATURES` with monotonic constraints where the
direction is known (:func:`monotonic_constraints`: more conflicts, swaps,
novel or borrowed items never lower the risk; a stronger alignment never
raises it).

>>> import numpy as np
>>> from evqual.evidence import CLAIM_FEATURES, ClaimModel
>>> rng = np.random.default_rng(0)
>>> X = rng.random((200, len(CLAIM_FEATURES))); y = (X[:, 0] < 0.3).astype(int)
>>> ClaimModel(max_iter=20).fit(X, y).predict_proba(X[:2]).shape
(2, 2)
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
from .._estimator import BaseEstimator, ClassifierMixin, check_is_fitted

from ._engine import CLAIM_FEATURES, EvidenceEngine
from ._transforms import flip_claim, preserve_claim, transform_evidence

__all__ = ["ClaimModel", "claim_rows", "transformed_rows", "monotonic_constraints", "aggregate_constraints"]

_UP = ("conflict", "swap", "novel", "adds", "drops", "borrowed", "reversed", "discordant", "prefix", "elsewhere",
       "second", "unsupported")


def monotonic_constraints(names=CLAIM_FEATURES) -> list[int]:
    """+1 for features whose growth can only mean less support, -1 for alignment strength, else 0."""
    out = []
    for n in names:
        if n.startswith("align.recall"):
            out.append(-1)
        elif not n.startswith(("align.", "claim.")) and any(u in n for u in _UP):
            out.append(1)
        else:
            out.append(0)
    return out


def aggregate_constraints(names, prefix: str = "evidence.") -> list[int]:
    """Constraints of features named ``prefix + claim feature`` (an answer's or a sentence's max, or for
    alignment strength min, over its claims: the direction of the claim feature holds); 0 for other names.

    >>> aggregate_constraints(["evidence.value.conflict.v1", "evidence.align.recall.v1", "support.min.v1"])
    [1, -1, 0]
    """
    cst = dict(zip(CLAIM_FEATURES, monotonic_constraints()))
    return [cst.get(n[len(prefix):], 0) if n.startswith(prefix) else 0 for n in names]


class ClaimModel(ClassifierMixin, BaseEstimator):
    """Gradient boosting over claim features with monotonic constraints.

    Parameters
    ----------
    max_leaf_nodes, min_samples_leaf, learning_rate, max_iter : see
        :class:`sklearn.ensemble.HistGradientBoostingClassifier`.
    monotonic : bool, default=True
        Apply :func:`monotonic_constraints`.
    random_state : int, default=0

    Attributes
    ----------
    estimator_ : HistGradientBoostingClassifier
    classes_ : ndarray
    n_features_in_ : int
    """

    def __init__(self, *, max_leaf_nodes=15, min_samples_leaf=40, learning_rate=0.06, max_iter=300, monotonic=True,
                 random_state=0):
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.monotonic = monotonic
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Fit on claim feature rows ``X`` (finite numbers) and labels ``y``."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import validate_data

        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        cst = monotonic_constraints() if self.monotonic and X.shape[1] == len(CLAIM_FEATURES) else None
        self.estimator_ = HistGradientBoostingClassifier(
            max_leaf_nodes=self.max_leaf_nodes, min_samples_leaf=self.min_samples_leaf,
            learning_rate=self.learning_rate, max_iter=self.max_iter, monotonic_cst=cst,
            random_state=self.random_state).fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.estimator_.classes_
        self.n_iter_ = self.estimator_.n_iter_
        return self

    def predict_proba(self, X):
        """Class probabilities; column 1 is the risk when the classes are 0 and 1."""
        from sklearn.utils.validation import validate_data

        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        return self.estimator_.predict_proba(X)

    def predict(self, X):
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


def _chunks(ex) -> list[str]:
    return [ex.context[c.start:c.end] for c in ex.chunks] or [ex.context]


def claim_rows(examples, engine: EvidenceEngine | None = None, *, exclude_implicit_true: bool = False):
    """Claims of answers read by the engine.

    Returns
    -------
    X : ndarray (n_claims, len(CLAIM_FEATURES))
    y : ndarray of int: 1 when a gold span overlaps the claim, 0 when not, -1 when the answer's spans are unknown
    owner : ndarray of int: the index of each claim's answer in ``examples``
    spans : list of (start, end)
    """
    from ..data import kept_spans

    engine = engine or EvidenceEngine()
    rows, ys, owner, spans = [], [], [], []
    for i, ex in enumerate(examples):
        gold = kept_spans(ex, exclude_implicit_true=exclude_implicit_true)
        r = engine.read(ex.output, _chunks(ex), ex.query or "")
        for c in r.claims:
            rows.append(c.features)
            ys.append(-1 if gold is None else int(any(s.start < c.end and c.start < s.end for s in gold)))
            owner.append(i)
            spans.append((c.start, c.end))
    X = np.vstack(rows) if rows else np.zeros((0, len(CLAIM_FEATURES)))
    return X, np.asarray(ys, dtype=np.int64), np.asarray(owner, dtype=np.int64), spans


def _rng(*parts) -> random.Random:
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def transformed_rows(examples, engine: EvidenceEngine | None = None, *, seed: int = 0, claim_rate: float = 0.35,
                     sentence_rate: float = 0.0, exclude=(), exclude_implicit_true: bool = False):
    """Claims made by transformation from labelled answers and their contexts.

    Each faithful claim (no gold span overlaps it) of an answer whose spans are known is, with
    probability ``claim_rate``, flipped once (label 1) and preserved once (label 0); with
    ``sentence_rate`` > 0, sentences of each distinct context are transformed too
    (:func:`~evqual.evidence.transform_evidence`).  ``exclude``: flip tags not to produce.

    Returns
    -------
    X : ndarray, y : ndarray of int, tags : list of str, owner : ndarray of int (answer index)
    """
    from ..data import kept_spans
    from ..text import split_claims, split_sentences

    engine = engine or EvidenceEngine()
    rows, ys, tags, owner = [], [], [], []
    seen_contexts = set()

    def add(text, chunks, query, label, tag, i):
        r = engine.read(text, chunks, query, claims=[(0, len(text))])
        rows.append(r.claims[0].features)
        ys.append(label)
        tags.append(tag)
        owner.append(i)

    for i, ex in enumerate(examples):
        gold = kept_spans(ex, exclude_implicit_true=exclude_implicit_true)
        if gold is None:
            continue
        chunks = _chunks(ex)
        query = ex.query or ""
        sents = [c[a:b] for c in chunks for a, b in split_sentences(c)]
        for s, e in split_claims(ex.output):
            if any(g.start < e and s < g.end for g in gold):
                continue
            rng = _rng(seed, ex.id, s)
            if rng.random() >= claim_rate:
                continue
            text = ex.output[s:e]
            got = flip_claim(text, sents, rng=rng, exclude=exclude)
            if got is not None:
                add(got[0], chunks, query, 1, got[1], i)
            got = preserve_claim(text, rng=rng)
            if got is not None:
                add(got[0], chunks, query, 0, got[1], i)
        key = (tuple(chunks), query)
        if sentence_rate > 0 and key not in seen_contexts:
            seen_contexts.add(key)
            for tc in transform_evidence(chunks, seed=seed, rate=sentence_rate, exclude=exclude):
                add(tc.text, chunks, query, tc.label, tc.tag, i)
    X = np.vstack(rows) if rows else np.zeros((0, len(CLAIM_FEATURES)))
    return X, np.asarray(ys, dtype=np.int64), tags, np.asarray(owner, dtype=np.int64)
