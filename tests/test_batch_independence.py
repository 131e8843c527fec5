"""A row's risks never depend on the rows scored with it: results are the same for every batch size.

Regression tests for ``evqual score`` output bytes changing with ``--batch-size``
(fast numpy paths for small batches and scikit-learn's own ``predict_proba``
for large ones summed in different orders; BLAS products whose rounding
depends on the matrix's shape).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from evqual.data import load_sample
from evqual.models import Detector

BATCH_SIZES = (1, 7, 16, 64, 72)


@pytest.fixture(scope="module")
def shipped():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Detector.load()


@pytest.fixture(scope="module")
def items():
    return list(load_sample().examples)


def _dicts(det, items, b):
    from evqual.scoring import Scorer

    return [r.to_dict() for r in Scorer(det).score_batch(items, batch_size=b)]


def _assert_same_for_every_batch_size(det, items):
    ref = _dicts(det, items, BATCH_SIZES[0])
    assert len(ref) == len(items) == 72
    for b in BATCH_SIZES[1:]:
        got = _dicts(det, items, b)
        differ = [r["id"] for r, g in zip(ref, got) if r != g]
        # dict equality compares every float exactly (response, sentence and span risks)
        assert not differ, f"batch size {b}: {len(differ)} answers differ from batch size 1, e.g. {differ[:3]}"


def test_shipped_model_scores_do_not_depend_on_the_batch(shipped, items):
    assert any(r["spans"] for r in _dicts(shipped, items[:16], 16))  # the span tagger is exercised too
    _assert_same_for_every_batch_size(shipped, items)


def test_linear_sentence_method_scores_do_not_depend_on_the_batch(items):
    """A non-boosted method: logistic regression on sentence rows (a BLAS product before the fix)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("logreg-attribution").fit(load_sample())
    _assert_same_for_every_batch_size(det, items)


def _sentence_rows(det, items):
    from evqual.models._estimators import _stack_sentences

    frame = det._frame(items)
    sm = det.model_.sentence_model_
    extra = det.model_._sentence_extra(frame, det.model_.claim_proba(frame))  # the claims' risks (issue 22)
    V, _, _ = _stack_sentences(frame, sm.columns_, with_labels=False, response_cols=sm.response_columns_,
                               extra=extra)
    return frame, sm.estimator_, V


def test_numpy_tree_path_equals_scikit_learn_bit_for_bit(shipped, items):
    from evqual.models._fasttrees import SMALL_BATCH, fast_proba, hgb_proba

    _, est, V = _sentence_rows(shipped, items)
    assert len(V) > SMALL_BATCH  # fast_proba switches to scikit-learn on these rows
    want = est.predict_proba(V)
    assert np.array_equal(hgb_proba(est, V), want)
    assert np.array_equal(fast_proba(est, V), want)
    one_by_one = np.vstack([fast_proba(est, V[i:i + 1]) for i in range(60)])
    assert np.array_equal(one_by_one, want[:60])


def test_compiled_tree_walker_equals_numpy_and_scikit_learn(shipped, items):
    """The compiled walker (issue 41) against the numpy walker and scikit-learn, on real rows and on random
    ones with missing values, one row at a time and in one batch."""
    from evqual.models._fasttrees import _compiled, _kernel

    if _kernel() is None:
        pytest.skip("the compiled walker is not built (or EVQUAL_PURE_PYTHON is set)")
    _, est, V = _sentence_rows(shipped, items)
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 2, (300, V.shape[1]))
    noise[rng.random(noise.shape) < 0.1] = np.nan
    comp = _compiled(est)
    for X in (V, noise):
        got = comp.raw(X)
        assert np.array_equal(got, comp.raw_numpy(X))
        assert np.array_equal(np.vstack([comp.raw(X[i:i + 1]) for i in range(40)]).ravel(), got[:40])
        want = est._raw_predict(X).ravel()
        assert np.array_equal(got, want)


def test_compiled_tree_walker_refuses_a_walk_past_the_declared_depth(shipped, items):
    from evqual.models._fasttrees import _compiled, _kernel

    kernel = _kernel()
    if kernel is None:
        pytest.skip("the compiled walker is not built (or EVQUAL_PURE_PYTHON is set)")
    _, est, V = _sentence_rows(shipped, items)
    c = _compiled(est)
    out = np.empty(len(V))
    with pytest.raises(ValueError, match="deeper"):
        kernel(np.ascontiguousarray(V), c.feature, c.threshold, c.left, c.right, c.leaf.view(np.uint8), c.value,
               c.missing_left.view(np.uint8), c.roots, c.baseline, 1, out)
    bad_left = c.left.copy()
    bad_left[~c.leaf] = 10 ** 9  # a child past the arrays: an error, never a read out of bounds
    with pytest.raises(IndexError):
        kernel(np.ascontiguousarray(V), c.feature, c.threshold, bad_left, bad_left, c.leaf.view(np.uint8),
               c.value, c.missing_left.view(np.uint8), c.roots, c.baseline, c.depth, out)


def test_compiled_forest_checks_its_arrays_once_and_refuses_what_would_read_outside(shipped, items):
    """Session 11: the walker's Forest checks the trees when it is made and then reads without bounds checks:
    a child or root outside the arrays, a negative feature, arrays of different lengths, rows narrower than
    the features the splits read, and a walk past the declared depth are refused, never read."""
    from evqual._build import kernel

    forest_cls = kernel("evqual.models._treewalk", "Forest")
    if forest_cls is None:
        pytest.skip("the compiled walker is not built (or EVQUAL_PURE_PYTHON is set)")
    from evqual.models._fasttrees import _compiled

    _, est, V = _sentence_rows(shipped, items)
    c = _compiled(est)
    args = [c.feature, c.threshold, c.left, c.right, c.leaf, c.value, c.missing_left, c.roots]
    forest = forest_cls(*args, c.baseline, c.depth)
    out = np.empty(len(V))
    forest.raw(np.ascontiguousarray(V), out)
    assert np.array_equal(out, c.raw_numpy(V))
    split = ~c.leaf
    for k, bad in ((2, 10 ** 9), (3, -1), (0, -5)):
        broken = list(args)
        broken[k] = args[k].copy()
        broken[k][np.flatnonzero(split)[3]] = bad
        with pytest.raises(ValueError):
            forest_cls(*broken, c.baseline, c.depth)
    with pytest.raises(ValueError):
        forest_cls(*args[:7], np.array([len(c.leaf)]), c.baseline, c.depth)  # a root past the nodes
    with pytest.raises(ValueError):
        forest_cls(args[0][:-1], *args[1:], c.baseline, c.depth)  # arrays of different lengths
    with pytest.raises(ValueError, match="columns"):
        forest.raw(np.ascontiguousarray(V[:, :forest.n_features - 1]), out)
    with pytest.raises(ValueError, match="deeper"):
        forest_cls(*args, c.baseline, 1).raw(np.ascontiguousarray(V), out)
    want = c.raw_numpy(V)
    kept = c.left.copy()
    c.left[:] = 10 ** 9  # the caller's arrays changed after the check: the forest walks its own copy
    try:
        forest.raw(np.ascontiguousarray(V), out)
    finally:
        c.left[:] = kept
    assert np.array_equal(out, want)


def test_text_model_fast_path_equals_scikit_learn_bit_for_bit(shipped, items):
    from evqual.models._fasttrees import fast_proba

    frame = shipped._frame(items)
    (text_model,) = shipped.model_.text_models_
    assert np.array_equal(fast_proba(text_model, frame), text_model.predict_proba(frame))


def test_span_tagger_chunks_do_not_change_token_risks(shipped, items, monkeypatch):
    from evqual.models import _spans

    frame, exs, analyses = shipped.builder_.transform_with_analyses(items[:24], with_targets=False, lite=True)
    _, sr = shipped.predict_proba_and_sentences_frame(frame)
    tagger = shipped.span_tagger_
    cr = shipped.claim_proba_frame(frame)
    whole = tagger.token_proba(frame, sr, claim_risks=cr)
    monkeypatch.setattr(_spans, "_TOKEN_CHUNK", 7)
    chunked = tagger.token_proba(frame, sr, claim_risks=cr)
    assert sum(len(p) for p in whole) > 7 * 24
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))


@pytest.mark.parametrize("method", ["metadata-lr", "evidence-lr", "tfidf-lr"])
def test_linear_response_method_scores_do_not_depend_on_the_batch(items, method):
    """Logistic-regression pipelines calibrated on ``decision_function`` (a BLAS product before the fix)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector(method).fit(load_sample())
    _assert_same_for_every_batch_size(det, items)


@pytest.mark.parametrize("method", ["metadata-lr", "evidence-lr"])
def test_fixed_order_decision_function_equals_scikit_learn(items, method):
    from evqual.models._fasttrees import fast_decision

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector(method).fit(load_sample())
    frame = det.builder_.transform(items, with_targets=False)
    np.testing.assert_allclose(fast_decision(det.model_, frame), det.model_.decision_function(frame),
                               rtol=1e-12, atol=1e-12)
