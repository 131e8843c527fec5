"""Measure evqual.text.language_warning: precision/recall on the labelled dev set, false alarms on RAGTruth.

    python scripts/language_eval.py --data ../shared/data/ragtruth

The dev set (tests/data/language/language_dev.jsonl) holds short texts written for this check, each with
``expect_warning`` (true for answers not in English). RAGTruth's outputs are all English, so every
warning there is a false alarm.
"""

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from evqual.text import language_warning

DEV = Path(__file__).resolve().parents[1] / "tests" / "data" / "language" / "language_dev.jsonl"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth", help="RAGTruth folder ('' to skip)")
    ap.add_argument("--dev", default=str(DEV))
    ap.add_argument("--show", action="store_true", help="print every miss and false alarm")
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in Path(args.dev).read_text(encoding="utf-8").splitlines() if line.strip()]
    tp = fp = fn = tn = 0
    by_lang = defaultdict(lambda: [0, 0])  # warned, total
    for r in rows:
        w = language_warning(r["text"]) is not None
        by_lang[r["lang"]][0] += w
        by_lang[r["lang"]][1] += 1
        if r["expect_warning"]:
            tp += w
            fn += not w
        else:
            fp += w
            tn += not w
        if args.show and w != r["expect_warning"]:
            print(("MISS " if r["expect_warning"] else "FALSE ALARM ") + r["lang"] + ": " + r["text"][:100])
    print(f"dev set: {len(rows)} texts ({tp + fn} not English, {fp + tn} English), "
          f"{len(by_lang)} languages")
    print(f"  precision {tp / max(1, tp + fp):.3f}, recall {tp / max(1, tp + fn):.3f}, "
          f"false alarms on English {fp}/{fp + tn}")
    print("  | language | texts | warned |\n  | --- | --- | --- |")
    for lang in sorted(by_lang, key=lambda k: (k != "en", k)):
        print(f"  | {lang} | {by_lang[lang][1]} | {by_lang[lang][0]} |")
    if args.data:
        from evqual.data import load_data

        outs = [ex.output for ex in load_data(args.data)]
        t = time.perf_counter()
        alarms = [o for o in outs if language_warning(o) is not None]
        s = time.perf_counter() - t
        print(f"RAGTruth outputs (all English): {len(alarms)} warned of {len(outs)} = "
              f"{len(alarms) / len(outs):.4%} false alarms; {1e3 * s / len(outs):.2f} ms per output")
        if args.show:
            for o in alarms[:20]:
                print("  RAGTruth alarm:", o[:150].replace("\n", " "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
