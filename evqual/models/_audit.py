"""The one audit every model file evqual reads passes, before and after anything is built.

Every model file (the detector's ``model.evqpack`` or ``model.skops``, the verification stage's
claim model, and any model evqual adds later) is read through
:func:`load_audited`, which runs, in this order:

1. **The file.**  :func:`read_regular` opens it without blocking, refuses
   anything but a regular file (a FIFO, ``/dev/zero``, a directory) and reads
   at most :data:`MAX_MODEL_BYTES`; ``meta.json`` files are read the same way
   (at most :data:`MAX_META_BYTES`).
2. **The zip.**  Member count, names (only ``schema.json`` and ``.npy``
   members), compression (stored or deflate, never encrypted); then every
   member is *inflated as a stream with a hard limit on the bytes actually
   produced*: a member must inflate to exactly the size it declares, with a
   matching CRC, and all of them to at most :data:`MAX_UNCOMPRESSED_BYTES`
   (a member that declares 80 bytes and inflates to 2 GB is refused after
   the first chunk past 80 bytes).
3. **The schema.**  ``schema.json`` at most :data:`MAX_SCHEMA_BYTES` and
   :data:`MAX_SCHEMA_NODES` objects and arrays, counted on the bytes *before*
   parsing; then a walk that constructs nothing: every node's
   ``(module.class, loader)`` pair in the exact allow-list
   :data:`TRUSTED_TYPES`, only the fields its loader reads, depth at most
   :data:`MAX_SCHEMA_DEPTH`, no cycles, nodes sharing an ``__id__`` (skops'
   memo) identical (so that no position can be made to load as another
   object), every ``.npy`` header checked (no object dtype, size matching its
   shape), every JSON literal a scalar, random-generator seeds of bounded
   size.
4. **Construction** with ``skops.io.load(..., trusted=<exactly the types found>)``:
   never pickle.
5. **The objects** (:func:`audit_objects`), because scikit-learn's compiled
   code indexes model arrays without bounds checks: every decision tree
   (node count, children forming one tree, declared depth equal to the real
   one and at most :data:`MAX_TREE_DEPTH`, features in range, finite split
   thresholds, ``n_outputs``, ``n_classes`` and the shape of ``value``
   against the estimator that owns it), every histogram-boosting predictor
   (the same, no categorical split), gradient-boosting stage arrays,
   vectoriser vocabularies and IDF lengths, column indices, isotonic and
   linear models' shapes; every floating-point number anywhere in the model
   finite; the parameters of every estimator those the factory that built it
   sets (so that no token pattern or rule can be swapped in).

Any failure is a :class:`ModelLoadError` naming the file and what is wrong,
and :func:`load_audited` turns a ``MemoryError`` into one too.
"""

from __future__ import annotations

import io
import json
import math
import os
import stat
import sys
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ._packed import ARRAYS_MEMBER, GRAPH_MEMBER, VERSION_RE, is_packed, load_packed

__all__ = ["ModelLoadError", "TRUSTED_TYPES", "load_audited", "audit_objects", "read_regular", "read_model_file", "read_json_file", "read_model_meta", "templates_for",
           "MAX_MODEL_BYTES", "MAX_META_BYTES", "MAX_UNCOMPRESSED_BYTES", "MAX_SCHEMA_BYTES", "MAX_SCHEMA_NODES",
           "MAX_SCHEMA_DEPTH", "MAX_TREE_DEPTH", "MAX_ZIP_MEMBERS"]


class ModelLoadError(ValueError):
    """A model folder is missing, malformed, tampered with, unsafe or incompatible."""


def _oneline(text, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters (for messages quoting other errors)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


MAX_MODEL_BYTES = 256 * 2**20
"""Largest model file read (bytes; the shipped ``model.evqpack`` is 1.7 MB)."""
MAX_UNCOMPRESSED_BYTES = 512 * 2**20
"""Largest total uncompressed size of the zip's members (the shipped model's is 49 MB)."""
MAX_ZIP_MEMBERS = 100_000
"""Most zip members (the shipped model has 2,420)."""
MAX_SCHEMA_BYTES = 16 * 2**20
"""Largest ``schema.json`` (bytes, as inflated; the shipped model's is 1.0 MB)."""
MAX_SCHEMA_NODES = 250_000
"""Most JSON objects and arrays in ``schema.json``, counted on its bytes before parsing (the shipped model has
about 11,000)."""
MAX_SCHEMA_DEPTH = 64
"""Deepest nesting of skops nodes in ``schema.json`` (evqual's models reach 17)."""
MAX_META_BYTES = 8 * 2**20
"""Largest ``meta.json`` read (bytes)."""
MAX_TREE_DEPTH = 512
"""Deepest decision tree a model may hold (evqual's reach 20; prediction takes one step per level)."""
MAX_SEED_ENTROPY = 64
"""Most words of a random generator's seed entropy (numpy's seed mixing is quadratic in it)."""

SKOPS_PROTOCOLS = (2,)
"""skops protocols whose node loaders :data:`TRUSTED_TYPES` was audited for."""

TRUSTED_TYPES = frozenset({
    # containers and literals
    ("builtins.dict", "DictNode"),
    ("builtins.list", "ListNode"),
    ("builtins.tuple", "TupleNode"),
    ("builtins.str", "JsonNode"),  # every JSON literal (None, bool, int, float, str)
    ("builtins.str", "TypeNode"),  # the key type of a dict
    ("numpy.float64", "TypeNode"),  # a vectoriser's dtype
    # numpy
    ("numpy.ndarray", "NdArrayNode"),
    ("numpy.float64", "NdArrayNode"),
    ("numpy.int64", "NdArrayNode"),
    ("numpy.uint64", "NdArrayNode"),
    ("numpy.random._generator.Generator", "RandomGeneratorNode"),
    ("numpy.random.mtrand.RandomState", "RandomStateNode"),
    # evqual
    ("evqual.models._detector.Detector", "ObjectNode"),
    ("evqual.models._frame.FrameBuilder", "ObjectNode"),
    ("evqual.features._featurizer.EvidenceFeaturizer", "ObjectNode"),
    ("evqual.models._estimators.CompactTfidfVectorizer", "ObjectNode"),
    ("evqual.models._estimators.FeatureSelector", "ObjectNode"),
    ("evqual.models._estimators.SentenceMaxClassifier", "ObjectNode"),
    ("evqual.models._estimators.StackedEvidenceClassifier", "ObjectNode"),
    ("evqual.models._estimators.TextColumn", "ObjectNode"),
    ("evqual.models._spans.SpanTagger", "ObjectNode"),
    ("evqual.evidence._model.ClaimModel", "ObjectNode"),
    # scikit-learn
    ("sklearn._loss._loss.CyHalfBinomialLoss", "LossNode"),
    ("sklearn._loss.link.Interval", "ObjectNode"),
    ("sklearn._loss.link.LogitLink", "ObjectNode"),
    ("sklearn._loss.loss.HalfBinomialLoss", "ObjectNode"),
    ("sklearn.calibration._SigmoidCalibration", "ObjectNode"),
    ("sklearn.dummy.DummyClassifier", "ObjectNode"),
    ("sklearn.ensemble._forest.ExtraTreesClassifier", "ObjectNode"),
    ("sklearn.ensemble._forest.RandomForestClassifier", "ObjectNode"),
    ("sklearn.ensemble._gb.GradientBoostingClassifier", "ObjectNode"),
    ("sklearn.ensemble._hist_gradient_boosting.binning._BinMapper", "ObjectNode"),
    ("sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingClassifier", "ObjectNode"),
    ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor", "ObjectNode"),
    ("sklearn.feature_extraction.text.TfidfTransformer", "ObjectNode"),
    ("sklearn.isotonic.IsotonicRegression", "ObjectNode"),
    ("sklearn.linear_model._logistic.LogisticRegression", "ObjectNode"),
    ("sklearn.pipeline.Pipeline", "ObjectNode"),
    ("sklearn.preprocessing._data.StandardScaler", "ObjectNode"),
    ("sklearn.preprocessing._label.LabelEncoder", "ObjectNode"),
    ("sklearn.tree._classes.DecisionTreeClassifier", "ObjectNode"),
    ("sklearn.tree._classes.DecisionTreeRegressor", "ObjectNode"),
    ("sklearn.tree._classes.ExtraTreeClassifier", "ObjectNode"),
    ("sklearn.tree._tree.Tree", "TreeNode"),
})
"""The exact ``(module.class, skops loader)`` pairs a model file may hold.

The types :func:`save_detector` writes for every method of
:data:`evqual.models.METHODS` and every calibration (a test saves each and
compares with this set, both ways).  Nothing is trusted by module prefix and
skops' own defaults are not relied on: no builtins callable, no function or
method object, no ``numpy.load``.

>>> ("evqual.models._detector.Detector", "ObjectNode") in TRUSTED_TYPES
True
>>> [t for t, loader in TRUSTED_TYPES if loader in ("FunctionNode", "ConstructorFromReduceNode")]
[]
"""

TRUSTED_BIT_GENERATORS = ("PCG64",)
"""Bit generators a ``numpy.random.Generator`` in a model file may name."""

_ROOT_TYPE = ("evqual.models._detector.Detector", "ObjectNode")
_NODE_KEYS = {"__class__", "__module__", "__loader__", "__id__"}
_ROOT_KEYS = {"protocol", "_skops_version"}
_LOADER_KEYS = {
    "DictNode": {"content", "key_types"},
    "ListNode": {"content"},
    "TupleNode": {"content"},
    "JsonNode": {"content", "is_json"},
    "TypeNode": set(),
    "ObjectNode": {"content"},
    "NdArrayNode": {"type", "file", "content", "shape"},
    "RandomStateNode": {"content"},
    "RandomGeneratorNode": {"content"},
    "LossNode": {"__reduce__", "content"},
    "TreeNode": {"__reduce__", "content"},
}



# ---------------------------------------------------------------------------------------------- files
def read_regular(path, limit: int, *, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, or a :class:`ModelLoadError`.

    The file is opened without blocking (a FIFO cannot hang the open) and
    must be a regular file (not a FIFO, a device such as ``/dev/zero``, a
    socket or a folder, whatever a link points at); its size is checked
    before reading, and no more than ``limit + 1`` bytes are ever read (a
    file that grows while read is refused too).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "meta.json")
    >>> _ = open(p, "w").write("{}")
    >>> read_regular(p, 10)
    b'{}'
    >>> read_regular(p, 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evqual.models._audit.ModelLoadError: .../meta.json: larger than 1 bytes; refusing to read it
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ModelLoadError(f"{path}: missing") from None
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot be read ({_oneline(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelLoadError(f"{path}: not a regular file (a {what} must be one); refusing to read it")
        if st.st_size > limit:
            raise ModelLoadError(f"{path}: larger than {limit} bytes; refusing to read it")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot be read ({_oneline(exc)})") from None
    finally:
        os.close(fd)
    if total > limit:
        raise ModelLoadError(f"{path}: larger than {limit} bytes; refusing to read it")
    return b"".join(chunks)


def read_model_file(path) -> bytes:
    """A model file's bytes (:func:`read_regular` with :data:`MAX_MODEL_BYTES`)."""
    return read_regular(path, MAX_MODEL_BYTES, what="model file")


def read_model_meta(path):
    """A model's ``meta.json`` parsed: a regular file of at most :data:`MAX_META_BYTES`, UTF-8 JSON."""
    return read_json_file(path, MAX_META_BYTES)


def read_json_file(path, limit: int = MAX_META_BYTES):
    """A ``meta.json``-like file: read with :func:`read_regular`, parsed as UTF-8 JSON (bounded nesting)."""
    raw = read_regular(path, limit, what="metadata file")
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ModelLoadError(f"{path}: not valid JSON ({_oneline(exc)})") from None


# ---------------------------------------------------------------------------------------------- the zip
def _kind(model_path) -> str:
    """What the file is meant to be, for messages: an evqual model pack (``.evqpack``, what evqual writes),
    a skops file (``.skops``), or either."""
    suffix = Path(str(model_path)).suffix.lower()
    return {".evqpack": "evqual model pack", ".skops": "skops file"}.get(suffix, "evqual model pack or skops file")


def _open_zip(data: bytes, model_path: Path) -> zipfile.ZipFile:
    """The zip, after checks of its directory (members, sizes, compression) and of every member's stream."""
    try:
        zf = _CheckedZip(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, KeyError,
            NotImplementedError) as exc:
        raise ModelLoadError(f"{model_path}: not a valid {_kind(model_path)} (a zip archive: {_oneline(exc)})") \
            from None
    if len(infos) > MAX_ZIP_MEMBERS:
        raise ModelLoadError(f"{model_path}: holds {len(infos)} zip members (at most {MAX_ZIP_MEMBERS})")
    total = sum(info.file_size for info in infos)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise ModelLoadError(f"{model_path}: its zip members would uncompress to {total} bytes (at most "
                             f"{MAX_UNCOMPRESSED_BYTES}); refusing to load")
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise ModelLoadError(f"{model_path}: the zip holds duplicate member names")
    for info in infos:
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
            raise ModelLoadError(f"{model_path}: zip member {_oneline(info.filename, 80)!r} is encrypted or "
                                 f"uses an unsupported compression")
    packed = is_packed(names)
    if not packed and (GRAPH_MEMBER in names or ARRAYS_MEMBER in names or model_path.suffix == ".evqpack"):
        shown = ", ".join(repr(_oneline(n, 40)) for n in sorted(names)[:6]) + (", ..." if len(names) > 6 else "")
        raise ModelLoadError(f"{model_path}: an evqual model pack holds exactly {GRAPH_MEMBER!r} and "
                             f"{ARRAYS_MEMBER!r}; this one holds {shown}; refusing to load")
    for info in infos:
        if not packed and info.filename != "schema.json" and not info.filename.endswith(".npy"):
            raise ModelLoadError(f"{model_path}: unexpected member {_oneline(info.filename, 80)!r} in a skops file")
    if not packed and "schema.json" not in names:
        raise ModelLoadError(f"{model_path}: schema.json is missing (neither a skops file nor an evqual packed "
                             f"file)")
    if not packed and zf.getinfo("schema.json").file_size > MAX_SCHEMA_BYTES:
        raise ModelLoadError(f"{model_path}: schema.json is larger than {MAX_SCHEMA_BYTES} bytes; refusing to load")
    # the members read next are kept (a skops file's arrays are read by skops from the file's bytes)
    for info in infos:
        chunks = [] if info.filename in (GRAPH_MEMBER, ARRAYS_MEMBER, "schema.json") else None
        problem = _inflates_as_declared(data, info, chunks)
        if problem:
            raise ModelLoadError(f"{model_path}: zip member {_oneline(info.filename, 80)!r}: {problem}; "
                                 f"refusing to load")
        if chunks is not None:
            zf.checked[info.filename] = b"".join(chunks)
    return zf


class _CheckedZip(zipfile.ZipFile):
    """A zip whose members :func:`_open_zip` inflated and checked (:func:`_inflates_as_declared`) are kept in
    :attr:`checked`: :meth:`read` returns those bytes instead of inflating the member a second time."""

    def __init__(self, file):
        super().__init__(file)
        self.checked: dict = {}

    def read(self, name, pwd=None):
        key = name.filename if isinstance(name, zipfile.ZipInfo) else name
        if pwd is None and key in self.checked:
            return self.checked[key]
        return super().read(name, pwd)


_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature, version, flags, method, time, date, crc, sizes, lengths
_INFLATE_CHUNK = 1 << 16


def _inflates_as_declared(data: bytes, info: zipfile.ZipInfo, out: list | None = None) -> str | None:
    """What is wrong with a member's stream (``None`` when nothing): it must inflate to exactly its declared
    size, never producing more than that plus one chunk, end its deflate stream, and match its CRC.  ``out``
    (a list) receives the member's bytes, in pieces (the caller keeps them only when nothing is wrong).

    zipfile itself trusts the stream: reading a member that declares 80 bytes
    inflates everything the stream holds (up to 2 GB in one call) before
    cutting it to 80.  Here the stream is inflated a chunk at a time with
    ``max_length``, so memory stays bounded whatever it holds.
    """
    start = info.header_offset
    header = data[start:start + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size:
        return "its local header is cut short"
    sig, _, _, method, _, _, _, _, _, n_name, n_extra = _LOCAL_HEADER.unpack(header)
    if sig != b"PK\x03\x04" or method != info.compress_type:
        return "its local header does not match the zip directory"
    begin = start + _LOCAL_HEADER.size + n_name + n_extra
    end = begin + info.compress_size
    if end > len(data):
        return "its data runs past the end of the file"
    declared = info.file_size
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != declared:
            return "a stored member whose sizes differ"
        crc = zlib.crc32(memoryview(data)[begin:end])
        if out is not None:
            out.append(data[begin:end])
    else:
        inflater = zlib.decompressobj(-15)
        produced, crc, pos = 0, 0, begin
        view = memoryview(data)
        pending = b""
        while True:
            if not pending:
                if pos >= end:
                    break
                pending = view[pos:min(end, pos + _INFLATE_CHUNK)]
                pos += len(pending)
            try:
                chunk = inflater.decompress(pending, _INFLATE_CHUNK)
            except zlib.error as exc:
                return f"not a valid deflate stream ({_oneline(exc, 80)})"
            pending = inflater.unconsumed_tail
            produced += len(chunk)
            if produced > declared:
                return f"inflates to more than the {declared} bytes it declares"
            crc = zlib.crc32(chunk, crc)
            if out is not None:
                out.append(chunk)
            if inflater.eof:
                break
        if not inflater.eof:
            return "its deflate stream is cut short"
        if produced != declared:
            return f"inflates to {produced} bytes, not the {declared} it declares"
    if crc != info.CRC:
        return "its CRC does not match"
    return None


def _path(link) -> str:
    """The schema.json path of a walk link ``(parent link, key, ...)``."""
    parts = []
    while link is not None:
        parts[:0] = link[1:]
        link = link[0]
    return _oneline("/".join(str(p) for p in parts), 200) or "the root"


def _read_schema(zf: zipfile.ZipFile, model_path: Path):
    """``schema.json`` parsed, after its size and its count of objects and arrays were checked on the bytes."""
    try:
        raw = zf.read("schema.json")
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error) as exc:
        raise ModelLoadError(f"{model_path}: schema.json cannot be read ({_oneline(exc)})") from None
    if len(raw) > MAX_SCHEMA_BYTES:
        raise ModelLoadError(f"{model_path}: schema.json is larger than {MAX_SCHEMA_BYTES} bytes; refusing to load")
    # every object or array of the parse opens with one of these bytes (inside strings they only overcount)
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > MAX_SCHEMA_NODES:
        raise ModelLoadError(f"{model_path}: schema.json holds more than {MAX_SCHEMA_NODES} objects and arrays "
                             f"({containers}); refusing to load")
    try:
        schema = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ModelLoadError(f"{model_path}: schema.json cannot be read ({_oneline(exc)})") from None
    bad = _bad_version_string(schema)
    if bad is not None:
        raise ModelLoadError(f"{model_path}: schema.json: {_oneline(bad[0], 40)} is not a version string "
                             f"({_oneline(repr(bad[1]), 40)}); refusing to load")
    return schema


def _bad_version_string(schema):
    """``(key, value)`` of the first ``*_version`` field (``_skops_version``, an estimator's
    ``_sklearn_version``) that is not a plain version string (:data:`~evqual.models._packed.VERSION_RE`), or
    None.  A state's field is a node whose ``content`` is the JSON of the string."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if isinstance(key, str) and key.endswith("_version"):
                text = value
                if isinstance(value, dict) and isinstance(value.get("content"), str):
                    try:
                        text = json.loads(value["content"])
                    except (ValueError, RecursionError):
                        text = value["content"]
                if not (isinstance(text, str) and VERSION_RE.fullmatch(text)):
                    return key, text
            if isinstance(value, (dict, list)):
                stack.append(value)
    return None


_EXIT = object()
_ALLOWED_KEYS = {loader: frozenset(_NODE_KEYS | keys) for loader, keys in _LOADER_KEYS.items()}
_SEED_KEYS = {"entropy", "spawn_key", "pool_size", "n_children_spawned"}
_DEFAULT_POOL_SIZE = 4  # numpy.random.SeedSequence's, the only one evqual's generators use


def _same_node(a, b, top: bool = True) -> bool:
    """Whether two schema nodes sharing an ``__id__`` describe the same object: the same types, loaders,
    keys and literals at every position, but for the ids of the nodes inside them and the names of their
    ``.npy`` members (skops writes a shared object's state again, building new temporary dicts and
    key-type lists with new ids and new array members; only the first copy is ever constructed, so what
    matters is that no position can load as an object of another shape or type)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        if a.keys() != b.keys():
            return False
        return all(k in ("__id__", "file") and not top or _same_node(v, b[k], False) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(_same_node(x, y, False) for x, y in zip(a, b))
    return a == b


def _member_names(node) -> set:
    """The ``.npy`` members named anywhere inside a schema node."""
    names, stack = set(), [node]
    while stack:
        n = stack.pop()
        if type(n) is dict:
            if n.get("__loader__") == "NdArrayNode" and type(n.get("file")) is str:
                names.add(n["file"])
            stack.extend(n.values())
        elif type(n) is list:
            stack.extend(n)
    return names


def _literal_value(node):
    """The Python value of a JsonNode (``KeyError``/``TypeError``/``ValueError`` when it is not one)."""
    if node.get("__loader__") != "JsonNode":
        raise ValueError("not a JSON literal")
    return json.loads(node["content"])


def _check_seed_seq(node, fail, link) -> None:
    """A generator's SeedSequence state: numpy's pool size, a few entropy words, a short spawn key."""
    content = node.get("content") if isinstance(node, dict) else None
    if node.get("__loader__") != "DictNode" or type(content) is not dict or set(content) != _SEED_KEYS:
        raise fail(link, f"a seed sequence must hold exactly {', '.join(sorted(_SEED_KEYS))}")
    try:
        pool = _literal_value(content["pool_size"])
        spawned = _literal_value(content["n_children_spawned"])
    except (KeyError, TypeError, ValueError, RecursionError):
        raise fail(link, "pool_size and n_children_spawned must be integers") from None
    if type(pool) is not int or pool != _DEFAULT_POOL_SIZE:
        raise fail(link, f"pool_size must be {_DEFAULT_POOL_SIZE} (numpy's)", "content", "pool_size")
    if type(spawned) is not int or not 0 <= spawned < 2**32:
        raise fail(link, "n_children_spawned must be an integer in [0, 2**32)", "content", "n_children_spawned")
    spawn_key = content["spawn_key"]
    if spawn_key.get("__loader__") not in ("TupleNode", "ListNode") or \
            len(spawn_key.get("content") or ()) > MAX_SEED_ENTROPY:
        raise fail(link, f"spawn_key must be a sequence of at most {MAX_SEED_ENTROPY} words", "content",
                   "spawn_key")
    entropy = content["entropy"]
    if entropy.get("__loader__") == "JsonNode":
        try:
            value = _literal_value(entropy)
        except (KeyError, TypeError, ValueError, RecursionError):
            value = None
        if value is not None and (type(value) is not int or value < 0 or value.bit_length() > 32 * MAX_SEED_ENTROPY):
            raise fail(link, f"entropy must be null or an integer of at most {32 * MAX_SEED_ENTROPY} bits",
                       "content", "entropy")
    elif entropy.get("__loader__") != "NdArrayNode":
        raise fail(link, "entropy must be an integer or an array", "content", "entropy")


def _audit_schema(zf: zipfile.ZipFile, model_path: Path, root=_ROOT_TYPE, trusted=TRUSTED_TYPES) -> set:
    """Walk ``schema.json`` (iteratively, depth-limited) without constructing anything.

    Returns the ``module.class`` names found; raises :class:`ModelLoadError`
    for anything outside :data:`TRUSTED_TYPES` or any field skops would read
    that does not have the shape evqual writes.  Each node's fields are the
    ones its skops loader reads, so every node skops would build is walked.
    """
    from skops.io._protocol import PROTOCOL

    def fail(link, problem, *keys):
        where = _path((link, *keys) if keys else link)
        return ModelLoadError(f"{model_path}: schema.json at {where}: {problem}; refusing to load")

    schema = _read_schema(zf, model_path)
    if type(schema) is not dict:
        raise ModelLoadError(f"{model_path}: schema.json must hold a JSON object")
    protocol = schema.get("protocol")
    if type(protocol) is not int or protocol not in SKOPS_PROTOCOLS or protocol > PROTOCOL:
        raise ModelLoadError(f"{model_path}: schema.json field 'protocol': unknown skops protocol "
                             f"{_oneline(repr(protocol), 40)} (this evqual reads "
                             f"{', '.join(map(str, SKOPS_PROTOCOLS))})")
    module, cls, loader = schema.get("__module__"), schema.get("__class__"), schema.get("__loader__")
    if (f"{module}.{cls}", loader) != root:
        raise ModelLoadError(f"{model_path}: schema.json at the root: the root must be an "
                             f"{'evqual.models.Detector' if root == _ROOT_TYPE else root[0]}; got {_oneline(f'{module}.{cls}', 120)!r}; refusing to load")
    members = {info.filename: info for info in zf.infolist()}
    headers: dict = {}  # .npy header bytes -> numpy's parse of them
    referenced: set = set()
    found: set = set()
    active: set = set()  # __id__ of the nodes on the current path (a repeat would make skops loop)
    by_id: dict = {}  # __id__ -> the first node with it
    checked: set = set()  # .npy members whose header was checked
    root_keys = _ALLOWED_KEYS["ObjectNode"] | _ROOT_KEYS
    stack = [(schema, None, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        state, link, depth = pop()
        if state is _EXIT:
            active.discard(link)
            continue
        if depth > MAX_SCHEMA_DEPTH:
            raise fail(link, f"nested deeper than {MAX_SCHEMA_DEPTH} objects")
        if type(state) is not dict:
            raise fail(link, f"expected a skops node (a JSON object); got {type(state).__name__}")
        module, cls, loader = state.get("__module__"), state.get("__class__"), state.get("__loader__")
        if type(module) is not str or type(cls) is not str or type(loader) is not str:
            raise fail(link, "a node needs string '__module__', '__class__' and '__loader__' fields")
        name = f"{module}.{cls}"
        if (name, loader) not in trusted:
            raise fail(link, f"type {_oneline(name, 120)!r} with loader {_oneline(loader, 40)!r} is not in "
                             f"evqual's allow-list")
        if not (_ALLOWED_KEYS[loader] if link is not None else root_keys).issuperset(state):
            extra = sorted(set(state) - (_ALLOWED_KEYS[loader] if link is not None else root_keys))
            raise fail(link, f"unexpected field {_oneline(extra[0], 60)!r} in a {loader}")
        node_id = state.get("__id__")
        if type(node_id) is not int:  # skops memoises nodes by it: a missing one would alias every other
            raise fail(link, "field '__id__' must be an integer", "__id__")
        if node_id in active:
            raise fail(link, "a node refers back to one of its ancestors (a cycle)")
        first = by_id.get(node_id)
        if first is not None:
            # skops builds a node once per __id__ and hands every later node with that id the same object:
            # a node may only repeat an identical earlier one (as skops writes a shared object), never
            # stand for another object
            if first is not state and not _same_node(first, state):
                raise fail(link, f"shares its __id__ {node_id} with a different node (skops would load it "
                                 f"as that node)")
            found.add(name)
            referenced.update(_member_names(state))  # written again, never read: not stray members
            continue
        by_id[node_id] = state
        active.add(node_id)
        push((_EXIT, node_id, depth))
        found.add(name)
        content = state.get("content")
        d = depth + 1
        if loader == "JsonNode":
            # a scalar (null, true, false, a number or a string), never an array or object: skops parses it
            # with json.loads when constructing (an invalid literal fails there, caught by the caller)
            if type(content) is not str or content.lstrip(" \t\n\r")[:1] in ("", "[", "{"):
                raise fail(link, "a JSON literal must be a scalar", "content")
            if state.get("is_json", True) is not True:
                raise fail(link, "must be true", "is_json")
        elif loader == "DictNode":
            key_types = state.get("key_types")
            if type(content) is not dict:
                raise fail(link, "a DictNode needs an object here", "content")
            if type(key_types) is not dict or key_types.get("__loader__") != "ListNode" or \
                    type(key_types.get("content")) is not list or len(key_types["content"]) != len(content):
                raise fail(link, "must list one key type per key", "key_types")
            push((key_types, (link, "key_types"), d))
            for k, v in content.items():
                push((v, (link, "content", k), d))
        elif loader in ("ListNode", "TupleNode"):
            if type(content) is not list:
                raise fail(link, f"a {loader} needs a list here", "content")
            for i, v in enumerate(content):
                push((v, (link, "content", i), d))
        elif loader == "NdArrayNode":
            kind = state.get("type")
            if kind == "numpy":
                file = state.get("file")
                if "content" in state or "shape" in state:
                    raise fail(link, "a numpy array is stored in a .npy member, not inline")
                if type(file) is not str or file not in members or not file.endswith(".npy"):
                    raise fail(link, f"zip member {_oneline(repr(file), 80)} is missing", "file")
                referenced.add(file)
                checked.add(file)
                problem = _check_npy(zf, members[file], headers)
                if problem:
                    raise fail(link, f"{_oneline(file, 80)}: {problem}", "file")
            elif kind == "json":
                if "file" in state:
                    raise fail(link, "an object array is stored inline, not in a member")
                if type(content) is not list:
                    raise fail(link, "an object array needs a list here", "content")
                for i, v in enumerate(content):
                    push((v, (link, "content", i), d))
                push((state.get("shape"), (link, "shape"), d))
            else:
                raise fail(link, f"unknown array storage {_oneline(repr(kind), 40)}", "type")
        elif loader in ("ObjectNode", "RandomStateNode"):
            if content is not None or loader == "RandomStateNode":
                push((content, (link, "content"), d))
        elif loader == "RandomGeneratorNode":
            if type(content) is not dict or set(content) != {"bit_generator", "seed_seq"}:
                raise fail(link, "must hold exactly 'bit_generator' and 'seed_seq'", "content")
            try:
                bit_generator = json.loads(content["bit_generator"]["content"]["bit_generator"]["content"])
            except (KeyError, TypeError, ValueError, RecursionError):
                bit_generator = None
            if bit_generator not in TRUSTED_BIT_GENERATORS:
                raise fail(link, f"the bit generator must be one of {', '.join(TRUSTED_BIT_GENERATORS)}",
                           "content", "bit_generator")
            seed = content["seed_seq"]
            if type(seed) is not dict:
                raise fail(link, "must be a skops node", "content", "seed_seq")
            _check_seed_seq(seed, fail, (link, "content", "seed_seq"))
            entropy = (seed.get("content") or {}).get("entropy") or {}
            if entropy.get("__loader__") == "NdArrayNode" and \
                    members.get(entropy.get("file")) is not None and \
                    members[entropy["file"]].file_size > 256 + 8 * MAX_SEED_ENTROPY:
                raise fail(link, f"the seed entropy holds more than {MAX_SEED_ENTROPY} words", "content",
                           "seed_seq")
            push((content["bit_generator"], (link, "content", "bit_generator"), d))
            push((content["seed_seq"], (link, "content", "seed_seq"), d))
        elif loader in ("LossNode", "TreeNode"):
            reduce = state.get("__reduce__")
            if type(reduce) is not dict or set(reduce) != {"args"}:
                raise fail(link, "must hold exactly 'args'", "__reduce__")
            push((reduce["args"], (link, "__reduce__", "args"), d))
            push((content, (link, "content"), d))
        # TypeNode: no children
    # the members of repeated copies of shared nodes (not walked: the walk may meet either copy first, and skops
    # builds whichever it meets first), checked all the same
    for file in sorted(referenced - checked):
        if file not in members or not file.endswith(".npy"):
            raise ModelLoadError(f"{model_path}: schema.json names the zip member {_oneline(repr(file), 80)}, "
                                 f"which is missing; refusing to load")
        problem = _check_npy(zf, members[file], headers)
        if problem:
            raise ModelLoadError(f"{model_path}: zip member {_oneline(file, 80)}: {problem}; refusing to load")
    unreferenced = sorted(set(members) - referenced - {"schema.json"})
    if unreferenced:
        raise ModelLoadError(f"{model_path}: zip member {_oneline(unreferenced[0], 80)!r} is not referenced by "
                             f"schema.json; refusing to load")
    return found




def _check_npy(zf: zipfile.ZipFile, info: zipfile.ZipInfo, headers: dict | None = None) -> str | None:
    """What is wrong with a ``.npy`` member's header (``None`` when nothing): version, object dtype,
    a size that does not match its shape.

    ``headers`` caches numpy's parse of a header by its exact bytes (a model's
    trees share a few dozen headers among thousands of members): the same
    bytes give the same parse, so nothing is checked less.
    """
    from numpy.lib import format as npformat

    try:
        with zf.open(info) as fh:
            prefix = fh.read(8)  # magic string and version
            if len(prefix) < 8 or prefix[:6] != b"\x93NUMPY":
                return "not a valid .npy array (bad magic string)"
            version = (prefix[6], prefix[7])
            if version not in ((1, 0), (2, 0)):
                return f"unsupported .npy version {version}"
            width = 2 if version == (1, 0) else 4
            prefix += fh.read(width)  # the header's length
            if len(prefix) < 8 + width:
                return "not a valid .npy array (a truncated header)"
            raw = prefix + fh.read(int.from_bytes(prefix[8:], "little"))
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, MemoryError) as exc:
        return f"not a valid .npy array ({_oneline(exc, 120)})"
    parsed = headers.get(raw) if headers is not None else None
    if parsed is None:
        try:
            fh = io.BytesIO(raw)
            npformat.read_magic(fh)
            read = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
            shape, _, dtype = read(fh)
            if fh.tell() != len(raw):
                return "not a valid .npy array (a truncated header)"
        except (ValueError, TypeError, SyntaxError, OSError, EOFError, RecursionError, MemoryError) as exc:
            return f"not a valid .npy array ({_oneline(exc, 120)})"
        parsed = (shape, dtype)
        if headers is not None:
            headers[raw] = parsed
    shape, dtype = parsed
    if dtype.hasobject:
        return "object arrays are not allowed in a .npy member"
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        return "invalid shape"
    if math.prod(shape) * dtype.itemsize != info.file_size - len(raw):
        return f"its shape {tuple(shape)} does not match its size"
    return None




# ---------------------------------------------------------------------------------------------- after construction
_LEAVES = frozenset({str, int, bool, bytes, type(None), np.int64, np.bool_})


def audit_objects(root, model_path, *, templates=None) -> None:
    """Check every object a loaded model holds before anything predicts with it.

    scikit-learn walks tree node arrays, reads leaf values and indexes
    vocabularies in compiled code without bounds checks; skops checks types,
    not these contents.  Walking the whole object graph, this refuses:

    * a decision tree (``sklearn.tree._tree.Tree``) whose node count, child
      indices (one tree: every node but the root the child of exactly one
      node, children after their parent), declared depth (equal to the real
      one, at most :data:`MAX_TREE_DEPTH`), split features, split thresholds
      (finite), ``n_outputs`` (1), ``n_classes`` (the owner's classes, 1 in a
      regressor) or ``value`` shape (``(node_count, n_outputs, max n_classes)``)
      would let prediction read outside its arrays or loop; a tree outside
      the estimator that owns it;
    * a gradient-boosting model whose stage array does not hold one
      regression tree per stage and class;
    * a histogram-boosting predictor with the same faults, or a categorical
      split (evqual's features are numerical);
    * a vectoriser whose vocabulary is not a permutation of its columns or
      whose IDF vector has another length; a ``columns_`` index that is
      negative, repeated or past the features it indexes; a linear model,
      scaler, isotonic or dummy model whose arrays disagree in shape;
    * a floating-point number anywhere in the model that is not finite
      (a NaN baseline would make every risk NaN);
    * with ``templates`` (``{id(estimator): fresh estimator}``), an estimator
      whose parameters differ from the fresh one's, the way its factory builds
      it (a swapped token pattern or rule).

    Raises
    ------
    ModelLoadError
        Naming the file and the attribute path.
    """
    from . import _lean

    # scikit-learn's classes where scikit-learn is imported (an object of one exists only then), and the lean
    # load's stand-ins for them (which import none of it)
    BaseForest = _sk_class("sklearn.ensemble._forest", "BaseForest")
    BaseGradientBoosting = _sk_class("sklearn.ensemble._gb", "BaseGradientBoosting")
    BaseHistGradientBoosting = (_sk_class("sklearn.ensemble._hist_gradient_boosting.gradient_boosting",
                                          "BaseHistGradientBoosting"), _lean.HistGradientBoostingClassifier)
    TreePredictor = (_sk_class("sklearn.ensemble._hist_gradient_boosting.predictor", "TreePredictor"),
                     _lean.TreePredictor)
    TfidfVectorizer = (_sk_class("sklearn.feature_extraction.text", "TfidfVectorizer"),
                       _lean.CompactTfidfVectorizer)
    BaseDecisionTree = _sk_class("sklearn.tree._classes", "BaseDecisionTree")
    Tree = _sk_class("sklearn.tree._tree", "Tree")

    def fail(where, problem):
        return ModelLoadError(f"{model_path}: {where}: {problem}; refusing to load")

    seen_trees, checked, finite = {}, set(), set()  # finite: ids of arrays already checked to be finite
    stack, visited = [(root, "model")], set()
    while stack:
        obj, where = stack.pop()
        if id(obj) in visited:
            continue
        visited.add(id(obj))
        if isinstance(obj, (Tree, TreePredictor)):
            seen_trees[id(obj)] = where
            if isinstance(obj, Tree):
                continue  # checked with the estimator that owns it
        if isinstance(obj, float):
            if not math.isfinite(obj):
                raise fail(where, f"is {obj!r}: every number in a model must be finite")
            continue
        if isinstance(obj, np.ndarray):
            if id(obj) not in finite:
                _check_finite_array(obj, where, fail)
            if obj.dtype == object:
                stack.extend((v, f"{where}[{i}]") for i, v in enumerate(obj.ravel()) if type(v) not in _LEAVES)
            continue
        if isinstance(obj, np.generic):
            if obj.dtype.kind in "fc" and not np.isfinite(obj):
                raise fail(where, f"is {obj!r}: every number in a model must be finite")
            continue
        if isinstance(obj, BaseDecisionTree) and "tree_" in vars(obj):  # only fitted estimators hold trees
            tree = vars(obj).get("tree_")
            if type(tree) is not Tree:
                raise fail(f"{where}.tree_", "must be a sklearn Tree")
            _check_tree(tree, _n_features(obj, where, fail), _tree_classes(obj, where, fail),
                        f"{where}.tree_", fail)
            checked.add(id(tree))
        if isinstance(obj, BaseForest) and "estimators_" in vars(obj):
            n = _n_features(obj, where, fail)
            classes = vars(obj).get("classes_")
            for i, est in enumerate(vars(obj).get("estimators_", ())):
                w = f"{where}.estimators_[{i}]"
                if not isinstance(est, BaseDecisionTree) or _n_features(est, w, fail) != n:
                    raise fail(w, f"must be a decision tree over {n} features")
                if classes is not None and not _same_array(vars(est).get("classes_"), classes):
                    raise fail(w, "must have its forest's classes")
        if isinstance(obj, BaseGradientBoosting) and "estimators_" in vars(obj):
            _check_gb(obj, where, fail)
        if isinstance(obj, BaseHistGradientBoosting) and "_predictors" in vars(obj):
            _check_hgb(obj, _n_features(obj, where, fail), where, fail, checked, finite)
        if isinstance(obj, TfidfVectorizer) and "vocabulary_" in vars(obj):
            _check_vocabulary(obj, where, fail)
        if hasattr(obj, "__dict__") and (type(obj).__module__.split(".")[0] in ("evqual", "sklearn")):
            _check_shapes(obj, where, fail)
            if templates is not None and id(obj) in templates:
                _check_params(obj, templates[id(obj)], where, fail)
        # children; plain scalars hold nothing and are not walked (a 50,000-term vocabulary is one dict)
        if isinstance(obj, dict):
            stack.extend((v, f"{where}[{k!r}]") for k, v in obj.items() if type(v) not in _LEAVES)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(obj) if type(v) not in _LEAVES)
        elif hasattr(obj, "__dict__") and type(obj).__module__.split(".")[0] in ("evqual", "sklearn"):
            stack.extend((v, f"{where}.{k}") for k, v in vars(obj).items() if type(v) not in _LEAVES)
    loose = [w for i, w in seen_trees.items() if i not in checked]
    if loose:
        raise fail(loose[0], "a tree outside the estimator that owns it")


class _Never:
    """A class no object is an instance of (a scikit-learn class whose module is not imported)."""


def _sk_class(module: str, name: str) -> type:
    """``module.name`` when ``module`` is imported, else :class:`_Never`: an object of a scikit-learn class
    exists only once its module is, so an ``isinstance`` test needs no import (a lean load imports none)."""
    mod = sys.modules.get(module)
    return getattr(mod, name) if mod is not None else _Never


def _check_finite_array(arr: np.ndarray, where: str, fail) -> None:
    if arr.dtype.names:
        for name in arr.dtype.names:
            if arr.dtype[name].kind in "fc" and not np.isfinite(arr[name]).all():
                raise fail(f"{where}[{name!r}]", "holds a value that is not finite")
    elif arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        raise fail(where, "holds a value that is not finite")


def _distinct(arr: np.ndarray) -> bool:
    """Whether the 1-D ``arr`` holds no value twice (sorted neighbours differ; ``np.unique`` would import
    ``numpy.ma``, a fiftieth of a second of a scoring process's start-up)."""
    s = np.sort(arr, kind="stable")
    return bool((s[1:] != s[:-1]).all())


def _same_array(a, b) -> bool:
    try:
        return np.array_equal(np.asarray(a), np.asarray(b))
    except (TypeError, ValueError):
        return False


def _n_features(est, where, fail) -> int:
    n = vars(est).get("n_features_in_")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n < 2**31:
        raise fail(where, "n_features_in_ must be a positive integer")
    return int(n)


def _tree_classes(est, where, fail) -> int:
    """The class count a tree's leaves hold: the owner's ``n_classes_`` (classifier), 1 (regressor)."""
    from sklearn.base import is_classifier

    if not is_classifier(est):
        return 1
    classes = vars(est).get("classes_")
    n = vars(est).get("n_classes_")
    if not isinstance(classes, np.ndarray) or classes.ndim != 1 or len(classes) < 1 or \
            isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) != len(classes):
        raise fail(where, "classes_ and n_classes_ must agree")
    if vars(est).get("n_outputs_") != 1:
        raise fail(where, "n_outputs_ must be 1")
    return int(n)


def _check_tree(tree, n_features: int, n_classes: int, where: str, fail) -> None:
    """A ``sklearn.tree._tree.Tree`` (see :func:`audit_objects`)."""
    count, capacity = tree.node_count, tree.capacity
    if count < 1 or count != capacity:  # node_count past the allocated nodes would read out of bounds
        raise fail(where, f"node_count {count} does not match its {capacity} stored nodes")
    if tree.n_features != n_features:
        raise fail(where, f"is over {tree.n_features} features, its estimator over {n_features}")
    if tree.n_outputs != 1:
        raise fail(where, f"has {tree.n_outputs} outputs (evqual's trees have 1)")
    declared = np.asarray(tree.n_classes)
    if declared.shape != (1,) or int(declared[0]) != n_classes or tree.max_n_classes != n_classes:
        raise fail(where, f"declares n_classes {declared.tolist()}; its estimator has {n_classes}")
    value = tree.value
    if value.shape != (count, 1, n_classes):
        raise fail(where, f"value has shape {value.shape}, not ({count}, 1, {n_classes})")
    _check_tree_arrays(tree.children_left, tree.children_right, tree.feature, tree.max_depth, n_features, where,
                       fail, leaf_marker=-1)
    inner = tree.children_left != -1
    if not np.isfinite(tree.threshold[inner]).all():
        raise fail(where, "holds a split threshold that is not finite")
    if not np.isfinite(value).all():
        raise fail(where, "holds non-finite leaf values")


def _check_tree_arrays(left, right, feature, declared_depth, n_features: int, where: str, fail, *,
                       leaf_marker=None, leaf=None, depth=None) -> None:
    """Children form one tree rooted at node 0 (children after their parent, every other node the child of
    exactly one node), splits on features in range, and the declared depth(s) equal the real ones."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    n = len(left)
    if leaf is None:
        leaf = left == leaf_marker
        if np.any(leaf != (right == leaf_marker)):
            raise fail(where, "a node has exactly one child")
    inner = ~leaf
    ids = np.arange(n)
    bad = inner & ((left <= ids) | (left >= n) | (right <= ids) | (right >= n))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise fail(where, f"node {i} has children ({int(left[i])}, {int(right[i])}) outside ({i}, {n})")
    children = np.concatenate([left[inner], right[inner]])
    if len(children) != n - 1 or not _distinct(children):
        raise fail(where, "its nodes do not form one tree (a node no split reaches, or reached twice)")
    feature = np.asarray(feature, dtype=np.int64)
    bad = inner & ((feature < 0) | (feature >= n_features))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise fail(where, f"node {i} splits on feature {int(feature[i])}, not in [0, {n_features})")
    real = np.zeros(n, dtype=np.int64)  # children come after their parent: one pass in node order per level
    frontier = np.array([0])
    level = 0
    while len(frontier):
        real[frontier] = level
        inner_f = frontier[inner[frontier]]
        frontier = np.concatenate([left[inner_f], right[inner_f]])
        level += 1
        if level > MAX_TREE_DEPTH + 1:
            raise fail(where, f"is deeper than {MAX_TREE_DEPTH} levels")
    max_depth = int(real.max())
    if depth is not None and not np.array_equal(np.asarray(depth, dtype=np.int64), real):
        raise fail(where, "node depths do not follow the tree")
    if declared_depth is not None and int(declared_depth) != max_depth:
        raise fail(where, f"declares depth {int(declared_depth)}, its nodes reach {max_depth}")


def _check_gb(est, where, fail) -> None:
    """GradientBoostingClassifier: ``estimators_`` holds one regression tree per stage and class, each with
    one value per node (scikit-learn's compiled ``predict_stages`` reads them through raw pointers)."""
    from sklearn.tree import DecisionTreeRegressor

    n = _n_features(est, where, fail)
    ests = vars(est).get("estimators_")
    classes = vars(est).get("classes_")
    k = vars(est).get("n_trees_per_iteration_")
    n_classes = len(classes) if isinstance(classes, np.ndarray) and classes.ndim == 1 else 0
    if n_classes < 2 or k != (1 if n_classes == 2 else n_classes) or vars(est).get("n_classes_") != n_classes:
        raise fail(where, "classes_, n_classes_ and n_trees_per_iteration_ must agree")
    if not isinstance(ests, np.ndarray) or ests.dtype != object or ests.ndim != 2 or ests.shape[1] != k or \
            ests.shape[0] < 1:
        raise fail(f"{where}.estimators_", "must be an array of one tree per stage and class")
    for i, tree_est in enumerate(ests.ravel()):
        if type(tree_est) is not DecisionTreeRegressor or _n_features(tree_est, f"{where}.estimators_[{i}]",
                                                                      fail) != n:
            raise fail(f"{where}.estimators_[{i}]", f"must be a regression tree over {n} features")
        if vars(tree_est).get("n_outputs_") != 1:
            raise fail(f"{where}.estimators_[{i}]", "n_outputs_ must be 1")


def _check_hgb(est, n_features: int, where: str, fail, checked: set, finite: set | None = None) -> None:
    """The ``TreePredictor`` node arrays of a HistGradientBoosting estimator, and its baseline; ``finite``
    receives the ids of the node arrays found finite (when all pass at once)."""
    from ._lean import HistGradientBoostingClassifier as LeanHGB, TreePredictor as LeanTree

    TreePredictor = LeanTree if isinstance(est, LeanHGB) else _sk_class(
        "sklearn.ensemble._hist_gradient_boosting.predictor", "TreePredictor")
    predictors = vars(est).get("_predictors")
    k = vars(est).get("n_trees_per_iteration_")
    if not isinstance(predictors, list) or isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise fail(f"{where}._predictors", "must be a list of trees per iteration")
    classes = vars(est).get("classes_")
    if classes is not None and (not isinstance(classes, np.ndarray) or classes.ndim != 1 or
                                k != (1 if len(classes) <= 2 else len(classes))):
        raise fail(where, "classes_ and n_trees_per_iteration_ must agree")
    baseline = vars(est).get("_baseline_prediction")
    if not isinstance(baseline, np.ndarray) or baseline.size != k:
        raise fail(f"{where}._baseline_prediction", f"must hold {k} values")
    if vars(est).get("is_categorical_") is not None:
        raise fail(f"{where}.is_categorical_", "categorical features are not allowed (evqual's are numerical)")
    for i, stage in enumerate(predictors):
        if not isinstance(stage, list) or len(stage) != k:
            raise fail(f"{where}._predictors[{i}]", f"must hold {k} trees")
        for j, pred in enumerate(stage):
            w = f"{where}._predictors[{i}][{j}]"
            if type(pred) is not TreePredictor:
                raise fail(w, "must be a TreePredictor")
    trees = [pred for stage in predictors for pred in stage]
    if _predictors_pass(trees, n_features):
        if finite is not None:
            finite.update(id(vars(pred)["nodes"]) for pred in trees)
    else:  # a fault somewhere: each tree checked alone names it
        for i, stage in enumerate(predictors):
            for j, pred in enumerate(stage):
                _check_predictor(pred, n_features, f"{where}._predictors[{i}][{j}]", fail)
    checked.update(id(pred) for pred in trees)


def _predictors_pass(trees, n_features: int) -> bool:
    """Whether every tree passes :func:`_check_predictor`, checked on all their nodes at once.

    It implies each tree's checks: children after their parent and inside its
    tree, n - 1 distinct children (so every node but the root is the child of
    exactly one node), split features in range, no categorical split, the
    declared depths those of the tree (the root at 0, each child one below its
    parent) and at most :data:`MAX_TREE_DEPTH`; and every number of the node
    records finite (which the graph walk then need not check array by
    array).  ``False`` says only that one
    tree may fail: :func:`_check_predictor` then finds and names it.  The
    shipped model's 990 trees took 0.15 s one by one.
    """
    from ._packed import HGB_NODE_DTYPE

    if not trees:
        return True
    arrays, sizes = [], []
    for pred in trees:
        nodes = vars(pred).get("nodes")
        if not isinstance(nodes, np.ndarray) or nodes.dtype != HGB_NODE_DTYPE or nodes.ndim != 1 or len(nodes) < 1:
            return False
        for name in ("binned_left_cat_bitsets", "raw_left_cat_bitsets"):
            b = vars(pred).get(name)
            if not isinstance(b, np.ndarray) or b.dtype != np.uint32 or b.ndim != 2 or b.shape[1] != 8:
                return False
        arrays.append(nodes)
        sizes.append(len(nodes))
    nodes = np.concatenate(arrays)
    for name in nodes.dtype.names:  # every number finite (the walk then skips these arrays)
        if nodes.dtype[name].kind in "fc" and not np.isfinite(nodes[name]).all():
            return False
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)  # each node's tree's first node
    n_of = np.repeat(sizes, sizes)  # each node's tree's size
    local = np.arange(len(nodes), dtype=np.int64) - starts
    leaf = nodes["is_leaf"] != 0
    inner = ~leaf
    left = nodes["left"].astype(np.int64)
    right = nodes["right"].astype(np.int64)
    feature = nodes["feature_idx"].astype(np.int64)
    depth = nodes["depth"].astype(np.int64)
    if np.any(nodes["is_categorical"][inner] != 0):
        return False
    if np.any(inner & ((left <= local) | (left >= n_of) | (right <= local) | (right >= n_of))):
        return False
    if np.any(inner & ((feature < 0) | (feature >= n_features))):
        return False
    children = np.concatenate([(left + starts)[inner], (right + starts)[inner]])
    if len(children) != len(nodes) - len(trees) or not _distinct(children):
        return False
    if np.any(depth[local == 0] != 0) or depth.max() > MAX_TREE_DEPTH:
        return False
    parent_depth = depth[inner] + 1
    return bool(np.all(depth[(left + starts)[inner]] == parent_depth)
                and np.all(depth[(right + starts)[inner]] == parent_depth))


def _check_predictor(pred, n_features: int, where: str, fail) -> None:
    from ._packed import HGB_NODE_DTYPE as PREDICTOR_RECORD_DTYPE

    nodes = vars(pred).get("nodes")
    if not isinstance(nodes, np.ndarray) or nodes.dtype != PREDICTOR_RECORD_DTYPE or nodes.ndim != 1 or \
            len(nodes) < 1:
        raise fail(f"{where}.nodes", "must be a non-empty array of predictor records")
    for name in ("binned_left_cat_bitsets", "raw_left_cat_bitsets"):
        b = vars(pred).get(name)
        if not isinstance(b, np.ndarray) or b.dtype != np.uint32 or b.ndim != 2 or b.shape[1] != 8:
            raise fail(f"{where}.{name}", "must be a (n, 8) uint32 array")
    leaf = nodes["is_leaf"] != 0
    if np.any(nodes["is_categorical"][~leaf] != 0):
        raise fail(f"{where}.nodes", "a categorical split (evqual's features are numerical)")
    _check_tree_arrays(nodes["left"], nodes["right"], nodes["feature_idx"], None, n_features, f"{where}.nodes",
                       fail, leaf=leaf, depth=nodes["depth"])


def _check_vocabulary(vec, where, fail) -> None:
    """A fitted vectoriser: ``vocabulary_`` maps terms to the columns 0..n-1 once each, ``idf_`` has n values."""
    vocab = vars(vec).get("vocabulary_")
    if not isinstance(vocab, dict) or not vocab:
        raise fail(f"{where}.vocabulary_", "must be a non-empty dict of terms to columns")
    n = len(vocab)
    # the types are collected in C (map, set), and a permutation of 0..n-1 is n columns in range, each once
    ok = set(map(type, vocab)) == {str} and set(map(type, vocab.values())) == {int} and \
        0 <= min(vocab.values()) and max(vocab.values()) < n
    if ok:
        ok = bool((np.bincount(np.fromiter(vocab.values(), dtype=np.int64, count=n), minlength=n) == 1).all())
    if not ok:
        raise fail(f"{where}.vocabulary_", f"must map its {n} terms to the columns 0..{n - 1}, once each")
    tfidf = vars(vec).get("_tfidf")
    idf = getattr(tfidf, "idf_", None) if tfidf is not None else None
    if vec.use_idf and (not isinstance(idf, np.ndarray) or idf.shape != (n,)):
        raise fail(f"{where}.idf_", f"must hold one value per vocabulary term ({n})")


def _check_shapes(obj, where, fail) -> None:
    """Shape agreement of the arrays of the estimators evqual saves (numpy checks the rest)."""
    from ._lean import LogisticRegression as LeanLR

    DummyClassifier = _sk_class("sklearn.dummy", "DummyClassifier")
    IsotonicRegression = _sk_class("sklearn.isotonic", "IsotonicRegression")
    LogisticRegression = (_sk_class("sklearn.linear_model._logistic", "LogisticRegression"), LeanLR)
    StandardScaler = _sk_class("sklearn.preprocessing._data", "StandardScaler")

    attrs = vars(obj)
    if isinstance(obj, LogisticRegression) and "coef_" in attrs:
        n = _n_features(obj, where, fail)
        coef, intercept, classes = attrs.get("coef_"), attrs.get("intercept_"), attrs.get("classes_")
        k = 1 if isinstance(classes, np.ndarray) and len(classes) == 2 else len(classes) \
            if isinstance(classes, np.ndarray) else -1
        if not isinstance(coef, np.ndarray) or coef.shape != (k, n) or not isinstance(intercept, np.ndarray) or \
                intercept.shape != (k,):
            raise fail(where, "coef_, intercept_ and classes_ must agree with n_features_in_")
    elif isinstance(obj, StandardScaler) and "scale_" in attrs:
        n = _n_features(obj, where, fail)
        for name in ("mean_", "scale_", "var_"):
            a = attrs.get(name)
            if a is not None and (not isinstance(a, np.ndarray) or a.shape != (n,)):
                raise fail(f"{where}.{name}", f"must hold {n} values")
    elif isinstance(obj, IsotonicRegression) and "X_thresholds_" in attrs:
        x, y = attrs.get("X_thresholds_"), attrs.get("y_thresholds_")
        if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray) or x.ndim != 1 or x.shape != y.shape \
                or len(x) < 1 or np.any(np.diff(x) < 0):
            raise fail(where, "X_thresholds_ and y_thresholds_ must be two arrays of one length, X non-decreasing")
    elif isinstance(obj, DummyClassifier) and "class_prior_" in attrs:
        prior, classes = attrs.get("class_prior_"), attrs.get("classes_")
        if not isinstance(prior, np.ndarray) or not isinstance(classes, np.ndarray) or prior.shape != classes.shape:
            raise fail(where, "class_prior_ must hold one value per class")
    # column indices: evqual's selectors index frames by name, SentenceMaxClassifier by position
    cols = attrs.get("columns_")
    if cols is not None:
        names = attrs.get("sentence_names_")
        if isinstance(names, (list, tuple)) and not isinstance(cols, str):
            arr = np.asarray(cols)
            if arr.ndim != 1 or arr.dtype.kind not in "iu" or (len(arr) and (arr.min() < 0 or arr.max() >= len(names))) \
                    or not _distinct(arr):
                raise fail(f"{where}.columns_", f"must be distinct positions in [0, {len(names)})")
        elif not isinstance(cols, (list, tuple)) or not all(type(c) is str for c in cols) or \
                len(set(cols)) != len(cols):
            raise fail(f"{where}.columns_", "must be a list of distinct feature names")


def _check_params(obj, fresh, where, fail) -> None:
    """``obj``'s parameters (not sub-estimators) must equal those of ``fresh``, the factory's estimator."""
    try:
        got = obj.get_params(deep=False)
        want = fresh.get_params(deep=False)
    except Exception as exc:  # noqa: BLE001 - a malformed estimator
        raise fail(where, f"has malformed parameters ({type(exc).__name__}: {_oneline(exc, 120)})") from None
    if set(got) != set(want):
        raise fail(where, "has other parameters than its class")
    for key, value in want.items():
        if hasattr(value, "get_params") and not isinstance(value, type):
            continue  # a sub-estimator: compared on its own
        if isinstance(value, (list, tuple)) and any(hasattr(v, "get_params") or
                                                    isinstance(v, tuple) and any(hasattr(x, "get_params") for x in v)
                                                    for v in value):
            continue  # steps or named estimators: compared on their own
        if not _equal(got[key], value):
            raise fail(f"{where}.{key}", f"is {_oneline(repr(got[key]), 80)}; evqual builds "
                                         f"{_oneline(repr(value), 80)}")


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return _same_array(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b) and type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                                       and not isinstance(a, bool) and not isinstance(b, bool)
                                                       and a == b)
    except Exception:  # noqa: BLE001
        return False


def templates_for(model, fresh) -> dict:
    """``{id(estimator): template}`` pairing each estimator inside ``model`` with the one at the same place in
    ``fresh`` (what its factory builds), for :func:`audit_objects`; a class that differs is refused there."""
    pairs = {id(model): fresh}
    stack = [(model, fresh)]
    while stack:
        got, want = stack.pop()
        try:
            g, w = got.get_params(deep=False), want.get_params(deep=False)
        except Exception:  # noqa: BLE001 - refused by the checks
            continue
        for key, value in w.items():
            if key not in g:
                continue
            if hasattr(value, "get_params") and not isinstance(value, type) and type(g[key]) is type(value):
                pairs[id(g[key])] = value
                stack.append((g[key], value))
            elif isinstance(value, (list, tuple)) and isinstance(g[key], (list, tuple)) and len(value) == len(g[key]):
                for a, b in zip(g[key], value):
                    if isinstance(b, tuple) and isinstance(a, tuple) and len(a) == len(b):
                        a, b = a[-1], b[-1]
                    if hasattr(b, "get_params") and type(a) is type(b):
                        pairs[id(a)] = b
                        stack.append((a, b))
    return pairs


# ---------------------------------------------------------------------------------------------- loading
def _construct(zf: zipfile.ZipFile, data: bytes, model_path: Path, root, trusted, lean: bool = False):
    """Steps 3 and 4: the schema audit and skops for a skops file; :func:`load_packed` (which checks as it
    builds) for an evqual packed file (``lean``: with :mod:`evqual.models._lean`'s stand-ins)."""
    from ._packed import NotLean

    try:
        if is_packed(zf.namelist()):
            return load_packed(zf, model_path, trusted=trusted, root=root, max_graph_bytes=MAX_SCHEMA_BYTES,
                               max_nodes=MAX_SCHEMA_NODES, max_depth=MAX_SCHEMA_DEPTH, lean=lean)
        if lean:
            raise NotLean("a skops file")
        import skops.io as sio

        found = _audit_schema(zf, model_path, root, trusted)
        return sio.load(io.BytesIO(data), trusted=sorted(found))
    except (ModelLoadError, MemoryError, NotLean):
        raise
    except Exception as exc:  # noqa: BLE001 - anything skops or a constructor raises on a malformed file
        raise ModelLoadError(f"{model_path}: cannot be loaded ({type(exc).__name__}: {_oneline(exc)}); "
                             f"refusing to load") from None


def load_audited(data: bytes, model_path, *, root=None, trusted=None, prepare=None, lean: bool = False):
    """Audit the zip and its schema, construct with skops trusting exactly the types found, audit the objects.

    Parameters
    ----------
    data : bytes
        The file's bytes (read with :func:`read_regular`).
    model_path : Path
        Named in errors.
    root : (str, str), optional
        The ``(module.class, loader)`` the root must be (default: a Detector).
    trusted : frozenset, optional
        The allow-list (default :data:`TRUSTED_TYPES`).
    prepare : callable, optional
        ``prepare(obj)`` checks the built root's own attributes (raising
        :class:`ModelLoadError`) and returns the :func:`templates_for` pairs of
        its estimators, or ``None``; it runs before :func:`audit_objects`.
    lean : bool, default=False
        Build scikit-learn's objects as :mod:`evqual.models._lean`'s stand-ins
        (a packed file only; every check is the same).

    Raises
    ------
    ModelLoadError
    evqual.models._packed.NotLean
        With ``lean``, when the file holds a type without a stand-in.
    """
    model_path = Path(model_path)
    try:
        zf = _open_zip(data, model_path)
        try:
            obj = _construct(zf, data, model_path, root or _ROOT_TYPE, trusted or TRUSTED_TYPES, lean)
        finally:
            zf.close()
        try:
            templates = prepare(obj) if prepare is not None else None
            audit_objects(obj, model_path, templates=templates)
        except ModelLoadError:
            raise
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - a malformed object met by a check
            raise ModelLoadError(f"{model_path}: malformed model ({type(exc).__name__}: {_oneline(exc)}); "
                                 f"refusing to load") from None
        return obj
    except MemoryError:
        raise ModelLoadError(f"{model_path}: ran out of memory while loading; refusing to load") from None
