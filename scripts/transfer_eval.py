"""What a saved model does on a source it may never have seen, before and after adaptation (issue 40).

    python scripts/transfer_eval.py --model models/default \
        --data ../shared/data/transfer/halueval_dialogue.jsonl --split test --json docs/bench/x.json

For the answers of ``--split`` (``dev`` while developing, ``test`` for the report):

* **zero-shot**, as ``evqual score`` decides with the default policy (:class:`evqual.scoring.Scorer`): AUROC,
  the share of faithful answers flagged (decision other than ``show``), recall of the hallucinated ones,
  expected calibration error, and how often the out-of-distribution warning ``W004`` fires;
* **k-shot adaptation** (``--ks``, ``--draws``): per draw, ``k`` answers drawn at random (seeded) are the
  labels :meth:`evqual.models.Detector.adapt` would get (the same fitting code: :func:`evqual.models.fit_adapter`,
  on answers featurized once), and the adapted risks of the *other* answers are measured: AUROC, recall at 10%
  false alarms, F1 at the adapted decision, calibration error.  Mean and spread over draws.

The model is used as saved; nothing here is fitted on the answers it measures.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="zero-shot and k-shot adaptation metrics of a model on one source")
    ap.add_argument("--model", default="models/default", help="model folder (default models/default)")
    ap.add_argument("--data", required=True, help="labelled answers (generic JSONL with split and label)")
    ap.add_argument("--split", default="dev", help="the split measured (default dev; test for the report)")
    ap.add_argument("--ks", default="25,50,100,200", help="adaptation sizes (default 25,50,100,200; 'none')")
    ap.add_argument("--draws", type=int, default=5, help="random draws per k (default 5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="at most this many answers (a seeded random subset)")
    ap.add_argument("--json", default=None, help="write the results here")
    return ap


def _summary(values) -> dict:
    values = np.asarray(values, dtype=float)
    return {"mean": float(np.nanmean(values)), "sd": float(np.nanstd(values)), "min": float(np.nanmin(values)),
            "max": float(np.nanmax(values))}


def _auroc(y, p) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if len(np.unique(y)) == 2 else float("nan")


def run(model, data, split, ks, draws, seed, limit=None) -> dict:
    import warnings

    from evqual.data import load_data
    from evqual.models import (adapter_features, adapter_risk, decision_metrics, expected_calibration_error,
                               fit_adapter, load_detector, recall_at_fpr)
    from evqual.scoring import Scorer

    det = load_detector(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = [ex for ex in load_data(Path(data)).examples if ex.split == split and ex.label is not None]
    rng = np.random.default_rng(seed)
    if limit is not None and limit < len(examples):
        examples = [examples[i] for i in sorted(rng.choice(len(examples), limit, replace=False))]
    y = np.array([ex.label for ex in examples], dtype=int)
    start = time.perf_counter()
    results = Scorer(det).score_batch(examples, batch_size=64)
    score_s = time.perf_counter() - start
    risk = np.array([r.risk for r in results])
    flagged = np.array([r.flagged for r in results])
    ood = np.array([any(w.get("code") == "W004" for w in r.warnings) for r in results])
    zero = {"n": int(len(y)), "positives": int(y.sum()), "auroc": _auroc(y, risk),
            "faithful_flagged": float(flagged[y == 0].mean()), "recall": float(flagged[y == 1].mean()),
            "recall_at_10fpr": recall_at_fpr(y, risk), "ece": expected_calibration_error(y, risk),
            "ood_rate": float(ood.mean()), "escalated_ood": int(sum(r.rule == "out_of_distribution" for r in results)),
            "ms_per_answer": 1000 * score_s / max(1, len(y))}
    out = {"model": str(model), "data": str(data), "split": split, "zero_shot": zero, "kshot": []}
    if not ks:
        return out
    frame = det.builder_.transform_with_analyses(examples, with_targets=False, with_tokens=False, lite=True)[0]
    base = det.base_proba_frame(frame)
    state = adapter_features(det, frame)
    X = frame[state["names"]].to_numpy()
    for k in ks:
        if k >= len(y) - 10:
            continue
        got = {"auroc": [], "recall_at_10fpr": [], "f1": [], "faithful_flagged": [], "ece": [], "seconds": [],
               "kind": []}
        for d in range(draws):
            idx = np.random.default_rng(seed + 1000 * k + d).permutation(len(y))
            tr, te = idx[:k], idx[k:]
            if y[tr].min() == y[tr].max():
                continue
            t0 = time.perf_counter()
            adapter, threshold = fit_adapter(det, base[tr], X[tr], y[tr], state=state, random_state=d)
            got["seconds"].append(time.perf_counter() - t0)
            p = adapter_risk(adapter, base[te], X[te])
            m = decision_metrics(y[te], p >= threshold)
            got["auroc"].append(_auroc(y[te], p))
            got["recall_at_10fpr"].append(recall_at_fpr(y[te], p))
            got["f1"].append(m["f1"])
            got["faithful_flagged"].append(m["faithful_flagged"])
            got["ece"].append(expected_calibration_error(y[te], p))
            got["kind"].append(adapter["kind"] + (f"@{adapter['C']}" if adapter["C"] is not None else ""))
        kinds = got.pop("kind")
        out["kshot"].append({"k": int(k), "draws": len(kinds), "kinds": kinds,
                             **{m: _summary(v) for m, v in got.items() if v}})
    return out


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    ks = () if args.ks.strip().lower() == "none" else tuple(int(k) for k in args.ks.split(","))
    res = run(args.model, args.data, args.split, ks, args.draws, args.seed, args.limit)
    z = res["zero_shot"]
    print(f"{Path(args.data).stem} {args.split}: zero-shot AUROC {z['auroc']:.3f}, faithful flagged "
          f"{z['faithful_flagged']:.1%}, recall {z['recall']:.3f}, ECE {z['ece']:.3f}, W004 on {z['ood_rate']:.1%} "
          f"({z['ms_per_answer']:.1f} ms/answer)")
    for row in res["kshot"]:
        print(f"  k={row['k']:4d}: AUROC {row['auroc']['mean']:.3f} ± {row['auroc']['sd']:.3f}, recall@10%FPR "
              f"{row['recall_at_10fpr']['mean']:.3f} ± {row['recall_at_10fpr']['sd']:.3f}, F1 {row['f1']['mean']:.3f}, "
              f"ECE {row['ece']['mean']:.3f}, {row['seconds']['mean']:.2f} s per adaptation")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
