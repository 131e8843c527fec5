"""Number extraction and normalisation.

A number mention is a run of digits with optional thousands separators and
decimals, an optional leading currency symbol, an optional trailing percent
sign (or the word ``percent``) and an optional scale word (``thousand``,
``million``, ``billion``, ``trillion``, ``bn``).  Its *value* is a canonical
decimal string, so that these compare equal:

==========================  ==========
mention                     value
==========================  ==========
``1,600`` / ``1600``        ``1600``
``3.0`` / ``3``             ``3``
``$23.70`` / ``23.7``       ``23.7``
``16%`` / ``16 percent``    ``16`` (unit ``%``)
``67 million``              ``67000000``
==========================  ==========

Times are one mention each, valued on a 24-hour clock: ``5 PM``, ``5:00 pm``
and ``17:00`` (or RAGTruth's ``17:0``) are all ``t17:00``; ``noon`` is
``t12:00`` and ``midnight`` ``t0:00``.  A context time also makes its hour
present as a plain number on both clocks (``17:0`` supports a bare ``5`` or
``17``).  Digits inside dates are separate mentions (``2022-01-09`` gives
2022, 1 and 9).  Spelled-out numbers (``three``)
are *not* extracted from outputs, because words like "one" are mostly not
quantities; :func:`context_number_values` does add them to the evidence
inventory, so an output that writes ``3`` where the context says ``three``
is not called unsupported.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import NamedTuple

from .._build import kernel

__all__ = ["NumberMention", "extract_numbers", "normalize_number", "context_number_values"]

_SCALES = {
    "thousand": Decimal(1_000),
    "million": Decimal(1_000_000),
    "mn": Decimal(1_000_000),
    "billion": Decimal(1_000_000_000),
    "bn": Decimal(1_000_000_000),
    "trillion": Decimal(1_000_000_000_000),
}

# The leading look-aheads only let the engine skip, fast, positions where no match can start
# (same matches; 1.3x and 2.7x faster on RAGTruth contexts).
_NUMBER_RE = re.compile(
    r"(?=[$\u20ac\u00a3\u00a5\s\d.])"
    r"(?<![\w.,])"
    r"(?P<cur>[$\u20ac\u00a3\u00a5])?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<pct>\s?%|\s?percent\b)?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn)\b)?",
    re.IGNORECASE,
)

_TIME_RE = re.compile(
    r"(?=[0-9nNmM])"
    r"(?:(?<![\w.,:])(?P<h>\d{1,2})(?::(?P<m>\d{1,2}))?\s?(?P<ap>[ap]\.?\s?m\b\.?)"
    r"|(?<![\w.,:])(?P<h24>\d{1,2}):(?P<m24>\d{1,2})(?![\d:])"
    r"|\b(?P<word>noon|midnight)\b)",
    re.IGNORECASE,
)


def _time_value(m) -> tuple[str, int] | None:
    """``("tH:MM", H)`` for a time match, or None when out of range."""
    if m.group("word"):
        h, mi = (12, 0) if m.group("word").lower() == "noon" else (0, 0)
    elif m.group("ap"):
        h, mi = int(m.group("h")), int(m.group("m") or 0)
        if not 1 <= h <= 12:
            return None
        pm = m.group("ap").lower().startswith("p")
        h = (h % 12) + (12 if pm else 0)
    else:
        h, mi = int(m.group("h24")), int(m.group("m24"))
    if h > 24 or mi > 59:
        return None
    return f"t{h}:{mi:02d}", h


_WORD_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_WORD_NUMBERS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60",
                      "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100",
                      "dozen": "12", "half": "0.5"})
_TOKEN_RE = re.compile(r"[^\W_]+")
_WORD_KEYS = frozenset(_WORD_NUMBERS)


class NumberMention(NamedTuple):
    """A number found in text.

    Attributes
    ----------
    start, end : int
        Character offsets of the whole mention (currency to scale word).
    text : str
        The mention as written.
    value : str
        Canonical decimal value, scale applied (see module docstring).
    raw_value : str
        Canonical value of the digits alone, scale not applied.
    unit : str
        ``"%"``, a currency symbol, ``"time"``, or ``""``.
    """

    start: int
    end: int
    text: str
    value: str
    raw_value: str
    unit: str


def normalize_number(digits: str, scale: str | None = None) -> str:
    """Canonical decimal string for ``digits`` (commas allowed) times ``scale``.

    Examples
    --------
    >>> normalize_number("1,600"), normalize_number("3.0"), normalize_number("23.70")
    ('1600', '3', '23.7')
    >>> normalize_number("67", "million")
    '67000000'
    >>> len(normalize_number("0" + "7" * 5000))  # no int(): any number of digits, linear time
    5000
    """
    if not scale and digits.isdigit():
        # what str(int(digits)) gives, without int()'s 4,300-digit limit and quadratic cost
        if not digits.isascii():
            digits = "".join(str(unicodedata.decimal(c)) for c in digits)
        return digits.lstrip("0") or "0"
    try:
        d = Decimal(digits.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the regex only passes digits
        return digits
    if scale:
        d *= _SCALES[scale.lower()]
    d = d.normalize()
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s or "0"


def extract_numbers(text: str) -> list[NumberMention]:
    """Every number mention in ``text``, in order.

    Examples
    --------
    >>> [(m.value, m.unit) for m in extract_numbers("It costs $23.70, up 16% from 1,600.")]
    [('23.7', '$'), ('16', '%'), ('1600', '')]
    """
    if len(text) <= _CACHED_CHARS:
        return list(_numbers_cached(text))
    return _numbers(text)


_CACHED_CHARS = 2000
"""Texts up to this length have their mentions kept (a claim's are asked for by the engine and the checks)."""


@lru_cache(maxsize=1024)
def _numbers_cached(text: str) -> tuple:
    return tuple(_numbers(text))


_DIGIT_RE = re.compile(r"\d")
_TIME_WORD_RE = re.compile(r"noon|midnight", re.IGNORECASE)
_FLAGS = kernel("evqual.text._scan", "number_flags")


def _number_flags(text: str) -> int:
    """Which of the two patterns can match in ``text``: ``1`` :data:`_NUMBER_RE` (every number has a digit),
    ``2`` :data:`_TIME_RE` (every time has a digit followed by ``:`` and a digit or by an optional white space and
    "a"/"p", or the word "noon" or "midnight"), ``3`` both, ``0`` neither (most sentences).  The compiled
    test (``evqual/text/_scan.pyx``) looks for exactly that; without it a digit or either word lets both scans
    run.  Either way a pattern is skipped only where it cannot match, and costs a fraction of the scans."""
    if _FLAGS is not None:
        return _FLAGS(text)
    if _DIGIT_RE.search(text) is not None:
        return 3
    if text.isascii():  # (ASCII: lower-casing is one letter for one, as re's ignored case is)
        low = text.lower()
        return 2 if "noon" in low or "midnight" in low else 0
    return 2 if _TIME_WORD_RE.search(text) is not None else 0


_NUMBER_REACH = 3
"""The furthest a match of :data:`_NUMBER_RE` starts before its first digit: a currency sign, a space and a
decimal point ("$ .5")."""


def _number_matches(text: str) -> list:
    """``list(_NUMBER_RE.finditer(text))``, trying the pattern only where a match can start: at most
    :data:`_NUMBER_REACH` characters before a digit (every match holds one).  ``finditer`` tries every
    position, and every white space passes the pattern's first test: most of the cost of a long passage
    with few numbers.  The leftmost match from a position is the first of these tries that matches, so the
    matches are the same (``tests/test_fastpaths.py`` holds the two equal on generated texts)."""
    out = []
    pos = 0
    match = _NUMBER_RE.match
    digit = _DIGIT_RE.search
    while True:
        d = digit(text, pos)
        if d is None:
            return out
        at = d.start()
        m = None
        s = at - _NUMBER_REACH if at - _NUMBER_REACH > pos else pos
        while s <= at:
            m = match(text, s)
            if m is not None:
                break
            s += 1
        if m is None:
            pos = at + 1
        else:
            out.append(m)
            pos = m.end()


def _numbers(text: str, extents: list | None = None) -> list[NumberMention]:
    """The mentions of ``text``; ``extents``, when given, gets the span of every match of either pattern, kept
    or not (what a window's edge must not cut, :meth:`evqual.text.TextWords.numbers_in`)."""
    flags = _number_flags(text)
    if not flags:
        return []
    out = []
    taken = []
    for m in _TIME_RE.finditer(text) if flags & 2 else ():
        if extents is not None:
            extents.append(m.span())
        tv = _time_value(m)
        if tv is None:
            continue
        end = m.end()
        while end > m.start() and text[end - 1] in " .":
            end -= 1
        out.append(NumberMention(m.start(), end, text[m.start():end], tv[0], str(tv[1]), "time"))
        taken.append((m.start(), m.end()))
    for m in _number_matches(text) if flags & 1 else ():
        if extents is not None:
            extents.append(m.span())
        if taken and any(s <= m.start("num") < e for s, e in taken):
            continue
        num = m.group("num")
        scale = m.group("scale")
        unit = "%" if m.group("pct") else (m.group("cur") or "")
        end = m.end()
        # the regex may swallow a trailing space before a scale that did not match
        while end > m.start() and text[end - 1].isspace():
            end -= 1
        # without a currency sign the optional space before the digits is not part of the mention
        begin = m.start() if m.group("cur") else m.start("num")
        out.append(
            NumberMention(
                start=begin,
                end=end,
                text=text[begin:end],
                value=normalize_number(num, scale),
                raw_value=normalize_number(num),
                unit=unit,
            )
        )
    if taken:
        out.sort(key=lambda mention: mention.start)
    return out


def context_number_values(text: str, tokens=None) -> set[str]:
    """Values that count as *present* in an evidence text.

    Contains each mention's scaled and unscaled value plus spelled-out
    numbers from "zero" to "twenty", the tens, "hundred", "dozen", "half".
    ``tokens`` (the text's lower-cased tokens, all of them) saves a pass.

    Examples
    --------
    >>> sorted(context_number_values("three of 67 million"))
    ['3', '67', '67000000']
    """
    values: set[str] = set()
    flags = _number_flags(text)
    for m in _TIME_RE.finditer(text) if flags & 2 else ():
        tv = _time_value(m)
        if tv is not None:
            h = tv[1]
            values.update((tv[0], str(h), str(h % 12 or 12)))
    for m in _number_matches(text) if flags & 1 else ():
        num, scale = m.group("num"), m.group("scale")
        raw = normalize_number(num)
        values.add(raw)
        if scale:
            values.add(normalize_number(num, scale))
    if tokens is None:
        tokens = _TOKEN_RE.findall(text.lower())
    words = _WORD_NUMBERS
    values.update(words[t] for t in _WORD_KEYS.intersection(tokens))
    return values
