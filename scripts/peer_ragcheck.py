"""Speed of the classical peer ragcheck on the same answers as ``scripts/bench.py`` (issue 23).

ragcheck (https://github.com/RaquelGarciah/ragcheck, MIT) detects hallucinations
with lexical features (``ragcheck.features.extract_features``: containment,
Jaccard, TF-IDF cosine, number overlap, novel n-grams, negation, per-sentence
support) and an XGBoost classifier (``ragcheck.config.XGBOOST_PARAMS``).  This
script drives its own code from a checkout's ``src/`` folder; nothing of it is
copied into evqual, and it is not a dependency:

    git clone https://github.com/RaquelGarciah/ragcheck /tmp/ragcheck
    pip install xgboost-cpu
    taskset -c 1 python scripts/peer_ragcheck.py --src /tmp/ragcheck/src \\
        --data ../shared/data/ragtruth --limit 500 --json docs/bench/peer_ragcheck.json

What it measures, on one core (XGBoost with ``n_jobs=1``), like
``scripts/bench.py featurize`` and ``score``:

* ``featurize``: ``extract_features`` over every answer of the data in one
  call (ragcheck's batch path), answers per second;
* ``score``: one answer at a time, its features and ``predict_proba``, p50 and
  p95 milliseconds over the first ``--limit`` answers (after one warm-up);
* ``batch``: the same answers in batches of 64, answers per second;
* peak RSS.

The classifier is fitted on the features of all answers (the latency of a
fitted model is what is measured; its quality is not, and is not reported).
A RAGTruth answer's context passages are joined with blank lines into the one
``context`` string ragcheck reads.  Bad arguments exit 2 with one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _import_ragcheck(src: Path):
    if not (src / "ragcheck" / "features.py").is_file():
        raise FileNotFoundError(f"{src}: no ragcheck/features.py there (pass the src/ folder of a ragcheck checkout)")
    sys.path.insert(0, str(src))
    from ragcheck import config, features  # noqa: E402

    return features, config


def run(src, data, *, limit: int = 500, batch_size: int = 64) -> dict:
    """Run the peer's featurizer and classifier and return the timings (see the module docstring)."""
    import numpy as np
    import pandas as pd

    features, config = _import_ragcheck(Path(src))
    try:
        from xgboost import XGBClassifier
    except ImportError:
        raise RuntimeError("xgboost is not installed (pip install xgboost-cpu)") from None
    from evqual.bench import peak_rss_mb
    from evqual.data import load_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(data).examples
    df = pd.DataFrame({"output": [ex.output for ex in examples],
                       "context": ["\n\n".join(ex.context) if isinstance(ex.context, (list, tuple)) else ex.context
                                   for ex in examples],
                       "task_type": [ex.task_type for ex in examples]})
    y = np.array([ex.label for ex in examples])
    start = time.perf_counter()
    X = features.extract_features(df)
    featurize_s = time.perf_counter() - start
    params = dict(config.XGBOOST_PARAMS, n_jobs=1)
    clf = XGBClassifier(**params).fit(X, y)
    head = df.iloc[:limit]
    clf.predict_proba(features.extract_features(head.iloc[:1]))  # warm-up
    times = []
    for i in range(len(head)):
        start = time.perf_counter()
        clf.predict_proba(features.extract_features(head.iloc[i:i + 1]))
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1000.0
    start = time.perf_counter()
    for i in range(0, len(head), batch_size):
        clf.predict_proba(features.extract_features(head.iloc[i:i + batch_size]))
    batch_s = time.perf_counter() - start
    return {"peer": "ragcheck", "answers": len(df), "featurize_answers_per_s": round(len(df) / featurize_s, 1),
            "score_answers": len(head), "ms_p50": round(float(np.percentile(ms, 50)), 3),
            "ms_p95": round(float(np.percentile(ms, 95)), 3),
            "batch_answers_per_s": round(len(head) / batch_s, 1), "batch_size": batch_size,
            "peak_rss_mb": round(peak_rss_mb(), 1), "xgboost_params": params}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="the src/ folder of a ragcheck checkout")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ragtruth"),
                    help="dataset folder or file (default ../shared/data/ragtruth)")
    ap.add_argument("--limit", type=int, default=500, help="answers scored one at a time (default 500)")
    ap.add_argument("--json", help="where to write the result")
    args = ap.parse_args(argv)
    if args.limit < 1:
        ap.error("--limit must be >= 1")
    try:
        result = run(args.src, args.data, limit=args.limit)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"peer_ragcheck: error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
