"""Reading a span of text into *items*: what the engine compares between a claim and its evidence.

An item is a key and a character span.  Keys:

=============  ===================================================================
``w:<stem>``   a content word: Snowball stem, a listed synonym read as its group's
               first word (``synonyms.tsv``)
``n:<word>``   a name: a capitalised word that does not start the sentence (or that
               does and is followed by another capitalised word), lower-cased
``v:<key>``    a value (:func:`evqual.evidence.read_values`: numbers with units,
               dates, durations, rates)
``L:<c>:<s>``  a word of logic class ``c`` and sense ``s`` (``logic.tsv``), plus
               superlatives (``-est``) as ``L:comparison:superlative``
=============  ===================================================================

Words inside a value or a logic phrase are not also content words; stop
words are content words only when the lexicon gives them a sense.

>>> r = read_span("Lake Orva lies just outside the park, 6 km south of Tennby.")
>>> [k for k in r.keys]  # doctest: +NORMALIZE_WHITESPACE
['n:lake', 'n:orva', 'w:lie', 'L:quantity:only', 'L:direction:out', 'w:park', 'v:qty:length:6000',
 'L:direction:south', 'n:tennby']
"""

from __future__ import annotations

import re
from bisect import bisect_left
from operator import itemgetter
from typing import NamedTuple

from ..text import STOP_WORDS, has_camel_case, word_spans
from ._lexicon import _STEMS, MEMO_MAX_CHARS, logic_lexicon, stem, synonym_map
from ._values import read_values

__all__ = ["SpanReading", "read_span", "NEGATIVE_PREFIXES"]

_ORDER = itemgetter(0)  # an item's order: its token position, then its start (see read_span)
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
_CAMEL_PART_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
NEGATIVE_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")
_NOT_SUPERLATIVE = frozenset(
    "interest forest honest request suggest harvest contest protest invest arrest modest earnest manifest digest "
    "test west rest best nest guest quest chest pest vest zest crest lest latest conquest behest midwest "
    "northwest southwest unrest inquest bequest largest biggest greatest highest lowest least worst most".split())
# (best/most/least/worst/largest... are listed senses already or handled by the lexicon)


_NEGATED_SENSE = {("quantity", "at_least"): "at_most", ("quantity", "at_most"): "at_least",
                  ("comparison", "more"): "same", ("comparison", "less"): "same"}
"""A scalar sense under a negator just before it: what the pair means together (data)."""
_OVER_VALUES = frozenset({"quantity", "frequency", "comparison"})
"""Logic classes read where a value covers the words as well ("at least 5", "twice a week")."""


def _state_codes() -> dict:
    from ..text import US_STATES

    return {name.lower(): code.lower() for code, name in US_STATES.items() if " " not in name}


_STATE_CODES = _state_codes()
"""A US state's one-word name -> its postal code, lower case: a record's "state: VT" supports "Vermont"."""

_WORD_KEYS: dict = {}
"""A lower-case word -> its item key (``"w:"`` and its stem or synonym group), made once: the same str for every
reading, so that the engine's lookups hash it once (issue 41)."""
_NAME_KEYS: dict = {}
"""A lower-case name -> its item key (``"n:"`` and the word, or a state's postal code)."""
_KEYS_MAX = 200_000
"""The most words each of the two key tables holds; past it, a key is made for each reading."""


class SpanReading(NamedTuple):
    """Items of one span of text, in order of occurrence."""

    keys: tuple  # item keys
    spans: tuple  # (start, end) of each item, offsets into the text read
    negated: bool  # the span holds a negator (polarity:neg)
    n_tokens: int
    raws: tuple = ()  # per item: a value's number as written (14 for "fourteen hours"), else None


def _is_name(tok: str, i: int, toks, text: str) -> bool:
    if not tok[:1].isupper():
        return False
    if tok.isupper() and len(tok) > 1:
        return True
    # the first word of a sentence, a record value ("Sunday: Closed") or a quotation is capitalised anyway:
    # a name only when the next word is capitalised too ("Harbour Bank said")
    start = i == 0 or text[toks[i - 1][1]:toks[i][0]].strip()[-1:] in (":", '"', "\u201c", "(", "-", "\u2013")
    if not start:
        return True
    return i + 1 < len(toks) and toks[i + 1][2][:1].isupper()


def _span_tokens(text: str, start: int, end: int, words=None) -> tuple:
    """``(start, end, word)`` of the words of ``text[start:end]`` (a word takes an apostrophe and the lower-case
    letters after it); a camel-case record key ("OutdoorSeating") reads as its words.  Returns ``(words,
    whether no camel-case word was cut)``.  ``words``: the text's :class:`~evqual.text.TextWords`, read
    instead of scanning the span again where the span has no apostrophe (then no word takes one)."""
    if words is not None:
        toks = words.spans_in(start, end)
    else:
        toks = word_spans(text, start, end, apostrophe=True)
    if not has_camel_case(text, start, end):  # (two adjacent letters are in one token: no token has one either)
        return toks, True
    out = []
    for a, b, w in toks:
        if _CAMEL_RE.search(w):
            for sub in _CAMEL_PART_RE.finditer(w):
                out.append((a + sub.start(), a + sub.end(), sub.group()))
        else:
            out.append((a, b, w))
    return out, False


def _negators_before(negators_ending: dict, i: int) -> list:
    """The negators ending at most two tokens before token ``i`` (or at it), as ``(order, first token)``."""
    return sorted(x for j2 in range(i - 2, i + 1) for x in negators_ending.get(j2, ()))


def _any_consumed(negators: list, consumed: set) -> bool:
    """Whether one of ``negators`` (``(order, first token)``) has turned a scalar word already."""
    for _, i2 in negators:
        if i2 in consumed:
            return True
    return False


def read_span(text: str, start: int = 0, end: int | None = None, words=None) -> SpanReading:
    """Read ``text[start:end]`` (offsets of the result are into ``text``).

    ``words``: a :class:`~evqual.text.TextWords` of ``text``, whose words are taken instead of scanning the
    span again (the reading is the same; one of another text is not used)."""
    end = len(text) if end is None else end
    piece = text[start:end]
    apostrophe = "'" in piece  # (a word holds an apostrophe only where the text does)
    if words is not None and words.text is not text and words.text != text:
        words = None
    numbers = words.numbers_in(start, end) if words is not None else None  # (found once in the text)
    if apostrophe:
        words = None
    toks, plain = _span_tokens(text, start, end, words)
    lows = words.lows_in(start, end) if words is not None and plain else [t[2].lower() for t in toks]
    if apostrophe:
        for k, w in enumerate(lows):
            if "'" in w:
                lows[k] = "not" if w.endswith("n't") else w.split("'")[0]
                plain = False
    # plain: the words are the text's TOKEN_PATTERN words (no apostrophe joined, no camel case cut), which
    # the values reader may use instead of cutting the text again
    values = read_values(piece, words=lows if plain else None, numbers=numbers)
    items: list = []  # (order, key, start, end[, raw])
    # an item's order is its token position, then its start, as one int (position * m + start, start < m): a sort
    # by ints, where a key of two (a tuple made for each item) cost 7% of a reading (issue 41, session 14)
    m = len(text) + 1
    n = len(toks)
    covered = [False] * n
    # values
    value_starts = set()
    if values:
        tok_starts = [t[0] for t in toks]
        for v in values:
            a, b = v.start + start, v.end + start
            first = None
            # the tokens inside [a, b]: a run from the first starting at or after a (tokens are ordered and do not
            # overlap), found by bisection: linear in values plus tokens, not their product (issue 39)
            k = bisect_left(tok_starts, a)
            while k < n and toks[k][1] <= b:
                covered[k] = True
                if first is None:
                    first = k
                k += 1
            items.append(((first if first is not None else 0) * m + a, "v:" + v.key, a, b, v.raw))
            if first is not None:
                value_starts.add(first)
    # logic words; a negator just before a scalar word turns it ("not more than" is at most,
    # "did not cut" is unchanged) and is then not a negation of its own
    negated = False
    matches = logic_lexicon().match(lows)
    if matches:
        consumed = set()
        # negators by the token they end at, in the order of ``matches`` (a scalar word looks at the negators
        # ending at most two tokens before it: a lookup, not a pass over every match)
        negators_ending: dict = {}
        for order, (i2, j2, c2, _) in enumerate(matches):
            if c2 == "polarity":
                negators_ending.setdefault(j2, []).append((order, i2))
        scalars = []  # per match: whether a negator just before it turns its sense
        for i, j, cls, sense in matches:
            # a limit word ("over", "under", "more than") is scalar before a value (one starting at most two
            # tokens after it); a comparison word always
            scalar = (cls, sense) in _NEGATED_SENSE and (
                cls == "comparison" or j in value_starts or j + 1 in value_starts or j + 2 in value_starts)
            scalars.append(scalar)
            if scalar and negators_ending:
                for _, i2 in _negators_before(negators_ending, i):
                    if i2 not in consumed:
                        consumed.add(i2)
                        break
        for (i, j, cls, sense), scalar in zip(matches, scalars):
            if cls not in _OVER_VALUES and any(covered[i:j]):
                continue
            if cls == "polarity" and i in consumed:
                continue
            if scalar and consumed and _any_consumed(_negators_before(negators_ending, i), consumed):
                sense = _NEGATED_SENSE[(cls, sense)]
            items.append((i * m + toks[i][0], f"L:{cls}:{sense}", toks[i][0], toks[j - 1][1]))
            if cls == "polarity":
                negated = True
            if cls != "role":
                for k in range(i, j):
                    covered[k] = True
    syn_get = synonym_map().get
    stem_get = _STEMS.get
    stop = STOP_WORDS
    word_keys, name_keys = _WORD_KEYS, _NAME_KEYS
    for k in range(n):
        if covered[k]:
            continue
        a, b, tok = toks[k]
        low = lows[k]
        if tok[:1].isupper() and _is_name(tok, k, toks, text) and low not in stop:  # (a name is capitalised)
            key = name_keys.get(low)
            if key is None:
                key = "n:" + _STATE_CODES.get(low, low)
                if len(name_keys) < _KEYS_MAX and len(low) <= MEMO_MAX_CHARS:
                    name_keys[low] = key
            items.append((k * m + a, key, a, b))
            continue
        if low in stop or len(low) < 2:
            continue
        key = word_keys.get(low)
        if key is None:
            key = "w:" + (syn_get(low) or stem_get(low) or stem(low))
            if len(word_keys) < _KEYS_MAX and len(low) <= MEMO_MAX_CHARS:
                word_keys[low] = key
        items.append((k * m + a, key, a, b))
        if low.endswith("est") and len(low) > 5 and low not in _NOT_SUPERLATIVE:
            items.append((k * m + a, "L:comparison:superlative", a, b))
    items.sort(key=_ORDER)
    return SpanReading(tuple([t[1] for t in items]), tuple([(t[2], t[3]) for t in items]), negated, n,
                       tuple([t[4] if len(t) > 4 else None for t in items]))
