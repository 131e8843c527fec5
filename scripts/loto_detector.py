"""Leave-one-type-out for the shipped detector: refit without the transformations that imitate a suite type.

    python scripts/loto_detector.py --data ../shared/data/ragtruth --json docs/bench/loto_detector.json

The detector's claim stage learns from transformed claims (flips and label-preserving edits of RAGTruth's own
faithful claims, :func:`evqual.evidence.transformed_rows`).  A suite type is only a fair test of
generalisation when the model never saw transformations that imitate it, so for each type of both
development suites this script refits the detector as ``models/default`` is trained (all of the data, the
validation part 25% of the test split's sources, ``evqual`` method, sigmoid calibration, composition and
floors) with the claim stage's transformed claims of the type's tags left out
(``StackedEvidenceClassifier(claim_exclude_tags=...)``; the tags are :data:`LOTO_TAGS` of
``scripts/evidence_eval.py``), and scores that type's pairs.  Types that share their tags share one refit.
A type with no tags is scored by the full model.

The frame is built once (about 4 min); each refit takes about 3 min on one core.  The suites are only
scored: nothing here is fitted or tuned on them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evidence_eval import LOTO_TAGS, SUITES  # noqa: E402

METRICS = ("auroc", "pair_accuracy", "recall", "false_alarm")


def _fit(frame, fit_idx, val_idx, builder, exclude=()):
    from dataclasses import replace

    from evqual.models import Detector, get_method

    base = get_method("evqual")

    def make():
        est = base.make()
        return est.set_params(claim_exclude_tags=tuple(exclude)) if exclude else est

    det = Detector(replace(base, make=make))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det.fit_frames(frame.iloc[fit_idx], frame.iloc[val_idx])
    det.builder_ = builder
    return det


def _scores(det, pairs) -> dict:
    from evqual.evaluation import evaluate_contrastive
    from evqual.scoring import Scorer

    res = evaluate_contrastive(Scorer(det), pairs)
    keep = lambda d: {k: d.get(k) for k in METRICS + ("n_pairs",)}  # noqa: E731
    return {"overall": keep(res["overall"]), "by_type": {t: keep(v) for t, v in res["by_type"].items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ragtruth"), help="RAGTruth folder")
    ap.add_argument("--json", default=None, help="write the result here")
    ap.add_argument("--types", nargs="*", default=None, help="only these suite types (default: all)")
    args = ap.parse_args(argv)

    from evqual.data import load_data
    from evqual.evaluation import load_pairs
    from evqual.models import FrameBuilder, training_split

    t0 = time.time()
    data = load_data(args.data)
    builder = FrameBuilder()
    frame = builder.fit_transform(data)
    fit_idx, val_idx = training_split(frame, validation_pool="test")
    print(f"frame: {len(frame)} answers in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    suites = {name: load_pairs([path]) for name, path in SUITES.items()}
    suite_types = {name: sorted({p["type"] for p in pairs}) for name, pairs in suites.items()}
    wanted = set(args.types) if args.types else None

    t = time.time()
    full = _fit(frame, fit_idx, val_idx, builder)
    out = {"protocol": "fit on all of RAGTruth as models/default (validation 25% of the test split's sources); "
                       "suites scored only", "full": {}, "loto": {}, "seconds": {}}
    for name, pairs in suites.items():
        out["full"][name] = _scores(full, pairs)
    out["seconds"]["full"] = round(time.time() - t)
    print(f"full model: {time.time() - t:.0f} s", file=sys.stderr, flush=True)

    groups: dict[tuple, list] = {}
    for name, types in suite_types.items():
        for typ in types:
            if wanted is None or typ in wanted:
                groups.setdefault(tuple(sorted(LOTO_TAGS.get(typ, ()))), []).append((name, typ))
    for tags, members in groups.items():
        t = time.time()
        det = _fit(frame, fit_idx, val_idx, builder, tags) if tags else full
        for name, typ in members:
            pairs = [p for p in suites[name] if p["type"] == typ]
            got = _scores(det, pairs)["overall"]
            out["loto"].setdefault(name, {})[typ] = dict(got, left_out=list(tags))
        out["seconds"]["|".join(tags) or "(none)"] = round(time.time() - t)
        print(f"without {tags or '(nothing)'}: {[m[1] for m in members]} in {time.time() - t:.0f} s",
              file=sys.stderr, flush=True)

    print(_markdown(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


def _fmt(x):
    return "—" if x is None else f"{x:.3f}"


def _markdown(out) -> str:
    lines = []
    for name, by in out["loto"].items():
        lines += [f"\n**{name}**\n", "| type | pairs | AUROC | pairwise | recall | false alarms | LOTO AUROC | "
                  "LOTO pairwise | LOTO recall | LOTO false alarms | left out |", "|---" * 11 + "|"]
        full = out["full"][name]
        o = full["overall"]
        lines.append(f"| overall | {o['n_pairs']} | " + " | ".join(_fmt(o[k]) for k in METRICS)
                     + " | — | — | — | — | |")
        for typ in sorted(by):
            f = full["by_type"][typ]
            g = by[typ]
            lines.append(f"| {typ} | {f['n_pairs']} | " + " | ".join(_fmt(f[k]) for k in METRICS) + " | "
                         + " | ".join(_fmt(g[k]) for k in METRICS) + f" | {', '.join(g['left_out']) or '—'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
