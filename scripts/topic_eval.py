"""Precision, recall and F1 of the topic tagger on the hand-labelled topic sets.

Usage::

    python scripts/topic_eval.py                       # markdown tables
    python scripts/topic_eval.py --json docs/bench/topics.json
    python scripts/topic_eval.py --errors              # list the misses of the dev set
    python scripts/topic_eval.py --latency             # time per TopicTagger.tag call on RAGTruth
    python scripts/topic_eval.py --policy my.toml      # the tagger of a policy file

Sets (see tests/data/topics/README.md):

* ``dev``: tests/data/topics/topics_dev.jsonl, reported whole and as its two
  halves, ``dev-tune`` (ids ending in an even digit; rules were tuned on these)
  and ``dev-held`` (odd digit; only reported).
* ``ragtruth``: tests/data/topics/topics_ragtruth_sample.jsonl, the labels of
  RAGTruth sources; the query and context are read from the RAGTruth copy
  (``--data``), never stored in the repository. Reported whole and for its
  ``uniform`` stratum (the one drawn uniformly from all sources).

To measure another version of the tagger, point ``PYTHONPATH`` at it, e.g.
``git archive 9cd1d49 evqual | tar -x -C /tmp/evqual-base`` and
``PYTHONPATH=/tmp/evqual-base python scripts/topic_eval.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "tests" / "data" / "topics" / "topics_dev.jsonl"
SAMPLE = ROOT / "tests" / "data" / "topics" / "topics_ragtruth_sample.jsonl"


def read_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: invalid JSON: {e}")
            if not isinstance(row.get("topics"), list):
                raise SystemExit(f"{path}:{n}: field 'topics' must be a list; got {row.get('topics')!r}")
            rows.append(row)
    return rows


def scores(gold, pred, topics):
    """Per-topic and micro precision/recall/F1/support of predicted label sets."""
    out = {}
    tot = [0, 0, 0]
    for t in topics:
        tp = sum(t in g and t in p for g, p in zip(gold, pred))
        fp = sum(t not in g and t in p for g, p in zip(gold, pred))
        fn = sum(t in g and t not in p for g, p in zip(gold, pred))
        out[t] = _prf(tp, fp, fn)
        tot = [tot[0] + tp, tot[1] + fp, tot[2] + fn]
    out["micro"] = _prf(*tot)
    none_gold = [not g for g in gold]
    out["no-topic items tagged"] = sum(n and bool(p) for n, p in zip(none_gold, pred))
    out["no-topic items"] = sum(none_gold)
    out["items"] = len(gold)
    return out


def _prf(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3), "support": tp + fn,
            "tp": tp, "fp": fp, "fn": fn}


def markdown(name, res, topics):
    lines = [f"**{name}** ({res['items']} items; {res['no-topic items tagged']} of "
             f"{res['no-topic items']} no-topic items tagged)", "",
             "| topic | precision | recall | F1 | support | tp | fp | fn |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t in [*topics, "micro"]:
        s = res[t]
        lines.append(f"| {t} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | {s['support']} "
                     f"| {s['tp']} | {s['fp']} | {s['fn']} |")
    return "\n".join(lines) + "\n"


def load_ragtruth(path):
    from evqual.data import load_data
    first = {}
    for ex in load_data(path, warn=False):
        first.setdefault(ex.source_id, ex)
    return first


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", default=str(DEV), help="the development set (JSONL)")
    ap.add_argument("--sample", default=str(SAMPLE), help="the labelled RAGTruth sample (JSONL: ids and labels)")
    ap.add_argument("--data", default=None, help="the RAGTruth copy (default ../shared/data/ragtruth)")
    ap.add_argument("--no-ragtruth", action="store_true", help="skip the RAGTruth sample")
    ap.add_argument("--policy", default=None, help="evaluate the tagger of this policy TOML file")
    ap.add_argument("--json", default=None, help="also write the results as JSON to this file")
    ap.add_argument("--errors", action="store_true", help="print the dev set's misses (and RAGTruth ids)")
    ap.add_argument("--latency", action="store_true",
                    help="time TopicTagger.tag on every RAGTruth example (one source per query/context)")
    args = ap.parse_args(argv)

    import evqual
    from evqual.data import default_ragtruth_path
    from evqual.scoring import TopicTagger, load_policy

    tagger = load_policy(args.policy).tagger if args.policy else TopicTagger()
    topics = list(tagger.topics_)
    print(f"evqual from {Path(evqual.__file__).parent}; tagger {tagger!r}\n")
    results = {"evqual": str(Path(evqual.__file__).parent), "tagger": repr(tagger), "sets": {}}

    dev = read_jsonl(args.dev)
    pred = {r["id"]: tagger.tag(r["query"], r["context"]) for r in dev}
    halves = {"dev": dev,
              "dev-tune (ids ending in an even digit)": [r for r in dev if int(r["id"][-1]) % 2 == 0],
              "dev-held (ids ending in an odd digit)": [r for r in dev if int(r["id"][-1]) % 2 == 1]}
    for name, rows in halves.items():
        res = scores([set(r["topics"]) for r in rows], [set(pred[r["id"]]) for r in rows], topics)
        results["sets"][name] = res
        print(markdown(name, res, topics))
    if args.errors:
        for r in dev:
            g, p = set(r["topics"]), set(pred[r["id"]])
            if g != p:
                print(f"  {r['id']} gold={sorted(g)} pred={sorted(p)} | {r['query'][:70]} | {r['note']}")
        print()

    examples = None
    if not args.no_ragtruth or args.latency:
        examples = load_ragtruth(args.data or default_ragtruth_path())
    if not args.no_ragtruth:
        sample = read_jsonl(args.sample)
        missing = [r["source_id"] for r in sample if r["source_id"] not in examples]
        if missing:
            raise SystemExit(f"{args.sample}: source ids not in the RAGTruth copy: {missing[:5]}")
        rpred = {r["source_id"]: tagger.tag(examples[r["source_id"]].query, examples[r["source_id"]].context)
                 for r in sample}
        sets = {"ragtruth sample": sample,
                "ragtruth sample, uniform stratum": [r for r in sample if r["stratum"] == "uniform"]}
        for name, rows in sets.items():
            res = scores([set(r["topics"]) for r in rows], [set(rpred[r["source_id"]]) for r in rows], topics)
            results["sets"][name] = res
            print(markdown(name, res, topics))
        if args.errors:
            for r in sample:
                g, p = set(r["topics"]), set(rpred[r["source_id"]])
                if g != p:
                    print(f"  source {r['source_id']} ({r['stratum']}) gold={sorted(g)} pred={sorted(p)} {r['note']}")
            print()
        counts = {t: 0 for t in topics}
        for ex in examples.values():
            for t in tagger.tag(ex.query, ex.context):
                counts[t] += 1
        results["ragtruth sources tagged"] = {"sources": len(examples), **counts}
        print(f"RAGTruth sources tagged (of {len(examples)}): "
              + ", ".join(f"{t} {n}" for t, n in counts.items()) + "\n")

    if args.latency:
        pairs = [(ex.query, ex.context) for ex in examples.values()]
        for q, c in pairs[:50]:  # warm the regex caches
            tagger.tag(q, c)
        # Each call timed 3 times, the fastest kept (the machine is shared: the minimum is the
        # least disturbed measurement of the call itself).
        per_call = []
        for q, c in pairs:
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                tagger.tag(q, c)
                best = min(best, time.perf_counter() - t0)
            per_call.append(best * 1e3)
        per_call.sort()
        lat = {"calls": len(pairs), "mean_ms": round(statistics.mean(per_call), 4),
               "p50_ms": round(statistics.median(per_call), 4),
               "p99_ms": round(per_call[int(0.99 * (len(per_call) - 1))], 4), "max_ms": round(per_call[-1], 4)}
        results["latency"] = lat
        print(f"TopicTagger.tag over {lat['calls']} RAGTruth sources (query and context; each call best of 3): "
              f"mean {lat['mean_ms']} ms, p50 {lat['p50_ms']} ms, p99 {lat['p99_ms']} ms, max {lat['max_ms']} ms\n")

    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
