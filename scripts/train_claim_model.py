"""Train the claim-level model of the ``rules`` verification backend and save it to ``models/claims``.

Training data: every answer of the shared RAGTruth copy that has span labels
(both splits, as the shipped detector), cut into claims with the ``rules``
extractor; a claim is hallucinated when a gold span overlaps it.  The model is
calibrated on 20% of the sources (grouped).  Not trained on: the contrastive
development suite (tests/data/contrastive), nor anything outside the shared copy.

    python scripts/train_claim_model.py --data ../shared/data/ragtruth --out models/claims
"""

import argparse
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth")
    ap.add_argument("--out", default="models/claims")
    args = ap.parse_args(argv)
    import numpy as np

    from evqual.data import load_ragtruth
    from evqual.models import training_data_info
    from evqual.verify import ClaimExtractor, ClaimModel, claim_dataset, save_claim_model

    t0 = time.perf_counter()
    try:
        data = load_ragtruth(args.data, warn=False)
    except OSError as exc:
        print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    examples = list(data.examples)
    X, y, owner, _ = claim_dataset(examples, ClaimExtractor())
    groups = np.array([examples[i].source_id or str(i) for i in owner])
    model = ClaimModel().fit(X, y, groups=groups)
    info = training_data_info(data, args.data)
    info.update({"claims": int(len(y)), "hallucinated_claims": int(y.sum()), "claim_extractor": "rules"})
    folder = save_claim_model(model, args.out, training_data=info)
    print(f"{len(y)} claims ({y.mean():.3f} hallucinated) from {len(examples)} answers -> {folder} "
          f"in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
