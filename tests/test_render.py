"""Tests of the HTML / markdown audit reports (evqual.explain._render)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from evqual._markdown import md_inline
from evqual.explain import render_html, render_markdown, write_report
from evqual.scoring import Citation, ModelInfo, Reason, ScoreResult, SentenceResult, SpanResult

MODEL = ModelInfo(name="evqual-gbm", method="gbm", version="0.3.0", sha256="0123456789abcdef" * 4)

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


# ---------------------------------------------------------------- fixtures


def _sentences(output: str, specs):
    """SentenceResult objects from (text, risk, flagged, evidence, reasons, explanation) specs."""
    out, pos = [], 0
    for i, (text, risk, flagged, evidence, reasons, explanation) in enumerate(specs):
        start = output.index(text, pos)
        pos = start + len(text)
        out.append(SentenceResult(i, start, pos, text, risk, flagged, evidence, tuple(reasons), explanation))
    return tuple(out)


def _span(output: str, text: str, risk: float, sentence: int) -> SpanResult:
    start = output.index(text)
    return SpanResult(start, start + len(text), text, risk, sentence)


def _qa_result() -> ScoreResult:
    output = (
        "The WHO estimates that 69 million children received the measles vaccine in 2021. "
        "The campaign was led by Dr. Amina Yusuf in Kano. Side effects were rare."
    )
    ev0 = Citation(
        "passage_2", 1, 412, 530,
        "In 2021, 67 million children received a first dose of measles vaccine, according to WHO estimates.", 0.71,
    )
    ev1 = Citation(
        "passage_3", 2, 531, 640, "The national campaign was coordinated by the Ministry of Health in Abuja.", 0.38,
    )
    sentences = _sentences(output, [
        ("The WHO estimates that 69 million children received the measles vaccine in 2021.", 0.91, True, ev0,
         [Reason("NUMBER_CONFLICT", "69 million is not in the evidence (closest: 67 million).",
                 {"number": "69 million", "closest": "67 million"})],
         "The number 69 million conflicts with 67 million in passage_2."),
        ("The campaign was led by Dr. Amina Yusuf in Kano.", 0.77, True, ev1,
         [Reason("ENTITY_UNSUPPORTED", "Amina Yusuf is not mentioned in the evidence.", {"entity": "Amina Yusuf"}),
          Reason("ENTITY_UNSUPPORTED", "Kano is not mentioned in the evidence.", {"entity": "Kano"})],
         "Named people and places missing from the context."),
        ("Side effects were rare.", 0.12, False, None, [], ""),
    ])
    spans = (
        _span(output, "69 million", 0.83, 0),
        # two overlapping spans, both across the boundary between sentences 0 and 1
        _span(output, "in 2021. The campaign", 0.55, 0),
        _span(output, "2021. The campaign was led by Dr. Amina Yusuf", 0.74, 1),
    )
    return ScoreResult(
        id="qa-0042", risk=0.87, flagged=True, decision="regenerate", threshold=0.35, output=output,
        query="How many children received the measles vaccine in 2021?", task_type="QA",
        topics=("healthcare",), sensitive=True, sentences=sentences, spans=spans, model=MODEL,
    )


def _show_result() -> ScoreResult:
    output = "Revenue grew 12% in 2023, as stated in the annual report."
    sentences = _sentences(output, [(output, 0.04, False, None, [], "")])
    return ScoreResult(
        id="sum-0007", risk=0.06, flagged=False, decision="show", threshold=0.5, output=output,
        query="Summarise the annual report.", task_type="Summary", topics=("finance",),
        sentences=sentences, model=MODEL,
    )


LONG_EVIDENCE = ("The court held that the contract was void. " * 12).strip()


def _nasty_result() -> ScoreResult:
    output = 'Click <script>alert("x")</script> now.\nRates are 5% | 7% & "rising".'
    bad = 'Rates are 5% | 7% & "rising".'
    ev = Citation("doc|9", 0, 0, len(LONG_EVIDENCE), LONG_EVIDENCE, 0.1)
    sentences = _sentences(output, [
        ('Click <script>alert("x")</script> now.', 0.2, False, None, [], ""),
        (bad, 0.95, True, ev, [Reason("NUMBER_UNSUPPORTED", "5% | 7% <b>unsupported</b>\nnot found")],
         "Numbers <i>missing</i>."),
    ])
    spans = (_span(output, "5% | 7%", 0.9, 1),)
    return ScoreResult(
        id="x<1>", risk=0.93, flagged=True, decision="escalate", threshold=0.35, output=output,
        query="<b>rates?</b>", verify=True, topics=("healthcare", "legal"), sensitive=True,
        sentences=sentences, spans=spans, model=MODEL,
    )


def _warn_result() -> ScoreResult:
    output = "The drug was approved in 2019."
    sentences = _sentences(output, [(output, 0.4, False, None, [], "")])
    return ScoreResult(
        id="d2t-3", risk=0.44, flagged=True, decision="warn", threshold=0.4, output=output,
        task_type="Data2txt", topics=("healthcare",), sentences=sentences, model=MODEL,
    )


def _abstain_result() -> ScoreResult:
    return ScoreResult(id="empty-1", risk=0.99, flagged=True, decision="abstain", threshold=0.5, output="",
                       model=MODEL)


@pytest.fixture()
def results():
    return [_qa_result(), _show_result(), _nasty_result(), _warn_result(), _abstain_result()]


# ---------------------------------------------------------------- HTML parsing helpers


class _Checker(HTMLParser):
    """Balanced-tag checker that also collects cards, marks, sentences and evidence."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.cards: list[dict] = []
        self.text: list[str] = []
        self._capture: list[tuple[str, dict, list[str]]] = []  # open elements whose text we collect
        self.captured: list[tuple[str, dict, str, int]] = []  # (tag, attrs, text, card index)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "article" and "card" in attrs.get("class", "").split():
            self.cards.append(attrs)
        if tag not in VOID:
            self.stack.append(tag)
            self._capture.append((tag, attrs, []))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        t, attrs, buf = self._capture.pop()
        text = "".join(buf)
        self.captured.append((t, attrs, text, len(self.cards) - 1))
        if self._capture:
            self._capture[-1][2].append(text)

    def handle_data(self, data):
        self.text.append(data)
        if self._capture:
            self._capture[-1][2].append(data)


def _parse(page: str) -> _Checker:
    p = _Checker()
    p.feed(page)
    p.close()
    return p


def _pieces(p: _Checker, card: int, tag: str, cls: str, attr: str, ident: int) -> str:
    """Concatenated text of the elements of a card carrying ``ident`` in ``attr``."""
    return "".join(
        text for t, attrs, text, c in p.captured
        if c == card and t == tag and cls in attrs.get("class", "").split()
        and str(ident) in attrs.get(attr, "").split()
    )


# ---------------------------------------------------------------- HTML tests


def test_html_is_balanced(results):
    p = _parse(render_html(results))
    assert p.errors == []
    assert p.stack == []


def test_html_one_card_per_result_with_data_attributes(results):
    p = _parse(render_html(results))
    assert len(p.cards) == len(results)
    for card, r in zip(p.cards, results):
        assert card["data-decision"] == r.decision
        assert card["data-topics"].split() == list(r.topics)


def test_html_header_counts_and_model(results):
    page = render_html(results, title="Audit <Q3>")
    assert "<title>Audit &lt;Q3&gt;</title>" in page
    for d in ("show", "warn", "regenerate", "abstain", "escalate"):
        assert f">{d}: 1</span>" in page
    assert ">total: 5</span>" in page
    assert "evqual-gbm" in page and "version 0.3.0" in page
    assert "sha256 0123456789ab" in page and "0123456789abc" not in page


def test_html_escapes_text(results):
    page = render_html(results)
    p = _parse(page)
    assert sum(1 for t, _ in p.tags if t == "script") == 1  # only the report's own filter script
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<b>" not in page and "<i>missing" not in page
    assert "&lt;b&gt;unsupported&lt;/b&gt;" in page
    assert 'id="r-x&lt;1&gt;"' in page
    # the escaped answer text still reads back exactly
    assert 'Click <script>alert("x")</script> now.' in "".join(p.text)


def test_html_spans_and_flagged_sentences_follow_offsets(results):
    p = _parse(render_html(results))
    checked = 0
    for card, r in enumerate(results):
        for i, s in enumerate(r.spans):
            assert _pieces(p, card, "mark", "span", "data-spans", i) == r.output[s.start:s.end]
            checked += 1
        for s in r.sentences:
            got = _pieces(p, card, "span", "flagged-sentence", "data-sentence", s.index)
            assert got == (r.output[s.start:s.end] if s.flagged else "")
        answer = [text for t, a, text, c in p.captured if c == card and a.get("class") == "answer"]
        assert answer == [r.output]
    assert checked == 4


def test_html_overlapping_spans_are_split_and_nested():
    r = _qa_result()
    page = render_html([r])
    # the overlap of the two boundary-crossing spans is split at the sentence end
    assert '<mark class="span" title="risk 0.74" data-spans="1 2">2021.</mark></span>' in page
    assert re.search(r'<span class="flagged-sentence" data-sentence="1"[^>]*><mark class="span" title="risk 0.74" '
                     r'data-spans="1 2">The campaign</mark>', page)
    assert '<mark class="span" title="risk 0.83" data-spans="0">69 million</mark>' in page


def test_html_side_by_side_evidence_and_reasons(results):
    page = render_html(results)
    p = _parse(page)
    rows = [(a, c) for t, a, _, c in p.captured if a.get("class") == "row"]
    assert len(rows) == sum(1 for r in results for s in r.sentences if s.flagged) == 3
    quotes = [text for t, _, text, _ in p.captured if t == "blockquote"]
    for r in results:
        for s in r.sentences:
            if s.flagged:
                assert s.evidence.text in quotes
                assert html.escape(s.evidence.chunk_id) in page
                for reason in s.reasons:
                    assert f'<code class="code">{reason.code}</code>' in page
    assert "NUMBER_CONFLICT" in page and "ENTITY_UNSUPPORTED" in page
    assert "67 million children" in page and "69 million" in page
    assert "The number 69 million conflicts with 67 million in passage_2." in page


def test_html_no_flagged_sentence_and_verify_badge(results):
    p = _parse(render_html(results))
    by_card = {}
    for t, a, text, c in p.captured:
        by_card.setdefault(c, []).append((t, a, text))
    show = by_card[1]
    assert any(text == "No flagged sentence." for _, _, text in show)
    assert not any(a.get("class") == "badge verify" for _, a, _ in show)
    assert any(a.get("class") == "badge verify" and text == "verify" for _, a, text in by_card[2])


def test_html_filters_list_decisions_and_topics(results):
    p = _parse(render_html(results))
    opts = {}
    current = None
    for t, a, text, _ in p.captured:
        if t == "option":
            opts.setdefault("pending", []).append(a["value"])
        if t == "select":
            opts[a["id"]] = opts.pop("pending", [])
            current = a["id"]
    assert current == "f-sort"
    assert opts["f-sort"] == ["input", "risk-desc", "risk-asc"]
    assert opts["f-decision"] == ["*", "show", "warn", "regenerate", "abstain", "escalate"]
    assert opts["f-topic"] == ["*", "finance", "healthcare", "legal"]
    page = render_html(results)
    assert "data-decision" in page and "data-topics" in page and "addEventListener" in page


def test_html_zero_results():
    page = render_html([])
    p = _parse(page)
    assert p.errors == [] and p.stack == []
    assert p.cards == []
    assert "No results." in page and ">total: 0</span>" in page


def test_html_accepts_single_result_and_dicts():
    r = _qa_result()
    assert render_html(r) == render_html([r]) == render_html([r.to_dict()])


def test_html_is_self_contained(results):
    page = render_html(results)
    assert "http://" not in page and "https://" not in page
    assert "url(" not in page and "@import" not in page
    p = _parse(page)
    for tag, attrs in p.tags:
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
        assert tag not in ("link", "iframe", "img", "object", "embed")


# ---------------------------------------------------------------- markdown


def test_markdown_content(results):
    md = render_markdown(results, title="Weekly audit")
    assert md.startswith("# Weekly audit\n")
    assert "| decision | count |" in md
    for d in ("show", "warn", "regenerate", "abstain", "escalate"):
        assert f"| {d} | 1 |" in md
    assert "| total | 5 |" in md
    assert "sha256 0123456789ab," not in md and "sha256 0123456789ab" in md
    for r in results:
        assert f"## {html.escape(r.id, quote=False)}" in md
    assert "- **Risk:** 87.0%" in md and "- **Decision:** regenerate" in md
    assert "- **Threshold:** 0.35" in md and "- **Topics:** healthcare (sensitive)" in md
    assert "- **Decision:** escalate (verify)" in md
    # spans marked, overlapping spans merged into one mark
    assert "**[[69 million]]**" in md
    assert "**[[in 2021. The campaign was led by Dr. Amina Yusuf]]**" in md
    assert "No flagged sentence." in md
    # flagged-sentence table
    assert "| sentence | risk | reasons | explanation | evidence chunk | evidence |" in md
    assert "`NUMBER_CONFLICT` 69 million is not in the evidence (closest: 67 million)." in md
    assert "`ENTITY_UNSUPPORTED` Amina Yusuf is not mentioned in the evidence.; `ENTITY_UNSUPPORTED` Kano" in md
    assert "| passage_2 | In 2021, 67 million children received" in md


def test_markdown_escaping(results):
    md = render_markdown(results)
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "<b>" not in md and "<i>" not in md
    row = next(line for line in md.splitlines() if "NUMBER_UNSUPPORTED" in line)
    cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    assert len(cells) == 7  # pipes inside cells are escaped
    assert "5% \\| 7% &amp; \"rising\"." in cells[1]
    assert "&lt;b&gt;unsupported&lt;/b&gt;<br>not found" in cells[3]
    assert cells[5].strip() == "doc\\|9"
    evidence = cells[6].strip()
    assert evidence.endswith("\u2026") and len(evidence) == 300 and LONG_EVIDENCE.startswith(evidence[:-1])
    # the answer stays in one blockquote, span marked on its line
    assert "> Click &lt;script&gt;alert(\"x\")&lt;/script&gt; now.\n> Rates are **[[5% \\| 7%]]** &amp;" in md


def test_markdown_zero_results():
    md = render_markdown([])
    assert "No results." in md and "| total | 0 |" in md


# ---------------------------------------------------------------- write_report


@pytest.mark.parametrize("name,kind", [
    ("r.html", "html"), ("r.HTM", "html"), ("r.md", "markdown"), ("r.markdown", "markdown"),
])
def test_write_report_by_suffix(tmp_path, results, name, kind):
    path = write_report(results, tmp_path / name)
    text = path.read_text(encoding="utf-8")
    expected = render_html(results) if kind == "html" else render_markdown(results)
    assert text == expected


def test_write_report_fmt_overrides_suffix(tmp_path, results):
    assert write_report(results, tmp_path / "r.txt", fmt="html").read_text(encoding="utf-8").startswith("<!DOCTYPE")
    assert write_report(results, tmp_path / "r.html", fmt="md").read_text(encoding="utf-8").startswith("# ")


def test_write_report_errors(tmp_path, results):
    with pytest.raises(ValueError, match="suffix '.txt'.*html.*md"):
        write_report(results, tmp_path / "r.txt")
    with pytest.raises(ValueError, match="suffix '\\(none\\)'"):
        write_report(results, tmp_path / "report")
    with pytest.raises(ValueError, match="unknown report format 'pdf'"):
        write_report(results, tmp_path / "r.html", fmt="pdf")
    assert not (tmp_path / "r.txt").exists()


# ---------------------------------------------------------------- headless browser


def _browser():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not _browser(), reason="no chromium / google-chrome on PATH")
def test_html_screenshot_in_headless_chromium(tmp_path, results):
    mpimg = pytest.importorskip("matplotlib.image")
    import numpy as np

    page = write_report(results, tmp_path / "report.html")
    out = tmp_path / "shot.png"
    cmd = [
        _browser(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={out}", "--window-size=1200,2000",
        page.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.is_file(), proc.stderr[-2000:]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(str(out))
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    colours = np.unique((img[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 20, f"page looks blank: {len(colours)} distinct colours"


def test_markdown_id_with_newlines_cannot_forge_lines_or_sections():
    forged = "x\n- **Risk:** 1%\n- **Decision:** show\n## fake-section\u2028## another"
    r = ScoreResult(id=forged, risk=0.93, flagged=True, decision="warn", threshold=0.5, output="ok", model=MODEL)
    md = render_markdown([r])
    lines = md.splitlines()
    assert sum(line.startswith("## ") for line in lines) == 1
    assert sum(line.startswith("- **Risk:**") for line in lines) == 1
    assert sum(line.startswith("- **Decision:**") for line in lines) == 1
    assert "- **Risk:** 93.0%" in md


def test_markdown_never_emits_remote_images_links_or_markup_from_answer_text():
    output = ("See ![pixel](https://evil.example/p.png) and [click](https://evil.example)\n"
              "# Heading\n<img src=x> `code` *bold* _it_ a_b")
    r = ScoreResult(id="img", risk=0.9, flagged=True, decision="warn", threshold=0.5, output=output, model=MODEL)
    md = render_markdown([r])
    assert "![" not in md and "](" not in md.replace("\\](", "")
    assert "\\!\\[" not in md and "!\\[pixel\\](https\\://evil\\.example/p\\.png)" in md
    assert "<img" not in md and "&lt;img src=x&gt;" in md
    assert "> \\# Heading" in md
    assert "\\`code\\` \\*bold\\* \\_it\\_ a_b" in md


# ---------------------------------------------------------------- issue 10: the report shows the one flag rule

CONTEXT = ("Walmart employs more than 50,000 people in Arkansas. The bill passed on Tuesday.\n"
           "business stars: 4.0\nattributes / WiFi: free\n"
           'Injected: <script>alert(1)</script> and </details><b>x</b> & "q"')


def _ctx_citation(text: str, chunk_id: str, index: int) -> Citation:
    start = CONTEXT.index(text)
    return Citation(chunk_id, index, start, start + len(text), text, 0.5)


def _noted_show_result(**kw) -> ScoreResult:
    """A shown answer with a note sentence and a predicted span (what the scorer now writes)."""
    output = "Walmart employs 60,000 people in Arkansas. The bill passed."
    s0 = output.index("Walmart")
    cite = _ctx_citation("Walmart employs more than 50,000 people in Arkansas.", "sentence 0", 0)
    reason = Reason("NUMBER_CONFLICT", "unsupported number '60,000' where the evidence says '50,000'",
                    {"check": "number", "chunk_id": "sentence 0", "chunk_index": 0, "evidence": "50,000",
                     "context_start": CONTEXT.index("50,000"), "context_end": CONTEXT.index("50,000") + 6})
    sentences = (
        SentenceResult(0, s0, s0 + 42, output[s0:s0 + 42], 0.31, False, cite, (reason,), "Note, not flagged.",
                       note=True),
        SentenceResult(1, 43, len(output), output[43:], 0.02, False,
                       _ctx_citation("The bill passed on Tuesday.", "sentence 1", 1),
                       (Reason("NOVEL_WORDS", "words absent from the context: 'passed'"),), "Not flagged."),
    )
    spans = (_span(output, "60,000", 0.4, 0),)
    base = dict(id="show-note", risk=0.12, flagged=False, decision="show", threshold=0.53, output=output,
                query="How many people does Walmart employ?", sentences=sentences, spans=spans, model=MODEL,
                rule="below_threshold", sentence_threshold=0.23, context=CONTEXT, label=1,
                extra={"customer": "acme <b>co</b>", "tags": ["a", "b"]},
                warnings=({"code": "W001", "message": "the text looks non-English <i>", "details": {}},))
    base.update(kw)
    return ScoreResult(**base)


def _flagged_result(**kw) -> ScoreResult:
    r = _noted_show_result()
    s0, s1 = r.sentences
    s0 = SentenceResult(s0.index, s0.start, s0.end, s0.text, s0.risk, True, s0.evidence, s0.reasons, "Flagged.")
    base = dict(id="esc-1", risk=0.2, flagged=True, decision="escalate", verify=True, sentences=(s0, s1),
                rule="reason:NUMBER_CONFLICT", label=0)
    base.update(kw)
    return r.__class__(**{**r.__dict__, **base})


def _card_tags(page: str, card: int):
    p = _parse(page)
    return p, [(t, a, text) for t, a, text, c in p.captured if c == card]


def test_html_shown_answer_draws_notes_never_red():
    show, flagged = _noted_show_result(), _flagged_result()
    page = render_html([show, flagged])
    p = _parse(page)
    assert p.errors == [] and p.stack == []
    show_tags = [(t, a, text) for t, a, text, c in p.captured if c == 0]
    flag_tags = [(t, a, text) for t, a, text, c in p.captured if c == 1]
    classes = lambda tags: [cls for _, a, _ in tags for cls in a.get("class", "").split()]  # noqa: E731
    # the shown card: no red mark at all; its note sentence and its span are drawn as notes
    assert "flagged-sentence" not in classes(show_tags)
    assert not any(t == "mark" and a.get("class") == "span" for t, a, _ in show_tags)
    note = [(a, text) for t, a, text in show_tags if "note-sentence" in a.get("class", "").split()]
    assert note and "".join(text for _, text in note) == show.sentences[0].text
    assert all(a["title"].startswith("note") for a, _ in note)
    span = [(a, text) for t, a, text in show_tags if t == "mark" and a.get("class") == "span note"]
    assert [text for _, text in span] == ["60,000"] and span[0][0]["title"].startswith("note")
    assert p.cards[0]["class"].split() == ["card", "c-show"]
    # the flagged card: red underline on its flagged sentence, a red span, no note
    assert "note-sentence" not in classes(flag_tags)
    assert _pieces(p, 1, "span", "flagged-sentence", "data-sentence", 0) == flagged.sentences[0].text
    assert any(t == "mark" and a.get("class") == "span" for t, a, _ in flag_tags)
    assert p.cards[1]["class"].split() == ["card", "c-escalate"]


def test_html_every_sentence_shows_its_reasons_collapsed_unless_flagged():
    show, flagged = _noted_show_result(), _flagged_result()
    p = _parse(render_html([show, flagged]))
    details = [(a, c) for t, a, _, c in p.captured if t == "details" and "sent" in a.get("class", "").split()]
    # both sentences of the shown answer are collapsed (one a note), only the unflagged one of the other
    assert [(a["class"], c) for a, c in details] == [("sent note", 0), ("sent plain", 0), ("sent plain", 1)]
    rows = [(a["class"], c) for t, a, _, c in p.captured if t == "div" and "row" in a.get("class", "").split()]
    assert rows == [("row other note", 0), ("row other plain", 0), ("row", 1), ("row other plain", 1)]
    codes = [(text, c) for t, a, text, c in p.captured if t == "code" and a.get("class") == "code"]
    assert codes == [("NUMBER_CONFLICT", 0), ("NOVEL_WORDS", 0), ("NUMBER_CONFLICT", 1), ("NOVEL_WORDS", 1)]
    tags = [(text, c) for t, a, text, c in p.captured if t == "span" and a.get("class", "").startswith("tag ")]
    assert ("note", 0) in tags and ("flagged", 1) in tags and ("flagged", 0) not in tags


def test_markdown_lists_every_sentence_with_its_status_and_notes():
    md = render_markdown([_noted_show_result(), _flagged_result()])
    rows = [line for line in md.splitlines() if line.startswith("| 0 ") or line.startswith("| 1 ")]
    assert [r.split(" | ")[0] for r in rows] == ["| 0 note", "| 1 not flagged", "| 0 flagged", "| 1 not flagged"]
    assert "No flagged sentence. Notes: 1." in md
    assert "[[note: 60,000]]" in md and "**[[60,000]]**" in md


@pytest.mark.parametrize("rule,decision,risk,expected", [
    ("below_threshold", "show", 0.12, "shown: risk 12.0% is below the answer threshold 0.53"),
    ("escalate_band", "escalate", 0.4, "escalated: risk 40.0% is in the uncertain band (escalate_band, by default "
                                       "[0.35, 0.65)); sent to verification"),
    ("abstain_at", "abstain", 0.9, "withheld (abstain): risk 90.0% reached abstain_at"),
    ("regenerate_at", "regenerate", 0.8, "regenerate: risk 80.0% reached regenerate_at"),
    ("sensitive_topic", "escalate", 0.7, "escalated: risk 70.0% is at or over the answer threshold 0.53 on a "
                                         "sensitive topic"),
    ("threshold", "warn", 0.7, "warned: risk 70.0% is at or over the answer threshold 0.53"),
    ("reason:NUMBER_CONFLICT", "escalate", 0.2, "escalated: a NUMBER_CONFLICT found by a claim-aligned check"),
    ("", "warn", 0.7, "warned (rule not recorded)"),
])
def test_rule_and_thresholds_are_said_in_words(rule, decision, risk, expected):
    r = _noted_show_result(rule=rule, decision=decision, risk=risk, flagged=decision != "show")
    page, md = render_html([r]), render_markdown([r])
    rule_p = [text for t, a, text, _ in _parse(page).captured if a.get("class") == "rule"]
    assert len(rule_p) == 1 and rule_p[0].startswith(expected)
    assert f"- **Rule:** {md_inline(expected)}" in md
    assert "<strong>answer threshold 0.53</strong>: the risk at or over which the policy acts" in page
    assert "<strong>sentence threshold 0.23</strong>: the model's validation-tuned sentence threshold" in page
    assert "- **Threshold:** 0.53 (answer threshold: the risk at or over which the policy acts" in md
    assert "- **Sentence threshold:** 0.23 (the model's validation-tuned sentence threshold" in md


def test_html_sort_control_and_initial_order():
    low, high, mid = (_noted_show_result(id=i, risk=r) for i, r in (("low", 0.1), ("high", 0.9), ("mid", 0.5)))
    nan = _noted_show_result(id="nan", risk=float("nan"))
    page = render_html([low, nan, high, mid])
    assert [c["id"] for c in _parse(page).cards] == ["r-low", "r-nan", "r-high", "r-mid"]
    assert 'id="f-sort"' in page and '<option value="input" selected>' in page
    page = render_html([low, nan, high, mid], sort="risk")
    cards = _parse(page).cards
    assert [c["id"] for c in cards] == ["r-high", "r-mid", "r-low", "r-nan"]
    assert [c["data-order"] for c in cards] == ["2", "3", "0", "1"]  # input order kept for the control
    assert [c["data-risk"] for c in cards] == ["0.9", "0.5", "0.1", ""]
    assert '<option value="risk-desc" selected>' in page
    with pytest.raises(ValueError, match="unknown sort 'size'"):
        render_html([low], sort="size")


def test_markdown_sort_by_risk(tmp_path, capsys):
    from evqual.cli import main

    rs = [_noted_show_result(id=i, risk=r) for i, r in (("low", 0.1), ("high", 0.9), ("mid", 0.5))]
    src = tmp_path / "out.jsonl"
    src.write_text("".join(r.to_json() + "\n" for r in rs), encoding="utf-8")
    md = tmp_path / "r.md"
    assert main(["explain", str(src), "--markdown", str(md), "--sort", "risk"]) == 0
    heads = [line for line in md.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    assert heads == ["## high", "## mid", "## low"]
    assert main(["explain", str(src), "--markdown", str(md)]) == 0
    heads = [line for line in md.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    assert heads == ["## low", "## high", "## mid"]


def test_context_block_is_collapsed_escaped_and_marked():
    page = render_html([_noted_show_result()])
    p = _parse(page)
    assert p.errors == [] and p.stack == []
    assert sum(1 for t, _ in p.tags if t == "script") == 1
    assert not any(t == "b" for t, _ in p.tags)
    ctx = [text for t, a, text, _ in p.captured if t == "pre" and a.get("class") == "ctx"]
    assert ctx == [CONTEXT]  # the whole context, read back exactly
    assert "&lt;/details&gt;&lt;b&gt;x&lt;/b&gt;" in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    items = [(text, a["title"]) for t, a, text, _ in p.captured if t == "mark" and a.get("class") == "ctx-item"
             and "title" in a]
    assert items == [("50,000", "evidence item: NUMBER_CONFLICT")]
    cited = [text for t, a, text, _ in p.captured if t == "span" and a.get("class") == "ctx-cite"
             and a.get("title", "").startswith("cited chunk")]
    assert "".join(cited) == "Walmart employs more than 50,000 people in Arkansas.The bill passed on Tuesday."
    md = render_markdown([_noted_show_result()])
    assert md.count("<details>") == md.count("</details>") == 1 and "<script>" not in md and "<b>" not in md
    assert "&lt;/details&gt;&lt;b&gt;x&lt;/b&gt;" in md
    block = md[md.index("<details>"):md.index("</details>")]
    assert all(line.startswith("> ") for line in block.splitlines()[2:-1] if line)


def test_context_not_stored():
    r = _noted_show_result(context="")
    assert "context not stored (scored with --no-context)" in render_html([r])
    assert "context not stored (scored with --no-context)" in render_markdown([r])


@pytest.mark.parametrize("label,decision,words,agree", [
    (1, "show", "hallucinated", "missed"), (1, "warn", "hallucinated", "agree"),
    (0, "escalate", "faithful", "false alarm"), (0, "show", "faithful", "agree"),
])
def test_label_is_shown_against_the_decision(label, decision, words, agree):
    r = _noted_show_result(label=label, decision=decision, flagged=decision != "show")
    page = render_html([r])
    lab = [text for t, a, text, _ in _parse(page).captured if "lab" in a.get("class", "").split()]
    assert lab == [f"gold/user label: {words} \u00b7 {agree}"]
    assert f"- **Gold/user label:** {words} ({agree})" in render_markdown([r])
    assert "gold/user label" not in render_html([_noted_show_result(label=None)]).replace(
        "gold/user label against", "")


def test_warnings_and_extra_fields_are_shown_escaped():
    r = _noted_show_result()
    page, md = render_html([r]), render_markdown([r])
    assert "<strong>warning W001</strong> the text looks non-English &lt;i&gt;" in page
    assert "customer <code>acme &lt;b&gt;co&lt;/b&gt;</code>" in page
    assert "tags <code>[&quot;a&quot;, &quot;b&quot;]</code>" in page
    assert "- **Warning W001:** the text looks non-English &lt;i&gt;" in md
    assert '- **Fields:** customer: acme &lt;b&gt;co&lt;/b&gt;; tags: \\["a", "b"\\]' in md


ERRORS = [{"line": 3, "id": "bad<1>", "error": "field 'output': missing <b>", "issues": ["context: empty"]},
          {"line": 9, "id": None, "error": "invalid JSON"}]


def test_error_records_get_cards_and_counts():
    page = render_html([_noted_show_result()], errors=ERRORS)
    p = _parse(page)
    assert p.errors == [] and not any(t == "b" for t, _ in p.tags)
    assert [c["data-decision"] for c in p.cards] == ["show", "error", "error"]
    assert ">not scored: 2</span>" in page and '<option value="error">not scored (2)</option>' in page
    assert "bad&lt;1&gt;" in page and "input line 3" in page and "field &#x27;output&#x27;: missing &lt;b&gt;" in page
    assert "- context: empty" in page and "(no id)" in page
    # dicts holding "error" among the results are error records too
    assert render_html([_noted_show_result(), *ERRORS]) == page
    md = render_markdown([_noted_show_result()], errors=ERRORS)
    assert "| not scored (error) | 2 |" in md and "## Lines not scored (2)" in md
    assert "| 3 | bad&lt;1&gt; | field 'output': missing &lt;b&gt;<br>\\- context: empty |" in md
    assert render_markdown([], errors=ERRORS).count("No results.") == 0


def test_cli_explain_renders_error_records_of_scored_and_raw_files(tmp_path, capsys):
    from evqual.cli import main

    scored = tmp_path / "out.jsonl"
    scored.write_text(_noted_show_result().to_json() + "\n" + json.dumps(ERRORS[0]) + "\n", encoding="utf-8")
    page = tmp_path / "r.html"
    assert main(["explain", str(scored), "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.count('data-decision="error"') == 1 and "bad&lt;1&gt;" in text
    assert "1 answer, 1 line not scored" in capsys.readouterr().err
    raw = tmp_path / "in.jsonl"
    raw.write_text(json.dumps({"id": "ok", "query": "q", "context": "The sky is blue.", "output": "It is blue."})
                   + "\n" + json.dumps({"id": "nope", "query": "q", "context": "c"}) + "\n", encoding="utf-8")
    md = tmp_path / "r.md"
    assert main(["explain", str(raw), "--markdown", str(md)]) == 1
    text = md.read_text(encoding="utf-8")
    assert "## Lines not scored (1)" in text and "| 2 | nope |" in text and "## ok" in text


def test_evidence_box_shows_the_passage_the_reason_names():
    r = _noted_show_result()
    page = render_html([r])
    p = _parse(page)
    marks = [text for t, a, text, c in p.captured if t == "mark" and a.get("class") == "ev"]
    assert marks == ["50,000"]
    quotes = [text for t, a, text, _ in p.captured if t == "blockquote"]
    # the check reason: the sentence around its evidence item; the other sentence: its citation
    assert "Walmart employs more than 50,000 people in Arkansas." in quotes
    assert "The bill passed on Tuesday." in quotes
    assert "evidence item of NUMBER_CONFLICT" in page
    # a field reason without offsets: the record line starting with the field label
    s0 = r.sentences[0]
    field = Reason("FIELD_NULL", "states 'attributes / WiFi', which the record leaves null",
                   {"field": "attributes / WiFi"})
    r2 = _noted_show_result(sentences=(SentenceResult(0, s0.start, s0.end, s0.text, 0.5, False, s0.evidence,
                                                      (field,), note=True), r.sentences[1]))
    p2 = _parse(render_html([r2]))
    assert [text for t, a, text, _ in p2.captured if t == "mark" and a.get("class") == "ev"] == [
        "attributes / WiFi: free"]
    md = render_markdown([r2])
    assert "**attributes / WiFi: free**" in md
    # offsets outside the context fall back to the citation
    bad = Reason("NUMBER_CONFLICT", "x", {"context_start": 10_000, "context_end": 10_006, "chunk_id": "c"})
    r3 = _noted_show_result(sentences=(SentenceResult(0, s0.start, s0.end, s0.text, 0.5, False, s0.evidence,
                                                      (bad,), note=True),))
    quotes = [text for t, a, text, _ in _parse(render_html([r3])).captured if t == "blockquote"]
    assert quotes == [s0.evidence.text]
    # a passage without a sentence or line boundary is cut 200 characters each side, with ellipses
    long = "w" * 500 + "50,000" + "w" * 500
    at = Reason("NUMBER_CONFLICT", "x", {"context_start": 500, "context_end": 506, "chunk_id": "c"})
    r4 = _noted_show_result(context=long, sentences=(SentenceResult(0, s0.start, s0.end, s0.text, 0.5, False,
                                                                    None, (at,), note=True),))
    quotes = [text for t, a, text, _ in _parse(render_html([r4])).captured if t == "blockquote"]
    assert quotes == ["\u2026" + "w" * 200 + "50,000" + "w" * 200 + "\u2026"]


def test_html_content_security_policy_allows_only_the_report_script():
    import base64
    import hashlib

    page = render_html([_noted_show_result()])
    script = page[page.index("<script>") + len("<script>"):page.index("</script>")]
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]


# ---------------------------------------------------------------- property: never raises, always escapes

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_TEXT = st.lists(st.sampled_from(list("ab <>&\"'/|*_`[]()!#-\n\u2028") + ["</details>", "<script>", "</pre>",
                                                                         "-->", "x"]),
                 max_size=30).map("".join)
_ANY_TEXT = st.one_of(_TEXT, st.text(max_size=40))
_OFF = st.integers(min_value=-5, max_value=80)
_OUR_HTML_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "div", "span", "main", "p",
                  "label", "select", "option", "article", "mark", "strong", "details", "summary", "h3", "ul", "li",
                  "code", "blockquote", "pre", "br", "script"}


@st.composite
def _arbitrary_result(draw):
    output, context = draw(_ANY_TEXT), draw(_ANY_TEXT)
    reasons = tuple(
        Reason(draw(_ANY_TEXT), draw(_ANY_TEXT), draw(st.fixed_dictionaries({}, optional={
            "context_start": _OFF, "context_end": _OFF, "chunk_id": _ANY_TEXT, "field": _ANY_TEXT})))
        for _ in range(draw(st.integers(0, 2))))
    sentences = tuple(
        SentenceResult(i, draw(_OFF), draw(_OFF), draw(_ANY_TEXT), draw(st.floats(allow_nan=True)),
                       draw(st.booleans()),
                       draw(st.none() | st.builds(Citation, _ANY_TEXT, _OFF, _OFF, _OFF, _ANY_TEXT)),
                       reasons, draw(_ANY_TEXT), note=draw(st.booleans()))
        for i in range(draw(st.integers(0, 3))))
    spans = tuple(SpanResult(draw(_OFF), draw(_OFF), "", 0.5) for _ in range(draw(st.integers(0, 2))))
    decision = draw(st.sampled_from(["show", "warn", "escalate", "abstain", "<odd>"]))
    return ScoreResult(
        id=draw(_ANY_TEXT), risk=draw(st.floats(allow_nan=True, allow_infinity=True)), flagged=decision != "show",
        decision=decision, threshold=0.5, output=output, query=draw(_ANY_TEXT), topics=(draw(_ANY_TEXT),),
        sentences=sentences, spans=spans, model=MODEL, rule=draw(_ANY_TEXT), context=context,
        label=draw(st.sampled_from([None, 0, 1, 7])), extra={draw(_ANY_TEXT): draw(_ANY_TEXT)},
        warnings=({"code": draw(_ANY_TEXT), "message": draw(_ANY_TEXT), "details": {}},),
        verification=draw(st.none() | _arbitrary_verification()))


_JSONISH = st.recursive(st.none() | st.booleans() | st.floats() | _ANY_TEXT,
                        lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_ANY_TEXT, inner, max_size=2),
                        max_leaves=6)


@st.composite
def _arbitrary_verification(draw):
    """A verification as evqual writes it, its values drawn from anything (a hand-edited file)."""
    claim = st.fixed_dictionaries({}, optional={
        "text": _ANY_TEXT | _JSONISH, "verdict": st.sampled_from(["SUPPORTED", "REFUTED", "NO_EVIDENCE"]) | _JSONISH,
        "p_supported": st.floats() | _JSONISH, "reason": _ANY_TEXT | _JSONISH,
        "evidence": st.lists(st.fixed_dictionaries({}, optional={"chunk": _JSONISH, "start": _OFF, "end": _OFF,
                                                                 "text": _ANY_TEXT}) | _JSONISH, max_size=2)})
    factoid = st.fixed_dictionaries({}, optional={
        "text": _ANY_TEXT, "score": st.floats() | _JSONISH, "flagged": st.booleans() | _JSONISH,
        "missing": st.integers(0, 9) | _JSONISH,
        "variants": st.lists(st.fixed_dictionaries({}, optional={"kind": _ANY_TEXT, "text": _ANY_TEXT,
                                                                 "answer": _ANY_TEXT}) | _JSONISH, max_size=2)})
    return draw(st.fixed_dictionaries({}, optional={
        "method": st.sampled_from(["claims", "metarag"]) | _ANY_TEXT, "backend": st.sampled_from(["rules", "llm"]),
        "score": st.floats() | _JSONISH, "flagged": st.booleans() | st.none(), "tier": _ANY_TEXT | _JSONISH,
        "tau": st.floats() | _JSONISH, "error": st.none() | _ANY_TEXT,
        "claims": st.lists(claim | _JSONISH, max_size=3), "factoids": st.lists(factoid | _JSONISH, max_size=2)}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results=st.lists(_arbitrary_result(), max_size=3), sort=st.sampled_from(["input", "risk"]),
       error=_ANY_TEXT)
def test_rendering_never_raises_and_always_escapes(results, sort, error):
    errors = [{"line": 1, "id": error, "error": error, "issues": [error]}]
    page = render_html(results, errors=errors, sort=sort)
    p = _parse(page)
    assert p.errors == [] and p.stack == []
    assert {t for t, _ in p.tags} <= _OUR_HTML_TAGS
    assert sum(1 for t, _ in p.tags if t == "script") == 1
    assert len(p.cards) == len(results) + 1
    # every card's answer and context read back exactly: nothing of the text became markup (bidi controls are
    # shown as [U+XXXX] and right-to-left text isolated, issue 39: undone here)
    answers = [_unbidi(text) for t, a, text, _ in p.captured if a.get("class") == "answer"]
    assert answers == [r.output for r in _sorted_like(results, sort)]
    contexts = [_unbidi(text) for t, a, text, _ in p.captured if t == "pre" and a.get("class") == "ctx"]
    assert contexts == [r.context for r in _sorted_like(results, sort) if r.context]
    md = render_markdown(results, errors=errors, sort=sort)
    tags = set(re.findall(r"</?([A-Za-z][^\s>/]*)", md))
    assert tags <= {"details", "summary", "br"}
    assert md.count("<details>") == md.count("</details>") == sum(1 for r in results if r.context)


def _unbidi(text: str) -> str:
    """The text :func:`evqual._markdown.bidi_safe` was given, from what it made (every piece of it)."""
    text = text.replace("\u2068", "").replace("\u2069", "")
    return re.sub(r"\[U\+(061C|200E|200F|202[A-E]|206[6-9])\]", lambda m: chr(int(m.group(1), 16)), text)


def _sorted_like(results, sort):
    from evqual.explain._render import _sorted

    return [r for _, r in _sorted(results, sort)]


def test_iter_pieces_join_to_the_report_and_bad_sort_writes_nothing(tmp_path, results):
    from evqual.explain import iter_html, iter_markdown

    rs = [*results, _noted_show_result()]
    for sort in ("input", "risk"):
        assert "".join(iter_html(rs, errors=ERRORS, sort=sort)) == render_html(rs, errors=ERRORS, sort=sort)
        assert "".join(iter_markdown(rs, errors=ERRORS, sort=sort)) == render_markdown(rs, errors=ERRORS, sort=sort)
    path = write_report(rs, tmp_path / "r.md", errors=ERRORS, sort="risk")
    assert path.read_text(encoding="utf-8") == render_markdown(rs, errors=ERRORS, sort="risk")
    with pytest.raises(ValueError, match="unknown sort"):
        iter_html(rs, sort="size")
    with pytest.raises(ValueError, match="unknown sort"):
        write_report(rs, tmp_path / "bad.html", sort="size")
    assert not (tmp_path / "bad.html").exists()


# ---------------------------------------------------------------- the verification stage in the report

def _verified(**v):
    base = {"method": "claims", "backend": "rules", "score": 1 / 3, "flagged": True, "tier": "reject", "tau": 0.75,
            "claims": [
                {"start": 0, "end": 25, "text": "Joseph Strauss designed it.", "verdict": "SUPPORTED",
                 "p_supported": 0.93, "reason": None, "evidence": [{"chunk": 0, "start": 0, "end": 40,
                                                                    "text": "Joseph Strauss designed the bridge"}]},
                {"start": 26, "end": 48, "text": "It opened in 1932.", "verdict": "REFUTED", "p_supported": 0.71,
                 "reason": "number", "evidence": [{"chunk": 0, "start": 41, "end": 70, "text": "which opened in 1937"}]},
                {"start": 49, "end": 70, "text": "It is painted blue.", "verdict": "NO_EVIDENCE", "p_supported": 0.2,
                 "reason": None, "evidence": []}],
            "latency_ms": 3.0, "error": None}
    base.update(v)
    return ScoreResult(id="v1", risk=0.5, flagged=True, decision="escalate", threshold=0.4, rule="escalate_band",
                       verify=True, output="Joseph Strauss designed it. It opened in 1932. It is painted blue.",
                       verification=base)


def test_report_shows_each_stage_verdict_with_its_evidence_and_backend():
    r = _verified()
    page, md = render_html([r]), render_markdown([r])
    for text in (page, md):
        assert "LLM verification" not in text
        assert "claims verification, rules backend (no LLM): flagged, tier reject, hallucination rate 0.33" in text
        assert "final verdict: flagged (the verifier decides)" in text
        assert "P(supported) 0.71" in text and "which opened in 1937" in text
    # refuted first, then no evidence; the supported claim is folded away in the page
    assert page.index("It opened in 1932.") < page.index("It is painted blue.")
    assert "1 that holds</summary>" in page
    assert "- **REFUTED** It opened in 1932. (P(supported) 0.71 · number); evidence: chunk 0: which opened in 1937" \
        in md
    assert "1 other claim(s) or factoid(s) hold" in md


def test_report_says_when_the_verifier_clears_or_fails():
    cleared = _verified(flagged=False, tier="accept", score=0.0,
                        claims=[{"text": "Joseph Strauss designed it.", "verdict": "SUPPORTED", "p_supported": 0.93}])
    page = render_html([cleared])
    assert "final verdict: not flagged (the verifier decides)" in page and "Every claim or factoid holds." in page
    failed = _verified(error="the LLM endpoint timed out", score=None, flagged=None, tier=None)
    page, md = render_html([failed]), render_markdown([failed])
    for text in (page, md):
        assert "the verification failed: the pre-filter&#x27;s decision stands" in text \
            or "the verification failed: the pre-filter's decision stands" in text
        assert "the LLM endpoint timed out" in text


def test_report_shows_metarag_factoids_with_their_variants():
    r = _verified(method="metarag", score=0.5, tau=0.5, tier="revise", claims=[], factoids=[
        {"start": 0, "end": 20, "text": "It opened in 1932.", "score": 0.5, "flagged": True, "missing": 3,
         "variants": [{"kind": "synonym", "text": "It was opened in 1932.", "answer": "NO", "penalty": 1.0}],
         "evidence": [{"chunk": 0, "start": 0, "end": 30, "text": "which opened in 1937"}]}])
    md = render_markdown([r])
    assert "metarag verification, rules backend (no LLM): flagged, tier revise, H 0.50 (tau 0.5)" in md
    assert "**FLAGGED** It opened in 1932." in md and "synonym: \u201cIt was opened in 1932.\u201d \u2192 NO" in md
    assert "3 variant(s) could not be made" in md
