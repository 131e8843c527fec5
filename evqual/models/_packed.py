"""evqual's packed model format: one object graph as JSON and every array in one blob.

skops stores each array as its own ``.npy`` zip member with its own header;
the shipped detector's ~1,000 histogram-boosting trees make 3,600 of them, and
loading it took 1.3 s (0.4 s importing skops, 0.45 s parsing ``.npy``
headers, 0.4 s auditing them).  The packed format holds the same objects in a
zip of exactly two members:

* ``graph.json``: ``{"format": "evqual-packed", "version": 1, "arrays": [...],
  "root": ...}``.  Lists are JSON arrays; every other value that is not a JSON
  scalar is a one-key object naming what it is: ``{"$dict": {...}}``,
  ``{"$tuple": [...]}``, ``{"$float": "nan"}``, ``{"$strings": [...]}`` (a 1-d
  object array of strings, as scikit-learn keeps feature names), ``{"$objects":
  [shape, values]}`` (any other object array, such as gradient boosting's
  array of trees), ``{"$array": i}`` (row ``i``
  of ``arrays``: ``[dtype, shape, offset, order]``), ``{"$scalar": [dtype,
  value]}``, ``{"$type": name}``, ``{"$object": [name, state]}`` (an instance
  built with ``cls.__new__`` and ``__setstate__``, as skops and pickle build
  it), ``{"$reduce": [name, args, state]}`` (``cls(*args)``, for the two
  compiled scikit-learn types that need arguments), ``{"$generator": state}``,
  ``{"$random_state": [...]}`` and ``{"$ref": n}`` (the ``n``-th object built,
  for an object held twice).
* ``arrays.bin``: the arrays' bytes, each at a 16-byte aligned offset.

Nothing in the file is executed and nothing is unpickled.  The reader
(:func:`load_packed`) trusts exactly the types of
:data:`evqual.models._audit.TRUSTED_TYPES` (by their skops loader: an
``ObjectNode`` type may be an ``$object``, a ``LossNode`` or ``TreeNode`` type
a ``$reduce``), allows only plain numeric, boolean and fixed-width unicode
dtypes plus the two node records of scikit-learn's trees (never an object
dtype), checks every array's extent against the blob, bounds the graph's
size, depth and node count as for skops files, refuses a ``$ref`` to an
object not yet fully built (no cycles), and checks the arguments of every
``$reduce``.  The built objects then pass the same
:func:`~evqual.models._audit.audit_objects` as a skops file's.

Writing (:func:`dumps_packed`) is deterministic: the same objects give the
same bytes.
"""

from __future__ import annotations

import importlib
import io
import json
import math
import zipfile

import numpy as np

__all__ = ["PACKED_FORMAT", "PACKED_VERSION", "GRAPH_MEMBER", "ARRAYS_MEMBER", "dumps_packed", "load_packed",
           "is_packed"]

PACKED_FORMAT = "evqual-packed"
PACKED_VERSION = 1
GRAPH_MEMBER = "graph.json"
ARRAYS_MEMBER = "arrays.bin"
_ALIGN = 16
_PLAIN_DTYPES = {name: np.dtype(name) for name in ("b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4",
                                                   "f8")}
_SCALARS = {"float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32,
            "uint64": np.uint64, "bool": np.bool_}
_MAX_UNICODE = 4096  # characters of a fixed-width unicode dtype ('U<n>')
VERSION_RE = __import__("re").compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")
"""What a version string in a model file may hold (``1.6.1``, ``2.1.0rc1``, ``1.7.dev0+g12ab``): no escape,
no line break, no space, at most 64 characters (issue 39: an estimator's ``_sklearn_version`` holding ANSI
escapes and newlines reached the terminal through scikit-learn's version warning)."""
_MAX_DIMS = 8


HGB_NODE_DTYPE = np.dtype([("value", np.float64), ("count", np.uint32), ("feature_idx", np.intp),
                           ("num_threshold", np.float64), ("missing_go_to_left", np.uint8), ("left", np.uint32),
                           ("right", np.uint32), ("gain", np.float64), ("depth", np.uint32), ("is_leaf", np.uint8),
                           ("bin_threshold", np.uint8), ("is_categorical", np.uint8), ("bitset_idx", np.uint32)])
"""scikit-learn's ``PREDICTOR_RECORD_DTYPE`` (a histogram-boosting tree's nodes), written out so that reading a
packed file imports no scikit-learn (``tests/test_lean.py`` checks that the two are equal)."""


class _Records(dict):
    """The structured dtypes of scikit-learn's tree nodes by the name the file gives them; a decision tree's
    (``sklearn.tree_node``, whose layout is platform's) is asked of scikit-learn when a file names it."""

    def __init__(self):
        super().__init__({"sklearn.hgb_node": HGB_NODE_DTYPE})

    def __missing__(self, key):
        if key != "sklearn.tree_node":
            raise KeyError(key)
        from sklearn.tree._tree import NODE_DTYPE

        self[key] = np.dtype(NODE_DTYPE)
        return self[key]

    def __contains__(self, key):
        return key in ("sklearn.hgb_node", "sklearn.tree_node")


def _record_dtypes() -> dict:
    """The structured dtypes of scikit-learn's tree nodes, by the name the file gives them (for writing:
    both, as scikit-learn defines them)."""
    records = _Records()
    records["sklearn.tree_node"]  # noqa: B018 - fills the entry
    return records


def _dtype_name(dtype: np.dtype, records: dict) -> str:
    for name, known in records.items():
        if dtype == known:
            return name
    if dtype.kind == "U" and dtype.byteorder in ("<", "=", "|"):
        return f"U{dtype.itemsize // 4}"
    for name, known in _PLAIN_DTYPES.items():
        if dtype == known:
            return name
    raise TypeError(f"cannot pack an array of dtype {dtype}")


def _dtype_of(name, records: dict, fail) -> np.dtype:
    if not isinstance(name, str):
        raise fail(f"an array's dtype must be a string; got {type(name).__name__}")
    if name in _PLAIN_DTYPES:
        return _PLAIN_DTYPES[name]
    if name in records:
        return records[name]
    if name.startswith("U") and name[1:].isdigit() and name[1:].isascii() and 1 <= int(name[1:]) <= _MAX_UNICODE:
        return np.dtype(f"<U{int(name[1:])}")
    raise fail(f"array dtype {name[:40]!r} is not allowed")


# ---------------------------------------------------------------------------------------------- writing
def _type_name(t) -> str:
    return f"{t.__module__}.{t.__qualname__}"


class _Writer:
    def __init__(self, trusted):
        self.objects = {n for n, loader in trusted if loader == "ObjectNode"}
        self.reduces = {n for n, loader in trusted if loader in ("LossNode", "TreeNode")}
        self.types = {n for n, loader in trusted if loader == "TypeNode"}
        self.records = _record_dtypes()
        self.table: list = []
        self.chunks: list = []
        self.size = 0
        self.array_ids: dict = {}
        self.object_ids: dict = {}
        self.alive: list = []  # keeps every encoded object alive, so that no id() is reused while writing

    def array(self, arr: np.ndarray) -> int:
        got = self.array_ids.get(id(arr))
        if got is not None:
            return got
        name = _dtype_name(arr.dtype, self.records)
        order = "F" if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
        data = arr.tobytes(order=order)
        pad = -self.size % _ALIGN
        if pad:
            self.chunks.append(b"\0" * pad)
            self.size += pad
        self.table.append([name, [int(n) for n in arr.shape], self.size, order])
        self.chunks.append(data)
        self.size += len(data)
        self.array_ids[id(arr)] = len(self.table) - 1
        self.alive.append(arr)
        return len(self.table) - 1

    def value(self, x):
        t = type(x)
        if x is None or t is bool or t is str or t is int:
            return x
        if t is float:
            return x if math.isfinite(x) else {"$float": repr(x)}
        if t is list:
            return [self.value(v) for v in x]
        if t is tuple:
            return {"$tuple": [self.value(v) for v in x]}
        if t is dict:
            if not all(type(k) is str for k in x):
                raise TypeError("cannot pack a dict whose keys are not all strings")
            return {"$dict": {k: self.value(v) for k, v in x.items()}}
        if t is np.ndarray and x.dtype == object:
            if x.ndim == 1 and all(type(v) is str for v in x):
                return {"$strings": list(x)}
            return {"$objects": [[int(n) for n in x.shape], [self.value(v) for v in x.ravel(order="C")]]}
        if t is np.ndarray:
            return {"$array": self.array(x)}
        if isinstance(x, np.generic):
            name = next((n for n, s in _SCALARS.items() if t is s), None)
            if name is None:
                raise TypeError(f"cannot pack a numpy scalar of type {t.__name__}")
            v = x.item()
            return {"$scalar": [name, v if not isinstance(v, float) or math.isfinite(v) else repr(v)]}
        if isinstance(x, type):
            if _type_name(x) not in self.types:
                raise TypeError(f"cannot pack the type {_type_name(x)}")
            return {"$type": _type_name(x)}
        if t is np.random.Generator:
            return {"$generator": self.value(x.bit_generator.state)}
        if t is np.random.RandomState:
            kind, keys, pos, has_gauss, gauss = x.get_state()
            return {"$random_state": [self.value(keys), int(pos), int(has_gauss), float(gauss)]}
        ref = self.object_ids.get(id(x))
        if ref is not None:
            return {"$ref": ref}
        name = _type_name(t)
        if name in self.reduces:
            reduced = x.__reduce__()
            if reduced[0] is not t:
                raise TypeError(f"cannot pack a {name}: it does not reduce to its own class")
            args = reduced[1]
            state = reduced[2] if len(reduced) > 2 else None
            self.object_ids[id(x)] = len(self.object_ids)
            self.alive.append(x)
            return {"$reduce": [name, self.value(tuple(args)), self.value(state)]}
        if name in self.objects:
            self.object_ids[id(x)] = len(self.object_ids)
            self.alive.append(x)
            state = x.__getstate__()
            if state is None:
                state = {}
            if type(state) is not dict or not all(type(k) is str for k in state):
                raise TypeError(f"cannot pack a {name}: its state is not a dict of attribute names")
            return {"$object": [name, {k: self.value(v) for k, v in state.items()}]}
        raise TypeError(f"cannot pack a {name}: not a trusted type")


def dumps_packed(obj, *, trusted=None) -> bytes:
    """The packed file of ``obj`` (bytes of a zip), holding only ``trusted`` types.

    Parameters
    ----------
    obj : object
        A fitted object graph of trusted types (a :class:`Detector`).
    trusted : frozenset of (str, str), optional
        Default :data:`~evqual.models._audit.TRUSTED_TYPES`.

    Raises
    ------
    TypeError
        For a value of a type the format cannot hold or the allow-list does not
        name: nothing is written that the reader would refuse.
    """
    from ._audit import TRUSTED_TYPES
    from ._io import _zipinfo  # the deterministic member header skops files are rewritten with

    writer = _Writer(trusted or TRUSTED_TYPES)
    root = writer.value(obj)
    graph = {"format": PACKED_FORMAT, "version": PACKED_VERSION, "arrays": writer.table, "root": root}
    text = json.dumps(graph, separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in ((GRAPH_MEMBER, text.encode("ascii")), (ARRAYS_MEMBER, b"".join(writer.chunks))):
            zf.writestr(_zipinfo(name), data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return out.getvalue()


# ---------------------------------------------------------------------------------------------- reading
def is_packed(names) -> bool:
    """Whether zip member ``names`` are a packed file's (exactly ``graph.json`` and ``arrays.bin``)."""
    return sorted(names) == sorted((GRAPH_MEMBER, ARRAYS_MEMBER))


_TREE_REDUCE = "sklearn.tree._tree.Tree"
_MAX_TREE_FEATURES = 1_000_000
_MAX_TREE_CLASSES = 10_000


def _layout(table, fail) -> tuple:
    """``(rows, size)``: each array's ``(dtype, shape, offset, order)`` as checked, and the size ``arrays.bin``
    must have.  Arrays follow one another as the writer lays them out: each at the previous one's end rounded
    up to 16 bytes, the blob ending at the last one's end; a gap, padding or trailing bytes are refused
    before the blob is read (issue 39: 300 MB of zeros loaded at an 814 MB peak and stayed in memory)."""
    if not isinstance(table, list):
        raise fail("'arrays' must be a list")
    records = _Records()
    rows, end = [], 0
    for i, row in enumerate(table):
        if not (isinstance(row, list) and len(row) == 4):
            raise fail(f"arrays[{i}] must be [dtype, shape, offset, order]")
        name, shape, offset, order = row
        dtype = _dtype_of(name, records, lambda p, i=i: fail(f"arrays[{i}]: {p}"))
        if (not isinstance(shape, list) or len(shape) > _MAX_DIMS
                or not all(type(n) is int and n >= 0 for n in shape)):
            raise fail(f"arrays[{i}]: shape must be a list of at most {_MAX_DIMS} non-negative integers")
        if type(offset) is not int or offset != end + (-end % _ALIGN):
            raise fail(f"arrays[{i}]: offset must be the previous array's end rounded up to {_ALIGN} bytes "
                       f"({end + (-end % _ALIGN)}; no padding between arrays)")
        if order not in ("C", "F"):
            raise fail(f"arrays[{i}]: order must be 'C' or 'F'")
        rows.append((dtype, shape, offset, order))
        end = offset + math.prod(shape) * dtype.itemsize
    return rows, end


class _Reader:
    def __init__(self, graph: dict, blob: bytearray, trusted, fail, max_nodes: int, max_depth: int,
                 lean: bool = False):
        self.fail = fail
        self.lean = None
        if lean:
            from ._lean import LEAN_TYPES

            self.lean = LEAN_TYPES
        self.objects = {n for n, loader in trusted if loader == "ObjectNode"}
        self.reduces = {n for n, loader in trusted if loader in ("LossNode", "TreeNode")}
        self.types = {n for n, loader in trusted if loader == "TypeNode"}
        self.generators = any(loader == "RandomGeneratorNode" for _, loader in trusted)
        self.random_states = any(loader == "RandomStateNode" for _, loader in trusted)
        # numpy scalar types the allow-list holds (skops loads them as NdArrayNode), by _SCALARS' names
        self.scalars = {name for name, typ in _SCALARS.items()
                        if (f"numpy.{typ.__name__}", "NdArrayNode") in set(trusted)}
        self.max_nodes, self.max_depth = max_nodes, max_depth
        self.nodes = 0
        self.built: list = []  # objects by serial; None while one is being built
        self.classes: dict = {}
        self.arrays = self._arrays(graph.get("arrays"), blob)

    def _arrays(self, table, blob: bytearray) -> list:
        fail = self.fail
        rows, size = _layout(table, fail)
        if size != len(blob):
            raise fail(f"{ARRAYS_MEMBER} holds {len(blob)} bytes; its arrays need exactly {size}")
        out = []
        for i, (dtype, shape, offset, order) in enumerate(rows):
            nbytes = math.prod(shape) * dtype.itemsize
            if offset + nbytes > len(blob):
                raise fail(f"arrays[{i}]: {nbytes} bytes at offset {offset} run past the end of {ARRAYS_MEMBER} "
                           f"({len(blob)} bytes)")
            count = math.prod(shape)
            arr = np.frombuffer(blob, dtype=dtype, count=count, offset=offset) if count else np.empty(0, dtype)
            out.append(arr.reshape(shape, order=order))
        return out

    def _class(self, name, allowed: set, what: str):
        if not isinstance(name, str) or name not in allowed:
            raise self.fail(f"{what} type {str(name)[:120]!r} is not in the allow-list")
        cls = self.classes.get(name)
        if cls is None:
            module, _, qualname = name.rpartition(".")
            if self.lean is not None and what != "$type":
                cls = self.lean.get(name)
                if cls is None and module.split(".")[0] != "evqual":
                    raise NotLean(name)
            if cls is None:
                cls = getattr(importlib.import_module(module), qualname)
            self.classes[name] = cls
        return cls

    def value(self, node, depth: int):
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise self.fail(f"the graph holds more than {self.max_nodes} values")
        if depth > self.max_depth:
            raise self.fail(f"the graph is nested deeper than {self.max_depth}")
        t = type(node)
        if node is None or t is bool or t is str or t is int or t is float:
            return node
        if t is list:
            return [self.value(v, depth + 1) for v in node]
        if t is not dict or len(node) != 1:
            raise self.fail("a value is neither a JSON scalar, a list nor a one-key tagged object")
        (tag, body), = node.items()
        if tag == "$dict":
            if type(body) is not dict:
                raise self.fail("$dict must hold a JSON object")
            return {k: self.value(v, depth + 1) for k, v in body.items()}
        if tag == "$tuple":
            if type(body) is not list:
                raise self.fail("$tuple must hold a list")
            return tuple(self.value(v, depth + 1) for v in body)
        if tag == "$float":
            if body not in ("nan", "inf", "-inf"):
                raise self.fail("$float must be 'nan', 'inf' or '-inf'")
            return float(body)
        if tag == "$array":
            if type(body) is not int or not 0 <= body < len(self.arrays):
                raise self.fail(f"$array {str(body)[:40]} is not an index of 'arrays'")
            return self.arrays[body]
        if tag == "$strings":
            if type(body) is not list or not all(type(v) is str for v in body):
                raise self.fail("$strings must hold a list of strings")
            self.nodes += len(body)
            out = np.empty(len(body), dtype=object)
            out[:] = body
            return out
        if tag == "$objects":
            return self._objects(body, depth)
        if tag == "$scalar":
            return self._scalar(body)
        if tag == "$type":
            return self._class(body, self.types, "$type")
        if tag == "$ref":
            if type(body) is not int or not 0 <= body < len(self.built) or self.built[body] is None:
                raise self.fail(f"$ref {str(body)[:40]} does not name an object already built (a cycle or a "
                                f"forward reference)")
            return self.built[body]
        if tag == "$object":
            return self._object(body, depth)
        if tag == "$reduce":
            return self._reduce(body, depth)
        if tag == "$generator":
            return self._generator(body, depth)
        if tag == "$random_state":
            return self._random_state(body, depth)
        raise self.fail(f"unknown tag {str(tag)[:40]!r}")

    def _objects(self, body, depth: int):
        if not (type(body) is list and len(body) == 2 and type(body[0]) is list and type(body[1]) is list
                and len(body[0]) <= _MAX_DIMS and all(type(n) is int and n >= 0 for n in body[0])
                and math.prod(body[0]) == len(body[1])):
            raise self.fail("$objects must be [shape, values] with as many values as the shape holds")
        out = np.empty(len(body[1]), dtype=object)
        for i, v in enumerate(body[1]):
            out[i] = self.value(v, depth + 1)
        return out.reshape(body[0])

    def _scalar(self, body):
        if not (type(body) is list and len(body) == 2 and body[0] in _SCALARS and body[0] in self.scalars):
            raise self.fail("$scalar must be [a trusted numpy scalar type, its value]")
        name, v = body
        if name == "bool":
            if type(v) is not bool:
                raise self.fail("a bool $scalar must hold true or false")
        elif name.startswith("float"):
            if v in ("nan", "inf", "-inf"):
                v = float(v)
            elif type(v) not in (int, float):
                raise self.fail(f"a {name} $scalar must hold a number")
        elif type(v) is not int:
            raise self.fail(f"a {name} $scalar must hold an integer")
        try:
            return _SCALARS[name](v)
        except OverflowError:
            raise self.fail(f"a {name} $scalar is out of range") from None

    def _state(self, state, depth: int) -> dict:
        if type(state) is not dict:
            raise self.fail("an object's state must be a JSON object of attribute names")
        return {k: self.value(v, depth + 1) for k, v in state.items()}

    def _object(self, body, depth: int):
        if not (type(body) is list and len(body) == 2):
            raise self.fail("$object must be [type, state]")
        cls = self._class(body[0], self.objects, "$object")
        serial = len(self.built)
        self.built.append(None)
        state = self._state(body[1], depth)
        if isinstance(state, dict):
            for key, v in state.items():
                if isinstance(key, str) and key.endswith("_version") and not (
                        isinstance(v, str) and VERSION_RE.fullmatch(v)):
                    raise self.fail(f"{body[0]}.{key[:40]} is not a version string ({str(v)[:40]!r})")
        obj = cls.__new__(cls)
        setstate = getattr(obj, "__setstate__", None)
        if setstate is not None:
            setstate(state)
        else:
            obj.__dict__.update(state)
        self.built[serial] = obj
        return obj

    def _reduce(self, body, depth: int):
        if not (type(body) is list and len(body) == 3):
            raise self.fail("$reduce must be [type, args, state]")
        cls = self._class(body[0], self.reduces, "$reduce")
        serial = len(self.built)
        self.built.append(None)
        args = self.value(body[1], depth + 1)
        if type(args) is not tuple:
            raise self.fail("$reduce's arguments must be a $tuple")
        self._check_reduce_args(body[0], args)
        state = None if body[2] is None else self.value(body[2], depth + 1)
        if state is not None and type(state) is not dict:
            raise self.fail("$reduce's state must be a $dict or null")
        obj = cls(*args)
        if state is not None:
            obj.__setstate__(state)
        self.built[serial] = obj
        return obj

    def _check_reduce_args(self, name: str, args: tuple) -> None:
        if name != _TREE_REDUCE:
            if args:
                raise self.fail(f"{name} takes no arguments")
            return
        if len(args) != 3:
            raise self.fail("a Tree takes (n_features, n_classes, n_outputs)")
        n_features, n_classes, n_outputs = args
        if type(n_features) is not int or not 1 <= n_features <= _MAX_TREE_FEATURES:
            raise self.fail(f"a Tree's n_features must be an integer in [1, {_MAX_TREE_FEATURES}]")
        if type(n_outputs) is not int or n_outputs != 1:
            raise self.fail("a Tree's n_outputs must be 1")
        if (not isinstance(n_classes, np.ndarray) or n_classes.dtype.kind not in "iu" or n_classes.shape != (1,)
                or not 1 <= int(n_classes[0]) <= _MAX_TREE_CLASSES):
            raise self.fail(f"a Tree's n_classes must be one integer in [1, {_MAX_TREE_CLASSES}]")

    def _generator(self, body, depth: int):
        if not self.generators:
            raise self.fail("a random generator is not in the allow-list")
        state = self.value(body, depth + 1)
        from ._audit import TRUSTED_BIT_GENERATORS

        if type(state) is not dict or state.get("bit_generator") not in TRUSTED_BIT_GENERATORS:
            raise self.fail(f"a random generator's bit generator must be one of {TRUSTED_BIT_GENERATORS}")
        inner = state.get("state")
        if (set(state) != {"bit_generator", "state", "has_uint32", "uinteger"} or type(inner) is not dict
                or set(inner) != {"state", "inc"}
                or not all(type(v) is int and 0 <= v < 2**128 for v in inner.values())
                or type(state["has_uint32"]) is not int or type(state["uinteger"]) is not int
                or not 0 <= state["uinteger"] < 2**32 or state["has_uint32"] not in (0, 1)):
            raise self.fail("a random generator's state is malformed")
        if self.lean is not None:  # scoring never draws from it: its checked state, without numpy.random
            from ._lean import RandomGenerator

            return RandomGenerator(state)
        gen = np.random.Generator(getattr(np.random, state["bit_generator"])())
        gen.bit_generator.state = state
        return gen

    def _random_state(self, body, depth: int):
        if not self.random_states:
            raise self.fail("a RandomState is not in the allow-list")
        if not (type(body) is list and len(body) == 4):
            raise self.fail("$random_state must be [keys, pos, has_gauss, cached_gaussian]")
        keys = self.value(body[0], depth + 1)
        pos, has_gauss, gauss = body[1:]
        if (not isinstance(keys, np.ndarray) or keys.dtype != np.uint32 or keys.shape != (624,)
                or type(pos) is not int or not 0 <= pos <= 624 or has_gauss not in (0, 1)
                or type(gauss) not in (int, float) or not math.isfinite(gauss)):
            raise self.fail("a RandomState's state is malformed")
        rs = np.random.RandomState()
        rs.set_state(("MT19937", keys, pos, has_gauss, float(gauss)))
        return rs


class NotLean(Exception):
    """A lean load met a type without a stand-in (its name is the argument): load fully instead."""


def _reject_constant(name):
    raise ValueError(f"the JSON constant {name} is not allowed")


def load_packed(zf: zipfile.ZipFile, model_path, *, trusted, root, max_graph_bytes: int, max_nodes: int,
                max_depth: int, lean: bool = False):
    """Build the object graph of a packed file from its opened (and already checked) zip.

    Every check is described in the module docstring; a failure raises
    :class:`~evqual.models._audit.ModelLoadError` naming ``model_path``.
    With ``lean``, scikit-learn's objects are built as their stand-ins
    (:data:`evqual.models._lean.LEAN_TYPES`); a trusted type without one
    raises :class:`NotLean` (the caller loads fully).
    """
    from ._audit import ModelLoadError, _oneline

    def fail(problem):
        return ModelLoadError(f"{model_path}: {GRAPH_MEMBER}: {_oneline(problem)}; refusing to load")

    info = zf.getinfo(GRAPH_MEMBER)
    if info.file_size > max_graph_bytes:
        raise ModelLoadError(f"{model_path}: {GRAPH_MEMBER} is larger than {max_graph_bytes} bytes; refusing to load")
    raw = zf.read(GRAPH_MEMBER)
    # count containers on the bytes before parsing (a JSON bomb of nested lists never reaches the parser)
    if raw.count(b"[") + raw.count(b"{") > 2 * max_nodes:
        raise fail(f"more than {max_nodes} values")
    try:
        graph = json.loads(raw.decode("ascii"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise fail(f"not valid JSON ({type(exc).__name__}: {exc})") from None
    if type(graph) is not dict or set(graph) != {"format", "version", "arrays", "root"}:
        raise fail("must be an object with exactly 'format', 'version', 'arrays' and 'root'")
    if graph["format"] != PACKED_FORMAT or graph["version"] != PACKED_VERSION:
        raise fail(f"format {str(graph['format'])[:40]!r} version {str(graph['version'])[:20]} is not "
                   f"{PACKED_FORMAT!r} version {PACKED_VERSION}")
    # no member larger than its content needs: the graph as the writer writes it (compact JSON, no white
    # space or padding), the blob exactly its arrays (checked before it is read)
    try:
        compact = len(json.dumps(graph, separators=(",", ":"), allow_nan=False, ensure_ascii=True))
    except ValueError as exc:
        raise fail(f"not in the writer's form ({exc})") from None
    if compact != len(raw):
        raise fail(f"{len(raw)} bytes where its content needs {compact} (white space or padding)")
    _, size = _layout(graph["arrays"], fail)
    declared = zf.getinfo(ARRAYS_MEMBER).file_size
    if declared != size:
        raise ModelLoadError(f"{model_path}: {ARRAYS_MEMBER} holds {declared} bytes; its arrays need exactly "
                             f"{size} (padding or a missing part); refusing to load")
    blob = bytearray(zf.read(ARRAYS_MEMBER))
    reader = _Reader(graph, blob, trusted, fail, max_nodes, max_depth, lean)
    top = graph["root"]
    if not (type(top) is dict and set(top) == {"$object"} and type(top["$object"]) is list and top["$object"]
            and top["$object"][0] == root[0] and root[1] == "ObjectNode"):
        raise fail(f"the root must be an {root[0]}")
    return reader.value(top, 0)
