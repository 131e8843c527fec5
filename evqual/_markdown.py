"""Markdown tables without extra dependencies."""

from __future__ import annotations

import math


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
