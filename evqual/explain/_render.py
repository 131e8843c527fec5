"""Audit reports of scored answers: one self-contained HTML page, or markdown.

:func:`render_html` builds a single HTML page (inline CSS and a few lines of
vanilla JavaScript, no external resource, no network) with one card per
answer: risk bar, decision badge, the answer with predicted hallucinated
spans highlighted and flagged sentences underlined, then each flagged
sentence side by side with the evidence chunk it cites. Cards can be
filtered by decision and by topic. :func:`render_markdown` renders the same
content as markdown and :func:`write_report` writes either to a file.

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

import html
import math
import re
from collections import Counter
from pathlib import Path

from .._markdown import md_cell as _md_cell, md_code as _md_code, md_inline as _md_inline, md_text as _md_text
from ..results import DECISIONS, ScoreResult

__all__ = ["render_html", "render_markdown", "write_report"]

_EVIDENCE_MAX = 300
_HTML_SUFFIXES = (".html", ".htm")
_MD_SUFFIXES = (".md", ".markdown")


# ---------------------------------------------------------------- helpers


def _esc(text) -> str:
    """HTML-escape any value (quotes included, so it is safe in attributes)."""
    return html.escape("" if text is None else str(text), quote=True)


def _as_results(results) -> list[ScoreResult]:
    """A list of :class:`ScoreResult` from one result, results or their dicts."""
    if isinstance(results, (ScoreResult, dict)):
        results = [results]
    out = []
    for r in results:
        if isinstance(r, dict):
            r = ScoreResult.from_dict(r)
        if not isinstance(r, ScoreResult):
            raise TypeError(f"expected ScoreResult objects, got {type(r).__name__}")
        out.append(r)
    return out


def _finite(x) -> float | None:
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


def _intervals(result: ScoreResult):
    """Valid (start, end) of spans and flagged sentences, clipped to the output."""
    n = len(result.output)

    def clip(a, b):
        a, b = max(0, int(a)), min(n, int(b))
        return (a, b) if a < b else None

    spans = [(i, c, s) for i, s in enumerate(result.spans) if (c := clip(s.start, s.end))]
    sents = [(i, c, s) for i, s in enumerate(result.sentences) if s.flagged and (c := clip(s.start, s.end))]
    return spans, sents


def _segments(result: ScoreResult):
    """Split the output at every span and flagged-sentence boundary.

    Yields ``(start, end, span_ids, sentence_ids)`` for consecutive pieces
    covering the whole output; ids are tuples of the spans / flagged
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
.filters { display:flex; flex-wrap:wrap; gap:16px; align-items:center; padding:10px 0 14px; }
.filters label { font-weight:600; font-size:13px; }
.filters select { margin-left:6px; padding:3px 6px; font-size:14px; }
.filters .shown { color:var(--muted); font-size:13px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 18px; margin:0 0 16px; }
.card[hidden] { display:none; }
.card-head { display:flex; flex-wrap:wrap; align-items:center; gap:10px 16px; }
.card-head .rid { font-weight:700; font-size:16px; font-family:ui-monospace,Menlo,Consolas,monospace; }
.risk { display:flex; align-items:center; gap:8px; font-variant-numeric:tabular-nums; }
.bar { width:140px; height:10px; background:#e6e9ef; border-radius:5px; overflow:hidden; }
.fill { height:100%; background:linear-gradient(90deg,#f0b429,#d64545); }
.badge { display:inline-block; padding:1px 9px; border-radius:10px; font-size:12px; font-weight:700; color:#fff; text-transform:uppercase; letter-spacing:.03em; }
.d-show { background:#2f9e44; } .d-warn { background:#e0a800; color:#1d2330; } .d-regenerate { background:#e8590c; }
.d-abstain { background:#6c757d; } .d-escalate { background:#c92a2a; } .d-other { background:#495057; }
.verify { background:#7048e8; }
.count { background:#33415c; }
.small { color:var(--muted); font-size:13px; }
.topic { display:inline-block; border:1px solid var(--line); border-radius:4px; padding:0 6px; font-size:12px; margin-right:4px; }
.query { margin:8px 0 0; color:var(--muted); }
.answer { white-space:pre-wrap; margin:10px 0; padding:10px 12px; background:#fafbfc; border-left:3px solid var(--line); }
mark.span { background:#ffd8a8; color:inherit; padding:0; }
.flagged-sentence { text-decoration:underline wavy #d64545; text-decoration-skip-ink:none; text-underline-offset:3px; }
.rows h3 { font-size:14px; margin:12px 0 6px; }
.row { display:grid; grid-template-columns:1fr 1fr; gap:14px; border-top:1px solid var(--line); padding:10px 0; }
.claim .sentence { font-weight:600; }
.reasons { list-style:none; padding:0; margin:6px 0; }
.reasons li { margin:3px 0; }
code.code { background:#fff0f0; color:#a61e4d; border:1px solid #ffc9c9; border-radius:3px; padding:0 4px; font-size:11px; margin-right:6px; }
.explanation { margin:4px 0 0; color:var(--muted); font-size:13px; }
.evidence { background:#f1f8f3; border:1px solid #cfe8d6; border-radius:6px; padding:8px 10px; }
.evidence .chunk-id { font-family:ui-monospace,Menlo,Consolas,monospace; font-size:12px; color:#2b8a3e; font-weight:700; }
.evidence blockquote { margin:4px 0 0; white-space:pre-wrap; }
.none { color:var(--muted); font-style:italic; }
@media print { .filters { display:none; } .card { break-inside:avoid; } }
"""

_JS = """
(function () {
  var dSel = document.getElementById("f-decision");
  var tSel = document.getElementById("f-topic");
  var shown = document.getElementById("shown");
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
  apply();
})();
"""


def _html_answer(result: ScoreResult) -> str:
    """The output with spans in ``<mark>`` nested inside flagged-sentence ``<span>``."""
    parts: list[str] = []
    open_sent: tuple = ()
    for a, b, span_ids, sent_ids in _segments(result):
        if sent_ids != open_sent:
            if open_sent:
                parts.append("</span>")
            if sent_ids:
                ids = " ".join(str(result.sentences[i].index) for i in sent_ids)
                risk = max(result.sentences[i].risk for i in sent_ids)
                parts.append(f'<span class="flagged-sentence" data-sentence="{_esc(ids)}" title="sentence risk {_num(risk)}">')
            open_sent = sent_ids
        piece = _esc(result.output[a:b])
        if span_ids:
            risk = max(result.spans[i].risk for i in span_ids)
            ids = " ".join(map(str, span_ids))
            piece = f'<mark class="span" title="risk {_num(risk)}" data-spans="{ids}">{piece}</mark>'
        parts.append(piece)
    if open_sent:
        parts.append("</span>")
    return "".join(parts)


def _html_rows(result: ScoreResult) -> str:
    flagged = [s for s in result.sentences if s.flagged]
    if not flagged:
        return '<p class="none">No flagged sentence.</p>'
    out = [f'<div class="rows"><h3>Flagged sentences ({len(flagged)})</h3>']
    for s in flagged:
        reasons = "".join(
            f'<li><code class="code">{_esc(r.code)}</code>{_esc(r.text)}</li>' for r in s.reasons
        )
        claim = [
            f'<div class="claim"><div class="sentence">{_esc(s.text)}</div>',
            f'<div class="small">sentence {_esc(s.index)} &middot; risk {_pct(s.risk)}</div>',
            f'<ul class="reasons">{reasons}</ul>' if reasons else '<p class="none">No reason code.</p>',
        ]
        if s.explanation:
            claim.append(f'<p class="explanation">{_esc(s.explanation)}</p>')
        claim.append("</div>")
        ev = s.evidence
        if ev is None:
            evidence = '<div class="evidence"><p class="none">No evidence chunk cited.</p></div>'
        else:
            evidence = (
                f'<div class="evidence"><div class="chunk-id">{_esc(ev.chunk_id)}</div>'
                f'<div class="small">chunk {_esc(ev.chunk_index)} &middot; chars {_esc(ev.start)}&ndash;{_esc(ev.end)}'
                f" &middot; support {_num(ev.support)}</div>"
                f"<blockquote>{_esc(ev.text)}</blockquote></div>"
            )
        out.append(f'<div class="row">{"".join(claim)}{evidence}</div>')
    out.append("</div>")
    return "".join(out)


def _html_card(result: ScoreResult) -> str:
    topics = _topic_tokens(result)
    risk = _finite(result.risk)
    width = 0.0 if risk is None else min(100.0, max(0.0, 100 * risk))
    head = [
        f'<span class="rid">{_esc(result.id)}</span>',
        f'<span class="risk" title="calibrated risk">risk {_pct(result.risk)}'
        f'<span class="bar"><span class="fill" style="display:block;width:{width:.1f}%"></span></span></span>',
        f'<span class="badge {_decision_class(result.decision)}">{_esc(result.decision)}</span>',
        f'<span class="small">threshold {_num(result.threshold)}</span>',
    ]
    if result.verify:
        head.append('<span class="badge verify">verify</span>')
    if result.sensitive:
        head.append('<span class="small">sensitive</span>')
    if result.task_type:
        head.append(f'<span class="small">task {_esc(result.task_type)}</span>')
    if result.topics:
        head.append("<span>" + "".join(f'<span class="topic">{_esc(t)}</span>' for t in result.topics) + "</span>")
    body = [f'<div class="card-head">{"".join(head)}</div>']
    if result.query:
        body.append(f'<p class="query"><strong>Query:</strong> {_esc(result.query)}</p>')
    body.append(f'<div class="answer">{_html_answer(result)}</div>')
    body.append(_html_rows(result))
    return (
        f'<article class="card" id="r-{_esc(result.id)}" data-decision="{_esc(result.decision)}" '
        f'data-topics="{_esc(" ".join(topics))}">{"".join(body)}</article>'
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


def render_html(results, *, title: str = "evqual report") -> str:
    """Render scored answers as one self-contained HTML page for auditors.

    Parameters
    ----------
    results : iterable of ScoreResult
        The results to show (a single result, or dicts from
        :meth:`ScoreResult.to_dict`, are accepted too).
    title : str, default "evqual report"

    Returns
    -------
    str
        A complete HTML document with inline CSS and JavaScript and no
        external resource. The header gives the count per decision and the
        model of the first result; a card per answer (``<article
        class="card" data-decision=.. data-topics=..>``) shows its risk,
        decision, threshold, topics, the answer with spans highlighted
        (``<mark class="span">``) and flagged sentences underlined
        (``<span class="flagged-sentence">``), and each flagged sentence
        with its reasons beside the cited evidence chunk. Selects filter
        the cards by decision and topic.

    Examples
    --------
    >>> page = render_html([])
    >>> page.startswith("<!DOCTYPE html>") and "No results." in page
    True
    """
    results = _as_results(results)
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
    model = _model_line(results)

    dec_opts = '<option value="*">all</option>' + "".join(
        f'<option value="{_esc(d)}">{_esc(d)} ({counts.get(d, 0)})</option>' for d in decisions
    )
    topic_opts = '<option value="*">all</option>' + "".join(
        f'<option value="{_esc(t)}">{_esc(t)}</option>' for t in topics
    )
    cards = "\n".join(_html_card(r) for r in results) if results else '<p class="none">No results.</p>'

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{_esc(title)}</h1><div class="meta">{_esc(model)}</div>'
        f'<div class="counts">{count_badges}</div></header>\n'
        "<main>\n"
        '<div class="filters">'
        f'<label for="f-decision">Decision<select id="f-decision">{dec_opts}</select></label>'
        f'<label for="f-topic">Topic<select id="f-topic">{topic_opts}</select></label>'
        f'<span class="shown" id="shown">{len(results)} of {len(results)} shown</span>'
        "</div>\n"
        f"{cards}\n"
        "</main>\n"
        f"<script>{_JS}</script>\n"
        "</body>\n</html>\n"
    )


# ---------------------------------------------------------------- markdown


# a line of text that would start a heading or a list in markdown
_MD_LINE_START = re.compile(r"^(\s*)(#|=|\+|-(?=\s)|\d+[.)](?=\s))")


def _truncate(text: str, n: int = _EVIDENCE_MAX) -> str:
    text = text or ""
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _md_answer(result: ScoreResult) -> str:
    """The output with the union of spans marked ``**[[...]]**``, as a blockquote."""
    spans, _ = _intervals(result)
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
        parts.append("".join(p if (k % 2 or not p) else f"**[[{_md_text(p)}]]**" for k, p in enumerate(pieces)))
        pos = b
    parts.append(_md_text(text[pos:]))
    lines = "".join(parts).splitlines() or [""]
    # a line of the answer never starts a heading or a list inside the quote
    return "\n".join(f"> {_MD_LINE_START.sub(lambda m: m.group(1) + chr(92) + m.group(2), line)}".rstrip()
                     for line in lines)


def _md_section(result: ScoreResult) -> str:
    decision = result.decision + (" (verify)" if result.verify else "")
    topics = ", ".join(str(t) for t in result.topics) or "none"
    out = [
        f"## {_md_inline(result.id)}",
        "",
        f"- **Risk:** {_pct(result.risk)}",
        f"- **Decision:** {_md_inline(decision)}",
        f"- **Threshold:** {_num(result.threshold)}",
        f"- **Topics:** {_md_inline(topics)}" + (" (sensitive)" if result.sensitive else ""),
    ]
    if result.query:
        out.append(f"- **Query:** {_md_inline(result.query)}")
    out += ["", "**Answer** (predicted spans marked **[[...]]**):", "", _md_answer(result), ""]
    flagged = [s for s in result.sentences if s.flagged]
    if not flagged:
        out += ["No flagged sentence.", ""]
        return "\n".join(out)
    out += [
        "| # | sentence | risk | reasons | explanation | evidence chunk | evidence |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in flagged:
        reasons = "; ".join(f"`{_md_code(r.code)}` {_md_text(r.text)}" for r in s.reasons)
        ev = s.evidence
        cells = [
            str(s.index),
            s.text,
            _pct(s.risk),
            reasons,
            s.explanation,
            ev.chunk_id if ev else "",
            _truncate(ev.text) if ev else "",
        ]
        out.append("| " + " | ".join(_md_cell(c, escaped=(k == 3)) for k, c in enumerate(cells)) + " |")
    out.append("")
    return "\n".join(out)


def render_markdown(results, *, title: str = "evqual report") -> str:
    """Render scored answers as markdown.

    Parameters
    ----------
    results : iterable of ScoreResult
    title : str, default "evqual report"

    Returns
    -------
    str
        A ``# title`` heading, the model of the first result, a table of
        counts per decision, then per answer a ``## id`` section with its
        risk, decision, threshold and topics, the answer (as a blockquote)
        with predicted spans marked ``**[[...]]**`` (overlapping spans
        merged) and a table of flagged sentences: sentence, risk, reasons,
        explanation, evidence chunk id and evidence text (cut to 300
        characters). Text is HTML-escaped (``<`` becomes ``&lt;``) and
        table cells have pipes escaped and newlines as ``<br>``.

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
    results = _as_results(results)
    counts = Counter(r.decision for r in results)
    out = [f"# {_md_inline(title)}", ""]
    model = _model_line(results)
    if model:
        out += [_md_inline(model), ""]
    out += ["| decision | count |", "| --- | --- |"]
    out += [f"| {_md_cell(d)} | {counts.get(d, 0)} |" for d in _decision_order(results)]
    out += [f"| total | {len(results)} |", ""]
    if not results:
        out += ["No results.", ""]
    for r in results:
        out.append(_md_section(r))
    return "\n".join(out)


# ---------------------------------------------------------------- file


def write_report(results, path, *, fmt: str | None = None, title: str = "evqual report") -> Path:
    """Write an HTML or markdown report of scored answers.

    Parameters
    ----------
    results : iterable of ScoreResult
    path : str or path-like
    fmt : {"html", "markdown", "md"}, optional
        The format; by default chosen from the suffix of ``path``
        (``.html``/``.htm`` or ``.md``/``.markdown``).
    title : str, default="evqual report"

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
    text = render_html(results, title=title) if kind == "html" else render_markdown(results, title=title)
    path.write_text(text, encoding="utf-8")
    return path
