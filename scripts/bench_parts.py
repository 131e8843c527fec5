"""CPU time per answer of three parts of scoring, for same-run comparisons of two checkouts.

    taskset -c 1 python scripts/bench_parts.py --data ../shared/data/ragtruth --json parts.json
    PYTHONPATH=/tmp/old taskset -c 1 python scripts/bench_parts.py --data ../shared/data/ragtruth --json old.json

(the second line times the evqual of a worktree at ``/tmp/old``: ``git worktree add /tmp/old <commit>``).

Parts, each over the first ``--limit`` answers in file order (RAGTruth: about six answers to a context, so
contexts are indexed once per six answers, as in ``bench.py score``):

- ``engine``: ``EvidenceEngine().read(output, chunks, query)`` for every answer (its chunks as the featurizer
  cuts them), a fresh engine a round;
- ``featurize``: ``EvidenceFeaturizer().fit(first 50).transform(answers)``, a fresh featurizer a round;
- ``models``: the shipped detector's ``predict_proba_and_sentences_frame`` on each answer's one-row frame
  (the frames built beforehand): the response, sentence, claim and text models and their calibration.

Each part reports the best of ``--repeat`` rounds of *process* CPU time (``time.process_time``), which a
busy neighbour on a shared machine disturbs less than wall time.  Only public API is used, so the script
also times an older checkout put first on ``PYTHONPATH``.  Exit status 2 when the data cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeat)):
        best = min(best, fn())
    return best


def bench_parts(data=None, *, limit: int = 1500, repeat: int = 2, parts=("engine", "featurize", "models")) -> dict:
    """``{part: ms per answer}`` (see the module docstring), with ``answers`` and the evqual path used."""
    import evqual
    from evqual.data import load_data, sample_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples[:limit]
    n = len(examples)
    out = {"answers": n, "evqual": str(evqual.__file__), "repeat": repeat}
    if not n:
        return out
    if "engine" in parts:
        from evqual.evidence import EvidenceEngine

        # the chunks the featurizer reads (an example's chunks, or its whole context)
        chunks = [[e.context[c.start:c.end] for c in e.chunks] or [e.context] for e in examples]

        def engine():
            eng = EvidenceEngine()
            t = time.process_time()
            for e, ch in zip(examples, chunks):
                eng.read(e.output, ch, e.query or "")
            return time.process_time() - t

        out["engine_ms"] = round(1000.0 * _best(engine, repeat) / n, 3)
    if "featurize" in parts:
        from evqual.features import EvidenceFeaturizer

        def featurize():
            fz = EvidenceFeaturizer().fit(examples[:50])
            t = time.process_time()
            fz.transform(examples)
            return time.process_time() - t

        out["featurize_ms"] = round(1000.0 * _best(featurize, repeat) / n, 3)
    if "models" in parts:
        from evqual.models import Detector, default_model_path

        det = Detector.load(default_model_path())
        frames = [det.builder_.transform_with_analyses([e], with_targets=False, with_tokens=False, lite=True)[0]
                  for e in examples]
        det.predict_proba_and_sentences_frame(frames[0])

        def models():
            t = time.process_time()
            for fr in frames:
                det.predict_proba_and_sentences_frame(fr)
            return time.process_time() - t

        out["models_ms"] = round(1000.0 * _best(models, repeat) / n, 3)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="CPU time per answer of the evidence engine, featurizing and the "
                                             "models (same-run comparisons; see the module docstring)")
    ap.add_argument("--data", default=None, help="dataset path (default: the embedded sample)")
    ap.add_argument("--limit", type=int, default=1500, help="first N answers (default 1500)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds per part; the best is reported (default 2)")
    ap.add_argument("--parts", default="engine,featurize,models",
                    help="comma-separated parts among engine, featurize, models (default: all)")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = set(parts) - {"engine", "featurize", "models"}
    if unknown or args.limit < 1 or args.repeat < 1:
        ap.error(f"--parts takes engine, featurize, models (got {sorted(unknown)}); --limit and --repeat >= 1"
                 if unknown else "--limit and --repeat must be >= 1")
    try:
        res = bench_parts(args.data, limit=args.limit, repeat=args.repeat, parts=parts)
    except (OSError, ValueError) as exc:
        print(f"bench_parts: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(res, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
