"""Hardening, second round (issue 21), section 1: model files.

Grouped by attack so that the next round can extend each group.  Every crafted
file is built here from a small model fitted on the embedded sample (no
committed binaries); each case is shown to be refused with a
:class:`ModelLoadError` naming the file, or with exit status 2 and one line on
the command line, instead of crashing, hanging, or reading memory out of bounds.
Cases that would crash the interpreter on the code before the fix run in a
subprocess with a time limit, so that a regression fails the test instead of
killing the test run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from evqual.data import load_sample
from evqual.models import Detector, ModelLoadError, load_detector
from test_model_security import _read, _zip, save_detector  # skops files (these tests craft skops schemas)

REPO = Path(__file__).resolve().parents[1]
_IDS = iter(range(5_000_000, 10**9))


# ---------------------------------------------------------------------------------------------- crafting helpers
def read_zip(path: Path):
    return _read(path.parent)  # the helpers of the first round's model tests


write_zip = _zip


def install(folder: Path, data: bytes, meta_key: str = "model_sha256") -> None:
    """Replace ``model.skops`` and, as an attacker can, the hash ``meta.json`` records."""
    (folder / "model.skops").write_bytes(data)
    meta = json.loads((folder / "meta.json").read_text())
    meta[meta_key] = hashlib.sha256(data).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))


def craft(src: Path, dst: Path, mutate) -> Path:
    """A copy of the model folder ``src`` whose ``(schema, members)`` ``mutate`` changed in place."""
    shutil.copytree(src, dst)
    schema, members = read_zip(dst / "model.skops")
    mutate(schema, members)
    install(dst, write_zip(schema, members))
    return dst


def literal(value):
    return {"__class__": "str", "__module__": "builtins", "__loader__": "JsonNode", "content": json.dumps(value),
            "is_json": True, "__id__": next(_IDS)}


def nodes_where(schema, pred):
    """Every schema node (dict) for which ``pred(node)`` holds, in document order."""
    out, stack = [], [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "__loader__" in node and pred(node):
                out.append(node)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return out


def load_npy(members, node):
    return np.load(io.BytesIO(members[node["file"]]), allow_pickle=False)


def store_npy(members, node, arr) -> None:
    """Overwrite the ``.npy`` member a node names (every node naming it sees the new array)."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    members[node["file"]] = buf.getvalue()


def trees(schema):
    return nodes_where(schema, lambda n: n.get("__loader__") == "TreeNode")


def predictors(schema):
    return nodes_where(schema, lambda n: n.get("__class__") == "TreePredictor")


def object_attrs(node) -> dict:
    return node["content"]["content"]


def run_cli(*args, env=None, timeout=120):
    """``python -m evqual ARGS`` in a subprocess: (exit status, stdout, stderr); a hang fails the test."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "evqual", *args], capture_output=True, text=True, cwd=REPO,
                          env=full_env, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def assert_refused(folder, match: str) -> None:
    """``load_detector(folder)`` raises a :class:`ModelLoadError` whose message matches ``match``."""
    with pytest.raises(ModelLoadError, match=match):
        load_detector(folder)


def assert_refused_in_subprocess(folder, match: str, timeout: float = 60.0) -> None:
    """``load_detector(folder)`` in a fresh process with a time limit: refused with ``match`` in the message (a
    regression that hangs or crashes fails this test instead of the test run)."""
    code = ("import sys\nfrom evqual.models import ModelLoadError, load_detector\n"
            "try:\n    load_detector(sys.argv[1])\nexcept ModelLoadError as e:\n    print('REFUSED', e)\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {folder} did not finish in {timeout:g} s")
    assert "REFUSED" in proc.stdout and match in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def models(tmp_path_factory, evqual_sample_detector):
    """Small detectors of the methods whose compiled predictors the attacks target, and a claim model."""
    from evqual.verify import ClaimExtractor, ClaimModel, claim_dataset, save_claim_model

    root = tmp_path_factory.mktemp("hardening2")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sample = load_sample()
        for method in ("semantic-eq-gb", "random-forest", "evidence-lr", "tfidf-lr"):
            out[method] = save_detector(Detector(method).fit(sample), root / method)
        out["evqual"] = save_detector(evqual_sample_detector, root / "evqual")
        X, y, owner, _ = claim_dataset(sample, ClaimExtractor())
        out["claims"] = save_claim_model(ClaimModel(max_iter=15).fit(X, y, groups=owner), root / "claims")
    return out


def _claim_copy(models, tmp_path, mutate):
    return craft(models["claims"], tmp_path / "claims", mutate)


def _verify_input(tmp_path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps({"query": "When did it open?", "context": ["The bridge opened in 1937."],
                                          "output": f"The bridge opened in {1930 + i}."}) for i in range(3)) + "\n")
    return path


# ---------------------------------------------------------------------------------------------- attack: claim model trees
def _hgb_first_inner(schema, members, field, value):
    pred = predictors(schema)[0]
    nodes_node = object_attrs(pred)["nodes"]
    arr = load_npy(members, nodes_node).copy()
    inner = np.flatnonzero(arr["is_leaf"] == 0)
    arr[field][inner[0]] = value
    store_npy(members, nodes_node, arr)


@pytest.mark.parametrize("field, value, match", [
    ("feature_idx", 50_000_000, r"splits on feature 50000000"),
    ("left", 2**31 - 1, r"has children \(2147483647"),
    ("right", 0, r"has children \(\d+, 0\)"),  # back to the root: a walk that never ends
])
def test_claim_model_tree_attacks_are_refused_at_load(models, tmp_path, field, value, match):
    from evqual.verify import load_claim_model

    folder = _claim_copy(models, tmp_path, lambda s, m: _hgb_first_inner(s, m, field, value))
    with pytest.raises(ModelLoadError, match=match) as info:
        load_claim_model(folder)
    assert str(folder / "model.skops") in str(info.value)


def test_claim_model_tree_attack_gives_exit_2_not_a_segfault(models, tmp_path):
    folder = _claim_copy(models, tmp_path, lambda s, m: _hgb_first_inner(s, m, "feature_idx", 50_000_000))
    code, out, err = run_cli("verify", str(_verify_input(tmp_path)), "--out", str(tmp_path / "o.jsonl"),
                             env={"EVQUAL_CLAIM_MODEL": str(folder)})
    assert code == 2, (code, err)
    assert "splits on feature 50000000" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_claim_meta_json_that_is_not_a_small_regular_file_is_refused(models, tmp_path, kind):
    from evqual.verify import load_claim_model

    folder = tmp_path / "claims"
    shutil.copytree(models["claims"], folder)
    meta = folder / "meta.json"
    meta.unlink()
    if kind == "fifo":
        os.mkfifo(meta)
        match = "not a regular file"
    elif kind == "dev-zero":
        meta.symlink_to("/dev/zero")
        match = "not a regular file"
    else:
        with open(meta, "wb") as fh:  # sparse: 1 GB declared, nothing written
            fh.truncate(2**30)
        match = "larger than"
    # in a subprocess with a time limit: on the code before the fix the FIFO blocked forever
    code = ("import sys\nfrom evqual.models import ModelLoadError\nfrom evqual.verify import load_claim_model\n"
            "try:\n    load_claim_model(sys.argv[1])\nexcept ModelLoadError as e:\n    print('REFUSED', e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=60)
    assert "REFUSED" in proc.stdout and match in proc.stdout, proc.stdout + proc.stderr
    assert load_claim_model is not None


def test_claim_model_is_loaded_once_per_process(models, tmp_path, monkeypatch):
    import evqual.verify._claim_model as cm
    from evqual.verify import load_claim_model

    folder = tmp_path / "claims"
    shutil.copytree(models["claims"], folder)
    import evqual.models as em

    calls = []

    original = em.load_trusted

    def counting(*a, **k):
        calls.append(1)
        return original(*a, **k)

    monkeypatch.setattr(em, "load_trusted", counting)
    assert not hasattr(cm, "load_trusted")  # imported at call time from evqual.models
    first = load_claim_model(folder)
    assert load_claim_model(folder) is first
    assert len(calls) == 1


def test_a_refused_claim_model_is_not_read_again_for_every_answer(models, tmp_path, monkeypatch):
    import evqual.models as em
    from evqual.verify import ClaimVerifier, RulesJudge

    # refused: meta.json records another SHA-256 (a corrupted or replaced file)
    folder = tmp_path / "claims"
    shutil.copytree(models["claims"], folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = "0" * 64
    (folder / "meta.json").write_text(json.dumps(meta))
    calls = []
    original = em.load_trusted

    def counting(*a, **k):
        calls.append(1)
        return original(*a, **k)

    monkeypatch.setattr(em, "load_trusted", counting)
    verifier = ClaimVerifier(judge=RulesJudge(str(folder)))
    results = [verifier.verify(query="q", context=["The bridge opened in 1937."], output="It opened in 1937.")
               for _ in range(4)]
    assert all(r.error for r in results)
    assert len(calls) == 1


# ---------------------------------------------------------------------------------------------- attack: arrays the compiled code trusts
def _gb_tree_zero_classes(schema, members):
    """Every stage tree of a gradient-boosting model declares n_classes [0] and holds an empty value array."""
    for tree in trees(schema):
        args = tree["__reduce__"]["args"]["content"]
        store_npy(members, args[1], np.array([0], dtype=np.intp))
        values = object_attrs(tree)["values"]
        arr = load_npy(members, values)
        store_npy(members, values, np.zeros((arr.shape[0], 1, 0)))


def test_gradient_boosting_tree_with_no_classes_is_refused(models, tmp_path):
    folder = craft(models["semantic-eq-gb"], tmp_path / "m", _gb_tree_zero_classes)
    with pytest.raises(ModelLoadError, match=r"declares n_classes \[0\]|value has shape"):
        load_detector(folder)


def test_gradient_boosting_tree_with_no_classes_does_not_read_memory_in_a_subprocess(models, tmp_path):
    folder = craft(models["semantic-eq-gb"], tmp_path / "m", _gb_tree_zero_classes)
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"query": "q", "context": ["The bridge opened in 1937."],
                               "output": "The bridge opened in 1935."}) + "\n")
    code, out, err = run_cli("score", str(inp), "--model", str(folder), "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and "refusing to load" in err, (code, err)


def test_forest_tree_whose_classes_disagree_with_its_value_array_is_refused(models, tmp_path):
    def mutate(schema, members):
        tree = trees(schema)[0]
        store_npy(members, tree["__reduce__"]["args"]["content"][1], np.array([5], dtype=np.intp))
        values = object_attrs(tree)["values"]
        arr = load_npy(members, values)
        store_npy(members, values, np.zeros((arr.shape[0], 1, 5)))

    assert_refused(craft(models["random-forest"], tmp_path / "m", mutate), r"declares n_classes \[5\]")


def test_tree_declaring_a_wrong_depth_is_refused(models, tmp_path):
    def mutate(schema, members):
        attrs = object_attrs(trees(schema)[0])
        attrs["max_depth"] = literal(2**31 - 1)

    assert_refused(craft(models["random-forest"], tmp_path / "m", mutate), "declares depth 2147483647")


def test_boosting_predictor_with_an_unreferenced_deep_leaf_is_refused(models, tmp_path):
    """An unreferenced leaf of depth 2**32-1 appended to a tree made scoring loop that many levels."""
    def mutate(schema, members):
        node = object_attrs(predictors(schema)[0])["nodes"]
        arr = load_npy(members, node)
        extra = arr[-1:].copy()
        extra["is_leaf"] = 1
        extra["depth"] = 2**32 - 1
        store_npy(members, node, np.concatenate([arr, extra]))

    assert_refused(craft(models["evqual"], tmp_path / "m", mutate), "do not form one tree")


def test_boosting_predictor_node_depths_must_be_the_real_ones(models, tmp_path):
    def mutate(schema, members):
        node = object_attrs(predictors(schema)[0])["nodes"]
        arr = load_npy(members, node).copy()
        arr["depth"][arr["is_leaf"] == 1] = 400
        store_npy(members, node, arr)

    assert_refused(craft(models["evqual"], tmp_path / "m", mutate), "node depths do not follow the tree")


def test_nan_split_threshold_is_refused(models, tmp_path):
    def mutate(schema, members):
        node = object_attrs(trees(schema)[0])["nodes"]
        arr = load_npy(members, node).copy()
        arr["threshold"][arr["left_child"] > 0] = np.nan
        store_npy(members, node, arr)

    assert_refused(craft(models["random-forest"], tmp_path / "m", mutate), "not finite")


def test_nan_baseline_of_the_sentence_model_is_refused(models, tmp_path):
    """A NaN baseline made every risk NaN: written as "risk": NaN, or an audit-log stop blamed on the disk."""
    def mutate(schema, members):
        hgb = nodes_where(schema, lambda n: n.get("__class__") == "HistGradientBoostingClassifier"
                          and "_baseline_prediction" in (n.get("content") or {}).get("content", {}))[0]
        node = object_attrs(hgb)["_baseline_prediction"]
        store_npy(members, node, np.full(load_npy(members, node).shape, np.nan))

    assert_refused(craft(models["evqual"], tmp_path / "m", mutate), "not finite")


def test_negative_column_index_is_refused(models, tmp_path):
    def mutate(schema, members):
        sm = nodes_where(schema, lambda n: n.get("__class__") == "SentenceMaxClassifier"
                         and "columns_" in (n.get("content") or {}).get("content", {}))[0]
        cols = object_attrs(sm)["columns_"]
        if cols.get("__loader__") == "NdArrayNode":
            arr = load_npy(members, cols).copy()
            arr[0] = -1
            store_npy(members, cols, arr)
        else:
            cols["content"][0] = literal(-1)

    assert_refused(craft(models["evqual"], tmp_path / "m", mutate), r"columns_: must be distinct positions")


def test_extra_attribute_on_the_detector_is_refused(models, tmp_path):
    def mutate(schema, members):
        attrs = schema["content"]
        attrs["content"]["surprise_"] = literal(1)
        attrs["key_types"]["content"].append({"__class__": "str", "__module__": "builtins",
                                              "__loader__": "TypeNode", "__id__": next(_IDS)})

    assert_refused(craft(models["evidence-lr"], tmp_path / "m", mutate), "'surprise_' is not one a Detector has")


def test_swapped_token_pattern_is_refused(models, tmp_path):
    """A vectoriser parameter other than the factory's (here a catastrophic-backtracking pattern)."""
    def mutate(schema, members):
        vec = nodes_where(schema, lambda n: n.get("__class__") == "CompactTfidfVectorizer")[0]
        object_attrs(vec)["token_pattern"] = literal("(a+)+$")

    assert_refused(craft(models["tfidf-lr"], tmp_path / "m", mutate), "token_pattern")


def test_vocabulary_index_past_the_idf_vector_is_refused(models, tmp_path):
    def mutate(schema, members):
        vec = nodes_where(schema, lambda n: n.get("__class__") == "CompactTfidfVectorizer"
                          and "_tfidf" in object_attrs(n))[0]
        tfidf = object_attrs(vec)["_tfidf"]
        idf = object_attrs(tfidf)["idf_"]
        store_npy(members, idf, load_npy(members, idf)[:3].copy())

    assert_refused(craft(models["tfidf-lr"], tmp_path / "m", mutate), "one value per vocabulary term")


# ---------------------------------------------------------------------------------------------- attack: unbounded work at load
def test_seed_sequence_with_a_huge_pool_is_refused_before_construction(models, tmp_path):
    def mutate(schema, members):
        gen = nodes_where(schema, lambda n: n.get("__loader__") == "RandomGeneratorNode")[0]
        gen["content"]["seed_seq"]["content"]["pool_size"] = literal(10**7)

    folder = craft(models["evqual"], tmp_path / "m", mutate)
    assert_refused_in_subprocess(folder, "pool_size must be 4")  # the code before the fix hung here


def test_seed_sequence_with_long_entropy_is_refused(models, tmp_path):
    def mutate(schema, members):
        gen = nodes_where(schema, lambda n: n.get("__loader__") == "RandomGeneratorNode")[0]
        gen["content"]["seed_seq"]["content"]["entropy"] = literal(2**100_00 - 1)

    folder = craft(models["evqual"], tmp_path / "m", mutate)
    assert_refused_in_subprocess(folder, "entropy must be null or an integer")


# ---------------------------------------------------------------------------------------------- attack: the zip and the schema
def _raw_zip(entries) -> bytes:
    """A zip written by hand: ``entries`` of ``(name, compressed bytes, method, declared size, crc)``."""
    out, central = io.BytesIO(), []
    for name, blob, method, size, crc in entries:
        offset = out.tell()
        fname = name.encode()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(blob), size,
                              len(fname), 0) + fname + blob)
        central.append(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(blob),
                                   size, len(fname), 0, 0, 0, 0, 0o644 << 16, offset) + fname)
    start = out.tell()
    for c in central:
        out.write(c)
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central), out.tell() - start,
                          start, 0))
    return out.getvalue()


def _deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def test_member_that_inflates_past_its_declared_size_is_refused_while_streaming(models, tmp_path):
    """``schema.json`` whose deflate stream goes on for 256 MB past the size it declares: zipfile's ``read``
    inflates all of it in one call before cutting it to that size (the old code's peak grew by the 256 MB and
    the model loaded); now the member is refused after one chunk past its size."""
    schema, members = read_zip(models["evidence-lr"] / "model.skops")
    entries = [(n, _deflate(b), zipfile.ZIP_DEFLATED, len(b), zlib.crc32(b)) for n, b in members.items()]
    real = json.dumps(schema).encode()
    bomb = real + b" " * (256 * 2**20)
    entries.append(("schema.json", _deflate(bomb), zipfile.ZIP_DEFLATED, len(real), zlib.crc32(real)))
    folder = tmp_path / "m"
    shutil.copytree(models["evidence-lr"], folder)
    install(folder, _raw_zip(entries))
    del bomb, entries
    # the child's own peak (VmHWM of its memory map: ru_maxrss would start at this process's peak after exec)
    code = ("import sys\n"
            "import skops.io, sklearn.ensemble\n"
            "from evqual.models import load_detector, ModelLoadError\n"
            "def peak():\n"
            "    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])\n"
            "before = peak()\n"
            "try:\n    load_detector(sys.argv[1])\nexcept ModelLoadError as e:\n    print('REFUSED', e)\n"
            "print('GROWTH_KB', peak() - before)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=300)
    assert "REFUSED" in proc.stdout and f"more than the {len(real)} bytes it declares" in proc.stdout, \
        proc.stdout + proc.stderr
    growth_kb = int(proc.stdout.split("GROWTH_KB")[1])
    assert growth_kb < 100_000, growth_kb  # the 256 MB never materialised: the peak grew by less than 100 MB


def test_member_whose_stream_ends_early_or_has_a_wrong_crc_is_refused(models, tmp_path):
    schema, members = read_zip(models["evidence-lr"] / "model.skops")
    name = sorted(members)[0]
    blob = members[name]
    for entry, match in [((name, _deflate(blob)[:-4], zipfile.ZIP_DEFLATED, len(blob), zlib.crc32(blob)),
                          "cut short|inflates to"),
                         ((name, _deflate(blob), zipfile.ZIP_DEFLATED, len(blob), zlib.crc32(blob) ^ 1), "CRC")]:
        entries = [(n, _deflate(b), zipfile.ZIP_DEFLATED, len(b), zlib.crc32(b)) for n, b in members.items()
                   if n != name]
        raw_schema = json.dumps(schema).encode()
        entries += [entry, ("schema.json", _deflate(raw_schema), zipfile.ZIP_DEFLATED, len(raw_schema),
                            zlib.crc32(raw_schema))]
        folder = tmp_path / f"m{len(match)}"
        shutil.copytree(models["evidence-lr"], folder)
        install(folder, _raw_zip(entries))
        with pytest.raises(ModelLoadError, match=match):
            load_detector(folder)


def test_schema_with_millions_of_objects_is_refused_before_parsing(models, tmp_path):
    """A few MB of ``{}`` used to take gigabytes and a minute before a clean refusal."""
    schema, members = read_zip(models["evidence-lr"] / "model.skops")
    filler = "[" + ",".join(["{}"] * 3_000_000) + "]"
    raw = json.dumps(schema)[:-1] + ', "padding": ' + filler + "}"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, b in members.items():
            zf.writestr(n, b)
        zf.writestr("schema.json", raw)
    folder = tmp_path / "m"
    shutil.copytree(models["evidence-lr"], folder)
    install(folder, buf.getvalue())
    with pytest.raises(ModelLoadError, match="more than 250000 objects and arrays"):
        load_detector(folder)


def test_running_out_of_memory_while_loading_is_a_clean_refusal(models, monkeypatch, capsys):
    import skops.io

    from evqual.cli import main

    def oom(*a, **k):
        raise MemoryError

    monkeypatch.setattr(skops.io, "load", oom)
    with pytest.raises(ModelLoadError, match="ran out of memory"):
        load_detector(models["evidence-lr"])
    assert main(["score", "--model", str(models["evidence-lr"])]) == 2
    assert "ran out of memory" in capsys.readouterr().err


def test_memo_id_cannot_make_a_literal_load_as_another_object(models, tmp_path):
    """skops builds a node once per __id__: a JSON literal carrying the sentence model's id loaded as it."""
    def mutate(schema, members):
        sentence = object_attrs(nodes_where(schema, lambda n: n.get("__class__") == "StackedEvidenceClassifier")[0])
        target = sentence["sentence_model_"]["__id__"]
        lit = literal(0)
        lit["__id__"] = target
        # a position before the sentence model in document order, so that skops meets the literal second
        sentence["response_model_"] = lit

    assert_refused(craft(models["evqual"], tmp_path / "m", mutate), "shares its __id__")


def test_the_arrays_of_every_copy_of_a_shared_node_are_checked(models, tmp_path):
    """skops writes a shared object once per place, each copy with its own .npy members, and builds whichever
    copy it meets first; the audit walks one copy, so it must check the other copies' members as well."""
    from evqual.models._audit import _member_names

    def mutate(schema, members):
        by_id: dict = {}
        for node in nodes_where(schema, lambda n: "__id__" in n):
            by_id.setdefault(node["__id__"], []).append(node)
        for copies in by_id.values():
            if len(copies) > 1:
                own = [sorted(_member_names(c)) for c in copies]
                extra = [f for f in own[0] if f not in own[-1]]  # the copy skops builds (first in the document)
                extra = extra or [f for f in own[-1] if f not in own[0]]
                if extra:
                    blob = members[extra[0]]
                    members[extra[0]] = blob[:-8]  # its header now promises 8 bytes more than it holds
                    return
        raise AssertionError("no shared node with arrays of its own")

    folder = craft(models["semantic-eq-gb"], tmp_path / "m", mutate)  # its trees share one RandomState
    with pytest.raises(ModelLoadError, match="does not match its size"):
        load_detector(folder)


def test_every_model_file_goes_through_the_one_audit(models, tmp_path, monkeypatch):
    """The detector and the claim model both pass evqual.models._audit.load_audited."""
    import evqual.models._audit as audit
    import evqual.models._io as io_mod
    from evqual.verify import load_claim_model

    seen = []
    original = audit.load_audited

    def spy(data, path, **kw):
        seen.append(Path(path).parent.name)
        return original(data, path, **kw)

    monkeypatch.setattr(io_mod, "load_audited", spy)
    load_detector(models["evidence-lr"])
    folder = tmp_path / "claims-copy"
    shutil.copytree(models["claims"], folder)
    load_claim_model(folder)
    assert seen == ["evidence-lr", "claims-copy"]
