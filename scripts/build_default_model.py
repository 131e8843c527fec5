"""Build the shipped model ``models/default`` from the repository, or check that it rebuilds.

    python scripts/build_default_model.py --data ../shared/data/ragtruth --out models/default
    python scripts/build_default_model.py --data ../shared/data/ragtruth --check models/default

Building trains ``evqual`` on every response of the data exactly as
``evqual train --data DATA --method evqual --out models/default`` does (calibration
and threshold on 25% of the test split's sources; with ``--crossfit K``, cross-fitted
over the whole test split as ``evqual train --crossfit K`` does) and records, beside the model,
the library versions and the prediction fingerprint on the embedded sample
(:func:`evqual.models.prediction_fingerprint`) and the ``cv5`` metrics of
``docs/reports/cv5/evqual/metrics.json`` when that file exists.

``--check`` rebuilds the model in a temporary folder with the settings its
``meta.json`` records and compares two things: the *predictions* (the prediction
fingerprint: the SHA-256 of every float the model predicts on the embedded
sample) and the *model file* (its SHA-256: ``model.evqpack``, or ``model.skops``).  Exit 0 when the
predictions are the same, 1 when they differ.  Same predictions with different
file bytes mean the file was written by other code (an older evqual whose saved
structure lacked a field, say) although it predicts the same: rebuild it with
``--out`` to ship what the current code writes.  Training is deterministic (fixed
seeds, one thread), so on the same data, code and library versions the rebuild is
equal bit for bit; other versions of numpy, scipy or scikit-learn, or another
CPU's floating-point kernels, may change the last bits.

The logic lives in :func:`evqual.models.build_model` and
:func:`evqual.models.check_rebuild`; this script only parses arguments.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_METRICS = REPO / "docs" / "reports" / "cv5" / "evqual" / "metrics.json"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="build models/default, or check that it rebuilds: the same predictions on "
                                             "the embedded sample, and the same model file bytes (training on the "
                                             "full RAGTruth copy takes a few minutes)")
    ap.add_argument("--data", default="../shared/data/ragtruth",
                    help="training data (default: ../shared/data/ragtruth)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", metavar="DIR", help="write the model here (for instance models/default)")
    what.add_argument("--check", metavar="DIR", help="rebuild the model in DIR and compare its predictions (exit 1 "
                                                     "when they differ) and its file bytes")
    ap.add_argument("--method", default="evqual", help="method to build with --out (default: evqual)")
    ap.add_argument("--augment", choices=("contrastive.v1",), default=None,
                    help="contrastive augmentation of the fitting rows (default: none)")
    ap.add_argument("--no-evidence-floor", action="store_true",
                    help="build without the evidence floor (Detector(evidence_floor=False))")
    ap.add_argument("--crossfit", type=int, default=None, metavar="K",
                    help="cross-fit calibration and thresholds over the whole test split with K folds "
                         "(Detector(crossfit=K): K+1 fits; default: one validation part)")
    ap.add_argument("--metrics", default=None, metavar="FILE",
                    help="evaluation metrics recorded with --out (default: docs/reports/cv5/<method>/"
                         "metrics.json when it exists)")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from evqual.models import ModelLoadError, build_model, check_rebuild

    data = Path(args.data)
    if not data.exists():
        print(f"build_default_model: error: no data at {data}", file=sys.stderr)
        return 2
    if args.check:
        try:
            result = check_rebuild(args.check, data)
        except ModelLoadError as exc:
            print(f"build_default_model: error: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(result, indent=2))
        verdict = ("rebuilds: the same predictions on the embedded sample" if result["ok"]
                   else "does NOT rebuild: its predictions on the embedded sample differ")
        print(f"{args.check} {verdict} (prediction fingerprint {result['expected'][:12]} vs rebuilt "
              f"{result['rebuilt'][:12]}; threshold {result['threshold']} vs {result['rebuilt_threshold']})",
              file=sys.stderr)
        if result["versions"]:
            print("library versions differ from the model's meta.json (recorded -> here): " + ", ".join(
                f"{k} {old or 'not recorded'} -> {new}" for k, (old, new) in result["versions"].items()),
                file=sys.stderr)
        if result["same_file"]:
            print("model file: the same bytes (sha256 "
                  f"{result['model_sha256'][:12]})", file=sys.stderr)
        else:
            print(f"model file: the bytes differ (sha256 {result['model_sha256'][:12]} vs rebuilt "
                  f"{result['rebuilt_model_sha256'][:12]}): the shipped file was written by other code"
                  + (" although it predicts the same; rebuild it with --out to ship what this code writes"
                     if result["ok"] else ""), file=sys.stderr)
        return 0 if result["ok"] else 1
    metrics_path = Path(args.metrics) if args.metrics else DEFAULT_METRICS.parent.parent / args.method / "metrics.json"
    metrics = None
    if metrics_path.is_file():
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    elif args.metrics:
        print(f"build_default_model: error: no metrics file {metrics_path}", file=sys.stderr)
        return 2
    if args.crossfit is not None and args.crossfit < 2:
        print("build_default_model: error: --crossfit must be at least 2", file=sys.stderr)
        return 2
    folder = build_model(data, args.out, method=args.method, augment=args.augment, metrics=metrics,
                         evidence_floor=not args.no_evidence_floor, crossfit=args.crossfit)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    print(f"wrote {folder} (threshold {meta['threshold']}, model sha256 {meta['model_sha256']}, "
          f"fingerprint {meta['prediction_fingerprint']['sha256']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
