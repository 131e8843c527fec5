"""How much the shipped detector's behaviour on the hand-written suites moves with its training seed alone.

    python scripts/seed_spread.py --data ../shared/data/ragtruth --out /tmp/seeds --json spread.json
    python scripts/seed_spread.py --data ../shared/data/ragtruth --seeds 42,1,2,3 --jobs 2 --out /tmp/seeds
    python scripts/seed_spread.py --data ../shared/data/ragtruth --crossfit 4 --jobs 2 --out /tmp/seeds-cf

For each seed, trains ``Detector("evqual", random_state=seed)`` on every response of the data with the
settings ``models/default`` was built with (calibration and threshold on 25% of the test split's
sources; the seed picks that part, and seeds the span tagger), saves it under ``OUT/seed-<seed>``, and
scores the development suite (``tests/data/contrastive``) and the held-out kinds
(``tests/data/heldout_types``) with it as ``scripts/contrastive.py`` does: AUROC, pair accuracy, recall
and false alarms (an answer is flagged when its decision is not ``show``).  Seed 42 is the shipped
model's.  The spread across seeds is the noise any change to the detector is measured against: judge a
change by its paired differences over several seeds, not by one retrain.

With ``--crossfit K`` the recipe cross-fits its calibration and thresholds over the whole test split
(``Detector(crossfit=K)``): the seed then picks the folds, and the final model sees every row.

Costs about 4 minutes and 3 GB of memory per seed on one core (``--jobs 2``: two at a time); ``--crossfit K``
adds about K fits of a minute and a half each.  Exit
status 2 on usage errors or when the data cannot be read.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITES = {"dev": ROOT / "tests" / "data" / "contrastive", "heldout": ROOT / "tests" / "data" / "heldout_types"}
KEYS = ("auroc", "pair_accuracy", "recall", "false_alarm")


def build_and_score(data: str, seed: int, out: str, crossfit: int | None = None) -> dict:
    """Train the shipped recipe with ``random_state=seed`` (and ``crossfit``), save it in ``out``, score both
    suites."""
    from evqual.data import load_data
    from evqual.evaluation import evaluate_contrastive, load_pairs
    from evqual.models import Detector, save_detector, training_data_info
    from evqual.scoring import Scorer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(Path(data))
        det = Detector("evqual", random_state=seed, crossfit=crossfit).fit(examples, validation_pool="test")
    save_detector(det, out, training_data=training_data_info(examples, str(data), validation_split="test"))
    scorer = Scorer.load(out)
    row = {"seed": seed, "threshold": round(float(det.threshold_), 4)}
    for name, folder in SUITES.items():
        overall = evaluate_contrastive(scorer, load_pairs([folder]))["overall"]
        row[name] = {k: round(float(overall[k]), 3) for k in KEYS}
    return row


def _mean(rows, suite, key) -> float:
    return round(sum(r[suite][key] for r in rows) / len(rows), 3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth",
                    help="RAGTruth folder (default ../shared/data/ragtruth)")
    ap.add_argument("--seeds", default="42,1,2,3", help="comma-separated seeds (default 42,1,2,3; 42 is shipped)")
    ap.add_argument("--out", required=True, help="folder for the models (one seed-<seed> folder each)")
    ap.add_argument("--jobs", type=int, default=1, help="seeds trained at once (default 1)")
    ap.add_argument("--crossfit", type=int, default=None, metavar="K",
                    help="train with Detector(crossfit=K): calibration and thresholds cross-fitted over the whole "
                         "test split (K+1 fits, about K+1 times the fitting time; default: the shipped recipe)")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        ap.error("--seeds takes comma-separated integers")
    if not seeds or args.jobs < 1:
        ap.error("--seeds must name a seed and --jobs be positive")
    if args.crossfit is not None and args.crossfit < 2:
        ap.error("--crossfit must be at least 2")
    if not Path(args.data).exists():
        print(f"seed_spread: no data at {args.data}", file=sys.stderr)
        return 2
    from joblib import Parallel, delayed

    outs = [str(Path(args.out) / f"seed-{s}") for s in seeds]
    rows = Parallel(n_jobs=min(args.jobs, len(seeds)))(
        delayed(build_and_score)(args.data, s, o, args.crossfit) for s, o in zip(seeds, outs))
    print("| seed | threshold | dev AUROC | dev pair acc | dev recall | dev false alarms | "
          "held-out AUROC | held-out recall | held-out false alarms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        d, h = r["dev"], r["heldout"]
        print(f"| {r['seed']} | {r['threshold']} | {d['auroc']} | {d['pair_accuracy']} | {d['recall']} | "
              f"{d['false_alarm']} | {h['auroc']} | {h['recall']} | {h['false_alarm']} |")
    mean = {s: {k: _mean(rows, s, k) for k in KEYS} for s in SUITES}
    # the spread: max - min across seeds, the noise a change to the recipe is judged against
    spread = {s: {k: round(max(r[s][k] for r in rows) - min(r[s][k] for r in rows), 3) for k in KEYS}
              for s in SUITES}
    spread["threshold"] = round(max(r["threshold"] for r in rows) - min(r["threshold"] for r in rows), 4)
    print(f"| mean | | {mean['dev']['auroc']} | {mean['dev']['pair_accuracy']} | {mean['dev']['recall']} | "
          f"{mean['dev']['false_alarm']} | {mean['heldout']['auroc']} | {mean['heldout']['recall']} | "
          f"{mean['heldout']['false_alarm']} |")
    print(f"| spread (max - min) | {spread['threshold']} | {spread['dev']['auroc']} | "
          f"{spread['dev']['pair_accuracy']} | {spread['dev']['recall']} | {spread['dev']['false_alarm']} | "
          f"{spread['heldout']['auroc']} | {spread['heldout']['recall']} | {spread['heldout']['false_alarm']} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"data": args.data, "crossfit": args.crossfit, "rows": rows,
                                               "mean": mean, "spread": spread}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
