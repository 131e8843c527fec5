"""Is an answer's risk on the scale of its sentences' risks?  Read from ``evqual reproduce``'s held-out files.

    python scripts/one_scale.py [docs/reports/cv5/evqual] [--json OUT.json]

From ``predictions.csv`` and ``sentences.csv`` (pooled out-of-fold rows that
``evqual reproduce`` / ``evqual evaluate`` write), prints:

* flagged answers (risk at or over the answer threshold) and how many of them
  have no sentence at or over the sentence threshold (issue 22 counted 853 of
  3,074 such answers before the answer risk was composed with the sentences');
* answers whose risk is below their riskiest sentence's risk, or above the sum
  of their sentences' risks (``compose="bounds"`` allows neither);
* reliability: per tenth of risk, the answers and the share hallucinated, and
  the same for the 0.75-0.81 band where the old fixed floors sat.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def one_scale(folder) -> dict:
    import numpy as np
    import pandas as pd

    folder = Path(folder)
    preds = pd.read_csv(folder / "predictions.csv")
    sents = pd.read_csv(folder / "sentences.csv")
    top = sents.groupby("id").agg(top=("risk", "max"), total=("risk", "sum"), sthr=("threshold", "first"))
    p = preds.join(top, on="id")
    has = p["top"].notna()
    flagged = p["risk"] >= p["threshold"]
    no_sentence = flagged & has & (p["top"] < p["sthr"])
    below = has & (p["risk"] < p["top"] - 1e-9)
    above = has & (p["risk"] > np.minimum(1.0, p["total"]) + 1e-9)
    y = p["label"].astype(float).to_numpy()
    r = p["risk"].to_numpy()
    bins = np.clip((r * 10).astype(int), 0, 9)
    band = (r >= 0.75) & (r < 0.81)
    return {
        "answers": int(len(p)),
        "flagged": int(flagged.sum()),
        "flagged_without_a_flagged_sentence": int(no_sentence.sum()),
        "risk_below_riskiest_sentence": int(below.sum()),
        "risk_above_sum_of_sentences": int(above.sum()),
        "reliability": [{"from": b / 10, "answers": int((bins == b).sum()),
                         "hallucinated": round(float(y[bins == b].mean()), 3)}
                        for b in range(10) if (bins == b).any()],
        "band_0.75_0.81": {"answers": int(band.sum()),
                           "hallucinated": round(float(y[band].mean()), 3) if band.any() else None},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default="docs/reports/cv5/evqual")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    try:
        out = one_scale(args.folder)
    except (OSError, KeyError, ValueError) as exc:
        print(f"one_scale: error: cannot read {args.folder}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
