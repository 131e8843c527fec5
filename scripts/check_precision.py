"""Precision and recall of each claim-aligned contradiction check (the ``check`` feature family).

Two labelled sets:

* the contrastive development suite (``tests/data/contrastive``): for each
  check, how many faithful and hallucinated answers it fires on (precision =
  hallucinated / fired) and, for the edit types the check is meant for, the
  share of hallucinated answers it catches (recall);
* RAGTruth (the shared copy): answers the check fires on, precision against
  the response label, per task, and the share of firings that fall inside a
  gold hallucination span.

No model is involved: these are the checks alone.

Usage::

    python scripts/check_precision.py [--pairs DIR] [--data ../shared/data/ragtruth] [--json OUT.json]
                                      [--entity-backend spacy]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# edit types of the development suite that each check is meant to catch
TARGETS = {"number": ("number",), "unit": ("unit",), "date": ("date",), "negation": ("negation",),
           "antonym": ("antonym",), "entity": ("entity",), "role": ("role_swap",), "quantifier": ("quantifier",),
           "field": ("field",), "displaced": ("entity",), "unsupported": ("addition",)}


def _findings(examples, entity_backend="regex"):
    from evqual.features import EvidenceFeaturizer

    fz = EvidenceFeaturizer(families=["check"], entity_backend=entity_backend).fit(examples[:1])
    _, analyses = fz.analyze(examples)
    return analyses


def suite_table(pairs_dir, entity_backend="regex") -> dict:
    from evqual.evaluation import load_pairs, pairs_to_examples
    from evqual.features import CHECKS

    pairs = load_pairs(pairs_dir)
    examples = pairs_to_examples(pairs)
    types = {p["pair"]: p["type"] for p in pairs}
    out = {c: {"faithful": 0, "hallucinated": 0, "targets": 0, "caught": 0} for c in CHECKS}
    for ex, an in zip(examples, _findings(examples, entity_backend)):
        pair, which = ex.id.rsplit("/", 1)
        fired = {f.check for per in an.findings for f in per}
        for c in CHECKS:
            if c in fired:
                out[c][which] += 1
            if which == "hallucinated" and types[pair] in TARGETS[c]:
                out[c]["targets"] += 1
                out[c]["caught"] += c in fired
    for c, row in out.items():
        n = row["faithful"] + row["hallucinated"]
        row["precision"] = row["hallucinated"] / n if n else None
        row["recall"] = row["caught"] / row["targets"] if row["targets"] else None
    return out


def ragtruth_table(data, entity_backend="regex") -> dict:
    from evqual.data import load_ragtruth

    examples = list(load_ragtruth(data, warn=False).examples)
    stat = defaultdict(lambda: [0, 0, 0])
    for ex, an in zip(examples, _findings(examples, entity_backend)):
        spans = [(s.start, s.end) for s in (ex.spans or ())]
        by_check = defaultdict(list)
        for per in an.findings:
            for f in per:
                by_check[f.check].append(f)
        for c, fs in by_check.items():
            inside = any(s <= f.start < e for f in fs for s, e in spans)
            for key in (("all", c), (str(ex.task_type), c)):
                stat[key][0] += 1
                stat[key][1] += int(ex.label == 1)
                stat[key][2] += int(inside)
    base = sum(1 for ex in examples if ex.label == 1) / max(1, len(examples))
    rows = {f"{t}:{c}": {"fired": n, "precision": p / n, "in_gold_span": i / n} for (t, c), (n, p, i) in stat.items()}
    return {"base_rate": base, "rows": rows}


def markdown(suite, rag) -> str:
    from evqual.features import CHECKS

    lines = ["| check | suite: faithful fired | suite: hallucinated fired | suite precision | suite recall (its "
             "edit type) | RAGTruth fired | RAGTruth precision | QA | Summary | Data2txt |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def f(v):
        return "-" if v is None else f"{v:.2f}"

    for c in CHECKS:
        s = suite[c]
        r = rag["rows"].get(f"all:{c}", {}) if rag else {}
        per = [rag["rows"].get(f"{t}:{c}") if rag else None for t in ("QA", "Summary", "Data2txt")]
        per_s = [f"{f(x['precision'])} ({x['fired']})" if x else "-" for x in per]
        lines.append(f"| {c} | {s['faithful']} | {s['hallucinated']} | {f(s['precision'])} | {f(s['recall'])} "
                     f"| {r.get('fired', '-')} | {f(r.get('precision'))} | " + " | ".join(per_s) + " |")
    if rag:
        lines.append("")
        lines.append(f"RAGTruth base rate (share of hallucinated answers): {rag['base_rate']:.3f}.")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="precision and recall of each claim-aligned contradiction check")
    ap.add_argument("--pairs", default=str(ROOT / "tests" / "data" / "contrastive"),
                    help="contrastive pair files or folder (default: tests/data/contrastive)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ragtruth"),
                    help="RAGTruth folder (default: ../shared/data/ragtruth; skipped when absent)")
    ap.add_argument("--json", default=None, help="write the numbers here")
    ap.add_argument("--entity-backend", choices=["regex", "spacy"], default="regex",
                    help="spacy: claim units from spaCy's parser (needs the ner extra); default regex (rules)")
    args = ap.parse_args(argv)
    from evqual.errors import EvqualDataError

    try:
        suite = suite_table(args.pairs, args.entity_backend)
    except EvqualDataError as exc:
        print(f"check_precision: error: {exc}", file=sys.stderr)
        return 2
    rag = ragtruth_table(args.data, args.entity_backend) if Path(args.data).exists() else None
    print(markdown(suite, rag))
    if args.json:
        Path(args.json).write_text(json.dumps({"suite": suite, "ragtruth": rag}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
