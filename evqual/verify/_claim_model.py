"""The claim-level model of the ``rules`` backend: P(a claim is hallucinated | its evidence).

Each claim becomes a one-claim answer: ``(query, the answer's context chunks,
claim)``, featurized by the detector's own :class:`evqual.features.EvidenceFeaturizer`
(content families except ``task``: a claim is judged on its evidence, not its task).  A
gradient-boosted classifier, constrained where the evidence engine's features
have a known direction (:func:`evqual.evidence.aggregate_constraints`: more
conflicts or unsupported items never lower the risk, a stronger alignment never
raises it), learns from claims labelled by
gold spans (a claim is hallucinated when a gold span overlaps it), and is
calibrated (isotonic regression) on a held-out group of answers, the
``CalibratedClassifierCV(FrozenEstimator(...))`` recipe written out so that the saved model holds only
types evqual's loader trusts.

The context is passed as the list of its chunk texts, the same way at training
and at verification time, so that a judge sees exactly what the model saw.
"""

from __future__ import annotations

import numpy as np
from .._estimator import BaseEstimator, ClassifierMixin, check_is_fitted

from ..data import kept_spans, make_example
from ..features import CONTENT_FAMILIES, EvidenceFeaturizer
from ..evidence import aggregate_constraints

__all__ = ["CLAIM_FAMILIES", "CLAIM_MODEL_FORMAT", "ClaimModel", "claim_dataset", "claim_example",
           "default_claim_model_path", "load_claim_model", "save_claim_model"]

CLAIM_FAMILIES = tuple(f for f in CONTENT_FAMILIES if f != "task")


def claim_example(query: str, chunks, claim_text: str):
    """The one-claim example a claim is judged as: ``chunks`` (list of str) as the context."""
    return make_example(query=query or "", context=[c for c in chunks] or [""], output=claim_text)


def claim_dataset(examples, extractor, *, exclude_implicit_true: bool = False):
    """Claim examples of labelled answers.

    Returns
    -------
    claim_examples : list of Example
    y : ndarray of int (1 = a gold span overlaps the claim)
    answer_index : ndarray of int (the position of the claim's answer in ``examples``)
    claims : list of Claim
    """
    examples = list(examples)
    all_claims = extractor.extract_batch([ex.output for ex in examples])
    out, y, owner, claims = [], [], [], []
    for i, (ex, cl) in enumerate(zip(examples, all_claims)):
        spans = kept_spans(ex, exclude_implicit_true=exclude_implicit_true)
        if spans is None:
            continue
        chunks = [ex.context[c.start:c.end] for c in ex.chunks] or [ex.context]
        for c in cl:
            out.append(claim_example(ex.query, chunks, c.text))
            y.append(int(any(sp.start < c.end and c.start < sp.end for sp in spans)))
            owner.append(i)
            claims.append(c)
    return out, np.asarray(y, dtype=np.int64), np.asarray(owner, dtype=np.int64), claims


class ClaimModel(ClassifierMixin, BaseEstimator):
    """Calibrated P(hallucinated) of one-claim examples.

    Parameters
    ----------
    max_iter : int, default=300
    learning_rate : float, default=0.05
    calibration : {"isotonic", "sigmoid"}, default="isotonic"
    validation_size : float, default=0.2
        Share of answers (grouped by ``groups``) held out to calibrate.
    random_state : int, default=0

    Attributes
    ----------
    featurizer_ : EvidenceFeaturizer
    base_ : HistGradientBoostingClassifier
    calibrator_ : IsotonicRegression or LogisticRegression
    feature_names_ : list of str
    classes_ : ndarray

    Examples
    --------
    >>> from evqual.data import load_sample
    >>> from evqual.verify import ClaimExtractor
    >>> X, y, owner, _ = claim_dataset(load_sample(), ClaimExtractor())
    >>> model = ClaimModel(max_iter=20).fit(X, y, groups=owner)
    >>> p = model.predict_proba(X[:3])[:, 1]
    >>> bool(((p >= 0) & (p <= 1)).all())
    True
    """

    def __init__(self, *, max_iter: int = 300, learning_rate: float = 0.05, calibration: str = "isotonic",
                 validation_size: float = 0.2, random_state: int = 0):
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.calibration = calibration
        self.validation_size = validation_size
        self.random_state = random_state

    def _features(self, X):
        return self.featurizer_.transform(X)

    def fit(self, X, y, groups=None):
        """Fit on one-claim examples ``X`` with labels ``y``; ``groups`` keeps a group on one side of the
        calibration split (pass the answer or source of each claim)."""
        F = self.fit_featurizer(X)
        return self.fit_features(F, y, groups)

    def fit_featurizer(self, X):
        """Fit the featurizer on ``X`` and return its feature matrix (for :meth:`fit_features`)."""
        self.featurizer_ = EvidenceFeaturizer(families=list(CLAIM_FAMILIES)).fit(X)
        self.feature_names_ = list(self.featurizer_.get_feature_names_out())
        return self._features(X)

    def fit_features(self, F, y, groups=None):
        """Fit the classifier and its isotonic calibration on an already featurized matrix ``F``."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.isotonic import IsotonicRegression
        from sklearn.model_selection import GroupShuffleSplit

        check_is_fitted(self, "featurizer_")
        if self.calibration not in ("isotonic", "sigmoid"):
            raise ValueError(f"calibration must be 'isotonic' or 'sigmoid'; got {self.calibration!r}")
        F = np.asarray(F, dtype=np.float64)
        y = np.asarray(y)
        if len(np.unique(y)) != 2:
            raise ValueError(f"ClaimModel needs both classes in y; got {np.unique(y).tolist()}")
        groups = np.arange(len(y)) if groups is None else np.asarray(groups)
        fit_idx, cal_idx = next(GroupShuffleSplit(1, test_size=self.validation_size,
                                                  random_state=self.random_state).split(F, y, groups))
        cst = aggregate_constraints(self.feature_names_)
        base = HistGradientBoostingClassifier(max_iter=self.max_iter, learning_rate=self.learning_rate,
                                              l2_regularization=1.0, monotonic_cst=cst,
                                              random_state=self.random_state)
        base.fit(F[fit_idx], y[fit_idx])
        raw = base.predict_proba(F[cal_idx])[:, 1]
        if self.calibration == "isotonic":
            cal = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(raw, y[cal_idx])
        else:
            from sklearn.linear_model import LogisticRegression

            cal = LogisticRegression().fit(raw.reshape(-1, 1), y[cal_idx])
        self.base_ = base
        self.calibrator_ = cal
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = F.shape[1]
        return self

    def predict_proba(self, X):
        """``[P(supported), P(hallucinated)]`` per one-claim example."""
        check_is_fitted(self, "calibrator_")
        return self.predict_proba_features(self._features(X))

    def predict_proba_features(self, F):
        """:meth:`predict_proba` on an already featurized matrix."""
        check_is_fitted(self, "calibrator_")
        F = np.asarray(F, dtype=np.float64)
        if F.shape[0] == 0:
            return np.zeros((0, 2))
        raw = self.base_.predict_proba(F)[:, 1]
        if hasattr(self.calibrator_, "predict_proba"):
            p = self.calibrator_.predict_proba(raw.reshape(-1, 1))[:, 1]
        else:
            p = self.calibrator_.predict(raw)
        p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])


CLAIM_MODEL_FORMAT = "evqual-claim-model/1"
_ROOT = "evqual.verify._claim_model.ClaimModel"


def default_claim_model_path():
    """The shipped claim model: ``$EVQUAL_CLAIM_MODEL``, else ``models/claims`` of the checkout, else of the cwd."""
    import os
    from pathlib import Path

    env = os.environ.get("EVQUAL_CLAIM_MODEL")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2] / "models" / "claims"
    return repo if repo.is_dir() else Path("models") / "claims"


def save_claim_model(model: ClaimModel, path, *, training_data: dict | None = None, metrics: dict | None = None):
    """Save a fitted :class:`ClaimModel` as ``model.skops`` plus ``meta.json`` in the folder ``path``.

    >>> import tempfile
    >>> from evqual.data import load_sample
    >>> from evqual.verify import ClaimExtractor
    >>> X, y, owner, _ = claim_dataset(load_sample(), ClaimExtractor())
    >>> folder = save_claim_model(ClaimModel(max_iter=10).fit(X, y, groups=owner), tempfile.mkdtemp())
    >>> load_claim_model(folder).feature_names_ == ClaimModel(max_iter=10).fit(X, y, groups=owner).feature_names_
    True
    """
    import json
    from pathlib import Path

    import sklearn

    from .._version import __version__
    from ..models import dump_trusted

    check_is_fitted(model, "calibrator_")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    digest = dump_trusted(model, folder / "model.skops")
    meta = {"format": CLAIM_MODEL_FORMAT, "evqual_version": __version__, "sklearn_version": sklearn.__version__,
            "model_sha256": digest, "features": list(model.feature_names_),
            "claim_extractor": "rules", "training_data": training_data or {}, "metrics": metrics or {}}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


_CLAIM_ATTRIBUTES = frozenset({"max_iter", "learning_rate", "calibration", "validation_size", "random_state",
                               "featurizer_", "feature_names_", "base_", "calibrator_", "classes_", "n_features_in_",
                               "meta_"})
_LOADED: dict = {}  # (folder, file identities, pin) -> ClaimModel: each model file is read and audited once


def _file_identity(path):
    import os

    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _claim_templates(model, model_path):
    """Check a loaded claim model's own attributes; the estimators its fit builds, for the parameter audit."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    from ..models import ModelLoadError, templates_for

    def fail(problem):
        return ModelLoadError(f"{model_path}: {problem}; refusing to load")

    if type(model) is not ClaimModel:
        raise fail(f"holds a {type(model).__name__}, not a ClaimModel")
    attrs = vars(model)
    extra = sorted(set(attrs) - _CLAIM_ATTRIBUTES)
    if extra:
        raise fail(f"ClaimModel attribute {extra[0][:60]!r} is not one a ClaimModel has")
    for name in ("featurizer_", "feature_names_", "base_", "calibrator_"):
        if name not in attrs:
            raise fail(f"ClaimModel attribute {name!r} is missing (not a fitted model)")
    if model.calibration not in ("isotonic", "sigmoid"):
        raise fail(f"ClaimModel attribute 'calibration' must be 'isotonic' or 'sigmoid'; got {model.calibration!r}")
    for name in ("max_iter", "random_state"):
        value = attrs.get(name)
        if type(value) is not int or not 0 <= value < 2**31:
            raise fail(f"ClaimModel attribute {name!r} must be a non-negative integer")
    names = attrs["feature_names_"]
    if type(names) is not list or not all(type(n) is str for n in names):
        raise fail("ClaimModel attribute 'feature_names_' must be a list of feature names")
    if type(model.featurizer_) is not EvidenceFeaturizer:
        raise fail("ClaimModel attribute 'featurizer_' must be an EvidenceFeaturizer")
    if list(model.featurizer_.get_feature_names_out()) != names:
        raise fail("the featurizer computes other features than 'feature_names_' lists")
    if type(model.base_) is not HistGradientBoostingClassifier or \
            getattr(model.base_, "n_features_in_", None) != len(names):
        raise fail(f"ClaimModel attribute 'base_' must be a HistGradientBoostingClassifier over {len(names)} features")
    cst = aggregate_constraints(names)
    base = HistGradientBoostingClassifier(max_iter=model.max_iter, learning_rate=model.learning_rate,
                                          l2_regularization=1.0, monotonic_cst=cst, random_state=model.random_state)
    cal = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip") if model.calibration == "isotonic" \
        else LogisticRegression()
    if type(model.calibrator_) is not type(cal):
        raise fail(f"ClaimModel attribute 'calibrator_' must be a {type(cal).__name__}")
    pairs = templates_for(model.base_, base)
    pairs.update(templates_for(model.calibrator_, cal))
    pairs.update(templates_for(model.featurizer_, EvidenceFeaturizer(families=list(CLAIM_FAMILIES))))
    return pairs


def load_claim_model(path=None, *, sha256: str | None = None) -> ClaimModel:
    """Load a claim model saved by :func:`save_claim_model` (default: :func:`default_claim_model_path`).

    ``meta.json`` is read as every model metadata file is (a regular file of
    bounded size) and validated, and the file's SHA-256 compared with it (and
    with ``sha256`` when given) before anything is built; then the skops file
    passes the same audit as :func:`evqual.models.load_detector` (the
    allow-list of types, the zip and schema checks, and every tree, array and
    parameter of the built model).  A model is read once per process: loading
    the same unchanged folder again returns the same object.

    Raises
    ------
    evqual.models.ModelLoadError
        Naming the file and the field.
    """
    from pathlib import Path

    from ..features import FEATURES
    from ..models import ModelLoadError, load_trusted, read_model_meta

    folder = Path(path) if path is not None else default_claim_model_path()
    meta_path = folder / "meta.json"
    model_path = folder / "model.skops"
    key = (str(folder.resolve()), _file_identity(meta_path), _file_identity(model_path), sha256)
    cached = _LOADED.get(key)
    if cached is not None:
        return cached
    if not meta_path.exists() and not meta_path.is_symlink():
        raise ModelLoadError(f"{meta_path}: no such file (not a claim model folder)")
    meta = read_model_meta(meta_path)
    if not isinstance(meta, dict):
        raise ModelLoadError(f"{meta_path}: must hold a JSON object")
    for key_, kind in (("format", str), ("model_sha256", str), ("features", list)):
        if not isinstance(meta.get(key_), kind):
            raise ModelLoadError(f"{meta_path}: field {key_!r} must be a {kind.__name__}; got "
                                 f"{str(meta.get(key_))[:80]!r}")
    if meta["format"] != CLAIM_MODEL_FORMAT:
        raise ModelLoadError(f"{meta_path}: field 'format' is {meta['format'][:80]!r}; this evqual reads "
                             f"{CLAIM_MODEL_FORMAT!r}")
    unknown = [f for f in meta["features"] if f not in FEATURES]
    if unknown:
        raise ModelLoadError(f"{meta_path}: field 'features' names {str(unknown[0])[:80]!r}, a feature this evqual "
                             "does not compute")
    model = load_trusted(model_path, root=_ROOT, sha256=sha256 or meta["model_sha256"],
                         prepare=lambda m: _claim_templates(m, model_path))
    if list(model.feature_names_) != meta["features"]:
        raise ModelLoadError(f"{model_path}: not a fitted ClaimModel matching {meta_path}; refusing to load")
    model.meta_ = meta
    if len(_LOADED) >= 8:
        _LOADED.clear()
    _LOADED[key] = model
    return model
