"""The method registry: every detector selectable by name.

=====================  =======  ====================================================================
name                   source   definition
=====================  =======  ====================================================================
majority               002      most frequent training label
metadata-lr            002      balanced logistic regression (liblinear, max_iter=400) on task,
                                generator, quality, temperature and length features
tfidf-lr               002      5,000 unigram TF-IDF (min_df=3) over query + context + output,
                                balanced logistic regression (max_iter=400)
evidence-lr            002      balanced logistic regression (max_iter=400) on the evidence features
                                (coverage, support, semantic, entity, number, length)
evidence-meta-rf       002      random forest: 80 trees, depth 8, min leaf 15, balanced subsample,
                                on evidence features, task and metadata
semantic-eq-gb         002      gradient boosting: 90 trees, rate 0.055, depth 3, min leaf 20,
                                subsample 0.85, on evidence features, task and metadata
lexical-overlap        004      sentence risk = 1 - max Jaccard with any chunk; response = max
bm25-evidence          004      sentence risk = 1 - normalised BM25 support; response = max
tfidf-cosine           004      sentence risk = 1 - max local TF-IDF cosine; response = max
nli-proxy              004      weighted support-gap rule per sentence; response = max
logreg-attribution     004      balanced logistic regression on sentence evidence-chain features;
                                response = max
random-forest          004      60-tree class-balanced random forest on sentence features;
                                response = max
ecs-span               004      40-tree ExtraTrees on ECS, support-gap, unsupported-detail and
                                task features per sentence; response = max
evqual                 ours     stacked: a claim model over the evidence engine's claims
                                (:class:`~evqual.evidence.ClaimModel`), a gradient-boosted sentence
                                model (sentence features, their response's context and their claims'
                                risks) and an output-text model (word 1-2-gram TF-IDF + LR); their
                                out-of-fold risks join the response features of a gradient-boosted
                                response model; content and task only (no generator, temperature or
                                quality)
evqual-meta            ours     the same with generator, temperature and quality features
=====================  =======  ====================================================================

Seed 002's random seed (37) is used for its methods, 42 for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import importlib

from ..evidence import ClaimModel
from ._estimators import (
    FeatureSelector,
    SentenceMaxClassifier,
    StackedEvidenceClassifier,
    TextColumn,
)

__all__ = ["MethodSpec", "METHODS", "get_method", "list_methods", "EVIDENCE_FAMILIES", "SEED_002",
           "RESPONSE_VARIANTS", "RESPONSE_FALLBACK"]

EVIDENCE_FAMILIES = ("coverage", "support", "semantic", "entity", "number", "length")
"""Seed 002's evidence-quality groups (Table 3 without metadata)."""

SEED_002 = 37
SEED = 42

_SKLEARN = {"DummyClassifier": "sklearn.dummy", "ExtraTreesClassifier": "sklearn.ensemble",
            "GradientBoostingClassifier": "sklearn.ensemble", "HistGradientBoostingClassifier": "sklearn.ensemble",
            "RandomForestClassifier": "sklearn.ensemble", "LogisticRegression": "sklearn.linear_model",
            "make_pipeline": "sklearn.pipeline", "StandardScaler": "sklearn.preprocessing",
            "CompactTfidfVectorizer": "evqual.models._tfidf"}


def _sk(name: str):
    """A scikit-learn class (or evqual's TF-IDF vectoriser), imported when a factory first runs: scoring with
    a saved model imports no scikit-learn (issue 41)."""
    return getattr(importlib.import_module(_SKLEARN[name]), name)


@dataclass(frozen=True)
class MethodSpec:
    """A named detector.

    Attributes
    ----------
    name : str
    source : str
        ``"seed 002"``, ``"seed 004"`` or ``"evqual"``.
    description : str
    make : callable
        Returns a fresh, unfitted scikit-learn classifier over detector frames.
    sentence_level : bool
        Whether the method scores sentences (and so has sentence metrics).
    uses_metadata : bool
        Whether it sees generator identity, temperature or quality.
    span_tagger : bool
        Whether a :class:`~evqual.models.SpanTagger` is fitted alongside it
        (character spans; evqual's methods).
    """

    name: str
    source: str
    description: str
    make: Callable
    sentence_level: bool
    uses_metadata: bool
    span_tagger: bool = False


def _lr(**kw):
    return _sk("LogisticRegression")(class_weight="balanced", max_iter=400, **kw)


def _majority():
    return _sk("make_pipeline")(FeatureSelector(families=["length"]), _sk("DummyClassifier")(strategy="most_frequent"))


def _metadata_lr():
    return _sk("make_pipeline")(FeatureSelector(families=["task", "length"], include_metadata=True), _sk("StandardScaler")(),
                         _lr(solver="liblinear", random_state=SEED_002))


def _tfidf_lr():
    return _sk("make_pipeline")(TextColumn(), _sk("CompactTfidfVectorizer")(max_features=5000, min_df=3, ngram_range=(1, 1)),
                         _lr(random_state=SEED_002))


def _evidence_lr():
    return _sk("make_pipeline")(FeatureSelector(families=EVIDENCE_FAMILIES), _sk("StandardScaler")(), _lr(random_state=SEED_002))


def _evidence_meta_rf():
    return _sk("make_pipeline")(
        FeatureSelector(families=EVIDENCE_FAMILIES + ("task",), include_metadata=True),
        _sk("RandomForestClassifier")(n_estimators=80, max_depth=8, min_samples_leaf=15,
                               class_weight="balanced_subsample", random_state=SEED_002, n_jobs=1))


def _semantic_eq_gb():
    return _sk("make_pipeline")(
        FeatureSelector(families=EVIDENCE_FAMILIES + ("task",), include_metadata=True),
        _sk("GradientBoostingClassifier")(n_estimators=90, learning_rate=0.055, max_depth=3, min_samples_leaf=20,
                                   subsample=0.85, random_state=SEED_002))


def _rule(name):
    return lambda: SentenceMaxClassifier(rule=name)


CHAIN_SENTENCE_FAMILIES = ("chain", "support", "entity", "number", "refusal", "length", "task")


def _logreg_attribution():
    return SentenceMaxClassifier(_sk("make_pipeline")(_sk("StandardScaler")(), _lr(random_state=SEED)),
                                 families=CHAIN_SENTENCE_FAMILIES)


def _random_forest():
    return SentenceMaxClassifier(
        _sk("RandomForestClassifier")(n_estimators=60, class_weight="balanced", min_samples_leaf=5, random_state=SEED,
                               n_jobs=1),
        families=CHAIN_SENTENCE_FAMILIES)


def _ecs_span():
    # ECS, support gap (recall, support), unsupported details (numbers, entities) and task
    return SentenceMaxClassifier(
        _sk("ExtraTreesClassifier")(n_estimators=40, class_weight="balanced", min_samples_leaf=5, random_state=SEED,
                             n_jobs=1),
        families=("chain", "support", "entity", "number", "task"))


def _hgb(seed=SEED, **kw):
    params = dict(max_iter=300, learning_rate=0.06, max_leaf_nodes=31, min_samples_leaf=40,
                  l2_regularization=1.0, random_state=seed)
    params.update(kw)
    return _sk("HistGradientBoostingClassifier")(**params)


def _output_text_lr():
    """Word 1-2-gram TF-IDF of the output alone + LR: wording and style of the answer."""
    return _sk("make_pipeline")(TextColumn("output"),
                         _sk("CompactTfidfVectorizer")(ngram_range=(1, 2), min_df=3, max_features=50000, sublinear_tf=True),
                         _sk("LogisticRegression")(C=2.0, class_weight="balanced", max_iter=2000))


SENTENCE_CONTEXT = ("coverage", "support", "chain", "novelty", "length")


def _evqual(include_metadata: bool):
    # tree size chosen on the validation parts of the cv5 training sides (never the held-out folds)
    return lambda: StackedEvidenceClassifier(_hgb(min_samples_leaf=20, max_leaf_nodes=15),
                                             _hgb(max_iter=250, min_samples_leaf=20, max_leaf_nodes=15),
                                             claim_estimator=ClaimModel(), claim_augment_weight=0.3,
                                             text_estimators=(("output_text", _output_text_lr()),),
                                             families=None, include_metadata=include_metadata,
                                             sentence_context=SENTENCE_CONTEXT, cv=3)


_SPECS = [
    ("majority", "seed 002", "most frequent training label", _majority, False, False),
    ("metadata-lr", "seed 002", "balanced LR on task, generator, quality, temperature, length", _metadata_lr,
     False, True),
    ("tfidf-lr", "seed 002", "5,000-unigram TF-IDF + balanced LR", _tfidf_lr, False, False),
    ("evidence-lr", "seed 002", "balanced LR on evidence features", _evidence_lr, False, False),
    ("evidence-meta-rf", "seed 002", "random forest on evidence features + metadata", _evidence_meta_rf,
     False, True),
    ("semantic-eq-gb", "seed 002", "gradient boosting on evidence features + metadata (seed 002's proposal)",
     _semantic_eq_gb, False, True),
    ("lexical-overlap", "seed 004", "1 - max Jaccard, max over sentences", _rule("lexical-overlap"), True, False),
    ("bm25-evidence", "seed 004", "1 - normalised BM25, max over sentences", _rule("bm25-evidence"), True, False),
    ("tfidf-cosine", "seed 004", "1 - max TF-IDF cosine, max over sentences", _rule("tfidf-cosine"), True, False),
    ("nli-proxy", "seed 004", "weighted support-gap rule, max over sentences", _rule("nli-proxy"), True, False),
    ("logreg-attribution", "seed 004", "balanced LR on sentence evidence-chain features", _logreg_attribution,
     True, False),
    ("random-forest", "seed 004", "60-tree balanced RF on sentence features", _random_forest, True, False),
    ("ecs-span", "seed 004", "40-tree ExtraTrees on ECS, support-gap, detail and task features (seed 004's "
     "proposal)", _ecs_span, True, False),
    ("evqual", "evqual", "stacked sentence + response gradient boosting, content and task only",
     _evqual(False), True, False),
    ("evqual-meta", "evqual", "stacked sentence + response gradient boosting with generator metadata",
     _evqual(True), True, True),
]

METHODS: dict[str, MethodSpec] = {n: MethodSpec(n, s, d, m, sl, um, span_tagger=(s == "evqual"))
                                  for n, s, d, m, sl, um in _SPECS}


def _evqual_response(include_metadata: bool):
    # evqual's response features (all content families, the checks, task; metadata for -meta) without the
    # sentence model, which needs sentence labels (spans); smaller leaves than evqual's for small logs
    return lambda: _sk("make_pipeline")(FeatureSelector(families=None, include_metadata=include_metadata),
                                 _hgb(min_samples_leaf=10, max_leaf_nodes=15))


RESPONSE_VARIANTS: dict[str, MethodSpec] = {
    "evqual-response": MethodSpec("evqual-response", "evqual", "evqual's response features and gradient boosting "
                                  "without the sentence model (training data without spans)",
                                  _evqual_response(False), False, False),
    "evqual-meta-response": MethodSpec("evqual-meta-response", "evqual", "evqual-meta's response features and "
                                       "gradient boosting without the sentence model (training data without spans)",
                                       _evqual_response(True), False, True),
}
"""Response-level variants that :class:`~evqual.models.Detector` falls back to; not in :data:`METHODS`
(``evqual reproduce`` does not run them) but known to :func:`get_method` and to saved models."""

RESPONSE_FALLBACK = {"evqual": "evqual-response", "evqual-meta": "evqual-meta-response"}
"""Method -> the response-level variant it is trained as when the data have labels but no spans."""


def get_method(name: str) -> MethodSpec:
    """The :class:`MethodSpec` called ``name`` (a method of :data:`METHODS` or of :data:`RESPONSE_VARIANTS`).

    Raises
    ------
    ValueError
        Naming the known methods when ``name`` is not one.
    """
    try:
        return METHODS[name] if name in METHODS else RESPONSE_VARIANTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown method {name!r}; choose one of: {', '.join(METHODS)}") from None


def list_methods(source: str | None = None) -> list[str]:
    """Method names, optionally of one source (``"seed 002"``, ``"seed 004"``, ``"evqual"``)."""
    return [n for n, s in METHODS.items() if source is None or s.source == source]
