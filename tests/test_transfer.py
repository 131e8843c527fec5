"""Issue 40: several sources, the transfer protocol, adaptation, the flag-rate budget and the
out-of-distribution warning."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evqual.cli import main
from evqual.data import (group_copies, load_data, load_sample, load_sources, parse_source, sample_path,
                         trainable_rows, weigh_sources)
from evqual.errors import TrainingDataError
from evqual.evaluation import transfer_units
from evqual.models import (Detector, ModelLoadError, adapt_detector, check_ood_state, fit_ood, load_detector,
                           ood_distance, ood_scores, ood_warning, read_meta, save_detector)
from evqual.models._adapt import _auroc, logistic_fit, recall_at_fpr
from evqual.scoring import Policy, Scorer, load_policy


def _rows(n=30, *, label=None, pair=True):
    out = []
    for i in range(n):
        lab = (i % 2) if label is None else label
        row = {"id": f"r{i}", "query": "What colour is the sky?", "context": ["The sky is blue on clear days."],
               "output": "The sky is green." if lab else "The sky is blue.", "label": lab, "task_type": "QA",
               "split": "dev" if i % 3 else "test"}
        if pair:
            row["pair"] = f"p{i // 2}"
        out.append(row)
    return out


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- sources
def test_a_source_spec_reads_its_options_and_names_a_bad_one():
    spec = parse_source("x/logs.jsonl:split=dev+test,weight=0.5,name=mine")
    assert (str(spec.path), spec.splits, spec.weight, spec.name) == ("x/logs.jsonl", ("dev", "test"), 0.5, "mine")
    assert parse_source("x/logs.jsonl").name == "logs"
    for bad, word in (("a.jsonl:weight=11", "weight"), ("a.jsonl:weight=nan", "weight"),
                      ("a.jsonl:colour=red", "unknown option"), ("a.jsonl:split=", "split"),
                      ("a.jsonl:name=a/b", "name")):
        with pytest.raises(ValueError, match=word):
            parse_source(bad)


def test_a_file_whose_name_holds_a_colon_loads_as_a_path(tmp_path):
    path = _write(tmp_path / "odd:name=x.jsonl", _rows(4))
    assert parse_source(str(path)).path == path


def test_sources_carry_their_name_and_prefixed_groups(tmp_path):
    a = _write(tmp_path / "a.jsonl", _rows(6))
    b = _write(tmp_path / "b.jsonl", _rows(6))
    data = load_sources([f"{a}:split=dev", str(b)])
    assert {ex.dataset for ex in data} == {"a", "b"}
    assert all(ex.split == "dev" for ex in data if ex.dataset == "a")
    assert all(ex.source_id.startswith(f"{ex.dataset}/p") for ex in data)
    assert len({ex.id for ex in data}) == len(data)  # the same ids in two files are prefixed, never merged
    every = load_sources([f"{a}:split=dev", str(b)], all_rows=True)
    mask = trainable_rows(every, [f"{a}:split=dev", str(b)])
    assert len(every) == 12 and mask.sum() == len(data)
    with pytest.raises(ValueError, match="two sources are named"):
        load_sources([str(a), str(a)])


def test_pair_groups_answers_and_a_pair_of_another_kind_keeps_the_row(tmp_path):
    rows = _rows(4)
    rows[1]["pair"] = {"not": "a name"}
    rows[2]["dataset"] = "mine"
    rows[3]["dataset"] = ["x"]
    data = load_data(_write(tmp_path / "a.jsonl", rows))
    assert not data.issues and len(data) == 4
    assert [ex.source_id for ex in data] == ["p0", None, "p1", "p1"]
    assert [ex.dataset for ex in data] == [None, None, "mine", None]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(weight=st.floats(0, 3), seed=st.integers(0, 5))
def test_weights_keep_groups_whole(weight, seed):
    datasets = ["a"] * 20 + ["b"] * 20
    groups = [f"g{i // 2}" for i in range(40)]
    copies = group_copies(datasets, groups, [f"x:name=a,weight={weight}", "y:name=b"], seed=seed)
    assert (copies[20:] == 1).all()
    assert all(copies[i] == copies[i + 1] for i in range(0, 20, 2))  # both answers of an item, or neither
    assert set(copies[:20].tolist()) <= {int(np.floor(weight)), int(np.floor(weight)) + 1}


def test_weigh_sources_copies_with_new_ids():
    data = load_sources([f"{sample_path()}:name=a", f"{sample_path()}:name=b"]).examples
    out = weigh_sources(data, ["x:name=a,weight=2", "y:name=b,weight=0"])
    assert len(out) == len(data) and all(ex.dataset == "a" for ex in out)
    assert len({ex.id for ex in out}) == len(out)


def test_transfer_units_never_train_on_what_they_hold_out():
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"dataset": rng.choice(["r", "h", "d"], 200), "task_type": rng.choice(["QA", "Summary"], 200),
                          "split": rng.choice(["train", "test", "dev"], 200), "source_id": [f"s{i}" for i in range(200)]})
    units = transfer_units(frame, heldout_split="test")
    assert units
    for name, train, test in units:
        kind, _, what = name.partition(":")
        held = frame.iloc[test]
        assert (held["split"] == "test").all()
        if kind == "source":
            assert not (frame.iloc[train]["dataset"] == what).any()
        else:
            ds, task = what.split("/")
            fitted = frame.iloc[train]
            assert not ((fitted["dataset"] == ds) & (fitted["task_type"] == task)).any()
    with pytest.raises(ValueError, match="at least 2 sources"):
        transfer_units(frame.assign(dataset="one"))


def test_evaluate_transfer_needs_two_sources(tmp_path, capsys):
    assert main(["evaluate", "--data", str(sample_path()), "--protocol", "transfer", "--out",
                 str(tmp_path / "r")]) == 2
    assert "two --data sources" in capsys.readouterr().err
    assert main(["evaluate", "--data", f"{sample_path()}:weight=-2", "--out", str(tmp_path / "r")]) == 2


# ---------------------------------------------------------------------------------------------- a fitted model
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """nli-proxy on the sample, saved: a detector with an out-of-distribution map, fitted in seconds."""
    det = Detector("nli-proxy").fit(load_sample())
    return save_detector(det, tmp_path_factory.mktemp("model"))


def test_a_fitted_detector_has_an_ood_map_that_survives_saving(fitted):
    det = load_detector(fitted)
    assert det.ood_ is not None and "*" in det.ood_["groups"]
    meta = read_meta(fitted)
    assert meta["ood"]["groups"]["*"]["threshold"] == det.ood_["groups"]["*"]["threshold"]
    scores = det.detect(list(load_sample())[:4]).ood
    assert scores is not None and scores.shape == (4,) and np.isfinite(scores).all()


def test_a_tampered_ood_map_is_refused_at_load(tmp_path):
    det = Detector("nli-proxy").fit(load_sample())
    det.ood_["groups"]["*"]["whiten"] = det.ood_["groups"]["*"]["whiten"][:3]
    folder = save_detector(det, tmp_path / "m")
    with pytest.raises(ModelLoadError, match="ood_"):
        load_detector(folder)


def test_check_ood_state_names_what_is_wrong():
    rng = np.random.default_rng(0)
    state = fit_ood(rng.normal(size=(60, 3)), rng.normal(size=(30, 3)), ["a", "b", "c"])
    assert check_ood_state(state) is None
    bad = dict(state, groups={"*": dict(state["groups"]["*"], threshold=float("nan"))})
    assert "threshold" in check_ood_state(bad)
    assert "names" in check_ood_state(dict(state, names=[1, 2, 3]))
    assert "groups" in check_ood_state(dict(state, groups={"QA": state["groups"]["*"]}))


def test_ood_maps_per_task_see_what_the_pooled_map_misses():
    """Two tasks whose features differ; a new answer of task B that looks like task A's answers is out of
    distribution for B's map though the pooled map finds it close."""
    rng = np.random.default_rng(1)
    A = rng.normal(0, 1, size=(400, 2))
    B = rng.normal(6, 1, size=(400, 2))
    state = fit_ood(np.r_[A, B], np.r_[rng.normal(0, 1, (100, 2)), rng.normal(6, 1, (100, 2))], ["x", "y"],
                    groups_fit=["A"] * 400 + ["B"] * 400, groups_ref=["A"] * 100 + ["B"] * 100)
    assert set(state["groups"]) == {"*", "A", "B"}
    like_a = np.zeros((1, 2))
    assert ood_distance(state, like_a, ["B"])[0] > 1 > ood_distance(state, like_a, ["*"])[0]
    assert ood_distance(state, like_a, ["unknown task"])[0] == ood_distance(state, like_a)[0]


def test_ood_scores_of_a_row_do_not_depend_on_the_rows_scored_with_it():
    """A batch of one group takes a path without row masks (issue 41): its rows, and a mixed batch's rows, score
    as each row alone."""
    rng = np.random.default_rng(2)
    state = fit_ood(rng.normal(size=(300, 3)), rng.normal(size=(100, 3)), ["a", "b", "c"],
                    groups_fit=["A"] * 150 + ["B"] * 150, groups_ref=["A"] * 50 + ["B"] * 50, min_group_rows=50)
    X = rng.normal(size=(7, 3))
    groups = ["A", "B", "unknown", "A", "B", "A", "*"]
    dist, thr, keys = ood_scores(state, X, groups)
    assert keys.dtype == object and keys.tolist() == ["A", "B", "*", "A", "B", "A", "*"]
    for i in range(len(X)):
        d1, t1, k1 = ood_scores(state, X[i:i + 1], [groups[i]])
        assert (d1[0], t1[0], k1[0]) == (dist[i], thr[i], keys[i])
    same = ood_scores(state, X, ["A"] * len(X))
    assert same[0].tolist() == [ood_scores(state, X[i:i + 1], ["A"])[0][0] for i in range(len(X))]
    assert set(same[1].tolist()) == {state["groups"]["A"]["threshold"]}
    assert ood_scores(state, X[:0], [])[0].shape == (0,)


def test_the_ood_warning_names_the_most_unusual_features():
    rng = np.random.default_rng(0)
    state = fit_ood(rng.normal(size=(300, 3)), rng.normal(size=(100, 3)), ["a", "b", "c"])
    w = ood_warning(5.0, state, np.array([0.0, 50.0, 0.0]))
    assert w["code"] == "W004" and w["details"]["features"][0]["feature"] == "b"
    assert ood_warning(0.9, state) is None


def test_scoring_with_an_ood_map_warns_and_counts(fitted, tmp_path, capsys):
    rows = [{"id": "far", "query": "x " * 300, "context": "y", "output": "z " * 400, "task_type": "Chat"}]
    src = _write(tmp_path / "in.jsonl", rows)
    assert main(["score", str(src), "--model", str(fitted), "--out", str(tmp_path / "out.jsonl")]) == 0
    line = json.loads((tmp_path / "out.jsonl").read_text())
    assert [w["code"] for w in line["warnings"]] == ["W004"]
    assert "1 (100.0%) outside what the model knows (W004)" in capsys.readouterr().err
    from evqual.explain import render_markdown
    from evqual.results import ScoreResult

    line.pop("line")
    assert "outside what the model knows (W004) | 1" in render_markdown([ScoreResult.from_dict(line)])


# ---------------------------------------------------------------------------------------------- policy
def test_an_ood_answer_near_the_threshold_is_escalated_not_shown():
    p = Policy(escalate_band=None)
    assert p.decide(0.45, model_threshold=0.5).decision == "show"
    d = p.decide(0.45, model_threshold=0.5, ood=True)
    assert (d.decision, d.rule) == ("escalate", "out_of_distribution")
    assert p.decide(0.1, model_threshold=0.5, ood=True).decision == "show"  # far below: the model is sure enough
    assert Policy(escalate_band=None, ood_escalate_margin=None).decide(0.45, model_threshold=0.5, ood=True).decision \
        == "show"
    assert "ood_escalate_margin" in Policy(ood_escalate_margin=None).looser_than(Policy())


@settings(max_examples=40, deadline=None)
@given(risks=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=80), rate=st.floats(0.01, 0.99))
def test_a_flag_rate_budget_is_met_with_the_lowest_threshold(risks, rate):
    fitted = Policy().for_flag_rate(risks, rate)
    flagged = np.mean([fitted.decide(r).flagged for r in risks])
    assert flagged <= rate + 1e-9
    assert fitted.budget_["flagged"] == pytest.approx(flagged, abs=1e-6)
    c = fitted.general_threshold
    lower = [x for x in np.unique(np.round(risks, 6)) if x < c]
    if lower:  # the next lower cut would break the budget
        b = lower[-1]
        looser = Policy(general_threshold=float(b), sensitive_threshold=min(0.3, float(b)),
                        escalate_band=(max(0.35, float(b)), 0.65) if max(0.35, float(b)) < 0.65 else None)
        assert np.mean([looser.decide(r).flagged for r in risks]) > rate


def test_a_budget_that_cannot_be_met_says_so():
    fitted = Policy().for_flag_rate([1.0, 1.0, 0.2], 0.5)
    assert fitted.general_threshold == 1.0 and fitted.budget_["flagged"] > 0.5


def test_a_budget_relaxes_the_forcing_reasons_before_it_is_broken():
    risks = [0.1] * 10
    reasons = [("NUMBER_CONFLICT",)] * 5 + [()] * 5
    fitted = Policy().for_flag_rate(risks, 0.2, reasons=reasons)
    assert fitted.budget_["relaxed"] == ["escalate_reasons"] and fitted.escalate_reasons == ()
    assert np.mean([fitted.decide(r, reasons=x).flagged for r, x in zip(risks, reasons)]) <= 0.2


def test_a_budget_policy_must_be_fitted_and_cannot_fix_a_threshold(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        Policy(flag_rate=0.1).decide(0.5)
    with pytest.raises(ValueError, match="flag_rate"):
        Policy(flag_rate=0.1, general_threshold=0.5)._check()
    path = tmp_path / "p.toml"
    path.write_text("[budget]\nflag_rate = 0.2\n[bands]\nood_margin = false\n", encoding="utf-8")
    policy = load_policy(path)
    assert (policy.flag_rate, policy.ood_escalate_margin) == (0.2, None)
    path.write_text("[budget]\nflag_rate = 1.5\n", encoding="utf-8")
    with pytest.raises(ValueError, match="flag_rate"):
        load_policy(path)


def test_score_flag_rate_fits_the_budget_on_the_first_answers(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    assert main(["score", str(sample_path() / "response.jsonl"), "--flag-rate", "0.2", "--budget-rows", "72",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "flag-rate budget 20.0%" in err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert np.mean([x["flagged"] for x in lines]) <= 0.2 + 1e-9
    assert main(["score", "-", "--flag-rate", "0.2"]) == 2
    assert "not standard input" in capsys.readouterr().err
    assert main(["score", str(sample_path() / "response.jsonl"), "--flag-rate", "1.5", "--out", str(out)]) == 2


# ---------------------------------------------------------------------------------------------- adaptation
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 1000), C=st.sampled_from([0.01, 0.1, 1.0]))
def test_logistic_fit_finds_scikit_learns_minimum(seed, C):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + rng.normal(size=40) > 0).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    coef, b = logistic_fit(X, y, C)
    ref = LogisticRegression(C=C, tol=1e-10, max_iter=10000).fit(X, y)
    assert np.allclose(coef, ref.coef_[0], atol=1e-4) and abs(b - ref.intercept_[0]) < 1e-4


@settings(max_examples=40, deadline=None)
@given(y=st.lists(st.integers(0, 1), min_size=4, max_size=40), seed=st.integers(0, 100))
def test_the_fast_auroc_and_recall_agree_with_scikit_learn(y, seed):
    from sklearn.metrics import roc_auc_score, roc_curve

    y = np.array(y)
    if y.min() == y.max():
        return
    p = np.round(np.random.default_rng(seed).random(len(y)), 1)
    assert _auroc(y, p) == pytest.approx(roc_auc_score(y, p))
    f, t, _ = roc_curve(y, p)
    assert recall_at_fpr(y, p) == pytest.approx(t[f <= 0.1 + 1e-12].max())


def test_adaptation_is_never_worse_than_the_model_under_its_cross_validation(fitted):
    det = load_detector(fitted)
    adapted, report = det.adapt(load_sample(), learning_curve=())
    shipped = report.candidates[0]
    assert shipped["kind"] == "shipped"
    assert report.after["auroc"] >= shipped["auroc"] - 1e-9
    chosen = next(c for c in report.candidates if (c["kind"], c["C"]) == (report.kind, report.C))
    assert chosen["log_loss"] <= shipped["log_loss"] + 1e-12
    assert adapted.threshold_ == report.threshold and det.threshold_ == report.threshold_before  # a copy
    again, _ = adapted.adapt(load_sample(), learning_curve=())  # from the base risk: the adapter is replaced
    assert np.allclose(again.predict_proba(load_sample()), adapted.predict_proba(load_sample()))


@pytest.mark.parametrize("rows, message", [
    (_rows(30, label=0), "both labels"),
    (_rows(8), "too few labelled answers"),
])
def test_adaptation_refuses_data_it_cannot_learn_from(fitted, rows, message, tmp_path, capsys):
    from evqual.features import as_examples

    src = _write(tmp_path / "a.jsonl", rows)
    with pytest.raises(TrainingDataError, match=message):
        adapt_detector(load_detector(fitted), as_examples(load_data(src)), learning_curve=())
    assert main(["adapt", "--model", str(fitted), "--data", str(src), "--out", str(tmp_path / "new")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "new").exists()


def test_adapt_names_each_bad_row_and_writes_nothing(fitted, tmp_path, capsys):
    rows = _rows(30)
    rows[3]["label"] = "maybe"
    del rows[5]["output"]
    rows[7].pop("label")
    src = _write(tmp_path / "a.jsonl", rows)
    assert main(["adapt", "--model", str(fitted), "--data", str(src), "--out", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert "line 4, field 'label'" in err and "line 6, field 'output'" in err and not (tmp_path / "new").exists()
    src = _write(tmp_path / "b.jsonl", [r for i, r in enumerate(rows) if i not in (3, 5)])
    assert main(["adapt", "--model", str(fitted), "--data", str(src), "--out", str(tmp_path / "new")]) == 2
    assert "has no label" in capsys.readouterr().err


def test_adapt_writes_an_audited_model_with_its_parent_and_data(fitted, tmp_path, capsys):
    import hashlib

    src = sample_path()
    out = tmp_path / "mine"
    assert main(["adapt", "--model", str(fitted), "--data", str(src), "--out", str(out),
                 "--learning-curve", "25", "--draws", "2"]) == 0
    meta = read_meta(out)
    parent = read_meta(fitted)
    assert meta["adaptation"]["parent"]["model_sha256"] == parent["model_sha256"]
    digest = hashlib.sha256()
    for p in sorted(load_data(src).paths):
        digest.update(open(p, "rb").read())
    assert meta["adaptation"]["data"] == {"path": str(src), "sha256": digest.hexdigest(), "rows": 72,
                                          "positives": 29}
    det = load_detector(out)
    assert det.adapter_["rows"] == 72 and det.threshold_ == meta["threshold"]
    report = json.loads((out / "adaptation.json").read_text())
    assert report["learning_curve"][0]["k"] == 25 and (out / "adaptation.md").read_text().startswith("# Adaptation")
    assert main(["adapt", "--model", str(out), "--data", str(src), "--out", str(out)]) == 2  # never over the parent


def test_a_tampered_adapter_is_refused_at_load(fitted, tmp_path):
    det = load_detector(fitted)
    adapted, report = det.adapt(load_sample(), learning_curve=())
    adapted.adapter_ = dict(adapted.adapter_, intercept=float("nan"))
    record = {"parent": {"model_sha256": "0" * 64}, "data": {"sha256": "1" * 64, "rows": 72}}
    folder = save_detector(adapted, tmp_path / "m", adaptation=record)
    with pytest.raises(ModelLoadError, match="adapter_"):
        load_detector(folder)
    with pytest.raises(ValueError, match="adaptation record"):
        save_detector(adapted, tmp_path / "n")


def test_the_service_model_description_names_the_ood_map(fitted):
    from evqual.service._app import _adaptation_info, _ood_info

    det = load_detector(fitted)
    info = _ood_info(det)
    assert info["warning"] == "W004" and "*" in info["groups"]
    assert _adaptation_info(det) is None
    assert Scorer(det).score(context=["a"], output="b") is not None


def test_the_shipped_model_carries_its_map_and_warns_outside_it():
    """models/default is rebuilt with the map (issue 40, session 2): per task and over all, recorded in meta.json.
    The embedded sample (RAGTruth-like) rarely warns; a one-line hand-written answer, unlike any training
    answer, does."""
    meta = read_meta(Path(__file__).resolve().parents[1] / "models" / "default")
    groups = meta["ood"]["groups"]
    assert {"*", "QA", "Summary", "Data2txt"} <= set(groups)
    assert all(g["threshold"] > 0 and g["rows"] >= 200 for g in groups.values())
    scorer = Scorer.load()
    results = scorer.score_batch(load_sample().examples)
    share = np.mean([any(w.get("code") == "W004" for w in r.warnings) for r in results])
    assert share <= 0.1
    r = scorer.score(query="What is the wifi password?", context=["The wifi password is kiwi42."],
                     output="The password is kiwi42.", task_type="QA")
    assert [w["code"] for w in r.warnings] == ["W004"]
