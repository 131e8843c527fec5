"""Model format 2 (issue 10, section 3): the TF-IDF vocabulary as two flat arrays (fast to audit and load),
meta.json listing only the features the model uses; format 1 files still load."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer

from evqual.data import load_sample
from evqual.models import (META_FORMAT, READ_FORMATS, Detector, ModelLoadError, default_model_path, load_detector,
                           model_features, prediction_fingerprint, read_meta, save_detector)
from evqual.models._estimators import CompactTfidfVectorizer, decode_vocabulary, encode_vocabulary


# ---------------------------------------------------------------------------------------------- the arrays
@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=12), unique=True, max_size=40), st.randoms(use_true_random=False))
def test_vocabulary_arrays_round_trip(terms, rnd):
    columns = list(range(len(terms)))
    rnd.shuffle(columns)
    vocab = dict(zip(terms, columns))
    data, offsets = encode_vocabulary(vocab)
    assert data.dtype == np.uint8 and offsets.dtype == np.int64 and len(offsets) == len(terms) + 1
    assert decode_vocabulary(data, offsets) == vocab


def _u8(b: bytes):
    return np.frombuffer(b, dtype=np.uint8).copy()


@pytest.mark.parametrize("data, offsets, match", [
    (_u8(b"ab"), np.array([0, 1, 2], dtype=np.int32), "offsets_ must be a 1-D int64"),
    (_u8(b"ab"), np.array([], dtype=np.int64), "offsets_ must be a 1-D int64"),
    (np.array([97, 98], dtype=np.int64), np.array([0, 1, 2]), "utf8_ must be a 1-D uint8"),
    ([97, 98], np.array([0, 1, 2]), "utf8_ must be a 1-D uint8"),
    (_u8(b"ab"), np.array([1, 2]), "run from 0"),
    (_u8(b"ab"), np.array([0, 1]), "run from 0"),
    (_u8(b"ab"), np.array([0, 2, 1, 2]), "without decreasing"),
    (_u8(b"ab"), np.array([0, 1, 5]), "run from 0"),
    (_u8(b"\xff\xfe"), np.array([0, 1, 2]), "not valid UTF-8"),
    (_u8(b"aa"), np.array([0, 1, 2]), "holds a term twice"),
    (_u8("éa".encode()), np.array([0, 1, 3]), "not valid UTF-8"),  # a boundary inside a character
    (_u8("aé".encode()), np.array([0, 2, 3]), "not valid UTF-8"),
    (None, np.array([0]), "utf8_ must be"),
])
def test_malformed_vocabulary_arrays_are_refused(data, offsets, match):
    with pytest.raises(ValueError, match=match):
        decode_vocabulary(data, offsets)


def _decode_term_by_term(data, offsets):
    """The reference: each term's bytes decoded alone (what decode_vocabulary did before issue 41)."""
    raw, bounds = data.tobytes(), offsets.tolist()
    vocab = {raw[a:b].decode("utf-8"): i for i, (a, b) in enumerate(zip(bounds, bounds[1:]))}
    if len(vocab) != len(bounds) - 1:
        raise ValueError("twice")
    return vocab


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=6) | st.text(max_size=4).map(str.encode), max_size=8), st.data())
def test_decode_vocabulary_equals_decoding_each_term_alone(pieces, data):
    """The one-pass decode accepts exactly what decoding each term alone accepts, with the same dict (order
    included); pieces of random bytes and cut points inside characters are tried."""
    raw = b"".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    offsets = np.array([0] + cuts + [len(raw)], dtype=np.int64) if raw or cuts else np.array([0], dtype=np.int64)
    arr = _u8(raw)
    try:
        want = _decode_term_by_term(arr, offsets)
    except (UnicodeDecodeError, ValueError):
        with pytest.raises(ValueError):
            decode_vocabulary(arr, offsets)
        return
    got = decode_vocabulary(arr, offsets)
    assert got == want and list(got) == list(want)


def test_encode_refuses_a_vocabulary_that_is_not_a_permutation():
    with pytest.raises(ValueError, match="distinct str terms"):
        encode_vocabulary({"a": 0, "b": 0})
    with pytest.raises(ValueError, match="distinct str terms"):
        encode_vocabulary({"a": 1})


# ---------------------------------------------------------------------------------------------- saved models
def _read(folder):
    with zipfile.ZipFile(folder / "model.skops") as zf:
        return json.loads(zf.read("schema.json")), {n: zf.read(n) for n in zf.namelist() if n != "schema.json"}


def _write(folder: Path, schema, members) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
        zf.writestr("schema.json", json.dumps(schema))
    data = buf.getvalue()
    (folder / "model.skops").write_bytes(data)
    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))


def _vectorizer_nodes(schema):
    """The state of every CompactTfidfVectorizer node of a schema."""
    out, stack = [], [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("__class__") == "CompactTfidfVectorizer":
                out.append(node["content"]["content"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


@pytest.fixture(scope="module")
def tfidf(tmp_path_factory):
    """(fitted detector, its folder): tfidf-lr on the sample, a CompactTfidfVectorizer inside."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("tfidf-lr").fit(load_sample())
    return det, save_detector(det, tmp_path_factory.mktemp("tfidf") / "model", model_format="skops")


def _vocab(det):
    return det.model_.steps[1][1].vocabulary_


def test_vocabulary_is_saved_as_two_arrays_and_loads_back_equal(tfidf):
    det, folder = tfidf
    (state,) = _vectorizer_nodes(_read(folder)[0])
    assert "vocabulary_" not in state
    assert state["vocabulary_utf8_"]["__loader__"] == state["vocabulary_offsets_"]["__loader__"] == "NdArrayNode"
    loaded = load_detector(folder)
    assert _vocab(loaded) == _vocab(det) and len(_vocab(det)) > 100
    assert prediction_fingerprint(loaded) == read_meta(folder)["prediction_fingerprint"]


def _packed_vectorizer_states(folder):
    """The state of every CompactTfidfVectorizer of a packed model file."""
    with zipfile.ZipFile(folder / "model.evqpack") as zf:
        graph = json.loads(zf.read("graph.json"))
    out, stack = [], [graph["root"]]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            obj = node.get("$object")
            if isinstance(obj, list) and obj[0].endswith(".CompactTfidfVectorizer"):
                out.append(obj[1])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def test_the_shipped_model_is_format_3_packed_and_has_no_vocabulary_dict():
    folder = default_model_path()
    assert read_meta(folder)["format"] == META_FORMAT == 3
    assert not (folder / "model.skops").exists()
    states = _packed_vectorizer_states(folder)
    assert not any("vocabulary_" in s for s in states)
    assert any("vocabulary_utf8_" in s for s in states)  # the fitted one (an unfitted template has none)


def test_a_malformed_vocabulary_in_a_model_is_refused(tfidf, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tfidf[1], folder)
    schema, members = _read(folder)
    (state,) = _vectorizer_nodes(schema)
    buf = io.BytesIO()
    np.save(buf, np.array([0, 5, 3] + [10] * 3, dtype=np.int64), allow_pickle=False)
    members[state["vocabulary_offsets_"]["file"]] = buf.getvalue()
    _write(folder, schema, members)
    with pytest.raises(ModelLoadError, match="vocabulary_offsets_ must run from 0"):
        load_detector(folder)


def test_a_format_1_model_with_a_vocabulary_dict_still_loads(tfidf, tmp_path, monkeypatch):
    """Files saved before format 2: the vocabulary as a dict, meta.json listing every featurizer feature."""
    det, _ = tfidf
    monkeypatch.setattr(CompactTfidfVectorizer, "__getstate__", TfidfVectorizer.__getstate__)
    folder = save_detector(det, tmp_path / "old", model_format="skops")
    monkeypatch.undo()
    (state,) = _vectorizer_nodes(_read(folder)[0])
    assert state["vocabulary_"]["__loader__"] == "DictNode"
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(format=1, response_features=det.builder_.response_names,
                sentence_features=list(det.builder_.sentence_names))
    assert any(n.startswith("meta.") for n in meta["response_features"])
    (folder / "meta.json").write_text(json.dumps(meta))
    assert 1 in READ_FORMATS
    loaded = load_detector(folder)
    assert _vocab(loaded) == _vocab(det)
    assert prediction_fingerprint(loaded) == meta["prediction_fingerprint"]


# ---------------------------------------------------------------------------------------------- meta.json features
def test_a_content_only_model_lists_no_metadata_feature(tfidf):
    det, folder = tfidf
    meta = read_meta(folder)
    assert meta["uses_metadata"] is False
    for key, names in (("response_features", det.builder_.response_names),
                       ("sentence_features", det.builder_.sentence_names)):
        assert meta[key] == [n for n in names if ".meta." not in f".{n}"]
        assert not any(n.startswith(("meta.", "sent.meta.")) for n in meta[key])
    shipped = read_meta(default_model_path())
    assert not any(n.startswith(("meta.", "sent.meta.")) for n in shipped["response_features"]
                   + shipped["sentence_features"])


def test_a_metadata_model_lists_its_metadata_features(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("metadata-lr").fit(load_sample())
    meta = read_meta(save_detector(det, tmp_path / "m"))
    assert meta["uses_metadata"] is True and meta["response_features"] == det.builder_.response_names
    assert any(n.startswith("meta.") for n in meta["response_features"])


def test_model_features():
    names = ["coverage.output_context.v1", "meta.temperature.v1", "sent.meta.quality[good].v1", "len.x"]
    assert model_features(names, False) == ["coverage.output_context.v1", "len.x"]
    assert model_features(names, True) == names


def _edit_meta(src, tmp_path, mutate):
    folder = tmp_path / "model"
    shutil.copytree(src, folder)
    meta = json.loads((folder / "meta.json").read_text())
    mutate(meta)
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


@pytest.mark.parametrize("mutate, match", [
    (lambda m: m["response_features"].append("meta.temperature.v1"),
     "'response_features' lists the metadata feature 'meta.temperature.v1'"),
    (lambda m: m["sentence_features"].insert(0, "sent.meta.quality[good].v1"),
     "'sentence_features' lists the metadata feature"),
    (lambda m: m.update(uses_metadata=True), "'uses_metadata' is true but method 'tfidf-lr' does not use"),
    (lambda m: m.pop("uses_metadata"), "'uses_metadata' must be true or false"),
    (lambda m: m.update(uses_metadata="no"), "'uses_metadata' must be true or false"),
    (lambda m: m["response_features"].append(m["response_features"][0]), "'response_features' lists a feature twice"),
    (lambda m: m.update(format=4), "format 4 is not supported"),
])
def test_meta_json_features_are_validated(tfidf, tmp_path, mutate, match):
    folder = _edit_meta(tfidf[1], tmp_path, mutate)
    with pytest.raises(ModelLoadError, match=match) as info:
        read_meta(folder)
    assert str(folder / "meta.json") in str(info.value)
    with pytest.raises(ModelLoadError, match=match):
        load_detector(folder)


def test_a_format_1_meta_json_listing_only_used_features_is_refused(tfidf, tmp_path):
    """Format 1 lists every featurizer feature: the featurizers are compared with that list."""
    folder = _edit_meta(tfidf[1], tmp_path, lambda m: m.update(format=1))
    with pytest.raises(ModelLoadError, match="other features than meta.json field 'response_features'"):
        load_detector(folder)
