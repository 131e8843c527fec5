"""Univariate AUROC of every feature on a dataset (response and sentence level).

    python scripts/feature_signal.py --data ../shared/data/ragtruth --split test --out docs/feature_signal.md

Descriptive only: each feature alone, no model, no tuning.
"""

from __future__ import annotations

import argparse
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="dataset (default: the embedded sample)")
    ap.add_argument("--split", action="append", help="keep only this split (RAGTruth layout; repeatable)")
    ap.add_argument("--out", required=True, help="markdown file to write")
    args = ap.parse_args(argv)

    from evqual.evaluation import markdown_table
    from evqual.data import load_data, sample_path
    from evqual.evaluation import univariate_auroc
    from evqual.features import EvidenceFeaturizer

    path = args.data or sample_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_data(path, **({"splits": args.split} if args.split else {}))
    parts = [f"# Univariate feature signal\n\nData: `{path}`"
             + (f", split(s) {', '.join(args.split)}" if args.split else "")
             + f"; {len(data)} responses. Each feature used alone as a score (AUROC = max(a, 1-a); "
               "direction + means higher values go with hallucination). Descriptive: no model, no tuning.\n"
               "Re-run: `python scripts/feature_signal.py "
             + (f"--data {args.data} " if args.data else "")
             + "".join(f"--split {s} " for s in (args.split or []))
             + f"--out {args.out}`\n"]
    for level in ("response", "sentence"):
        fz = EvidenceFeaturizer(level=level).fit(data)
        df = fz.frame(data)
        df = df[df["label"].notna()]
        names = list(fz.get_feature_names_out())
        table = univariate_auroc(df[names].to_numpy(), df["label"].astype(int), names, groups=df["task_type"])
        parts.append(f"\n## {level.capitalize()} level ({len(df)} rows, {int(df['label'].sum())} positive)\n")
        parts.append(markdown_table(table))
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(parts) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
