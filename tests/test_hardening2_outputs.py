"""Hardening, second round (issue 21), sections 2 and 3: output that downstream tools can parse, and never
destroying the user's data.  Grouped by attack, so that the next round can extend each group."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.cli import main
from evqual.scoring import Scorer, read_audit_log

GOOD = {"query": "When did the bridge open?", "context": ["The bridge opened in 1932 after six years of work."],
        "output": "The bridge opened in 1935."}


def strict_loads(line: str):
    """RFC 8259 JSON: NaN and Infinity are not numbers (as in Node's JSON.parse)."""
    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def write_lines(path: Path, lines) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    return path


def score_cli(tmp_path, lines, *extra):
    src = write_lines(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["score", str(src), "--out", str(out), "--no-progress", *extra])
    return code, out


# ---------------------------------------------------------------------------------------------- attack: non-JSON numbers
def test_non_finite_pass_through_values_are_dropped_with_w002_and_output_is_strict_json(tmp_path):
    lines = ['{"id": "a", "query": "q", "context": ["The bridge opened in 1932."], "output": "It opened in 1932.", '
             '"big": 1e999, "nan": NaN, "neg": -1e999, "nested": {"x": [1, NaN]}, "ok": 1.5}']
    code, out = score_cli(tmp_path, lines)
    assert code == 0
    text = out.read_text(encoding="utf-8")
    assert "Infinity" not in text and "NaN" not in text
    rec = strict_loads(text.strip())
    assert rec["extra"] == {"ok": 1.5}
    dropped = {w["details"]["field"] for w in rec["warnings"] if w["code"] == "W002"}
    assert dropped == {"big", "nan", "neg", "nested"}


def test_a_non_finite_risk_is_an_e110_record_not_nan_in_the_output_nor_a_run_stop(tmp_path, monkeypatch):
    original = Scorer.score_examples

    def nan_risk(self, examples, **kw):
        out = original(self, examples, **kw)
        return [dataclasses.replace(r, risk=float("nan")) if e.id == "bad" else r for e, r in zip(examples, out)]

    monkeypatch.setattr(Scorer, "score_examples", nan_risk)
    lines = [json.dumps({"id": i, **GOOD}) for i in ("a", "bad", "c")]
    code, out = score_cli(tmp_path, lines, "--audit-log", str(tmp_path / "audit.jsonl"))
    assert code == 1  # a failed line, not a stopped run (3)
    records = [strict_loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert "error" not in records[0] and "error" not in records[2]
    assert records[1]["issues"][0]["code"] == "E110" and "not a finite number" in records[1]["error"]
    audit = read_audit_log(tmp_path / "audit.jsonl")
    assert [("error" in r) for r in audit] == [False, True, False]


def test_characters_some_readers_take_for_line_breaks_are_escaped(tmp_path):
    """U+0085, U+2028, U+2029 in a value were written raw: valid JSON, but str.splitlines (and JavaScript
    before ES2019) cut the line there (found by the CLI fuzz test)."""
    lines = [json.dumps({"id": f"a{c}b", **GOOD}, ensure_ascii=False) for c in ("\u0085", "\u2028", "\u2029")]
    code, out = score_cli(tmp_path, lines)
    assert code == 0
    records = [strict_loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["a\u0085b", "a\u2028b", "a\u2029b"]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in ("query", "context", "output", "id",
                                                                                   "label", "task_type")),
                       st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=20),
                       max_size=4))
def test_every_output_line_is_strict_json_whatever_passes_through(extra):
    from io import StringIO

    from evqual.scoring import dumps_line, score_block
    from evqual.data import make_example

    scorer = _scorer()
    ex = make_example(query=GOOD["query"], context=GOOD["context"], output=GOOD["output"])
    [(text, res)] = score_block(scorer, [(1, ex, extra)])
    assert text is not None
    strict_loads(text)
    assert StringIO(dumps_line({"x": 1})).read()


_SCORER = []


def _scorer():
    if not _SCORER:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _SCORER.append(Scorer.load())
    return _SCORER[0]


# ---------------------------------------------------------------------------------------------- attack: explain on hostile records
def test_surrogate_in_a_pass_through_key_is_dropped_and_explain_writes_whole_reports(tmp_path):
    line = json.dumps({"id": "s", **GOOD, "\ud800key": 1, "fine": 2})  # json.dumps escapes it: valid JSON
    code, out = score_cli(tmp_path, [line])
    assert code == 0
    rec = strict_loads(out.read_text(encoding="utf-8").strip())
    assert rec["extra"] == {"fine": 2}
    assert any(w["code"] == "W002" and "surrogate" in w["message"] for w in rec["warnings"])
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["explain", str(out), "--html", str(html), "--markdown", str(md)]) == 0
    assert html.read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert "## s" in md.read_text(encoding="utf-8")


def test_explain_of_a_surrogate_key_that_reached_a_results_file_does_not_crash(tmp_path):
    """A results file written by an older evqual, or edited: the key is in the record's extra."""
    code, out = score_cli(tmp_path, [json.dumps({"id": "s", **GOOD})])
    rec = json.loads(out.read_text())
    rec["extra"] = {"\ud800": "x"}
    out.write_text(json.dumps(rec) + "\n")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    code = main(["explain", str(out), "--html", str(html), "--markdown", str(md)])
    assert code in (0, 1)
    assert html.read_text(encoding="utf-8").rstrip().endswith("</html>")
    md.read_text(encoding="utf-8")


@pytest.mark.parametrize("field, value", [("output", 7), ("context", 3), ("sentences", "x"), ("risk", "high"),
                                          ("spans", [{"start": "a"}]), ("topics", 5)])
def test_explain_turns_a_malformed_record_into_an_error_card(tmp_path, capsys, field, value):
    code, out = score_cli(tmp_path, [json.dumps({"id": "a", **GOOD}), json.dumps({"id": "b", **GOOD})])
    lines = out.read_text().splitlines()
    bad = json.loads(lines[1])
    bad[field] = value
    out.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    code = main(["explain", str(out), "--html", str(html), "--markdown", str(md)])
    assert code in (0, 1)
    page = html.read_text(encoding="utf-8")
    assert page.rstrip().endswith("</html>") and "not scored: 1" in page
    assert "not a valid result" in md.read_text(encoding="utf-8")
    assert "line 2" in capsys.readouterr().err


def test_explain_never_leaves_a_half_written_report(tmp_path, monkeypatch, capsys):
    import evqual.explain as explain_pkg

    code, out = score_cli(tmp_path, [json.dumps({"id": "a", **GOOD})])
    html = tmp_path / "r.html"
    html.write_text("the previous report\n")
    real = explain_pkg.iter_html

    def failing(results, **kw):
        def pieces():
            yield from list(real(results, **kw))[:2]
            raise OSError(28, "No space left on device")
        return pieces()

    monkeypatch.setattr(explain_pkg, "iter_html", failing)
    assert main(["explain", str(out), "--html", str(html)]) == 3
    assert html.read_text() == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl", "r.html"]
    assert "was not changed" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- attack: spreadsheet formulas
@pytest.mark.parametrize("value, expected", [("=1+1", "'=1+1"), ("+1", "'+1"), ("-2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"),
                                             ("\tx", "'\tx"), ("\rx", "'\rx"), ("q1", "q1"), ("", "")])
def test_csv_safe(value, expected):
    from evqual.cli import csv_safe

    assert csv_safe(value) == expected


def test_predict_and_featurize_csv_neutralise_formula_ids(tmp_path):
    import csv

    src = write_lines(tmp_path / "data.jsonl", [
        json.dumps({"id": '=HYPERLINK("http://evil.example","x")', **GOOD, "label": 1}),
        json.dumps({"id": "@cmd", **GOOD, "label": 0}),
        json.dumps({"id": "plain", **GOOD, "label": 0})])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["predict", "--data", str(src), "--out", str(tmp_path / "p.csv")]) == 0
        assert main(["featurize", "--data", str(src), "--out", str(tmp_path / "f.csv"), "--no-progress"]) == 0
    for name in ("p.csv", "f.csv"):
        with open(tmp_path / name, newline="") as fh:
            ids = [row["id"] for row in csv.DictReader(fh)]
        assert ids == ['\'=HYPERLINK("http://evil.example","x")', "'@cmd", "plain"], name


# ---------------------------------------------------------------------------------------------- attack: markdown constructs in quoted text
HOSTILE_MD = ["see http://evil.example/x, www.evil.com and mail a@b.com", "WWW.EVIL.COM/x ftp://f.example", "---", "***", "~~~", "```", "a | b\n--- | ---\nc | d",
              "    indented code", "<script>alert(1)</script>", "[x](http://a) ![i](http://b)", "1. one\n- two", "# h",
              "setext\n===", "*em* __strong__ ~~del~~ `code`", "&amp; &#65;", "> quote", "<http://auto.link>",
              "| pipe |", "\\\\ back", "[ref]: http://x", "a\r# h\r    code\r- item", "x\r\n---\r\n1) y"]


def _render(md: str) -> str:
    from markdown_it import MarkdownIt

    # CommonMark + GFM tables, strikethrough and autolinks (linkify-it, which also links bare domains such as
    # "example.com": stricter than GitHub, which needs "www." or a scheme)
    return MarkdownIt("gfm-like").render(md)


def test_the_renderer_would_make_constructs_of_the_raw_text():
    """Guard: the GFM renderer the test uses does autolink and build tables from the unescaped text."""
    assert "<a " in _render(HOSTILE_MD[0])
    assert all("<a " in _render(t) for t in ("www.evil.com", "mail a@b.com", "evil.com", "http://x.io"))
    assert "<table>" in _render("a | b\n--- | ---\nc | d")
    assert "<hr" in _render("---")


@pytest.mark.parametrize("text", HOSTILE_MD)
def test_quoted_text_renders_as_plain_text_in_markdown(text):
    import html as html_mod
    import re

    from evqual._markdown import md_cell, md_text
    from evqual.explain._render import _md_quote

    for md, allowed in ((_md_quote(md_text(text)), {"blockquote", "p", "br"}),
                        (f"| a |\n| --- |\n| {md_cell(text)} |", {"table", "thead", "tbody", "tr", "th", "td", "br"})):
        rendered = _render(md)
        tags = set(re.findall(r"</?([a-z0-9]+)", rendered))
        assert tags <= allowed, (text, rendered)
    # and the reader sees exactly the text
    plain = html_mod.unescape(re.sub(r"<[^>]+>", "", _render(_md_quote(md_text(text)))))
    assert " ".join(plain.split()) == " ".join(text.split())


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs", "Cc")), max_size=60))
def test_md_text_renders_to_no_markup_for_any_text(text):
    import re

    from evqual._markdown import md_text
    from evqual.explain._render import _md_quote

    rendered = _render(_md_quote(md_text(text)))
    assert set(re.findall(r"</?([a-z0-9]+)", rendered)) <= {"blockquote", "p", "br"}, rendered


def test_markdown_report_of_hostile_context_has_no_links_or_extra_headings(tmp_path):
    ctx = "\n".join(HOSTILE_MD)
    code, out = score_cli(tmp_path, [json.dumps({"id": "h", "query": "q", "context": [ctx],
                                                 "output": "See http://evil.example now.\n---\n~~~"})])
    md = tmp_path / "r.md"
    assert main(["explain", str(out), "--markdown", str(md)]) in (0, 1)
    rendered = _render(md.read_text(encoding="utf-8"))
    assert "<a " not in rendered and "<script" not in rendered and "<pre" not in rendered
    assert rendered.count("<h1") == 1 and rendered.count("<h2") == 1


# ---------------------------------------------------------------------------------------------- attack: outputs onto inputs
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "dot"])
def test_score_refuses_an_output_that_is_its_input(tmp_path, capsys, how):
    src = write_lines(tmp_path / "x.jsonl", [json.dumps({"id": "a", **GOOD})])
    before = src.read_bytes()
    out = {"same": src, "dot": Path(str(tmp_path) + "/./x.jsonl"), "symlink": tmp_path / "link.jsonl",
           "hardlink": tmp_path / "hard.jsonl"}[how]
    if how == "symlink":
        out.symlink_to(src)
    elif how == "hardlink":
        os.link(src, out)
    assert main(["score", str(src), "--out", str(out)]) == 2
    assert src.read_bytes() == before
    assert "refusing to overwrite it" in capsys.readouterr().err


def test_score_refuses_out_and_audit_log_on_one_file(tmp_path, capsys):
    src = write_lines(tmp_path / "x.jsonl", [json.dumps({"id": "a", **GOOD})])
    assert main(["score", str(src), "--out", str(tmp_path / "o.jsonl"), "--audit-log", str(tmp_path / "o.jsonl")]) == 2
    assert "write both to one file" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("argv", [["verify", "{src}", "--out", "{src}"], ["explain", "{src}", "--html", "{src}"],
                                  ["predict", "--data", "{csv}", "--out", "{csv}"],
                                  ["featurize", "--data", "{csv}", "--out", "{csv}"]])
def test_other_commands_refuse_to_write_onto_their_input(tmp_path, argv):
    src = write_lines(tmp_path / "x.jsonl", [json.dumps({"id": "a", **GOOD})])
    csv_path = tmp_path / "x.csv"
    csv_path.write_text("id,query,context,output,label\na,q,ctx,out,0\n")
    before = (src.read_bytes(), csv_path.read_bytes())
    assert main([a.format(src=src, csv=csv_path) for a in argv]) == 2
    assert (src.read_bytes(), csv_path.read_bytes()) == before


def test_a_stopped_score_leaves_the_previous_out_as_it_was(tmp_path, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    src = write_lines(tmp_path / "x.jsonl", [json.dumps({"id": str(i), **GOOD}) for i in range(3)])
    out = tmp_path / "o.jsonl"
    out.write_text("previous results\n")
    assert main(["score", str(src), "--out", str(out), "--audit-log", "/dev/full", "--no-progress"]) == 3
    assert out.read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl", "x.jsonl"]
    assert "left as it was" in capsys.readouterr().err


def test_score_out_is_written_with_the_usual_permissions(tmp_path):
    code, out = score_cli(tmp_path, [json.dumps({"id": "a", **GOOD})])
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


# ---------------------------------------------------------------------------------------------- attack: what the audit log reveals
def test_audit_log_is_owner_only_and_holds_no_scored_text(tmp_path):
    secret = "Zanzibar-7731"
    code, _ = score_cli(tmp_path, [json.dumps({"id": "a", "query": f"Where is {secret}?",
                                               "context": [f"{secret} opened in 1932."],
                                               "output": f"{secret} opened in 1999 in {secret} town."})],
                        "--audit-log", str(tmp_path / "audit.jsonl"), "--verify", "claims")
    assert code == 0
    log = tmp_path / "audit.jsonl"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert secret not in text
    [rec] = read_audit_log(log)
    assert rec["spans"] == [] or all(set(s) == {"start", "end", "risk"} for s in rec["spans"])
