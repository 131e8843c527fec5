"""The verification stage on the contrastive development suite, per edit type (issue 11, section 6).

Every pair of ``tests/data/contrastive`` (hand-written, never used to train or tune the
claim model or the detector) gives a faithful and a hallucinated answer.  Each method
verifies both answers of every pair with the ``rules`` backend:

* ``prefilter``: the shipped detector's risk and policy (flagged = decision != show);
* ``claims``: :class:`ClaimVerifier` (score = hallucination rate, flagged = tier != accept);
* ``metarag``: :class:`MetaRAG` with the LLM-free mutations (score = H, flagged = H >= tau);
* ``cascade``: the pre-filter, then ``claims`` on the answers the policy escalates.

Per edit type and overall: AUROC of the score (hallucinated vs faithful answers), the
share of hallucinated answers flagged (recall), the share of faithful answers flagged
(false alarms), pair accuracy (the hallucinated answer scores higher), and ms per answer.

    python scripts/verify_contrastive.py --json docs/bench/verify_contrastive.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PAIRS = ROOT / "tests" / "data" / "contrastive"


def _metrics(rows):
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y = np.array([r["label"] for r in rows])
    s = np.array([r["score"] for r in rows], dtype=float)
    f = np.array([r["flagged"] for r in rows], dtype=bool)
    by_pair = {}
    for r in rows:
        by_pair.setdefault(r["pair"], {})[r["label"]] = r["score"]
    pairs = [v for v in by_pair.values() if len(v) == 2]
    return {"n": len(rows),
            "auroc": round(float(roc_auc_score(y, s)), 3) if len(set(y)) == 2 else None,
            "recall": round(float(f[y == 1].mean()), 3) if (y == 1).any() else None,
            "false_alarms": round(float(f[y == 0].mean()), 3) if (y == 0).any() else None,
            "pair_accuracy": round(sum(p[1] > p[0] for p in pairs) / len(pairs), 3) if pairs else None,
            "ms_per_answer": round(float(np.mean([r["ms"] for r in rows])), 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="+", action="extend", metavar="PATH")
    ap.add_argument("--json", default=None)
    ap.add_argument("--methods", default="prefilter,claims,metarag,cascade")
    args = ap.parse_args(argv)
    from evqual.evaluation import load_pairs, pairs_to_examples
    from evqual.scoring import Scorer
    from evqual.verify import make_verifier

    try:
        pairs = load_pairs(args.pairs or [DEFAULT_PAIRS])
    except (ValueError, OSError) as exc:
        print(f"error: bad pair file: {exc}", file=sys.stderr)
        return 2
    examples = pairs_to_examples(pairs)
    types = {p["pair"]: p["type"] for p in pairs}
    methods = args.methods.split(",")
    scorer = Scorer.load()
    verifiers = {m: make_verifier(m) for m in ("claims", "metarag") if m in methods or (m == "claims" and "cascade" in methods)}
    rows = {m: [] for m in methods}
    for ex in examples:
        base = {"pair": ex.source_id, "type": types[ex.source_id], "label": ex.label}
        t = time.perf_counter()
        res = scorer.score_examples([ex])[0]
        pf_ms = (time.perf_counter() - t) * 1000
        if "prefilter" in methods:
            rows["prefilter"].append(dict(base, score=res.risk, flagged=res.flagged, ms=pf_ms))
        cache = {}
        for m, v in verifiers.items():
            t = time.perf_counter()
            r = v.verify(query=ex.query, context=ex.context, output=ex.output, task_type=ex.task_type)
            cache[m] = (r, (time.perf_counter() - t) * 1000)
            if m in methods:
                rows[m].append(dict(base, score=r.score if r.score is not None else 0.0,
                                    flagged=bool(r.flagged), ms=cache[m][1], error=r.error))
        if "cascade" in methods:
            r, ms = cache["claims"]
            if res.verify and r.error is None:
                rows["cascade"].append(dict(base, score=0.5 * res.risk + 0.5 * r.score, flagged=bool(r.flagged),
                                            ms=pf_ms + ms, verified=True))
            else:
                rows["cascade"].append(dict(base, score=res.risk, flagged=res.flagged, ms=pf_ms, verified=False))
    out = {"pairs": len(pairs), "methods": {}}
    for m in methods:
        block = {"overall": _metrics(rows[m]), "by_type": {}}
        for t in sorted(set(types.values())):
            sub = [r for r in rows[m] if r["type"] == t]
            block["by_type"][t] = _metrics(sub)
        if m == "cascade":
            block["overall"]["verified_share"] = round(sum(r["verified"] for r in rows[m]) / len(rows[m]), 3)
        out["methods"][m] = block
    lines = ["| edit type | n pairs | " + " | ".join(f"{m} AUROC / recall / false alarms" for m in methods) + " |",
             "|---|---|" + "---|" * len(methods)]
    for t in ["overall"] + sorted(set(types.values())):
        cells = []
        for m in methods:
            mm = out["methods"][m]["overall"] if t == "overall" else out["methods"][m]["by_type"][t]
            cells.append(f"{mm['auroc']} / {mm['recall']} / {mm['false_alarms']}")
        n = out["methods"][methods[0]]["overall" if t == "overall" else "by_type"]
        n = (n["n"] if t == "overall" else n[t]["n"]) // 2
        lines.append(f"| {t} | {n} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    for m in methods:
        print(m, json.dumps(out["methods"][m]["overall"]))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
