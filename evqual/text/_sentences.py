"""Deterministic sentence segmentation with character offsets.

Rules (applied in this order, no model involved):

1. A run of line breaks always ends a sentence.
2. ``.``, ``!`` or ``?`` (possibly repeated, possibly followed by closing
   quotes or brackets) followed by white space ends a sentence, unless

   * the word before the period is a known abbreviation (``Mr``, ``Dr``,
     ``Gov``, ``U.S``, ``e.g``, ``approx``, month abbreviations ...) or a
     single letter (an initial such as ``J. K. Rowling``), or
   * the text since the last boundary is only a list marker (``1.``,
     ``a)``), or
   * the next visible character is a lower-case letter.

3. Segments are stripped of surrounding white space; a segment with no
   letter or digit (``"..."``, ``"-"``) is not a sentence.
4. A segment longer than :data:`MAX_SENTENCE_CHARS` (a run-on text with no
   sentence end: a pasted log, a list of values) is cut into pieces of at
   most that many characters, at the last white space before the limit
   (anywhere, when a piece has none in its second half).  No sentence of
   RAGTruth or of the transfer sets reaches it (the longest: 763
   characters); it keeps the cost of everything that compares a sentence
   with another bounded (issue 39: a 95 KB context of one "sentence" of
   6,000 values took 38 s to read).

The result is a list of ``(start, end)`` offsets with
``text[start:end]`` the sentence, in order and non-overlapping.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .._build import kernel
from ._tokens import has_alnum

__all__ = ["split_sentences", "ABBREVIATIONS", "MAX_SENTENCE_CHARS"]

ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof gov sen rep st jr sr vs etc eg ie e.g i.e u.s u.k u.n
    no nos inc ltd co corp mt ft approx est dept univ fig figs vol jan feb mar
    apr jun jul aug sep sept oct nov dec a.m p.m am pm ca cf al gen col lt sgt
    capt cmdr adm pres rev hon ave blvd rd hwy""".split()
)

# a run of line breaks, or sentence-ending punctuation (closing quotes and brackets after it) and white space:
# "\n\s*|[.!?]+[\"'\u201d\u2019)\]]*\s+", written to start with one character class, which lets re skip to
# the next line break or stop mark; as alternatives it tried a match at every position (the same matches:
# tests/test_text.py)
_BOUNDARY_RE = re.compile(r"[\n.!?](?:(?<=\n)\s*|(?<=[.!?])[.!?]*[\"'\u201d\u2019)\]]*\s+)")
# a list marker ("1.", "a)", "iv."): leading white space, then _LIST_MARKER_BODY_RE (below)


def _is_false_stop(text: str, seg_start: int, punct_pos: int, next_pos: int, content_start: int | None = None) -> bool:
    """True when the period at ``punct_pos`` does not end a sentence.

    The text since the segment start (``text[seg_start:punct_pos]``) is
    never copied: the list-marker test looks at it from its first visible
    character (``content_start``, computed once per segment) and the word
    before the period is read backwards from it, one step per character
    (a long segment of false stops, ``"J. J. J. ..."``, costs time linear
    in its length).
    """
    if text[punct_pos] != ".":
        return False
    if content_start is None:
        content_start = _SPACES_RE.match(text, seg_start, punct_pos).end()
    if _LIST_MARKER_BODY_RE.match(text, content_start, punct_pos):
        return True
    # the word before the period: the run of [\w.] characters ending there (what a search of "([\w.]+)$" finds
    # in text[seg_start:punct_pos], whose "$" also matches before a final line break), read backwards
    end = punct_pos - 1 if punct_pos > seg_start and text[punct_pos - 1] == "\n" else punct_pos
    a = _word_run_start(text, seg_start, end)
    if a < end:
        word = text[a:end].lower().strip(".")
        if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            return True
    if next_pos < len(text) and text[next_pos].islower():
        return True
    return False


_RUN_START = kernel("evqual.text._scan", "word_run_start")  # the compiled backward scan, or None


def _word_run_start(text: str, lo: int, end: int) -> int:
    """Where the run of characters ``re``'s ``[\\w.]`` matches (a letter, digit, ``_`` or ``.``) that ends at
    ``end`` starts, ``lo`` at the earliest (``end`` when the character before it is none of them): one step per
    character of the word, where the regular expression's search tried every start in a window before it."""
    if _RUN_START is not None:
        return _RUN_START(text, lo, end)
    i = end
    while i > lo and (text[i - 1].isalnum() or text[i - 1] in "_."):
        i -= 1
    return i


_SPACES_RE = re.compile(r"\s*")
# a list marker without its leading white space, matched from the segment's first visible character
_LIST_MARKER_BODY_RE = re.compile(r"(?:\d{1,3}|[A-Za-z]|[ivxIVX]{1,4})[.)]?$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into sentences; return their ``(start, end)`` offsets.

    Parameters
    ----------
    text : str
        Any text; empty or white-space-only text has no sentence.

    Returns
    -------
    list of (int, int)
        Character offsets, ordered and non-overlapping; each slice is
        stripped and contains at least one letter or digit.

    Examples
    --------
    >>> text = "Gov. Asa Hutchinson spoke. He said no!\\nNext line"
    >>> [text[s:e] for s, e in split_sentences(text)]
    ['Gov. Asa Hutchinson spoke.', 'He said no!', 'Next line']
    """
    if len(text) > _CACHE_MAX_CHARS:
        return _split(text)
    return list(_split_cached(text))


_CACHE_MAX_CHARS = 20_000  # outputs are split twice (features, entities); cache only short texts


@lru_cache(maxsize=2048)
def _split_cached(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(_split(text))


def _split(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    seg_start = 0
    content_start = None  # first visible character of the segment, found on its first false-stop test
    for m in _BOUNDARY_RE.finditer(text):
        if text[m.start()] != "\n":
            if content_start is None:
                content_start = _SPACES_RE.match(text, seg_start, m.start()).end()
            if _is_false_stop(text, seg_start, m.start(), m.end(), content_start):
                continue
        # keep the punctuation (and closing quotes) with the sentence
        end = m.start()
        if text[m.start()] != "\n":
            end = m.start() + len(m.group().rstrip())
        _add(text, seg_start, end, spans)
        seg_start = m.end()
        content_start = None
    _add(text, seg_start, len(text), spans)
    return spans


MAX_SENTENCE_CHARS = 1000
"""The longest sentence :func:`split_sentences` returns, in characters (rule 4 of the module docstring)."""

_LAST_SPACE_RE = re.compile(r".*\s", re.DOTALL)


def _add(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    seg = text[start:end]
    stripped = seg.strip()
    if not stripped or not has_alnum(stripped):
        return
    lead = len(seg) - len(seg.lstrip())
    s = start + lead
    e = s + len(stripped)
    while e - s > MAX_SENTENCE_CHARS:
        cut = s + MAX_SENTENCE_CHARS
        m = _LAST_SPACE_RE.match(text, s + MAX_SENTENCE_CHARS // 2, cut + 1)
        if m is not None:  # the piece ends at the last white space before the limit
            cut = m.end() - 1
        _add(text, s, cut, spans)
        s = cut
        while s < e and text[s].isspace():
            s += 1
    if s < e:
        _add_piece(text, s, e, spans)


def _add_piece(text: str, s: int, e: int, spans: list) -> None:
    if has_alnum(text, s, e):
        spans.append((s, e))
