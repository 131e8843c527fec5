"""Score the contrastive development suite (faithful/hallucinated answer pairs) with a saved model.

    python scripts/contrastive.py                                  # tests/data/contrastive, models/default
    python scripts/contrastive.py --pairs tests/data/contrastive/pairs_a.jsonl --json /tmp/contrastive.json
    python scripts/contrastive.py --model models/default --policy policy.toml --markdown contrastive.md

Prints a markdown summary (by edit type, by task, reason codes); the logic
lives in :mod:`evqual.evaluation` (``load_pairs``, ``evaluate_contrastive``,
``contrastive_markdown``), this script only parses arguments.  Exit status 2
when a pair file, the policy or the model cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PAIRS = ROOT / "tests" / "data" / "contrastive"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="+", action="extend", metavar="PATH",
                    help=f"pair files or folders of *.jsonl (default: {DEFAULT_PAIRS.relative_to(ROOT)})")
    ap.add_argument("--model", default=None, help="model folder (default: the shipped models/default)")
    ap.add_argument("--policy", default=None, help="policy TOML (default: the built-in policy)")
    ap.add_argument("--json", default=None, help="write the full result (with per-answer rows) here")
    ap.add_argument("--markdown", default=None, help="write the markdown summary here")
    args = ap.parse_args(argv)

    from evqual.evaluation import contrastive_markdown, evaluate_contrastive, load_pairs

    try:
        pairs = load_pairs(args.pairs or [DEFAULT_PAIRS])
    except (ValueError, OSError) as exc:
        print(f"error: bad pair file: {exc}", file=sys.stderr)
        return 2
    policy = None
    if args.policy:
        from evqual.scoring import load_policy

        try:
            policy = load_policy(args.policy)
        except (ValueError, OSError) as exc:
            print(f"error: cannot read the policy: {exc}", file=sys.stderr)
            return 2
    from evqual.scoring import Scorer

    try:
        scorer = Scorer.load(args.model)
    except (ValueError, OSError) as exc:
        print(f"error: cannot load the model: {exc}", file=sys.stderr)
        return 2
    result = evaluate_contrastive(scorer, pairs, policy=policy)
    text = contrastive_markdown(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
