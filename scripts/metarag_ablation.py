"""MetaRAG ablation (seed 000, Section 5) for a judge: N, mutation sets and the S_i aggregate, against labels.

Runs :class:`evqual.verify.MetaRAG` with :class:`evqual.verify.RulesMutator` over labelled answers (a JSONL of
examples, a RAGTruth folder or the package sample: anything :func:`evqual.data.load_data` reads) for every
configuration of the grid, and reports per configuration the response-level F1, precision, recall and accuracy
of the flag (``H >= tau``, topic-aware tau unless ``--tau``), the AUROC of ``H``, and the cost: variants
judged per answer and milliseconds per answer (after an untimed warm-up pass with ``N = 1`` that loads
the judge and lets it see every context once).  Writes the table as JSON and a Pareto plot of F1 against cost
(seed 000, Section 5.4: a configuration is Pareto-optimal when no other has a higher F1 at no higher cost).

``--judge`` names the judge's factory, ``module:attr`` or ``module.attr`` (called without arguments), e.g.
``evqual.verify:RulesJudge``; ``lexical`` is this script's toy word-overlap judge (for smoke tests only: it
knows numbers, negation and antonyms by word lists, nothing else).

    python scripts/metarag_ablation.py --data evqual/data/sample --judge lexical --limit 20 \\
        --json /tmp/metarag.json --plot /tmp/metarag.png
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import re
import sys
import time

ANTONYM_GRID = {"all": ("negation", "antonym", "number", "date", "quantifier"),
                "lexical": ("negation", "antonym", "quantifier"),
                "values": ("number", "date")}
SYNONYM_GRID = {"all": ("lexicon", "number_format", "paraphrase"),
                "lexicon": ("lexicon",),
                "format": ("number_format", "paraphrase")}

_TOKEN = re.compile(r"[a-z]+|\d+(?:[.,]\d+)*")
_NEG = frozenset({"not", "never", "no", "cannot"})


class LexicalJudge:
    """A toy judge for smoke tests: REFUTED on a number absent from the context, a word whose opposite the
    context has, or a negation on one side only; otherwise the probability is the share of the statement's
    words found in the context."""

    name = "lexical"

    def judge(self, statements, evidence, *, query="", chunks=()):
        from evqual.text import NUMBER_WORDS, antonyms_of
        from evqual.verify import Judgement

        def words(text):
            ws = _TOKEN.findall(text.lower().replace("n't", " not"))
            return [str(NUMBER_WORDS[w]) if w in NUMBER_WORDS and w not in ("one", "half") else w for w in ws]

        ctx = set(words(" ".join(chunks)))
        ctx_nums = {w for w in ctx if w[0].isdigit()}
        out = []
        for s in statements:
            ws = words(s)
            if not ws:
                out.append(Judgement("NO_EVIDENCE", 0.0, error="empty statement"))
                continue
            nums = {w for w in ws if w[0].isdigit()}
            refuted = (nums and ctx_nums and not nums <= ctx_nums) \
                or any(antonyms_of(w) & ctx and w not in ctx for w in ws) \
                or (bool(_NEG & set(ws)) != bool(_NEG & ctx))
            share = sum(w in ctx for w in ws) / len(ws)
            out.append(Judgement("REFUTED", 0.0) if refuted else
                       Judgement("SUPPORTED" if share >= 0.75 else "NO_EVIDENCE", round(share, 6)))
        return out


def load_judge(name: str):
    """The judge built by the factory ``name`` (``module:attr`` or ``module.attr``), or ``lexical``."""
    if name == "lexical":
        return LexicalJudge()
    module, _, attr = name.partition(":") if ":" in name else name.rpartition(".")
    if not module or not attr:
        raise ValueError(f"--judge must be 'module:attr', 'module.attr' or 'lexical'; got {name!r}")
    factory = getattr(importlib.import_module(module), attr)
    if isinstance(factory, type) or (callable(factory) and not callable(getattr(factory, "judge", None))):
        judge = factory()  # a class or a factory function
    else:
        judge = factory  # a judge instance
    if not callable(getattr(judge, "judge", None)):
        raise ValueError(f"{name} did not give a judge (an object with a judge method)")
    return judge


def metrics(labels, scores, flags) -> dict:
    """Precision, recall, F1 and accuracy of ``flags``, and the AUROC of ``scores`` (None with one class)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support, roc_auc_score

    p, r, f, _ = precision_recall_fscore_support(labels, flags, average="binary", zero_division=0)
    auroc = roc_auc_score(labels, scores) if len(set(labels)) == 2 else None
    return {"f1": round(float(f), 4), "precision": round(float(p), 4), "recall": round(float(r), 4),
            "accuracy": round(float(accuracy_score(labels, flags)), 4),
            "auroc": None if auroc is None else round(float(auroc), 4)}


def pareto(rows, cost: str) -> list:
    """Names of the rows no other row dominates (an F1 at least as high at a cost no higher, one of them
    strictly better); of rows tied on both, the first.

    >>> pareto([{"name": "a", "f1": 0.5, "c": 1}, {"name": "b", "f1": 0.6, "c": 2}, {"name": "c", "f1": 0.6, "c": 3},
    ...         {"name": "d", "f1": 0.4, "c": 2}], "c")
    ['a', 'b']
    """
    out, seen = [], set()
    for a in rows:
        dominated = any(b["f1"] >= a["f1"] and b[cost] <= a[cost] and (b["f1"] > a["f1"] or b[cost] < a[cost])
                        for b in rows)
        if not dominated and (a["f1"], a[cost]) not in seen:
            seen.add((a["f1"], a[cost]))
            out.append(a["name"])
    return out


def plot(rows, path: str, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, cost, label in ((axes[0], "variants_per_answer", "variants judged per answer"),
                            (axes[1], "ms_per_answer", "ms per answer")):
        front = set(pareto(rows, cost))
        for r in rows:
            on = r["name"] in front
            ax.scatter(r[cost], r["f1"], s=50 if on else 25, c="tab:red" if on else "tab:gray", zorder=3)
            if on:
                ax.annotate(r["name"], (r[cost], r["f1"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
        pts = sorted((r[cost], r["f1"]) for r in rows if r["name"] in front)
        if pts:
            ax.plot(*zip(*pts), c="tab:red", lw=1, zorder=2)
        ax.set_xlabel(label)
        ax.set_ylabel("F1 (flag H >= tau)")
        ax.grid(alpha=0.3)
    fig.suptitle(title + " (red: Pareto-optimal)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(examples, judge, *, ns, antonym, synonym, aggregates, tau, no_at, seed, progress=None) -> list:
    from evqual.verify import MetaRAG, RulesMutator

    rows = []
    labels = [int(ex.label) for ex in examples]
    # warm-up, untimed: loads the judge's model and lets a judge that caches per context see every context
    # once, so that every configuration is timed the same way (not the first one with the loading)
    warm = MetaRAG(judge=judge, mutator=RulesMutator(seed=seed), n=1, tau=tau, no_at=no_at)
    for ex in examples:
        warm.verify(query=ex.query or "", context=ex.context, output=ex.output, task_type=ex.task_type)
    for n, ant, syn, agg in itertools.product(ns, antonym, synonym, aggregates):
        mutator = RulesMutator(seed=seed, antonym_sets=ANTONYM_GRID[ant], synonym_sets=SYNONYM_GRID[syn])
        m = MetaRAG(judge=judge, mutator=mutator, n=n, tau=tau, no_at=no_at, aggregate=agg)
        name = f"N{n}/ant:{ant}/syn:{syn}/{agg}"
        t0 = time.perf_counter()
        results = [m.verify(query=ex.query or "", context=ex.context, output=ex.output, task_type=ex.task_type)
                   for ex in examples]
        secs = time.perf_counter() - t0
        ok = [(lab, r) for lab, r in zip(labels, results) if r.error is None]
        row = {"name": name, "n": n, "antonym_sets": list(ANTONYM_GRID[ant]), "synonym_sets": list(SYNONYM_GRID[syn]),
               "aggregate": agg, "answers": len(results), "errors": len(results) - len(ok)}
        if ok:
            row.update(metrics([lab for lab, _ in ok], [r.score for _, r in ok], [int(r.flagged) for _, r in ok]))
            row["flag_rate"] = round(sum(r.flagged for _, r in ok) / len(ok), 4)
            nv = [sum(len(f.variants) for f in r.factoids) for _, r in ok]
            row["variants_per_answer"] = round(sum(nv) / len(ok), 2)
            row["missing_per_answer"] = round(sum(sum(f.missing for f in r.factoids) for _, r in ok) / len(ok), 2)
            row["factoids_per_answer"] = round(sum(len(r.factoids) for _, r in ok) / len(ok), 2)
        else:
            row.update({"f1": 0.0, "precision": 0.0, "recall": 0.0, "accuracy": 0.0, "auroc": None,
                        "flag_rate": 0.0, "variants_per_answer": 0.0, "missing_per_answer": 0.0,
                        "factoids_per_answer": 0.0})
        row["ms_per_answer"] = round(1000 * secs / max(1, len(results)), 2)
        rows.append(row)
        if progress:
            progress(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--data", default="evqual/data/sample", help="labelled examples (JSONL, RAGTruth folder)")
    ap.add_argument("--judge", default="evqual.verify:RulesJudge",
                    help="judge factory, module:attr or module.attr, or 'lexical' (toy; default %(default)s)")
    ap.add_argument("--n", type=int, nargs="+", default=[2, 5], help="N values (default 2 5)")
    ap.add_argument("--antonym-sets", nargs="+", default=["all", "lexical", "values"], choices=sorted(ANTONYM_GRID))
    ap.add_argument("--synonym-sets", nargs="+", default=["all", "lexicon"], choices=sorted(SYNONYM_GRID))
    ap.add_argument("--aggregate", nargs="+", default=["mean"], choices=["mean", "balanced"])
    ap.add_argument("--tau", type=float, default=None, help="a fixed tau (default: topic-aware 0.5 / 0.3)")
    ap.add_argument("--no-at", type=float, default=0.4, help="NO below this probability (default %(default)s)")
    ap.add_argument("--split", default=None, help="keep only this split (e.g. test)")
    ap.add_argument("--limit", type=int, default=None, help="first N labelled answers only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the table here")
    ap.add_argument("--plot", help="write the Pareto plot (PNG) here")
    args = ap.parse_args(argv)

    from evqual.data import load_data

    try:
        judge = load_judge(args.judge)
    except (ImportError, AttributeError, ValueError) as exc:
        print(f"error: cannot build the judge {args.judge!r}: {exc}", file=sys.stderr)
        return 2
    try:
        data = load_data(args.data)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    examples = [ex for ex in data if ex.label is not None and (args.split is None or ex.split == args.split)]
    if args.limit:
        examples = examples[: args.limit]
    if not examples:
        print(f"error: no labelled answers in {args.data}", file=sys.stderr)
        return 2
    print(f"{len(examples)} answers ({sum(int(e.label) for e in examples)} hallucinated), judge "
          f"{getattr(judge, 'name', type(judge).__name__)}", file=sys.stderr)

    def show(r):
        print(f"{r['name']:<36} F1 {r['f1']:.3f}  P {r['precision']:.3f}  R {r['recall']:.3f}  "
              f"AUROC {r['auroc'] if r['auroc'] is not None else '-'}  variants/answer {r['variants_per_answer']}  "
              f"ms/answer {r['ms_per_answer']}  errors {r['errors']}")

    rows = run(examples, judge, ns=args.n, antonym=args.antonym_sets, synonym=args.synonym_sets,
               aggregates=args.aggregate, tau=args.tau, no_at=args.no_at, seed=args.seed, progress=show)
    report = {"data": args.data, "judge": args.judge, "answers": len(examples),
              "hallucinated": sum(int(e.label) for e in examples), "tau": args.tau or "topic-aware (0.5 / 0.3)",
              "no_at": args.no_at, "configs": rows,
              "pareto": {"variants_per_answer": pareto(rows, "variants_per_answer"),
                         "ms_per_answer": pareto(rows, "ms_per_answer")}}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    if args.plot:
        plot(rows, args.plot, f"MetaRAG ablation, judge {args.judge}, {len(examples)} answers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
