"""Detectors, protocols, metrics and model artifacts (issue 3)."""

import json
import shutil
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    brier_score_loss,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
)

from evqual.data import load_sample
from evqual.evaluation import binary_metrics, build_frame, evaluate, protocol_splits, type_metrics, write_report
from evqual.evaluation._run import _validation
from evqual.models import (
    METHODS,
    Detector,
    ModelLoadError,
    get_method,
    model_file,
    load_detector,
    read_meta,
    save_detector,
    seed002_objective,
)


@pytest.fixture(scope="module")
def sample_frame():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame, builder, seconds = build_frame(load_sample())
    return frame


@pytest.fixture(scope="module")
def fitted(sample_frame):
    """One detector per method, fitted on a grouped split of the sample."""
    from evqual.models import validation_split

    fit_idx, val_idx = validation_split(sample_frame, np.arange(len(sample_frame)), size=0.34)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in METHODS:
            out[name] = Detector(name).fit_frames(sample_frame.iloc[fit_idx], sample_frame.iloc[val_idx])
    return out


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_fits_and_predicts(fitted, sample_frame, name):
    det = fitted[name]
    risk = det.predict_proba_frame(sample_frame)
    assert risk.shape == (len(sample_frame),) and np.all((risk >= 0) & (risk <= 1))
    assert 0 <= det.threshold_ <= 1
    sent = det.sentence_proba_frame(sample_frame)
    if get_method(name).sentence_level:
        assert len(sent) == len(sample_frame)
        assert all(len(r) == len(b.values) for r, b in zip(sent, sample_frame["__sent__"]))
    else:
        assert sent is None


def test_majority_predicts_the_majority_class(fitted, sample_frame):
    det = fitted["majority"]
    assert det.threshold_ == 0.5
    preds = (det.predict_proba_frame(sample_frame) >= det.threshold_).astype(int)
    assert len(set(preds)) == 1


def test_unknown_method_and_bad_options():
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        get_method("nope")
    with pytest.raises(ValueError, match="calibration"):
        Detector("evqual", calibration="platt").fit(load_sample())
    with pytest.raises(ValueError, match="threshold_rule"):
        Detector("evqual", threshold_rule="youden").fit(load_sample())


def test_rules_are_what_they_say(sample_frame, fitted):
    risks = fitted["lexical-overlap"].model_.sentence_proba(sample_frame)
    block = sample_frame["__sent__"].iloc[0]
    j = list(block.names).index("sent.chain.jaccard.v1")
    np.testing.assert_allclose(risks[0], 1 - block.values[:, j])


# ------------------------------------------------------------------ protocols
@settings(max_examples=25, deadline=None)
@given(n_sources=st.integers(6, 30), per_source=st.integers(1, 4), seed=st.integers(0, 1000))
def test_cv5_keeps_every_source_on_one_side(n_sources, per_source, seed):
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sources):
        for _ in range(per_source):
            rows.append({"source_id": f"s{s}", "split": "test" if s % 3 else rng.choice(["test", "train"]),
                         "task_type": rng.choice(["QA", "Summary"]), "label": int(rng.random() < 0.4)})
    frame = pd.DataFrame(rows)
    n_test_sources = frame.loc[frame["split"] == "test", "source_id"].nunique()
    if n_test_sources < 5:
        return
    seen_test = []
    for fold, train, test in protocol_splits(frame, "cv5"):
        tr_src = set(frame["source_id"].iloc[train])
        te_src = set(frame["source_id"].iloc[test])
        assert not tr_src & te_src
        assert set(frame["split"].iloc[test]) == {"test"}
        other = np.flatnonzero((frame["split"] != "test").to_numpy() & ~frame["source_id"].isin(te_src).to_numpy())
        assert set(other) <= set(train)
        seen_test.extend(test.tolist())
        fit, val = _validation(frame, train, "cv5", 42) if frame.iloc[train]["source_id"].nunique() >= 4 \
            else (train, train[:0])
        assert not set(val) & set(test) and not set(fit) & set(test)
        assert not set(frame["source_id"].iloc[fit]) & set(frame["source_id"].iloc[val])
    assert sorted(seen_test) == sorted(np.flatnonzero(frame["split"] == "test").tolist())


def test_thresholds_never_see_the_held_out_fold(sample_frame, monkeypatch):
    seen = []
    original = Detector.fit_frames

    def spy(self, train, val):
        seen.append((set(train["id"]), set(val["id"])))
        return original(self, train, val)

    monkeypatch.setattr(Detector, "fit_frames", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(method="nli-proxy", frame=sample_frame, n_splits=3)
    assert len(seen) == 3
    for (train_ids, val_ids), (fold, _, test_idx) in zip(seen, result.folds):
        test_ids = set(sample_frame["id"].iloc[test_idx])
        assert not test_ids & train_ids and not test_ids & val_ids


def test_official_protocol_needs_both_splits(sample_frame):
    with pytest.raises(ValueError, match="both splits"):
        list(protocol_splits(sample_frame, "official"))
    with pytest.raises(ValueError, match="protocol"):
        list(protocol_splits(sample_frame, "cv10"))


def test_evaluate_writes_a_complete_report(sample_frame, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(method="random-forest", frame=sample_frame, n_splits=3)
        write_report(result, tmp_path, frame=sample_frame)
    m = json.loads((tmp_path / "metrics.json").read_text())
    for key in ("protocol", "method", "n", "response", "per_task", "per_model", "per_type", "sentence", "latency"):
        assert key in m
    for key in ("accuracy", "precision", "recall", "f1", "macro_f1", "mcc", "auroc", "auprc", "brier", "tp", "fp",
                "tn", "fn", "threshold"):
        assert key in m["response"] and key in m["sentence"]
    assert set(m["per_task"]) == {"QA", "Summary", "Data2txt"}
    assert m["n"] == len(sample_frame)
    assert m["response"]["tp"] + m["response"]["fp"] + m["response"]["tn"] + m["response"]["fn"] == m["n"]
    assert {"featurize_ms_per_item", "predict_ms_per_item"} <= set(m["latency"])
    for f in ("metrics.md", "predictions.csv", "sentences.csv", "roc.png", "pr.png", "reliability.png",
              "confusion.png", "importance_impurity.csv", "importance_permutation.csv", "subgroups/task.csv"):
        assert (tmp_path / f).exists(), f


# ------------------------------------------------------------------ metrics
def test_binary_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    risk = np.clip(y * 0.3 + rng.random(200) * 0.7, 0, 1)
    m = binary_metrics(y, risk, 0.45)
    pred = (risk >= 0.45).astype(int)
    assert m["accuracy"] == pytest.approx(accuracy_score(y, pred))
    assert m["precision"] == pytest.approx(precision_score(y, pred))
    assert m["recall"] == pytest.approx(recall_score(y, pred))
    assert m["f1"] == pytest.approx(f1_score(y, pred))
    assert m["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"))
    assert m["mcc"] == pytest.approx(matthews_corrcoef(y, pred))
    assert m["auroc"] == pytest.approx(roc_auc_score(y, risk))
    assert m["auprc"] == pytest.approx(average_precision_score(y, risk))
    assert m["brier"] == pytest.approx(brier_score_loss(y, risk))
    assert m["tp"] == int(((pred == 1) & (y == 1)).sum()) and m["fn"] == int(((pred == 0) & (y == 1)).sum())


def test_per_row_thresholds_and_single_class():
    m = binary_metrics([0, 1, 1], [0.4, 0.4, 0.9], np.array([0.5, 0.3, 0.5]))
    assert (m["tp"], m["fp"], m["fn"]) == (2, 0, 0) and m["threshold"] == pytest.approx(13 / 30)
    assert binary_metrics([1, 1], [0.2, 0.9], 0.5)["auroc"] is None


def test_type_metrics():
    out = type_metrics(["Evident Conflict", "", "Evident Conflict|Subtle Baseless Info"], [1, 0, 1],
                       [0.9, 0.1, 0.2], 0.5)
    assert out["Evident Conflict"] == {"n": 2, "correct_rate": 0.5, "mean_risk": pytest.approx(0.55)}
    assert out["grounded"]["correct_rate"] == 1.0


def test_seed002_objective_prefers_balance():
    y = np.array([1] * 10 + [0] * 10)
    balanced = np.array([1] * 8 + [0] * 2 + [1] * 2 + [0] * 8)
    lopsided = np.array([1] * 10 + [1] * 9 + [0])
    assert seed002_objective(y, balanced) > seed002_objective(y, lopsided)


# ------------------------------------------------------------------ artifacts
@pytest.fixture(scope="module")
def saved(tmp_path_factory, evqual_sample_detector):
    folder = tmp_path_factory.mktemp("model")
    det = evqual_sample_detector
    save_detector(det, folder, training_data={"rows": 72}, metrics={"note": "test"})
    return det, folder


def test_saved_model_reloads_and_predicts_identically(saved):
    det, folder = saved
    data = load_sample()
    again = load_detector(folder)
    np.testing.assert_array_equal(again.predict_proba(data), det.predict_proba(data))
    meta = read_meta(folder)
    for key in ("evqual_version", "sklearn_version", "python_version", "response_features", "sentence_features",
                "entity_backend", "threshold", "calibration", "training_data", "metrics", "model_sha256"):
        assert key in meta
    assert meta["entity_backend"] == "regex" and meta["threshold"] == det.threshold_


def _copy(folder, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(folder, dst)
    return dst


def test_tampered_model_is_refused(saved, tmp_path):
    dst = _copy(saved[1], tmp_path)
    data = bytearray(model_file(dst).read_bytes())
    data[len(data) // 2] ^= 0xFF
    model_file(dst).write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="SHA-256"):
        load_detector(dst)


def test_changed_feature_version_is_refused(saved, tmp_path):
    dst = _copy(saved[1], tmp_path)
    meta = json.loads((dst / "meta.json").read_text())
    meta["response_features"][0] = meta["response_features"][0].replace(".v1", ".v0")
    (dst / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="does not compute"):
        load_detector(dst)


def test_newer_library_version_warns(saved, tmp_path):
    dst = _copy(saved[1], tmp_path)
    meta = json.loads((dst / "meta.json").read_text())
    meta["evqual_version"] = "99.0.0"
    (dst / "meta.json").write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="newer"):
        load_detector(dst)


@pytest.mark.parametrize("mutate, match", [
    (lambda m: m.pop("model_sha256"), "model_sha256"),
    (lambda m: m.update(threshold="high"), "threshold"),
    (lambda m: m.update(format=99), "format"),
])
def test_malformed_meta_is_refused(saved, tmp_path, mutate, match):
    dst = _copy(saved[1], tmp_path)
    meta = json.loads((dst / "meta.json").read_text())
    mutate(meta)
    (dst / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match=match):
        load_detector(dst)


def test_missing_model_folder(tmp_path):
    with pytest.raises(ModelLoadError, match="no such model folder"):
        load_detector(tmp_path / "nope")
    (tmp_path / "m").mkdir()
    with pytest.raises(ModelLoadError, match="meta.json"):
        load_detector(tmp_path / "m")


def test_fast_tree_and_text_paths_equal_scikit_learn():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from evqual.models._fasttrees import fast_proba, hgb_proba

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values follow each split's learned direction
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + rng.normal(0, 0.5, 400) > 1).astype(int)
    est = HistGradientBoostingClassifier(max_iter=60, max_leaf_nodes=15, random_state=0).fit(X, y)
    for n in (1, 50, 200):  # 200 x 60 (row, tree) pairs take the compacting path, fewer the fixed-step one
        np.testing.assert_allclose(hgb_proba(est, X[:n]), est.predict_proba(X[:n]), rtol=1e-10, atol=1e-12)
    from evqual.models import _methods

    text = _methods._output_text_lr()
    import pandas as pd

    frame = pd.DataFrame({"__output__": ["the cafe has outdoor seating", "open from 5 pm", "no wifi"] * 10})
    text.fit(frame, np.array([1, 0, 1] * 10))
    np.testing.assert_allclose(fast_proba(text, frame), text.predict_proba(frame), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["metadata-lr", "semantic-eq-gb",
                                    pytest.param("evqual", marks=pytest.mark.slow)])  # evqual: two fits of ~30 s
@pytest.mark.parametrize("calibration", ["sigmoid", "isotonic"])
def test_detector_risk_equals_calibrated_classifier(method, calibration):
    """The kept calibration map must be fed the score CalibratedClassifierCV fitted it on
    (decision_function when the model has one): regression test for a silent F1 drop."""
    from evqual.data import load_sample
    from evqual.models import Detector

    # without evidence floors or composing with the sentence risks (tested in test_checks.py and
    # test_claim_stage.py): the calibration path alone
    det = Detector(method, calibration=calibration, evidence_floor=False, compose="none").fit(load_sample())
    frame = det._frame(load_sample())
    det_full = Detector(method, calibration=calibration, evidence_floor=False, compose="none").fit(load_sample())
    want = det_full.classifier_.estimator_.predict_proba(frame)[:, 1] if hasattr(
        det_full.classifier_, "estimator_") else det_full.classifier_.predict_proba(frame)[:, 1]
    np.testing.assert_allclose(det.predict_proba_frame(frame), want, rtol=1e-9, atol=1e-12)
    risk, _ = det.predict_proba_and_sentences_frame(frame)
    np.testing.assert_allclose(risk, want, rtol=1e-9, atol=1e-12)


def test_fast_tree_path_checks_the_feature_count():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from evqual.models._fasttrees import fast_proba

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 4)), rng.integers(0, 2, 100)
    est = HistGradientBoostingClassifier(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="X has 5 features, but HistGradientBoostingClassifier is expecting 4"):
        fast_proba(est, np.c_[X[:3], X[:3, :1]])
