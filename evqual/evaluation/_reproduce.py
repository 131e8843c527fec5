"""Run every method under both protocols and regenerate the results tables.

``evqual reproduce`` (or ``scripts/reproduce.py``) calls :func:`reproduce`:
it featurizes the data once, evaluates every method of
:data:`evqual.models.METHODS` under ``cv5`` and ``official``, writes a report
folder per run under ``OUT/<protocol>/<method>/``, comparison figures, the
seed-002 feature-group ablation, and rewrites the generated block of
``docs/RESULTS.md`` (between ``<!-- BEGIN generated -->`` and
``<!-- END generated -->``); text outside the block is left alone.

A partial run (``--methods``, ``--protocols`` or ``--no-ablation``) regenerates
only what it ran: :func:`merge_block` replaces, in the existing block, the table
rows of the methods run under the protocols run, the sections that belong to one
of them (``evqual`` by task, the decision policy) and the ablation table only when
the ablation was run; every other line of the block stays byte-identical. The
merge works on the block's own text rather than on the ``metrics.json`` files
under ``--out``: the file being edited is its own source of truth, so a partial
run into another report folder, or a folder holding reports of another run,
cannot silently change rows it did not compute.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from .._markdown import markdown_table
from ..models import EVIDENCE_FAMILIES, METHODS, SEED_002, MethodSpec
from ._report import write_comparison, write_report
from ._run import build_frame, evaluate

__all__ = ["reproduce", "SEED_FIGURES", "SEED_CHAR_F1", "ABLATIONS", "update_results_block", "render_block",
           "merge_block", "read_results_block"]

# Seed 004 Table 8: character F1 of sentence-range projection (official test split, full release).
SEED_CHAR_F1 = {"ecs-span": 0.197}

# Published figures, quoted from the seeds for comparison only (not our results).
# Seed 002: Table 5 (official test split of the full RAGTruth-processed release, 2,700 rows).
# Seed 004: Tables 6-7 (official test split of the full RAGTruth release, 2,700 responses).
SEED_FIGURES = {
    "majority": {"seed": "002", "accuracy": 0.651, "precision": 0.000, "recall": 0.000, "f1": 0.000, "auroc": 0.500,
                 "auprc": 0.349, "brier": 0.237},
    "metadata-lr": {"seed": "002", "accuracy": 0.840, "precision": 0.758, "recall": 0.794, "f1": 0.776,
                    "auroc": 0.890, "auprc": 0.884, "brier": 0.116},
    "tfidf-lr": {"seed": "002", "accuracy": 0.932, "precision": 1.000, "recall": 0.805, "f1": 0.892, "auroc": 0.971,
                 "auprc": 0.967, "brier": 0.061},
    "evidence-lr": {"seed": "002", "accuracy": 0.839, "precision": 0.737, "recall": 0.839, "f1": 0.785,
                    "auroc": 0.922, "auprc": 0.853, "brier": 0.113},
    "evidence-meta-rf": {"seed": "002", "accuracy": 0.947, "precision": 0.956, "recall": 0.890, "f1": 0.921,
                         "auroc": 0.985, "auprc": 0.979, "brier": 0.052},
    "semantic-eq-gb": {"seed": "002", "accuracy": 0.950, "precision": 0.944, "recall": 0.910, "f1": 0.927,
                       "auroc": 0.984, "auprc": 0.979, "brier": 0.042},
    "lexical-overlap": {"seed": "004", "accuracy": 0.578, "precision": 0.446, "recall": 0.862, "f1": 0.588,
                        "auroc": 0.671, "auprc": 0.450, "sentence_f1": 0.205},
    "bm25-evidence": {"seed": "004", "accuracy": 0.543, "precision": 0.424, "recall": 0.867, "f1": 0.570,
                      "auroc": 0.643, "auprc": 0.435, "sentence_f1": 0.208},
    "tfidf-cosine": {"seed": "004", "accuracy": 0.575, "precision": 0.446, "recall": 0.887, "f1": 0.593,
                     "auroc": 0.671, "auprc": 0.450, "sentence_f1": 0.228},
    "nli-proxy": {"seed": "004", "accuracy": 0.554, "precision": 0.435, "recall": 0.928, "f1": 0.593,
                  "auroc": 0.682, "auprc": 0.451, "sentence_f1": 0.239},
    "logreg-attribution": {"seed": "004", "accuracy": 0.611, "precision": 0.469, "recall": 0.870, "f1": 0.610,
                           "auroc": 0.711, "auprc": 0.499, "sentence_f1": 0.279},
    "random-forest": {"seed": "004", "accuracy": 0.643, "precision": 0.494, "recall": 0.856, "f1": 0.626,
                      "auroc": 0.754, "auprc": 0.553, "sentence_f1": 0.321},
    "ecs-span": {"seed": "004", "accuracy": 0.612, "precision": 0.471, "recall": 0.881, "f1": 0.614,
                 "auroc": 0.742, "auprc": 0.536, "sentence_f1": 0.312},
}

# Seed 002 Table 7: the proposed gradient boosting on feature-group subsets.
ABLATIONS = {
    "support only": (("support",), False),
    "coverage only": (("coverage",), False),
    "entity-number probes": (("entity", "number"), False),
    "semantic support": (("semantic",), False),
    "semantic + metadata": (("semantic",), True),
    "all evidence + metadata (full)": (EVIDENCE_FAMILIES + ("task",), True),
}
SEED_ABLATION_F1 = {"support only": 0.757, "coverage only": 0.768, "entity-number probes": 0.853,
                    "semantic support": 0.751, "semantic + metadata": 0.924, "all evidence + metadata (full)": 0.927}


def _ablation_spec(name: str, families, meta: bool) -> MethodSpec:
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.pipeline import make_pipeline

    from ..models import FeatureSelector

    def make():
        return make_pipeline(
            FeatureSelector(families=families, include_metadata=meta),
            GradientBoostingClassifier(n_estimators=90, learning_rate=0.055, max_depth=3, min_samples_leaf=20,
                                       subsample=0.85, random_state=SEED_002))

    return MethodSpec(f"ablation: {name}", "seed 002", f"semantic-eq-gb on {families}, metadata={meta}", make,
                      False, meta)


def _fmt(v, nd=3):
    return "" if v is None else f"{v:.{nd}f}"


BEGIN, END = "<!-- BEGIN generated -->", "<!-- END generated -->"


def read_results_block(results_md) -> str | None:
    """The text between the generated markers of ``results_md`` (``None`` if the file or a marker is missing)."""
    path = Path(results_md)
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def update_results_block(results_md: Path, block: str) -> None:
    """Replace the text between the generated markers of ``results_md`` (append the block if absent)."""
    begin, end = BEGIN, END
    text = results_md.read_text(encoding="utf-8") if results_md.exists() else "# Results\n"
    new = f"{begin}\n{block.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + new + tail
    else:
        text = text.rstrip() + "\n\n" + new + "\n"
    results_md.write_text(text, encoding="utf-8")


def reproduce(data, *, out_dir="docs/reports", results_md="docs/RESULTS.md", methods=None,
              protocols=("cv5", "official"), ablation: bool = True, data_label: str = "",
              log=print) -> dict:
    """Evaluate every method under every protocol; write reports and the RESULTS block.

    Returns
    -------
    dict
        ``{protocol: {method: metrics}}`` plus ``"ablation"``.
    """
    out = Path(out_dir)
    methods = list(methods or METHODS)
    full = set(METHODS) <= set(methods) and {"cv5", "official"} <= set(protocols) and ablation
    t0 = time.perf_counter()
    frame, _, fz_s = build_frame(data)
    log(f"featurized {len(frame)} responses in {fz_s:.1f}s")
    results: dict = {}
    for protocol in protocols:
        results[protocol] = {}
        for name in methods:
            t = time.perf_counter()
            try:
                r = evaluate(method=name, frame=frame, featurize_seconds=fz_s, protocol=protocol)
            except ValueError as exc:
                log(f"{protocol} {name}: skipped ({exc})")
                continue
            heavy = name in ("evqual", "evqual-meta", "semantic-eq-gb", "random-forest")
            write_report(r, out / protocol / name, frame=frame if heavy else None,
                         data_note=f"Data: {data_label}.")
            if name == "evqual" and protocol == "cv5":
                from ..features import as_examples
                from ._policy import policy_summary

                summary = policy_summary(as_examples(data), r.predictions)
                (out / protocol / name / "policy.json").write_text(json.dumps(summary, indent=2) + "\n",
                                                                    encoding="utf-8")
                r.metrics["policy"] = summary
            results[protocol][name] = r.metrics
            R = r.metrics["response"]
            log(f"{protocol} {name}: F1 {R['f1']:.3f} AUROC {R['auroc']:.3f} ({time.perf_counter() - t:.0f}s)")
        if results[protocol]:
            write_comparison(_comparison_metrics(out / protocol, results[protocol]), out / protocol,
                             title=f"Methods under {protocol}")
    if ablation and "cv5" in protocols:
        rows = {}
        for label, (fams, meta) in ABLATIONS.items():
            spec = _ablation_spec(label, fams, meta)
            r = evaluate(method=spec, frame=frame, featurize_seconds=fz_s, protocol="cv5")
            rows[label] = r.metrics["response"]
            log(f"ablation {label}: F1 {r.metrics['response']['f1']:.3f}")
        results["ablation"] = rows
        (out / "ablation.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    elapsed = time.perf_counter() - t0
    block = render_block(results, data_label=data_label, out_dir=str(out), elapsed=elapsed)
    old = None if full else read_results_block(results_md)
    if old is not None:
        ran = {p: list(results.get(p, {})) for p in protocols}
        block = merge_block(old, block, ran=ran, log=log)
    update_results_block(Path(results_md), block)
    what = "whole generated block" if old is None else "rows of the methods and protocols run"
    log(f"wrote {results_md}: {what} ({elapsed:.0f}s in all)")
    return results


def render_block(results: dict, *, data_label: str, out_dir: str, elapsed: float) -> str:
    """Markdown for the generated block of RESULTS.md."""
    import pandas as pd

    lines = [f"_Generated by `evqual reproduce` on {data_label} in {elapsed:.0f} s; reports in `{out_dir}/`._\n"]
    for protocol in ("cv5", "official"):
        if protocol not in results or not results[protocol]:
            continue
        desc = ("five grouped folds over the test split, each trained on the other folds plus the train split; "
                "pooled out-of-fold predictions" if protocol == "cv5" else
                "fit on the train split (almost only QA in the shared copy), tested once on the test split")
        lines.append(f"\n#### Response level, protocol `{protocol}` ({desc})\n")
        rows = []
        for name, m in results[protocol].items():
            R = m["response"]
            seed = SEED_FIGURES.get(name, {})
            rows.append({"method": name, "source": m.get("method_source", ""), "n": R["n"],
                         "accuracy": _fmt(R["accuracy"]), "precision": _fmt(R["precision"]),
                         "recall": _fmt(R["recall"]), "F1": _fmt(R["f1"]), "MCC": _fmt(R["mcc"]),
                         "AUROC": _fmt(R["auroc"]), "AUPRC": _fmt(R["auprc"]), "Brier": _fmt(R["brier"]),
                         "seed F1 (official, full data)": _fmt(seed.get("f1")),
                         "seed AUROC": _fmt(seed.get("auroc"))})
        lines.append(markdown_table(pd.DataFrame(rows)))
        srows = []
        for name, m in results[protocol].items():
            S = m.get("sentence")
            if not S:
                continue
            srows.append({"method": name, "n": S["n"], "precision": _fmt(S["precision"]), "recall": _fmt(S["recall"]),
                          "F1": _fmt(S["f1"]), "AUROC": _fmt(S["auroc"]), "AUPRC": _fmt(S["auprc"]),
                          "seed 004 F1 (official, full data)": _fmt(SEED_FIGURES.get(name, {}).get("sentence_f1"))})
        if srows:
            lines.append(f"\n#### Sentence level, protocol `{protocol}`\n")
            lines.append(markdown_table(pd.DataFrame(srows)))
        crows = []
        for name, m in results[protocol].items():
            sp = m.get("span")
            if not sp:
                continue
            for kind in ("projection", "tagger"):
                v = sp.get(kind)
                if not v:
                    continue
                crows.append({"method": name, "spans from": "sentence projection" if kind == "projection"
                              else "token tagger", "char precision": _fmt(v["precision"]),
                              "char recall": _fmt(v["recall"]), "char F1": _fmt(v["f1"]),
                              "seed 004 char F1 (official, full data)":
                                  _fmt(SEED_CHAR_F1.get(name)) if kind == "projection" else ""})
        if crows:
            lines.append(f"\n#### Character spans, protocol `{protocol}` (union of character positions per "
                         "response, micro-averaged)\n")
            lines.append(markdown_table(pd.DataFrame(crows)))
        arows = [{"method": name, "flagged sentences": a["flagged_sentences"], "with evidence": a["with_evidence"],
                  "coverage": _fmt(a["coverage"]), "mean ECS of flagged": _fmt(a["mean_ecs_flagged"])}
                 for name, m in results[protocol].items() if (a := m.get("attribution"))]
        if arows:
            lines.append(f"\n#### Attribution coverage (seed 004 Table 10), protocol `{protocol}`\n")
            lines.append(markdown_table(pd.DataFrame(arows)))
        for name in ("evqual", "evqual-meta"):
            m = results[protocol].get(name)
            if not m:
                continue
            trows = [{"task": t, "n": v["n"], "F1": _fmt(v["f1"]), "AUROC": _fmt(v["auroc"]),
                      "precision": _fmt(v["precision"]), "recall": _fmt(v["recall"])}
                     for t, v in m["per_task"].items()]
            lines.append(f"\n`{name}` by task ({protocol}):\n")
            lines.append(markdown_table(pd.DataFrame(trows)))
    pol = results.get("cv5", {}).get("evqual", {}).get("policy")
    if pol:
        from ._policy import policy_table

        lines.append("\n#### Default decision policy on `evqual`'s `cv5` held-out risks (seed 000 thresholds)\n")
        lines.append(policy_table(pol))
        lines.append(f"\nSent on to LLM verification (`escalate`): {pol['escalated_share']:.3f} of answers; "
                     f"hallucinated answers shown unflagged: {pol['hallucinated_shown_share']:.3f}; grounded "
                     f"answers not shown as is: {pol['grounded_not_shown_share']:.3f}; answers on a sensitive "
                     f"topic: {pol['sensitive_share']:.3f}.\n")
    if "ablation" in results:
        lines.append("\n#### Feature-group ablation (seed 002 Table 7), `semantic-eq-gb` on subsets, protocol `cv5`\n")
        rows = [{"feature set": k, "F1": _fmt(v["f1"]), "AUROC": _fmt(v["auroc"]), "AUPRC": _fmt(v["auprc"]),
                 "seed 002 F1 (official, full data)": _fmt(SEED_ABLATION_F1.get(k))}
                for k, v in results["ablation"].items()]
        lines.append(markdown_table(pd.DataFrame(rows)))
    return "\n".join(lines) + "\n"


def _comparison_metrics(protocol_dir: Path, new: dict) -> list:
    """Metrics of the methods just run plus those already reported under ``protocol_dir``, in METHODS order.

    A partial run thus leaves the other methods in ``comparison.{csv,md,png}``.
    """
    merged = {}
    for name in METHODS:
        if name in new:
            merged[name] = new[name]
            continue
        path = protocol_dir / name / "metrics.json"
        if path.is_file():
            try:
                m = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if isinstance(m, dict) and isinstance(m.get("response"), dict) and "method" in m:
                merged[name] = m
    for name, m in new.items():  # custom method objects not in METHODS
        merged.setdefault(name, m)
    return list(merged.values())


_HEADING = re.compile(r"^(#### .*|`[^`]+` by task \(\w+\):)$")
_PROTOCOL_ORDER = ("cv5", "official")
_KIND_ORDER = ("Response level", "Sentence level", "Character spans", "Attribution coverage")


def _split_sections(block: str):
    """``(preamble_lines, [(heading, lines)])``; a section runs from its heading to the next one."""
    pre, sections = [], []
    for line in block.split("\n"):
        if _HEADING.match(line):
            sections.append((line, [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            pre.append(line)
    return pre, sections


def _section_order(heading: str) -> tuple:
    """Position of a section in a full block (protocol, kind, method), for inserting a new one."""
    if "Feature-group ablation" in heading:
        return (9,)
    if "decision policy" in heading:
        return (8,)
    proto = next((i for i, p in enumerate(_PROTOCOL_ORDER) if f"`{p}`" in heading or f"({p})" in heading), 7)
    kind = next((i for i, k in enumerate(_KIND_ORDER) if k in heading), len(_KIND_ORDER))
    m = re.match(r"^`([^`]+)` by task", heading)
    method = METHODS_INDEX.get(m.group(1), len(METHODS_INDEX)) if m else -1
    return (proto, kind, method)


def _section_protocol(heading: str) -> str | None:
    if "Feature-group ablation" in heading or "decision policy" in heading:
        return None
    return next((p for p in _PROTOCOL_ORDER if f"`{p}`" in heading or f"({p})" in heading), None)


def _table_span(lines):
    """Indices ``(start, stop)`` of the first markdown table in ``lines`` (``None`` if there is none)."""
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return None
    stop = start
    while stop < len(lines) and lines[stop].startswith("|"):
        stop += 1
    return start, stop


def _first_cell(row: str) -> str:
    return row[1:].split(" | ", 1)[0].strip()


def _merge_rows(old_rows, new_rows, ran) -> list:
    """Old rows with the rows of the ``ran`` methods replaced in place; new methods inserted in METHODS order."""
    by_method: dict = {}
    for row in new_rows:
        by_method.setdefault(_first_cell(row), []).append(row)
    out, placed = [], set()
    for row in old_rows:
        name = _first_cell(row)
        if name not in ran:
            out.append(row)
        elif name not in placed:
            out.extend(by_method.get(name, []))
            placed.add(name)
    for name, rows in by_method.items():
        if name in placed:
            continue
        rank = METHODS_INDEX.get(name, len(METHODS_INDEX))
        at = 0
        for i, row in enumerate(out):
            if METHODS_INDEX.get(_first_cell(row), len(METHODS_INDEX)) <= rank:
                at = i + 1
        out[at:at] = rows
        placed.add(name)
    return out


def _trailing_blanks(lines) -> int:
    n = 0
    while n < len(lines) and lines[len(lines) - 1 - n] == "":
        n += 1
    return n


def merge_block(old: str, new: str, *, ran: dict, log=print) -> str:
    r"""Merge the block of a partial run (``new``) into the existing generated block (``old``).

    Parameters
    ----------
    old, new : str
        Generated blocks (text between the markers); ``new`` rendered from the partial results only.
    ran : dict
        ``{protocol: [method, ...]}`` run by the partial run.

    Returns
    -------
    str
        ``old`` with, in every method table of a protocol run, the rows of the methods run replaced (or
        inserted in :data:`~evqual.models.METHODS` order), and every other section present in ``new``
        (per-method task tables, the decision policy, the ablation) replaced whole. Everything else,
        the first line included, is unchanged.

    Examples
    --------
    >>> head = "#### Response level, protocol `cv5`\n\n| method | F1 |\n| --- | --- |\n"
    >>> old = "_old run_\n\n" + head + "| majority | 0.000 |\n| tfidf-lr | 0.622 |"
    >>> new = "_new run_\n\n" + head + "| majority | 0.100 |"
    >>> print(merge_block(old, new, ran={"cv5": ["majority"]}))
    _old run_
    <BLANKLINE>
    #### Response level, protocol `cv5`
    <BLANKLINE>
    | method | F1 |
    | --- | --- |
    | majority | 0.100 |
    | tfidf-lr | 0.622 |
    """
    pre, sections = _split_sections(old)
    _, new_sections = _split_sections(new.rstrip("\n"))
    index = {h: i for i, (h, _) in enumerate(sections)}
    sections = [(h, list(lines)) for h, lines in sections]
    for heading, lines in new_sections:
        body = lines[:len(lines) - _trailing_blanks(lines)]
        if heading not in index:
            at = next((i for i, (h, _) in enumerate(sections) if _section_order(h) > _section_order(heading)),
                      len(sections))
            sections.insert(at, (heading, body + [""]))
            index = {h: i for i, (h, _) in enumerate(sections)}
            continue
        i = index[heading]
        old_lines = sections[i][1]
        tail = [""] * _trailing_blanks(old_lines)
        old_span, new_span = _table_span(old_lines), _table_span(body)
        proto = _section_protocol(heading)
        is_method_table = (old_span is not None and new_span is not None
                           and _first_cell(old_lines[old_span[0]]) == "method")
        if is_method_table and proto is not None and old_lines[old_span[0]] == body[new_span[0]]:
            (a, b), (c, d) = old_span, new_span
            rows = _merge_rows(old_lines[a + 2:b], body[c + 2:d], set(ran.get(proto, ())))
            sections[i] = (heading, old_lines[:a + 2] + rows + old_lines[b:])
        else:
            if is_method_table:
                log(f"note: the columns of {heading!r} changed; that table now holds only the methods run "
                    "(run the full `evqual reproduce` to refill it)")
            sections[i] = (heading, body + tail)
    lines = list(pre)
    for k, (_, sec) in enumerate(sections):
        if lines and lines[-1] != "" and k:
            lines.append("")
        lines.extend(sec)
    return "\n".join(lines).rstrip("\n")


METHODS_INDEX = {name: i for i, name in enumerate(METHODS)}
