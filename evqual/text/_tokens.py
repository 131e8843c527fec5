"""Tokenisation shared by every lexical feature.

Tokens are maximal runs of Unicode letters and digits (``[^\\W_]+``) in the
lower-cased text, so ``"U.S.-based"`` gives ``["u", "s", "based"]`` and
``"1,600"`` gives ``["1", "600"]``.  *Content* tokens drop English stop words
(scikit-learn's ``ENGLISH_STOP_WORDS`` list): they carry the evidence signal,
while stop words mostly measure length.
"""

from __future__ import annotations

import re

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

__all__ = ["tokenize", "content_tokens", "token_spans", "STOP_WORDS", "TOKEN_PATTERN"]

TOKEN_PATTERN = r"[^\W_]+"
_TOKEN_RE = re.compile(TOKEN_PATTERN)
STOP_WORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS)


def tokenize(text: str) -> list[str]:
    """Lower-cased letter/digit tokens of ``text``.

    Examples
    --------
    >>> tokenize("Walmart's $23.70 pay-rise")
    ['walmart', 's', '23', '70', 'pay', 'rise']
    """
    return _TOKEN_RE.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens of ``text`` without English stop words, in order, repeats kept.

    Examples
    --------
    >>> content_tokens("The company is in the heart of Arkansas")
    ['company', 'heart', 'arkansas']
    """
    stop = STOP_WORDS
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in stop]


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, token)`` for every token, offsets into ``text``.

    Lower-casing can change the length of a few exotic characters (``"İ"``),
    so offsets are taken on the original text and the token lower-cased
    afterwards.

    Examples
    --------
    >>> token_spans("Hi, Bob")
    [(0, 2, 'hi'), (4, 7, 'bob')]
    """
    return [(m.start(), m.end(), m.group().lower()) for m in _TOKEN_RE.finditer(text)]
