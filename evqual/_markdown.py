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


def md_text(text) -> str:
    r"""Text for markdown that renders as exactly that text: no markdown construct (heading, list, quote,
    code, table, emphasis, link, image, autolink, raw HTML) can start from it, whatever it holds.

    >>> print(md_text("# Title | a *b* at http://x.io, v0.3.0 - ok"))
    \# Title \| a \*b\* at http\://x\.io, v0.3.0 - ok
    >>> print(md_text("---"))
    \---
    """
    s = _MD_ANYWHERE.sub(lambda m: "\\" + m.group(0), "" if text is None else str(text))
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
    return html.escape(" ".join(str(text).replace("`", "").replace("|", "").split()), quote=False)


def md_inline(text) -> str:
    """One line of markdown text: every line break (``\\n``, U+2028, ...) folded into a space."""
    return md_text(" ".join(("" if text is None else str(text)).split()))


def md_cell(text, *, escaped: bool = False) -> str:
    """A table cell: escaped as :func:`md_text` (unless ``escaped``), pipes escaped, newlines as ``<br>``."""
    s = re.sub(r"(?<!\\)\|", r"\\|", text if escaped else md_text(text))
    return re.sub(r"\r\n|\r|\n|\u2028|\u2029|\x85", "<br>", s)
