"""Speed and memory benchmarks (run by hand; numbers go to docs/RESULTS.md).

    python scripts/bench.py featurize --data ../shared/data/ragtruth --json bench_featurize.json
    python scripts/bench.py featurize --data ../shared/data/ragtruth --entity-backend spacy --json b.json
    python scripts/bench.py score --data ../shared/data/ragtruth --json bench_score.json
    python scripts/bench.py stages --data ../shared/data/ragtruth --json bench_stages.json
    python scripts/bench.py fit --data ../shared/data/ragtruth --json bench_fit.json
    python scripts/bench.py sizes --json docs/bench/sizes.json   # very long answers and contexts
    python scripts/bench.py startup --json docs/bench/startup.json   # evqual --version, import, model load, 1-line score
    python scripts/bench.py batch --data ../shared/data/ragtruth --json docs/bench/batch.json  # 1 and 2 workers
    python scripts/bench.py trees --json docs/bench/trees.json   # numpy tree walker against scikit-learn

The benchmark pins itself to one CPU core and one BLAS thread (but ``batch``,
which measures 1 and 2 worker processes); the logic lives in :mod:`evqual.bench`,
this script only parses arguments.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="evqual benchmarks (one core)")
    sub = ap.add_subparsers(dest="command", required=True)
    fz = sub.add_parser("featurize", help="featurize every response of a dataset on one process")
    fz.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    fz.add_argument("--json", required=True, help="where to write the result JSON")
    fz.add_argument("--entity-backend", choices=["regex", "spacy"], default="regex")
    fz.add_argument("--repeat", type=int, default=3, help="timed runs; the best is reported (default 3)")
    sc = sub.add_parser("score", help="latency of scoring one response at a time with a saved model")
    sc.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    sc.add_argument("--model", default=None, help="model folder (default: models/default)")
    sc.add_argument("--json", required=True, help="where to write the result JSON")
    sc.add_argument("--limit", type=int, default=None, help="score only the first N responses")
    sc.add_argument("--new-contexts", action="store_true",
                    help="only the first answer to each context: every answer brings a context not indexed yet")
    st = sub.add_parser("stages", help="p50 time of each stage of scoring one answer (where the time goes)")
    st.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    st.add_argument("--model", default=None, help="model folder (default: models/default)")
    st.add_argument("--json", required=True, help="where to write the result JSON")
    st.add_argument("--limit", type=int, default=500, help="answers to time (default 500)")
    ft = sub.add_parser("fit", help="time to fit a method on all of a dataset (as `evqual train`)")
    ft.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    ft.add_argument("--method", default="evqual")
    ft.add_argument("--json", required=True, help="where to write the result JSON")
    sz = sub.add_parser("sizes", help="time and peak memory of one answer of 1k-100k sentences, against a "
                                      "1-100 MB context, of 3k-30k sentences against 2k-20k passages, or of the "
                                      "hostile shapes of issue 39 up to the size caps (numbers_*, salad_*) (each case "
                                      "in a fresh process on one core; all cases: 30 minutes or more and up to 13 GB)")
    sz.add_argument("--json", required=True, help="where to write the result JSON")
    sz.add_argument("--cases", default=None, help="comma-separated subset of the cases (default: all)")
    sz.add_argument("--timeout", type=float, default=900.0, help="seconds after which a case is stopped")
    sz.add_argument("--max-rss-gb", type=float, default=16.0, help="resident memory at which a case is stopped")
    su = sub.add_parser("startup", help="`evqual --version`, `import evqual.models` and Detector.load(), "
                                        "`import evqual.scoring` and Scorer.load() (lean), and a one-line "
                                        "`evqual score` wall times (medians of fresh processes)")
    su.add_argument("--model", default=None, help="model folder (default: models/default)")
    su.add_argument("--json", required=True, help="where to write the result JSON")
    su.add_argument("--repeat", type=int, default=10, help="runs of `evqual --version` (default 10)")
    su.add_argument("--load-repeat", type=int, default=5, help="processes that import and load (default 5)")
    bt = sub.add_parser("batch", help="answers/s and start-up of batch scoring with 1 and 2 workers: "
                                      "`evqual score --jobs`, Dask and Spark (the dask/spark extras)")
    bt.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    bt.add_argument("--json", required=True, help="where to write the result JSON")
    bt.add_argument("--engines", default="jobs,dask,spark", help="comma-separated subset of jobs,dask,spark")
    bt.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    bt.add_argument("--limit", type=int, default=None, help="score only the first N answers")
    tr = sub.add_parser("trees", help="exact tree inference: the numpy walker against scikit-learn's "
                                      "predict_proba, per boosted model and batch size (about a minute)")
    tr.add_argument("--model", default=None, help="model folder (default: models/default)")
    tr.add_argument("--json", required=True, help="where to write the result JSON")
    args = ap.parse_args(argv)
    out_dir = os.path.dirname(os.path.abspath(args.json))
    if not os.path.isdir(out_dir):
        print(f"bench.py: error: --json {args.json}: folder {out_dir} does not exist", file=sys.stderr)
        return 2
    if os.path.exists(args.json):
        print(f"bench.py: note: {args.json} exists and will be overwritten when the benchmark ends", file=sys.stderr)
    try:
        result = _run(args)
    except (ImportError, OSError, ValueError) as exc:  # a missing extra, unreadable data, a bad model: one line
        print(f"bench.py {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if isinstance(result, dict):
        from evqual import build_info

        result["reading_path"] = build_info()["path"]  # compiled or pure Python (issue 41)
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


def _run(args) -> dict:
    from evqual.bench import (SIZE_CASES, bench_batch, bench_featurize, bench_fit, bench_score, bench_sizes,
                              bench_stages, bench_startup, bench_trees, pin_one_core)

    if args.command == "batch":
        result = bench_batch(args.data, engines=tuple(args.engines.split(",")),
                             workers=tuple(int(w) for w in args.workers.split(",")), limit=args.limit)
    elif args.command == "sizes":
        cases = tuple(args.cases.split(",")) if args.cases else SIZE_CASES
        result = bench_sizes(cases, timeout=args.timeout, max_rss_gb=args.max_rss_gb,
                             progress=lambda row: print(json.dumps(row), file=sys.stderr, flush=True))
    elif args.command == "startup":
        result = bench_startup(args.model, repeat=args.repeat, load_repeat=args.load_repeat)
    elif args.command == "fit":
        result = bench_fit(args.data, args.method)  # both cores, as `evqual train` runs
    else:
        pin_one_core()
        if args.command == "score":
            result = bench_score(args.data, args.model, limit=args.limit, new_contexts=args.new_contexts)
        elif args.command == "stages":
            result = bench_stages(args.data, args.model, limit=args.limit)
        elif args.command == "trees":
            result = bench_trees(args.model)
        else:
            result = bench_featurize(args.data, entity_backend=args.entity_backend, repeat=args.repeat)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
