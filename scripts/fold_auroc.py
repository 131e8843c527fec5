"""Pooled against per-fold AUROC of the cv5 reports: how much pooling the folds costs each method.

    python scripts/fold_auroc.py                        # docs/reports/cv5, every method
    python scripts/fold_auroc.py --reports docs/reports/cv5 --json fold_auroc.json

``cv5`` pools the out-of-fold predictions of five folds, each fold's model calibrated on its own
validation part.  A method whose scores carry little signal gets a flat calibration map in each fold, so
its calibrated risks sit in a narrow band that differs from fold to fold; pooled, the folds' bands
interleave and the AUROC falls, though the ranking inside every fold is unchanged.  This script reads the
reports' ``predictions.csv`` (answers) and ``sentences.csv`` (sentences) and prints, per method and level,
the pooled AUROC, the mean of the five per-fold AUROCs, and each fold's range of risks.  Reading the
reports costs a few seconds; nothing is trained.  Exit status 2 when the folder has no reports.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fold_auroc(frame) -> dict:
    """``{"pooled", "fold_mean", "folds": [...], "risk_ranges": [[min, max], ...]}`` of a frame with
    ``label``, ``risk`` and ``fold`` columns (a fold with one class only is left out of the mean)."""
    from sklearn.metrics import roc_auc_score

    out = {"n": int(len(frame)), "pooled": None, "fold_mean": None, "folds": [], "risk_ranges": []}
    if frame["label"].nunique() == 2:
        out["pooled"] = round(float(roc_auc_score(frame["label"], frame["risk"])), 3)
    for _, part in frame.groupby("fold", sort=True):
        out["risk_ranges"].append([round(float(part["risk"].min()), 3), round(float(part["risk"].max()), 3)])
        if part["label"].nunique() == 2:
            out["folds"].append(round(float(roc_auc_score(part["label"], part["risk"])), 3))
    if out["folds"]:
        out["fold_mean"] = round(sum(out["folds"]) / len(out["folds"]), 3)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", default=str(ROOT / "docs" / "reports" / "cv5"),
                    help="a protocol's reports folder (default: docs/reports/cv5)")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    import pandas as pd

    folder = Path(args.reports)
    res = {}
    for method_dir in sorted(p for p in folder.glob("*") if p.is_dir()):
        levels = {}
        for level, name in (("response", "predictions.csv"), ("sentence", "sentences.csv")):
            path = method_dir / name
            if not path.is_file():
                continue
            try:
                frame = pd.read_csv(path, usecols=["label", "risk", "fold"])
            except (ValueError, OSError, pd.errors.ParserError) as exc:
                print(f"fold_auroc: {path}: {exc}", file=sys.stderr)
                return 2
            levels[level] = fold_auroc(frame)
        if levels:
            res[method_dir.name] = levels
    if not res:
        print(f"fold_auroc: no predictions.csv or sentences.csv under {folder}", file=sys.stderr)
        return 2
    print("| method | level | n | pooled AUROC | per-fold mean | folds | risk range, first two folds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for method, levels in res.items():
        for level, r in levels.items():
            print(f"| {method} | {level} | {r['n']} | {r['pooled']} | {r['fold_mean']} | "
                  f"{', '.join(map(str, r['folds']))} | {r['risk_ranges'][:2]} |")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
