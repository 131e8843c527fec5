"""Saving and loading detectors: a model file plus a validated ``meta.json``.

Trust model
-----------
A model folder holds ``meta.json`` and the fitted :class:`Detector` in one
model file: ``model.evqpack`` (evqual's packed format,
:mod:`evqual.models._packed`: one JSON object graph and one array blob in a
zip; ``meta.json`` format 3, what :func:`save_detector` writes by default) or
``model.skops`` (a zip written with `skops.io <https://skops.readthedocs.io>`_;
formats 1 and 2, and ``save_detector(..., model_format="skops")``).
A model folder must never run code.  Loading (:func:`load_detector`)

1. reads the model file once into memory (at most :data:`MAX_MODEL_BYTES`)
   and, when the caller pins a SHA-256 (``sha256=``, ``--model-sha256`` or
   ``$EVQUAL_MODEL_SHA256``), compares it *before anything else is read*;
2. validates ``meta.json`` (size, required keys and types, thresholds finite and
   in [0, 1], known method, calibration, rule and entity backend, non-empty
   feature lists naming only the features the model uses: no metadata feature
   when ``uses_metadata`` is false) and compares the file's SHA-256 with the
   one it records; a model trained with ``entity_backend="spacy"`` needs the
   ``ner`` extra (:class:`~evqual.errors.MissingDependencyError` otherwise).  That
   hash catches a corrupted or accidentally replaced file; it is no defence
   against someone who can write the folder, since they rewrite ``meta.json``
   too.  Pinning is;
3. checks the zip: member count and total uncompressed size (a zip bomb), every
   member inflated with a hard limit.  A packed file is then built by
   :func:`evqual.models._packed.load_packed`, which checks as it builds: the
   same allow-list (below), bounded size, depth and node count, no cycles,
   allowed dtypes only (never an object dtype), every array inside the blob.
   A skops file's ``schema.json`` and protocol are checked first, then
   walks every node of ``schema.json`` iteratively (depth at most
   :data:`MAX_SCHEMA_DEPTH`, no cycles) and requires each node's
   ``(module.class, loader)`` pair to be in the exact allow-list
   :data:`TRUSTED_TYPES` (the types evqual itself saves: no builtins callables,
   no functions, no ``numpy.load``), every field of each node to be one its
   loader reads, every referenced ``.npy`` member to exist with a header that
   matches its size and no object dtype, and every JSON literal to be a scalar;
4. only then calls ``skops.io.load(..., trusted=<exactly the types found>)``;
5. checks what was built: a :class:`Detector` whose attributes have the right
   types and agree with ``meta.json``, a model of the classes its method
   builds, featurizers that compute the features ``meta.json`` lists, and
   every decision tree (``sklearn.tree._tree.Tree``) and histogram-boosting
   tree (``TreePredictor``) with child and feature indices in range, children
   after their parent, so that prediction cannot read outside its arrays.

Loading never unpickles.  Any failure is a :class:`ModelLoadError` naming the
file and the field.  Load models only from sources you trust: the allow-list
stops code from running, it does not make a model's predictions trustworthy.

Reproducible builds
-------------------
:func:`save_detector` writes the zip with fixed timestamps and numbered members,
so the same detector gives the same bytes, and records the library versions and
a :func:`prediction_fingerprint` (risks, sentence risks and spans on the embedded
sample) in ``meta.json``.  :func:`build_model` trains a model exactly as
``evqual train`` does and :func:`check_rebuild` rebuilds one and compares the
fingerprints (``scripts/build_default_model.py``).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import platform
import re
import warnings
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .._version import __version__
from ..features import FEATURES, feature_spec
from ._audit import (  # noqa: F401 - MAX_* and TRUSTED_TYPES are part of this module's documented surface
    _ROOT_TYPE,
    MAX_META_BYTES,
    MAX_MODEL_BYTES,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_UNCOMPRESSED_BYTES,
    MAX_ZIP_MEMBERS,
    TRUSTED_TYPES,
    ModelLoadError,
    _oneline,
    load_audited,
    read_model_meta,
    read_model_file,
    templates_for,
)
from ._packed import dumps_packed

__all__ = ["save_detector", "load_detector", "read_meta", "ModelLoadError", "META_FORMAT", "READ_FORMATS",
           "MODEL_FORMATS", "PACKED_MODEL_FILE", "model_file", "model_file_name",
           "model_features", "TRUSTED_TYPES", "dump_trusted", "load_trusted",
           "default_model_path", "prediction_fingerprint", "build_model", "check_rebuild", "MODEL_SHA256_ENV",
           "fit_detector", "training_data_info", "load_training", "adapt_model"]

META_FORMAT = 3
"""The ``meta.json`` format :func:`save_detector` writes (with the default ``model_format="packed"``).

Format 3 is format 2 with the detector in ``model.evqpack`` (evqual's packed
format) instead of ``model.skops``; ``model_format="skops"`` still writes
format 2.  Format 2 lists in ``response_features`` and ``sentence_features`` only the
features the model uses (a content-only model lists no ``meta.*`` feature) and
saves a TF-IDF vocabulary as two flat arrays; format 1 listed every feature of
the featurizers.  All are read (:data:`READ_FORMATS`).
"""
READ_FORMATS = (1, 2, 3)
"""The ``meta.json`` formats :func:`load_detector` reads."""
MODEL_FILE = "model.skops"
"""The model file of a format 1 or 2 folder (skops)."""
PACKED_MODEL_FILE = "model.evqpack"
"""The model file of a format 3 folder (evqual's packed format)."""
MODEL_FORMATS = ("packed", "skops")
META_FILE = "meta.json"
MODEL_SHA256_ENV = "EVQUAL_MODEL_SHA256"
"""Environment variable pinning the SHA-256 of the model file when no ``sha256`` is passed."""


def model_file_name(meta_format: int) -> str:
    """The model file a folder with ``meta.json`` format ``meta_format`` holds.

    >>> model_file_name(3), model_file_name(2)
    ('model.evqpack', 'model.skops')
    """
    return PACKED_MODEL_FILE if meta_format >= 3 else MODEL_FILE


def model_file(path) -> Path:
    """The model file of the folder ``path``: ``model.evqpack`` when it exists, else ``model.skops``.

    :func:`load_detector` checks it against ``meta.json``'s format.

    >>> from evqual.models import default_model_path, model_file
    >>> model_file(default_model_path()).name
    'model.evqpack'
    """
    folder = Path(path)
    packed = folder / PACKED_MODEL_FILE
    if os.path.lexists(packed) or not os.path.lexists(folder / MODEL_FILE):
        return packed
    return folder / MODEL_FILE

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
ENTITY_BACKENDS = ("regex", "spacy")

_REQUIRED = {
    "format": int, "evqual_version": str, "sklearn_version": str, "python_version": str, "method": str,
    "created": str, "model_sha256": str, "response_features": list, "sentence_features": list,
    "entity_backend": str, "threshold": (int, float), "calibration": str, "threshold_rule": str,
    "training_data": dict,
}
_VERSION_KEYS = ("numpy_version", "scipy_version", "skops_version", "pandas_version")

FINGERPRINT_VERSION = 1
FINGERPRINT_BATCH = 16
"""Answers featurized and predicted together when fingerprinting (fixed, so the fingerprint is too)."""


def default_model_path() -> Path:
    """The shipped model: ``$EVQUAL_MODEL``, else ``models/default`` of the source checkout, else of the cwd."""
    env = os.environ.get("EVQUAL_MODEL")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2] / "models" / "default"
    if repo.is_dir():
        return repo
    return Path("models") / "default"



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


# ---------------------------------------------------------------------------------------------- saving
def save_detector(detector, path, *, training_data: dict | None = None, metrics: dict | None = None,
                  model_format: str = "packed", adaptation: dict | None = None) -> Path:
    """Save a fitted :class:`Detector` to the folder ``path`` (created if needed).

    The model file is written deterministically (fixed timestamps, members
    and object ids numbered in order), so saving the same detector twice gives
    the same bytes.  ``meta.json`` records the evqual, Python,
    numpy, scipy, scikit-learn and skops versions and the
    :func:`prediction_fingerprint` of the detector.

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
    adaptation : dict, optional
        For a detector adapted with :meth:`Detector.adapt` (required then): ``{"parent": {"model_sha256",
        ...}, "data": {"sha256", "rows", ...}, ...}``, recorded as ``meta.json``'s ``adaptation``.
    model_format : {"packed", "skops"}, default="packed"
        ``"packed"`` writes ``model.evqpack`` (evqual's packed format, loaded in
        a fraction of the time, without importing skops) and ``meta.json``
        format 3; ``"skops"`` writes ``model.skops`` and format 2, readable by
        older evqual versions.  The other format's file, if the folder holds
        one, is removed.

    Returns
    -------
    Path
        The folder.

    Examples
    --------
    >>> import tempfile
    >>> from evqual.data import load_sample
    >>> from evqual.models import Detector, read_meta, save_detector
    >>> folder = save_detector(Detector("nli-proxy").fit(load_sample()), tempfile.mkdtemp())
    >>> sorted(p.name for p in folder.iterdir())
    ['meta.json', 'model.evqpack']
    >>> len(read_meta(folder)["prediction_fingerprint"]["sha256"])
    64
    """
    import scipy
    import sklearn

    if model_format not in MODEL_FORMATS:
        raise ValueError(f"model_format must be one of {MODEL_FORMATS}; got {model_format!r}")
    if not hasattr(detector, "builder_"):
        raise ValueError("only a Detector fitted with .fit(examples) can be saved (it needs its featurizers)")
    if not isinstance(detector.method, str):
        raise ValueError(f"only a Detector of a named method can be saved; got method={detector.method!r}")
    if getattr(detector, "lean_", False):
        raise ValueError("a lean Detector (Scorer.load, load_detector(..., lean=True)) holds scoring-only "
                         "stand-ins and cannot be saved; load the model with load_detector(path) to adapt or save it")
    if (getattr(detector, "adapter_", None) is None) != (adaptation is None):
        raise ValueError("an adapted Detector is saved with its adaptation record (adaptation=...), and only it")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    meta_format = META_FORMAT if model_format == "packed" else 2
    model_path = folder / model_file_name(meta_format)
    fingerprint = prediction_fingerprint(detector)
    with _without_run_state(detector):
        if model_format == "packed":
            data = dumps_packed(detector)
        else:
            import skops.io as sio

            data = _canonical_zip(sio.dumps(detector, compression=zipfile.ZIP_DEFLATED, compresslevel=9))
    tmp = model_path.with_name(model_path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, model_path)
    other = folder / model_file_name(2 if meta_format >= 3 else 3)
    if other.is_file():
        other.unlink()
    builder = detector.builder_
    meta = {
        "format": meta_format,
        "evqual_version": __version__,
        "sklearn_version": sklearn.__version__,
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "scipy_version": scipy.__version__,
        # pandas too: a fresh environment with another pandas trained another model from the same code and
        # data (issue 24: threshold 0.35 -> 0.37); the check of a rebuild names the versions that differ
        "pandas_version": _pandas_version(),
        **({"skops_version": _skops_version()} if model_format == "skops" else {}),
        "method": detector.method,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "prediction_fingerprint": fingerprint,
        "response_features": model_features(builder.response_names, detector.spec.uses_metadata),
        "sentence_features": model_features(builder.sentence_names, detector.spec.uses_metadata),
        "entity_backend": builder.entity_backend,
        "exclude_implicit_true": builder.exclude_implicit_true,
        "threshold": detector.threshold_,
        "sentence_threshold": detector.sentence_threshold_,
        "calibration": detector.calibration,
        "threshold_rule": detector.threshold_rule,
        "uses_metadata": detector.spec.uses_metadata,
        "augment": getattr(detector, "augment", None),
        "augment_rate": getattr(detector, "augment_rate", 0.5),
        "evidence_floor": dict(getattr(detector, "evidence_floor_", {}) or {}),
        "evidence_floor_mode": _floor_mode_of(detector),
        "compose": getattr(detector, "compose", "none"),
        "crossfit": getattr(detector, "crossfit", None),
        "span_tagger": _span_meta(detector),
        "ood": _ood_meta(detector),
        "fallback": getattr(detector, "fallback_", None),
        "training_data": training_data or {},
        "rows": {"train": detector.n_train_, "validation": detector.n_validation_},
        "metrics": metrics or {},
        "adaptation": adaptation,
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return folder


def _ood_meta(detector) -> dict | None:
    """What ``meta.json`` records of the out-of-distribution map (None without one)."""
    state = getattr(detector, "ood_", None)
    if state is None:
        return None
    return {"quantile": state["quantile"], "features": len(state["names"]), "rows": state["n_fit"],
            "groups": {k: {"rows": g["n_fit"], "threshold": g["threshold"]} for k, g in state["groups"].items()},
            "warning": "W004"}


def _pandas_version() -> str:
    import pandas

    return pandas.__version__


def _environment() -> dict:
    """The library versions a model's meta.json records, as this environment has them."""
    import platform

    import numpy as np
    import scipy
    import sklearn

    return {"python_version": platform.python_version(), "numpy_version": np.__version__,
            "scipy_version": scipy.__version__, "sklearn_version": sklearn.__version__,
            "pandas_version": _pandas_version()}


def _skops_version() -> str:
    import skops

    return skops.__version__


_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class _without_run_state:
    """While saving, leave out what describes the fitting process rather than the model.

    scikit-learn keeps the thread count of the fit in a histogram-boosting bin
    mapper (``n_threads``, used only while fitting) and the ``id()`` of a
    vectoriser's stop-word list (``_stop_words_id``, a cache key for a
    consistency warning).  Both would make the bytes of the same model differ
    between processes and machines; neither changes a prediction.  They are
    restored after saving.
    """

    def __init__(self, detector):
        self.detector = detector
        self.saved = []

    def __enter__(self):
        from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
        from sklearn.feature_extraction.text import _VectorizerMixin

        stack, seen = [self.detector], set()
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, _BinMapper) and "n_threads" in vars(obj):
                self.saved.append((obj, "n_threads", obj.n_threads))
                obj.n_threads = None
            if isinstance(obj, _VectorizerMixin) and "_stop_words_id" in vars(obj):
                self.saved.append((obj, "_stop_words_id", obj._stop_words_id))
                del obj._stop_words_id
            if isinstance(obj, dict):
                stack.extend(obj.values())
            elif isinstance(obj, (list, tuple)):
                stack.extend(obj)
            elif isinstance(obj, np.ndarray):
                if obj.dtype == object:
                    stack.extend(obj.ravel())
            elif hasattr(obj, "__dict__") and type(obj).__module__.split(".")[0] in ("evqual", "sklearn"):
                stack.extend(vars(obj).values())
        return self.detector

    def __exit__(self, *exc):
        for obj, name, value in reversed(self.saved):
            setattr(obj, name, value)
        return False


def _canonical_zip(data: bytes) -> bytes:
    """skops' zip rewritten deterministically: object ids and member names numbered in schema order,
    fixed timestamps and attributes, the same compression.  What loads is unchanged (ids are only
    compared with each other; each member keeps its bytes)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        schema = json.loads(zf.read("schema.json"))
        members = {info.filename: zf.read(info) for info in zf.infolist() if info.filename != "schema.json"}
    ids: dict = {}
    names: dict = {}
    stack = [schema]
    while stack:  # pre-order, in document order
        node = stack.pop()
        if isinstance(node, dict):
            if "__loader__" in node:
                if "__id__" in node:
                    node["__id__"] = ids.setdefault(node["__id__"], len(ids) + 1)
                if isinstance(node.get("file"), str):
                    old = node["file"]
                    node["file"] = names.setdefault(old, f"{len(names)}{Path(old).suffix}")
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    if set(names) != set(members):
        raise RuntimeError("skops wrote zip members its schema does not reference")  # pragma: no cover
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for old, new in sorted(names.items(), key=lambda kv: int(Path(kv[1]).stem)):
            zf.writestr(_zipinfo(new), members[old], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
        zf.writestr(_zipinfo("schema.json"), json.dumps(schema, separators=(",", ":")),
                    compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return out.getvalue()


def _zipinfo(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_ZIP_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = 0o644 << 16
    return info


def _span_meta(detector) -> dict | None:
    """What ``meta.json`` records of the span tagger (``None`` without one)."""
    if getattr(detector, "span_tagger_", None) is None:
        return None
    from ..features import TOKEN_FEATURE_NAMES

    return {"token_features": list(TOKEN_FEATURE_NAMES), "threshold": detector.span_threshold_,
            "gate": getattr(detector, "span_gate_", 0.0),
            "validation_char_f1": detector.validation_metrics_.get("span_f1")}


def _family(name: str) -> str | None:
    try:
        return feature_spec(name).family
    except KeyError:
        return None


def model_features(names, uses_metadata: bool) -> list[str]:
    """The features a model reads of its featurizers' ``names``: all but the metadata family
    (``meta.*``, ``sent.meta.*``) unless the method ``uses_metadata``.

    The featurizers of every detector compute the metadata features; only the
    methods that use metadata read them.  ``meta.json`` lists these names.

    >>> from evqual.models import model_features
    >>> model_features(["len.output_tokens.v1", "meta.temperature.v1"], uses_metadata=False)
    ['len.output_tokens.v1']
    """
    return [n for n in names if uses_metadata or _family(n) != "meta"]


# ---------------------------------------------------------------------------------------------- fingerprint
def prediction_fingerprint(detector, examples=None, *, batch_size: int = FINGERPRINT_BATCH) -> dict:
    """A SHA-256 of a detector's predictions: response risks, sentence risks and spans.

    The examples (default: the embedded sample, :func:`evqual.data.load_sample`)
    are featurized and predicted ``batch_size`` at a time through the frame
    methods (:meth:`Detector.predict_proba_frame`,
    :meth:`Detector.sentence_proba_frame`, :meth:`Detector.predict_spans_frame`);
    the hash covers the float64 bytes of every risk, each row's sentence
    count and each span's start, end and risk.  Two models with the same
    fingerprint predict the same floats on the sample.

    Parameters
    ----------
    detector : Detector
        Fitted with :meth:`Detector.fit` (it carries its featurizers).
    examples : examples, optional
    batch_size : int, default=16

    Returns
    -------
    dict
        ``{"version", "sha256", "data", "rows", "batch_size"}``.

    Examples
    --------
    >>> from evqual.data import load_sample
    >>> from evqual.models import Detector, prediction_fingerprint
    >>> det = Detector("nli-proxy").fit(load_sample())
    >>> fp = prediction_fingerprint(det)
    >>> fp["rows"], fp["batch_size"], fp == prediction_fingerprint(det)
    (72, 16, True)
    """
    from ..data import load_sample
    from ..features import as_examples

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    label = "evqual.data.load_sample()" if examples is None else "examples"
    examples = list(as_examples(load_sample() if examples is None else examples))
    tagger = getattr(detector, "span_tagger_", None) is not None
    risks, sentences, spans = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(0, len(examples), batch_size):
            frame = detector.builder_.transform(examples[i:i + batch_size], with_targets=False, with_tokens=tagger)
            risks.append(np.asarray(detector.predict_proba_frame(frame), dtype="<f8"))
            sent = detector.sentence_proba_frame(frame)
            sentences.append(sent)
            spans.append(detector.predict_spans_frame(frame, sent) if tagger else None)
    h = hashlib.sha256(b"evqual prediction fingerprint v1\n")
    risk = np.concatenate(risks) if risks else np.zeros(0, dtype="<f8")
    h.update(b"risk" + np.int64(len(risk)).astype("<i8").tobytes() + risk.tobytes())
    h.update(b"sentences")
    if any(s is None for s in sentences):
        h.update(b"none")
    else:
        for r in (r for part in sentences for r in part):
            r = np.asarray(r, dtype="<f8").ravel()
            h.update(np.int64(len(r)).astype("<i8").tobytes() + r.tobytes())
    h.update(b"spans")
    if not tagger:
        h.update(b"none")
    else:
        for row in (row for part in spans for row in part):
            h.update(np.int64(len(row)).astype("<i8").tobytes())
            for start, end, r in row:
                h.update(np.array([start, end], dtype="<i8").tobytes() + np.array([r], dtype="<f8").tobytes())
    return {"version": FINGERPRINT_VERSION, "sha256": h.hexdigest(), "data": label, "rows": len(examples),
            "batch_size": batch_size}


# ---------------------------------------------------------------------------------------------- meta.json
def _meta_error(meta_path, key, problem):
    return ModelLoadError(f"{meta_path}: field '{key}' {problem}")


def _check_unit(meta_path, key, value, *, optional=False):
    """``value`` must be a finite number in [0, 1] (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _meta_error(meta_path, key, f"must be a number in [0, 1]; got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise _meta_error(meta_path, key, f"must be a finite number in [0, 1]; got {value!r}")


def _check_sha256_field(meta_path, key, value):
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise _meta_error(meta_path, key, "must be a SHA-256 (64 hexadecimal characters)")


def read_meta(path) -> dict:
    """Read and validate ``meta.json`` of a model folder (no model loading).

    Raises
    ------
    ModelLoadError
        Naming the file and the field: a missing folder or file, invalid JSON,
        a missing field or one of the wrong type, a threshold that is not a
        finite number in [0, 1], an unknown method, calibration, threshold rule
        or entity backend, an empty feature list, a metadata feature listed by
        a model that uses no metadata (format 2).

    Examples
    --------
    >>> from evqual.models import default_model_path, read_meta
    >>> read_meta(default_model_path())["method"]
    'evqual'
    """
    from ._detector import CALIBRATIONS, FLOOR_MODES, THRESHOLD_RULES, _crossfit_problem
    from ._methods import METHODS, RESPONSE_VARIANTS, get_method

    folder = Path(path)
    meta_path = folder / META_FILE
    if not folder.is_dir():
        raise ModelLoadError(f"{folder}: no such model folder")
    if not os.path.lexists(meta_path):
        raise ModelLoadError(f"{meta_path}: missing (every saved model has a meta.json)")
    meta = read_model_meta(meta_path)
    if not isinstance(meta, dict):
        raise ModelLoadError(f"{meta_path}: must hold a JSON object")
    for key, typ in _REQUIRED.items():
        if key not in meta:
            raise ModelLoadError(f"{meta_path}: field '{key}' is missing")
        if not isinstance(meta[key], typ) or isinstance(meta[key], bool) and typ is not bool:
            raise ModelLoadError(f"{meta_path}: field '{key}' has the wrong type ({type(meta[key]).__name__})")
    if meta["format"] not in READ_FORMATS:
        raise ModelLoadError(f"{meta_path}: format {meta['format']} is not supported (this evqual reads "
                             f"{', '.join(map(str, READ_FORMATS))}; retrain the model with this evqual)")
    _check_sha256_field(meta_path, "model_sha256", meta["model_sha256"])
    for key, known in (("method", tuple(METHODS) + tuple(RESPONSE_VARIANTS)), ("calibration", CALIBRATIONS),
                       ("threshold_rule", THRESHOLD_RULES), ("entity_backend", ENTITY_BACKENDS)):
        if meta[key] not in known:
            raise _meta_error(meta_path, key, f"must be one of {', '.join(known)}; got {_oneline(meta[key], 80)!r}")
    _check_fallback(meta_path, meta)
    from ..data import AUGMENT_VERSIONS

    if meta.get("augment") is not None and meta["augment"] not in AUGMENT_VERSIONS:
        raise _meta_error(meta_path, "augment", f"must be null or one of {', '.join(AUGMENT_VERSIONS)}; got "
                                                f"{_oneline(repr(meta['augment']), 80)}")
    _check_unit(meta_path, "augment_rate", meta.get("augment_rate"), optional=True)
    problem = _crossfit_problem(meta.get("crossfit"), none="null")
    if problem is not None:
        raise _meta_error(meta_path, "crossfit", _oneline(problem, 120))
    _check_unit(meta_path, "threshold", meta["threshold"])
    _check_unit(meta_path, "sentence_threshold", meta.get("sentence_threshold"), optional=True)
    for key in ("ood", "adaptation"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise _meta_error(meta_path, key, f"must be an object or null; got {type(meta[key]).__name__}")
    ood = meta.get("ood")
    if ood is not None:
        groups = ood.get("groups")
        if not isinstance(groups, dict) or not all(isinstance(g, dict) for g in groups.values()):
            raise _meta_error(meta_path, "ood.groups", "must map each task type to {rows, threshold}")
        for key, group in groups.items():
            value = group.get("threshold")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise _meta_error(meta_path, f"ood.groups.{_oneline(key, 40)}.threshold",
                                  "must be a positive finite number")
    adaptation = meta.get("adaptation")
    if adaptation is not None:
        parent = adaptation.get("parent")
        if not isinstance(parent, dict):
            raise _meta_error(meta_path, "adaptation.parent", "must be an object (the model adapted)")
        _check_sha256_field(meta_path, "adaptation.parent.model_sha256", parent.get("model_sha256"))
        data = adaptation.get("data")
        if not isinstance(data, dict):
            raise _meta_error(meta_path, "adaptation.data", "must be an object (the labelled answers)")
        _check_sha256_field(meta_path, "adaptation.data.sha256", data.get("sha256"))
    span = meta.get("span_tagger")
    if span is not None:
        if not isinstance(span, dict):
            raise _meta_error(meta_path, "span_tagger", f"must be an object or null; got {type(span).__name__}")
        for key in ("threshold", "gate"):
            if key not in span:
                raise _meta_error(meta_path, f"span_tagger.{key}", "is missing")
            _check_unit(meta_path, f"span_tagger.{key}", span[key])
        tokens = span.get("token_features")
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise _meta_error(meta_path, "span_tagger.token_features", "must be a list of feature names")
    for key in ("response_features", "sentence_features"):
        names = meta[key]
        if not names:
            raise _meta_error(meta_path, key, "is empty (every method is fitted on its featurizers' features)")
        if not all(isinstance(n, str) for n in names):
            raise _meta_error(meta_path, key, "must be a list of feature names")
    if meta["format"] >= 2:  # only the features the model uses
        uses = meta.get("uses_metadata")
        if not isinstance(uses, bool):
            raise _meta_error(meta_path, "uses_metadata", "must be true or false")
        if uses != get_method(meta["method"]).uses_metadata:
            raise _meta_error(meta_path, "uses_metadata", f"is {str(uses).lower()} but method {meta['method']!r} "
                                                          f"{'uses' if not uses else 'does not use'} metadata")
        for key in ("response_features", "sentence_features"):
            extra = [n for n in meta[key] if not uses and _family(n) == "meta"]
            if extra:
                raise _meta_error(meta_path, key, f"lists the metadata feature {_oneline(extra[0], 80)!r}, which "
                                                  f"a model that uses no metadata (uses_metadata false) does not read")
            if len(set(meta[key])) != len(meta[key]):
                raise _meta_error(meta_path, key, "lists a feature twice")
    floors = meta.get("evidence_floor", {})
    if not isinstance(floors, dict):
        raise _meta_error(meta_path, "evidence_floor", f"must be an object; got {type(floors).__name__}")
    for key, value in floors.items():
        if ":" not in key or key.split(":", 1)[1] not in meta.get("response_features", ()):
            raise _meta_error(meta_path, f"evidence_floor.{_oneline(key, 60)}",
                              "is not '<task>:<a response feature of the model>'")
        _check_unit(meta_path, f"evidence_floor.{key}", value)
    if "evidence_floor_mode" in meta and meta["evidence_floor_mode"] not in (*FLOOR_MODES, None):
        raise _meta_error(meta_path, "evidence_floor_mode", f"must be one of {FLOOR_MODES} or null; "
                                                            f"got {_oneline(repr(meta['evidence_floor_mode']), 60)}")
    for key in _VERSION_KEYS:  # recorded since reproducible builds; absent from older models
        if key in meta and not isinstance(meta[key], str):
            raise _meta_error(meta_path, key, f"must be a string; got {type(meta[key]).__name__}")
    from ._packed import VERSION_RE

    for key in ("evqual_version", "sklearn_version", "python_version", *_VERSION_KEYS):
        if key in meta and not VERSION_RE.fullmatch(meta[key]):  # printed in warnings: no escape, no newline
            raise _meta_error(meta_path, key, f"is not a version string ({_oneline(repr(meta[key]), 40)})")
    if "prediction_fingerprint" in meta:
        fp = meta["prediction_fingerprint"]
        if not isinstance(fp, dict):
            raise _meta_error(meta_path, "prediction_fingerprint", "must be an object")
        _check_sha256_field(meta_path, "prediction_fingerprint.sha256", fp.get("sha256"))
        for key in ("version", "rows", "batch_size"):
            if isinstance(fp.get(key), bool) or not isinstance(fp.get(key), int) or fp[key] < 0:
                raise _meta_error(meta_path, f"prediction_fingerprint.{key}", "must be a non-negative integer")
    return meta


def _check_fallback(meta_path, meta: dict) -> None:
    """``fallback`` (optional): null, or ``{"from", "to", "reason"}`` naming a method and its variant = ``method``."""
    from ._methods import RESPONSE_FALLBACK

    fb = meta.get("fallback")
    if fb is None:
        return
    if not isinstance(fb, dict) or set(fb) != {"from", "to", "reason"}:
        raise _meta_error(meta_path, "fallback", "must be null or an object with exactly 'from', 'to' and 'reason'")
    if fb["from"] not in RESPONSE_FALLBACK:
        raise _meta_error(meta_path, "fallback.from", f"must be one of {', '.join(RESPONSE_FALLBACK)}; got "
                                                      f"{_oneline(repr(fb['from']), 80)}")
    if fb["to"] != RESPONSE_FALLBACK[fb["from"]] or fb["to"] != meta["method"]:
        raise _meta_error(meta_path, "fallback.to", f"must be {RESPONSE_FALLBACK[fb['from']]!r}, the variant of "
                                                    f"{fb['from']!r} and the model's method {meta['method']!r}")
    if not isinstance(fb["reason"], str) or not fb["reason"].strip():
        raise _meta_error(meta_path, "fallback.reason", "must be a non-empty string")


def _check_features(meta: dict, meta_path: Path) -> None:
    span = meta.get("span_tagger")
    if span:
        from ..features import TOKEN_FEATURE_NAMES

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


# ---------------------------------------------------------------------------------------------- the zip
def _expected_sha256(sha256):
    """``(expected hex digest or None, where it came from)``: the argument, else ``$EVQUAL_MODEL_SHA256``."""
    if sha256 is None:
        value = os.environ.get(MODEL_SHA256_ENV, "").strip()
        if not value:
            return None, None
        source = f"${MODEL_SHA256_ENV}"
    else:
        value, source = sha256, "sha256"
    if not isinstance(value, str) or not _SHA256.fullmatch(value.strip()):
        raise ModelLoadError(f"{source}: expected a SHA-256 (64 hexadecimal characters); got "
                             f"{_oneline(repr(value), 80)}")
    return value.strip().lower(), source


def _read_model_bytes(model_path: Path) -> bytes:
    return read_model_file(model_path)


# ---------------------------------------------------------------------------------------------- after loading
DETECTOR_ATTRIBUTES = frozenset({
    "augment", "augment_rate", "builder_", "calibration", "calibrator_", "claim_threshold_", "compose", "crossfit",
    "entity_backend", "evidence_floor", "evidence_floor_", "exclude_implicit_true", "fallback_", "meta_", "method",
    "model_", "n_train_", "n_validation_", "ood_", "adapter_", "random_state", "sentence_calibrator_", "sentence_threshold_", "span_gate_",
    "span_tagger_", "span_threshold_", "threshold_", "threshold_rule", "validation_metrics_", "validation_size"})
"""The attributes a saved :class:`Detector` may have (any other is refused at load)."""


def _load_lean(data: bytes, model_path: Path, meta: dict):
    """The detector built with scoring stand-ins (see :func:`load_detector`), or ``None`` when it must load
    fully: a type without a stand-in, a vectoriser whose analyser needs scikit-learn, another scikit-learn
    minor version than the packaged templates', or any check failing (the full load then decides)."""
    from ._lean import CompactTfidfVectorizer
    from ._packed import NotLean
    from ._templates import method_templates

    templates = method_templates()
    if _version_tuple(meta["sklearn_version"])[:2] != _version_tuple(templates["sklearn_version"])[:2] or \
            meta["method"] not in templates["methods"]:
        return None

    def prepare(det):
        _check_detector(det, meta, model_path, template=templates["methods"][meta["method"]])
        stack, seen = [det], set()
        while stack:  # every vectoriser's analyser must be one the stand-in reproduces
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, CompactTfidfVectorizer):
                if not obj.analyser_supported():
                    raise NotLean("a vectoriser's analyser")
                continue  # its own state is a vocabulary and IDF weights (50,000 terms not walked one by one)
            if isinstance(obj, (list, tuple)):
                stack.extend(obj)
            elif isinstance(obj, dict):
                stack.extend(obj.values())
            elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("evqual."):
                stack.extend(vars(obj).values())
        return None

    try:
        detector = load_audited(data, model_path, prepare=prepare, lean=True)
    except (NotLean, ModelLoadError):
        return None
    detector.lean_ = True
    return detector


def _check_detector(det, meta: dict, model_path: Path, *, template=None) -> dict | None:
    """Attribute types of the loaded detector, and their agreement with ``meta.json``; returns the templates
    its model's parameters must match (what its method builds).  With ``template`` (a lean load: the method's
    node of ``method_templates.json``), the model is compared with it here and ``None`` is returned."""
    from ..features import EvidenceFeaturizer
    from ._detector import CALIBRATIONS, THRESHOLD_RULES, Detector
    from ._frame import FrameBuilder
    from ._methods import METHODS, RESPONSE_VARIANTS, get_method
    from ._spans import SpanTagger

    if type(det) is not Detector:
        raise ModelLoadError(f"{model_path}: holds a {type(det).__name__}, not an evqual.models.Detector")
    attrs = vars(det)
    extra = sorted(set(attrs) - DETECTOR_ATTRIBUTES)
    if extra:
        raise ModelLoadError(f"{model_path}: Detector attribute {_oneline(extra[0], 60)!r} is not one a Detector "
                             f"has; refusing to load")

    def fail(name, problem):
        return ModelLoadError(f"{model_path}: Detector attribute '{name}' {problem}; refusing to load")

    def get(name, default=KeyError):
        if name not in attrs:
            if default is KeyError:
                raise fail(name, "is missing")
            return default
        return attrs[name]

    def unit(name, value, optional=False):
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0.0 <= value <= 1.0:
            raise fail(name, f"must be a finite number in [0, 1]; got {_oneline(repr(value), 60)}")

    for name, known, key in (("method", tuple(METHODS) + tuple(RESPONSE_VARIANTS), "method"),
                             ("calibration", CALIBRATIONS, "calibration"),
                             ("threshold_rule", THRESHOLD_RULES, "threshold_rule"),
                             ("entity_backend", ENTITY_BACKENDS, "entity_backend")):
        value = get(name)
        if not isinstance(value, str) or value not in known:
            raise fail(name, f"must be one of {', '.join(known)}; got {_oneline(repr(value), 60)}")
        if value != meta[key]:
            raise fail(name, f"is {value!r} but meta.json says {meta[key]!r}")
    if not isinstance(get("exclude_implicit_true"), bool):
        raise fail("exclude_implicit_true", "must be a bool")
    unit("threshold_", get("threshold_"))
    if attrs["threshold_"] != meta["threshold"]:
        raise fail("threshold_", f"is {attrs['threshold_']!r} but meta.json says {meta['threshold']!r}")
    unit("sentence_threshold_", get("sentence_threshold_"), optional=True)
    if "sentence_threshold" in meta and attrs["sentence_threshold_"] != meta["sentence_threshold"]:
        raise fail("sentence_threshold_", f"is {attrs['sentence_threshold_']!r} but meta.json says "
                                          f"{meta['sentence_threshold']!r}")
    for name in ("n_train_", "n_validation_"):
        value = get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(name, "must be a non-negative integer")
    # the featurizers, and the features meta.json lists
    builder = get("builder_")
    if type(builder) is not FrameBuilder:
        raise fail("builder_", f"must be a FrameBuilder; got {type(builder).__name__}")
    for name in ("response_featurizer_", "sentence_featurizer_"):
        if type(vars(builder).get(name)) is not EvidenceFeaturizer:
            raise fail(f"builder_.{name}", "must be an EvidenceFeaturizer")
    if vars(builder).get("entity_backend") != meta["entity_backend"]:
        raise fail("builder_.entity_backend", f"does not match meta.json ({meta['entity_backend']!r})")
    # format 1 listed every feature of the featurizers, format 2 the ones the model uses
    uses = meta["uses_metadata"] if meta["format"] >= 2 else True
    try:
        names = (model_features(builder.response_names, uses), model_features(builder.sentence_names, uses))
    except Exception as exc:  # noqa: BLE001 - a malformed featurizer
        raise fail("builder_", f"cannot list its features ({type(exc).__name__}: {_oneline(exc, 120)})") from None
    for key, got in zip(("response_features", "sentence_features"), names):
        if got != list(meta[key]):
            raise ModelLoadError(f"{model_path}: the featurizers compute other features than meta.json field "
                                 f"'{key}' lists; refusing to load")
    # the model: the classes its method builds
    if template is not None:
        from ._templates import check_against_template

        check_against_template(get("model_"), template, "model_", fail)
        fresh = None
    else:
        fresh = get_method(attrs["method"]).make()
        _check_structure(get("model_"), fresh, "model_", fail)
    if get("fallback_", None) != meta.get("fallback"):
        raise fail("fallback_", "does not match meta.json field 'fallback'")
    calibrator = get("calibrator_")
    want = {"sigmoid": "_SigmoidCalibration", "isotonic": "IsotonicRegression", "none": "NoneType"}
    if _class_name(calibrator) != want[attrs["calibration"]] or \
            calibrator is not None and not _saved_module(calibrator).startswith("sklearn."):
        raise fail("calibrator_", f"must be a {want[attrs['calibration']]} for calibration "
                                  f"{attrs['calibration']!r}; got {type(calibrator).__name__}")
    def sigmoid_params(attr, cal):
        for name in ("a_", "b_"):
            value = vars(cal).get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or \
                    not math.isfinite(value):
                raise fail(f"{attr}.{name}", "must be a finite number")

    if attrs["calibration"] == "sigmoid":
        sigmoid_params("calibrator_", calibrator)
    # the composition of answer and sentence risks
    from ._detector import COMPOSITIONS, FLOOR_MODES, _crossfit_problem

    compose = get("compose", "none")
    if compose not in COMPOSITIONS:
        raise fail("compose", f"must be one of {COMPOSITIONS}")
    if "compose" in meta and meta["compose"] != compose:
        raise fail("compose", "disagrees with meta.json field 'compose'")
    crossfit = get("crossfit", None)
    if _crossfit_problem(crossfit) is not None:
        raise fail("crossfit", "must be null or an integer >= 2")
    if meta.get("crossfit") != crossfit:
        raise fail("crossfit", "disagrees with meta.json field 'crossfit'")
    floor = get("evidence_floor", True)
    if not (isinstance(floor, bool) or isinstance(floor, str) and floor in FLOOR_MODES):
        raise fail("evidence_floor", f"must be a bool or one of {FLOOR_MODES}")
    if "evidence_floor_mode" in meta and meta["evidence_floor_mode"] != _floor_mode_of(det):
        raise fail("evidence_floor", "disagrees with meta.json field 'evidence_floor_mode'")
    scal = get("sentence_calibrator_", None)
    if scal is not None:
        if _class_name(scal) != "_SigmoidCalibration" or not _saved_module(scal).startswith("sklearn."):
            raise fail("sentence_calibrator_", f"must be a _SigmoidCalibration or None; got {type(scal).__name__}")
        sigmoid_params("sentence_calibrator_", scal)
    unit("claim_threshold_", get("claim_threshold_", None), optional=True)
    # the evidence floors
    floors = get("evidence_floor_", {})
    if not isinstance(floors, dict) or not all(isinstance(k, str) for k in floors):
        raise fail("evidence_floor_", "must be a dict of feature names to numbers")
    for key, value in floors.items():
        unit(f"evidence_floor_[{key!r}]", value)
        if ":" not in key or key.split(":", 1)[1] not in names[0]:
            raise fail("evidence_floor_", f"names {key!r}, which is not '<task>:<response feature of the model>'")
    if floors != meta.get("evidence_floor", {}):
        raise fail("evidence_floor_", "disagrees with meta.json field 'evidence_floor'")
    # the out-of-distribution map
    from ._ood import check_ood_state

    ood = get("ood_", None)
    problem = check_ood_state(ood)
    if problem is None and ood is not None and not set(ood["names"]) <= set(names[0]):
        problem = "reads a feature the model's featurizers do not compute"
    if problem is not None:
        raise fail("ood_", problem)
    if "ood" in meta and (meta["ood"] is None) != (ood is None) or ood is not None and \
            (meta.get("ood") or {}).get("groups") != {k: {"rows": g["n_fit"], "threshold": g["threshold"]}
                                                      for k, g in ood["groups"].items()}:
        raise fail("ood_", "disagrees with meta.json field 'ood'")
    # the adapter (evqual adapt)
    from ._adapt import check_adapter_state

    problem = check_adapter_state(get("adapter_", None), names[0])
    if problem is not None:
        raise fail("adapter_", problem)
    if (meta.get("adaptation") is None) != (attrs.get("adapter_") is None):
        raise fail("adapter_", "disagrees with meta.json field 'adaptation'")
    # the span tagger
    tagger = get("span_tagger_", None)
    if tagger is not None and type(tagger) is not SpanTagger:
        raise fail("span_tagger_", f"must be a SpanTagger or None; got {type(tagger).__name__}")
    span = meta.get("span_tagger")
    if "span_tagger" in meta and (span is None) != (tagger is None):
        raise fail("span_tagger_", "disagrees with meta.json field 'span_tagger'")
    if tagger is not None:
        unit("span_threshold_", get("span_threshold_"))
        unit("span_gate_", get("span_gate_", 0.0))
        if span is not None and (attrs["span_threshold_"] != span["threshold"]
                                 or attrs.get("span_gate_", 0.0) != span["gate"]):
            raise fail("span_threshold_", "or 'span_gate_' disagrees with meta.json field 'span_tagger'")
    return templates_for(attrs["model_"], fresh) if fresh is not None else None


def _saved_module(obj) -> str:
    """The module of the class ``obj`` is saved as (a lean stand-in: the class it stands in for)."""
    from ._lean import lean_name

    name = lean_name(obj)
    return name.rpartition(".")[0] if name else type(obj).__module__


def _class_name(obj) -> str:
    from ._lean import lean_name

    name = lean_name(obj)
    return name.rpartition(".")[2] if name else type(obj).__name__


def _check_structure(model, fresh, name, fail) -> None:
    """``model`` must be of the class ``fresh`` is, with sub-estimators of the same classes."""
    if type(model) is not type(fresh):
        raise fail(name, f"must be a {type(fresh).__name__} (what its method builds); got {type(model).__name__}")
    try:
        got = model.get_params(deep=True)
    except Exception as exc:  # noqa: BLE001 - a malformed estimator
        raise fail(name, f"has malformed parameters ({type(exc).__name__}: {_oneline(exc, 120)})") from None
    for key, value in fresh.get_params(deep=True).items():
        if hasattr(value, "get_params") and not isinstance(value, type):
            if key not in got or type(got[key]) is not type(value):
                raise fail(f"{name}.{key}", f"must be a {type(value).__name__}; got "
                                            f"{type(got.get(key)).__name__}")


# ---------------------------------------------------------------------------------------------- loading
def load_detector(path, *, sha256: str | None = None, lean: bool = False):
    """Load a detector saved by :func:`save_detector`, with every check of the trust model.

    Parameters
    ----------
    path : str or Path
        The model folder.
    sha256 : str, optional
        The expected SHA-256 of the model file (``model.evqpack``, or
        ``model.skops`` in an older folder; 64 hexadecimal characters),
        compared before anything else is read.  Default: the value of
        ``$EVQUAL_MODEL_SHA256`` when it is set, else no pin.
    lean : bool, default=False
        Build the model's scikit-learn objects as scoring-only stand-ins
        (:mod:`evqual.models._lean`) and import no scikit-learn: what
        :meth:`evqual.scoring.Scorer.load` does.  The same checks run (the
        parameters against the packaged ``method_templates.json``) and the
        detector's results are the same to the last bit; it can score, not
        fit, adapt or be saved.  A model it cannot load this way (a type
        without a stand-in, a skops file, another scikit-learn minor version
        than the templates') loads fully, as without ``lean``.

    Raises
    ------
    evqual.errors.MissingDependencyError
        When the model was trained with ``entity_backend="spacy"`` and spaCy
        or its pipeline (the ``ner`` extra) is not installed.
    ModelLoadError
        Naming the file and the field: a SHA-256 that differs from the pinned
        one or from ``meta.json``'s, a missing or malformed ``meta.json``, a
        feature version this evqual does not compute, a malformed zip or
        ``schema.json``, a type outside :data:`TRUSTED_TYPES`, or a loaded
        detector whose attributes or trees are not what evqual saves.

    Examples
    --------
    >>> import hashlib, tempfile
    >>> from evqual.data import load_sample
    >>> from evqual.models import Detector, save_detector, load_detector
    >>> folder = save_detector(Detector("nli-proxy").fit(load_sample()), tempfile.mkdtemp())
    >>> load_detector(folder).method
    'nli-proxy'
    >>> pin = hashlib.sha256((folder / "model.evqpack").read_bytes()).hexdigest()
    >>> load_detector(folder, sha256=pin).threshold_ == load_detector(folder).threshold_
    True
    >>> load_detector(folder, sha256="0" * 64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evqual.models._audit.ModelLoadError: .../model.evqpack: SHA-256 ... does not match the expected 000...
    """
    folder = Path(path)
    model_path = model_file(folder)
    meta_path = folder / META_FILE
    expected, source = _expected_sha256(sha256)
    data = None
    if expected is not None:  # the pin comes before anything else is read
        if not folder.is_dir():
            raise ModelLoadError(f"{folder}: no such model folder")
        data = _read_model_bytes(model_path)
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise ModelLoadError(f"{model_path}: SHA-256 {digest} does not match the expected {expected} "
                                 f"(from {source}); refusing to load")
    meta = read_meta(folder)
    if model_path.name != model_file_name(meta["format"]):
        raise ModelLoadError(f"{model_path}: {meta_path} has format {meta['format']}, whose model file is "
                             f"{model_file_name(meta['format'])}; refusing to load")
    if data is None:
        data = _read_model_bytes(model_path)
        digest = hashlib.sha256(data).hexdigest()  # (with a pin, the digest above: one hash of the file)
    if digest != meta["model_sha256"].lower():
        raise ModelLoadError(f"{model_path}: SHA-256 {digest[:12]}... does not match meta.json "
                             f"({meta['model_sha256'][:12]}...); the file was modified after saving. Refusing to load.")
    _check_features(meta, meta_path)
    if meta["entity_backend"] == "spacy":  # before anything is built: a clear error, not one at predict time
        from ..text import require_spacy

        require_spacy(f"the model {folder} (trained with entity_backend='spacy')")
    if _version_tuple(meta["evqual_version"]) > _version_tuple(__version__):
        warnings.warn(f"{meta_path}: saved by evqual {meta['evqual_version']}, newer than this "
                      f"{__version__}", UserWarning, stacklevel=2)
    detector = _load_lean(data, model_path, meta) if lean else None
    if detector is None:
        import sklearn

        if _version_tuple(meta["sklearn_version"]) > _version_tuple(sklearn.__version__):
            warnings.warn(f"{meta_path}: saved with scikit-learn {meta['sklearn_version']}, newer than this "
                          f"{sklearn.__version__}", UserWarning, stacklevel=2)
        detector = load_audited(data, model_path, prepare=lambda det: _check_detector(det, meta, model_path))
    meta.setdefault("name", folder.name)
    detector.meta_ = meta
    return detector


def dump_trusted(obj, path) -> str:
    """Write ``obj`` with skops as a deterministic zip at ``path``; returns its SHA-256.

    The counterpart of :func:`load_trusted`, for the models evqual ships beside
    a detector (the verification stage's claim model).
    """
    import skops.io as sio

    data = _canonical_zip(sio.dumps(obj, compression=zipfile.ZIP_DEFLATED, compresslevel=9))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def load_trusted(path, *, root: str, extra_types=(), sha256: str | None = None, prepare=None):
    """Load a skops file whose root is the class ``root``, with the same audit as :func:`load_detector`.

    The file, the zip and its ``schema.json`` are checked before anything is
    built, and every object after (:func:`evqual.models._audit.load_audited`:
    the one audit of every model file); the types allowed are
    :data:`TRUSTED_TYPES` plus ``extra_types`` (``module.class`` names, loaded
    as ``ObjectNode``) and the root.  ``sha256`` pins the file; ``prepare(obj)``
    checks the root's own attributes and returns the estimator templates its
    parameters must match (see :func:`evqual.models._audit.templates_for`).

    Raises
    ------
    ModelLoadError
        Naming the file and what is wrong.
    """
    path = Path(path)
    data = _read_model_bytes(path)
    if sha256 is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != str(sha256).lower():
            raise ModelLoadError(f"{path}: SHA-256 {digest} does not match the expected {sha256}; refusing to load")
    root_type = (root, "ObjectNode")
    trusted = TRUSTED_TYPES | {root_type} | {(t, "ObjectNode") for t in extra_types}
    return load_audited(data, path, root=root_type, trusted=trusted, prepare=prepare)


def _floor_mode_of(detector) -> str | None:
    """How a detector estimated its evidence floors (``meta.json`` field ``evidence_floor_mode``): ``"binding"``,
    ``"fired"``, or None when it has none."""
    from ._detector import _floor_mode

    if not getattr(detector, "evidence_floor_", None):
        return None
    try:
        return _floor_mode(getattr(detector, "evidence_floor", True))
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------- builds
def fit_detector(examples, *, method: str = "evqual", calibration: str = "sigmoid", threshold_rule: str = "f1",
                 entity_backend: str = "regex", validation_split: str | None = "test", augment: str | None = None,
                 evidence_floor: bool | str = True, compose: str = "bounds", crossfit: int | None = None):
    """Fit a :class:`Detector` on all given examples, as ``evqual train`` does.

    The calibration and threshold part is 25% of the sources of the
    ``validation_split`` split when the data has one, else 20% of all sources;
    with ``crossfit=k``, the whole of that split (of all rows), scored out of
    fold by ``k`` models (:class:`Detector`'s ``crossfit``).
    """
    from ..errors import ResponseLevelFallbackWarning
    from ._detector import Detector

    det = Detector(method, calibration=calibration, threshold_rule=threshold_rule, entity_backend=entity_backend,
                   augment=augment, evidence_floor=evidence_floor, compose=compose, crossfit=crossfit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", ResponseLevelFallbackWarning)  # the one a user must see
        return det.fit(examples, validation_pool=validation_split or None)


def training_data_info(result, label: str, *, validation_split: str | None = "test", sources=None) -> dict:
    """What ``meta.json`` records of the training data: path, SHA-256 of its files, row counts; with
    ``sources`` (source specs, :func:`evqual.data.load_sources`), each source's spec, rows and weight."""
    from collections import Counter

    digest = hashlib.sha256()
    for p in sorted(result.paths):
        digest.update(Path(p).read_bytes())
    info = {"path": label, "sha256": digest.hexdigest(), "rows": len(result),
            "rows_by_split": dict(Counter(str(ex.split) for ex in result)),
            "rows_by_task": dict(Counter(str(ex.task_type) for ex in result)),
            "positives": int(sum(1 for ex in result if ex.label == 1)),
            "validation_split": validation_split}
    if sources is not None:
        from ..data import source_info

        info["sources"] = source_info(result, sources)
        info["specs"] = [str(s) for s in sources]
    return info


def load_training(data, *, seed: int = 42):
    """``(result, fitting examples, label, specs)`` of training data: one path (read as
    :func:`evqual.data.load_data` reads it; ``specs`` None) or several source specs
    (:func:`evqual.data.load_sources`, each source's weight applied to the fitting examples with ``seed``).

    >>> from evqual.data import sample_path
    >>> result, examples, label, specs = load_training([f"{sample_path()}:name=a,weight=2"])
    >>> len(examples) == 2 * len(result), specs
    (True, ['...:name=a,weight=2'])
    """
    from ..data import load_data, load_sources, plain_path, weigh_sources

    if isinstance(data, (list, tuple)) and not data:
        raise ValueError("no training data given")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if plain_path(data):
            path = data if isinstance(data, (str, Path)) else list(data)[0]
            result = load_data(Path(path))
            return result, result.examples, str(path), None
        specs = [str(s) for s in data]
        result = load_sources(specs)
    return result, weigh_sources(result.examples, specs, seed=seed), " + ".join(specs), specs


def build_model(data, out, *, method: str = "evqual", calibration: str = "sigmoid", threshold_rule: str = "f1",
                entity_backend: str = "regex", validation_split: str | None = "test", augment: str | None = None,
                metrics: dict | None = None, evidence_floor: bool = True, compose: str = "bounds",
                crossfit: int | None = None) -> Path:
    """Train and save a model exactly as ``evqual train --data DATA --method METHOD --out OUT`` does.

    Parameters
    ----------
    data : str or Path, or list of source specs
        Dataset folder or file (see :func:`evqual.data.load_data`), recorded
        in ``meta.json`` as given; or several sources with their weights
        (``["../shared/data/ragtruth", "x.jsonl:split=dev,weight=0.5"]``, see
        :func:`evqual.data.load_sources`), each recorded in ``training_data["sources"]``.
    out : str or Path
        The model folder to write.
    method, calibration, threshold_rule, entity_backend, validation_split, augment, evidence_floor, compose, crossfit
        As the options of ``evqual train``.
    metrics : dict, optional
        Evaluation metrics recorded in ``meta.json``.

    Returns
    -------
    Path
        The folder.

    Examples
    --------
    >>> import tempfile
    >>> from evqual.data import sample_path
    >>> from evqual.models import build_model, read_meta
    >>> folder = build_model(sample_path(), tempfile.mkdtemp(), method="nli-proxy")
    >>> read_meta(folder)["training_data"]["rows"]
    72
    """
    result, examples, label, specs = load_training(data)
    det = fit_detector(examples, method=method, calibration=calibration, threshold_rule=threshold_rule,
                       entity_backend=entity_backend, validation_split=validation_split, augment=augment,
                       evidence_floor=evidence_floor, compose=compose, crossfit=crossfit)
    info = training_data_info(result, label, validation_split=validation_split, sources=specs)
    return save_detector(det, out, training_data=info, metrics=metrics)


def _rebuild_settings(meta: dict) -> dict:
    """The :func:`build_model` settings a saved model's ``meta.json`` records.

    >>> _rebuild_settings({"method": "evqual", "calibration": "sigmoid", "threshold_rule": "f1",
    ...                    "entity_backend": "regex", "training_data": {},
    ...                    "evidence_floor": {"*:check.unit.v1": 0.7}})["evidence_floor"]
    True
    """
    floors = meta.get("evidence_floor")
    mode = (meta.get("evidence_floor_mode", "fired") or False) if floors else False
    return dict(method=meta["method"], calibration=meta["calibration"], threshold_rule=meta["threshold_rule"],
                entity_backend=meta["entity_backend"],
                validation_split=meta["training_data"].get("validation_split", "test"),
                augment=meta.get("augment"),
                # a model from before binding floors records no mode: its floors were estimated over every
                # row a check fired on.  "fired" is passed as True, its spelling in build_model, evqual train and
                # Detector: the parameter is saved as given, so the rebuilt file has the same bytes
                evidence_floor=True if mode == "fired" else mode,
                compose=meta.get("compose", "none"), crossfit=meta.get("crossfit"))


def check_rebuild(model, data, *, workdir=None) -> dict:
    """Rebuild a saved model from ``data`` and compare the prediction fingerprints.

    The rebuild uses the method, calibration, threshold rule, entity backend
    and validation split recorded in the model's ``meta.json``.  The
    reference is the fingerprint recorded there; a model saved before
    fingerprints were recorded is loaded and fingerprinted.

    Parameters
    ----------
    model : str or Path
        The saved model folder (for instance ``models/default``).
    data : str or Path, or list of source specs
        The data it was trained on (as :func:`build_model` takes it).
    workdir : str or Path, optional
        Where to write the rebuild (default: a temporary folder, removed).

    Returns
    -------
    dict
        ``{"ok", "expected", "rebuilt", "recorded", "threshold", "rebuilt_threshold",
        "model_sha256", "rebuilt_model_sha256", "same_file", "versions"}``; ``ok`` is whether the
        prediction fingerprints are equal (the same floats on the embedded sample),
        ``same_file`` whether the model files have the same bytes, ``versions`` the library versions
        recorded in the model's ``meta.json`` that differ from this environment's
        (``{key: [recorded or None, now]}``: a rebuild elsewhere may predict other floats).

    Examples
    --------
    >>> import tempfile
    >>> from evqual.data import sample_path
    >>> from evqual.models import build_model, check_rebuild
    >>> folder = build_model(sample_path(), tempfile.mkdtemp(), method="nli-proxy")
    >>> check_rebuild(folder, sample_path())["ok"]
    True
    """
    import tempfile

    meta = read_meta(model)
    recorded = "prediction_fingerprint" in meta
    if recorded:
        expected = meta["prediction_fingerprint"]["sha256"]
    else:
        expected = prediction_fingerprint(load_detector(model))["sha256"]
    settings = _rebuild_settings(meta)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        folder = build_model(data, Path(tmp) / "model", **settings)
        rebuilt = read_meta(folder)
    got = rebuilt["prediction_fingerprint"]["sha256"]
    return {"ok": got == expected, "expected": expected, "rebuilt": got, "recorded": recorded,
            "threshold": meta["threshold"], "rebuilt_threshold": rebuilt["threshold"],
            "model_sha256": meta["model_sha256"], "rebuilt_model_sha256": rebuilt["model_sha256"],
            "same_file": meta["model_sha256"] == rebuilt["model_sha256"],
            "versions": {k: [meta.get(k), v] for k, v in _environment().items() if meta.get(k) != v}}


def adapt_model(model, data, out, *, sha256: str | None = None, random_state: int = 0,
                learning_curve=(25, 50, 100, 200), draws: int = 5):
    """Adapt a saved model to labelled answers and save the result, as ``evqual adapt`` does.

    Loads ``model`` (audited, as :func:`load_detector` loads it), reads the labelled answers ``data``
    (any layout :func:`evqual.data.load_data` reads; every row must be valid and labelled), adapts
    (:meth:`Detector.adapt`) and saves the adapted detector to ``out`` with ``meta.json`` recording the
    parent model's SHA-256 and the adaptation data's size and SHA-256, plus the report as
    ``adaptation.md`` and ``adaptation.json``.

    Returns
    -------
    (Path, AdaptationReport)

    Raises
    ------
    ModelLoadError
        The model cannot be loaded.
    evqual.errors.EvqualDataError
        A row of ``data`` is invalid (each one named with its file, line and field; nothing is written).
    evqual.errors.TrainingDataError
        Too few labelled answers, one label only, or an answer without a label.
    ValueError
        ``out`` is the model folder itself.

    Examples
    --------
    >>> import tempfile
    >>> from evqual.data import sample_path
    >>> from evqual.models import adapt_model, default_model_path, load_detector, read_meta
    >>> folder, report = adapt_model(default_model_path(), sample_path(), tempfile.mkdtemp(), learning_curve=())
    >>> read_meta(folder)["adaptation"]["data"]["rows"], load_detector(folder).adapter_["rows"]
    (72, 72)
    """
    from ..data import load_data
    from ..errors import EvqualDataError

    model, out = Path(model), Path(out)
    if out.exists() and model.exists() and out.resolve() == model.resolve():
        raise ValueError(f"--out {out} is the model folder itself: write the adapted model to a new folder")
    meta = read_meta(model)
    det = load_detector(model, sha256=sha256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = load_data(Path(data))
    if result.issues:
        raise EvqualDataError(result.issues, n_ok=len(result.examples))
    adapted, report = det.adapt(result.examples, random_state=random_state, learning_curve=learning_curve,
                                draws=draws)
    digest = hashlib.sha256()
    for p in sorted(result.paths):
        digest.update(Path(p).read_bytes())
    after = {k: v for k, v in report.after.items() if k != "ci"}
    adaptation = {
        "parent": {"model_sha256": meta["model_sha256"], "path": str(model), "threshold": meta["threshold"],
                   "method": meta["method"]},
        "data": {"path": str(data), "sha256": digest.hexdigest(), "rows": report.rows,
                 "positives": report.positives},
        "kind": report.kind, "C": report.C, "threshold": report.threshold, "random_state": random_state,
        "cv": after, "ci": report.after.get("ci"), "before": report.before, "seconds": round(report.seconds, 3),
    }
    folder = save_detector(adapted, out, training_data=meta.get("training_data") or {},
                           metrics=meta.get("metrics") or {}, adaptation=_jsonable(adaptation))
    (folder / "adaptation.md").write_text(report.to_markdown(), encoding="utf-8")
    (folder / "adaptation.json").write_text(json.dumps(_jsonable(report.to_dict()), indent=2) + "\n",
                                            encoding="utf-8")
    return folder, report


def _jsonable(obj):
    """``obj`` with NaN and infinities as None (strict JSON) and numpy scalars as Python numbers."""
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj
