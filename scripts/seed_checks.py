"""Checks behind the seed-reproduction notes in docs/RESULTS.md.

    python scripts/seed_checks.py --data ../shared/data/ragtruth --out docs/seed_checks.md

Seed 002 reports perfect precision (no false positive among 1,757 grounded test
outputs) for TF-IDF LR and for its entity/number probes.  That needs grounded
answers to essentially never carry details absent from the context.  This script
measures, on the test split, how often grounded and hallucinated responses carry
an unsupported number, an unsupported entity or a novel phrase.
"""

from __future__ import annotations

import argparse
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth")
    ap.add_argument("--out", default="docs/seed_checks.md")
    args = ap.parse_args(argv)

    import pandas as pd

    from evqual.evaluation import markdown_table
    from evqual.data import load_ragtruth
    from evqual.features import EvidenceFeaturizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_ragtruth(args.data, splits=["test"])
    fz = EvidenceFeaturizer().fit(data)
    df = fz.frame(data)
    probes = {
        "unsupported number (number.unsupported_count.v2 > 0)": df["number.unsupported_count.v2"] > 0,
        "unsupported entity (entity.unsupported_count.v1 > 0)": df["entity.unsupported_count.v1"] > 0,
        "either of the two": (df["number.unsupported_count.v2"] > 0) | (df["entity.unsupported_count.v1"] > 0),
        "novel run of 3+ content tokens (novelty.run.max.v1 >= 3)": df["novelty.run.max.v1"] >= 3,
    }
    rows = []
    for name, hit in probes.items():
        for task in ["all", "QA", "Summary", "Data2txt"]:
            m = df["task_type"].eq(task) if task != "all" else df["task_type"].notna()
            g, h = m & df["label"].eq(0), m & df["label"].eq(1)
            rows.append({"probe": name, "task": task, "grounded with probe": f"{int((hit & g).sum())} / {int(g.sum())}",
                         "share of grounded": round(float(hit[g].mean()), 3),
                         "share of hallucinated": round(float(hit[h].mean()), 3),
                         "precision if used as a detector": round(float(df.loc[hit & m, "label"].mean()), 3)})
    text = ("# Seed checks\n\nTest split of `" + args.data + f"` ({len(df)} responses). Re-run: "
            f"`python scripts/seed_checks.py --data {args.data} --out {args.out}`\n\n"
            + markdown_table(pd.DataFrame(rows)) + "\n")
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
