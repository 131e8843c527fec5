"""The words of one text, found once: what every reader of an answer or a context takes its words from.

Issue 41 asks for one reading per text.  Before, an answer's words were found by the similarity family
(per sentence), the checks (per sentence, per claim and once for the whole answer) and the evidence engine
(per claim); a context's by the similarity index (per chunk), the checks' evidence units and the engine's
index (per sentence, each).  A :class:`TextWords` finds them once, and each reader takes the words of its
window from it: the same words the reader's own scan of that window gives (a word cut by the window's edge
is cut the same way), so nothing a reader computes changes.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from ._sentences import split_sentences
from ._tokens import TOKEN_PATTERN, word_spans

__all__ = ["TextWords"]

_TOKEN_RE = re.compile(TOKEN_PATTERN)


class TextWords:
    """The words of ``text`` (:data:`~evqual.text.TOKEN_PATTERN` runs), found once, by window on request.

    Parameters
    ----------
    text : str

    Attributes
    ----------
    text : str
    spans : list of (int, int, str)
        ``(start, end, word)`` of every word, as :func:`~evqual.text.word_spans` gives them.
    lows : list of str
        Each word lower-cased (``word.lower()``), beside :attr:`spans`.

    Examples
    --------
    >>> w = TextWords("U.S.-based Acme's plant. It opened in 1932.")
    >>> w.spans_in(0, 24) == word_spans(w.text, 0, 24)
    True
    >>> w.spans_in(6, 12)  # a window's edge cuts a word as a scan of the window does
    [(6, 10, 'ased'), (11, 12, 'A')]
    >>> w.lower_tokens(25, 43)
    ['it', 'opened', 'in', '1932']
    >>> [w.text[s:e] for s, e in w.sentences]
    ["U.S.-based Acme's plant.", 'It opened in 1932.']
    """

    __slots__ = ("text", "spans", "lows", "_starts", "_ends", "_sentences", "_whole")

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"TextWords: text must be a str, got {type(text).__name__}")
        self.text = text
        self.spans = word_spans(text)
        self.lows = [t[2].lower() for t in self.spans]
        self._starts = [t[0] for t in self.spans]
        self._ends = [t[1] for t in self.spans]
        self._sentences = None
        # whether each word lowers as the text around it lowers (see lower_tokens)
        self._whole = text.isascii() or ("\u0130" not in text and "\u03a3" not in text)

    @property
    def sentences(self) -> list:
        """:func:`~evqual.text.split_sentences` of the text (computed on first use)."""
        got = self._sentences
        if got is None:
            got = self._sentences = split_sentences(self.text)
        return got

    def window(self, start: int, end: int) -> tuple[int, int]:
        """``(i, j)``: ``spans[i:j]`` are the words that overlap ``text[start:end]``."""
        return bisect_right(self._ends, start), bisect_left(self._starts, end)

    def spans_in(self, start: int = 0, end: int | None = None) -> list:
        """``word_spans(text, start, end)``: the words of ``text[start:end]``, a word the window's edge cuts
        cut there."""
        n = len(self.text)
        end = n if end is None or end > n else end
        start = 0 if start < 0 else start
        if start >= end:
            return []
        i, j = self.window(start, end)
        out = self.spans[i:j]
        if out:
            text = self.text
            a, b, w = out[0]
            if a < start or b > end:
                a2, b2 = max(a, start), min(b, end)
                out[0] = (a2, b2, text[a2:b2])
            a, b, w = out[-1]
            if b > end:
                out[-1] = (a, end, text[a:end])
        return out

    def lows_in(self, start: int = 0, end: int | None = None) -> list:
        """``[word.lower() for _, _, word in spans_in(start, end)]``."""
        n = len(self.text)
        end = n if end is None or end > n else end
        start = 0 if start < 0 else start
        if start >= end:
            return []
        i, j = self.window(start, end)
        out = self.lows[i:j]
        if out:
            if self._starts[i] < start or self._ends[i] > end:
                out[0] = self.text[max(self._starts[i], start):min(self._ends[i], end)].lower()
            if self._ends[j - 1] > end:
                out[-1] = self.text[max(self._starts[j - 1], start):end].lower()
        return out

    def lower_tokens(self, start: int = 0, end: int | None = None) -> list:
        """``TOKEN_PATTERN`` runs of ``text[start:end].lower()`` (:func:`~evqual.text.tokenize` of the window).

        Lower-casing joins no two words and makes a word of no other character, so each word is lowered
        alone (``tests/test_words.py`` checks every code point), with two exceptions, where the window is
        lowered whole as before: "İ" (U+0130) lowers to a letter and a combining mark, which a word ends at,
        and a capital sigma lowers by what stands around it ("ς" at a word's end), possibly outside the
        word."""
        if self._whole:
            return self.lows_in(start, end)
        n = len(self.text)
        end = n if end is None or end > n else end
        return _TOKEN_RE.findall(self.text[max(start, 0):end].lower())
