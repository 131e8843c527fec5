"""Would a threshold per task help?  Measured on pooled out-of-fold ``cv5`` predictions.

Reads the ``predictions.csv`` that ``evqual reproduce`` / ``evqual evaluate``
writes (one row per held-out answer: ``task_type``, ``label``, ``fold``,
``risk``, ``pred``) and compares three ways of turning the risks into flags:

* ``shared``: the predictions as written (each fold's detector with its one
  validation-tuned threshold);
* ``per task, tuned out of fold``: for each fold, the F1-best threshold of
  each task on the *other* folds' held-out risks, applied to this fold (an
  honest estimate: no answer's own label picks its threshold);
* ``per task, best on the same rows``: the F1-best threshold of each task on
  all rows (an upper bound, not a result: it is tuned on the rows it scores).

Usage::

    python scripts/per_task_thresholds.py [docs/reports/cv5/evqual/predictions.csv] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GRID = np.round(np.arange(0.02, 0.99, 0.01), 2)


def _f1(y, pred) -> float:
    tp = int((pred & (y == 1)).sum())
    fp = int((pred & (y == 0)).sum())
    fn = int((~pred & (y == 1)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _best(y, risk) -> float:
    scores = [_f1(y, risk >= t) for t in GRID]
    return float(GRID[int(np.argmax(scores))])


def per_task_thresholds(frame) -> dict:
    """Pooled and per-task F1 of the three flagging rules (see the module docstring)."""
    y = frame["label"].to_numpy(dtype=int)
    risk = frame["risk"].to_numpy(dtype=float)
    task = frame["task_type"].astype(str).to_numpy()
    fold = frame["fold"].to_numpy()
    shared = frame["pred"].to_numpy(dtype=int).astype(bool)
    oof = np.zeros(len(frame), dtype=bool)
    oof_thresholds = {}
    for k in sorted(set(fold)):
        here = fold == k
        for t in sorted(set(task)):
            train = ~here & (task == t)
            th = _best(y[train], risk[train]) if train.any() else 0.5
            oof_thresholds.setdefault(t, []).append(th)
            sel = here & (task == t)
            oof[sel] = risk[sel] >= th
    best = np.zeros(len(frame), dtype=bool)
    best_th = {}
    for t in sorted(set(task)):
        sel = task == t
        best_th[t] = _best(y[sel], risk[sel])
        best[sel] = risk[sel] >= best_th[t]
    out = {"n": len(frame), "rules": {}}
    for name, pred in (("shared", shared), ("per task, tuned out of fold", oof),
                       ("per task, best on the same rows", best)):
        row = {"pooled_f1": _f1(y, pred), "per_task_f1": {}}
        for t in sorted(set(task)):
            sel = task == t
            row["per_task_f1"][t] = _f1(y[sel], pred[sel])
        out["rules"][name] = row
    out["oof_thresholds"] = {t: [min(v), max(v)] for t, v in oof_thresholds.items()}
    out["best_thresholds"] = best_th
    return out


def markdown(result) -> str:
    tasks = sorted(next(iter(result["rules"].values()))["per_task_f1"])
    lines = ["| flagging rule | pooled F1 | " + " | ".join(f"{t} F1" for t in tasks) + " |",
             "| --- | --- | " + " | ".join("---" for _ in tasks) + " |"]
    for name, row in result["rules"].items():
        lines.append(f"| {name} | {row['pooled_f1']:.3f} | "
                     + " | ".join(f"{row['per_task_f1'][t]:.3f}" for t in tasks) + " |")
    th = ", ".join(f"{t} {lo:.2f}-{hi:.2f}" for t, (lo, hi) in result["oof_thresholds"].items())
    lines.append(f"\nOut-of-fold per-task thresholds (range over the five folds): {th}.")
    return "\n".join(lines)


def main(argv=None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("predictions", nargs="?", default=str(ROOT / "docs/reports/cv5/evqual/predictions.csv"))
    ap.add_argument("--json", default=None, help="write the numbers here")
    args = ap.parse_args(argv)
    path = Path(args.predictions)
    if not path.is_file():
        print(f"error: {path}: no such predictions file (run `evqual reproduce` first)", file=sys.stderr)
        return 2
    frame = pd.read_csv(path)
    missing = {"task_type", "label", "fold", "risk", "pred"} - set(frame.columns)
    if missing:
        print(f"error: {path}: missing columns {sorted(missing)}", file=sys.stderr)
        return 2
    result = per_task_thresholds(frame)
    print(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
