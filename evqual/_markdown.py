"""Markdown tables without extra dependencies."""

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
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "| " + " | ".join("---" for _ in df.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False, name=None)]
    return "\n".join([head, sep, *body])


# markdown that text could use to make links, images, code or emphasis: backslash-escaped
# (underscores only at word edges, where they can open emphasis; "passage_2" stays as it is)
_MD_SPECIAL = re.compile(r"[\\`*\[\]]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def md_text(text) -> str:
    """Text for markdown: link, image, code and emphasis markup backslash-escaped, HTML special characters
    escaped (raw HTML passes through renderers), so no text can add a link, an image or markup."""
    s = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), "" if text is None else str(text))
    return html.escape(s, quote=False)


def md_code(text) -> str:
    """Text for inside a code span: no backticks, line breaks or pipes (escapes do not work there)."""
    return html.escape(" ".join(str(text).replace("`", "").replace("|", "").split()), quote=False)


def md_inline(text) -> str:
    """One line of markdown text: every line break (``\\n``, U+2028, ...) folded into a space."""
    return md_text(" ".join(("" if text is None else str(text)).split()))


def md_cell(text, *, escaped: bool = False) -> str:
    """A table cell: escaped as :func:`md_text` (unless ``escaped``), pipes escaped, newlines as ``<br>``."""
    s = (text if escaped else md_text(text)).replace("|", "\\|")
    return re.sub(r"\r\n|\r|\n|\u2028|\u2029|\x85", "<br>", s)
