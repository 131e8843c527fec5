"""Contrastive augmentation (issue 9, section 3): deterministic, minimal, training rows only."""

from __future__ import annotations

import json
import random
import shutil
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evqual.data import EDIT_TYPES, augment_contrastive, load_sample, make_example
from evqual.models import Detector, ModelLoadError, load_detector, save_detector


def _ex(output, context, *, id="e1", label=0, task="QA", query="q?"):
    return make_example(query=query, context=context, output=output, label=label, id=id, task_type=task)


def _one(ex, kind):
    out = augment_contrastive([ex], rate=1.0, types=(kind,))
    assert len(out) == 1, f"no {kind} edit of {ex.output!r}"
    return out[0]


def _span_text(a):
    sp = a.spans[0]
    return a.output[sp.start:sp.end]


@pytest.mark.parametrize("kind, output, context, check", [
    ("number", "The company employs 1,600 people.", "Acme employs 1,600 people in Ohio.",
     lambda a, t: t not in ("1,600",) and "," in t and t not in "Acme employs 1,600 people in Ohio."),
    ("number", "Take two tablets a day.", "Adults take two tablets a day.", lambda a, t: t.lower() != "two"),
    ("date", "The bridge opened in 1932.", "The bridge opened in 1932 after four years of work.",
     lambda a, t: t.isdigit() and t != "1932"),
    ("negation", "Ibuprofen is not recommended during pregnancy.", "Ibuprofen is not recommended in pregnancy.",
     lambda a, t: "not" not in a.output),
    ("negation", "The museum is open on Mondays.", "The museum is open on Mondays.",
     lambda a, t: t == "is not"),
    ("antonym", "Sales increased last year.", "Sales increased by 4% last year.",
     lambda a, t: t in ("decreased", "first")),
    ("entity", "The prize went to Marie Curie in Paris.",
     "The prize went to Marie Curie. Pierre Dupont lived in Paris and Lyon.",
     lambda a, t: t in ("Pierre Dupont", "Lyon")),
    ("role_swap", "Acme acquired Betamax last year.", "Last year, Acme acquired Betamax for $2 million.",
     lambda a, t: a.output.startswith("Betamax acquired Acme")),
    ("quantifier", "Some patients may feel dizzy.", "Some patients may feel dizzy.",
     lambda a, t: t in ("All", "must")),
    ("addition", "The hotel has 40 rooms.", "The hotel has 40 rooms.",
     lambda a, t: a.output.startswith("The hotel has 40 rooms. ") and t == a.output[len("The hotel has 40 rooms. "):]),
])
def test_each_edit_type(kind, output, context, check):
    a = _one(_ex(output, context), kind)
    t = _span_text(a)
    assert a.label == 1 and a.id == f"e1~aug.{kind}" and a.output != output
    assert a.spans[0].text == t and t.strip() == t and t
    assert a.context == _ex(output, context).context and a.query == "q?"
    assert check(a, t), (a.output, t)


def test_deterministic_and_independent_of_order_and_neighbours():
    sample = list(load_sample())
    a = augment_contrastive(sample, rate=1.0)
    b = augment_contrastive(sample, rate=1.0)
    assert [(x.id, x.output) for x in a] == [(x.id, x.output) for x in b]
    shuffled = sample[:]
    random.Random(3).shuffle(shuffled)
    c = augment_contrastive(shuffled, rate=1.0)
    assert sorted((x.id, x.output) for x in a) == sorted((x.id, x.output) for x in c)
    # a row's edit does not depend on which other rows are given
    alone = [augment_contrastive([ex], rate=1.0) for ex in sample]
    assert sorted((x.id, x.output) for part in alone for x in part) == sorted((x.id, x.output) for x in a)
    assert augment_contrastive(sample, rate=1.0, seed=1) != a


def test_only_grounded_rows_without_spans_are_edited():
    sample = list(load_sample())
    parents = {x.id.rsplit("~aug.", 1)[0] for x in augment_contrastive(sample, rate=1.0)}
    by_id = {ex.id: ex for ex in sample}
    assert parents and all(by_id[p].label == 0 and not by_id[p].spans for p in parents)
    refusal = _ex("Unable to answer based on given passages.", "Some text.")
    assert augment_contrastive([refusal], rate=1.0) == []
    assert augment_contrastive([_ex("The hotel has 40 rooms.", "x", label=1)], rate=1.0) == []


def test_rate_selects_a_share_of_rows():
    sample = list(load_sample())
    assert augment_contrastive(sample, rate=0.0) == []
    n_all = len(augment_contrastive(sample, rate=1.0))
    n_half = len(augment_contrastive(sample, rate=0.5))
    assert 0 < n_half < n_all


@pytest.mark.parametrize("kw, match", [
    ({"version": "contrastive.v0"}, "version"), ({"rate": 1.5}, "rate"), ({"rate": -0.1}, "rate"),
    ({"types": ("typo",)}, "types"), ({"types": ()}, "types"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        augment_contrastive([], **kw)


_PIECES = list("abcXYZ 0123456789.,!?'-\n") + ["not ", "is ", "The ", "1932 ", "Acme ", "increased ", "some ",
                                                 "May ", "Betamax ", "two "]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(output=_TEXT, context=_TEXT, seed=st.integers(0, 5))
def test_any_text_gives_a_valid_edit_or_none(output, context, seed):
    if not output.strip():
        return
    ex = _ex(output, context or "x")
    for a in augment_contrastive([ex], rate=1.0, seed=seed):
        sp = a.spans[0]
        assert 0 <= sp.start < sp.end <= len(a.output)
        assert a.output != output and a.label == 1
        assert a.id.split("~aug.")[1] in EDIT_TYPES


def test_detector_augments_the_fitting_side_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = Detector("evidence-lr").fit(load_sample())
        aug = Detector("evidence-lr", augment="contrastive.v1", augment_rate=1.0).fit(load_sample())
    assert aug.n_validation_ == plain.n_validation_
    assert aug.n_train_ > plain.n_train_
    with pytest.raises(ValueError, match="augment must be"):
        Detector("evidence-lr", augment="other").fit(load_sample())


def test_evaluate_augments_fitting_rows_only():
    from evqual.evaluation import evaluate

    sample = load_sample()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate(sample, method="evidence-lr", n_splits=2, augment="contrastive.v1", augment_rate=1.0)
        base = evaluate(sample, method="evidence-lr", n_splits=2)
    # held-out predictions are for the original rows only, never for edits
    assert len(res.predictions) == len(base.predictions)
    assert not res.predictions["id"].astype(str).str.contains("~aug.").any()
    assert all(d.n_validation_ == b.n_validation_ and d.n_train_ > b.n_train_
               for d, b in zip(res.detectors, base.detectors))
    with pytest.raises(ValueError, match="augment needs data"):
        from evqual.evaluation import build_frame

        frame, _, _ = build_frame(sample)
        evaluate(method="evidence-lr", frame=frame, n_splits=2, augment="contrastive.v1")


def test_saved_model_records_augmentation_and_meta_is_validated(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = Detector("evidence-lr", augment="contrastive.v1").fit(load_sample())
    folder = save_detector(det, tmp_path / "m")
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["augment"] == "contrastive.v1" and meta["augment_rate"] == 0.5
    assert load_detector(folder).augment == "contrastive.v1"
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    meta["augment"] = "magic"
    (bad / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="'augment'"):
        load_detector(bad)
