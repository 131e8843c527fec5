"""Cross-fitted calibration and thresholds (issue 24, session 5): ``Detector(crossfit=k)``."""

import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.data import load_sample
from evqual.evaluation import build_frame, evaluate, write_report
from evqual.models import Detector, ModelLoadError, crossfit_folds, load_detector, read_meta, save_detector
from evqual.models._detector import _CrossFitted


@pytest.fixture(scope="module")
def sample_frame():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_frame(load_sample())[0]


@pytest.fixture(scope="module")
def crossfitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Detector("evqual", crossfit=3).fit(load_sample())


def _frame(sources, splits, labels):
    n = len(sources)
    return pd.DataFrame({"source_id": sources, "split": splits, "label": labels,
                         "task_type": ["QA" if i % 2 else "Summary" for i in range(n)]})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.sampled_from(["train", "test"]), st.integers(0, 1)),
                min_size=8, max_size=60),
       st.integers(2, 4), st.integers(0, 3), st.booleans())
def test_folds_partition_the_pool_and_never_share_a_source(rows, k, seed, pooled):
    frame = _frame(*map(list, zip(*rows)))
    pool_name = "test" if pooled else None
    in_pool = (frame["split"] == "test").to_numpy() if pooled and (frame["split"] == "test").any() \
        else np.ones(len(frame), bool)
    if frame["source_id"][in_pool].nunique() < k:
        with pytest.raises(ValueError, match="sources"):
            crossfit_folds(frame, k, validation_pool=pool_name, random_state=seed)
        return
    folds = crossfit_folds(frame, k, validation_pool=pool_name, random_state=seed)
    assert len(folds) == k
    val = np.concatenate([v for _, v in folds])
    assert sorted(val.tolist()) == np.flatnonzero(in_pool).tolist()  # the pool, each row once
    src = frame["source_id"].to_numpy()
    for fit_idx, val_idx in folds:
        assert len(val_idx)
        assert not set(src[fit_idx]) & set(src[val_idx])
        # every row of another source fits, whatever its split
        assert sorted(fit_idx.tolist()) == np.flatnonzero(~np.isin(src, src[val_idx])).tolist()


@pytest.mark.parametrize("k", [1, 0, -2, True, 2.5, "3", None])
def test_folds_need_an_integer_of_at_least_two(sample_frame, k):
    with pytest.raises(ValueError, match="n_folds"):
        crossfit_folds(sample_frame, k)


class _Const:
    """A fold model that scores every row with its own constant (and knows nothing of the others)."""

    def __init__(self, value, claims=True):
        self.value, self.claims = value, claims

    def predict_proba(self, X):
        return np.tile([1 - self.value, self.value], (len(X), 1))

    def sentence_proba(self, X):
        return [np.full(2, self.value) for _ in range(len(X))]

    def predict_all(self, X):
        return self.predict_proba(X), self.sentence_proba(X), self.claim_proba(X)

    def claim_proba(self, X):
        return [np.full(1, self.value) for _ in range(len(X))] if self.claims else None

    def token_proba(self, frame, sentence_risks=None, *, gate=0.0, claim_risks=None):
        return [np.asarray(s) + np.asarray(c) + gate for s, c in zip(sentence_risks, claim_risks)]


def test_each_row_is_scored_by_the_model_of_its_fold():
    frame = pd.DataFrame({"source_id": ["a", "b", "a", "c", "b"]})
    router = _CrossFitted([_Const(0.1), _Const(0.2), _Const(0.3)], {"a": 0, "b": 1, "c": 2})
    want = np.array([0.1, 0.2, 0.1, 0.3, 0.2])
    np.testing.assert_allclose(router.predict_proba(frame)[:, 1], want)
    proba, sent, claims = router.predict_all(frame)
    np.testing.assert_allclose(proba[:, 1], want)
    assert [float(s[0]) for s in sent] == list(want) and [float(c[0]) for c in claims] == list(want)
    # per-row inputs follow their rows to the right model
    sr = [np.array([i * 10.0]) for i in range(5)]
    cr = [np.array([i * 100.0]) for i in range(5)]
    out = router.token_proba(frame, sr, claim_risks=cr, gate=0.5)
    assert [float(o[0]) for o in out] == [i * 110.0 + 0.5 for i in range(5)]
    assert not hasattr(router, "decision_function")  # only what the fold models have
    assert _CrossFitted([_Const(0.1, claims=False)] * 3, {"a": 0, "b": 1, "c": 2}).claim_proba(frame) is None


def test_crossfitted_detector_fits_maps_on_the_whole_pool_and_the_model_on_every_row(crossfitted, sample_frame):
    det = crossfitted
    assert det.n_train_ == det.n_validation_ == len(sample_frame)  # the sample is all test split: all pooled
    assert type(det.model_).__name__ == "StackedEvidenceClassifier" and det.classifier_ is None
    assert det.threshold_ is not None and det.sentence_threshold_ is not None
    assert det.span_tagger_ is not None and det.span_threshold_ is not None
    # the final model is the method fitted on every row: the same scores as fitting it directly
    y = sample_frame["label"].astype(int).to_numpy()
    direct = det.spec.make().fit(sample_frame, y)
    np.testing.assert_allclose(det.model_.predict_proba(sample_frame), direct.predict_proba(sample_frame))
    risk = det.predict_proba_frame(sample_frame)
    assert ((risk >= 0) & (risk <= 1)).all()


def test_calibration_is_fitted_on_out_of_fold_scores(sample_frame):
    """The sigmoid map equals one fitted by hand on the fold models' scores of their own folds."""
    from sklearn.calibration import _SigmoidCalibration

    folds = crossfit_folds(sample_frame, 3, random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("nli-proxy", crossfit=3).fit_crossfit_frames(sample_frame, folds)
        y = sample_frame["label"].astype(int).to_numpy()
        score = np.zeros(len(sample_frame))
        for fit_idx, val_idx in folds:
            m = det.spec.make().fit(sample_frame.iloc[fit_idx], y[fit_idx])
            score[val_idx] = m.predict_proba(sample_frame.iloc[val_idx])[:, 1]
    pool = np.concatenate([v for _, v in folds])
    ref = _SigmoidCalibration().fit(score[pool], y[pool])
    np.testing.assert_allclose([det.calibrator_.a_, det.calibrator_.b_], [ref.a_, ref.b_], rtol=1e-6)


def test_folds_that_leak_or_overlap_are_refused(sample_frame):
    folds = crossfit_folds(sample_frame, 3, random_state=0)
    det = Detector("nli-proxy", crossfit=3)
    leaky = [(np.arange(len(sample_frame)), folds[0][1])] + folds[1:]
    with pytest.raises(ValueError, match="both sides"):
        det.fit_crossfit_frames(sample_frame, leaky)
    with pytest.raises(ValueError, match="overlap"):
        det.fit_crossfit_frames(sample_frame, [folds[0], folds[0]])
    with pytest.raises(ValueError, match="at least 2 folds"):
        det.fit_crossfit_frames(sample_frame, folds[:1])


@pytest.mark.parametrize("k", [1, 0, True, 2.5, "3"])
def test_bad_crossfit_values_are_refused(k):
    with pytest.raises(ValueError, match="crossfit must be None or an integer >= 2"):
        Detector("nli-proxy", crossfit=k).fit(load_sample())


def test_crossfit_and_a_given_validation_set_exclude_each_other():
    data = load_sample()
    with pytest.raises(ValueError, match="cannot be combined with validation"):
        Detector("nli-proxy", crossfit=3).fit(data[:40], data[40:])


def test_crossfit_is_saved_checked_and_rebuildable(crossfitted, tmp_path):
    from evqual.models._io import _rebuild_settings

    folder = save_detector(crossfitted, tmp_path / "m", training_data={"rows": 72})
    meta = read_meta(folder)
    assert meta["crossfit"] == 3 and _rebuild_settings(meta)["crossfit"] == 3
    again = load_detector(folder)
    assert again.crossfit == 3
    np.testing.assert_array_equal(again.predict_proba(load_sample()), crossfitted.predict_proba(load_sample()))
    for bad, match in ((2, "disagrees"), (1, "integer >= 2"), ("3", "integer >= 2")):
        dst = tmp_path / f"bad-{bad!r}"
        shutil.copytree(folder, dst)
        meta2 = json.loads((dst / "meta.json").read_text())
        meta2["crossfit"] = bad
        (dst / "meta.json").write_text(json.dumps(meta2))
        with pytest.raises(ModelLoadError, match=match):
            load_detector(dst)


def test_models_saved_without_crossfit_load_as_one_validation_part(evqual_sample_detector, tmp_path):
    folder = save_detector(evqual_sample_detector, tmp_path / "m", training_data={"rows": 72})
    assert read_meta(folder)["crossfit"] is None
    assert load_detector(folder).crossfit is None


def test_cv5_with_crossfit_never_sees_the_held_out_fold(sample_frame, monkeypatch, tmp_path):
    """Each outer fold's detector is cross-fitted on its training side only."""
    seen = []
    real = Detector.fit_crossfit_frames

    def spy(self, frame, folds, train_of=None):
        seen.append(set(frame["id"]))
        return real(self, frame, folds, train_of)

    monkeypatch.setattr(Detector, "fit_crossfit_frames", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate(load_sample(), "nli-proxy", "cv5", frame=sample_frame, n_splits=3, crossfit=2)
    assert len(seen) == 3
    preds = res.predictions
    for fold, ids in zip(sorted(preds["fold"].unique()), seen):
        assert not ids & set(preds.loc[preds["fold"] == fold, "id"])
    assert len(preds) == len(sample_frame)
    # the recipe is in the metrics and the report: a cross-fitted run is told apart from a plain one
    assert res.metrics["crossfit"] == 2
    write_report(res, tmp_path / "report")
    assert "cross-fitted over 2 folds" in (tmp_path / "report" / "metrics.md").read_text()
    plain = evaluate(load_sample(), "majority", "cv5", frame=sample_frame, n_splits=3)
    assert plain.metrics["crossfit"] is None


def test_train_cli_crossfit(tmp_path, capsys):
    from evqual.cli import main

    assert main(["train", "--method", "nli-proxy", "--crossfit", "1", "--out", str(tmp_path / "x")]) == 2
    assert "argument --crossfit: expected an integer >= 2" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["train", "--method", "nli-proxy", "--crossfit", "3", "--out", str(tmp_path / "m")]) == 0
    assert read_meta(tmp_path / "m")["crossfit"] == 3
