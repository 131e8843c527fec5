"""A model folder must never run code: crafted and malformed model folders (issue 8, section 1).

Each crafted folder is written as an attacker would: a valid model whose
``schema.json`` gains a payload node, with ``meta.json``'s ``model_sha256``
rewritten to match (the recorded hash is the attacker's to write).  Every
payload is first shown to be live (skops constructs it when told to trust
its types, and the marker file appears), then evqual must refuse the folder
with a :class:`ModelLoadError` naming the file and leave the marker absent.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from evqual.cli import main
from evqual.data import load_sample
from evqual.models import (
    METHODS,
    MODEL_SHA256_ENV,
    TRUSTED_TYPES,
    Detector,
    ModelLoadError,
    load_detector,
    read_meta,
)
from evqual.models import save_detector as _save_detector

REPO = Path(__file__).resolve().parents[1]


def save_detector(detector, path, **kwargs):
    """These tests craft skops files: every model here is saved as ``model.skops`` (format 2).

    The packed format's own attacks are in ``test_model_packed.py``."""
    return _save_detector(detector, path, model_format="skops", **kwargs)


# ---------------------------------------------------------------------------------------------- helpers
def _schema_types(schema) -> set:
    """Every ``(module.class, loader)`` pair of a schema, found by a walk independent of evqual's."""
    found, stack = set(), [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "__loader__" in node:
                found.add((f"{node['__module__']}.{node['__class__']}", node["__loader__"]))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _read(folder):
    with zipfile.ZipFile(folder / "model.skops") as zf:
        return json.loads(zf.read("schema.json")), {n: zf.read(n) for n in zf.namelist() if n != "schema.json"}


def _write_model(folder: Path, data: bytes, *, fix_meta: bool = True) -> None:
    """Replace ``model.skops`` and, as an attacker can, the hash ``meta.json`` records."""
    (folder / "model.skops").write_bytes(data)
    if fix_meta:
        meta = json.loads((folder / "meta.json").read_text())
        meta["model_sha256"] = hashlib.sha256(data).hexdigest()
        (folder / "meta.json").write_text(json.dumps(meta))


def _zip(schema, members) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
        zf.writestr("schema.json", json.dumps(schema))
    return buf.getvalue()


def _crafted(src: Path, dst: Path, mutate=None, extra_members=None) -> Path:
    """A copy of the model folder ``src`` whose schema ``mutate(schema, members)`` changed."""
    shutil.copytree(src, dst)
    schema, members = _read(dst)
    if mutate is not None:
        mutate(schema, members)
    members.update(extra_members or {})
    _write_model(dst, _zip(schema, members))
    return dst


_IDS = iter(range(900_000, 10**9))


def _literal(value):
    return {"__class__": "str", "__module__": "builtins", "__loader__": "JsonNode", "content": json.dumps(value),
            "is_json": True, "__id__": next(_IDS)}


def _reduce_node(module, name, *args):
    """A skops ``ConstructorFromReduceNode``: ``module.name(*args)`` at load time."""
    return {"__class__": name, "__module__": module, "__loader__": "ConstructorFromReduceNode",
            "content": {"__class__": "tuple", "__module__": "builtins", "__loader__": "TupleNode",
                        "content": [_literal(a) for a in args], "__id__": next(_IDS)},
            "__id__": next(_IDS)}


def _add_attribute(schema, name, node):
    """Add ``name: node`` to the Detector's attribute dict (and its key type)."""
    attrs = schema["content"]
    attrs["content"][name] = node
    attrs["key_types"]["content"].append({"__class__": "str", "__module__": "builtins", "__loader__": "TypeNode",
                                          "__id__": next(_IDS)})


class _Payload:
    """Unpickling this creates ``marker`` (what an attacker's pickle beside the model would do)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _payloads(marker: Path, folder: Path) -> dict:
    """name -> (node, files to place beside the model)."""
    pickled = folder.parent / f"{folder.name}-evil.pkl"
    return {
        "exec": (_reduce_node("builtins", "exec", f"open({str(marker)!r}, 'w').close()"), {}),
        "eval": (_reduce_node("builtins", "eval", f"open({str(marker)!r}, 'w')"), {}),
        "open": (_reduce_node("builtins", "open", str(marker), "w"), {}),
        "numpy.load": (_reduce_node("numpy", "load", str(pickled), None, True),
                       {pickled: pickle.dumps(_Payload(marker))}),
        "os.system": (_reduce_node("os", "system", f"touch {marker}"), {}),
        "posix.system": (_reduce_node("posix", "system", f"touch {marker}"), {}),
        "function exec": ({"__class__": "exec", "__module__": "builtins", "__loader__": "FunctionNode",
                           "content": {"module_path": "builtins", "function": "exec"}, "__id__": next(_IDS)}, {}),
    }


PAYLOADS = ["exec", "eval", "open", "numpy.load", "os.system", "posix.system", "function exec"]
LIVE = ["exec", "eval", "open", "numpy.load", "os.system"]  # the payloads that run when constructed


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A small valid model folder (the nli-proxy rule on the embedded sample)."""
    folder = tmp_path_factory.mktemp("good") / "model"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save_detector(Detector("nli-proxy").fit(load_sample()), folder)
    return folder


@pytest.fixture(scope="module")
def every_method(tmp_path_factory, evqual_sample_detector):
    """Every method saved once (sigmoid calibration), plus evidence-lr under isotonic and no calibration."""
    root = tmp_path_factory.mktemp("methods")
    examples = load_sample()
    folders = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in METHODS:
            det = evqual_sample_detector if method == "evqual" else Detector(method).fit(examples)
            folders[method] = save_detector(det, root / method)
        for cal in ("isotonic", "none"):
            folders[f"evidence-lr/{cal}"] = save_detector(Detector("evidence-lr", calibration=cal).fit(examples),
                                                          root / f"evidence-lr-{cal}")
    return folders


def _plant(good, tmp_path, name):
    marker = tmp_path / "PWNED"
    folder = tmp_path / "model"
    node, files = _payloads(marker, folder)[name]
    for path, blob in files.items():
        path.write_bytes(blob)
    _crafted(good, folder, lambda s, m: _add_attribute(s, "payload_", node))
    return folder, marker


# ---------------------------------------------------------------------------------------------- the allow-list
def test_trusted_types_are_exactly_what_evqual_saves(every_method):
    """Derived from every method's saved file, both ways: nothing missing, nothing trusted that is unused."""
    found = set()
    for folder in every_method.values():
        found |= _schema_types(_read(folder)[0])
    assert found - TRUSTED_TYPES == set(), "evqual saves types its loader would refuse"
    assert TRUSTED_TYPES - found == set(), "the allow-list trusts types evqual never saves"
    for name, loader in TRUSTED_TYPES:
        assert loader not in ("FunctionNode", "MethodNode", "ConstructorFromReduceNode", "ReduceNode",
                              "OperatorFuncNode", "PartialNode"), (name, loader)
        assert not (name.startswith("builtins.") and loader not in ("DictNode", "ListNode", "TupleNode",
                                                                     "JsonNode", "TypeNode")), name
        assert "load" not in name.rsplit(".", 1)[1].lower(), name


def test_every_saved_method_loads_and_predicts_as_saved(every_method):
    examples = load_sample()[:8]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, folder in every_method.items():
            det = load_detector(folder)
            risk = det.predict_proba(examples)
            assert np.isfinite(risk).all() and ((0 <= risk) & (risk <= 1)).all(), name


def test_models_package_no_longer_trusts_by_prefix():
    import evqual.models as models

    assert not hasattr(models, "TRUSTED_PREFIXES")
    assert all(isinstance(t, tuple) and len(t) == 2 for t in TRUSTED_TYPES)


# ---------------------------------------------------------------------------------------------- payloads
@pytest.mark.parametrize("name", LIVE)
def test_payload_is_live_without_evqual_checks(good, tmp_path, name):
    """The crafted files are real attacks: skops trusting their types runs the payload (so the refusals
    below test something)."""
    import skops.io as sio

    folder, marker = _plant(good, tmp_path, name)
    data = (folder / "model.skops").read_bytes()
    assert not marker.exists()
    try:
        sio.load(io.BytesIO(data), trusted=sio.get_untrusted_types(data=data))
    except Exception:  # noqa: BLE001 - some payloads fail after running (the Detector gets a junk attribute)
        pass
    assert marker.exists(), f"the {name} payload did not run: the crafted file is not a real attack"


@pytest.mark.parametrize("name", PAYLOADS)
def test_crafted_payload_is_refused_before_anything_runs(good, tmp_path, name):
    folder, marker = _plant(good, tmp_path, name)
    with pytest.raises(ModelLoadError) as info:
        load_detector(folder)
    msg = str(info.value)
    assert str(folder / "model.skops") in msg and "allow-list" in msg and "payload_" in msg
    assert not marker.exists(), f"the {name} payload ran"


@pytest.mark.parametrize("name", ["exec", "numpy.load"])
def test_crafted_payload_is_refused_even_when_pinned(good, tmp_path, name):
    """A pin says which file was approved; the allow-list still holds for a file pinned by mistake."""
    folder, marker = _plant(good, tmp_path, name)
    pin = hashlib.sha256((folder / "model.skops").read_bytes()).hexdigest()
    with pytest.raises(ModelLoadError, match="allow-list"):
        load_detector(folder, sha256=pin)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["exec", "open", "os.system"])
def test_cli_refuses_crafted_model_with_exit_2_and_one_line(good, tmp_path, capsys, name):
    folder, marker = _plant(good, tmp_path, name)
    status = main(["score", "--model", str(folder), "--out", str(tmp_path / "out.jsonl"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err and "cannot load model" in err
    assert not marker.exists()


def test_cli_subprocess_refuses_crafted_model(good, tmp_path):
    """Through the installed entry point too: exit 2, one line on stderr, no traceback, no payload."""
    folder, marker = _plant(good, tmp_path, "eval")
    proc = subprocess.run([sys.executable, "-m", "evqual.cli", "score", "--model", str(folder), "--out",
                           str(tmp_path / "out.jsonl"), "--no-progress"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert not marker.exists() and not (tmp_path / "out.jsonl").exists()


def test_payload_hidden_deep_inside_a_nested_estimator_is_refused(good, tmp_path):
    marker = tmp_path / "PWNED"

    def mutate(schema, members):
        builder = schema["content"]["content"]["builder_"]
        _add_attribute(builder, "payload", _reduce_node("builtins", "exec", f"open({str(marker)!r}, 'w')"))

    folder = _crafted(good, tmp_path / "model", mutate)
    with pytest.raises(ModelLoadError, match="builder_.*allow-list"):
        load_detector(folder)
    assert not marker.exists()


def test_trusted_class_name_with_a_dangerous_loader_is_refused(good, tmp_path):
    """A trusted name under another loader (a str 'constructed' from a reduce) is refused."""
    node = _reduce_node("builtins", "str", "x")
    folder = _crafted(good, tmp_path / "model", lambda s, m: _add_attribute(s, "payload_", node))
    with pytest.raises(ModelLoadError, match="ConstructorFromReduceNode"):
        load_detector(folder)


# ---------------------------------------------------------------------------------------------- pinning
def _sha(folder):
    return hashlib.sha256((folder / "model.skops").read_bytes()).hexdigest()


def test_pinned_sha256_loads_the_approved_file(good):
    pin = _sha(good)
    assert load_detector(good, sha256=pin).method == "nli-proxy"
    assert load_detector(good, sha256=pin.upper()).method == "nli-proxy"
    assert Detector.load(good, sha256=pin).method == "nli-proxy"


def test_pin_mismatch_is_refused_before_meta_json_is_read(good, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(good, folder)
    (folder / "meta.json").write_text("[" * 100_000)  # would fail validation if it were read first
    with pytest.raises(ModelLoadError, match=r"does not match the expected 0{64} \(from sha256\)"):
        load_detector(folder, sha256="0" * 64)


def test_pin_mismatch_on_an_attacker_file_with_a_matching_meta_json(good, tmp_path):
    folder, marker = _plant(good, tmp_path, "exec")
    with pytest.raises(ModelLoadError, match="does not match the expected"):
        Detector.load(folder, sha256=_sha(good))
    assert not marker.exists()


def test_pin_from_environment(good, monkeypatch):
    monkeypatch.setenv(MODEL_SHA256_ENV, "f" * 64)
    with pytest.raises(ModelLoadError, match=r"\$EVQUAL_MODEL_SHA256"):
        load_detector(good)
    monkeypatch.setenv(MODEL_SHA256_ENV, _sha(good))
    assert load_detector(good).method == "nli-proxy"
    # an explicit pin wins over the environment
    monkeypatch.setenv(MODEL_SHA256_ENV, "f" * 64)
    assert load_detector(good, sha256=_sha(good)).method == "nli-proxy"


@pytest.mark.parametrize("bad", ["abc", "g" * 64, "0" * 63, 12])
def test_malformed_pin_is_refused(good, monkeypatch, bad):
    with pytest.raises(ModelLoadError, match="64 hexadecimal"):
        load_detector(good, sha256=bad)
    if isinstance(bad, str):
        monkeypatch.setenv(MODEL_SHA256_ENV, bad)
        with pytest.raises(ModelLoadError, match="64 hexadecimal"):
            load_detector(good)


@pytest.mark.parametrize("command", ["score", "predict", "explain"])
def test_cli_model_sha256(good, tmp_path, capsys, command):
    data = str(REPO / "tests" / "fixtures" / "generic.jsonl")
    out = tmp_path / ("out.csv" if command == "predict" else "out.jsonl")
    args = {"score": ["score", data, "--out", str(out), "--no-progress"],
            "predict": ["predict", "--data", data, "--out", str(out)],
            "explain": ["explain", data, "--html", str(tmp_path / "r.html")]}[command]
    assert main(args + ["--model", str(good), "--model-sha256", "0" * 64]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not match the expected" in err and "Traceback" not in err
    assert main(args + ["--model", str(good), "--model-sha256", _sha(good)]) in (0, 1)
    capsys.readouterr()
    # argparse: a malformed pin is a usage error
    assert main(args + ["--model", str(good), "--model-sha256", "xyz"]) == 2
    assert "64 hexadecimal" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- malformed zips
def _raw(good, tmp_path, data: bytes, fix_meta=True):
    folder = tmp_path / "model"
    shutil.copytree(good, folder)
    _write_model(folder, data, fix_meta=fix_meta)
    return folder


@pytest.mark.parametrize("case, match", [
    ("empty", "not a valid skops file \\(a zip archive"),
    ("truncated", "not a valid skops file \\(a zip archive"),
    ("garbage", "not a valid skops file \\(a zip archive"),
    ("no schema", "schema.json is missing"),
    ("schema not json", "schema.json cannot be read"),
    ("schema a list", "must hold a JSON object"),
    ("unexpected member", "unexpected member .* in a skops file"),
    ("unreferenced member", "not referenced"),
    ("missing npy", "is missing"),
    ("object npy", "object arrays"),
    ("short npy", "does not match its size"),
])
def test_malformed_zip_is_refused(good, tmp_path, case, match):
    data = (good / "model.skops").read_bytes()
    schema, members = _read(good)
    first_npy = sorted(members)[0]
    if case == "empty":
        blob = b""
    elif case == "truncated":
        blob = data[: len(data) // 2]
    elif case == "garbage":
        blob = os.urandom(4096)
    elif case == "no schema":
        blob = _zip({}, members)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for n, b in members.items():
                zf.writestr(n, b)
        blob = buf.getvalue()
    elif case == "schema not json":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("schema.json", "{not json")
        blob = buf.getvalue()
    elif case == "schema a list":
        blob = _zip([], members)
    elif case == "unexpected member":
        blob = _zip(schema, {**members, "evil.pkl": b"x"})
    elif case == "unreferenced member":
        blob = _zip(schema, {**members, "999.npy": members[first_npy]})
    elif case == "missing npy":
        blob = _zip(schema, {k: v for k, v in members.items() if k != first_npy})
    elif case == "object npy":
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        blob = _zip(schema, {**members, first_npy: buf.getvalue()})
    else:  # short npy
        blob = _zip(schema, {**members, first_npy: members[first_npy][:-8]})
    folder = _raw(good, tmp_path, blob)
    with pytest.raises(ModelLoadError, match=match) as info:
        load_detector(folder)
    assert str(folder / "model.skops") in str(info.value)


def test_zip_bomb_is_refused_before_decompressing(good, tmp_path, monkeypatch):
    import evqual.models._audit as model_io

    schema, members = _read(good)
    data = _zip(schema, members)
    monkeypatch.setattr(model_io, "MAX_UNCOMPRESSED_BYTES", 1000)
    folder = _raw(good, tmp_path, data)
    with pytest.raises(ModelLoadError, match="would uncompress to"):
        load_detector(folder)


def test_real_zip_bomb_is_refused(good, tmp_path):
    """A member that inflates to 600 MB (from under a megabyte) is refused from the zip directory alone."""
    schema, members = _read(good)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for n, b in members.items():
            zf.writestr(n, b)
        zf.writestr("schema.json", json.dumps(schema))
        with zf.open("0000.npy", "w") as fh:
            block = bytes(1 << 20)
            for _ in range(600):
                fh.write(block)
    folder = _raw(good, tmp_path, buf.getvalue())
    with pytest.raises(ModelLoadError, match="would uncompress to"):
        load_detector(folder)


def test_oversized_model_file_is_refused(good, tmp_path, monkeypatch):
    import evqual.models._audit as model_io

    monkeypatch.setattr(model_io, "MAX_MODEL_BYTES", 100)
    with pytest.raises(ModelLoadError, match="larger than 100 bytes"):
        load_detector(good)


# ---------------------------------------------------------------------------------------------- malformed schemas
def _deep(schema, members, depth=200):
    node = _literal(1)
    for _ in range(depth):
        node = {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode", "content": [node],
                "__id__": next(_IDS)}
    _add_attribute(schema, "deep_", node)


def _set_root(schema, members):
    schema["__class__"], schema["__module__"], schema["__loader__"] = "dict", "builtins", "DictNode"


def _attr(name, node):
    def mutate(schema, members):
        schema["content"]["content"][name] = node
    return mutate


@pytest.mark.parametrize("mutate, match", [
    (lambda s, m: s.update(protocol=99), "unknown skops protocol 99"),
    (lambda s, m: s.update(protocol="2"), "unknown skops protocol"),
    (lambda s, m: s.pop("protocol"), "unknown skops protocol"),
    (lambda s, m: _add_attribute(s, "x_", {**_literal(1), "__loader__": "EvilNode"}), "EvilNode"),
    (lambda s, m: _add_attribute(s, "x_", {"__loader__": "JsonNode"}), "needs string"),
    (lambda s, m: _add_attribute(s, "x_", [1, 2]), "expected a skops node"),
    (lambda s, m: _add_attribute(s, "x_", {**_literal(1), "content": "[[[1]]]"}), "must be a scalar"),
    (lambda s, m: _add_attribute(s, "x_", {**_literal(1), "extra": 1}), "unexpected field 'extra'"),
    (_set_root, "root must be an evqual.models.Detector"),
    (_deep, "nested deeper than 64"),
    (lambda s, m: s["content"]["key_types"]["content"].pop(), "one key type per key"),
])
def test_malformed_schema_is_refused(good, tmp_path, mutate, match):
    folder = _crafted(good, tmp_path / "model", mutate)
    with pytest.raises(ModelLoadError, match=match) as info:
        load_detector(folder)
    assert str(folder / "model.skops") in str(info.value)


def test_very_deep_schema_json_is_refused_without_recursion_error(good, tmp_path):
    schema, members = _read(good)
    text = json.dumps(schema)
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, b in members.items():
            zf.writestr(n, b)
        zf.writestr("schema.json", text[:-1] + ', "deep": ' + "[" * 200_000 + "]" * 200_000 + "}")
    folder = _raw(good, tmp_path, blob.getvalue())
    with pytest.raises(ModelLoadError, match="schema.json"):
        load_detector(folder)


def test_reference_cycle_is_refused(good, tmp_path):
    def mutate(schema, members):
        builder = schema["content"]["content"]["builder_"]
        _add_attribute(builder, "loop", {"__class__": "FrameBuilder", "__module__": "evqual.models._frame",
                                         "__loader__": "ObjectNode", "__id__": builder["__id__"],
                                         "content": copy.deepcopy(builder["content"])})

    folder = _crafted(good, tmp_path / "model", mutate)
    with pytest.raises(ModelLoadError, match="cycle"):
        load_detector(folder)


# ---------------------------------------------------------------------------------------------- after loading
@pytest.mark.parametrize("mutate, match", [
    (_attr("threshold_", _literal("high")), "threshold_.*finite number"),
    (_attr("threshold_", _literal(7.5)), "threshold_.*finite number"),
    (_attr("method", _literal("evil")), "'method' must be one of"),
    (_attr("entity_backend", _literal("spacy")), "meta.json says"),
    (_attr("builder_", _literal(None)), "builder_' must be a FrameBuilder"),
    (_attr("n_train_", _literal(-3)), "n_train_' must be a non-negative integer"),
    (lambda s, m: s["content"]["content"].update(
        model_=dict(s["content"]["content"]["model_"], __class__="DummyClassifier", __module__="sklearn.dummy")),
     "model_' must be a SentenceMaxClassifier"),
])
def test_wrong_attribute_types_are_refused(good, tmp_path, mutate, match):
    folder = _crafted(good, tmp_path / "model", mutate)
    with pytest.raises(ModelLoadError, match=match) as info:
        load_detector(folder)
    assert str(folder / "model.skops") in str(info.value)


def _break_first_tree(folder: Path, field_left: str) -> Path:
    """Point the first inner node's left child of the first tree far outside the node array."""
    schema, members = _read(folder)
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            content = node.get("content")
            if isinstance(content, dict) and isinstance(content.get("content"), dict) and \
                    "nodes" in content["content"]:
                file = content["content"]["nodes"].get("file")
                arr = np.load(io.BytesIO(members[file]), allow_pickle=False)
                if field_left in arr.dtype.names:
                    arr = arr.copy()
                    inner = np.flatnonzero(arr[field_left] > 0)
                    arr[field_left][inner[0]] = 10**6
                    buf = io.BytesIO()
                    np.save(buf, arr, allow_pickle=False)
                    members[file] = buf.getvalue()
                    _write_model(folder, _zip(schema, members))
                    return folder
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise AssertionError("no tree found")


@pytest.mark.parametrize("method, field", [("random-forest", "left_child"), ("evqual", "left")])
def test_tree_with_out_of_range_child_is_refused(every_method, tmp_path, method, field):
    folder = tmp_path / "model"
    shutil.copytree(every_method[method], folder)
    _break_first_tree(folder, field)
    with pytest.raises(ModelLoadError, match=r"children \(1000000"):
        load_detector(folder)


# ---------------------------------------------------------------------------------------------- meta.json
def _meta(good, tmp_path, mutate=None, text=None):
    folder = tmp_path / "model"
    shutil.copytree(good, folder)
    if text is None:
        meta = json.loads((folder / "meta.json").read_text())
        mutate(meta)
        text = json.dumps(meta)  # NaN and Infinity are written as JSON extensions, as an attacker could
    (folder / "meta.json").write_text(text)
    return folder


@pytest.mark.parametrize("mutate, match", [
    (lambda m: m.update(threshold=math.nan), "'threshold' must be a finite number"),
    (lambda m: m.update(threshold=math.inf), "'threshold' must be a finite number"),
    (lambda m: m.update(threshold=1.5), "'threshold' must be a finite number"),
    (lambda m: m.update(threshold=-0.1), "'threshold' must be a finite number"),
    (lambda m: m.update(threshold=True), "'threshold' has the wrong type"),
    (lambda m: m.update(sentence_threshold=math.nan), "'sentence_threshold' must be a finite"),
    (lambda m: m.update(sentence_threshold=2), "'sentence_threshold' must be a finite"),
    (lambda m: m.update(span_tagger={"threshold": math.nan, "gate": 0, "token_features": []}),
     "'span_tagger.threshold'"),
    (lambda m: m.update(span_tagger={"threshold": 0.5, "gate": -1, "token_features": []}), "'span_tagger.gate'"),
    (lambda m: m.update(span_tagger=[1]), "'span_tagger' must be an object"),
    (lambda m: m.update(method="evil"), "'method' must be one of"),
    (lambda m: m.update(entity_backend="gpt"), "'entity_backend' must be one of"),
    (lambda m: m.update(calibration="magic"), "'calibration' must be one of"),
    (lambda m: m.update(response_features=[]), "'response_features' is empty"),
    (lambda m: m.update(sentence_features=[]), "'sentence_features' is empty"),
    (lambda m: m.update(response_features=[1, 2]), "'response_features' must be a list of feature names"),
    (lambda m: m.update(model_sha256="abc"), "'model_sha256' must be a SHA-256"),
    (lambda m: m.update(numpy_version=2), "'numpy_version' must be a string"),
    (lambda m: m.update(prediction_fingerprint={"sha256": "x"}), "prediction_fingerprint.sha256"),
])
def test_malformed_meta_values_are_refused(good, tmp_path, mutate, match):
    folder = _meta(good, tmp_path, mutate)
    with pytest.raises(ModelLoadError, match=match) as info:
        load_detector(folder)
    assert str(folder / "meta.json") in str(info.value)
    with pytest.raises(ModelLoadError, match=match):
        read_meta(folder)


@pytest.mark.parametrize("text, match", [
    ("[" * 100_000 + "]" * 100_000, "not valid JSON|must hold a JSON object"),
    ('{"a": ' * 50_000 + "1" + "}" * 50_000, "not valid JSON|is missing"),
    ("", "not valid JSON"),
    ("\xff", "not valid JSON"),
    ("[]", "must hold a JSON object"),
])
def test_malformed_meta_json_is_refused_without_a_traceback(good, tmp_path, text, match):
    folder = _meta(good, tmp_path, text=text)
    with pytest.raises(ModelLoadError, match=match):
        load_detector(folder)


def test_empty_feature_list_no_longer_skips_the_feature_version_check(good, tmp_path, capsys):
    folder = _meta(good, tmp_path, lambda m: m.update(response_features=[], sentence_features=[]))
    assert main(["score", "--model", str(folder), "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is empty" in err and str(folder / "meta.json") in err


def test_featurizers_must_compute_the_features_meta_json_lists(good, tmp_path):
    def mutate(meta):
        meta["response_features"] = meta["response_features"][:-1]

    folder = _meta(good, tmp_path, mutate)
    with pytest.raises(ModelLoadError, match="other features than meta.json field 'response_features'"):
        load_detector(folder)


# ---------------------------------------------------------------------------------------------- reproducible files
def test_saving_twice_gives_the_same_bytes(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("evidence-lr").fit(load_sample())
    a = save_detector(det, tmp_path / "a")
    b = save_detector(det, tmp_path / "b")
    assert (a / "model.skops").read_bytes() == (b / "model.skops").read_bytes()
    ma, mb = read_meta(a), read_meta(b)
    assert ma["prediction_fingerprint"] == mb["prediction_fingerprint"]
    for key in ("numpy_version", "scipy_version", "sklearn_version", "skops_version"):
        assert isinstance(ma[key], str) and ma[key]
