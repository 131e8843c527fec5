"""A partial `evqual reproduce` rewrites only the rows and sections it ran (issue 10)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from evqual.evaluation import _reproduce as rp
from evqual.evaluation import merge_block, render_block, update_results_block
from evqual.models import METHODS


def _binary(x: float) -> dict:
    return {"n": 100, "accuracy": x, "precision": x, "recall": x, "f1": x, "mcc": x, "auroc": x, "auprc": x,
            "brier": 1 - x, "macro_f1": x, "threshold": 0.5}


def fake_metrics(name: str, protocol: str, x: float) -> dict:
    m = {"method": name, "protocol": protocol, "method_source": "test", "response": _binary(x)}
    if name in ("evqual", "evqual-meta", "ecs-span"):
        m["sentence"] = _binary(x / 2)
        m["span"] = {"projection": _binary(x / 3), "tagger": _binary(x / 4) if name != "ecs-span" else None}
        m["attribution"] = {"flagged_sentences": 10, "with_evidence": 9, "coverage": 0.9, "mean_ecs_flagged": x}
    if name in ("evqual", "evqual-meta"):
        m["per_task"] = {"QA": _binary(x), "Summary": _binary(x / 2)}
    if name == "evqual" and protocol == "cv5":
        m["policy"] = {"decisions": [], "escalated_share": x, "hallucinated_shown_share": x,
                       "grounded_not_shown_share": x, "sensitive_share": x}
    return m


@pytest.fixture(autouse=True)
def _simple_policy_table(monkeypatch):
    import evqual.evaluation._policy as pol

    monkeypatch.setattr(pol, "policy_table",
                        lambda p: f"| decision | share |\n| --- | --- |\n| show | {p['escalated_share']:.3f} |")


NAMES = ["majority", "tfidf-lr", "ecs-span", "evqual", "evqual-meta"]


def full_results(x: float) -> dict:
    res = {p: {n: fake_metrics(n, p, x) for n in NAMES} for p in ("cv5", "official")}
    res["ablation"] = {"support only": _binary(x), "coverage only": _binary(x)}
    return res


def block(results, elapsed=100.0) -> str:
    return render_block(results, data_label="`fake`", out_dir="reports", elapsed=elapsed).rstrip("\n")


def changed_lines(old: str, new: str) -> tuple[list, list]:
    import difflib

    diff = list(difflib.ndiff(old.rstrip("\n").split("\n"), new.rstrip("\n").split("\n")))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_partial_majority_cv5_changes_only_its_row():
    old = block(full_results(0.5))
    partial = block({"cv5": {"majority": fake_metrics("majority", "cv5", 0.25)}}, elapsed=3.0)
    merged = merge_block(old, partial, ran={"cv5": ["majority"]})
    removed, added = changed_lines(old, merged)
    assert len(removed) == len(added) == 1
    assert removed[0].startswith("| majority | test | 100 | 0.500")
    assert added[0].startswith("| majority | test | 100 | 0.250")
    # the official table's majority row and the header line are untouched
    assert merged.split("\n")[0] == old.split("\n")[0]
    assert merged.count("| majority |") == 2


def test_partial_evqual_official_replaces_its_rows_and_task_table_only():
    old = block(full_results(0.5))
    partial = block({"official": {"evqual": fake_metrics("evqual", "official", 0.2)}})
    merged = merge_block(old, partial, ran={"official": ["evqual"]})
    removed, added = changed_lines(old, merged)
    assert removed and len(removed) == len(added)
    assert all("evqual" in line or line.startswith("| QA") or line.startswith("| Summary") for line in removed)
    cv5_part = merged.split("protocol `official`")[0]
    assert cv5_part == old.split("protocol `official`")[0]
    assert old.split("Feature-group ablation")[1] == merged.split("Feature-group ablation")[1]
    # the evqual-meta task table of `official` is unchanged, evqual's changed
    assert old.split("`evqual-meta` by task (official):")[1] == merged.split("`evqual-meta` by task (official):")[1]
    assert old.split("`evqual` by task (official):")[1] != merged.split("`evqual` by task (official):")[1]


def test_ablation_and_policy_rewritten_only_when_run():
    old = block(full_results(0.5))
    new_res = {"cv5": {"evqual": fake_metrics("evqual", "cv5", 0.2)}}
    merged = merge_block(old, block(new_res), ran={"cv5": ["evqual"]})
    assert old.split("Feature-group ablation")[1] == merged.split("Feature-group ablation")[1]
    assert "| show | 0.200 |" in merged and "| show | 0.500 |" not in merged  # evqual cv5 owns the policy
    new_res["ablation"] = {"support only": _binary(0.1)}
    merged = merge_block(old, block(new_res), ran={"cv5": ["evqual"]})
    abl = merged.split("Feature-group ablation")[1]
    assert "| support only | 0.100 |" in abl and "coverage only" not in abl


def test_new_method_is_inserted_in_methods_order_and_new_protocol_after_cv5():
    res = full_results(0.5)
    del res["cv5"]["tfidf-lr"]
    del res["official"]
    old = block(res)
    merged = merge_block(old, block({"cv5": {"tfidf-lr": fake_metrics("tfidf-lr", "cv5", 0.3)},
                                     "official": {"majority": fake_metrics("majority", "official", 0.3)}}),
                         ran={"cv5": ["tfidf-lr"], "official": ["majority"]})
    rows = [line.split(" | ")[0][2:] for line in merged.split("protocol `cv5` (")[1].split("\n\n")[1].split("\n")[2:]]
    assert rows == ["majority", "tfidf-lr", "ecs-span", "evqual", "evqual-meta"]
    assert [list(METHODS).index(r) for r in rows] == sorted(list(METHODS).index(r) for r in rows)
    assert merged.index("protocol `official`") > merged.index("`evqual-meta` by task (cv5)")
    assert merged.index("protocol `official`") < merged.index("decision policy")
    _, added = changed_lines(old, merged)
    assert not any(line.startswith("| majority | test | 100 | 0.500") for line in added)


def test_merge_of_the_same_block_is_identity_and_the_file_keeps_text_outside(tmp_path):
    old = block(full_results(0.5))
    assert merge_block(old, old, ran={"cv5": NAMES, "official": NAMES}) == old
    md = tmp_path / "R.md"
    md.write_text("# R\n\nintro\n\n<!-- BEGIN generated -->\nold\n<!-- END generated -->\n\noutro\n")
    update_results_block(md, old)
    assert md.read_text().startswith("# R\n\nintro\n\n<!-- BEGIN generated -->\n_Generated")
    assert md.read_text().endswith("<!-- END generated -->\n\noutro\n")


def _fake_run(monkeypatch, tmp_path, x: float):
    """Patch the expensive parts of `reproduce` (featurizing, fitting, figures)."""
    monkeypatch.setattr(rp, "build_frame", lambda data: ([0] * 10, None, 0.0))
    monkeypatch.setattr(rp, "evaluate", lambda method, frame, featurize_seconds, protocol: SimpleNamespace(
        metrics=fake_metrics(method if isinstance(method, str) else method.name, protocol, x), predictions=None))

    def write_report(r, out, **kw):
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(json.dumps(r.metrics))

    monkeypatch.setattr(rp, "write_report", write_report)
    seen = {}
    monkeypatch.setattr(rp, "write_comparison",
                        lambda ms, out, title: seen.setdefault(out.name, [m["method"] for m in ms]))
    monkeypatch.setattr("evqual.features.as_examples", lambda data: [])
    import evqual.evaluation._policy as pol

    monkeypatch.setattr(pol, "policy_summary", lambda exs, preds: fake_metrics("evqual", "cv5", x)["policy"])
    return seen


def test_reproduce_full_run_writes_everything_and_partial_only_its_rows(monkeypatch, tmp_path):
    md = tmp_path / "RESULTS.md"
    md.write_text("# Results\n\nhand-written\n\n<!-- BEGIN generated -->\nstale\n<!-- END generated -->\n")
    _fake_run(monkeypatch, tmp_path, 0.5)
    out = tmp_path / "reports"
    rp.reproduce(None, out_dir=out, results_md=md, data_label="fake", log=lambda m: None)
    full = rp.read_results_block(md)
    assert "stale" not in full and "hand-written" in md.read_text()
    for name in METHODS:
        assert f"\n| {name} | test |" in full
    assert "Feature-group ablation" in full

    seen = _fake_run(monkeypatch, tmp_path, 0.25)
    rp.reproduce(None, out_dir=out, results_md=md, methods=["majority"], protocols=("cv5",), ablation=False,
                 data_label="fake", log=lambda m: None)
    partial = rp.read_results_block(md)
    removed, added = changed_lines(full, partial)
    assert [r[:30] for r in removed] == ["| majority | test | 100 | 0.50"]
    assert [a[:30] for a in added] == ["| majority | test | 100 | 0.25"]
    # the comparison of cv5 still lists every method reported under the folder
    assert seen["cv5"] == list(METHODS)

    # a run of all methods, both protocols and the ablation rewrites the whole block again
    _fake_run(monkeypatch, tmp_path, 0.75)
    rp.reproduce(None, out_dir=out, results_md=md, data_label="fake again", log=lambda m: None)
    again = rp.read_results_block(md)
    assert again.startswith("_Generated by `evqual reproduce` on fake again")
    assert "| 100 | 0.500 |" not in again and "| 100 | 0.250 |" not in again
    assert again.count("| test | 100 | 0.750 |") == 2 * len(METHODS)
