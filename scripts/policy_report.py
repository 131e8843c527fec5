"""Apply a decision policy to an evaluation's held-out risks (see evqual.evaluation.policy_summary).

    python scripts/policy_report.py --data ../shared/data/ragtruth \
        --predictions docs/reports/cv5/evqual/predictions.csv --json docs/reports/cv5/evqual/policy.json
"""

import argparse
import json
import warnings

from evqual.data import load_data
from evqual.evaluation import policy_summary, policy_table
from evqual.scoring import Policy, load_policy


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the dataset the predictions are of")
    ap.add_argument("--predictions", required=True, help="predictions.csv of an evaluation report")
    ap.add_argument("--policy", help="policy TOML (default: the built-in policy)")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args(argv)
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(args.data).examples
    summary = policy_summary(examples, pd.read_csv(args.predictions, dtype={"id": str}),
                             load_policy(args.policy) if args.policy else Policy())
    print(policy_table(summary))
    print(f"escalated {summary['escalated_share']:.3f}; hallucinated shown {summary['hallucinated_shown_share']:.3f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
