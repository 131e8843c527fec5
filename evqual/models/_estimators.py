"""Estimators over detector frames (see :mod:`evqual.models._frame`).

* :class:`FeatureSelector` picks response-level feature columns by family.
* :class:`TextColumn` hands the joined text to a text vectoriser.
* :class:`SentenceMaxClassifier` scores each sentence (a fitted classifier or
  a fixed rule) and gives a response the maximum of its sentence risks, as
  seed 004 does.
* :class:`StackedEvidenceClassifier` is evqual's own detector: a sentence
  model whose out-of-fold risks, aggregated per response, join the response
  features of a response model.
"""

from __future__ import annotations

import numpy as np
from .._estimator import BaseEstimator, ClassifierMixin, TransformerMixin, check_is_fitted
from ..features import feature_spec
from ._fasttrees import fast_proba
from ._frame import CLAIM, OUTPUT, SENT, TEXT

__all__ = ["CompactTfidfVectorizer", "FeatureSelector", "TextColumn", "SentenceMaxClassifier",
           "StackedEvidenceClassifier", "RULES", "aggregate_sentence_risks", "AGGREGATE_NAMES",
           "aggregate_claim_risks", "CLAIM_AGGREGATE_NAMES", "SENTENCE_CLAIM_NAMES", "sentence_claim_risks"]


def __getattr__(name: str):
    # CompactTfidfVectorizer derives from scikit-learn's TfidfVectorizer: it is imported when first asked for
    # (saved models name it here), so that scoring imports no scikit-learn
    if name == "CompactTfidfVectorizer":
        from ._tfidf import CompactTfidfVectorizer

        return CompactTfidfVectorizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _clone(est):
    from sklearn.base import clone

    return clone(est)


def _family(name: str) -> str | None:
    try:
        return feature_spec(name).family
    except KeyError:
        return None


def select_names(names, families=None, include_metadata=False, exclude=()) -> list[str]:
    """Feature names of the given families (``None`` = every content family)."""
    out = []
    for n in names:
        fam = _family(n)
        if fam is None or n in exclude:
            continue
        if fam == "meta":
            if include_metadata:
                out.append(n)
        elif families is None or fam in families:
            out.append(n)
    return out


class FeatureSelector(TransformerMixin, BaseEstimator):
    """Select response-level feature columns of a detector frame by family.

    Parameters
    ----------
    families : sequence of str or None
        Content families to keep (``None`` = all).
    include_metadata : bool
        Keep the ``meta`` family too.
    exclude : sequence of str
        Feature names to drop.
    """

    def __init__(self, *, families=None, include_metadata=False, exclude=()):
        self.families = families
        self.include_metadata = include_metadata
        self.exclude = exclude

    def fit(self, X, y=None):
        self.columns_ = select_names(X.columns, self.families, self.include_metadata, self.exclude)
        if not self.columns_:
            raise ValueError("FeatureSelector selected no column; check 'families'.")
        return self

    def transform(self, X):
        check_is_fitted(self, "columns_")
        return X[self.columns_].to_numpy(dtype=np.float64)

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self, "columns_")
        return np.asarray(self.columns_, dtype=object)


class TextColumn(TransformerMixin, BaseEstimator):
    """A text column of the frame as a list of strings.

    Parameters
    ----------
    column : {"text", "output"}, default="text"
        ``"text"``: query, context and output joined; ``"output"``: the output alone.
    """

    def __init__(self, column="text"):
        self.column = column

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return X[OUTPUT if self.column == "output" else TEXT].tolist()


def encode_vocabulary(vocab: dict) -> tuple[np.ndarray, np.ndarray]:
    """A ``{term: column}`` dict as ``(UTF-8 bytes of the terms in column order, term offsets)``.

    >>> data, offsets = encode_vocabulary({"b": 1, "a": 0, "é": 2})
    >>> data.tobytes().decode("utf-8"), offsets.tolist()
    ('abé', [0, 1, 2, 4])
    """
    n = len(vocab)
    terms = [None] * n
    for term, i in vocab.items():
        if not isinstance(term, str) or isinstance(i, bool) or not 0 <= int(i) < n or terms[int(i)] is not None:
            raise ValueError("vocabulary_ must map distinct str terms to the columns 0..n-1")
        terms[int(i)] = term
    encoded = [t.encode("utf-8") for t in terms]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def decode_vocabulary(data, offsets) -> dict:
    """The ``{term: column}`` dict of :func:`encode_vocabulary`'s arrays, validated.

    Raises
    ------
    ValueError
        When the arrays are not a 1-D ``uint8`` array and a 1-D ``int64``
        array of offsets from 0 to its length that never decrease, a term is
        not valid UTF-8 or a term occurs twice.

    >>> decode_vocabulary(*encode_vocabulary({"b": 1, "a": 0}))
    {'a': 0, 'b': 1}
    >>> decode_vocabulary(np.frombuffer(b"ab", dtype=np.uint8), np.array([0, 1, 1]))
    Traceback (most recent call last):
    ...
    ValueError: vocabulary_offsets_ must run from 0 to the length of vocabulary_utf8_ without decreasing
    """
    if type(data) is not np.ndarray or data.dtype != np.uint8 or data.ndim != 1:
        raise ValueError("vocabulary_utf8_ must be a 1-D uint8 array")
    if type(offsets) is not np.ndarray or offsets.dtype != np.int64 or offsets.ndim != 1 or len(offsets) < 1:
        raise ValueError("vocabulary_offsets_ must be a 1-D int64 array")
    if offsets[0] != 0 or offsets[-1] != len(data) or np.any(np.diff(offsets) < 0):
        raise ValueError("vocabulary_offsets_ must run from 0 to the length of vocabulary_utf8_ without decreasing")
    # One decode of the whole buffer, then the terms sliced from the text in C (map, zip): a 50,000-term
    # vocabulary is part of every load (issue 41).  Byte offsets become character offsets by subtracting the
    # UTF-8 continuation bytes before them; every term is valid UTF-8 exactly when the whole buffer is and no
    # offset falls on a continuation byte (inside a character).
    try:
        text = data.tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"vocabulary_utf8_ is not valid UTF-8 ({exc.reason})") from None
    continuation = (data & 0xC0) == 0x80
    inside = offsets[:-1]
    if continuation[inside[inside < len(data)]].any():
        raise ValueError("vocabulary_utf8_ is not valid UTF-8 (a term boundary splits a character)")
    before = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(continuation, out=before[1:])
    chars = (offsets - before[offsets]).tolist()
    vocab = dict(zip(map(text.__getitem__, map(slice, chars[:-1], chars[1:])), range(len(chars) - 1)))
    if len(vocab) != len(chars) - 1:
        raise ValueError("vocabulary_utf8_ holds a term twice")
    return vocab


# ---------------------------------------------------------------- sentence rules (seed 004)
def _col(block_names, name):
    return block_names.index(name)


def _rule_lexical(V, names):
    return 1.0 - V[:, _col(names, "sent.chain.jaccard.v1")]


def _rule_bm25(V, names):
    return 1.0 - V[:, _col(names, "sent.chain.bm25.v1")]


def _rule_tfidf(V, names):
    return 1.0 - V[:, _col(names, "sent.chain.tfidf.v1")]


def _rule_nli_proxy(V, names):
    """Weighted support gap: 0.35 (1 - TF-IDF) + 0.25 (1 - recall) + 0.20 number rate
    + 0.15 entity rate + 0.05 refusal (seed 004's NLI-proxy; the weights are ours)."""
    r = (0.35 * (1.0 - V[:, _col(names, "sent.chain.tfidf.v1")])
         + 0.25 * (1.0 - V[:, _col(names, "sent.chain.recall.v1")])
         + 0.20 * V[:, _col(names, "sent.number.new_rate.v2")]
         + 0.15 * V[:, _col(names, "sent.entity.unsupported_rate.v1")]
         + 0.05 * V[:, _col(names, "sent.refusal.v1")])
    return np.clip(r, 0.0, 1.0)


RULES = {"lexical-overlap": _rule_lexical, "bm25-evidence": _rule_bm25, "tfidf-cosine": _rule_tfidf,
         "nli-proxy": _rule_nli_proxy}

AGGREGATE_NAMES = ("agg.max", "agg.mean", "agg.top2", "agg.frac50", "agg.count50", "agg.first", "agg.last")


def aggregate_sentence_risks(risks: list[np.ndarray]) -> np.ndarray:
    """Per response: max, mean, mean of the top two, share and count above 0.5, first, last."""
    out = np.zeros((len(risks), len(AGGREGATE_NAMES)))
    for i, r in enumerate(risks):
        if len(r) == 0:
            continue
        s = np.sort(r)[::-1]
        out[i] = [s[0], r.mean(), s[:2].mean(), (r > 0.5).mean(), (r > 0.5).sum(), r[0], r[-1]]
    return out


CLAIM_AGGREGATE_NAMES = ("agg.claim.max", "agg.claim.noisy_or", "agg.claim.top2", "agg.claim.mean",
                         "agg.claim.count50")
"""Per response, over its claims' risks: max, noisy-or ``1 - prod(1 - r)``, mean of the top two, mean,
count above 0.5."""

SENTENCE_CLAIM_NAMES = ("sent.claim.max", "sent.claim.noisy_or", "sent.claim.count")
"""Per sentence, over the risks of its claims: max, noisy-or, number of claims."""


def aggregate_claim_risks(risks: list[np.ndarray]) -> np.ndarray:
    """:data:`CLAIM_AGGREGATE_NAMES` of each response's claim risks (zeros for a response without claims).

    >>> aggregate_claim_risks([np.array([0.5, 0.2]), np.zeros(0)]).round(2).tolist()
    [[0.5, 0.6, 0.35, 0.35, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]]
    """
    out = np.zeros((len(risks), len(CLAIM_AGGREGATE_NAMES)))
    for i, r in enumerate(risks):
        if len(r) == 0:
            continue
        s = np.sort(r)[::-1]
        out[i] = [s[0], 1.0 - np.prod(1.0 - r), s[:2].mean(), r.mean(), (r > 0.5).sum()]
    return out


def sentence_claim_risks(blocks, risks, n_sentences) -> list[np.ndarray]:
    """Per response, a ``(n_sentences, len(SENTENCE_CLAIM_NAMES))`` array of its sentences' claim risks."""
    out = []
    for b, r, n in zip(blocks, risks, n_sentences):
        a = np.zeros((n, len(SENTENCE_CLAIM_NAMES)))
        if len(r) and n:
            idx = np.minimum(np.asarray(b.sentence, dtype=np.int64), n - 1)
            np.maximum.at(a[:, 0], idx, r)
            survive = np.ones(n)
            np.multiply.at(survive, idx, 1.0 - r)
            a[:, 1] = 1.0 - survive
            np.add.at(a[:, 2], idx, 1.0)
        out.append(a)
    return out


def _stack_sentences(X, cols, with_labels: bool, response_cols=(), extra=None):
    blocks = X[SENT].tolist()
    R = X[list(response_cols)].to_numpy(dtype=np.float64) if response_cols else None
    rows, labels, lengths = [], [], []
    n_extra = extra[0].shape[1] if extra is not None and len(extra) else 0
    for i, b in enumerate(blocks):
        lengths.append(len(b.values))
        if len(b.values):
            v = b.values[:, cols]
            if R is not None:
                v = np.hstack([v, np.repeat(R[i:i + 1], len(v), axis=0)])
            if extra is not None:
                v = np.hstack([v, extra[i]])
            rows.append(v)
        if with_labels:
            labels.append(b.labels if b.labels is not None else np.full(len(b.values), -1))
    V = np.vstack(rows) if rows else np.zeros((0, len(cols) + len(response_cols) + n_extra))
    y = np.concatenate(labels) if with_labels and labels else None
    return V, y, lengths


def _split_back(values: np.ndarray, lengths) -> list[np.ndarray]:
    out, pos = [], 0
    for n in lengths:
        out.append(values[pos:pos + n])
        pos += n
    return out


class SentenceMaxClassifier(ClassifierMixin, BaseEstimator):
    """Score sentences, give each response its highest sentence risk (seed 004).

    Parameters
    ----------
    estimator : classifier or None
        Fitted on sentence rows (sentences of responses whose spans are
        unknown are skipped).  ``None`` with ``rule`` set gives an
        unsupervised or rule-based scorer.
    rule : str or None
        A key of :data:`RULES`.
    families : sequence of str or None
        Sentence feature families for ``estimator``.
    include_metadata : bool
        Also give ``estimator`` the metadata features.
    response_families : sequence of str or None
        Response-level feature families appended to every sentence row of the
        response (context for the sentence model); ``None`` adds none.
    """

    def __init__(self, estimator=None, *, rule=None, families=None, include_metadata=False,
                 response_families=None):
        self.estimator = estimator
        self.rule = rule
        self.families = families
        self.include_metadata = include_metadata
        self.response_families = response_families

    def _columns(self, names):
        return [names.index(n) for n in select_names(names, self.families, self.include_metadata)]

    def fit(self, X, y=None, *, extra=None):
        """Fit on the sentence rows of ``X``; ``extra`` (one ``(n_sentences, k)`` array per response) adds
        columns to every sentence row (the claim risks of :class:`StackedEvidenceClassifier`)."""
        if (self.estimator is None) == (self.rule is None):
            raise ValueError("SentenceMaxClassifier needs exactly one of 'estimator' and 'rule'.")
        if self.rule is not None and self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}; expected one of {sorted(RULES)}")
        self.classes_ = np.array([0, 1])
        names = X[SENT].iloc[0].names if len(X) else ()
        self.sentence_names_ = tuple(names)
        if self.rule is None:
            self.columns_ = self._columns(list(names))
            self.response_columns_ = (select_names(X.columns, self.response_families, self.include_metadata)
                                      if self.response_families is not None else [])
            V, ys, _ = _stack_sentences(X, self.columns_, with_labels=True, response_cols=self.response_columns_,
                                        extra=extra)
            keep = ys >= 0
            if keep.sum() == 0 or len(np.unique(ys[keep])) < 2:
                raise ValueError("no sentence labels with both classes to fit on: this method learns from sentence "
                                 "labels, which come from the spans of hallucinated answers ('spans' in the generic "
                                 "JSONL), and the data have none; use a response-level method (evqual and "
                                 "evqual-meta fall back to one by themselves).")
            self.estimator_ = _clone(self.estimator).fit(V[keep], ys[keep])
        return self

    def sentence_proba(self, X, *, extra=None) -> list[np.ndarray]:
        """Risk of each sentence, one array per response (input order); ``extra`` as in :meth:`fit`."""
        check_is_fitted(self, "classes_")
        if self.rule is not None:
            blocks = X[SENT].tolist()
            fn = RULES[self.rule]
            return [fn(b.values, list(b.names)) if len(b.values) else np.zeros(0) for b in blocks]
        V, _, lengths = _stack_sentences(X, self.columns_, with_labels=False,
                                         response_cols=getattr(self, "response_columns_", []), extra=extra)
        p = fast_proba(self.estimator_, V)[:, 1] if len(V) else np.zeros(0)
        return _split_back(p, lengths)

    def predict_proba(self, X):
        risks = self.sentence_proba(X)
        s = np.array([r.max() if len(r) else 0.0 for r in risks])
        return np.c_[1.0 - s, s]

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(int)

    def feature_importances(self):
        """``(names, impurity importances)`` of the sentence model, if it has them."""
        est = getattr(self, "estimator_", None)
        imp = getattr(est, "feature_importances_", None)
        if imp is None and hasattr(est, "steps"):
            imp = getattr(est.steps[-1][1], "feature_importances_", None)
        if imp is None:
            return None
        names = [self.sentence_names_[c] for c in self.columns_] + list(getattr(self, "response_columns_", []))
        return names, np.asarray(imp)


class StackedEvidenceClassifier(ClassifierMixin, BaseEstimator):
    """evqual's detector: claim and sentence risks stacked into a response model.

    1. With ``claim_estimator``, a claim model is fitted on the claim rows of
       the evidence engine (:class:`~evqual.models.ClaimBlock`: a claim is
       positive when a gold span overlaps it), plus, at ``claim_augment_weight``,
       the claims made by transformation of the answers' own faithful claims.
       Its out-of-fold claim risks are aggregated per sentence
       (:data:`SENTENCE_CLAIM_NAMES`, appended to the sentence rows) and per
       response (:data:`CLAIM_AGGREGATE_NAMES`).
    2. A sentence model is fitted on sentence rows (sentence features, the
       response context they carry and their claims' risks).
    3. Its out-of-fold sentence risks on the training responses (``cv``
       folds grouped by ``source_id``, so a response never sees a model
       trained on its own source) are aggregated per response
       (:func:`aggregate_sentence_risks`) and appended to the response
       features.
    4. A response model is fitted on those; the claim and sentence models are
       refitted on all training rows for prediction.

    Parameters
    ----------
    sentence_estimator, response_estimator : classifiers
    claim_estimator : classifier or None, default=None
        The claim model (evqual uses :class:`~evqual.evidence.ClaimModel`);
        ``None``: no claim stage (models saved before it load so).
    claim_augment_weight : float, default=0.3
        Sample weight of the transformed claims (0 leaves them out).
    claim_exclude_tags : sequence of str, default=()
        Transformation tags (:attr:`evqual.models.ClaimBlock.extra_tags`,
        such as ``"value"`` or ``"logic:quantity"``) whose transformed claims
        are left out of the claim model's training: for leave-one-type-out
        measurement (``scripts/loto_detector.py``).
    families : sequence of str or None
        Content families for both models.
    include_metadata : bool
        Give both models generator, quality and temperature features.
    text_estimators : sequence of (name, classifier)
        Text models (of the output, of its novel tokens ...) whose out-of-fold
        risks join the response features.
    sentence_context : sequence of str or None
        Response-level families appended to every sentence row.
    cv : int
        Folds for the out-of-fold claim and sentence risks.
    monotonic_checks : bool
        Constrain the response model (when it takes ``monotonic_cst``, as
        ``HistGradientBoostingClassifier`` does) to a risk that never falls
        when a claim-aligned contradiction check (``check.*``) fires more, when
        an ``evidence.*`` feature moves the way its claim feature's constraint
        says, or when the highest claim risk rises.
    """

    monotonic_checks = True  # models saved before the parameter existed load with the default
    claim_estimator = None
    claim_augment_weight = 0.3
    claim_exclude_tags = ()

    def __init__(self, sentence_estimator, response_estimator, *, claim_estimator=None, claim_augment_weight=0.3,
                 claim_exclude_tags=(), text_estimators=(), families=None, include_metadata=False,
                 sentence_context=None, cv=3, monotonic_checks=True):
        self.sentence_estimator = sentence_estimator
        self.response_estimator = response_estimator
        self.claim_estimator = claim_estimator
        self.claim_augment_weight = claim_augment_weight
        self.claim_exclude_tags = claim_exclude_tags
        self.text_estimators = text_estimators
        self.sentence_context = sentence_context
        self.families = families
        self.include_metadata = include_metadata
        self.cv = cv
        self.monotonic_checks = monotonic_checks

    def _sentence_model(self):
        return SentenceMaxClassifier(self.sentence_estimator, families=self.families,
                                     include_metadata=self.include_metadata,
                                     response_families=self.sentence_context)

    @property
    def _with_claims(self) -> bool:
        return getattr(self, "claim_model_", None) is not None

    def _response_matrix(self, X, risks, text_risks, claim_risks=None):
        R = X[self.response_columns_].to_numpy(dtype=np.float64)
        parts = [R, aggregate_sentence_risks(risks), text_risks]
        if claim_risks is not None:
            parts.append(aggregate_claim_risks(claim_risks))
        return np.hstack(parts)

    # ---------------------------------------------------------------- claims
    def _fit_claims(self, X, rows):
        """A claim model fitted on the claims (and transformed claims) of the responses ``rows``."""
        blocks = X[CLAIM].tolist()
        Xs, ys, ws = [], [], []
        w = float(self.claim_augment_weight)
        exclude = frozenset(getattr(self, "claim_exclude_tags", ()) or ())
        for i in rows:
            b = blocks[i]
            if b.labels is not None and len(b.labels):
                Xs.append(b.values)
                ys.append(b.labels)
                ws.append(np.ones(len(b.labels)))
            if w > 0 and b.extra_values is not None and len(b.extra_values):
                keep = slice(None)
                if exclude:
                    tags = getattr(b, "extra_tags", None)
                    if tags is None:
                        raise ValueError("claim_exclude_tags needs claim blocks with transformation tags "
                                         "(a frame built by this version's FrameBuilder)")
                    keep = np.fromiter((t not in exclude for t in tags), bool, len(tags))
                Xs.append(b.extra_values[keep])
                ys.append(b.extra_labels[keep])
                ws.append(np.full(len(ys[-1]), w))
        if not Xs:
            return None
        y = np.concatenate(ys)
        if len(np.unique(y)) < 2:
            return None
        return _clone(self.claim_estimator).fit(np.vstack(Xs), y, sample_weight=np.concatenate(ws))

    @staticmethod
    def _claim_risks_of(model, blocks) -> list[np.ndarray]:
        lengths = [len(b.values) for b in blocks]
        V = np.vstack([b.values for b in blocks if len(b.values)]) if any(lengths) else None
        if V is None:
            return [np.zeros(0) for _ in blocks]
        p = fast_proba(getattr(model, "estimator_", model), V)[:, 1]
        return _split_back(p, lengths)

    def claim_proba(self, X) -> list[np.ndarray] | None:
        """Risk of each claim of the evidence engine, one array per response (``None`` without a claim model)."""
        check_is_fitted(self, "response_model_")
        if not self._with_claims:
            return None
        return self._claim_risks_of(self.claim_model_, X[CLAIM].tolist())

    def _sentence_extra(self, X, claim_risks):
        if claim_risks is None:
            return None
        return sentence_claim_risks(X[CLAIM].tolist(), claim_risks, [len(b.values) for b in X[SENT].tolist()])

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y):
        y = np.asarray(y).astype(int)
        self.classes_ = np.array([0, 1])
        self.response_columns_ = select_names(X.columns, self.families, self.include_metadata)
        groups = X["source_id"].to_numpy() if "source_id" in X.columns else np.arange(len(X))
        n_groups = len(np.unique(groups))
        from sklearn.model_selection import GroupKFold

        folds = list(GroupKFold(n_splits=self.cv).split(X, y, groups)) if n_groups >= self.cv else []
        # 1. claims: out-of-fold risks of the training responses, then a model on all of them
        claim_oof = None
        self.claim_model_ = None
        if self.claim_estimator is not None and CLAIM in X.columns:
            blocks = X[CLAIM].tolist()
            self.claim_model_ = self._fit_claims(X, range(len(X)))
            if self.claim_model_ is not None:
                claim_oof = [None] * len(X)
                for tr, te in folds:
                    m = self._fit_claims(X, tr) or self.claim_model_
                    for i, r in zip(te, self._claim_risks_of(m, [blocks[i] for i in te])):
                        claim_oof[i] = r
                if any(r is None for r in claim_oof):
                    claim_oof = self._claim_risks_of(self.claim_model_, blocks)
        extra = self._sentence_extra(X, claim_oof)
        # 2-3. sentences and text models: out-of-fold risks
        oof: list = [None] * len(X)
        names = [name for name, _ in self.text_estimators]
        text_oof = np.full((len(X), len(names)), np.nan)
        for tr, te in folds:
            m = self._sentence_model().fit(X.iloc[tr], y[tr], extra=[extra[i] for i in tr] if extra else None)
            for i, r in zip(te, m.sentence_proba(X.iloc[te], extra=[extra[i] for i in te] if extra else None)):
                oof[i] = r
            for j, (_, est) in enumerate(self.text_estimators):
                text_oof[te, j] = _clone(est).fit(X.iloc[tr], y[tr]).predict_proba(X.iloc[te])[:, 1]
        self.sentence_model_ = self._sentence_model().fit(X, y, extra=extra)
        self.text_models_ = [_clone(est).fit(X, y) for _, est in self.text_estimators]
        if any(r is None for r in oof):
            oof = self.sentence_model_.sentence_proba(X, extra=extra)
            text_oof = self._text_risks(X)
        # out-of-fold sentence and claim risks of the training rows, for a span tagger fitted next (not saved)
        self.oof_sentence_risks_ = oof
        self.oof_claim_risks_ = claim_oof
        # 4. the response model
        claim_names = list(CLAIM_AGGREGATE_NAMES) if claim_oof is not None else []
        response = _clone(self.response_estimator)
        if self.monotonic_checks and "monotonic_cst" in response.get_params():
            from ..evidence import aggregate_constraints

            cst = [1 if c.startswith("check.") else e
                   for c, e in zip(self.response_columns_, aggregate_constraints(self.response_columns_))]
            cst += [0] * (len(AGGREGATE_NAMES) + len(names))
            cst += [1 if n in ("agg.claim.max", "agg.claim.noisy_or") else 0 for n in claim_names]
            response.set_params(monotonic_cst=cst if any(cst) else None)
        self.response_model_ = response.fit(self._response_matrix(X, oof, text_oof, claim_oof), y)
        self.feature_names_ = (list(self.response_columns_) + list(AGGREGATE_NAMES) + [f"agg.{n}" for n in names]
                               + claim_names)
        return self

    def _text_risks(self, X) -> np.ndarray:
        if not self.text_models_:
            return np.zeros((len(X), 0))
        return np.column_stack([fast_proba(m, X)[:, 1] for m in self.text_models_])

    def sentence_proba(self, X) -> list[np.ndarray]:
        check_is_fitted(self, "sentence_model_")
        claim_risks = self.claim_proba(X) if self._with_claims else None
        return self.sentence_model_.sentence_proba(X, extra=self._sentence_extra(X, claim_risks))

    def predict_proba(self, X):
        return self.predict_proba_and_sentences(X)[0]

    def predict_proba_and_sentences(self, X):
        """``(predict_proba(X), sentence risks per row)`` with the claim and sentence models run once."""
        proba, risks, _ = self.predict_all(X)
        return proba, risks

    def predict_all(self, X):
        """``(predict_proba(X), sentence risks per row, claim risks per row or None)``, each model run once."""
        check_is_fitted(self, "response_model_")
        claim_risks = self.claim_proba(X) if self._with_claims else None
        risks = self.sentence_model_.sentence_proba(X, extra=self._sentence_extra(X, claim_risks))
        M = self._response_matrix(X, risks, self._text_risks(X), claim_risks)
        return fast_proba(self.response_model_, M), risks, claim_risks

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(int)

    def feature_importances(self):
        imp = getattr(self.response_model_, "feature_importances_", None)
        if imp is None:
            return None
        return self.feature_names_, np.asarray(imp)
