"""Values of a text: numbers with their units, number words, dates, durations and rates.

Each value gets a canonical *key*, so that different wordings of one value
compare equal and different values do not:

==================================  =========================
text                                key
==================================  =========================
``8`` / ``eight``                   ``num::8``
``$23.70`` / ``16%``                ``num:$:23.7`` / ``num:%:16``
``500 mg`` / ``0.5 g``              ``qty:mass:0.5`` (grams)
``5 km`` / ``5,000 metres``         ``qty:length:5000`` (metres)
``two weeks`` / ``14 days``         ``qty:time:14`` (days)
``weekly`` / ``once a week`` /      ``rate:0.143`` (times per day)
``every week`` / ``every 7 days``
``twice an hour`` / ``every 30      ``rate:48``
minutes``
``1911``                            ``year:1911``
``March`` / ``Tuesday``             ``month:3`` / ``weekday:2``
==================================  =========================

The unit and period tables are data (:data:`UNITS`, :data:`PERIODS`,
:data:`RATE_WORDS`); an unknown unit word leaves a plain number.

>>> [v.key for v in read_values("Take one tablet twice a day for two weeks, up to 500 mg.")]
['rate:2', 'qty:time:14', 'qty:mass:0.5']
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from typing import NamedTuple

from ..text import MONTHS, WEEKDAYS, extract_numbers, has_digit, word_spans

__all__ = ["Value", "read_values", "UNITS", "PERIODS", "RATE_WORDS", "COUNT_WORDS", "value_kind"]

PERIODS: dict[str, float] = {
    "second": 1 / 86400, "seconds": 1 / 86400, "minute": 1 / 1440, "minutes": 1 / 1440, "min": 1 / 1440,
    "mins": 1 / 1440, "hour": 1 / 24, "hours": 1 / 24, "hr": 1 / 24, "hrs": 1 / 24, "day": 1.0, "days": 1.0,
    "night": 1.0, "nights": 1.0, "morning": 1.0, "evening": 1.0, "week": 7.0, "weeks": 7.0, "fortnight": 14.0,
    "fortnights": 14.0, "month": 30.44, "months": 30.44, "quarter": 91.31, "quarters": 91.31,
    "year": 365.25, "years": 365.25, "decade": 3652.5, "decades": 3652.5, "century": 36525.0,
    "centuries": 36525.0, "weekday": 7 / 5, "weekdays": 7 / 5, "weekend": 7.0, "weekends": 7.0,
    "term": 91.31, "season": 91.31, "semester": 182.6,
}
"""Period words and their length in days."""

RATE_WORDS: dict[str, float] = {
    "hourly": 24.0, "daily": 1.0, "nightly": 1.0, "weekly": 1 / 7, "fortnightly": 1 / 14, "biweekly": 1 / 14,
    "monthly": 1 / 30.44, "bimonthly": 1 / 60.88, "quarterly": 1 / 91.31, "yearly": 1 / 365.25,
    "annually": 1 / 365.25, "annual": 1 / 365.25, "biannually": 2 / 365.25, "biannual": 2 / 365.25,
    "semiannually": 2 / 365.25, "semiannual": 2 / 365.25, "weekdays": 5 / 7,
}
"""Adverbs and adjectives of frequency with their rate in times per day."""

COUNT_WORDS: dict[str, float] = {"once": 1.0, "twice": 2.0, "thrice": 3.0}

_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                      "ninety": 90, "dozen": 12})
_TENS = {"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
_SCALE_WORDS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_ORDINALS = {"other": 2, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}

UNITS: dict[str, tuple[str, float]] = {
    # mass in grams
    "mg": ("mass", 1e-3), "milligram": ("mass", 1e-3), "milligrams": ("mass", 1e-3), "g": ("mass", 1.0),
    "gram": ("mass", 1.0), "grams": ("mass", 1.0), "kg": ("mass", 1e3), "kilogram": ("mass", 1e3),
    "kilograms": ("mass", 1e3), "kilo": ("mass", 1e3), "kilos": ("mass", 1e3), "mcg": ("mass", 1e-6),
    "microgram": ("mass", 1e-6), "micrograms": ("mass", 1e-6), "lb": ("mass", 453.592), "lbs": ("mass", 453.592),
    "pound": ("mass", 453.592), "pounds": ("mass", 453.592), "oz": ("mass", 28.3495), "ounce": ("mass", 28.3495),
    "ounces": ("mass", 28.3495), "tonne": ("mass", 1e6), "tonnes": ("mass", 1e6), "ton": ("mass", 907185.0),
    "tons": ("mass", 907185.0), "stone": ("mass", 6350.29),
    # length in metres
    "mm": ("length", 1e-3), "millimetre": ("length", 1e-3), "millimetres": ("length", 1e-3),
    "millimeter": ("length", 1e-3), "millimeters": ("length", 1e-3), "cm": ("length", 1e-2),
    "centimetre": ("length", 1e-2), "centimetres": ("length", 1e-2), "centimeter": ("length", 1e-2),
    "centimeters": ("length", 1e-2), "m": ("length", 1.0), "metre": ("length", 1.0), "metres": ("length", 1.0),
    "meter": ("length", 1.0), "meters": ("length", 1.0), "km": ("length", 1e3), "kilometre": ("length", 1e3),
    "kilometres": ("length", 1e3), "kilometer": ("length", 1e3), "kilometers": ("length", 1e3),
    "mile": ("length", 1609.34), "miles": ("length", 1609.34), "ft": ("length", 0.3048),
    "foot": ("length", 0.3048), "feet": ("length", 0.3048), "inch": ("length", 0.0254),
    "inches": ("length", 0.0254), "yard": ("length", 0.9144), "yards": ("length", 0.9144),
    # area in square metres
    "hectare": ("area", 1e4), "hectares": ("area", 1e4), "ha": ("area", 1e4), "acre": ("area", 4046.86),
    "acres": ("area", 4046.86), "m²": ("area", 1.0), "m2": ("area", 1.0), "km²": ("area", 1e6),
    "km2": ("area", 1e6),
    # volume in litres
    "ml": ("volume", 1e-3), "millilitre": ("volume", 1e-3), "millilitres": ("volume", 1e-3),
    "milliliter": ("volume", 1e-3), "milliliters": ("volume", 1e-3), "l": ("volume", 1.0),
    "litre": ("volume", 1.0), "litres": ("volume", 1.0), "liter": ("volume", 1.0), "liters": ("volume", 1.0),
    "gallon": ("volume", 3.785), "gallons": ("volume", 3.785), "pint": ("volume", 0.568),
    "pints": ("volume", 0.568),
    # power and energy
    "w": ("power", 1.0), "watt": ("power", 1.0), "watts": ("power", 1.0), "kw": ("power", 1e3),
    "kilowatt": ("power", 1e3), "kilowatts": ("power", 1e3), "mw": ("power", 1e6), "megawatt": ("power", 1e6),
    "megawatts": ("power", 1e6), "gw": ("power", 1e9), "gigawatt": ("power", 1e9), "gigawatts": ("power", 1e9),
    "kwh": ("energy", 1e3), "mwh": ("energy", 1e6), "gwh": ("energy", 1e9),
    # speed, temperature, sound, data
    "mph": ("speed", 0.44704), "kph": ("speed", 0.27778), "kmh": ("speed", 0.27778), "knots": ("speed", 0.51444),
    "db": ("sound", 1.0), "decibels": ("sound", 1.0), "gb": ("data", 1e9), "mb": ("data", 1e6),
    "tb": ("data", 1e12), "kb": ("data", 1e3),
    # shares of a whole
    "percent": ("share", 1.0), "per": ("share", 1.0), "percentage": ("share", 1.0),
    "points": ("points", 1.0), "basis": ("bp", 1.0),
    # currencies written as words (symbols are read with the number)
    "dollars": ("$", 1.0), "dollar": ("$", 1.0), "usd": ("$", 1.0), "euros": ("€", 1.0), "euro": ("€", 1.0),
    "eur": ("€", 1.0), "gbp": ("£", 1.0), "yen": ("¥", 1.0), "pence": ("£", 0.01), "p": ("£", 0.01),
    "cents": ("$", 0.01),
}
"""Unit words: dimension and factor to the dimension's base unit (data; an unknown word is no unit).
Time units are in :data:`PERIODS` (durations in days)."""

_MONTH = {m: i + 1 for i, m in enumerate(MONTHS)}
_MONTH.update({m[:3]: i + 1 for i, m in enumerate(MONTHS) if m != "may"})
_MONTH["sept"] = 9
_WEEKDAY = {d: i + 1 for i, d in enumerate(WEEKDAYS)}
_WEEKDAY.update({d + "s": i + 1 for i, d in enumerate(WEEKDAYS)})
_SYMBOLS = "%$€£¥²"  # a word each (² is a digit to ``re``: "km²" is one word)
_TOKEN_RE = re.compile(r"[^\W_]+|[" + _SYMBOLS + "]")
_NOON_RE = re.compile(r"noon|midnight", re.IGNORECASE)  # ... or the time pattern's two words
_TRIGGERS = frozenset(_NUMBER_WORDS) | frozenset(COUNT_WORDS) | frozenset(RATE_WORDS) | frozenset(_MONTH) | \
    frozenset(_WEEKDAY) | {"every", "each", "fortnight", "fortnights", "half"}
"""The words a value can start from without a digit (:func:`read_values`' rules, in order)."""
_FREQ_LEAD = {"a", "an", "per", "each", "every"}
_CLOCK_RE = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2}):(\d{2})(?![\d:])")


class Value(NamedTuple):
    """A value read from text: canonical ``key``, its ``kind``, character span and the number as written
    (``raw``: 14 for "fourteen hours" and for "$14"; ``None`` for a date word, a time or a rate)."""

    key: str
    kind: str
    start: int
    end: int
    raw: float | None = None


def value_kind(key: str) -> str:
    """The kind of a value key, with the dimension of quantities: ``"num:$"``, ``"qty:time"``, ``"year"`` ...

    >>> value_kind("qty:time:14"), value_kind("num:%:16"), value_kind("rate:2")
    ('qty:time', 'num:%', 'rate')
    """
    parts = key.split(":")
    return ":".join(parts[:2]) if parts[0] in ("qty", "num") else parts[0]


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return "0"
    return f"{float(f'{x:.4g}'):g}"


def _tokens(text: str):
    return [(a, b, w.lower(), w) for a, b, w in word_spans(text, symbols=_SYMBOLS)]


def _word_number(toks, i):
    """``(value, next index)`` of a spelled number starting at token ``i`` ("twenty one", "two million",
    "one hundred and twenty")."""
    n = len(toks)

    def below_100(j):
        w = toks[j][2] if j < n else ""
        if w not in _NUMBER_WORDS:
            return None
        v, j = float(_NUMBER_WORDS[w]), j + 1
        if w in _TENS and j < n and toks[j][2] in _NUMBER_WORDS and _NUMBER_WORDS[toks[j][2]] < 10:
            v += _NUMBER_WORDS[toks[j][2]]
            j += 1
        return v, j

    got = below_100(i)
    if got is None:
        return None
    val, j = got
    if j < n and toks[j][2] == "hundred":
        val *= 100
        j += 1
        k = j + 1 if j < n and toks[j][2] == "and" else j
        rest = below_100(k)
        if rest is not None:
            val += rest[0]
            j = rest[1]
    if j < n and toks[j][2] in _SCALE_WORDS and toks[j][2] != "hundred":
        val *= _SCALE_WORDS[toks[j][2]]
        j += 1
    return val, j


def _may_hold_value(text: str, words=None) -> bool:
    """Whether a rule of :func:`read_values` can start in ``text``: a digit, "noon" or "midnight", or a word of
    :data:`_TRIGGERS`.  ``words``: the lower-cased words of ``text`` as :data:`evqual.text.TOKEN_PATTERN` cuts
    them, when the caller has them (the symbols of ``_TOKEN_RE`` are no trigger)."""
    if has_digit(text):  # what the number, clock and time patterns need ...
        return True
    if text.isascii():  # (ASCII: lower-casing is one letter for one, as re's ignored case is)
        low = text.lower()
        if "noon" in low or "midnight" in low:
            return True
        return not _TRIGGERS.isdisjoint(words if words is not None else _TOKEN_RE.findall(low))
    if _NOON_RE.search(text):
        return True
    return not _TRIGGERS.isdisjoint(words if words is not None else map(str.lower, _TOKEN_RE.findall(text)))


def read_values(text: str, *, words=None, numbers=None) -> list[Value]:
    """Every value of ``text`` in order of position (see the module docstring for keys).

    ``words``: the lower-cased words of ``text`` as :data:`evqual.text.TOKEN_PATTERN` cuts them, if the
    caller has them already (they only decide, faster, that a text holds no value).  ``numbers``:
    :func:`~evqual.text.extract_numbers` of ``text``, if the caller has it (from
    :meth:`evqual.text.TextWords.numbers_in`, where a text's mentions are found once)."""
    if not _may_hold_value(text, words):
        return []  # no digit and no word any rule below starts from: no value (most sentences)
    toks = _tokens(text)
    if not toks:
        return []
    n = len(toks)
    starts = [t[0] for t in toks]
    # numbers: digits (with currency, %, scale) and number words, as (value, unit, first tok, end tok)
    by_start = {s: i for i, s in enumerate(starts)}
    nums = []  # (tok_i, tok_j, value float or None, key of the plain number)
    taken = [False] * n
    for m in _CLOCK_RE.finditer(text) if ":" in text else ():  # (a clock time has two colons)
        i = by_start.get(m.start(), -1)
        if i < 0:
            continue
        j = i
        while j < n and toks[j][0] < m.end():
            taken[j] = True
            j += 1
        nums.append((i, j, None, "clock:" + ":".join([str(int(g)) for g in m.groups()]), "clock"))
    for m in extract_numbers(text) if numbers is None else numbers:
        first = bisect_left(starts, m.start)  # the tokens starting inside the mention: first .. past - 1
        if any(taken[first:bisect_left(starts, m.end)]):
            continue
        i = by_start.get(m.start, -1)
        if i < 0:
            # the mention starts with a currency sign or inside a token
            if first == n:
                continue
            i = first
        j = i
        while j < n and toks[j][0] < m.end:
            j += 1
        try:
            v = float(m.value) if m.unit != "time" else None
        except ValueError:
            v = None
        key = f"time:{m.value[1:]}" if m.unit == "time" else f"num:{m.unit}:{m.value}"
        nums.append((i, j, v, key, m.unit))
        for k in range(i, j):
            taken[k] = True
    i = 0
    while i < n:
        if not taken[i] and toks[i][2] in _NUMBER_WORDS and not (
                toks[i][2] == "one" and not _unit_after(toks, i + 1)
                and not (i + 1 < n and toks[i + 1][2] in _SCALE_WORDS)):
            got = _word_number(toks, i)
            if got is not None:
                v, j = got
                nums.append((i, j, v, f"num::{_fmt(v)}", ""))
                for k in range(i, j):
                    taken[k] = True
                i = j
                continue
        i += 1
    nums.sort()
    out: list[Value] = []
    used = [False] * n

    num_at = {a: (a, b, v, key, unit) for a, b, v, key, unit in nums}
    i = 0
    while i < n:
        w = toks[i][2]
        # rates: "every (other|N) PERIOD", "COUNT (a|per|each|every) PERIOD", "N times (a|per) PERIOD", adverbs
        if w in ("every", "each") and i + 1 < n:
            j, mult = i + 1, 1.0
            if toks[j][2] in _ORDINALS and j + 1 < n and toks[j + 1][2] in PERIODS:
                mult, j = float(_ORDINALS[toks[j][2]]), j + 1
            elif j in num_at and num_at[j][2] is not None and num_at[j][1] < n and toks[num_at[j][1]][2] in PERIODS:
                a, b, v, _, _ = num_at[j]
                # "every 5 to 10 minutes": the middle of the range
                mult, j = v, b
            elif (j + 2 < n and j in num_at and num_at[j][2] is not None and toks[num_at[j][1]][2] in ("to", "or")
                  and num_at[j][1] + 1 in num_at):
                a, b, v, _, _ = num_at[j]
                a2, b2, v2, _, _ = num_at[num_at[j][1] + 1]
                if b2 < n and toks[b2][2] in PERIODS and v2 is not None:
                    mult, j = (v + v2) / 2.0, b2
            if j < n and toks[j][2] in PERIODS and mult > 0:
                _emit(out, used, toks, f"rate:{_fmt(1.0 / (mult * PERIODS[toks[j][2]]))}", "rate", i, j + 1)
                i = j + 1
                continue
        count, j = None, i
        if w in COUNT_WORDS:
            count, j = COUNT_WORDS[w], i + 1
        elif i in num_at and num_at[i][2] is not None and num_at[i][1] < n and toks[num_at[i][1]][2] == "times":
            count, j = num_at[i][2], num_at[i][1] + 1
        if count is not None:
            if j + 1 < n and toks[j][2] in _FREQ_LEAD and toks[j + 1][2] in PERIODS:
                _emit(out, used, toks, f"rate:{_fmt(count / PERIODS[toks[j + 1][2]])}", "rate", i, j + 2)
                i = j + 2
                continue
            if j < n and toks[j][2] in RATE_WORDS:
                _emit(out, used, toks, f"rate:{_fmt(count * RATE_WORDS[toks[j][2]])}", "rate", i, j + 1)
                i = j + 1
                continue
        if w in RATE_WORDS and not (w == "weekdays"):
            _emit(out, used, toks, f"rate:{_fmt(RATE_WORDS[w])}", "rate", i, i + 1)
            i += 1
            continue
        if i in num_at:
            a, b, v, key, unit = num_at[i]
            nxt = toks[b][2] if b < n else ""
            if v is not None and nxt in PERIODS and not unit:
                _emit(out, used, toks, f"qty:time:{_fmt(v * PERIODS[nxt])}", "qty", a, b + 1, v)
                i = b + 1
                continue
            if v is not None and nxt in UNITS and not unit:
                dim, factor = UNITS[nxt]
                if dim == "share":
                    _emit(out, used, toks, f"num:%:{_fmt(v)}", "num", a, b + 1, v)
                elif dim in ("$", "€", "£", "¥"):
                    _emit(out, used, toks, f"num:{dim}:{_fmt(v * factor)}", "num", a, b + 1, v)
                else:
                    _emit(out, used, toks, f"qty:{dim}:{_fmt(v * factor)}", "qty", a, b + 1, v)
                i = b + 1
                continue
            if v is not None and not unit and "." not in key and 1000 <= v <= 2100 and len(toks[a][2]) == 4:
                _emit(out, used, toks, f"year:{int(v)}", "year", a, b, v)
            else:
                kind = key.split(":", 1)[0]
                _emit(out, used, toks, key if kind in ("time", "num", "clock") else f"num:{unit}:{_fmt(v)}",
                     kind if kind in ("time", "clock") else "num", a, b, v)
            i = b
            continue
        if w in ("fortnight", "fortnights") and not used[i]:
            _emit(out, used, toks, "qty:time:14", "qty", i, i + 1)
            i += 1
            continue
        if w == "half" and i + 2 < n and toks[i + 1][2] in ("an", "a") and toks[i + 2][2] in PERIODS:
            _emit(out, used, toks, f"qty:time:{_fmt(0.5 * PERIODS[toks[i + 2][2]])}", "qty", i, i + 3)
            i += 3
            continue
        if w in _MONTH and (w != "may" or toks[i][3][0].isupper()) and (len(w) > 3 or toks[i][3][0].isupper()):
            _emit(out, used, toks, f"month:{_MONTH[w]}", "month", i, i + 1)
        elif w in _WEEKDAY:
            _emit(out, used, toks, f"weekday:{_WEEKDAY[w]}", "weekday", i, i + 1)
        i += 1
    return out


def _emit(out: list, used: list, toks, key: str, kind: str, i: int, j: int, raw=None) -> None:
    """Add the value of tokens ``i`` to ``j - 1`` to ``out`` and mark them used."""
    out.append(Value(key, kind, toks[i][0], toks[j - 1][1], raw))
    for k in range(i, j):
        used[k] = True


def _unit_after(toks, j) -> bool:
    return j < len(toks) and (toks[j][2] in PERIODS or toks[j][2] in UNITS or toks[j][2] == "times")
