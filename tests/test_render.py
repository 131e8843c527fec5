"""Tests of the HTML / markdown audit reports (evqual.explain._render)."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

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
    assert "> Click &lt;script&gt;alert(\"x\")&lt;/script&gt; now.\n> Rates are **[[5% | 7%]]** &amp;" in md


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
    assert "\\!\\[" not in md and "!\\[pixel\\](https://evil.example/p.png)" in md
    assert "<img" not in md and "&lt;img src=x&gt;" in md
    assert "> \\# Heading" in md
    assert "\\`code\\` \\*bold\\* \\_it\\_ a_b" in md
