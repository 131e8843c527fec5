"""What the verification cascade buys under ``cv5`` (issue 11, section 6), and seed 003's tau sweep.

Protocol (held-out folds only, nothing tuned on them):

1. ``evaluate(data, "evqual", "cv5")``: five grouped folds over the test split; each
   fold's detector is trained on its training side exactly as ``evqual reproduce`` does.
2. Each fold's detector scores its held-out answers through the full :class:`Scorer`
   (default policy, reasons, forced escalation).  An answer goes to verification when
   the policy says ``escalate`` (``verify: true``).
3. Each fold gets its own claim model (:class:`ClaimModel`), trained on the claims of
   that fold's training side only (the same answers as the detector), and the ``rules``
   :class:`ClaimVerifier` (default tau 0.75, tiers 0.85/0.60) verifies the held-out answers.
4. Pre-filter alone: flagged = risk >= the fold's tuned threshold (the detector's F1).
   Cascade: an escalated answer takes the verifier's ``flagged`` (tier != accept); the
   others keep the pre-filter's.  Cascade AUROC ranks verified answers by the mean of the
   pre-filter risk and the verifier's claim risk (1 - the lowest claim probability, 1 for a
   refuted claim), a rule fixed before looking at any fold.
5. Latency: each held-out answer scored alone (pre-filter, full result) and verified
   alone (rules), pinned to one core; p50 per answer of each stage.

The tau sweep re-labels the held-out claims for tau in {0.50, ..., 0.90} (refuted claims
stay refuted) and reports claim-level precision/recall of hallucinated claims, mean
factual precision, answer F1 (flagged = tier != accept) and the reject rate, with a
precision-recall plot.

    python scripts/cascade_bench.py --data ../shared/data/ragtruth --json docs/bench/cascade.json \\
        --plot docs/bench/tau_sweep_pr.png
"""

import argparse
import json
import os
import sys
import time

TAUS = (0.50, 0.60, 0.70, 0.75, 0.80, 0.85, 0.90)


def _pin_one_core():
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass


def run(data_path, *, n_splits=5, log=print):
    import numpy as np

    from evqual.data import kept_spans, load_ragtruth
    from evqual.evaluation import build_frame, evaluate
    from evqual.scoring import Scorer
    from evqual.verify import ClaimExtractor, ClaimModel, ClaimVerifier, RulesJudge, claim_dataset

    data = load_ragtruth(data_path, warn=False)
    examples = list(data.examples)
    by_id = {ex.id: ex for ex in examples}
    t0 = time.perf_counter()
    frame, builder, fs = build_frame(examples)
    res = evaluate(examples, "evqual", "cv5", frame=frame, builder=builder, featurize_seconds=fs,
                   n_splits=n_splits)
    m = res.metrics["response"]
    log(f"cv5 pre-filter: F1 {m['f1']:.3f} AUROC {m['auroc']:.3f} "
        f"({time.perf_counter() - t0:.0f} s)")
    ids = frame["id"].to_numpy()
    extractor = ClaimExtractor()
    t0 = time.perf_counter()
    X, y, owner, _ = claim_dataset(examples, extractor)
    pos_of = {ex.id: i for i, ex in enumerate(examples)}
    proto = ClaimModel()
    F = proto.fit_featurizer(X)
    log(f"claims: {len(y)} featurized in {time.perf_counter() - t0:.0f} s")
    rows = []
    preds = res.predictions.set_index("id")
    _pin_one_core()  # the latencies below are per answer on one core
    for (fold, train_idx, test_idx), det in zip(res.folds, res.detectors):
        det.builder_ = builder
        train_answers = {pos_of[i] for i in ids[train_idx]}
        mask = np.isin(owner, list(train_answers))
        groups = np.array([examples[i].source_id or str(i) for i in owner[mask]])
        cm = ClaimModel()
        cm.featurizer_, cm.feature_names_ = proto.featurizer_, proto.feature_names_
        cm.fit_features(F[mask], y[mask], groups=groups)
        scorer = Scorer(det)
        verifier = ClaimVerifier(judge=RulesJudge(model=cm), extractor=extractor)
        held = [by_id[i] for i in ids[test_idx]]
        scorer.score_examples(held[:5])  # warm caches
        verifier.verify(query=held[0].query, context=held[0].context, output=held[0].output)
        for ex in held:
            t = time.perf_counter()
            result = scorer.score_examples([ex])[0]
            pf_ms = (time.perf_counter() - t) * 1000
            v = verifier.verify(query=ex.query, context=ex.context, output=ex.output, task_type=ex.task_type)
            spans = kept_spans(ex) or []
            claims = [{"p": c.p_supported, "verdict": c.verdict,
                       "label": int(any(s.start < c.end and c.start < s.end for s in spans))} for c in v.claims]
            p = preds.loc[ex.id]
            rows.append({"id": ex.id, "fold": int(fold), "task": ex.task_type, "label": int(p["label"]),
                         "risk": float(p["risk"]), "threshold": float(p["threshold"]), "pred": int(p["pred"]),
                         "decision": result.decision, "verify": bool(result.verify), "prefilter_ms": pf_ms,
                         "verify_ms": v.latency_ms, "v_score": v.score, "v_flagged": v.flagged,
                         "v_error": v.error, "claims": claims})
        log(f"fold {fold}: {len(held)} answers verified")
    return {"rows": rows, "prefilter_metrics": {k: m.get(k) for k in ("f1", "auroc", "precision", "recall")}}


def _claim_risk(claims):
    if not claims:
        return 0.0
    return max(1.0 if c["verdict"] == "REFUTED" else 1.0 - c["p"] for c in claims)


def _flag(claims, tau, tiers=(0.85, 0.60)):
    if not claims:
        return False, None
    sup = sum(c["verdict"] != "REFUTED" and c["p"] >= tau for c in claims)
    fp = sup / len(claims)
    return fp < tiers[0], fp


def metrics(cache):
    import numpy as np
    from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

    rows = cache["rows"]
    y = np.array([r["label"] for r in rows])
    risk = np.array([r["risk"] for r in rows])
    pred = np.array([r["pred"] for r in rows])
    esc = np.array([r["verify"] for r in rows])
    ok = np.array([r["v_error"] is None for r in rows])
    v_flag = np.array([bool(r["v_flagged"]) if r["v_flagged"] is not None else bool(r["pred"]) for r in rows])
    v_risk = np.array([_claim_risk(r["claims"]) for r in rows])

    def block(flagged, score):
        return {"f1": round(float(f1_score(y, flagged)), 4), "precision": round(float(precision_score(y, flagged)), 4),
                "recall": round(float(recall_score(y, flagged)), 4), "auroc": round(float(roc_auc_score(y, score)), 4)}

    out = {"n": len(rows), "escalated_share": round(float(esc.mean()), 4),
           "verify_errors": int((~ok).sum()),
           "prefilter": block(pred.astype(bool), risk)}
    out["cascade_rules_claims"] = block(np.where(esc, v_flag, pred.astype(bool)), np.where(esc, 0.5 * risk + 0.5 * v_risk, risk))
    out["cascade_rules_claims"]["verified_share"] = out["escalated_share"]
    out["verifier_alone_all_answers"] = block(v_flag, v_risk)
    out["verifier_alone_all_answers"]["verified_share"] = 1.0
    esc_y = y[esc]
    out["escalated"] = {"n": int(esc.sum()), "hallucination_rate": round(float(esc_y.mean()), 4) if esc.any() else None,
                        "prefilter_f1": round(float(f1_score(esc_y, pred[esc])), 4) if esc.any() else None,
                        "verifier_f1": round(float(f1_score(esc_y, v_flag[esc])), 4) if esc.any() else None}
    pf_ms = np.array([r["prefilter_ms"] for r in rows])
    v_ms = np.array([r["verify_ms"] for r in rows])
    out["latency_ms"] = {"prefilter_p50": round(float(np.median(pf_ms)), 2),
                         "prefilter_p95": round(float(np.percentile(pf_ms, 95)), 2),
                         "verify_rules_p50": round(float(np.median(v_ms)), 2),
                         "verify_rules_p95": round(float(np.percentile(v_ms, 95)), 2),
                         "verify_rules_p50_escalated": round(float(np.median(v_ms[esc])), 2) if esc.any() else None}
    by_task = {}
    for task in sorted({r["task"] for r in rows}):
        m = np.array([r["task"] == task for r in rows])
        by_task[task] = {"n": int(m.sum()), "escalated_share": round(float(esc[m].mean()), 4),
                         "prefilter_f1": round(float(f1_score(y[m], pred[m])), 4),
                         "cascade_f1": round(float(f1_score(y[m], np.where(esc, v_flag, pred.astype(bool))[m])), 4)}
    out["by_task"] = by_task
    # tau sweep (seed 003, Experiment 3)
    sweep = []
    cl_p = np.array([c["p"] for r in rows for c in r["claims"]])
    cl_ref = np.array([c["verdict"] == "REFUTED" for r in rows for c in r["claims"]])
    cl_y = np.array([c["label"] for r in rows for c in r["claims"]])
    for tau in TAUS:
        unsupported = cl_ref | (cl_p < tau)
        flags, fps = zip(*(_flag(r["claims"], tau) for r in rows))
        flags = np.array(flags)
        fps = [f for f in fps if f is not None]
        tiers = [("accept" if f >= 0.85 else "revise" if f >= 0.60 else "reject") for f in fps]
        sweep.append({"tau": tau,
                      "claim_precision": round(float(precision_score(cl_y, unsupported, zero_division=0)), 4),
                      "claim_recall": round(float(recall_score(cl_y, unsupported)), 4),
                      "claim_f1": round(float(f1_score(cl_y, unsupported)), 4),
                      "supported_share": round(float(1 - unsupported.mean()), 4),
                      "mean_factual_precision": round(float(np.mean(fps)), 4),
                      "answer_f1": round(float(f1_score(y, flags)), 4),
                      "answer_precision": round(float(precision_score(y, flags)), 4),
                      "answer_recall": round(float(recall_score(y, flags)), 4),
                      "reject_rate": round(tiers.count("reject") / len(tiers), 4),
                      "revise_rate": round(tiers.count("revise") / len(tiers), 4)})
    out["tau_sweep"] = sweep
    out["claims"] = {"n": int(len(cl_y)), "hallucinated_share": round(float(cl_y.mean()), 4),
                     "auroc": round(float(roc_auc_score(cl_y, np.where(cl_ref, 1.0, 1.0 - cl_p))), 4)}
    return out


def plot(cache, out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from sklearn.metrics import precision_recall_curve

    cl_p = np.array([c["p"] for r in cache["rows"] for c in r["claims"]])
    cl_ref = np.array([c["verdict"] == "REFUTED" for r in cache["rows"] for c in r["claims"]])
    cl_y = np.array([c["label"] for r in cache["rows"] for c in r["claims"]])
    prec, rec, _ = precision_recall_curve(cl_y, np.where(cl_ref, 1.0, 1.0 - cl_p))
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].plot(rec, prec, color="0.6", label="claim risk (all cut points)")
    for s in out["tau_sweep"]:
        ax[0].scatter(s["claim_recall"], s["claim_precision"], color="C0")
        ax[0].annotate(f"{s['tau']:.2f}", (s["claim_recall"], s["claim_precision"]), fontsize=8)
    ax[0].set_xlabel("recall (hallucinated claims)")
    ax[0].set_ylabel("precision")
    ax[0].set_title("Claims, held-out folds (cv5)")
    ax[0].legend(fontsize=8)
    taus = [s["tau"] for s in out["tau_sweep"]]
    for key, lab in (("mean_factual_precision", "mean factual precision"), ("answer_f1", "answer F1"),
                     ("answer_recall", "answer recall"), ("reject_rate", "reject rate")):
        ax[1].plot(taus, [s[key] for s in out["tau_sweep"]], marker="o", label=lab)
    ax[1].set_xlabel("tau")
    ax[1].set_title("Answers vs tau (tiers 0.85 / 0.60)")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth")
    ap.add_argument("--json", help="write the metrics here")
    ap.add_argument("--cache", help="keep the per-answer rows here (JSON) and reuse them when present")
    ap.add_argument("--plot", help="write the tau-sweep precision-recall plot here (PNG)")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args(argv)
    if args.cache and os.path.exists(args.cache):
        with open(args.cache, encoding="utf-8") as fh:
            cache = json.load(fh)
    else:
        try:
            cache = run(args.data, n_splits=args.folds, log=lambda m: print(m, file=sys.stderr))
        except OSError as exc:
            print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
            return 2
        if args.cache:
            with open(args.cache, "w", encoding="utf-8") as fh:
                json.dump(cache, fh)
    out = metrics(cache)
    out["prefilter_metrics_cv5"] = cache["prefilter_metrics"]
    print(json.dumps({k: v for k, v in out.items() if k != "tau_sweep"}, indent=2))
    print(json.dumps(out["tau_sweep"], indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)
            fh.write("\n")
    if args.plot:
        plot(cache, out, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
