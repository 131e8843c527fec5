"""Measure the evidence engine and its claim model (issue 22): cv5, both hand-written suites, leave-one-type-out.

    python scripts/evidence_eval.py --data ../shared/data/ragtruth --json docs/bench/evidence_engine.json

What it does, all with :mod:`evqual.evidence`:

1. reads every RAGTruth answer's claims (a claim is positive when a gold span
   overlaps it) and makes transformed claims from the faithful ones
   (:func:`evqual.evidence.transformed_rows`, tagged by what they change);
2. **cv5**: five folds grouped by source over the test split, every train-split
   answer on every fitting side, transformed claims only from the fitting
   side's answers; claim AUROC and answer AUROC with the answer's risk = its
   highest claim risk (the claim model alone, not the detector);
3. fits the claim model on all of RAGTruth and scores the two development
   suites (``tests/data/contrastive``: ten types; ``tests/data/heldout_types``:
   thirteen other types, written before the engine and never tuned on) per
   type: AUROC, pairwise accuracy, and recall / false alarms at the threshold
   that maximised F1 on the cv5 answers;
4. **leave-one-type-out**: for each suite type, refits without the
   transformations that imitate it (:data:`LOTO_TAGS`) and scores that type.

The suites are only scored: nothing here is fitted or tuned on them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITES = {"contrastive": ROOT / "tests" / "data" / "contrastive",
          "heldout_types": ROOT / "tests" / "data" / "heldout_types"}

LOTO_TAGS = {
    # tests/data/contrastive
    "number": ("value",), "date": ("value",), "unit": ("value",), "entity": ("borrow:name",),
    "role_swap": ("swap",), "negation": ("polarity",), "field": ("polarity",),
    "antonym": ("opposite", "logic:comparison", "logic:direction"),
    "quantifier": ("logic:quantity", "drop:quantity"), "addition": (),
    # tests/data/heldout_types
    "spatial": ("logic:direction",), "membership": ("borrow:name", "borrow:word"),
    "attribution": ("borrow:name", "logic:role"), "part_whole": ("logic:quantity", "drop:quantity"),
    "frequency": ("logic:frequency", "value"), "possession": ("logic:role", "borrow:name"),
    "purpose": ("logic:cause", "borrow:word"), "causal": ("logic:cause", "borrow:word"),
    "sequence": ("logic:time", "logic:order", "swap"), "certainty": ("logic:modality", "drop:modality"),
    "condition": ("logic:condition", "drop:condition", "logic:quantity"),
    "scope": ("logic:quantity", "drop:quantity"), "ranking": ("logic:comparison", "logic:order"),
}
"""For leave-one-type-out: the transformation tags that imitate each suite type (a type with none is scored by
the full model: no transformation imitates it)."""


def _auc(y, p):
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y)
    return float(roc_auc_score(y, p)) if 0 < y.sum() < len(y) else float("nan")


def _answer_max(risk, owner, n):
    out = np.zeros(n)
    np.maximum.at(out, owner, risk)
    return out


def _suite_rows(path, engine):
    from evqual.evaluation import load_pairs, pairs_to_examples

    pairs = load_pairs(path)
    exs = pairs_to_examples(pairs)
    from evqual.evidence import claim_rows

    X, _, owner, _ = claim_rows(exs, engine)
    types = {p["pair"]: p["type"] for p in pairs}
    para = {p["pair"]: p["paraphrase"] for p in pairs}
    return exs, X, owner, types, para


def _suite_metrics(exs, risk_by_answer, types, para, threshold, only_type=None):
    rows = [(ex.source_id, types[ex.source_id], ex.label, r) for ex, r in zip(exs, risk_by_answer)]
    if only_type is not None:
        rows = [r for r in rows if r[1] == only_type]
    y = [r[2] for r in rows]
    p = [r[3] for r in rows]
    by_pair: dict = {}
    for pid, _, lab, r in rows:
        by_pair.setdefault(pid, {})[lab] = r
    pw = np.mean([1.0 if v[1] > v[0] else (0.5 if v[1] == v[0] else 0.0) for v in by_pair.values()])
    fa = [r for r in rows if r[2] == 0]
    ha = [r for r in rows if r[2] == 1]
    fa_para = [r for r in fa if para[r[0]]]
    return {"pairs": len(by_pair), "auroc": _auc(y, p), "pairwise": float(pw),
            "recall": float(np.mean([r[3] >= threshold for r in ha])) if ha else float("nan"),
            "false_alarms": float(np.mean([r[3] >= threshold for r in fa])) if fa else float("nan"),
            "false_alarms_paraphrase": float(np.mean([r[3] >= threshold for r in fa_para])) if fa_para else
            float("nan")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth",
                    help="RAGTruth folder (default: ../shared/data/ragtruth)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--augment-weight", type=float, default=0.3, help="weight of transformed claims (default: 0.3)")
    ap.add_argument("--no-loto", action="store_true", help="skip leave-one-type-out")
    args = ap.parse_args(argv)

    from sklearn.model_selection import GroupKFold

    from evqual.data import load_ragtruth
    from evqual.evidence import ClaimModel, EvidenceEngine, claim_rows, transformed_rows

    t0 = time.time()
    try:
        data = load_ragtruth(args.data)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read RAGTruth at {args.data}: {exc}", file=sys.stderr)
        return 2
    exs = list(data.examples)
    engine = EvidenceEngine()
    X, y, owner, _ = claim_rows(exs, engine)
    t_read = time.time() - t0
    XA, yA, tags, ownerA = transformed_rows(exs, engine)
    tags = np.asarray(tags)
    print(f"read {len(exs)} answers ({len(y)} claims) in {t_read:.1f} s; {len(yA)} transformed claims", flush=True)
    split = np.asarray([ex.split for ex in exs])
    src = np.asarray([ex.source_id for ex in exs])
    task = np.asarray([ex.task_type for ex in exs])
    labels = np.asarray([int(any(True for _ in (ex.spans or ()))) if ex.spans is not None else -1 for ex in exs])
    w = args.augment_weight

    def fit(answer_mask, exclude=()):
        keep = answer_mask[owner] & (y >= 0)
        keepA = answer_mask[ownerA] & ~np.isin(tags, list(exclude))
        Xf = np.vstack([X[keep], XA[keepA]])
        yf = np.r_[y[keep], yA[keepA]]
        sw = np.r_[np.ones(keep.sum()), np.full(keepA.sum(), w)]
        return ClaimModel().fit(Xf, yf, sample_weight=sw)

    # ---- cv5 over the test split
    test = np.where(split == "test")[0]
    claim_risk = np.full(len(y), np.nan)
    for a, b in GroupKFold(n_splits=5).split(test, groups=src[test]):
        mask = np.zeros(len(exs), bool)
        mask[test[a]] = True
        mask[split == "train"] = True
        m = fit(mask)
        rows = np.isin(owner, test[b])
        claim_risk[rows] = m.predict_proba(X[rows])[:, 1]
    in_test = np.isin(owner, test)
    ans = _answer_max(np.nan_to_num(claim_risk[in_test]), owner[in_test], len(exs))
    yt, pt = labels[test], ans[test]
    from sklearn.metrics import f1_score, precision_recall_curve

    prec, rec, thr = precision_recall_curve(yt, pt)
    f1 = 2 * prec * rec / np.maximum(prec + rec, 1e-12)
    best = int(np.nanargmax(f1[:-1]))
    threshold = float(thr[best])
    cv = {"claim_auroc": _auc(y[in_test], claim_risk[in_test]), "answer_auroc": _auc(yt, pt),
          "answer_f1": float(f1_score(yt, pt >= threshold)), "threshold": threshold,
          "by_task": {t: _auc(yt[task[test] == t], pt[task[test] == t]) for t in sorted(set(task[test]))}}
    print("cv5", json.dumps(cv), flush=True)

    # ---- the suites, full model
    full = fit(np.ones(len(exs), bool))
    out = {"protocol": "claim model alone (answer risk = highest claim risk); cv5 = RAGTruth test split, "
                       "5 folds grouped by source, train split on every fitting side",
           "augment_weight": w, "cv5": cv, "suites": {}, "loto": {}}
    for name, path in SUITES.items():
        sexs, SX, sowner, types, para = _suite_rows(path, engine)
        risk = _answer_max(full.predict_proba(SX)[:, 1], sowner, len(sexs))
        res = {"overall": _suite_metrics(sexs, risk, types, para, threshold)}
        for t in sorted(set(types.values())):
            res[t] = _suite_metrics(sexs, risk, types, para, threshold, only_type=t)
        out["suites"][name] = res
        print(name, json.dumps(res["overall"]), flush=True)
        if args.no_loto:
            continue
        loto = {}
        for t in sorted(set(types.values())):
            excl = LOTO_TAGS.get(t, ())
            m = fit(np.ones(len(exs), bool), exclude=excl) if excl else full
            r2 = _answer_max(m.predict_proba(SX)[:, 1], sowner, len(sexs))
            loto[t] = dict(_suite_metrics(sexs, r2, types, para, threshold, only_type=t), left_out=list(excl))
        out["loto"][name] = loto
    out["seconds"] = round(time.time() - t0, 1)
    text = json.dumps(out, indent=2, default=float)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(_markdown(out))
    return 0


def _markdown(out) -> str:
    lines = [f"cv5 (claim model alone): claim AUROC {out['cv5']['claim_auroc']:.3f}, answer AUROC "
             f"{out['cv5']['answer_auroc']:.3f}, answer F1 {out['cv5']['answer_f1']:.3f}, by task "
             + ", ".join(f"{t} {v:.3f}" for t, v in out["cv5"]["by_task"].items())]
    for name, res in out["suites"].items():
        lines += ["", f"{name}", "", "| type | pairs | AUROC | pairwise | recall | false alarms | FA paraphrase | "
                  "LOTO AUROC | LOTO pairwise |", "|---|---|---|---|---|---|---|---|---|"]
        for t, m in res.items():
            lo = out["loto"].get(name, {}).get(t, {})
            lines.append(f"| {t} | {m['pairs']} | {m['auroc']:.3f} | {m['pairwise']:.3f} | {m['recall']:.3f} | "
                         f"{m['false_alarms']:.3f} | {m['false_alarms_paraphrase']:.3f} | "
                         f"{lo.get('auroc', float('nan')):.3f} | {lo.get('pairwise', float('nan')):.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
