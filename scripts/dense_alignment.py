"""Does dense (MiniLM) similarity help the evidence engine align and judge claims?  (issue 22, item 1)

The engine aligns each claim to its evidence sentence lexically (stems and idf-weighted
items, see :mod:`evqual.evidence`).  Issue 22 asks for dense similarity as well when the
``embeddings`` extra is installed.  This script measures, before wiring it in, what it
would add and what it would cost:

1. **RAGTruth claims** (test split, every ``--stride``-th answer after sorting by context,
   so that answers to one source share the context's encoding): per claim, the cosine of
   the claim's embedding to its nearest evidence sentence, the cosine to the sentence the
   engine aligned lexically, and whether the two sentences differ.  Univariate claim
   AUROC against gold spans beside the engine's lexical alignment strength, per task; and
   the incremental value: a gradient-boosting claim model on the engine's
   ``CLAIM_FEATURES`` against the same model with the three dense features added, under
   five folds grouped by source (pooled out-of-fold AUROC).
2. **The development suites** (``tests/data/contrastive``, ``tests/data/heldout_types``):
   answer-level AUROC and pairwise accuracy of the lowest claim cosine, and how often the
   dense and lexical alignments agree on faithful and on hallucinated claims.
3. **Cost**: seconds per answer for the dense part alone (one core, the context encoded
   once per source).

    python scripts/dense_alignment.py --data ../shared/data/ragtruth --json docs/bench/dense_alignment.json

Needs the ``embeddings`` extra.  About 7 minutes on one core with the default stride 2.  ``--pairs`` (repeatable)
replaces the two suites; a ``--data`` folder that does not exist skips the RAGTruth part.  Fewer than five
sources or one class of claims leave the grouped comparison out (``null``).
"""

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _chunks(ex):
    return [ex.context[c.start:c.end] for c in ex.chunks] or [ex.context]


def _pair_chunks(ctx):
    parts = ctx if isinstance(ctx, list) else [ctx]
    return [p if isinstance(p, str) else json.dumps(p) for p in parts]


def _dense_rows(engine, enc, output, chunks, query, cache):
    """Per claim: (claim, max cosine, cosine at the lexical unit, dense unit != lexical unit)."""
    import numpy as np

    idx = engine.index(chunks)
    key = tuple(chunks)
    if key not in cache:
        cache.clear()
        texts = [idx.chunks[c][s:e] for c, s, e in idx.units]
        cache[key] = enc.encode(texts) if texts else np.zeros((0, 384))
    E = cache[key]
    reading = engine.read(output, chunks, query)
    if not reading.claims or len(E) == 0:
        return reading, []
    C = enc.encode([c.text for c in reading.claims])
    S = C @ E.T
    out = []
    for c, sims in zip(reading.claims, S):
        lex = idx.units.index(c.unit) if c.unit is not None else -1
        out.append((c, float(sims.max()), float(sims[lex]) if lex >= 0 else 0.0,
                    float(lex != int(np.argmax(sims)))))
    return reading, out


def ragtruth_part(data, stride, log):
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    from evqual.data import kept_spans, load_ragtruth
    from evqual.evidence import CLAIM_FEATURES, EvidenceEngine
    from evqual.verify import default_encoder

    enc = default_encoder()
    engine = EvidenceEngine(cache_size=4)
    res = load_ragtruth(data, splits=["test"], warn=False)
    examples = sorted(res.examples, key=lambda e: (e.context, e.id))[::stride]
    cache: dict = {}
    rows = []
    dense_seconds = 0.0
    n_answers = 0
    for ex in examples:
        gold = kept_spans(ex)
        if gold is None:
            continue
        t0 = time.perf_counter()
        _, claims = _dense_rows(engine, enc, ex.output, _chunks(ex), ex.query or "", cache)
        dense_seconds += time.perf_counter() - t0
        n_answers += 1
        for c, mx, at_lex, disagree in claims:
            y = int(any(s.start < c.end and c.start < s.end for s in gold))
            rows.append((ex.task_type, ex.source_id, y, mx, at_lex, disagree, c.strength, c.features))
    log(f"ragtruth: {n_answers} answers, {len(rows)} claims, {dense_seconds:.0f} s (engine + dense)")

    def auc(y, s):
        return round(float(roc_auc_score(y, s)), 3) if len(set(y)) == 2 else None

    by = defaultdict(list)
    for r in rows:
        by[r[0]].append(r)
        by["all"].append(r)
    univariate = {}
    for task, rs in sorted(by.items()):
        y = [r[2] for r in rs]
        univariate[task] = {
            "claims": len(rs), "positive_rate": round(float(np.mean(y)), 3),
            "auroc_lexical_strength": auc(y, [-r[6] for r in rs]),
            "auroc_dense_max_cosine": auc(y, [-r[3] for r in rs]),
            "auroc_dense_cosine_at_lexical_unit": auc(y, [-r[4] for r in rs]),
            "auroc_alignments_disagree": auc(y, [r[5] for r in rs]),
            "disagree_rate": round(float(np.mean([r[5] for r in rs])), 3),
        }
    X = np.vstack([r[7] for r in rows]) if rows else np.zeros((0, len(CLAIM_FEATURES)))
    D = np.array([[r[3], r[4], r[5]] for r in rows])
    y = np.array([r[2] for r in rows])
    groups = np.array([r[1] for r in rows])
    tasks = np.array([r[0] for r in rows])
    enough = len(set(groups)) >= 5 and len(set(y)) == 2
    oof = {"engine": np.zeros(len(y)), "engine+dense": np.zeros(len(y))} if enough else {}
    for tr, te in (GroupKFold(n_splits=5).split(X, y, groups) if enough else ()):
        for name, M in (("engine", X), ("engine+dense", np.hstack([X, D]))):
            clf = HistGradientBoostingClassifier(max_leaf_nodes=15, min_samples_leaf=40, learning_rate=0.06,
                                                 max_iter=300, random_state=0)
            clf.fit(M[tr], y[tr])
            oof[name][te] = clf.predict_proba(M[te])[:, 1]
    incremental = {name: {"all": auc(y, p), **{t: auc(y[tasks == t], p[tasks == t]) for t in sorted(set(tasks))}}
                   for name, p in oof.items()} if oof else None
    return {"answers": n_answers, "claims": len(rows), "stride": stride, "n_claim_features": len(CLAIM_FEATURES),
            "seconds_per_answer_engine_plus_dense": round(dense_seconds / max(1, n_answers), 4),
            "univariate_claim_auroc": univariate, "grouped_5fold_claim_model_auroc": incremental}


def suite_part(path, log):
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from evqual.evaluation import load_pairs
    from evqual.evidence import EvidenceEngine
    from evqual.verify import default_encoder

    enc = default_encoder()
    engine = EvidenceEngine(cache_size=4)
    pairs = load_pairs(path)
    y, score, wins = [], [], []
    agree = {"faithful": [], "hallucinated": []}
    seconds = 0.0
    cache: dict = {}
    for p in pairs:
        chunks = _pair_chunks(p["context"])
        lowest = {}
        for label, key in ((0, "faithful"), (1, "hallucinated")):
            t0 = time.perf_counter()
            _, claims = _dense_rows(engine, enc, p[key], chunks, p.get("query") or "", cache)
            seconds += time.perf_counter() - t0
            lowest[label] = min((mx for _, mx, _, _ in claims), default=1.0)
            y.append(label)
            score.append(-lowest[label])
            agree[key] += [1.0 - d for c, _, _, d in claims if c.unit is not None]
        wins.append(1.0 if lowest[1] < lowest[0] else 0.5 if lowest[1] == lowest[0] else 0.0)
    out = {"pairs": len(pairs), "auroc_lowest_claim_cosine": round(float(roc_auc_score(y, score)), 3),
           "pairwise_lowest_claim_cosine": round(float(np.mean(wins)), 3),
           "alignment_agreement_faithful": round(float(np.mean(agree["faithful"])), 3),
           "alignment_agreement_hallucinated": round(float(np.mean(agree["hallucinated"])), 3),
           "seconds_per_answer_engine_plus_dense": round(seconds / (2 * len(pairs)), 4)}
    log(f"{path}: {out}")
    return out


def main(argv=None):
    from evqual.verify import embeddings_available

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="../shared/data/ragtruth")
    ap.add_argument("--pairs", action="append", default=None,
                    help="a pairs file or folder (repeatable; default: both development suites)")
    ap.add_argument("--stride", type=int, default=2, help="every STRIDE-th test answer (default 2)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    if args.stride < 1:
        ap.error("--stride must be >= 1")
    if not embeddings_available():
        ap.error("needs the embeddings extra: pip install 'evqual[embeddings]'")
    from evqual.errors import EvqualDataError

    suites = args.pairs or [str(ROOT / "tests" / "data" / name) for name in ("contrastive", "heldout_types")]
    try:
        result = {"protocol": "RAGTruth test split (every --stride-th answer by context), claims labelled by "
                              "gold span overlap; grouped 5-fold by source; development suites, answer = lowest "
                              "claim cosine",
                  "suites": {Path(p).name: suite_part(p, print) for p in suites},
                  "ragtruth": ragtruth_part(args.data, args.stride, print) if Path(args.data).exists() else None}
    except (EvqualDataError, OSError, ValueError) as exc:
        print(f"dense_alignment: error: {exc}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
