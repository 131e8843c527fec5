"""Scoring without scikit-learn (issue 41): the lean load's stand-ins give a full load's results, run its
checks, and import no scikit-learn."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evqual.data import load_sample
from evqual.models import ModelLoadError, default_model_path, load_detector, save_detector
from evqual.scoring import Scorer


@pytest.fixture(scope="module")
def lean_and_full():
    return load_detector(default_model_path(), lean=True), load_detector(default_model_path())


def test_the_shipped_model_loads_lean(lean_and_full):
    lean, full = lean_and_full
    assert getattr(lean, "lean_", False) is True and not hasattr(full, "lean_")
    assert type(lean.model_.response_model_).__module__ == "evqual.models._lean"
    assert type(full.model_.response_model_).__module__.startswith("sklearn.")


def test_lean_results_equal_full_ones_to_the_bit(lean_and_full):
    lean, full = lean_and_full
    examples = load_sample()
    a, b = lean.detect(examples), full.detect(examples)
    assert a.risk.tobytes() == b.risk.tobytes()
    assert a.ood.tobytes() == b.ood.tobytes()
    for x, y in zip(a.sentence_risk, b.sentence_risk):
        assert x.tobytes() == y.tobytes()
    for x, y in zip(a.claim_risk, b.claim_risk):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    assert a.spans == b.spans
    # whole results, as the scorer writes them
    got = [r.to_dict() for r in Scorer(lean).score_examples(examples[:40])]
    want = [r.to_dict() for r in Scorer(full).score_examples(examples[:40])]
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


# what a scoring process does not import: scikit-learn and pandas (the lean load), and what start-up spent on
# for nothing (issue 41, session 4): scipy (only the largest contexts' sparse path), numpy.random (a model's
# unused feature subsampler), numpy.ma (np.unique in the audit), the process pool and TOML (other commands)
_NOT_IMPORTED = ("sklearn", "pandas", "scipy", "numpy.random", "numpy.ma", "multiprocessing", "concurrent",
                 "tomllib")


def test_scoring_imports_no_scikit_learn():
    code = ("import sys\n"
            "from evqual.scoring import Scorer\n"
            "r = Scorer.load().score(query='When did it open?', context=['The bridge opened in 1932.'], "
            "output='It opened in 1932.')\n"
            "assert 0.0 <= r.risk <= 1.0\n"
            f"print(sorted(m for m in sys.modules if m.partition('.')[0] in {_NOT_IMPORTED!r} or "
            f"m in {_NOT_IMPORTED!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_hgb_node_dtype_is_scikit_learns():
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    from evqual.models._packed import HGB_NODE_DTYPE

    assert HGB_NODE_DTYPE == np.dtype(PREDICTOR_RECORD_DTYPE)


def test_packaged_templates_are_what_the_factories_build():
    """After changing a factory or scikit-learn's version: ``python -m evqual.models._templates``."""
    from evqual.models._templates import build_method_templates, method_templates

    assert method_templates() == json.loads(json.dumps(build_method_templates()))


_WORDS = st.text(st.sampled_from(list("ab cé1_.,'-\nABÉ")), max_size=60)


@settings(max_examples=200, deadline=None)
@given(doc=_WORDS, ngrams=st.sampled_from([(1, 1), (1, 2), (2, 2), (1, 3), (2, 3)]), lower=st.booleans())
@example(doc="A b A b a", ngrams=(1, 2), lower=True)
def test_lean_analyser_is_scikit_learns(doc, ngrams, lower):
    from evqual.models._estimators import CompactTfidfVectorizer
    from evqual.models._lean import CompactTfidfVectorizer as Lean

    vec = CompactTfidfVectorizer(ngram_range=ngrams, lowercase=lower)
    lean = Lean.__new__(Lean)
    lean.__setstate__({k: v for k, v in vars(vec).items()})
    assert lean.analyser_supported()
    assert lean.build_analyzer()(doc) == vec.build_analyzer()(doc)


def test_an_analyser_it_cannot_reproduce_is_refused():
    from evqual.models._estimators import CompactTfidfVectorizer
    from evqual.models._lean import CompactTfidfVectorizer as Lean

    lean = Lean.__new__(Lean)
    lean.__setstate__(dict(vars(CompactTfidfVectorizer(strip_accents="unicode"))))
    assert not lean.analyser_supported()
    with pytest.raises(ValueError, match="needs scikit-learn"):
        lean.build_analyzer()


def test_a_state_naming_a_method_is_refused():
    from evqual.models._lean import LEAN_TYPES

    cls = LEAN_TYPES["sklearn.pipeline.Pipeline"]
    obj = cls.__new__(cls)
    with pytest.raises(ValueError, match="predict_proba"):
        obj.__setstate__({"steps": [], "predict_proba": 1})


def test_a_lean_detector_cannot_be_saved(lean_and_full, tmp_path):
    lean, _ = lean_and_full
    with pytest.raises(ValueError, match="lean Detector"):
        save_detector(lean, tmp_path / "m")


def test_a_model_without_stand_ins_loads_fully(tmp_path):
    from evqual.models import Detector

    folder = save_detector(Detector("evidence-lr").fit(load_sample()), tmp_path / "m")  # a StandardScaler
    det = load_detector(folder, lean=True)
    assert not hasattr(det, "lean_")
    assert type(det.model_).__module__.startswith("sklearn.")


def test_a_changed_parameter_is_refused_by_the_template(lean_and_full):
    from evqual.models._templates import check_against_template, method_templates

    lean, _ = lean_and_full
    node = method_templates()["methods"]["evqual"]
    fail = lambda where, problem: ModelLoadError(f"{where}: {problem}")  # noqa: E731
    check_against_template(lean.model_, node, "model_", fail)  # the shipped model passes
    vec = lean.model_.text_estimators[0][1].steps[1][1]
    saved = vec.token_pattern
    try:
        vec.__dict__["token_pattern"] = r"(?u)\b\w+\b"
        with pytest.raises(ModelLoadError, match="token_pattern"):
            check_against_template(lean.model_, node, "model_", fail)
    finally:
        vec.__dict__["token_pattern"] = saved


def _rewrite_graph(src, dst, change):
    """Copy the packed model of folder ``src`` to ``dst`` with ``change(graph)`` applied (meta.json's hash
    updated, so that only the audit stands between the file and the scorer)."""
    import hashlib
    import shutil

    shutil.copytree(src, dst)
    path = dst / "model.evqpack"
    with zipfile.ZipFile(path) as zf:
        graph = json.loads(zf.read("graph.json"))
        blob = zf.read("arrays.bin")
    change(graph)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("graph.json", json.dumps(graph, separators=(",", ":")))
        zf.writestr("arrays.bin", blob)
    meta = json.loads((dst / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (dst / "meta.json").write_text(json.dumps(meta))


def test_a_tampered_model_is_refused_on_the_lean_path_too(tmp_path):
    """A model the full load refuses is refused by Scorer.load (lean first, then the full load decides)."""

    def swap_rule(graph):  # a parameter of the sentence model that its method does not build
        model = graph["root"]["$object"][1]["model_"]["$object"][1]
        model["sentence_estimator"]["$object"][1]["max_leaf_nodes"] = 7

    _rewrite_graph(default_model_path(), tmp_path / "m", swap_rule)
    with pytest.raises(ModelLoadError, match="max_leaf_nodes"):
        load_detector(tmp_path / "m")
    with pytest.raises(ModelLoadError, match="max_leaf_nodes"):
        Scorer.load(tmp_path / "m")


def _rewrite_blob(src, dst, change):
    """Copy the packed model of folder ``src`` to ``dst`` with ``change(blob)`` applied to its arrays (a
    bytearray; meta.json's hash updated)."""
    import hashlib
    import shutil

    shutil.copytree(src, dst)
    path = dst / "model.evqpack"
    with zipfile.ZipFile(path) as zf:
        graph = zf.read("graph.json")
        blob = bytearray(zf.read("arrays.bin"))
    change(blob)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("graph.json", graph)
        zf.writestr("arrays.bin", bytes(blob))
    meta = json.loads((dst / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (dst / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("field, bad", [("value", np.nan), ("num_threshold", np.inf), ("gain", -np.inf)])
def test_a_non_finite_tree_node_is_refused_on_both_paths(lean_and_full, tmp_path, field, bad):
    """The batched predictor check covers the node records' finiteness, so the object walk skips those arrays
    (issue 41, session 4): a NaN or infinity in one node of one tree is still refused, lean and full."""
    lean, _ = lean_and_full
    nodes = lean.model_.response_model_._predictors[3][0].nodes

    def change(blob):
        at = bytes(blob).find(nodes.tobytes())
        assert at >= 0
        arr = nodes.copy()
        arr[field][len(arr) // 2] = bad
        blob[at:at + arr.nbytes] = arr.tobytes()

    _rewrite_blob(default_model_path(), tmp_path / "m", change)
    for lean_load in (True, False):
        with pytest.raises(ModelLoadError, match="not finite"):
            load_detector(tmp_path / "m", lean=lean_load)


def test_expit_is_scipys_to_the_bit():
    from scipy.special import expit as scipy_expit

    from evqual.models._fasttrees import expit

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, 100_000), rng.normal(0, 40, 100_000), rng.uniform(-800, 800, 50_000),
                        [0.0, -0.0, 709.0, -709.0, 709.8, -709.8, 745.2, -745.2, np.inf, -np.inf, np.nan,
                         1e-300, -1e-300, 36.7, -36.7]])
    got, want = expit(x), scipy_expit(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    assert expit(np.zeros((2, 3))).shape == (2, 3) and expit(np.zeros(0)).shape == (0,)
