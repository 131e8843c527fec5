"""Audit reports of scored answers: one self-contained HTML page, or markdown.

:func:`render_html` builds a single HTML page (inline CSS and a few lines of
vanilla JavaScript allowed by a hash in its Content-Security-Policy, no
external resource, no network) with one card per answer, coloured by its
decision: risk bar, decision badge, the policy rule that decided (in words),
the two thresholds explained, the gold or user label against the decision,
warnings and pass-through fields, the answer with its flagged sentences and
predicted spans marked, every sentence with its reasons beside the evidence
each reason names, and the full context with the cited chunks marked.

One rule holds in the data and the report shows it: an answer is flagged
exactly when its decision is not ``show``, and exactly when one of its
sentences is flagged.  Red marks (``flagged-sentence``, ``mark.span``) are
drawn only in flagged answers; in a shown answer the sentences that would
have been flagged and the predicted spans are *notes* (``note-sentence``,
``mark.span.note``: dotted, neutral, labelled "note").

Cards can be filtered by decision and topic and sorted by input order or
risk.  Error records of ``evqual score`` (``{"line", "id", "error"}``) are
rendered as cards of their own and counted.  :func:`render_markdown`
renders the same content as markdown and :func:`write_report` writes
either to a file.

Every piece of text taken from a result is escaped, so an answer holding
markup (``<script>``) is shown, never run.

Examples
--------
>>> from evqual.scoring import ScoreResult, SpanResult
>>> r = ScoreResult(id="a1", risk=0.8, flagged=True, decision="warn", threshold=0.5,
...                 output="It has 69 million people.",
...                 spans=(SpanResult(7, 17, "69 million", 0.83),))
>>> page = render_html([r])
>>> '<mark class="span" title="risk 0.83" data-spans="0">69 million</mark>' in page
True
>>> md = render_markdown([r])
>>> "It has **[[69 million]]** people." in md
True
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections import Counter
from pathlib import Path

from .._markdown import bidi_safe, indent_entities
from .._markdown import md_cell as _md_cell, md_code as _md_code, md_inline as _md_inline, md_text as _md_text
from ..results import DECISIONS, ScoreResult

__all__ = ["SORTS", "iter_html", "iter_markdown", "render_html", "render_markdown", "write_report"]

#: Orders of the cards: ``"input"`` (as given) or ``"risk"`` (high to low).
SORTS = ("input", "risk")

_EVIDENCE_MAX = 300
_PASSAGE_RADIUS = 200
_EXTRA_MAX = 160
_HTML_SUFFIXES = (".html", ".htm")
_MD_SUFFIXES = (".md", ".markdown")

_ANSWER_THRESHOLD_TEXT = (
    "the risk at or over which the policy acts (topic-aware: a sensitive topic gets the stricter sensitive "
    "threshold; by default the model's validation-tuned threshold)")
_SENTENCE_THRESHOLD_TEXT = (
    "the model's validation-tuned sentence threshold: a sentence whose risk reaches it is flagged in a "
    "flagged answer and a note in a shown one")


# ---------------------------------------------------------------- helpers


def _esc(text) -> str:
    """HTML-escape any value (quotes included, so it is safe in attributes), its bidi controls shown and its
    right-to-left text isolated (:func:`evqual._markdown.bidi_safe`): no id, reason or quoted text can
    reorder the badges around it."""
    return html.escape(bidi_safe(text), quote=True)


def _as_records(results, errors=()) -> tuple[list[ScoreResult], list[dict]]:
    """Results and error records from results, their dicts (``line`` dropped) or error-record dicts."""
    if isinstance(results, (ScoreResult, dict)):
        results = [results]
    out, errs = [], []
    for r in results:
        if isinstance(r, dict):
            if "error" in r:
                errs.append(r)
                continue
            r = ScoreResult.from_dict({k: v for k, v in r.items() if k != "line"})
        if not isinstance(r, ScoreResult):
            raise TypeError(f"expected ScoreResult objects, got {type(r).__name__}")
        out.append(r)
    for e in errors or ():
        if not isinstance(e, dict):
            raise TypeError(f"expected error records (dicts), got {type(e).__name__}")
        errs.append(e)
    return out, errs


def _sorted(results: list[ScoreResult], sort: str) -> list[tuple[int, ScoreResult]]:
    """``(input index, result)`` in the order ``sort`` asks for (risk: high to low, unknown risk last)."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}: use one of {', '.join(SORTS)}")
    pairs = list(enumerate(results))
    if sort == "risk":
        pairs.sort(key=lambda p: (_finite(p[1].risk) is None, -(_finite(p[1].risk) or 0.0), p[0]))
    return pairs


def _finite(x) -> float | None:
    if isinstance(x, bool):
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _pct(x) -> str:
    x = _finite(x)
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x, fmt: str = ".2f") -> str:
    x = _finite(x)
    return "n/a" if x is None else format(x, fmt)


def _decision_class(decision: str) -> str:
    return f"d-{decision}" if decision in DECISIONS else "d-other"


def _topic_token(topic) -> str:
    """A topic as one whitespace-free token (for ``data-topics`` and the filter)."""
    return re.sub(r"\s+", "_", str(topic).strip())


def _topic_tokens(result: ScoreResult) -> list[str]:
    return list(dict.fromkeys(t for t in (_topic_token(t) for t in result.topics) if t))


def _decision_order(results: list[ScoreResult]) -> list[str]:
    """Known decisions first, then any other decision met, in order of appearance."""
    extra = [d for d in dict.fromkeys(r.decision for r in results) if d not in DECISIONS]
    return [*DECISIONS, *extra]


def _is_flagged(result: ScoreResult) -> bool:
    """The one rule: an answer is flagged exactly when its decision is not ``show``."""
    return result.decision != "show"


_DONE = {"show": "shown", "warn": "warned", "regenerate": "regenerate", "abstain": "withheld (abstain)",
         "escalate": "escalated"}


def _rule_text(result: ScoreResult) -> str:
    """The policy rule that decided, in words.

    Examples
    --------
    >>> from evqual.results import ScoreResult
    >>> _rule_text(ScoreResult(id="a", risk=0.4, flagged=True, decision="escalate", threshold=0.5,
    ...                       rule="escalate_band"))
    'escalated: risk 40.0% is in the uncertain band (escalate_band, by default [0.35, 0.65)); sent to verification'
    >>> _rule_text(ScoreResult(id="a", risk=0.2, flagged=True, decision="escalate", threshold=0.5,
    ...                       rule="reason:NUMBER_CONFLICT"))
    'escalated: a NUMBER_CONFLICT found by a claim-aligned check (a high-precision conflict forces escalation)'
    """
    rule, risk, tau = str(result.rule or ""), _pct(result.risk), _num(result.threshold)
    done = _DONE.get(result.decision, str(result.decision))
    if rule == "below_threshold":
        return f"{done}: risk {risk} is below the answer threshold {tau}"
    if rule == "escalate_band":
        return (f"{done}: risk {risk} is in the uncertain band (escalate_band, by default [0.35, 0.65)); "
                "sent to verification")
    if rule == "abstain_at":
        return f"{done}: risk {risk} reached abstain_at (by default 0.87), over the answer threshold {tau}"
    if rule == "regenerate_at":
        return f"{done}: risk {risk} reached regenerate_at (by default 0.75), over the answer threshold {tau}"
    if rule == "sensitive_topic":
        return f"{done}: risk {risk} is at or over the answer threshold {tau} on a sensitive topic"
    if rule == "threshold":
        return f"{done}: risk {risk} is at or over the answer threshold {tau}"
    if rule.startswith("reason:"):
        return (f"{done}: a {rule[len('reason:'):]} found by a claim-aligned check "
                "(a high-precision conflict forces escalation)")
    if rule == "out_of_distribution":
        return (f"{done}: the answer is unlike the model's training data (W004) and its risk {risk} is near the "
                f"answer threshold {tau}, where the model is least reliable on such data; sent to verification")
    if rule:
        return f"{done}: rule {rule}"
    return f"{done} (rule not recorded)"


def _n_ood(results) -> int:
    """How many results carry the out-of-distribution warning ``W004``."""
    return sum(1 for r in results if any(isinstance(w, dict) and w.get("code") == "W004" for w in r.warnings or ()))


def _label_info(result: ScoreResult) -> tuple[str, str] | None:
    """``(label in words, agreement with the decision)`` when the result has a gold or user label."""
    label = result.label
    if label is None:
        return None
    try:
        label = int(label)
    except (TypeError, ValueError):
        return (str(label), "not compared")
    if label not in (0, 1):
        return (str(label), "not compared")
    flagged = _is_flagged(result)
    words = "hallucinated" if label == 1 else "faithful"
    if label == 1:
        return (words, "agree" if flagged else "missed")
    return (words, "false alarm" if flagged else "agree")


def _warnings(result: ScoreResult) -> list[tuple[str, str]]:
    """``(code, message)`` of each warning (any shape tolerated)."""
    out = []
    for w in result.warnings or ():
        if isinstance(w, dict):
            out.append((str(w.get("code", "")), str(w.get("message", ""))))
        else:
            out.append(("", str(w)))
    return out


def _extra_items(result: ScoreResult) -> list[tuple[str, str]]:
    """``(key, value)`` of the pass-through fields, values as compact JSON cut to a readable length."""
    out = []
    for k, v in (result.extra or {}).items():
        try:
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            text = repr(v)
        out.append((str(k), _truncate(text, _EXTRA_MAX)))
    return out


_VERDICT_ORDER = {"REFUTED": 0, "NO_EVIDENCE": 1, "SUPPORTED": 2}


def _as_float(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _verification_view(result: ScoreResult) -> dict | None:
    """What the report shows of the verification stage, or None when the answer was not verified.

    ``{"head": one line (method, backend, the verifier's verdict, tier, score, tau), "final": the cascade's
    verdict in words, "error": str or None, "items": [{"text", "verdict", "detail", "evidence": [(chunk,
    start, end, text)], "bad": bool}], "n_ok": items that hold}``; claims not supported (refuted first) and
    flagged MetaRAG factoids are ``bad``.  A hand-edited verification of any shape is shown as far as it goes.

    Examples
    --------
    >>> r = ScoreResult(id="a", risk=0.5, flagged=True, decision="escalate", threshold=0.4, verification={
    ...     "method": "claims", "backend": "rules", "score": 0.5, "flagged": True, "tier": "revise", "tau": 0.75,
    ...     "claims": [{"text": "It opened in 1932.", "verdict": "REFUTED", "p_supported": 0.31,
    ...                 "reason": "number", "evidence": [{"chunk": 0, "start": 0, "end": 20, "text": "in 1937"}]},
    ...                {"text": "Strauss designed it.", "verdict": "SUPPORTED", "p_supported": 0.93}]})
    >>> v = _verification_view(r)
    >>> v["head"]
    'claims verification, rules backend (no LLM): flagged, tier revise, hallucination rate 0.50 (tau 0.75)'
    >>> v["final"]
    'final verdict: flagged (the verifier decides)'
    >>> [(i["verdict"], i["detail"]) for i in v["items"]]
    [('REFUTED', 'P(supported) 0.31 · number'), ('SUPPORTED', 'P(supported) 0.93')]
    """
    v = result.verification
    if not isinstance(v, dict):
        return None
    method, backend = str(v.get("method") or "?"), str(v.get("backend") or "?")
    who = f"{method} verification, {backend} backend" + (" (no LLM)" if backend == "rules" else "")
    error = v.get("error")
    if error is not None:
        return {"head": who, "final": f"final verdict: {'flagged' if result.flagged else 'not flagged'} (the "
                                      "verification failed: the pre-filter's decision stands)",
                "error": str(error), "items": [], "n_ok": 0}
    flagged = v.get("flagged")
    parts = ["flagged" if flagged else "not flagged" if flagged is not None else "no verdict"]
    if v.get("tier"):
        parts.append(f"tier {v['tier']}")
    score, tau = _as_float(v.get("score")), _as_float(v.get("tau"))
    if score is not None:
        parts.append(f"{'hallucination rate' if method == 'claims' else 'H'} {score:.2f}"
                     + (f" (tau {tau:g})" if tau is not None else ""))
    items = []
    for c in v.get("claims") or ():
        if not isinstance(c, dict):
            continue
        p = _as_float(c.get("p_supported", c.get("probability")))
        detail = " · ".join(x for x in (f"P(supported) {p:.2f}" if p is not None else "",
                                         str(c["reason"]) if c.get("reason") else "") if x)
        items.append({"text": str(c.get("text", "")), "verdict": str(c.get("verdict", "?")), "detail": detail,
                      "evidence": _ev_list(c.get("evidence")), "bad": c.get("verdict") != "SUPPORTED"})
    for f in v.get("factoids") or ():
        if not isinstance(f, dict):
            continue
        s_i = _as_float(f.get("score"))
        answers = ", ".join(f"{x.get('kind')}: \u201c{_truncate(str(x.get('text', '')), 80)}\u201d "
                            f"\u2192 {x.get('answer')}" for x in f.get("variants") or () if isinstance(x, dict))
        miss = f.get("missing") or 0
        detail = " · ".join(x for x in (f"S {s_i:.2f}" if s_i is not None else "", answers,
                                         f"{miss} variant(s) could not be made" if miss else "") if x)
        items.append({"text": str(f.get("text", "")), "verdict": "FLAGGED" if f.get("flagged") else "HOLDS",
                      "detail": detail, "evidence": _ev_list(f.get("evidence")), "bad": bool(f.get("flagged"))})
    items.sort(key=lambda i: (not i["bad"], _VERDICT_ORDER.get(i["verdict"], 1)))
    final = result.final_flagged
    return {"head": f"{who}: " + ", ".join(parts),
            "final": f"final verdict: {'flagged' if final else 'not flagged'} (the verifier decides)",
            "error": None, "items": items, "n_ok": sum(not i["bad"] for i in items)}


def _ev_list(evidence) -> list:
    out = []
    for e in evidence or ():
        if isinstance(e, dict):
            out.append((e.get("chunk"), e.get("start"), e.get("end"), _truncate(str(e.get("text", "")))))
    return out[:2]


def _clip(a, b, n: int):
    """``(a, b)`` clipped to ``[0, n]``, or None when empty or not integers."""
    try:
        a, b = max(0, int(a)), min(n, int(b))
    except (TypeError, ValueError, OverflowError):
        return None
    return (a, b) if a < b else None


def _marked_sentences(result: ScoreResult) -> dict[int, str]:
    """Position of each marked sentence -> ``"flag"`` (red) or ``"note"``.

    Red only for a flagged sentence of a flagged answer; a note, or a
    flagged sentence in a shown answer, is drawn as a note.
    """
    flagged = _is_flagged(result)
    out = {}
    for i, s in enumerate(result.sentences):
        if s.flagged and flagged:
            out[i] = "flag"
        elif s.flagged or s.note:
            out[i] = "note"
    return out


def _intervals(result: ScoreResult):
    """Valid (start, end) of spans and marked sentences, clipped to the output."""
    n = len(result.output)
    marked = _marked_sentences(result)
    spans = [(i, c, s) for i, s in enumerate(result.spans) if (c := _clip(s.start, s.end, n))]
    sents = [(i, c, s) for i, s in enumerate(result.sentences)
             if i in marked and (c := _clip(s.start, s.end, n))]
    return spans, sents


def _segments(result: ScoreResult):
    """Split the output at every span and marked-sentence boundary.

    Yields ``(start, end, span_ids, sentence_ids)`` for consecutive pieces
    covering the whole output; ids are tuples of the spans / marked
    sentences covering the piece.
    """
    text = result.output
    spans, sents = _intervals(result)
    cuts = {0, len(text)}
    for _, (a, b), _ in (*spans, *sents):
        cuts.update((a, b))
    cuts = sorted(cuts)
    for a, b in zip(cuts, cuts[1:]):
        span_ids = tuple(i for i, (s, e), _ in spans if s <= a and b <= e)
        sent_ids = tuple(i for i, (s, e), _ in sents if s <= a and b <= e)
        yield a, b, span_ids, sent_ids


def _field_line(context: str, field: str):
    """``(start, end)`` of the line of ``context`` that starts with the field label ``field`` (None: none)."""
    field = str(field or "").strip()
    if not field or not context:
        return None
    pos = 0
    for line in context.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        if stripped.startswith(field) and (len(stripped) == len(field) or stripped[len(field)] in ": \t="):
            lead = len(body) - len(stripped)
            return (pos + lead, pos + len(body))
        pos += len(line)
    return None


def _evidence_items(result: ScoreResult, sentence) -> list[dict]:
    """The evidence items the reasons of ``sentence`` name, located in the context.

    Each item: ``start``/``end`` in ``result.context``, ``chunk_id`` (may be
    ""), ``codes`` (the reason codes naming it) and ``kind`` (``"check"``
    for a claim-aligned evidence item, ``"field"`` for a record line).
    Items at the same place are merged.
    """
    context = result.context or ""
    n = len(context)
    items: dict[tuple, dict] = {}
    for r in sentence.reasons:
        d = r.details if isinstance(r.details, dict) else {}
        at = None
        kind = "check"
        if "context_start" in d and "context_end" in d:
            at = _clip(d.get("context_start"), d.get("context_end"), n)
        if at is None and "field" in d:
            at, kind = _field_line(context, d.get("field")), "field"
        if at is None:
            continue
        item = items.setdefault(at, {"start": at[0], "end": at[1], "chunk_id": str(d.get("chunk_id", "") or ""),
                                     "codes": [], "kind": kind})
        if r.code not in item["codes"]:
            item["codes"].append(str(r.code))
    return list(items.values())


def _cut(context: str, a: int, b: int) -> tuple[bool, bool]:
    """Whether the passage ``context[a:b]`` starts / ends in the middle of the text (to show an ellipsis)."""
    return (a > 0 and not context[a - 1].isspace()), (b < len(context) and not context[b].isspace())


_BOUNDARY = re.compile(r"\n|(?<=[.!?])\s")


def _passage(context: str, start: int, end: int, radius: int = _PASSAGE_RADIUS) -> tuple[int, int]:
    """The passage around ``context[start:end]``: its sentence or line, at most ``radius`` characters each side.

    Examples
    --------
    >>> text = "First one. The bill passed on Tuesday. Last."
    >>> a, b = _passage(text, text.index("Tuesday"), text.index("Tuesday") + 7)
    >>> text[a:b], _cut(text, a, b)
    ('The bill passed on Tuesday.', (False, False))
    """
    lo = max(0, start - radius)
    left = [m.end() for m in _BOUNDARY.finditer(context, lo, start)]
    a = left[-1] if left else lo
    hi = min(len(context), end + radius)
    m = _BOUNDARY.search(context, end, hi)
    b = m.start() if m else hi
    return a, max(b, end)


# ---------------------------------------------------------------- HTML

_CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dde5; --bg:#f5f6f8; --card:#fff; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif; color:var(--fg); background:var(--bg); }
header { padding:20px 28px 12px; background:#1f2a44; color:#fff; }
header h1 { margin:0 0 8px; font-size:22px; }
header .meta { color:#c9d2e6; font-size:13px; }
header .counts { margin-top:10px; display:flex; flex-wrap:wrap; gap:6px; }
main { padding:16px 28px 40px; max-width:1200px; margin:0 auto; }
.legend { font-size:13px; color:var(--muted); margin:4px 0 0; }
.filters { display:flex; flex-wrap:wrap; gap:16px; align-items:center; padding:10px 0 14px; }
.filters label { font-weight:600; font-size:13px; }
.filters select { margin-left:6px; padding:3px 6px; font-size:14px; }
.filters .shown { color:var(--muted); font-size:13px; }
.card { background:var(--card); border:1px solid var(--line); border-left:6px solid #adb5bd; border-radius:8px; padding:14px 18px; margin:0 0 16px; }
.card.c-show { border-left-color:#2f9e44; } .card.c-warn { border-left-color:#e0a800; }
.card.c-regenerate { border-left-color:#e8590c; } .card.c-abstain { border-left-color:#6c757d; }
.card.c-escalate { border-left-color:#c92a2a; } .card.c-error { border-left-color:#862e9c; background:#fbf5fd; }
.card[hidden] { display:none; }
.card-head { display:flex; flex-wrap:wrap; align-items:center; gap:10px 16px; }
.card-head .rid { font-weight:700; font-size:16px; font-family:ui-monospace,Menlo,Consolas,monospace; }
.risk { display:flex; align-items:center; gap:8px; font-variant-numeric:tabular-nums; }
.bar { width:140px; height:10px; background:#e6e9ef; border-radius:5px; overflow:hidden; }
.fill { height:100%; background:linear-gradient(90deg,#f0b429,#d64545); }
.badge { display:inline-block; padding:1px 9px; border-radius:10px; font-size:12px; font-weight:700; color:#fff; text-transform:uppercase; letter-spacing:.03em; }
.d-show { background:#2f9e44; } .d-warn { background:#e0a800; color:#1d2330; } .d-regenerate { background:#e8590c; }
.d-abstain { background:#6c757d; } .d-escalate { background:#c92a2a; } .d-other { background:#495057; }
.d-error { background:#862e9c; }
.verify { background:#7048e8; }
.count { background:#33415c; }
.lab { display:inline-block; padding:1px 8px; border-radius:4px; font-size:12px; border:1px solid var(--line); }
.lab.agree { background:#ebfbee; border-color:#b2f2bb; } .lab.missed, .lab.false-alarm { background:#fff4e6; border-color:#ffc078; font-weight:700; }
.small { color:var(--muted); font-size:13px; }
.topic { display:inline-block; border:1px solid var(--line); border-radius:4px; padding:0 6px; font-size:12px; margin-right:4px; }
.rule { margin:8px 0 0; font-weight:600; }
.thresholds { margin:4px 0 0; color:var(--muted); font-size:12.5px; }
.thresholds strong { color:var(--fg); }
.verification { margin:8px 0 0; padding:6px 10px; background:#f3f0ff; border:1px solid #d0bfff; border-radius:6px; font-size:13px; }
.verification h3 { margin:0 0 4px; font-size:14px; }
.vitems { margin:4px 0; padding-left:18px; }
.vitems blockquote { margin:2px 0 2px 12px; }
.warnings { margin:8px 0 0; padding:6px 10px; background:#fff9db; border:1px solid #ffe066; border-radius:6px; font-size:13px; }
.warnings strong { color:#a15c00; }
.extra { margin:6px 0 0; font-size:12.5px; color:var(--muted); }
.extra code { font-size:12px; color:var(--fg); background:#f1f3f5; border-radius:3px; padding:0 3px; }
.query { margin:8px 0 0; color:var(--muted); }
.answer { white-space:pre-wrap; margin:10px 0; padding:10px 12px; background:#fafbfc; border-left:3px solid var(--line); }
mark.span { background:#ffd8a8; color:inherit; padding:0; }
mark.span.note { background:transparent; border-bottom:2px dotted #868e96; }
.flagged-sentence { text-decoration:underline wavy #d64545; text-decoration-skip-ink:none; text-underline-offset:3px; }
.note-sentence { text-decoration:underline dotted #868e96; text-decoration-skip-ink:none; text-underline-offset:3px; }
.tag { display:inline-block; font-size:11px; font-weight:700; text-transform:uppercase; border-radius:3px; padding:0 5px; margin-right:6px; }
.tag.flag { background:#ffe3e3; color:#c92a2a; } .tag.note { background:#f1f3f5; color:#495057; border:1px dotted #868e96; }
.tag.plain { background:#f8f9fa; color:#868e96; }
.rows h3 { font-size:14px; margin:12px 0 6px; }
.row { display:grid; grid-template-columns:minmax(0,1fr) minmax(0,1fr); gap:14px; border-top:1px solid var(--line); padding:10px 0; }
details.sent { border-top:1px solid var(--line); }
details.sent > summary { cursor:pointer; padding:6px 0; font-size:13.5px; }
details.sent > summary .stext { color:var(--fg); }
details.sent[open] > summary .stext { display:none; }
details.sent .row { border-top:none; padding-top:4px; }
.claim .sentence { font-weight:600; }
.reasons { list-style:none; padding:0; margin:6px 0; }
.reasons li { margin:3px 0; }
code.code { background:#fff0f0; color:#a61e4d; border:1px solid #ffc9c9; border-radius:3px; padding:0 4px; font-size:11px; margin-right:6px; }
.row.other code.code { background:#f1f3f5; color:#495057; border-color:#dee2e6; }
.explanation { margin:4px 0 0; color:var(--muted); font-size:13px; }
.evidence { background:#f1f8f3; border:1px solid #cfe8d6; border-radius:6px; padding:8px 10px; }
.evidence + .evidence { margin-top:8px; }
.evidence .chunk-id { font-family:ui-monospace,Menlo,Consolas,monospace; font-size:12px; color:#2b8a3e; font-weight:700; }
.evidence blockquote { margin:4px 0 0; white-space:pre-wrap; }
mark.ev { background:#fff3bf; outline:1px solid #fcc419; color:inherit; }
details.context { margin:12px 0 0; border-top:1px solid var(--line); padding-top:6px; }
details.context > summary { cursor:pointer; font-size:13.5px; font-weight:600; }
pre.ctx { white-space:pre-wrap; word-wrap:break-word; font:13px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif; background:#fafbfc; border:1px solid var(--line); border-radius:6px; padding:10px 12px; max-height:480px; overflow:auto; }
.ctx-cite { background:#ebfbee; }
mark.ctx-item { background:#fff3bf; outline:1px solid #fcc419; color:inherit; }
.error-text { white-space:pre-wrap; font-family:ui-monospace,Menlo,Consolas,monospace; font-size:13px; margin:8px 0 0; }
.none { color:var(--muted); font-style:italic; }
.card, .card * { overflow-wrap:anywhere; }
@media print { .filters { display:none; } .card { break-inside:avoid; } details { display:block; } }
"""

_JS = """
(function () {
  var dSel = document.getElementById("f-decision");
  var tSel = document.getElementById("f-topic");
  var sSel = document.getElementById("f-sort");
  var box = document.getElementById("cards");
  var shown = document.getElementById("shown");
  function risk(c) {
    var r = parseFloat(c.getAttribute("data-risk"));
    return isNaN(r) ? null : r;
  }
  function order(c) { return parseInt(c.getAttribute("data-order"), 10) || 0; }
  function sort() {
    var how = sSel.value;
    var cards = Array.prototype.slice.call(box.querySelectorAll("article.card"));
    cards.sort(function (a, b) {
      if (how !== "input") {
        var ra = risk(a), rb = risk(b);
        if (ra === null && rb !== null) { return 1; }
        if (rb === null && ra !== null) { return -1; }
        if (ra !== rb) { return how === "risk-asc" ? ra - rb : rb - ra; }
      }
      return order(a) - order(b);
    });
    for (var i = 0; i < cards.length; i++) { box.appendChild(cards[i]); }
  }
  function apply() {
    var d = dSel.value, t = tSel.value, n = 0;
    var cards = document.querySelectorAll("article.card");
    for (var i = 0; i < cards.length; i++) {
      var c = cards[i];
      var topics = " " + (c.getAttribute("data-topics") || "") + " ";
      var ok = (d === "*" || c.getAttribute("data-decision") === d) &&
               (t === "*" || topics.indexOf(" " + t + " ") >= 0);
      c.hidden = !ok;
      if (ok) { n++; }
    }
    shown.textContent = n + " of " + cards.length + " shown";
  }
  dSel.addEventListener("change", apply);
  tSel.addEventListener("change", apply);
  sSel.addEventListener("change", sort);
  apply();
})();
"""

# the page runs its own script only: the Content-Security-Policy allows exactly this script by its hash
_JS_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
_CSP = (f"default-src 'none'; script-src 'sha256-{_JS_HASH}'; style-src 'unsafe-inline'; img-src 'none'; "
        "base-uri 'none'; form-action 'none'")


def _html_answer(result: ScoreResult) -> str:
    """The output with spans in ``<mark>`` nested inside marked-sentence ``<span>``.

    A flagged sentence of a flagged answer is ``flagged-sentence`` (red);
    a note is ``note-sentence``; in a shown answer spans are notes
    (``<mark class="span note">``).
    """
    marked = _marked_sentences(result)
    spans_are_notes = not _is_flagged(result)
    parts: list[str] = []
    open_sent: tuple = ()
    for a, b, span_ids, sent_ids in _segments(result):
        if sent_ids != open_sent:
            if open_sent:
                parts.append("</span>")
            if sent_ids:
                ids = " ".join(str(result.sentences[i].index) for i in sent_ids)
                risk = max(result.sentences[i].risk for i in sent_ids)
                if any(marked[i] == "flag" for i in sent_ids):
                    parts.append(f'<span class="flagged-sentence" data-sentence="{_esc(ids)}" '
                                 f'title="flagged: sentence risk {_num(risk)}">')
                else:
                    parts.append(f'<span class="note-sentence" data-sentence="{_esc(ids)}" '
                                 f'title="note: sentence risk {_num(risk)}">')
            open_sent = sent_ids
        piece = _esc(result.output[a:b])
        if span_ids:
            risk = max(result.spans[i].risk for i in span_ids)
            ids = " ".join(map(str, span_ids))
            if spans_are_notes:
                piece = (f'<mark class="span note" title="note: predicted span, risk {_num(risk)}" '
                         f'data-spans="{ids}">{piece}</mark>')
            else:
                piece = f'<mark class="span" title="risk {_num(risk)}" data-spans="{ids}">{piece}</mark>'
        parts.append(piece)
    if open_sent:
        parts.append("</span>")
    return "".join(parts)


def _statuses(result: ScoreResult) -> list[str]:
    """Per sentence: ``"flag"`` (red), ``"note"`` or ``"plain"`` (not flagged, no note)."""
    marked = _marked_sentences(result)
    return [marked.get(i, "plain") for i in range(len(result.sentences))]


_STATUS_WORDS = {"flag": "flagged", "note": "note", "plain": "not flagged"}


def _html_evidence(result: ScoreResult, s) -> str:
    """The evidence box: the passage of the context around each item the reasons name, else the citation."""
    context = result.context or ""
    items = _evidence_items(result, s)
    boxes = []
    for it in items:
        a, b = _passage(context, it["start"], it["end"])
        left, right = _cut(context, a, b)
        what = "record line" if it["kind"] == "field" else "evidence item"
        head = _esc(it["chunk_id"]) if it["chunk_id"] else "context"
        boxes.append(
            f'<div class="evidence"><div class="chunk-id">{head}</div>'
            f'<div class="small">{what} of {_esc(", ".join(it["codes"]))} &middot; context chars '
            f'{it["start"]}&ndash;{it["end"]}</div>'
            f'<blockquote>{"&hellip;" if left else ""}{_esc(context[a:it["start"]])}'
            f'<mark class="ev">{_esc(context[it["start"]:it["end"]])}</mark>'
            f'{_esc(context[it["end"]:b])}{"&hellip;" if right else ""}</blockquote></div>'
        )
    if boxes:
        return f'<div class="evidences">{"".join(boxes)}</div>'
    ev = s.evidence
    if ev is None:
        return '<div class="evidence"><p class="none">No evidence chunk cited.</p></div>'
    return (
        f'<div class="evidence"><div class="chunk-id">{_esc(ev.chunk_id)}</div>'
        f'<div class="small">chunk {_esc(ev.chunk_index)} &middot; chars {_esc(ev.start)}&ndash;{_esc(ev.end)}'
        f" &middot; support {_num(ev.support)}</div>"
        f"<blockquote>{_esc(ev.text)}</blockquote></div>"
    )


def _html_claim(s, status: str) -> str:
    reasons = "".join(f'<li><code class="code">{_esc(r.code)}</code>{_esc(r.text)}</li>' for r in s.reasons)
    claim = [
        f'<div class="claim"><div class="sentence">{_esc(s.text)}</div>',
        f'<div class="small"><span class="tag {status}">{_STATUS_WORDS[status]}</span>'
        f'sentence {_esc(s.index)} &middot; risk {_pct(s.risk)}</div>',
        f'<ul class="reasons">{reasons}</ul>' if reasons else '<p class="none">No reason code.</p>',
    ]
    if s.explanation:
        claim.append(f'<p class="explanation">{_esc(s.explanation)}</p>')
    claim.append("</div>")
    return "".join(claim)


def _html_rows(result: ScoreResult) -> str:
    """Every sentence with its reasons beside its evidence; collapsed unless flagged."""
    status = _statuses(result)
    n_flag, n_note = status.count("flag"), status.count("note")
    out = ['<div class="rows">']
    if result.sentences:
        out.append(f"<h3>Sentences ({len(result.sentences)}): {n_flag} flagged, {n_note} "
                   f"note{'' if n_note == 1 else 's'}</h3>")
    if not n_flag:
        out.append('<p class="none">No flagged sentence.</p>')
    for i, s in enumerate(result.sentences):
        row = _html_claim(s, status[i]) + _html_evidence(result, s)
        if status[i] == "flag":
            out.append(f'<div class="row">{row}</div>')
            continue
        codes = ", ".join(dict.fromkeys(str(r.code) for r in s.reasons)) or "no reason"
        out.append(
            f'<details class="sent {status[i]}"><summary><span class="tag {status[i]}">{_STATUS_WORDS[status[i]]}'
            f'</span><span class="stext">{_esc(_truncate(s.text, 120))}</span> '
            f'<span class="small">&middot; risk {_pct(s.risk)} &middot; {_esc(codes)}</span></summary>'
            f'<div class="row other {status[i]}">{row}</div></details>'
        )
    out.append("</div>")
    return "".join(out)


def _context_marks(result: ScoreResult):
    """Cited chunks and evidence items of every sentence, as (start, end) in the context."""
    n = len(result.context or "")
    cites, items = {}, {}
    for s in result.sentences:
        ev = s.evidence
        if ev is not None and (c := _clip(ev.start, ev.end, n)):
            cites[c] = str(ev.chunk_id)
        for it in _evidence_items(result, s):
            items.setdefault((it["start"], it["end"]), []).extend(it["codes"])
    return cites, items


def _html_context(result: ScoreResult) -> str:
    context = result.context or ""
    if not context:
        return ('<details class="context"><summary>Full context</summary>'
                '<p class="none">context not stored (scored with --no-context)</p></details>')
    cites, items = _context_marks(result)
    cuts = {0, len(context)}
    for a, b in (*cites, *items):
        cuts.update((a, b))
    cuts = sorted(cuts)
    parts = []
    for a, b in zip(cuts, cuts[1:]):
        piece = _esc(context[a:b])
        item = [codes for (s, e), codes in items.items() if s <= a and b <= e]
        if item:
            codes = ", ".join(dict.fromkeys(c for cs in item for c in cs))
            piece = f'<mark class="ctx-item" title="evidence item: {_esc(codes)}">{piece}</mark>'
        chunk = [cid for (s, e), cid in cites.items() if s <= a and b <= e]
        if chunk:
            piece = f'<span class="ctx-cite" title="cited chunk {_esc(", ".join(chunk))}">{piece}</span>'
        parts.append(piece)
    return (f'<details class="context"><summary>Full context ({len(context):,} characters; cited chunks '
            f'<span class="ctx-cite">shaded</span>, evidence items <mark class="ctx-item">marked</mark>)'
            f'</summary><pre class="ctx">{"".join(parts)}</pre></details>')


def _html_verification(result: ScoreResult) -> str:
    view = _verification_view(result)
    if view is None:
        return ""
    out = [f'<div class="verification"><h3>Verification</h3><p><strong>{_esc(view["head"])}</strong>. '
           f'{_esc(view["final"])}.</p>']
    if view["error"]:
        out.append(f'<p class="none">error: {_esc(view["error"])}</p>')

    def item_html(it):
        ev = "".join(f'<blockquote class="small">chunk {_esc(c)} &middot; chars {_esc(a)}&ndash;{_esc(b)}: '
                     f'{_esc(t)}</blockquote>' for c, a, b, t in it["evidence"])
        tag = "flag" if it["bad"] else "plain"
        return (f'<li><span class="tag {tag}">{_esc(it["verdict"])}</span>{_esc(it["text"])} '
                f'<span class="small">{_esc(it["detail"])}</span>{ev}</li>')

    bad = [it for it in view["items"] if it["bad"]]
    ok = [it for it in view["items"] if not it["bad"]]
    if bad:
        out.append('<ul class="vitems">' + "".join(item_html(it) for it in bad) + "</ul>")
    elif view["items"]:
        out.append('<p class="none">Every claim or factoid holds.</p>')
    if ok:
        out.append(f'<details><summary>{len(ok)} that hold{"s" if len(ok) == 1 else ""}</summary>'
                   '<ul class="vitems">' + "".join(item_html(it) for it in ok) + "</ul></details>")
    out.append("</div>")
    return "".join(out)


def _html_card(result: ScoreResult, order: int = 0) -> str:
    topics = _topic_tokens(result)
    risk = _finite(result.risk)
    width = 0.0 if risk is None else min(100.0, max(0.0, 100 * risk))
    head = [
        f'<span class="rid">{_esc(result.id)}</span>',
        f'<span class="risk" title="calibrated risk">risk {_pct(result.risk)}'
        f'<span class="bar"><span class="fill" style="display:block;width:{width:.1f}%"></span></span></span>',
        f'<span class="badge {_decision_class(result.decision)}">{_esc(result.decision)}</span>',
    ]
    if result.verify:
        head.append('<span class="badge verify">verify</span>')
    label = _label_info(result)
    if label is not None:
        words, agree = label
        head.append(f'<span class="lab {agree.replace(" ", "-")}" title="gold/user label against the decision">'
                    f'gold/user label: {_esc(words)} &middot; {_esc(agree)}</span>')
    if result.sensitive:
        head.append('<span class="small">sensitive</span>')
    if result.task_type:
        head.append(f'<span class="small">task {_esc(result.task_type)}</span>')
    if result.topics:
        head.append("<span>" + "".join(f'<span class="topic">{_esc(t)}</span>' for t in result.topics) + "</span>")
    body = [f'<div class="card-head">{"".join(head)}</div>']
    body.append(f'<p class="rule">{_esc(_rule_text(result))}</p>')
    body.append(_html_verification(result))
    sthr = ("not recorded" if result.sentence_threshold is None else _num(result.sentence_threshold))
    sensitive = " (a sensitive topic: the stricter threshold applies here)" if result.sensitive else ""
    body.append(f'<p class="thresholds"><strong>answer threshold {_num(result.threshold)}</strong>: '
                f'{_ANSWER_THRESHOLD_TEXT}{sensitive}. '
                f'<strong>sentence threshold {sthr}</strong>: {_SENTENCE_THRESHOLD_TEXT}.</p>')
    warns = _warnings(result)
    if warns:
        body.append('<div class="warnings">' + "<br>".join(
            f'<strong>warning {_esc(c)}</strong> {_esc(m)}' for c, m in warns) + "</div>")
    extra = _extra_items(result)
    if extra:
        body.append('<p class="extra">fields: ' + " &middot; ".join(
            f"{_esc(k)} <code>{_esc(v)}</code>" for k, v in extra) + "</p>")
    if result.query:
        body.append(f'<p class="query"><strong>Query:</strong> {_esc(result.query)}</p>')
    body.append(f'<div class="answer">{_html_answer(result)}</div>')
    body.append(_html_rows(result))
    body.append(_html_context(result))
    risk_attr = "" if risk is None else repr(risk)
    return (
        f'<article class="card c-{_esc(result.decision) if result.decision in DECISIONS else "other"}" '
        f'id="r-{_esc(result.id)}" data-decision="{_esc(result.decision)}" '
        f'data-topics="{_esc(" ".join(topics))}" data-risk="{risk_attr}" data-order="{order}">{"".join(body)}</article>'
    )


def _error_fields(err: dict) -> tuple[str, str, str]:
    """``(line, id, error text)`` of an error record, issues appended."""
    line = err.get("line", "")
    rid = err.get("id", "")
    text = str(err.get("error", ""))
    issues = err.get("issues")
    if isinstance(issues, (list, tuple)) and issues:
        text += "".join(f"\n- {i if isinstance(i, str) else json.dumps(i, ensure_ascii=False)}" for i in issues)
    return ("" if line is None else str(line)), ("" if rid is None else str(rid)), text


def _html_error_card(err: dict, order: int) -> str:
    line, rid, text = _error_fields(err)
    return (
        f'<article class="card c-error" data-decision="error" data-topics="" data-risk="" data-order="{order}">'
        f'<div class="card-head"><span class="rid">{_esc(rid) or "(no id)"}</span>'
        f'<span class="badge d-error">not scored</span><span class="small">input line {_esc(line) or "?"}</span></div>'
        f'<p class="error-text">{_esc(text)}</p></article>'
    )


def _model_line(results: list[ScoreResult]) -> str:
    if not results:
        return ""
    m = results[0].model
    bits = [m.name or "unnamed model"]
    if m.version:
        bits.append(f"version {m.version}")
    if m.method:
        bits.append(f"method {m.method}")
    if m.sha256:
        bits.append(f"sha256 {m.sha256[:12]}")
    return "Model: " + ", ".join(bits)


def render_html(results, *, title: str = "evqual report", errors=(), sort: str = "input") -> str:
    """Render scored answers as one self-contained HTML page for auditors.

    Parameters
    ----------
    results : iterable of ScoreResult
        The results to show (a single result, or dicts from
        :meth:`ScoreResult.to_dict`, are accepted too; a dict holding
        ``"error"`` is taken as an error record).
    title : str, default "evqual report"
    errors : iterable of dict, default=()
        Error records of ``evqual score`` (``{"line", "id", "error",
        "issues"}``): each gets a card of its own ("not scored"), counted
        in the header.
    sort : {"input", "risk"}, default "input"
        The initial order of the cards: as given, or risk high to low.
        A select on the page re-sorts (input order, risk high to low, risk
        low to high).

    Returns
    -------
    str
        A complete HTML document with inline CSS and JavaScript (allowed
        by hash in a Content-Security-Policy) and no external resource.
        The header gives the count per decision, the count of lines not
        scored and the model of the first result; a card per answer
        (``<article class="card c-<decision>" data-decision=..
        data-topics=.. data-risk=.. data-order=..>``) shows its risk,
        decision, the rule that decided in words, both thresholds
        explained, the gold/user label against the decision, warnings and
        pass-through fields, the answer with flagged sentences underlined
        in red (``<span class="flagged-sentence">``) and spans highlighted
        (``<mark class="span">``) in a flagged answer, or notes dotted
        (``note-sentence``, ``<mark class="span note">``) in a shown one,
        every sentence with its reasons beside the evidence they name
        (unflagged sentences collapsed in ``<details>``), and the full
        context (collapsed) with cited chunks and evidence items marked.

    Raises
    ------
    ValueError
        If ``sort`` is unknown.

    Examples
    --------
    >>> page = render_html([])
    >>> page.startswith("<!DOCTYPE html>") and "No results." in page
    True
    """
    return "".join(iter_html(results, title=title, errors=errors, sort=sort))


def iter_html(results, *, title: str = "evqual report", errors=(), sort: str = "input"):
    """The page of :func:`render_html` in pieces (``"".join`` gives it), one card at a time.

    For writing a report of many answers without holding it whole in memory.

    Examples
    --------
    >>> "".join(iter_html([])) == render_html([])
    True
    """
    results, errs = _as_records(results, errors)
    pairs = _sorted(results, sort)  # checked now, not at the first piece
    return _html_pieces(results, errs, pairs, title, sort)


def _html_pieces(results, errs, pairs, title, sort):
    counts = Counter(r.decision for r in results)
    decisions = _decision_order(results)
    topics = sorted({t for r in results for t in _topic_tokens(r)})

    count_badges = "".join(
        f'<span class="badge {_decision_class(d)}">{_esc(d)}: {counts.get(d, 0)}</span>' for d in decisions
    )
    count_badges += f'<span class="badge count">total: {len(results)}</span>'
    n_verify = sum(1 for r in results if r.verify)
    if n_verify:
        count_badges += f'<span class="badge verify">verify: {n_verify}</span>'
    if errs:
        count_badges += f'<span class="badge d-error">not scored: {len(errs)}</span>'
    n_ood = _n_ood(results)
    if n_ood:
        count_badges += (f'<span class="badge verify" title="W004: unlike the model\'s training answers; their '
                         f'risks are less reliable">outside what the model knows: {n_ood}</span>')
    labelled = [li for r in results if (li := _label_info(r)) is not None]
    if labelled:
        agree = Counter(a for _, a in labelled)
        count_badges += (f'<span class="badge count">labelled: {len(labelled)} &middot; agree {agree["agree"]} '
                         f'&middot; missed {agree["missed"]} &middot; false alarm {agree["false alarm"]}</span>')
    model = _model_line(results)

    dec_opts = '<option value="*">all</option>' + "".join(
        f'<option value="{_esc(d)}">{_esc(d)} ({counts.get(d, 0)})</option>' for d in decisions
    )
    if errs:
        dec_opts += f'<option value="error">not scored ({len(errs)})</option>'
    topic_opts = '<option value="*">all</option>' + "".join(
        f'<option value="{_esc(t)}">{_esc(t)}</option>' for t in topics
    )
    sort_opts = "".join(
        f'<option value="{v}"{" selected" if v == {"input": "input", "risk": "risk-desc"}[sort] else ""}>{t}</option>'
        for v, t in (("input", "input order"), ("risk-desc", "risk high → low"), ("risk-asc", "risk low → high"))
    )
    n_cards = len(results) + len(errs)
    legend = ('<p class="legend">Red marks (wavy underline, orange highlight) appear only in answers the policy '
              'does not show; in a shown answer the sentences that would have been flagged and the predicted '
              'spans are notes (dotted, grey). Unflagged sentences and the full context are collapsed: click '
              'to open.</p>')
    head = (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{_esc(title)}</h1><div class="meta">{_esc(model)}</div>'
        f'<div class="counts">{count_badges}</div></header>\n'
        "<main>\n"
        f"{legend}\n"
        '<div class="filters">'
        f'<label for="f-decision">Decision<select id="f-decision">{dec_opts}</select></label>'
        f'<label for="f-topic">Topic<select id="f-topic">{topic_opts}</select></label>'
        f'<label for="f-sort">Sort<select id="f-sort">{sort_opts}</select></label>'
        f'<span class="shown" id="shown">{n_cards} of {n_cards} shown</span>'
        "</div>\n"
        '<div id="cards">\n'
    )
    yield head
    if not n_cards:
        yield '<p class="none">No results.</p>'
    for n, (k, r) in enumerate(pairs):
        yield ("\n" if n else "") + _html_card(r, k)
    for k, e in enumerate(errs):
        yield ("\n" if k or results else "") + _html_error_card(e, len(results) + k)
    yield f'\n</div>\n</main>\n<script>{_JS}</script>\n</body>\n</html>\n'


# ---------------------------------------------------------------- markdown


# a line of text that would start a heading or a list in markdown
_MD_LINE_START = re.compile(r"^(\s*)(#|=|\+|-(?=\s)|\d+[.)](?=\s))")


def _truncate(text: str, n: int = _EVIDENCE_MAX) -> str:
    text = text or ""
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _md_quote(text: str) -> str:
    """Already-escaped markdown text as a blockquote; no line starts a heading or a list."""
    lines = text.splitlines() or [""]
    return "\n".join(f"> {indent_entities(_MD_LINE_START.sub(lambda m: m.group(1) + chr(92) + m.group(2), line))}"
                      .rstrip() for line in lines)


def _md_answer(result: ScoreResult) -> str:
    """The output with the union of spans marked, as a blockquote.

    ``**[[...]]**`` in a flagged answer; ``[[note: ...]]`` in a shown one
    (spans of a shown answer are notes).
    """
    spans, _ = _intervals(result)
    notes = not _is_flagged(result)
    merged: list[list[int]] = []
    for a, b in sorted(c for _, c, _ in spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    text = result.output
    parts, pos = [], 0
    for a, b in merged:
        parts.append(_md_text(text[pos:a]))
        # mark each line of the span on its own so bold never crosses a line break
        pieces = re.split(r"(\r\n|\r|\n)", text[a:b])
        mark = (lambda p: f"[[note: {_md_text(p)}]]") if notes else (lambda p: f"**[[{_md_text(p)}]]**")
        parts.append("".join(p if (k % 2 or not p) else mark(p) for k, p in enumerate(pieces)))
        pos = b
    parts.append(_md_text(text[pos:]))
    # a line of the answer never starts a heading or a list inside the quote
    return _md_quote("".join(parts))


def _md_evidence(result: ScoreResult, s) -> tuple[str, str]:
    """``(chunk ids, evidence text)`` for a sentence's row: the passages its reasons name, else its citation."""
    context = result.context or ""
    items = _evidence_items(result, s)
    if items:
        ids, texts = [], []
        for it in items:
            a, b = _passage(context, it["start"], it["end"])
            left, right = _cut(context, a, b)
            ids.append(it["chunk_id"] or "context")
            texts.append(_md_text(("\u2026" if left else "") + context[a:it["start"]])
                         + f"**{_md_text(context[it['start']:it['end']])}**"
                         + _md_text(context[it["end"]:b] + ("\u2026" if right else "")))
        return ", ".join(dict.fromkeys(ids)), " / ".join(texts)
    ev = s.evidence
    return (ev.chunk_id, _md_text(_truncate(ev.text))) if ev else ("", "")


def _md_section(result: ScoreResult) -> str:
    decision = result.decision + (" (verify)" if result.verify else "")
    topics = ", ".join(str(t) for t in result.topics) or "none"
    sthr = "not recorded" if result.sentence_threshold is None else _num(result.sentence_threshold)
    out = [
        f"## {_md_inline(result.id)}",
        "",
        f"- **Risk:** {_pct(result.risk)}",
        f"- **Decision:** {_md_inline(decision)}",
        f"- **Rule:** {_md_inline(_rule_text(result))}",
        f"- **Threshold:** {_num(result.threshold)} (answer threshold: {_ANSWER_THRESHOLD_TEXT})",
        f"- **Sentence threshold:** {sthr} ({_SENTENCE_THRESHOLD_TEXT})",
        f"- **Topics:** {_md_inline(topics)}" + (" (sensitive)" if result.sensitive else ""),
    ]
    label = _label_info(result)
    if label is not None:
        out.append(f"- **Gold/user label:** {_md_inline(label[0])} ({_md_inline(label[1])})")
    for code, message in _warnings(result):
        out.append(f"- **Warning {_md_inline(code)}:** {_md_inline(message)}")
    extra = _extra_items(result)
    if extra:
        out.append("- **Fields:** " + "; ".join(f"{_md_inline(k)}: {_md_inline(v)}" for k, v in extra))
    view = _verification_view(result)
    if view is not None:
        out.append(f"- **Verification:** {_md_inline(view['head'])}. {_md_inline(view['final'])}.")
        if view["error"]:
            out.append(f"  - error: {_md_inline(view['error'])}")
        for it in view["items"]:
            if it["bad"]:
                ev = " / ".join(f"chunk {c}: {t}" for c, _, _, t in it["evidence"])
                out.append(f"  - **{_md_inline(it['verdict'])}** {_md_inline(it['text'])}"
                           + (f" ({_md_inline(it['detail'])})" if it["detail"] else "")
                           + (f"; evidence: {_md_inline(ev)}" if ev else ""))
        if view["n_ok"]:
            out.append(f"  - {view['n_ok']} other claim(s) or factoid(s) hold")
    if result.query:
        out.append(f"- **Query:** {_md_inline(result.query)}")
    marks = "notes (predicted spans of a shown answer) marked [[note: ...]]" if not _is_flagged(result) \
        else "predicted spans marked **[[...]]**"
    out += ["", f"**Answer** ({marks}):", "", _md_answer(result), ""]
    status = _statuses(result)
    if "flag" not in status:
        n_note = status.count("note")
        out += ["No flagged sentence." + (f" Notes: {n_note}." if n_note else ""), ""]
    if result.sentences:
        out += [
            "| # | sentence | risk | reasons | explanation | evidence chunk | evidence |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for i, s in enumerate(result.sentences):
            reasons = "; ".join(f"`{_md_code(r.code)}` {_md_text(r.text)}" for r in s.reasons)
            chunk, evidence = _md_evidence(result, s)
            cells = [
                f"{s.index} {_STATUS_WORDS[status[i]]}",
                s.text,
                _pct(s.risk),
                reasons,
                s.explanation,
                chunk,
                evidence,
            ]
            out.append("| " + " | ".join(_md_cell(c, escaped=(k in (3, 6))) for k, c in enumerate(cells)) + " |")
        out.append("")
    context = result.context or ""
    if not context:
        out += ["Context: context not stored (scored with --no-context).", ""]
    else:
        out += [f"<details><summary>Full context ({len(context):,} characters)</summary>", "",
                _md_quote(_md_text(context)), "", "</details>", ""]
    return "\n".join(out)


def _md_errors(errs: list[dict]) -> str:
    out = [f"## Lines not scored ({len(errs)})", "", "| line | id | error |", "| --- | --- | --- |"]
    for e in errs:
        line, rid, text = _error_fields(e)
        out.append(f"| {_md_cell(line)} | {_md_cell(rid)} | {_md_cell(text)} |")
    out.append("")
    return "\n".join(out)


def render_markdown(results, *, title: str = "evqual report", errors=(), sort: str = "input") -> str:
    """Render scored answers as markdown.

    Parameters
    ----------
    results : iterable of ScoreResult
        (dicts holding ``"error"`` are taken as error records)
    title : str, default "evqual report"
    errors : iterable of dict, default=()
        Error records of ``evqual score``: listed in a "Lines not scored"
        table and counted.
    sort : {"input", "risk"}, default "input"
        Order of the sections: as given, or risk high to low.

    Returns
    -------
    str
        A ``# title`` heading, the model of the first result, a table of
        counts per decision, then per answer a ``## id`` section with its
        risk, decision, the rule that decided in words, both thresholds
        explained, topics, the gold/user label against the decision,
        warnings and pass-through fields, the answer (as a blockquote)
        with predicted spans marked ``**[[...]]**`` in a flagged answer or
        ``[[note: ...]]`` in a shown one (overlapping spans merged), a
        table of every sentence (status flagged / note / not flagged,
        risk, reasons, explanation, evidence chunk id and the evidence the
        reasons name, else the cited chunk cut to 300 characters) and the
        full context as a quote in a collapsed ``<details>`` block. Text
        is HTML-escaped (``<`` becomes ``&lt;``) and table cells have
        pipes escaped and newlines as ``<br>``.

    Raises
    ------
    ValueError
        If ``sort`` is unknown.

    Examples
    --------
    >>> print(render_markdown([]))
    # evqual report
    <BLANKLINE>
    | decision | count |
    | --- | --- |
    | show | 0 |
    | warn | 0 |
    | regenerate | 0 |
    | abstain | 0 |
    | escalate | 0 |
    | total | 0 |
    <BLANKLINE>
    No results.
    <BLANKLINE>
    """
    return "".join(iter_markdown(results, title=title, errors=errors, sort=sort))


def iter_markdown(results, *, title: str = "evqual report", errors=(), sort: str = "input"):
    """The text of :func:`render_markdown` in pieces (``"".join`` gives it), one answer at a time.

    Examples
    --------
    >>> "".join(iter_markdown([])) == render_markdown([])
    True
    """
    results, errs = _as_records(results, errors)
    pairs = _sorted(results, sort)  # checked now, not at the first piece
    return _md_pieces(results, errs, pairs, title)


def _md_pieces(results, errs, pairs, title):
    counts = Counter(r.decision for r in results)
    out = [f"# {_md_inline(title)}", ""]
    model = _model_line(results)
    if model:
        out += [_md_inline(model), ""]
    out += ["| decision | count |", "| --- | --- |"]
    out += [f"| {_md_cell(d)} | {counts.get(d, 0)} |" for d in _decision_order(results)]
    out += [f"| total | {len(results)} |"]
    if errs:
        out += [f"| not scored (error) | {len(errs)} |"]
    n_ood = _n_ood(results)
    if n_ood:
        out += [f"| outside what the model knows (W004) | {n_ood} |"]
    labelled = [li for r in results if (li := _label_info(r)) is not None]
    if labelled:
        agree = Counter(a for _, a in labelled)
        out += [f"| labelled: agree / missed / false alarm | {agree['agree']} / {agree['missed']} / "
                f"{agree['false alarm']} |"]
    out.append("")
    if not results and not errs:
        out += ["No results.", ""]
    if errs:
        out.append(_md_errors(errs))
    yield "\n".join(out)
    for _, r in pairs:
        yield "\n" + _md_section(r)


# ---------------------------------------------------------------- file


def write_report(results, path, *, fmt: str | None = None, title: str = "evqual report", errors=(),
                 sort: str = "input") -> Path:
    """Write an HTML or markdown report of scored answers.

    Parameters
    ----------
    results : iterable of ScoreResult
    path : str or path-like
    fmt : {"html", "markdown", "md"}, optional
        The format; by default chosen from the suffix of ``path``
        (``.html``/``.htm`` or ``.md``/``.markdown``).
    title : str, default="evqual report"
    errors : iterable of dict, default=()
        Error records of ``evqual score`` (see :func:`render_html`).
    sort : {"input", "risk"}, default "input"

    Returns
    -------
    pathlib.Path
        The written file (UTF-8).

    Raises
    ------
    ValueError
        If ``fmt`` is unknown, or not given and the suffix is neither.
    """
    path = Path(path)
    if fmt is None:
        suffix = path.suffix.lower()
        if suffix in _HTML_SUFFIXES:
            kind = "html"
        elif suffix in _MD_SUFFIXES:
            kind = "markdown"
        else:
            raise ValueError(
                f"cannot tell the report format from the suffix {suffix or '(none)'!r} of {str(path)!r}: "
                f"use .html/.htm or .md/.markdown, or pass fmt='html' or fmt='markdown'"
            )
    else:
        kind = {"html": "html", "htm": "html", "markdown": "markdown", "md": "markdown"}.get(str(fmt).lower())
        if kind is None:
            raise ValueError(f"unknown report format {fmt!r}: use 'html' or 'markdown'")
    pieces = (iter_html if kind == "html" else iter_markdown)(results, title=title, errors=errors, sort=sort)
    with open(path, "w", encoding="utf-8") as fh:
        for piece in pieces:
            fh.write(piece)
    return path
