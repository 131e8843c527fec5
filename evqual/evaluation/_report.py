"""Report folders: ``metrics.json``, markdown and CSV tables, PNG figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .._markdown import markdown_table

__all__ = ["write_report", "write_comparison", "metrics_table", "feature_importances"]

_COLS = ["n", "accuracy", "precision", "recall", "f1", "macro_f1", "mcc", "auroc", "auprc", "brier",
         "tp", "fp", "tn", "fn", "threshold"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


_EXTRA_COLS = ("faithful_flagged", "ood_rate")
"""Columns a table shows when its metric dicts hold them (the ``transfer`` protocol's)."""


def metrics_table(rows: dict, first: str = "group"):
    """A DataFrame of metric dicts keyed by group name."""
    import pandas as pd

    records = []
    for name, m in rows.items():
        if m is None:
            continue
        rec = {first: name}
        rec.update({k: m.get(k) for k in _COLS if k in m})
        rec.update({k: m[k] for k in _EXTRA_COLS if k in m})
        records.append(rec)
    return pd.DataFrame(records)


def feature_importances(result, frame=None, *, n_repeats: int = 3, max_rows: int = 1500, random_state: int = 42):
    """Impurity importances (per fold, averaged) and permutation importances.

    Permutation importance is computed on the last fold's held-out rows (at
    most ``max_rows``), permuting each response-level feature column, with the
    drop in AUROC as the score; only when ``frame`` is given.
    """
    import pandas as pd

    impurity = {}
    for det in result.detectors:
        model = det.model_
        names = imp = None
        if hasattr(model, "feature_importances"):
            got = model.feature_importances()
            if got is not None:
                names, imp = got
        elif hasattr(model, "steps"):
            est = model.steps[-1][1]
            if hasattr(est, "feature_importances_"):
                names = list(model[:-1].get_feature_names_out())
                imp = est.feature_importances_
        if names is not None:
            for n, v in zip(names, imp):
                impurity.setdefault(n, []).append(float(v))
    imp_df = pd.DataFrame([(n, float(np.mean(v))) for n, v in impurity.items()],
                          columns=["feature", "importance"]).sort_values("importance", ascending=False)
    perm_df = None
    if frame is not None and result.detectors:
        from sklearn.metrics import roc_auc_score

        det = result.detectors[-1]
        _, _, test_idx = result.folds[-1]
        rng = np.random.default_rng(random_state)
        idx = test_idx if len(test_idx) <= max_rows else rng.choice(test_idx, max_rows, replace=False)
        X = frame.iloc[np.sort(idx)].reset_index(drop=True)
        y = X["label"].astype(int).to_numpy()
        if len(np.unique(y)) == 2:
            base = roc_auc_score(y, det.predict_proba_frame(X))
            from ..features import feature_spec

            cols = []
            for c in X.columns:
                try:
                    feature_spec(c)
                    cols.append(c)
                except KeyError:
                    pass
            rows = []
            for c in cols:
                drops = []
                for _ in range(n_repeats):
                    Xp = X.copy()
                    Xp[c] = rng.permutation(Xp[c].to_numpy())
                    drops.append(base - roc_auc_score(y, det.predict_proba_frame(Xp)))
                rows.append((c, float(np.mean(drops)), float(np.std(drops))))
            perm_df = pd.DataFrame(rows, columns=["feature", "auroc_drop", "std"]).sort_values(
                "auroc_drop", ascending=False)
    return imp_df, perm_df


def _save(fig, path: Path) -> None:
    plt = _plt()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _curves(preds, out: Path, title: str):
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import confusion_matrix, precision_recall_curve, roc_curve

    plt = _plt()
    y = preds["label"].astype(int).to_numpy()
    r = preds["risk"].to_numpy()
    files = {}
    if len(np.unique(y)) == 2:
        fig, ax = plt.subplots(figsize=(4.5, 4))
        fpr, tpr, _ = roc_curve(y, r)
        ax.plot(fpr, tpr, label="all")
        for task, g in preds.groupby("task_type"):
            gy = g["label"].astype(int).to_numpy()
            if len(np.unique(gy)) == 2:
                f, t, _ = roc_curve(gy, g["risk"])
                ax.plot(f, t, lw=0.8, label=str(task))
        ax.plot([0, 1], [0, 1], "k:", lw=0.6)
        ax.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC: {title}")
        ax.legend(fontsize=7)
        _save(fig, out / "roc.png")
        files["roc"] = "roc.png"
        fig, ax = plt.subplots(figsize=(4.5, 4))
        p, rc, _ = precision_recall_curve(y, r)
        ax.plot(rc, p)
        ax.axhline(y.mean(), color="k", ls=":", lw=0.6)
        ax.set(xlabel="recall", ylabel="precision", title=f"PR: {title}")
        _save(fig, out / "pr.png")
        files["pr"] = "pr.png"
        fig, ax = plt.subplots(figsize=(4.5, 4))
        frac, mean = calibration_curve(y, np.clip(r, 0, 1), n_bins=10, strategy="quantile")
        ax.plot(mean, frac, "o-")
        ax.plot([0, 1], [0, 1], "k:", lw=0.6)
        ax.set(xlabel="predicted risk", ylabel="observed hallucination rate", title=f"Reliability: {title}")
        _save(fig, out / "reliability.png")
        files["reliability"] = "reliability.png"
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
    cm = confusion_matrix(y, preds["pred"].to_numpy(), labels=[0, 1])
    ax.imshow(cm, cmap="Blues")
    for (i, j), v in np.ndenumerate(cm):
        ax.text(j, i, str(v), ha="center", va="center", color="black")
    ax.set(xticks=[0, 1], yticks=[0, 1], xticklabels=["grounded", "halluc."], yticklabels=["grounded", "halluc."],
           xlabel="predicted", ylabel="gold", title="Confusion matrix")
    _save(fig, out / "confusion.png")
    files["confusion"] = "confusion.png"
    return files


def _bar(df, value, out_path: Path, title: str, top: int = 20):
    plt = _plt()
    d = df.head(top).iloc[::-1]
    fig, ax = plt.subplots(figsize=(6, 0.25 * len(d) + 1))
    ax.barh(d["feature"], d[value])
    ax.set(title=title, xlabel=value)
    ax.tick_params(axis="y", labelsize=7)
    _save(fig, out_path)


def write_report(result, out_dir, *, frame=None, importance: bool = True, data_note: str = "") -> Path:
    """Write a report folder for one :class:`EvaluationResult`.

    Files: ``metrics.json``, ``metrics.md``, ``predictions.csv``,
    ``sentences.csv`` (sentence-level methods), ``subgroups/*.csv``,
    ``roc.png``, ``pr.png``, ``reliability.png``, ``confusion.png`` and, with
    ``importance``, ``importance_impurity.{csv,png}`` and (given ``frame``)
    ``importance_permutation.{csv,png}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m = result.metrics
    (out / "metrics.json").write_text(json.dumps(_jsonable(m), indent=2) + "\n", encoding="utf-8")
    result.predictions.to_csv(out / "predictions.csv", index=False)
    if result.sentences is not None:
        result.sentences.to_csv(out / "sentences.csv", index=False)
    sub = out / "subgroups"
    sub.mkdir(exist_ok=True)
    tables = {"task": m["per_task"], "model": m["per_model"], "quality": m["per_quality"]}
    parts = [f"# {m['method']} under {m['protocol']}\n",
             f"Protocol `{m['protocol']}`, calibration `{m['calibration']}`, threshold rule "
             f"`{m['threshold_rule']}`"
             + (f", calibration and thresholds cross-fitted over {m['crossfit']} folds" if m.get("crossfit") else "")
             + f"; {m['n']} held-out responses pooled over {m['folds']} fold(s). "
             + data_note + "\n",
             "## Response level\n", markdown_table(metrics_table({"all": m["response"]})) + "\n"]
    if m.get("ood_rate") is not None:
        parts.append(f"Out-of-distribution warning (W004) on {m['ood_rate']:.1%} of the held-out answers.\n")
    if m.get("transfer"):
        t = metrics_table(m["transfer"], first="held out")
        cols = ["held out", "n", "auroc", "f1", "precision", "recall", "faithful_flagged"]
        t = t[[c for c in cols if c in t.columns] + [c for c in t.columns if c not in cols]]
        t.to_csv(sub / "transfer.csv", index=False)
        parts += [f"## Held-out units (split `{m.get('heldout_split', 'test')}`; the pooled tables above and "
                  "below mix them: a row held out as a source and as a task counts twice)\n",
                  markdown_table(t) + "\n"]
    for name, rows in tables.items():
        t = metrics_table(rows, first=name)
        t.to_csv(sub / f"{name}.csv", index=False)
        parts += [f"### By {name}\n", markdown_table(t) + "\n"]
    import pandas as pd

    types = pd.DataFrame([{"type": k, **v} for k, v in m["per_type"].items()])
    types.to_csv(sub / "type.csv", index=False)
    parts += ["### By hallucination type (share flagged; grounded: share not flagged)\n",
              markdown_table(types) + "\n"]
    if m.get("sentence"):
        parts += ["## Sentence level\n", markdown_table(metrics_table({"all": m["sentence"]})) + "\n"]
        t = metrics_table(m["sentence_per_task"], first="task")
        t.to_csv(sub / "sentence_task.csv", index=False)
        parts += ["### By task\n", markdown_table(t) + "\n"]
    if m.get("span"):
        sp = m["span"]
        rows = [{"spans from": kind, "task": task, "precision": v["precision"], "recall": v["recall"], "f1": v["f1"]}
                for task, per in [("all", {"projection": sp["projection"], "tagger": sp["tagger"]})]
                + list(sp["per_task"].items())
                for kind, v in per.items() if v]
        t = pd.DataFrame(rows)
        t.to_csv(sub / "span.csv", index=False)
        parts += ["## Character spans (union of positions per response, micro-averaged)\n",
                  markdown_table(t) + "\n"]
    if m.get("attribution"):
        a = m["attribution"]
        parts += ["## Attribution coverage (seed 004 Table 10)\n",
                  f"{a['with_evidence']} of {a['flagged_sentences']} flagged sentences cite a non-empty evidence "
                  f"chunk (coverage {a['coverage']:.3f}); mean ECS of flagged sentences "
                  f"{a['mean_ecs_flagged']:.3f}.\n"]
    parts += ["## Latency\n", f"featurize {m['latency']['featurize_ms_per_item']:.3f} ms/response, "
              f"predict {m['latency']['predict_ms_per_item']:.3f} ms/response (batch, one process)\n"]
    files = _curves(result.predictions, out, f"{m['method']} ({m['protocol']})")
    if importance:
        imp, perm = feature_importances(result, frame)
        if len(imp):
            imp.to_csv(out / "importance_impurity.csv", index=False)
            _bar(imp, "importance", out / "importance_impurity.png", f"{m['method']}: impurity importance")
            parts += ["## Impurity importance (top 15)\n", markdown_table(imp.head(15)) + "\n"]
        if perm is not None:
            perm.to_csv(out / "importance_permutation.csv", index=False)
            _bar(perm, "auroc_drop", out / "importance_permutation.png",
                 f"{m['method']}: permutation importance (AUROC drop)")
            parts += ["## Permutation importance (AUROC drop, last fold, top 15)\n",
                      markdown_table(perm.head(15)) + "\n"]
    parts += ["## Figures\n", " ".join(f"![{k}]({v})" for k, v in files.items()) + "\n"]
    (out / "metrics.md").write_text("\n".join(parts), encoding="utf-8")
    return out


def write_comparison(metrics_list, out_dir, *, title: str = "Methods") -> Path:
    """F1 / AUROC / AUPRC bars and a table across methods (one ``metrics.json`` dict each)."""
    import pandas as pd

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for m in metrics_list:
        r = {"method": m["method"], "source": m.get("method_source", ""), "protocol": m["protocol"]}
        r.update({k: m["response"][k] for k in ("accuracy", "precision", "recall", "f1", "mcc", "auroc", "auprc",
                                                 "brier")})
        s = m.get("sentence") or {}
        r.update({"sentence_f1": s.get("f1"), "sentence_auroc": s.get("auroc")})
        rows.append(r)
    df = pd.DataFrame(rows)
    df.to_csv(out / "comparison.csv", index=False)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(df)), 4))
    x = np.arange(len(df))
    for k, (col, w) in enumerate([("f1", -0.27), ("auroc", 0.0), ("auprc", 0.27)]):
        ax.bar(x + w, df[col].fillna(0), width=0.27, label=col.upper())
    ax.set_xticks(x)
    ax.set_xticklabels(df["method"], rotation=45, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8)
    _save(fig, out / "comparison.png")
    (out / "comparison.md").write_text(f"# {title}\n\n{markdown_table(df)}\n\n![comparison](comparison.png)\n",
                                       encoding="utf-8")
    return out
