"""Saving and loading detectors: ``model.skops`` plus a validated ``meta.json``.

Trust model
-----------
A model folder holds ``model.skops`` (the fitted :class:`Detector`, written with
`skops.io <https://skops.readthedocs.io>`_) and ``meta.json``.  Loading

1. validates ``meta.json`` (required keys and types, format version);
2. checks the SHA-256 of ``model.skops`` against the one recorded at save time,
   so a modified or corrupted model file is refused;
3. checks that every feature the model was trained on exists in this evqual
   with the same versioned name (a changed definition is an error), and warns
   when the model was saved by a newer evqual or scikit-learn;
4. loads with skops, which reconstructs objects without running pickle's
   arbitrary code, trusting only types from ``evqual.``, ``sklearn.``,
   ``numpy.`` and ``scipy.``; any other type in the file is refused.

Loading never unpickles.  The hash protects against a model file changed after
saving; skops' allow-list protects against a crafted file, as long as evqual's
and scikit-learn's own classes are trusted (load models from sources you trust
either way).
"""

from __future__ import annotations

import hashlib
import json
import platform
import warnings
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from .._version import __version__
from ..features import FEATURES, feature_spec

__all__ = ["save_detector", "load_detector", "read_meta", "ModelLoadError", "META_FORMAT", "TRUSTED_PREFIXES",
           "default_model_path"]

META_FORMAT = 1
MODEL_FILE = "model.skops"
META_FILE = "meta.json"
TRUSTED_PREFIXES = ("evqual.", "sklearn.", "numpy.", "scipy.", "builtins.")

_REQUIRED = {
    "format": int, "evqual_version": str, "sklearn_version": str, "python_version": str, "method": str,
    "created": str, "model_sha256": str, "response_features": list, "sentence_features": list,
    "entity_backend": str, "threshold": (int, float), "calibration": str, "threshold_rule": str,
    "training_data": dict,
}


def default_model_path() -> Path:
    """The shipped model: ``$EVQUAL_MODEL``, else ``models/default`` of the source checkout, else of the cwd."""
    import os

    env = os.environ.get("EVQUAL_MODEL")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2] / "models" / "default"
    if repo.is_dir():
        return repo
    return Path("models") / "default"


class ModelLoadError(ValueError):
    """A model folder is missing, malformed, tampered with or incompatible."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _version_tuple(v: str):
    parts = []
    for p in v.split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def save_detector(detector, path, *, training_data: dict | None = None, metrics: dict | None = None) -> Path:
    """Save a fitted :class:`Detector` to the folder ``path`` (created if needed).

    Parameters
    ----------
    detector : Detector
        Fitted with :meth:`Detector.fit` (it must carry its featurizers).
    path : str or Path
    training_data : dict, optional
        Recorded in ``meta.json`` (for instance ``{"path", "sha256", "rows",
        "rows_by_split"}``).
    metrics : dict, optional
        Evaluation metrics to record beside the model.

    Returns
    -------
    Path
        The folder.
    """
    import sklearn
    import skops.io as sio

    if not hasattr(detector, "builder_"):
        raise ValueError("only a Detector fitted with .fit(examples) can be saved (it needs its featurizers)")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    model_path = folder / MODEL_FILE
    sio.dump(detector, model_path, compression=zipfile.ZIP_DEFLATED, compresslevel=9)
    builder = detector.builder_
    meta = {
        "format": META_FORMAT,
        "evqual_version": __version__,
        "sklearn_version": sklearn.__version__,
        "python_version": platform.python_version(),
        "method": detector.method,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "model_sha256": _sha256(model_path),
        "response_features": builder.response_names,
        "sentence_features": list(builder.sentence_names),
        "entity_backend": builder.entity_backend,
        "exclude_implicit_true": builder.exclude_implicit_true,
        "threshold": detector.threshold_,
        "sentence_threshold": detector.sentence_threshold_,
        "calibration": detector.calibration,
        "threshold_rule": detector.threshold_rule,
        "uses_metadata": detector.spec.uses_metadata,
        "span_tagger": _span_meta(detector),
        "training_data": training_data or {},
        "rows": {"train": detector.n_train_, "validation": detector.n_validation_},
        "metrics": metrics or {},
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return folder


def read_meta(path) -> dict:
    """Read and validate ``meta.json`` of a model folder (no model loading)."""
    folder = Path(path)
    meta_path = folder / META_FILE
    if not folder.is_dir():
        raise ModelLoadError(f"{folder}: no such model folder")
    if not meta_path.is_file():
        raise ModelLoadError(f"{meta_path}: missing (every saved model has a meta.json)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelLoadError(f"{meta_path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise ModelLoadError(f"{meta_path}: must hold a JSON object")
    for key, typ in _REQUIRED.items():
        if key not in meta:
            raise ModelLoadError(f"{meta_path}: field '{key}' is missing")
        if not isinstance(meta[key], typ) or isinstance(meta[key], bool) and typ is not bool:
            raise ModelLoadError(f"{meta_path}: field '{key}' has the wrong type ({type(meta[key]).__name__})")
    if meta["format"] != META_FORMAT:
        raise ModelLoadError(f"{meta_path}: format {meta['format']} is not supported (expected {META_FORMAT})")
    return meta


def _span_meta(detector) -> dict | None:
    """What ``meta.json`` records of the span tagger (``None`` without one)."""
    if getattr(detector, "span_tagger_", None) is None:
        return None
    from ..features._token_features import TOKEN_FEATURE_NAMES

    return {"token_features": list(TOKEN_FEATURE_NAMES), "threshold": detector.span_threshold_,
            "gate": getattr(detector, "span_gate_", 0.0),
            "validation_char_f1": detector.validation_metrics_.get("span_f1")}


def _check_features(meta: dict, meta_path: Path) -> None:
    span = meta.get("span_tagger")
    if span:
        from ..features._token_features import TOKEN_FEATURE_NAMES

        if list(span.get("token_features", ())) != list(TOKEN_FEATURE_NAMES):
            raise ModelLoadError(f"{meta_path}: the model's span tagger was trained on other token features "
                                 f"than this evqual ({__version__}) computes. Retrain the model.")
    for name in list(meta["response_features"]) + list(meta["sentence_features"]):
        try:
            feature_spec(name)
        except KeyError:
            base = name.rsplit(".v", 1)[0]
            now = [n for n in FEATURES if n.rsplit(".v", 1)[0] == base]
            hint = f"; this evqual has {now[0]!r}" if now else ""
            raise ModelLoadError(
                f"{meta_path}: the model was trained on feature {name!r}, which this evqual "
                f"({__version__}) does not compute{hint}. Retrain the model.") from None


def load_detector(path):
    """Load a detector saved by :func:`save_detector`, with every check of the trust model.

    Raises
    ------
    ModelLoadError
        Missing or malformed ``meta.json``, a SHA-256 mismatch (tampered or
        corrupted model file), a feature version this evqual does not compute,
        or a type outside the allow-list in the model file.

    Examples
    --------
    >>> import tempfile
    >>> from evqual.data import load_sample
    >>> from evqual.models import Detector, save_detector, load_detector
    >>> folder = save_detector(Detector("nli-proxy").fit(load_sample()), tempfile.mkdtemp())
    >>> load_detector(folder).method
    'nli-proxy'
    """
    import sklearn
    import skops.io as sio

    folder = Path(path)
    meta = read_meta(folder)
    meta_path = folder / META_FILE
    model_path = folder / MODEL_FILE
    if not model_path.is_file():
        raise ModelLoadError(f"{model_path}: missing")
    digest = _sha256(model_path)
    if digest != meta["model_sha256"]:
        raise ModelLoadError(f"{model_path}: SHA-256 {digest[:12]}... does not match meta.json "
                             f"({meta['model_sha256'][:12]}...); the file was modified after saving. Refusing to load.")
    _check_features(meta, meta_path)
    if _version_tuple(meta["evqual_version"]) > _version_tuple(__version__):
        warnings.warn(f"{meta_path}: saved by evqual {meta['evqual_version']}, newer than this "
                      f"{__version__}", UserWarning, stacklevel=2)
    if _version_tuple(meta["sklearn_version"]) > _version_tuple(sklearn.__version__):
        warnings.warn(f"{meta_path}: saved with scikit-learn {meta['sklearn_version']}, newer than this "
                      f"{sklearn.__version__}", UserWarning, stacklevel=2)
    untrusted = sio.get_untrusted_types(file=model_path)
    refused = [t for t in untrusted if not t.startswith(TRUSTED_PREFIXES)]
    if refused:
        raise ModelLoadError(f"{model_path}: holds types outside the allow-list {TRUSTED_PREFIXES}: {refused}")
    detector = sio.load(model_path, trusted=untrusted)
    meta.setdefault("name", folder.name)
    detector.meta_ = meta
    return detector
