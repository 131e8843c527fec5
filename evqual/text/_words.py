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

from .._build import kernel
from ._numbers import NumberMention, _numbers, extract_numbers
from ._sentences import split_sentences
from ._tokens import TOKEN_PATTERN, word_spans

__all__ = ["TextWords"]

_TOKEN_RE = re.compile(TOKEN_PATTERN)
_BOUNDS = kernel("evqual.text._scan", "WordBounds")  # the compiled word offsets, or None: a list of words


class TextWords:
    """The words of ``text`` (:data:`~evqual.text.TOKEN_PATTERN` runs), found once, by window on request.

    Compiled, it keeps where each word starts and ends in two C arrays (16 bytes a word,
    ``evqual/text/_scan.pyx``) and makes the words of a window when asked; the pure-Python fallback keeps the
    list of ``(start, end, word)`` and their lower-case forms.  Both give what
    :func:`~evqual.text.word_spans` gives for any window.

    Parameters
    ----------
    text : str

    Attributes
    ----------
    text : str

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

    __slots__ = ("text", "_bounds", "_spans", "_lows", "_starts", "_ends", "_sentences", "_whole", "_numbers",
                 "_number_starts")

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"TextWords: text must be a str, got {type(text).__name__}")
        self.text = text
        self._sentences = None
        self._numbers = self._number_starts = None
        # whether each word lowers as the text around it lowers (see lower_tokens)
        self._whole = text.isascii() or ("\u0130" not in text and "\u03a3" not in text)
        self._bounds = _BOUNDS(text) if _BOUNDS is not None else None
        if self._bounds is None:
            self._spans = word_spans(text)
            self._lows = [t[2].lower() for t in self._spans]
            self._starts = [t[0] for t in self._spans]
            self._ends = [t[1] for t in self._spans]

    @property
    def spans(self) -> list:
        """``(start, end, word)`` of every word, as :func:`~evqual.text.word_spans` gives them."""
        return self.spans_in(0, len(self.text))

    @property
    def sentences(self) -> list:
        """:func:`~evqual.text.split_sentences` of the text (computed on first use)."""
        got = self._sentences
        if got is None:
            got = self._sentences = split_sentences(self.text)
        return got

    def window(self, start: int, end: int) -> tuple[int, int]:
        """``(i, j)``: the words ``i`` to ``j - 1`` overlap ``text[start:end]``."""
        if self._bounds is not None:
            return self._bounds.window(start, end)
        return bisect_right(self._ends, start), bisect_left(self._starts, end)

    def spans_in(self, start: int = 0, end: int | None = None) -> list:
        """``word_spans(text, start, end)``: the words of ``text[start:end]``, a word the window's edge cuts
        cut there."""
        if self._bounds is not None:
            return self._bounds.words_in(start, len(self.text) if end is None else end)
        return self._in(start, end, False)

    def words_in(self, start: int = 0, end: int | None = None) -> list:
        """``[word for _, _, word in spans_in(start, end)]``."""
        if self._bounds is not None:
            return self._bounds.words_in(start, len(self.text) if end is None else end, False, False)
        return [t[2] for t in self._in(start, end, False)]

    def lows_in(self, start: int = 0, end: int | None = None) -> list:
        """``[word.lower() for _, _, word in spans_in(start, end)]``."""
        if self._bounds is not None:
            return self._bounds.words_in(start, len(self.text) if end is None else end, True, False)
        return self._in(start, end, True)

    def _in(self, start: int, end: int | None, lower: bool) -> list:
        n = len(self.text)
        end = n if end is None or end > n else end
        start = 0 if start < 0 else start
        if start >= end:
            return []
        i, j = self.window(start, end)
        out = (self._lows if lower else self._spans)[i:j]
        if out:  # (a word cut by both edges is cut the same way twice)
            a, b = self._starts[i], self._ends[i]
            if a < start or b > end:
                out[0] = self._piece(max(a, start), min(b, end), lower)
            if self._ends[j - 1] > end:
                out[-1] = self._piece(max(self._starts[j - 1], start), end, lower)
        return out

    def _piece(self, a: int, b: int, lower: bool):
        w = self.text[a:b]
        return w.lower() if lower else (a, b, w)

    def numbers_in(self, start: int = 0, end: int | None = None) -> list:
        """``extract_numbers(text[start:end])``: the number mentions of a window, offsets into the window.

        The text's mentions are found once, and a window takes those inside it.  That is what a scan of the
        window finds unless the window's edges can change a match: a mention crossing an edge, or an edge
        with a character on its outer side that a pattern looks at (anything but white space before the
        window; a letter, digit, ``_`` or ``:`` after it), where a match of either pattern, kept or not, counts
        as crossing.  Then the window is scanned as before (rare: the
        readers' windows are sentences and claims).  ``tests/test_words.py`` checks the equality on
        generated texts and windows."""
        text = self.text
        n = len(text)
        end = n if end is None or end > n else end
        start = 0 if start < 0 else start
        if start >= end:
            return []
        found = self._numbers
        if found is None:
            extents: list = []
            found = self._numbers = _numbers(text, extents)
            extents.sort()
            reach, most = [], 0  # (reach[k]: the furthest end of the matches 0 to k)
            for _, b in extents:
                most = b if b > most else most
                reach.append(most)
            self._number_starts = ([m.start for m in found], [a for a, _ in extents], reach)
        if start == 0 and end == n:
            return list(found)
        if (start and not text[start - 1].isspace()) or (end < n and (text[end].isalnum() or text[end] in ":_")):
            return extract_numbers(text[start:end])
        if not found:
            return []
        starts, match_starts, reach = self._number_starts
        i = bisect_left(match_starts, start)
        j = bisect_left(match_starts, end, i)
        if (i and reach[i - 1] > start) or (j and reach[j - 1] > end):
            return extract_numbers(text[start:end])  # a match crosses an edge of the window
        i = bisect_left(starts, start)
        j = bisect_left(starts, end, i)
        if not start:
            return found[i:j]
        return [NumberMention(m.start - start, m.end - start, m.text, m.value, m.raw_value, m.unit)
                for m in found[i:j]]

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
