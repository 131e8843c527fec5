"""Markdown tables and escaping without extra dependencies."""

from __future__ import annotations

import html
import math
import re


def markdown_table(df, floatfmt: str = ".3f") -> str:
    """Render a :class:`pandas.DataFrame` as a GitHub markdown table.

    >>> import pandas as pd
    >>> print(markdown_table(pd.DataFrame({"a": ["x"], "b": [0.12345]})))
    | a | b |
    | --- | --- |
    | x | 0.123 |
    """
    def cell(v):
        if isinstance(v, float):
            return "" if math.isnan(v) else format(v, floatfmt)
        return re.sub(r"(?<!\\)\|", r"\\|", str(v))  # a pipe md_text already escaped stays as it is

    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "| " + " | ".join("---" for _ in df.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False, name=None)]
    return "\n".join([head, sep, *body])


# Markdown that quoted text could start, and what stops it (CommonMark lets any ASCII punctuation be
# backslash-escaped; an escaped character is literal text):
# * everywhere: \ ` * [ ] | ~ @ (code, emphasis, links and images, tables, strikethrough and fences, e-mail
#   autolinks) and _ at word edges (intraword underscores cannot open emphasis: "passage_2" stays readable);
#   ":" before "/" ("http\://": no URL autolink) and "." between a letter or digit and two letters
#   ("www\.evil\.com": no www or bare-domain autolink, while "v0.3.0" and "e.g." stay as they are);
#   &, < and > as entities (no raw HTML, no entity references, no <autolinks>);
# * at the start of a line: # + - = > and the "." or ")" after digits (headings, lists, thematic breaks,
#   setext underlines, block quotes), and spaces and tabs after a line break as entities (four would open a
#   code block; :func:`indent_entities` does the same for the first line where text starts a line).
_MD_ANYWHERE = re.compile(r"[\\`*\[\]|~@]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|:(?=/)|(?<=[0-9A-Za-z])\.(?=[A-Za-z]{2})")
_MD_LINE_START = re.compile(r"(?:^|(?<=[\r\n]))([ \t]*)([#+\-=>]|\d+[.)])")  # \r alone ends a line too
_MD_INDENT = re.compile(r"(?<=[\r\n])[ \t]+")  # after a line break (text quoted inline keeps its first space)


_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]")
_FSI, _PDI = "\u2068", "\u2069"


def bidi_safe(text) -> str:
    """Untrusted text that cannot reorder what a reader sees around it (issue 39: an id holding U+202E
    swapped the risk and the decision an auditor reads).

    Every explicit bidi control (embeddings, overrides, isolates, marks: U+202A-U+202E, U+2066-U+2069,
    U+200E, U+200F, U+061C) is shown as ``[U+XXXX]``; text that then still holds a right-to-left letter or
    an Arabic digit is wrapped in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE (what HTML's ``<bdi>``
    does), so its direction stays inside it.  Left-to-right text comes back as it was.

    >>> bidi_safe("a1\u202e risk")
    'a1[U+202E] risk'
    >>> bidi_safe("\u05e9\u05dc\u05d5\u05dd") == "\u2068\u05e9\u05dc\u05d5\u05dd\u2069"
    True
    >>> bidi_safe("plain")
    'plain'
    """
    s = "" if text is None else str(text)
    if _BIDI_CONTROLS.search(s):
        s = _BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", s)
    if _RTL.search(s):
        s = _FSI + s + _PDI
    return s


def md_text(text) -> str:
    r"""Text for markdown that renders as exactly that text: no markdown construct (heading, list, quote,
    code, table, emphasis, link, image, autolink, raw HTML) can start from it, whatever it holds.

    >>> print(md_text("# Title | a *b* at http://x.io, v0.3.0 - ok"))
    \# Title \| a \*b\* at http\://x\.io, v0.3.0 - ok
    >>> print(md_text("---"))
    \---
    """
    s = _MD_ANYWHERE.sub(lambda m: "\\" + m.group(0), bidi_safe(text))
    s = html.escape(s, quote=False)
    s = _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], s)
    return _MD_INDENT.sub(lambda m: m.group(0).replace(" ", "&#32;").replace("\t", "&#9;"), s)


def indent_entities(line: str) -> str:
    """``line`` with its leading spaces and tabs as entities (for text placed at the start of a line)."""
    stripped = line.lstrip(" \t")
    lead = line[:len(line) - len(stripped)]
    return lead.replace(" ", "&#32;").replace("\t", "&#9;") + stripped


def md_code(text) -> str:
    """Text for inside a code span: no backticks, line breaks or pipes (escapes do not work there)."""
    return html.escape(" ".join(bidi_safe(text).replace("`", "").replace("|", "").split()), quote=False)


def md_inline(text) -> str:
    """One line of markdown text: every line break (``\\n``, U+2028, ...) folded into a space."""
    return md_text(" ".join(("" if text is None else str(text)).split()))


def md_cell(text, *, escaped: bool = False) -> str:
    """A table cell: escaped as :func:`md_text` (unless ``escaped``), pipes escaped, newlines as ``<br>``."""
    s = re.sub(r"(?<!\\)\|", r"\\|", text if escaped else md_text(text))
    return re.sub(r"\r\n|\r|\n|\u2028|\u2029|\x85", "<br>", s)
