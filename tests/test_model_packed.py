"""evqual's packed model format (``model.evqpack``): round trips, determinism, and crafted files.

The skops reader's attacks are in ``test_model_security.py`` and
``test_hardening2_models.py``; here the same kinds of attack are made on the
packed format's own structure (its graph, its array table, its blob), and the
object audit they share is shown to run on packed files too.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evqual.data import load_sample
from evqual.models import (
    METHODS,
    PACKED_MODEL_FILE,
    TRUSTED_TYPES,
    Detector,
    ModelLoadError,
    default_model_path,
    load_detector,
    model_file,
    prediction_fingerprint,
    read_meta,
    save_detector,
)
from evqual.models._packed import dumps_packed

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------- helpers
def read_packed(folder: Path):
    with zipfile.ZipFile(folder / PACKED_MODEL_FILE) as zf:
        return json.loads(zf.read("graph.json")), bytearray(zf.read("arrays.bin"))


def zip_members(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def install(folder: Path, data: bytes) -> None:
    """Replace the model file and, as an attacker can, the hash meta.json records."""
    (folder / PACKED_MODEL_FILE).write_bytes(data)
    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))


def craft(src: Path, dst: Path, mutate=None, *, graph_text=None) -> Path:
    """A copy of ``src`` whose graph (a dict) and blob (a bytearray) ``mutate`` changed in place."""
    shutil.copytree(src, dst)
    graph, blob = read_packed(dst)
    if mutate is not None:
        mutate(graph, blob)
    # compact, as the writer writes it (white space would be refused as padding first)
    text = graph_text if graph_text is not None else json.dumps(graph, separators=(",", ":"))
    install(dst, zip_members({"graph.json": text, "arrays.bin": bytes(blob)}))
    return dst


def nodes(node, tag):
    """Every tagged value ``{tag: body}`` of a graph, in document order."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if tag in n and len(n) == 1:
                out.append(n[tag])
            stack.extend(reversed(list(n.values())))
        elif isinstance(n, list):
            stack.extend(reversed(n))
    return out


def graph_types(graph) -> set:
    loaders = {"$object": "ObjectNode", "$type": "TypeNode"}
    found = set()
    for tag, loader in loaders.items():
        for body in nodes(graph["root"], tag):
            found.add((body[0] if tag == "$object" else body, loader))
    for body in nodes(graph["root"], "$reduce"):
        found.add((body[0], "reduce"))
    return found


@pytest.fixture(scope="module")
def good(tmp_path_factory, evqual_sample_detector):
    """The shipped method on the embedded sample, saved packed (histogram-boosting trees, TF-IDF, calibrators)."""
    return save_detector(evqual_sample_detector, tmp_path_factory.mktemp("packed") / "model")


@pytest.fixture(scope="module")
def every_method(tmp_path_factory, evqual_sample_detector):
    root = tmp_path_factory.mktemp("packed-methods")
    examples = load_sample()
    folders = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in METHODS:
            det = evqual_sample_detector if method == "evqual" else Detector(method).fit(examples)
            folders[method] = save_detector(det, root / method)
        folders["evidence-lr/isotonic"] = save_detector(Detector("evidence-lr", calibration="isotonic").fit(examples),
                                                        root / "evidence-lr-isotonic")
    return folders


# ---------------------------------------------------------------------------------------------- round trips
def test_every_method_round_trips_packed_with_its_fingerprint(every_method):
    for name, folder in every_method.items():
        meta = read_meta(folder)
        assert meta["format"] == 3 and sorted(p.name for p in folder.iterdir()) == ["meta.json", PACKED_MODEL_FILE]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = prediction_fingerprint(load_detector(folder))
        assert got["sha256"] == meta["prediction_fingerprint"]["sha256"], name


def test_packed_files_hold_only_trusted_types(every_method):
    trusted_objects = {t for t, loader in TRUSTED_TYPES if loader == "ObjectNode"}
    trusted_reduce = {t for t, loader in TRUSTED_TYPES if loader in ("LossNode", "TreeNode")}
    seen = set()
    for folder in every_method.values():
        for name, loader in graph_types(read_packed(folder)[0]):
            allowed = trusted_reduce if loader == "reduce" else trusted_objects if loader == "ObjectNode" else {
                t for t, kind in TRUSTED_TYPES if kind == "TypeNode"}
            assert name in allowed, (name, loader)
            seen.add(name)
    assert "sklearn.tree._tree.Tree" in seen and "sklearn._loss._loss.CyHalfBinomialLoss" in seen


def test_packed_and_skops_files_of_one_detector_predict_the_same(evqual_sample_detector, good, tmp_path):
    skops = save_detector(evqual_sample_detector, tmp_path / "skops", model_format="skops")
    assert read_meta(skops)["format"] == 2 and model_file(skops).name == "model.skops"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = load_detector(good), load_detector(skops)
    examples = load_sample()
    assert np.array_equal(a.predict_proba(examples), b.predict_proba(examples))
    assert a.threshold_ == b.threshold_


def test_saving_packed_twice_gives_the_same_bytes(evqual_sample_detector, good, tmp_path):
    again = save_detector(evqual_sample_detector, tmp_path / "again")
    assert (again / PACKED_MODEL_FILE).read_bytes() == (good / PACKED_MODEL_FILE).read_bytes()


def test_saving_in_the_other_format_replaces_the_other_file(evqual_sample_detector, tmp_path):
    folder = save_detector(evqual_sample_detector, tmp_path / "m", model_format="skops")
    assert (folder / "model.skops").exists()
    save_detector(evqual_sample_detector, folder)
    assert sorted(p.name for p in folder.iterdir()) == ["meta.json", PACKED_MODEL_FILE]
    load_detector(folder)


def test_an_unknown_model_format_is_a_clear_error(evqual_sample_detector, tmp_path):
    with pytest.raises(ValueError, match="model_format must be one of"):
        save_detector(evqual_sample_detector, tmp_path / "m", model_format="pickle")


def test_the_writer_refuses_what_the_reader_would_refuse():
    with pytest.raises(TypeError, match="not a trusted type"):
        dumps_packed(object())
    with pytest.raises(TypeError, match="dtype"):
        dumps_packed([np.zeros(2, dtype=np.complex128)])
    with pytest.raises(TypeError, match="keys"):
        dumps_packed({1: 2})


def test_loading_the_shipped_model_does_not_import_skops():
    code = ("import sys, warnings; warnings.simplefilter('ignore')\n"
            "from evqual.models import load_detector, default_model_path\n"
            "load_detector(default_model_path())\n"
            "print('skops' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_format_3_meta_json_beside_a_skops_file_is_refused(good, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(good, folder)
    (folder / PACKED_MODEL_FILE).rename(folder / "model.skops")
    with pytest.raises(ModelLoadError, match="format 3, whose model file is model.evqpack"):
        load_detector(folder)


def test_the_pin_applies_to_the_packed_file(good):
    digest = hashlib.sha256((good / PACKED_MODEL_FILE).read_bytes()).hexdigest()
    load_detector(good, sha256=digest)
    with pytest.raises(ModelLoadError, match="does not match the expected"):
        load_detector(good, sha256="0" * 64)


# ---------------------------------------------------------------------------------------------- crafted files
def _set_root_object_type(name):
    def mutate(graph, blob):
        graph["root"]["$object"][0] = name
    return mutate


def _first_object(graph, suffix):
    for body in nodes(graph["root"], "$object"):
        if body[0].endswith(suffix):
            return body
    raise AssertionError(suffix)


def _plant(tag, value):
    def mutate(graph, blob):
        _first_object(graph, ".Detector")[1]["payload_"] = {tag: value}
    return mutate


def _array_row(graph, dtype_name):
    return next(i for i, row in enumerate(graph["arrays"]) if row[0] == dtype_name)


def _hgb_node_with_children(graph, blob):
    """A view of the first histogram-boosting node record of the blob that is not a leaf."""
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    i = _array_row(graph, "sklearn.hgb_node")
    _, shape, offset, _ = graph["arrays"][i]
    recs = np.frombuffer(blob, dtype=PREDICTOR_RECORD_DTYPE, count=shape[0], offset=offset)
    return recs, int(np.flatnonzero(recs["is_leaf"] == 0)[0])


def _bad_child(graph, blob):
    recs, j = _hgb_node_with_children(graph, blob)
    recs["left"][j] = 4_000_000_000


def _overlap(graph):
    rows = graph["arrays"]
    i = next(i for i in range(1, len(rows)) if np.prod(rows[i - 1][1]) > 0)
    rows[i][2] = rows[i - 1][2]


def _deep_graph(depth):
    return '{"format":"evqual-packed","version":1,"arrays":[],"root":' + "[" * depth + "]" * depth + "}"


CRAFTED = [
    ("root type", _set_root_object_type("subprocess.Popen"), "the root must be an evqual.models._detector.Detector"),
    ("object type", _plant("$object", ["subprocess.Popen", {}]), "'subprocess.Popen' is not in the allow-list"),
    ("object via os", _plant("$object", ["os.system", {}]), "'os.system' is not in the allow-list"),
    ("type", _plant("$type", "builtins.eval"), "'builtins.eval' is not in the allow-list"),
    ("reduce", _plant("$reduce", ["builtins.exec", {"$tuple": ["print(1)"]}, None]),
     "'builtins.exec' is not in the allow-list"),
    ("reduce of a trusted object type", _plant("$reduce", ["sklearn.pipeline.Pipeline", {"$tuple": []}, None]),
     "not in the allow-list"),
    ("tree arguments", _plant("$reduce", ["sklearn.tree._tree.Tree", {"$tuple": [3, {"$array": 0}, 10**9]}, None]),
     "n_outputs must be 1"),
    ("loss arguments", _plant("$reduce", ["sklearn._loss._loss.CyHalfBinomialLoss", {"$tuple": [1]}, None]),
     "takes no arguments"),
    ("forward ref", _plant("$ref", 10**6), "does not name an object already built"),
    ("cycle", _plant("$ref", 0), "does not name an object already built"),
    ("unknown tag", _plant("$pickle", "gASVAAAAAAAAAAAu"), "unknown tag"),
    ("two-key value", lambda g, b: _first_object(g, ".Detector")[1].update(payload_={"$ref": 0, "$type": "x"}),
     "one-key tagged object"),
    ("array index", _plant("$array", 10**9), "is not an index of 'arrays'"),
    ("scalar type", _plant("$scalar", ["object", 1]), r"\$scalar must be"),
    ("generator", _plant("$generator", {"$dict": {"bit_generator": "MT19937", "state": {"$dict": {}},
                                                  "has_uint32": 0, "uinteger": 0}}), "bit generator must be"),
    ("float", _plant("$float", "1e999999"), r"\$float must be"),
    ("array past the blob", lambda g, b: g["arrays"][-1].__setitem__(2, len(b) + 16), "run past the end|rounded up"),
    ("array shape", lambda g, b: g["arrays"][0].__setitem__(1, [-1]), "non-negative integers"),
    ("huge array shape", lambda g, b: g["arrays"][0].__setitem__(1, [2**40, 2**40]), "run past the end|need exactly|rounded up"),
    ("object dtype", lambda g, b: g["arrays"][0].__setitem__(0, "O"), "dtype 'O' is not allowed"),
    ("void dtype", lambda g, b: g["arrays"][0].__setitem__(0, "V8"), "is not allowed"),
    ("misaligned offset", lambda g, b: g["arrays"][1].__setitem__(2, g["arrays"][1][2] + 1), "aligned|rounded up"),
    ("overlapping arrays", lambda g, b: _overlap(g), "after the previous array|rounded up"),
    ("version", lambda g, b: g.update(version=2), "is not 'evqual-packed' version 1"),
    ("extra key", lambda g, b: g.update(code="print(1)"), "exactly 'format', 'version', 'arrays' and 'root'"),
    ("child out of range", _bad_child, "out of range|outside|child"),
]


@pytest.mark.parametrize("lean", [False, True], ids=["full", "lean"])
@pytest.mark.parametrize("mutate,match", [c[1:] for c in CRAFTED], ids=[c[0] for c in CRAFTED])
def test_crafted_packed_files_are_refused(good, tmp_path, mutate, match, lean):
    folder = craft(good, tmp_path / "m", mutate)
    with pytest.raises(ModelLoadError, match=match) as info:
        load_detector(folder, lean=lean)  # the lean load (Scorer.load) refuses what the full load refuses
    assert str(folder / PACKED_MODEL_FILE) in str(info.value)


def _edit_targets(graph) -> list:
    """``(container, key)`` of the graph's values, at most 5,000 (what a fuzz test replaces)."""
    targets = []
    stack = [(graph, k) for k in graph]
    while stack and len(targets) < 5000:
        parent, key = stack.pop()
        targets.append((parent, key))
        child = parent[key]
        if isinstance(child, dict):
            stack.extend((child, k) for k in child)
        elif isinstance(child, list):
            stack.extend((child, i) for i in range(len(child)))
    return targets


def _outcome(folder, lean):
    """``(loaded lean, risks on the sample)`` or ``None`` when refused (a ModelLoadError naming the file)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det = load_detector(folder, lean=lean)
    except ModelLoadError as exc:
        assert str(folder / PACKED_MODEL_FILE) in str(exc)
        return None
    try:
        risks = det.detect(load_sample()[:6]).risk.tobytes()
    except Exception as exc:  # noqa: BLE001 - a model that loads but cannot predict: compared as such
        risks = type(exc).__name__
    return getattr(det, "lean_", False), risks


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_lean_load_accepts_only_what_the_full_load_accepts(good, tmp_path_factory, data):
    """Issue 41: a random edit of the graph or the blob is refused by the lean load whenever the full load
    refuses it, and a model both load predicts the same risks either way."""
    graph, blob = read_packed(good)
    if data.draw(st.booleans()):
        parent, key = data.draw(st.sampled_from(_edit_targets(graph)))
        parent[key] = data.draw(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
                                | st.text(max_size=8) | st.lists(st.integers(-3, 3), max_size=3))
    else:
        for pos, x in data.draw(st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), min_size=1,
                                         max_size=4)):
            blob[pos % len(blob)] ^= x
    folder = tmp_path_factory.mktemp("lean") / "m"
    craft(good, folder, lambda g, b: (g.clear(), g.update(graph), b.__setitem__(slice(None), blob)))
    full, lean = _outcome(folder, False), _outcome(folder, True)
    if full is None:
        assert lean is None
    elif lean is not None:
        assert lean[1] == full[1]


def test_a_deep_graph_is_refused_without_recursion_error(good, tmp_path):
    folder = craft(good, tmp_path / "m", graph_text=_deep_graph(100_000))
    with pytest.raises(ModelLoadError, match="nested deeper|not valid JSON|the root"):
        load_detector(folder)


def test_a_graph_of_millions_of_values_is_refused_before_parsing(good, tmp_path, monkeypatch):
    import evqual.models._audit as audit

    monkeypatch.setattr(audit, "MAX_SCHEMA_NODES", 1000)
    folder = craft(good, tmp_path / "m")
    with pytest.raises(ModelLoadError, match="more than 1000 values"):
        load_detector(folder)


def test_json_constants_are_refused(good, tmp_path):
    graph, _ = read_packed(good)
    text = json.dumps(graph).replace('"format"', '"nan_": NaN, "format"', 1)
    folder = craft(good, tmp_path / "m", graph_text=text)
    with pytest.raises(ModelLoadError, match="NaN is not allowed"):
        load_detector(folder)


def test_extra_or_missing_zip_members_are_refused(good, tmp_path):
    graph, blob = read_packed(good)
    for members, match in (({"graph.json": json.dumps(graph), "arrays.bin": bytes(blob), "x.py": b"1"},
                            "evqual model pack holds exactly"),
                           ({"graph.json": json.dumps(graph)}, "evqual model pack holds exactly")):
        folder = tmp_path / str(len(members))
        shutil.copytree(good, folder)
        install(folder, zip_members(members))
        with pytest.raises(ModelLoadError, match=match):
            load_detector(folder)


def test_a_nan_leaf_value_is_refused_by_the_shared_object_audit(good, tmp_path):
    def mutate(graph, blob):
        recs, j = _hgb_node_with_children(graph, blob)
        recs["value"][:] = np.nan

    folder = craft(good, tmp_path / "m", mutate)
    with pytest.raises(ModelLoadError, match="finite|NaN|nan"):
        load_detector(folder)


def _loads_or_is_refused_cleanly(folder):
    """Loading ``folder`` either succeeds or raises a ModelLoadError naming its file; nothing else."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            load_detector(folder)
    except ModelLoadError as exc:
        assert str(folder / PACKED_MODEL_FILE) in str(exc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_edits_of_the_graph_load_or_are_refused_cleanly(good, tmp_path_factory, data):
    """Any value of the graph replaced by any JSON: a clean ModelLoadError or a model that loads."""
    graph, blob = read_packed(good)
    parent, key = data.draw(st.sampled_from(_edit_targets(graph)))
    json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
                               | st.text(max_size=8),
                               lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                          max_size=2),
                               max_leaves=6)
    parent[key] = data.draw(json_values)
    folder = tmp_path_factory.mktemp("fuzz") / "m"
    craft(good, folder, lambda g, b: (g.clear(), g.update(graph)))
    _loads_or_is_refused_cleanly(folder)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), min_size=1, max_size=4))
def test_random_byte_flips_of_the_blob_load_or_are_refused_cleanly(good, tmp_path_factory, flips):
    graph, blob = read_packed(good)
    for pos, x in flips:
        blob[pos % len(blob)] ^= x
    folder = tmp_path_factory.mktemp("flip") / "m"
    craft(good, folder, lambda g, b: b.__setitem__(slice(None), blob))
    _loads_or_is_refused_cleanly(folder)


def test_the_shipped_model_is_packed():
    folder = default_model_path()
    assert model_file(folder).name == PACKED_MODEL_FILE and read_meta(folder)["format"] == 3


@settings(max_examples=300, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10**6),
                                st.sampled_from(["left", "right", "feature_idx", "depth", "is_leaf", "is_categorical"]),
                                st.integers(-3, 600)), min_size=1, max_size=3))
def test_the_batched_tree_audit_passes_only_trees_each_check_passes(edits):
    """Issue 41: the load checks all of a model's trees at once; whenever that says they pass, the check of
    each tree alone (which names a fault) passes too."""
    import copy

    from evqual.models import default_model_path
    from evqual.models._audit import _check_predictor, _predictors_pass

    det = _SHIPPED.get("det")
    if det is None:
        det = _SHIPPED["det"] = load_detector(default_model_path(), lean=True)
    est = det.model_.response_model_
    trees = [copy.copy(stage[0]) for stage in est._predictors[:5]]
    for t in trees:
        t.__dict__["nodes"] = t.nodes.copy()
    for k, row, field, value in edits:
        nodes = trees[k].nodes
        kind = nodes.dtype[field]
        nodes[field][row % len(nodes)] = min(max(value, 0), np.iinfo(kind).max) if kind.kind == "u" else value
    n = est.n_features_in_

    def fail(where, problem):
        return ModelLoadError(f"{where}: {problem}")

    if _predictors_pass(trees, n):
        for t in trees:
            _check_predictor(t, n, "tree", fail)  # raises if the batch check let a fault through


_SHIPPED: dict = {}
