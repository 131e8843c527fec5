"""Detectors: every method of seeds 002 and 004 plus evqual's own, by name.

>>> from evqual.models import list_methods
>>> list_methods("evqual")
['evqual', 'evqual-meta']
"""

from ._detector import (
    CALIBRATIONS,
    FLOOR_CHECKS,
    FLOOR_MIN_PRECISION,
    FLOOR_PRIOR,
    THRESHOLD_RULES,
    Detector,
    evidence_floors,
    seed002_objective,
    validation_split,
)
from ._estimators import FeatureSelector, SentenceMaxClassifier, StackedEvidenceClassifier, TextColumn
from ._frame import FrameBuilder, LiteFrame, SentenceBlock
from ._io import (
    META_FORMAT,
    MODEL_SHA256_ENV,
    READ_FORMATS,
    TRUSTED_TYPES,
    ModelLoadError,
    build_model,
    check_rebuild,
    default_model_path,
    fit_detector,
    load_detector,
    model_features,
    prediction_fingerprint,
    read_meta,
    save_detector,
    training_data_info,
)
from ._methods import METHODS, MethodSpec, get_method, list_methods
from ._spans import SpanTagger, span_scores, tokens_to_spans

__all__ = [
    "FLOOR_CHECKS",
    "FLOOR_MIN_PRECISION",
    "FLOOR_PRIOR",
    "evidence_floors",
    "CALIBRATIONS",
    "METHODS",
    "THRESHOLD_RULES",
    "Detector",
    "FeatureSelector",
    "FrameBuilder",
    "LiteFrame",
    "META_FORMAT",
    "MODEL_SHA256_ENV",
    "READ_FORMATS",
    "MethodSpec",
    "ModelLoadError",
    "TRUSTED_TYPES",
    "SentenceBlock",
    "SentenceMaxClassifier",
    "SpanTagger",
    "StackedEvidenceClassifier",
    "TextColumn",
    "build_model",
    "check_rebuild",
    "default_model_path",
    "fit_detector",
    "get_method",
    "list_methods",
    "load_detector",
    "model_features",
    "prediction_fingerprint",
    "read_meta",
    "save_detector",
    "training_data_info",
    "seed002_objective",
    "span_scores",
    "tokens_to_spans",
    "validation_split",
]
