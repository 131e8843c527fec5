"""Family ``check``: claims aligned to their evidence, and high-precision contradiction checks.

Each output sentence is cut into **claim units** (clauses and coordinated
predicates: :func:`split_claims`, backend ``"rules"``, or the dependency parse
of :class:`evqual.text.SpacyClaimSplitter` when the featurizer's
``entity_backend`` is ``"spacy"``); each context chunk into sentences.  A
checked item of a claim (a number, a date word, a name, a word with an
antonym, a quantifier, a negated predicate, a record field) is **aligned** to
the evidence by its *slot*: the Snowball stems of the content words around it
(:data:`WINDOW` words each side; on the right inside its claim unit, on the
left reaching back into its sentence, so that a coordinated predicate keeps
its subject; inside its sentence for the evidence).  Evidence items of the same class are scored by how many slot
stems they share with the claim item, so the check compares a claim with the
evidence that talks about the same thing, not with the whole context: a wrong
"32 hours" does not pass because 32 appears in another passage about
something else, and "opened in 1986" is caught against "opened in 1911" even
when 1986 appears in the same sentence about another event.

A check **fires** when the best-aligned evidence item that *disagrees* with the
claim item shares at least :data:`MIN_SLOT` slot stems (one for a field line
``label: value`` of a record) and more than any evidence item that *agrees*.

===============  ===================================================================
check            the claim item and the aligned evidence item that disagrees
===============  ===================================================================
``number``       two numbers of the same kind (plain, %, currency, time) and
                 compatible unit words, with different values (approximate
                 wording such as "about" allows 10%)
``unit``         the same number with a different unit of the same dimension
                 ("500 mg" vs "500 g", "25 percentage points" vs "25 basis points")
                 or another currency
``date``         two years, months or weekdays that differ
``negation``     the same predicate word, negated on one side only ("did not
                 approve" vs "approved"; cues: not, no, never, without, failed ...)
``antonym``      a word against its opposite (:data:`evqual.text.ANTONYM_PAIRS`),
                 or a quantity turned the other way ("dropped 4.2%" against
                 "rose 4.2%", "10% faster" against "10% slower")
``entity``       two names (capitalised words; a sentence's first word only when
                 written with an inner capital) that differ
``role``         two names of the claim in the reverse order in one evidence
                 sentence around a shared predicate word (a passive "by" on one
                 side only is not a swap); or two neighbouring names with a
                 predicate between them in the other order in the evidence
                 sentence that shares most of the claim's words, the predicate
                 paraphrased ("Pixelgate Labs sued Orbis Devices" against "Orbis
                 Devices filed a lawsuit against Pixelgate Labs")
``quantifier``   two quantifier or modal words of the same dimension and another
                 scope ("all" vs "some", "always" vs "usually", "must" vs "may",
                 "at least" vs "up to", "over 18" vs "between 12 and 18"), next
                 to the same word or in a slot of three shared words
``field``        a yes/no field of a record (a ``label: value`` line, Data2txt)
                 stated the other way in the claim that mentions it: negated
                 within three words before the mention when the record says
                 true, or not negated when it says false/no/none
``displaced``    a name the context has, put where another name stands: the
                 claim's words sit together in one evidence sentence beside
                 another name sharing its slot, while the sentences holding the
                 claim's name (and their neighbours) share at most one of them
                 ("The architect David Mitchell designed ..." against "designed
                 by architect Joseph Reed" and, elsewhere, "the builder David
                 Mitchell")
``unsupported``  a claim unit most of whose content words (at least
                 :data:`UNSUPPORTED_MIN` of them, and at least
                 :data:`UNSUPPORTED_SHARE` of all) appear nowhere in the context
                 or the query: an added claim ("Investors were also unsettled by
                 the surprise resignation of its chief financial officer.")
===============  ===================================================================

Quantities carry the period they are given per ("1.2 g of ibuprofen per day",
"4,000 cubic metres a year", "1,200 mg in 24 hours"): one value per two periods
is a ``unit`` finding.  Durations convert ("two and a half years" is "30
months"), "the 12th century" is "the 1100s", and the values a claim unit
states anchor it: an evidence sentence stating two or more of them is aligned
with it even when their words differ.

Numbers, names and dates of the query are not checked as claims.

What the checks leave alone (each rule has a regression test in
``tests/test_checks.py``): list markers and references ("2. Preheat",
"1 Fill ... 2  Tie", "steps 4 and 5", "Passage 2"), designations ("F-16",
"COVID-19"), chapter and verse ("John 16:13"), the parts of a timestamp
("2019-05-22 14:03:00"), fractions, money against plain numbers; a time
without a.m./p.m. against the same time in the other half of the day; an
evidence value the answer's sentence also states ("one or two tablets ..., but
no more than eight"); a predicate inside a condition ("if you don't have
seaweed") on either side, a double negation ("cannot X without Y"), "free"
other than in "X-free"; capitals placed by position (a sentence or list-item
start, a title-case headline), an acronym against a spelled-out name ("FAA",
"Federal Aviation Administration"), a one-letter misspelling ("Parkistan").
A claim unit's slot borrows words from the clause before it but not across a
semicolon, and its nearest neighbour is always a word of its own unit.

Examples
--------
>>> from evqual.features._checks import EvidenceUnits, claim_checks
>>> ev = EvidenceUnits(["The bridge opened in 1932 after six years of work."])
>>> out = "The bridge opened in 1935."
>>> sent, found = claim_checks(out, [(0, len(out))], ev)
>>> found[0]
[Finding('date', '1935' vs '1932')]
"""

from __future__ import annotations

import bisect
import math
import re
from functools import lru_cache

import numpy as np

from .._deadline import check_deadline
from .._gcpause import untrack_atomic, untrack_settled
from ..text import (
    ANTONYM_PAIRS,
    MONTHS,
    NUMBER_WORDS,
    STOP_WORDS,
    WEEKDAYS,
    antonyms_of,
    english_stemmer,
    char_positions,
    extract_numbers,
    has_digit,
    sentence_claims,
    split_sentences,
    word_spans,
)
from ._reduce import _MAX, _SUM

__all__ = ["CHECKS", "CLAIM_BACKEND", "EvidenceUnits", "Finding", "MIN_SLOT", "UNSUPPORTED_MIN",
           "UNSUPPORTED_SHARE", "WINDOW", "checks_response", "claim_checks", "split_claims", "stem"]

CHECKS = ("number", "unit", "date", "negation", "antonym", "entity", "role", "quantifier", "field", "displaced",
          "unsupported")
"""The checks, in reporting order."""

CLAIM_BACKEND = "rules"
WINDOW = 4
MIN_SLOT = 2
LARGE_CONTEXT = 512
"""Evidence sentences above which a claim is compared with its :data:`MAX_CANDIDATES` best candidate sentences
only (RAGTruth's largest context has far fewer: below it, every sentence sharing words is compared)."""
MAX_CANDIDATES = 32
"""Candidate evidence sentences per claim in a large context."""
MAX_PLACING_STEMS = 48
"""Stems of a claim that choose its candidate sentences in a large context, at most (the rarest)."""
MAX_ITEM_CANDIDATES = 24
"""Evidence items a claim's item is compared with in a large context, at most."""
LARGE_CONTEXT_CHARS = 100_000
"""Characters of context above which it is large too, however few its sentences (issue 39: 300 run-on
'sentences' of 2,000 characters each made every claim compare with all of them; RAGTruth's largest context
has 10,344 characters, the transfer sets' 11,359)."""
_DISPLACED_MIN = 3
UNSUPPORTED_MIN = 5
"""Content words of a claim unit the context and query lack, at the least, for an ``unsupported`` finding."""
UNSUPPORTED_SHARE = 0.7
"""Their share of the unit's content words, at the least."""
_ORDER_GAP = 12
_LIST_END = re.compile(r"[;.]|,\s+(?:and|but|while|although|though|yet|so)\b", re.IGNORECASE)
"""Where a negated list ends: "there is no WiFi or outdoor seating, and it is good for kids"."""
_SCOPE_SLOT = 3
_CONNECTIVES = frozenset({"after", "before", "when", "while", "because", "since", "although", "though", "that",
                          "which", "who", "whom", "whose", "if", "unless", "until", "whereas", "where"})
_CLAUSE_TURN = re.compile(r"[;:]|,\s+(?:and|but|or|while|whereas|although|though|which|who|after|before|when|"
                          r"so|yet|\w+ing)\b", re.IGNORECASE)

_WORD_RE = re.compile(r"[^\W_]+")
_FIELD_RE = re.compile(r"[^:.!?\n]{1,80}: \S")
_NEG_CUES = frozenset({"no", "not", "never", "without", "lacks", "lack", "lacking", "neither", "nor", "cannot",
                       "none", "nobody", "nothing", "unable", "failed", "fails", "fail", "refused", "refuses",
                       "denied", "denies", "declined", "t", "nt", "avoid", "avoids", "avoided", "avoiding",
                       "prevent", "prevents", "prevented", "preventing", "failing", "refusing", "declining",
                       "lacked", "avoidance"})
_TWO_WORD_CUES = frozenset({("than", "rather"), ("of", "instead")})
"""Cues of two words, as (word, word before): "rather than crushed" and "instead of a cyberattack" negate."""
_HEDGES = frozenset({"if", "unless", "whether", "whereas", "while", "although", "though", "except"})
_CONDITIONALS = frozenset({"if", "unless", "whether", "except"})
_CLAUSE_BREAK_CHARS = ",;:()\n.!?\u2013\u2014"
_NEG_REACH = 3
_MONTHS = frozenset(MONTHS) - {"may", "march"}
_WEEKDAYS = frozenset(WEEKDAYS)
_CALENDAR_WORDS = frozenset(MONTHS) | _WEEKDAYS
_SMALL = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
          "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_MULT = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD_VALUES = {w: str(v) for w, v in NUMBER_WORDS.items() if w not in ("one", "half", "hundred")}
_WORD_VALUES.update({w: str(v) for w, v in _SMALL.items() if w != "one"})
_WORD_VALUES.update({"twice": "2", "dozen": "12"})
_APPROX = frozenset({"about", "around", "approximately", "roughly", "nearly", "almost", "some", "over", "under",
                     "more", "less", "than", "circa", "estimated", "just", "close"})
_UNITS = {
    "mg": "mg", "milligram": "mg", "milligrams": "mg", "g": "g", "gram": "g", "grams": "g", "kg": "kg",
    "kilogram": "kg", "kilograms": "kg", "mcg": "mcg", "microgram": "mcg", "micrograms": "mcg", "ml": "ml",
    "millilitre": "ml", "milliliter": "ml", "millilitres": "ml", "milliliters": "ml", "litre": "l",
    "liter": "l", "litres": "l", "liters": "l", "km": "km", "kilometre": "km", "kilometer": "km",
    "kilometres": "km", "kilometers": "km", "metre": "m", "meter": "m", "metres": "m", "meters": "m",
    "cm": "cm", "centimetres": "cm", "centimeters": "cm", "mm": "mm", "millimetres": "mm", "millimeters": "mm",
    "mile": "mile", "miles": "mile", "ft": "ft", "feet": "ft", "foot": "ft", "inch": "in", "inches": "in",
    "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb", "ounce": "oz", "ounces": "oz", "oz": "oz",
    "tonne": "t", "tonnes": "t", "tons": "t", "ton": "t",
    "second": "s", "seconds": "s", "minute": "min", "minutes": "min", "min": "min", "mins": "min",
    "hour": "h", "hours": "h", "hr": "h", "hrs": "h", "day": "day", "days": "day", "week": "week",
    "weeks": "week", "month": "month", "months": "month", "year": "year", "years": "year", "decade": "decade",
    "decades": "decade", "percent": "%", "per": None, "points": "pt", "point": "pt", "percentage": "pt",
    "basis": "bp", "bps": "bp", "kwh": "kwh", "mwh": "mwh", "mw": "mw", "gw": "gw", "kw": "kw",
    "kilowatts": "kw", "kilowatt": "kw", "megawatts": "mw", "megawatt": "mw", "watts": "w", "watt": "w", "w": "w",
    "acre": "acre", "acres": "acre", "hectare": "ha", "hectares": "ha", "mph": "mph", "kmh": "kmh",
    "celsius": "c", "fahrenheit": "f", "tablets": "tablet", "tablet": "tablet", "capsules": "capsule",
    "capsule": "capsule", "doses": "dose", "dose": "dose", "gb": "gb", "tb": "tb", "mb": "mb", "pct": "%",
}
_BASE = {"mg": 1e-3, "g": 1.0, "kg": 1e3, "mcg": 1e-6, "lb": 453.592, "oz": 28.3495, "t": 1e6, "ml": 1e-3,
         "l": 1.0, "km": 1e3, "m": 1.0, "cm": 1e-2, "mm": 1e-3, "mile": 1609.34, "ft": 0.3048, "in": 0.0254,
         "s": 1.0, "min": 60.0, "h": 3600.0, "day": 86400.0, "week": 604800.0, "month": 2629800.0,
         "year": 31557600.0, "decade": 315576000.0, "kw": 1e3, "mw": 1e6,
         "gw": 1e9, "w": 1.0, "kwh": 1.0, "mwh": 1e3, "gb": 1e3, "tb": 1e6, "mb": 1.0}
_GROUPS = {"mg": "mass", "g": "mass", "kg": "mass", "mcg": "mass", "lb": "mass", "oz": "mass", "t": "mass",
           "ml": "vol", "l": "vol", "km": "len", "m": "len", "cm": "len", "mm": "len", "mile": "len",
           "ft": "len", "in": "len", "s": "time", "min": "time", "h": "time", "day": "time",
           "week": "time", "month": "time", "year": "time", "decade": "time", "%": "ratio", "pt": "ratio",
           "bp": "ratio", "kwh": "energy", "mwh": "energy", "mw": "power", "gw": "power", "kw": "power",
           "w": "power", "acre": "area", "ha": "area", "mph": "speed", "kmh": "speed", "c": "temp", "f": "temp",
           "tablet": "count", "capsule": "count", "dose": "count", "deg": "temp", "gb": "data", "tb": "data", "mb": "data"}
_PASSIVE = frozenset({"was", "were", "been", "being", "by"})
_PERIODS = {"hour": "h", "day": "day", "week": "week", "month": "month", "year": "year", "annum": "year",
            "night": "day"}
"""Time words a rate is given per ("per day", "a year", "each week")."""
_PERIOD_ADVERBS = {"hourly": "h", "daily": "day", "nightly": "day", "weekly": "week", "monthly": "month",
                   "yearly": "year", "annually": "year"}
_PERIOD_REACH = 6
_UP = ("rise", "rises", "rose", "risen", "rising", "increase", "increased", "increases", "increasing", "grow",
       "grew", "grown", "grows", "growing", "gain", "gained", "gains", "gaining", "climb", "climbed", "climbs",
       "jump", "jumped", "jumps", "soar", "soared", "soars", "surge", "surged", "surges", "rallied", "rebounded",
       "strengthened", "strengthens", "boosted", "raised", "lifted", "hiked", "expanded", "widened", "up",
       "higher", "faster", "stronger", "larger", "bigger")
_DOWN = ("fall", "falls", "fell", "fallen", "falling", "drop", "dropped", "drops", "dropping", "decline",
         "declined", "declines", "declining", "decrease", "decreased", "decreases", "decreasing", "shrank",
         "shrunk", "shrinks", "slipped", "slips", "slumped", "plunged", "plunges", "tumbled", "weakened",
         "weakens", "lost", "loses", "losing", "dipped", "sank", "narrowed", "contracted", "cut", "reduced",
         "lowered", "down", "lower", "slower", "weaker", "smaller")
_TRENDS = {**{w: 1 for w in _UP}, **{w: -1 for w in _DOWN}}
"""Direction words next to a quantity: a claim that turns "rose 4.2%" into "dropped 4.2%" is an ``antonym``
(bounds such as "more than", "up to" are the quantifier check's)."""
_TREND_SKIP = frozenset({"percent", "per", "cent", "percentage", "point", "points", "pct", "basis", "bps"})
_NOT_RATE = frozenset({"ago", "earlier", "later", "before", "after", "old", "since", "from", "prior"})
_RATE_BREAK = re.compile(r"[,;:()\n.!?\u2013\u2014]")
_CURRENCIES = frozenset("$\u20ac\u00a3\u00a5")

# quantifier and modality scopes: a claim word of one scope against an evidence word of another
_SCOPES = {
    "freq": {"always": "all", "never": "none", "usually": "most", "often": "most", "typically": "most",
             "generally": "most", "mostly": "most", "frequently": "most", "sometimes": "some",
             "occasionally": "some", "rarely": "few", "seldom": "few"},
    "quant": {"all": "all", "every": "all", "each": "all", "everyone": "all", "everybody": "all",
              "most": "most", "majority": "most", "nobody": "none",
              "some": "some", "several": "some", "few": "few", "none": "none", "many": "most"},
    "modal": {"must": "must", "required": "must", "mandatory": "must", "shall": "must", "should": "should",
              "recommended": "should", "may": "may", "can": "may", "might": "may", "could": "may",
              "optional": "may"},
    "only": {"only": "only", "sole": "only", "solely": "only", "exclusively": "only", "among": "among"},
}
_BOUNDS = (("at least", "min"), ("no fewer than", "min"), ("no less than", "min"), ("a minimum of", "min"),
           ("at most", "max"), ("up to", "max"), ("no more than", "max"), ("a maximum of", "max"),
           ("more than", "min"), ("fewer than", "max"), ("less than", "max"), ("over", "min"), ("above", "min"),
           ("under", "max"), ("below", "max"))
_BARE_BOUNDS = frozenset({"over", "above", "under", "below"})
"""One-word bounds: a bound only before a number ("over 18 students", not "over the years")."""
_SCOPE_OF = {w: (dim, v) for dim, d in _SCOPES.items() for w, v in d.items()}
_COMPATIBLE_SCOPES = frozenset({("some", "most"), ("most", "some"), ("some", "few"), ("few", "some"),
                                ("should", "may"), ("may", "should")})
"""Scopes that do not contradict each other ("some" and "many" are both true of a majority)."""
_BOUND_FIRST: dict = {}
for _phrase, _val in sorted(_BOUNDS, key=lambda pv: -len(pv[0])):
    _BOUND_FIRST.setdefault(_phrase.split()[0], []).append((tuple(_phrase.split()), _val))
_HAS_ANTONYM = frozenset(w for pair in ANTONYM_PAIRS for w in pair if " " not in w)
_TRIGGERS = frozenset(set(_WORD_VALUES) | set(_SMALL) | _MONTHS | _WEEKDAYS | set(_BOUND_FIRST) | set(_SCOPE_OF)
                      | _HAS_ANTONYM | {"dozen", "twice", "between"} | {d + "s" for d in _WEEKDAYS})
"""Lower-case words that can start a checked item (besides capitalised words and predicates)."""


_STEM_MEMO: dict = {}
_STEM_MEMO_MAX = 65536
_MEMO_MAX_CHARS = 64
"""The longest word the stem memos keep (with their bounds on entries, a bound on their bytes, whatever texts a
service is sent; a longer word is stemmed each time, to the same stem; issue 41, session 14)."""


def stem(word: str) -> str:
    """Snowball English stem of a lower-case word (memoised in a dict, up to 65,536 words: a lookup, where
    ``lru_cache``'s bookkeeping cost more than the stem's other work).

    >>> stem("sources"), stem("opens"), stem("opened")
    ('sourc', 'open', 'open')
    """
    got = _STEM_MEMO.get(word)
    if got is None:
        got = english_stemmer().stemWord(word)
        if len(_STEM_MEMO) < _STEM_MEMO_MAX and len(word) <= _MEMO_MAX_CHARS:
            _STEM_MEMO[word] = got
    return got


split_claims = sentence_claims
"""Claim units of one sentence, backend ``"rules"``: :func:`evqual.text.sentence_claims` under its earlier
name (the evidence engine cuts with the same rules)."""


class Finding:
    """A check that fired: which check, the claim's words and the evidence's.

    Attributes
    ----------
    check : str
        One of :data:`CHECKS`.
    start, end : int
        Offsets of the claim item in the output.
    mention : str
        The claim item as written.
    evidence : str
        The disagreeing evidence item as written.
    chunk : int
        Index of the evidence chunk.
    ev_start, ev_end : int
        Offsets of the evidence item in that chunk's text.
    """

    __slots__ = ("check", "start", "end", "mention", "evidence", "chunk", "ev_start", "ev_end")

    def __init__(self, check, start, end, mention, evidence, chunk, ev_start, ev_end):
        self.check, self.start, self.end, self.mention = check, start, end, mention
        self.evidence, self.chunk, self.ev_start, self.ev_end = evidence, chunk, ev_start, ev_end

    def __repr__(self):
        return f"Finding({self.check!r}, {self.mention!r} vs {self.evidence!r})"


class _Item:
    """One checkable item of a segment: its class key, payload and slot stems."""

    __slots__ = ("cls", "key", "info", "slot", "near", "start", "end", "text", "chunk", "field", "seg", "pos")

    def __init__(self, cls, key, info, slot, start, end, text, chunk=-1, field=False, seg=0, pos=0):
        self.cls, self.key, self.info = cls, key, info
        self.slot, self.near = slot
        self.start, self.end, self.text, self.chunk, self.field, self.seg, self.pos = \
            start, end, text, chunk, field, seg, pos


def _item(cls, key, info, slot, start, end, text, chunk, field, seg, pos):
    """``_Item(...)`` with every field given: the compiled module fills the new item's fields in place, without
    the argument parsing of a call to the class (``_checks.pxd``)."""
    it = _Item.__new__(_Item)
    it.cls, it.key, it.info = cls, key, info
    it.slot, it.near = slot
    it.start, it.end, it.text, it.chunk, it.field, it.seg, it.pos = start, end, text, chunk, field, seg, pos
    return it


_CONTENT_STEM: dict = {}
"""Lower-case word -> its stem when it is a content word, else None (filled as words are met)."""


_DEGREE = frozenset({"just", "nearly", "merely", "simply", "roughly", "approximately", "almost", "exactly",
                     "precisely", "around", "only"})
"""Degree adverbs: not content words, so "the defense just four" still has "defense" next to its number."""


_KEEP = frozenset({"amount", "bill", "bottom", "detail", "empty", "fire", "found", "front", "full", "interest",
                   "mill", "serious", "side", "system", "thick", "thin", "top", "whole", "former", "last", "first",
                   "next", "third"})
"""Words of scikit-learn's English stop list that carry content in a claim ("no serious safety concerns",
"full"/"empty", "the first"): the checks keep them in slots and as predicates (light verbs such as "take"
and "back" stay out: they widen slots with words every sentence has)."""
_CHECK_STOP = frozenset(STOP_WORDS - _KEEP)


def _content_stem(low: str):
    got = (low not in _CHECK_STOP and not low[:1].isdigit() and len(low) > 1 and low not in _WORD_VALUES
           and low not in _DEGREE)
    st = stem(low) if got else None
    if len(_CONTENT_STEM) < 200_000 and len(low) <= _MEMO_MAX_CHARS:
        _CONTENT_STEM[low] = st
    return st


def _tokens(text: str, start: int, end: int, words=None):
    """``(start, end, word, lower, stem or None)`` of each word of ``text[start:end]`` (``words``: the text's
    :class:`~evqual.text.TextWords`, whose words are taken instead of scanning again)."""
    cs = _CONTENT_STEM
    toks = []
    if words is not None:
        for (a, b, w), low in zip(words.spans_in(start, end), words.lows_in(start, end)):
            st = cs.get(low, 0)
            if st == 0:
                st = _content_stem(low)
            toks.append((a, b, w, low, st))
        return toks
    for a, b, w in word_spans(text, start, end):
        low = w.lower()
        st = cs.get(low, 0)
        if st == 0:
            st = _content_stem(low)
        toks.append((a, b, w, low, st))
    return toks


def _numbers_in(text: str, start: int, end: int, words) -> list:
    """``extract_numbers(text[start:end])``, from ``words`` (the text's :class:`~evqual.text.TextWords`, whose
    mentions are found once) when given."""
    return words.numbers_in(start, end) if words is not None else extract_numbers(text[start:end])


def _slot(toks, lo: int, hi: int, skip_lo: int, skip_hi: int, names: bool = True, near_lo: int = 0):
    """``(stems, near)``: stems of the content tokens within WINDOW content tokens of
    ``toks[skip_lo:skip_hi]``, and the nearest one on each side tagged with its side.

    ``names=False`` leaves capitalised words out (a name's neighbours in its own
    multi-word name are not its slot).  The nearest word on the left is looked
    for only from ``near_lo`` on (a claim unit's first word: the words its slot
    borrows from the clause before are context, not its neighbour).
    """
    out, near = [], []
    n = 0
    j = skip_lo - 1
    while j >= lo and n < WINDOW:
        st = toks[j][4]
        if st is not None and (names or not toks[j][2][:1].isupper()):
            out.append(st)
            if not n and j >= near_lo:
                near.append(("L", st))
            n += 1
        j -= 1
    n = 0
    j = skip_hi
    while j < hi and n < WINDOW:
        st = toks[j][4]
        if st is not None and (names or not toks[j][2][:1].isupper()):
            out.append(st)
            if not n:
                near.append(("R", st))
            n += 1
        j += 1
    return frozenset(out), frozenset(near)


def _word_number(toks, j: int, n: int):
    """``(value, end)`` of the spelled-out number starting at token ``j`` ("one hundred and twenty",
    "seventy-eight", "a dozen"), or None; a lone "one" is not a number."""
    total, cur, k, seen = 0, 0, j, 0
    while k < n:
        w = toks[k][3]
        if w in _SMALL:
            v = _SMALL[w]
            if not seen or not cur:
                cur += v
            elif cur % 100 == 0 and v < 100:
                cur += v
            elif 20 <= cur % 100 and cur % 10 == 0 and v < 10:
                cur += v
            else:
                break
        elif w in _MULT and seen:
            if _MULT[w] == 100:
                cur = max(cur, 1) * 100
            else:
                total += max(cur, 1) * _MULT[w]
                cur = 0
        elif w == "and" and seen and k + 1 < n and toks[k + 1][3] in _SMALL:
            pass
        elif w in ("dozen", "twice") and not seen:
            return ("12" if w == "dozen" else "2"), k + 1
        else:
            break
        seen += 1
        k += 1
    if not seen or (seen == 1 and toks[j][3] == "one" and not _and_a_half(toks, k, n)):
        return None
    if toks[k - 1][3] == "and":
        k -= 1
    if _and_a_half(toks, k, n):
        return str((total + cur) + 0.5), k + 3  # "two and a half years"
    return str(total + cur), k


def _bound_value(toks, k: int, n: int):
    """The value a bound is about: the number at token ``k`` ("more than 8", "over eighteen"), or None."""
    if k >= n:
        return None
    w = toks[k][3]
    return w if w[:1].isdigit() else _WORD_VALUES.get(w)


def _and_a_half(toks, k: int, n: int) -> bool:
    return k + 2 < n and toks[k][3] == "and" and toks[k + 1][3] == "a" and toks[k + 2][3] == "half"


def _unit_after(toks, j: int, hi: int):
    if j < hi:
        u = _UNITS.get(toks[j][3])
        if toks[j][3] == "percentage":  # "percentage points" (a percentage alone is a share, not a unit)
            return "pt" if j + 1 < hi and toks[j + 1][3] in ("point", "points") else None
        if toks[j][3] in ("per", "a") and j + 1 < hi:  # "per cent", "a day" keep the plain reading
            return "%" if toks[j + 1][3] == "cent" else None
        if toks[j][3] in ("degree", "degrees"):
            nxt = toks[j + 1][3] if j + 1 < hi else ""
            return "c" if nxt in ("celsius", "c", "centigrade") else "f" if nxt in ("fahrenheit", "f") else "deg"
        return u
    return None


def _period_after(text: str, toks, j: int, hi: int, pos: int):
    """The time period a quantity is given per ("1.2 g of ibuprofen per day", "4,000 cubic metres a year",
    "1,200 mg in 24 hours", "costs $5 daily"): ``"h"``, ``"day"``, ``"week"``, ``"month"``, ``"year"`` or None.

    Looked for in the :data:`_PERIOD_REACH` words after token ``j`` (``pos``: where the quantity ends), up to a
    clause break or another number; "a year ago" is a point in time, not a rate.
    """
    last = pos
    for k in range(j, min(hi, j + _PERIOD_REACH)):
        a, b, _, low, _ = toks[k]
        if _RATE_BREAK.search(text, last, a):
            return None
        last = b
        if low in _PERIOD_ADVERBS:
            return _PERIOD_ADVERBS[low]
        nxt = toks[k + 1][3] if k + 1 < hi else ""
        if low in ("per", "a", "an", "each", "every") and nxt:
            word = nxt[:-1] if nxt[-1:] == "s" and nxt[:-1] in _PERIODS else nxt
            if word in _PERIODS and (low != "a" or nxt == word) and not (
                    k + 2 < hi and toks[k + 2][3] in _NOT_RATE):
                return _PERIODS[word]
        if low in ("in", "every", "per", "within") and k + 2 < hi:
            q = k + 2 if nxt in ("any", "a", "each") and k + 3 < hi else k + 1
            if toks[q][3] == "24" and toks[q + 1][3] in ("hour", "hours"):
                return "day"
        if low[:1].isdigit():
            return None
    return None


def _trend(toks, lo: int, hi: int, n: int):
    """``(sign, start, end, word)`` of the direction word next to a quantity ("rose 4.2%", "down 7%", "10% slower",
    "grew 12 percentage points"): +1 up, -1 down; None when there is none within two words."""
    j = hi
    while j < n and toks[j][3] in _TREND_SKIP:
        j += 1
    for k in (lo - 1, lo - 2, j, j + 1):
        if 0 <= k < n and not lo <= k < hi:
            sign = _TRENDS.get(toks[k][3])
            if sign is not None and not (k + 1 < n and toks[k + 1][3] == "to" and toks[k][3] == "up"):
                return sign, toks[k][0], toks[k][1], toks[k][2]
    return None


_NOT_NAMES = frozenset({"passage", "passages", "step", "steps", "section", "sections", "figure", "table",
                        "answer", "note", "source", "sources", "document", "documents", "context", "question",
                        "option", "part", "chapter", "item", "items", "example", "summary", "overview"})
"""Capitalised words that name a place in the text or the task, never an entity ("Passage 2", "Step 3")."""
_CAP_AFTER = frozenset(".!?:;(*\u2022\n\"\u201c[|>#")
_DASHES = frozenset("-\u2013\u2014")


def _positional_cap(text: str, toks, j: int, first: bool, field: bool = False) -> bool:
    """True when token ``j`` is capitalised by its position, not because it is a name: the first word of
    a sentence, a line, a list item ("2. Preheat", "1  Lay", "* Check"), a bracket or a label ("Note: Keep")."""
    a = toks[j][0]
    if j == 0:
        if first:
            return True
        gap = text[max(0, a - 3):a]
    else:
        gap = text[toks[j - 1][1]:a]
        prev = toks[j - 1][3]
        if prev.isdigit() and len(prev) <= 2 and (gap.strip() in (".", ")") or "  " in gap):
            return True  # a list marker before it
    if field and gap.strip() == ":":
        return False  # a record's value after its label ("name: Little Fig Bistro")
    if not _CAP_AFTER.isdisjoint(gap):
        return True
    return not _DASHES.isdisjoint(gap) and any(c.isspace() for c in gap)  # a dash bullet, not "Jean-Paul"


_MARKER_AFTER = re.compile(r"(?:[.)]\s+|\s{2,}|\s*[-\u2013:]\s+)[A-Z\"'\u201c$\u00a3\u20ac]")
_ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?(?![\d:])")


def _in_iso_date(text: str, a: int) -> bool:
    """Whether position ``a`` falls inside a timestamp written "2019-05-22" or "2019-05-22 14:03:00"."""
    lo = max(0, a - 20)
    return any(lo + m.start() <= a < lo + m.end() for m in _ISO_DATE.finditer(text[lo:a + 20]))


_FRACTIONS = frozenset("\u00bc\u00bd\u00be\u2153\u2154")
_ORDINALS = frozenset({"st", "nd", "rd", "th"})


_REFERENCES = frozenset({"step", "steps", "tep", "no", "item", "items", "part", "parts", "phase", "stage", "stages",
                         "passage", "passages", "chapter", "chapters", "section", "sections", "figure", "figures",
                         "table", "tables", "verse", "verses", "page", "pages", "paragraph", "paragraphs", "line",
                         "lines", "question", "questions", "option", "options", "rule", "rules", "article",
                         "articles", "fig", "eq", "equation", "appendix", "level", "levels"})
"""Words after which a small number is a reference ("steps 4 and 5", "Chapter 3"), not a quantity."""
_REF_LINKS = frozenset({"and", "or", "to", "through", "thru"})


def _is_list_marker(text: str, a: int, b: int, toks, j: int) -> bool:
    """A small integer numbering a list item or step ("4. Thread the string", "2  Tie", "1 Fill ... 2  Tie")
    or a reference ("step 3", "steps 4 and 5", "Chapter 3")."""
    digits = text[a:b].strip()
    if not digits.isdigit() or len(digits) > 3:
        return False
    k = j - 1
    while k >= 0 and k >= j - 5 and (toks[k][3] in _REF_LINKS or toks[k][3].isdigit()):
        k -= 1  # back over "4 and" of "steps 4 and 5"
    if k >= 0 and toks[k][3] in _REFERENCES and (k == j - 1 or toks[k + 1][3].isdigit()):
        return True
    if len(digits) > 2:
        return False
    before = text[max(0, a - 2):a]
    if a > 0 and not (before.strip() == "" or before.rstrip()[-1:] in ".:;!?\n" or "\n" in before):
        return False
    if _MARKER_AFTER.match(text, b) is not None:
        return True
    # "1 Fill the balloon ... 2  Tie it": one space, then a capital, and the next number marks a later item
    return (text[b:b + 1] == " " and text[b + 1:b + 2].isupper()
            and re.search(rf"(?<![\w.,]){int(digits) + 1}\s+[A-Z]", text[b:b + 600]) is not None)


def _clause_breaks(text: str, toks) -> list:
    """Per token: whether a clause break (a character of :data:`_CLAUSE_BREAK_CHARS`) lies between it and the word
    before (never for the first).  One scan of the text between the first and the last word, not a search per pair
    of words: a break character is never inside a word, so each one found belongs to the gap before the next
    word."""
    n = len(toks)
    out = [False] * n
    if n < 2:
        return out
    k = 1
    for pos in char_positions(text, _CLAUSE_BREAK_CHARS, toks[0][1], toks[-1][0]):
        while toks[k][0] <= pos:
            k += 1
        out[k] = True
    return out


def _negations(text: str, toks) -> set:
    """Indices of the tokens a negation cue ("not", "never", "rather than", ...) negates: the first content
    word after the cue, within
    _NEG_REACH words and the same clause; "X-free" negates X.  A double negation in one clause
    ("you cannot take a shot without focus") negates neither word."""
    n = len(toks)
    neg_pos = set()
    last_cue = -10  # (token index, clause number) of the previous cue
    clause = 0
    breaks = _clause_breaks(text, toks)
    for k, t in enumerate(toks):
        low = t[3]
        if breaks[k]:
            clause += 1
        if low in _NEG_CUES or (k and (low, toks[k - 1][3]) in _TWO_WORD_CUES):
            got = None
            for i in range(k + 1, min(n, k + 1 + _NEG_REACH)):
                if breaks[i]:
                    break
                if toks[i][4] is not None:
                    got = i
                    break
            if low == "without" and last_cue != -10 and last_cue[1] == clause and last_cue[2] is not None:
                neg_pos.discard(last_cue[2])  # "cannot X without Y": X only with Y, both affirmed
                got = None
            if got is not None:
                neg_pos.add(got)
            last_cue = (k, clause, got)
        elif low == "free" and k and text[toks[k - 1][1]:t[0]] == "-":
            neg_pos.add(k - 1)  # "visa-free", not "leaving the arm free"
    return neg_pos


def _clause_marked(text: str, toks) -> dict:
    """Token index -> ``"hedge"`` when its clause holds a condition ("if", "unless", "whether"), ``"cue"``
    when it holds a negation cue or a contrast ("whereas", "although") and no condition.  A marked word is never the plainly affirmed side of a
    negation conflict, and a hedged one (a condition, not an assertion) is never either side."""
    out: dict = {}
    clause: list = []
    mark = None
    breaks = _clause_breaks(text, toks)
    for i, t in enumerate(toks):
        if breaks[i]:
            if mark:
                out.update(dict.fromkeys(clause, mark))
            clause, mark = [], None
        clause.append(i)
        if t[3] in _CONDITIONALS:
            mark = "hedge"
        elif (t[3] in _NEG_CUES or t[3] in _HEDGES) and mark is None:
            mark = "cue"
    if mark:
        out.update(dict.fromkeys(clause, mark))
    return out


def _title_case(toks) -> bool:
    """Whether a segment is written in title case (a headline): at least six words of four letters or
    more, at most one of them in lower case."""
    long = [t[2] for t in toks if len(t[2]) >= 4 and t[2].isalpha()]
    if len(long) < 6:
        return False
    lower = 0
    for w in long:
        if not w[0].isupper():
            lower += 1
    return lower <= 1


def _acronym(text: str) -> bool:
    """"FAA", "NYPD", "CA": two to six capitals."""
    return 2 <= len(text) <= 6 and text.isupper() and text.isalpha()


def _one_edit(x: str, y: str) -> bool:
    """Whether ``x`` and ``y`` differ by one inserted, deleted or replaced letter ("Parkistan")."""
    if abs(len(x) - len(y)) > 1:
        return False
    if len(x) > len(y):
        x, y = y, x
    i = 0
    while i < len(x) and x[i] == y[i]:
        i += 1
    return x[i + (len(x) == len(y)):] == y[i + 1:]


def _has_alpha(s: str) -> bool:
    """Whether ``s`` has a letter (a loop, not a generator: the compiled module types its callers)."""
    for c in s:
        if c.isalpha():
            return True
    return False


def _low_before(toks, j: int, words) -> bool:
    """Whether either of the two words before word ``j`` is one of ``words`` (lower case)."""
    for i in range(max(0, j - 2), j):
        if toks[i][3] in words:
            return True
    return False


def _words_follow(toks, j: int, words) -> bool:
    """Whether the words after word ``j`` are ``words[1:]`` (lower case; the caller checks the length)."""
    for i in range(1, len(words)):
        if toks[j + i][3] != words[i]:
            return False
    return True


def _segment_items(text: str, start: int, end: int, *, first: bool, chunk: int = -1, seg: int = 0,
                   field: bool = False, neg_stems=None, toks=None, neg_pos=None, unit_start: int = 0,
                   words=None):
    """The checkable items of ``text[start:end]`` (a claim unit or an evidence sentence).

    Returns ``(items, toks, neg_pos)``.  Predicate items (for the negation
    check) are made only for a claim (``neg_stems`` given): for its negated
    words and for words whose stem the evidence has negated somewhere.
    ``toks`` and ``neg_pos`` may be passed when already computed.
    """
    if toks is None:
        toks = _tokens(text, start, end, words)
    if neg_pos is None:
        neg_pos = _negations(text, toks)
    n = len(toks)
    near_lo = bisect.bisect_left([t[0] for t in toks], unit_start) if unit_start > start else 0

    items = []
    # numbers (digits through extract_numbers, then number words)
    taken = set()
    marked = None
    starts = [t[0] for t in toks]
    for m in (_numbers_in(text, start, end, words) if has_digit(text, start, end) else ()):
        a, b = start + m.start, start + m.end
        lo_j = bisect.bisect_left(starts, a)
        hi_j = lo_j
        while hi_j < n and toks[hi_j][1] <= b:
            hi_j += 1
        century = False
        if hi_j == lo_j and lo_j < n and toks[lo_j][0] == a and text[b:b + 1] == "s":
            hi_j += 1  # "1400s": the word runs past the number
        elif hi_j == lo_j and lo_j + 1 < n and toks[lo_j][0] == a and text[b:b + 2].lower() in _ORDINALS \
                and toks[lo_j + 1][3] in ("century", "centuries") and m.text.isdigit() and 0 < int(m.text) <= 30:
            hi_j += 2  # "the 12th century": the 1100s
            century = True
            b = toks[lo_j + 1][1]
        if hi_j == lo_j:
            continue
        taken.update(range(lo_j, hi_j))
        if _is_list_marker(text, a, b, toks, lo_j):
            continue
        if text[a - 1:a] == "/" or text[b:b + 1] == "/" or text[b:b + 1] in _FRACTIONS:
            continue  # a fraction ("1/3", "2\u00bd"), not a count
        if (text[a - 1:a] in "-:" or text[b:b + 1] in "-:") and a and _in_iso_date(text, a):
            continue  # a part of "2019-05-22" (a record's timestamp), not a count
        if text[a - 1:a] == "-" and text[a - 2:a - 1].isalpha() and (
                text[a - 2:a - 1].isupper() or (lo_j and toks[lo_j - 1][2][:1].isupper())):
            continue  # a designation ("F-16", "COVID-19", "A-10"), not a count
        kind = m.unit if m.unit else ""
        key = m.value
        clock = False
        if kind == "time" and ":" in m.text and not _has_alpha(m.text) and lo_j and (
                text[toks[lo_j - 1][1]:a] == " " and toks[lo_j - 1][3] not in _CALENDAR_WORDS
                and (toks[lo_j - 1][2][:1].isupper() or toks[lo_j - 1][3] in _REFERENCES)):
            continue  # a chapter and verse ("John 16:13"), not a time
        if century:
            kind, key = "century", str((int(m.text) - 1) * 100)
        elif not kind and m.text.isdigit() and len(m.text) == 4 and m.text.endswith("00") and text[b:b + 1] == "s":
            kind = "century"  # "the 1400s": the 15th century
        elif not kind and m.text.isdigit() and len(m.text) == 4 and (
                1500 <= int(m.text) <= 2100 or (text[b:b + 1] == "s" and m.text.endswith("0"))):
            kind = "year"  # a year, or a decade ("the 1990s")
        if kind == "time" and hi_j + 2 < n and toks[hi_j][3] in ("in", "at") and key[1:].split(":")[0].isdigit():
            part = toks[hi_j + 2][3] if toks[hi_j + 1][3] == "the" else toks[hi_j + 1][3]
            hour = int(key[1:].split(":")[0])
            if part in ("afternoon", "evening", "night") and hour < 12:
                key = f"t{hour + 12}:{key.split(':', 1)[1]}" if ":" in key else key
            if part in ("morning", "afternoon", "evening", "night"):
                clock = True
        if not kind and (text[a - 1:a] in ("-", "\u2212") and not text[a - 2:a - 1].isalnum()
                         and text[a - 2:a - 1] not in _DASHES
                         or (lo_j and toks[lo_j - 1][3] == "minus")):
            key = "-" + key  # "-20", "minus 20"
        unit = "%" if kind == "%" else _unit_after(toks, hi_j, n)
        if kind == "time":
            # "clock": the time says which half of the day it is (a.m./p.m., 24-hour, "in the morning")
            unit = "clock" if clock or _has_alpha(m.text) or int(key[1:].split(":")[0]) > 12 \
                or key[1:].split(":")[0] == "0" else None
        if unit is None and text[b:b + 1] == "\u00b0":
            unit = "f" if text[b + 1:b + 2] == "F" else "c" if text[b + 1:b + 2] == "C" else "deg"
        approx = _low_before(toks, lo_j, _APPROX)
        period = _period_after(text, toks, hi_j, n, b) if kind not in ("time", "year", "century") else None
        trend = _trend(toks, lo_j, hi_j, n) if kind not in ("time", "year", "century") else None
        items.append(_item("number", key, (kind, unit, approx, period, trend),
                           _slot(toks, 0, n, lo_j, hi_j, True, near_lo), a, b, text[a:b], chunk, field, seg, lo_j))
    covered = set()
    title = None  # whether the segment is a headline in title case (made on the first capital)
    for j, (a, b, w, low, st) in enumerate(toks):
        if low not in _TRIGGERS and not w[0].isupper() and (
                neg_stems is None or st is None or (j not in neg_pos and st not in neg_stems)):
            continue  # most words: nothing to check
        if j in taken:
            continue
        if low in _WORD_VALUES or low in _SMALL:
            got = _word_number(toks, j, n)
            if got is not None:
                v, k = got
                taken.update(range(j, k))
                approx = _low_before(toks, j, _APPROX)
                b = toks[k - 1][1]
                items.append(_item("number", v, ("", _unit_after(toks, k, n), approx,
                                                 _period_after(text, toks, k, n, b), _trend(toks, j, k, n)),
                                   _slot(toks, 0, n, j, k, True, near_lo),
                                   a, b, text[a:b], chunk, field, seg, j))
                continue
        if low[-1:] == "s" and low[:-1] in _WEEKDAYS:
            low = low[:-1]  # "on Mondays"
        if low in _MONTHS or low in _WEEKDAYS or (
                low in ("may", "march") and w[0].isupper() and j > 0
                and ((toks[j - 1][3][:1].isdigit()) or (j + 1 < n and toks[j + 1][3][:1].isdigit()))):
            items.append(_item("date", low, "weekday" if low in _WEEKDAYS else "month",
                               _slot(toks, 0, n, j, j + 1, True, near_lo), a, b, w, chunk, field, seg, j))
            continue
        if w[:1].isupper() and st is not None and low not in _NOT_NAMES:
            # a word capitalised by its position is kept as a *positional* name: a name only where the
            # context shows it is one (see _check_item and claim_checks)
            pos = None if w[1:] != w[1:].lower() or not _positional_cap(text, toks, j, first, field) else "pos"
            if pos is None and not field and w[1:] == w[1:].lower():
                if title is None:
                    title = _title_case(toks)
                if title:
                    pos = "pos"  # "Judge Halts Border Agents Removing Wire": every word is capitalised
            items.append(_item("name", low, pos, _slot(toks, 0, n, j, j + 1, True, near_lo), a, b, w, chunk, field,
                               seg, j))
        if low in _BOUND_FIRST and j not in covered:
            for words, val in _BOUND_FIRST[low]:
                k = j + len(words)
                if k <= n and _words_follow(toks, j, words):
                    covered.update(range(j, k))
                    if _low_before(toks, j, _NEG_CUES):
                        val = "max" if val == "min" else "min"  # "not more than"
                    nxt = k + 1 if k < n and toks[k][3] == "a" else k
                    bound_of = _bound_value(toks, nxt, n)
                    if bound_of is None and low in _BARE_BOUNDS:
                        break
                    bb = toks[k - 1][1]
                    items.append(_item("scope", ("bound", val), bound_of, _slot(toks, 0, n, j, k, True, near_lo),
                                       a, bb, text[a:bb], chunk, field, seg, j))
                    break
        if low == "between" and j + 3 < n and toks[j + 2][3] == "and":
            lo_v, hi_v = _bound_value(toks, j + 1, n), _bound_value(toks, j + 3, n)
            if lo_v is not None and hi_v is not None:  # "between 12 and 18": at least 12, at most 18
                bb = toks[j + 3][1]
                for val, v in (("min", lo_v), ("max", hi_v)):
                    items.append(_item("scope", ("bound", val), v, _slot(toks, 0, n, j, j + 4, True, near_lo),
                                       a, bb, text[a:bb], chunk, field, seg, j))
        if low in _SCOPE_OF and j not in covered:
            dim, val = _SCOPE_OF[low]
            if not (low in ("may", "can") and j == 0) and not (j and toks[j - 1][3] in _NEG_CUES):
                items.append(_item("scope", (dim, val), low, _slot(toks, 0, n, j, j + 1, True, near_lo), a, b, w,
                                   chunk, field, seg, j))
        if low in _HAS_ANTONYM:
            items.append(_item("word", low, None, _slot(toks, 0, n, j, j + 1, True, near_lo), a, b, w, chunk, field,
                               seg, j))
        if neg_stems is not None and st is not None and j > 0 and not w[:1].isupper():
            neg = j in neg_pos
            if neg or st in neg_stems:
                if marked is None:
                    marked = _clause_marked(text, toks)
                items.append(_item("pred", st, (neg, marked.get(j)), _slot(toks, 0, n, j, j + 1, True, near_lo),
                                   a, b, w, chunk, field, seg, j))
    return items, toks, neg_pos


class EvidenceUnits:
    """The context cut into evidence sentences, with their checkable items (built once per context).

    Every sentence's words are indexed up front (stems and words to sentences,
    negated stems); a sentence is tokenized with offsets and its items made
    the first time a claim shares words with it, so the cost follows what the
    answers talk about.  Which
    sentences a claim is compared with depends only on the claim and the
    context: at least :data:`MIN_SLOT` shared stems (one for a record line).

    Parameters
    ----------
    chunk_texts : list of str
    words : list of TextWords, optional
        Each chunk's :class:`~evqual.text.TextWords`, when the caller has them: their sentences and words are
        read instead of finding them again (the same units and items).
    """

    def __init__(self, chunk_texts, words=None):
        self.chunk_texts = list(chunk_texts)
        if words is not None:
            words = list(words)
            if len(words) != len(self.chunk_texts) or any(
                    w.text is not t and w.text != t for w, t in zip(words, self.chunk_texts)):
                raise ValueError("EvidenceUnits: words must hold one TextWords of each chunk text, in order")
            self.chunk_texts = [w.text for w in words]
        self.chunk_words = words
        self.spans: list = []
        self.fields: list = []
        self.neg_stems: set = set()
        self._toks: dict = {}
        self._neg: dict = {}
        self._record = None
        self._index_sentences()
        self._stem_pos: dict = {}
        self._name_items: dict = {}
        self._seg_items: dict = {}
        self._values: dict = {}
        self._stems: dict = {}
        self._pred_items: dict = {}
        self._marked: dict = {}

    def _index_sentences(self):
        """Cut the context into evidence sentences and index their words (:attr:`postings`, :attr:`words`,
        :attr:`lower`, :attr:`neg_stems`); a method, so that the compiled module can type it (``_checks.pxd``)."""
        chunk_words = self.chunk_words
        postings: dict = {}
        words: dict = {}
        lower: set = set()
        cs = _CONTENT_STEM
        for k, text in enumerate(self.chunk_texts):
            check_deadline()
            field = _FIELD_RE.match(text) is not None and ". " not in text and len(text) < 300
            tw = chunk_words[k] if chunk_words is not None else None
            for s, e in (tw.sentences if tw is not None else split_sentences(text)):
                seg = len(self.spans)
                self.spans.append((k, s, e))
                self.fields.append(field)
                seen = set(tw.words_in(s, e) if tw is not None else _WORD_RE.findall(text, s, e))
                lows = set()
                for w in seen:
                    low = w.lower()
                    if low == w:
                        lower.add(low)
                    lows.add(low)
                for low in lows:
                    words.setdefault(low, set()).add(seg)
                    st = cs.get(low, 0)
                    if st == 0:
                        st = _content_stem(low)
                    if st is not None:
                        postings.setdefault(st, set()).add(seg)
                    elif low.isdigit():
                        postings.setdefault("#" + low, set()).add(seg)  # a value, for sentences_for
                if not lows.isdisjoint(_NEG_CUES) or "free" in lows or "rather" in lows or "instead" in lows:
                    toks = self.tokens(seg)
                    self.neg_stems.update([toks[j][4] for j in self.negated(seg) if j])
        self.large = len(self.spans) > LARGE_CONTEXT or sum(map(len, self.chunk_texts)) > LARGE_CONTEXT_CHARS
        """Whether the work per claim is bounded (:meth:`sentences_for`)."""
        if not self.large:
            # a context of a few hundred sentences keeps its sentence lists as tuples: a tuple of ints leaves the
            # garbage collector's lists at its first collection, where a set is walked by every collection for as
            # long as the context stays cached (issue 41); a large context keeps sets, which the bounded
            # comparisons ask for membership
            for index in (postings, words):
                for k, v in index.items():
                    index[k] = tuple(v)
                untrack_atomic((index,))  # (and never walked: evqual/_untrack.pyx)
        self.postings = postings
        """Stem -> evidence sentences holding it (a tuple, or a set in a :attr:`large` context)."""
        self.words = words
        """Lower-case word -> evidence sentences holding it (as :attr:`postings`)."""
        self.lower = lower
        """Words the context writes in lower case somewhere: a capitalised one of them is not a name."""

    @property
    def record(self) -> tuple:
        """``(fields, lookup)`` of the context's yes/no record fields: each field as
        ``(chunk, label, kind, phrase, joined)`` (see :func:`evqual.features._structure.parse_fields`)."""
        got = self._record
        if got is None:
            got = self._record = _record_fields(self.chunk_texts)
        return got

    def tokens(self, seg: int) -> list:
        """The words of evidence sentence ``seg`` as ``(start, end, word, lower, stem)`` (made on first use)."""
        got = self._toks.get(seg)
        if got is None:
            k, s, e = self.spans[seg]
            got = self._toks[seg] = _tokens(self.chunk_texts[k], s, e,
                                            self.chunk_words[k] if self.chunk_words is not None else None)
            untrack_atomic(got)  # (rows of strings and numbers, kept with the context: evqual/_untrack.pyx)
        return got

    def negated(self, seg: int) -> set:
        """Indices of the words of evidence sentence ``seg`` that a negation cue negates."""
        got = self._neg.get(seg)
        if got is None:
            k = self.spans[seg][0]
            got = self._neg[seg] = _negations(self.chunk_texts[k], self.tokens(seg))
        return got

    def segment_items(self, seg: int) -> tuple:
        """``(items, index)`` of evidence sentence ``seg``: its items (a tuple) and ``class -> stem -> items`` (a
        tuple; two lookups of strings, whose hashes are kept, instead of one of a tuple made and hashed for
        each)."""
        got = self._seg_items.get(seg)
        if got is not None:
            return got
        check_deadline()  # a claim may make thousands of sentences read for the first time
        k = self.spans[seg][0]
        toks = self.tokens(seg)
        text = self.chunk_texts[k]
        field = self.fields[seg]
        s, e = (toks[0][0], toks[-1][1]) if toks else (0, 0)
        items, _, _ = _segment_items(text, s, e, first=True, chunk=k, seg=seg, field=field, toks=toks,
                                     neg_pos=self.negated(seg))
        label_unit = None
        if field:
            label = text.split(": ", 1)[0].lower()
            units = [_UNITS[w] for w in _WORD_RE.findall(label) if _UNITS.get(w)]
            label_unit = units[-1] if units else None
        index: dict = {}
        for it in items:
            if field:
                it.near = frozenset()
                if it.cls == "number" and it.info[1] is None and label_unit is not None and it.info[0] != "time":
                    it.info = (it.info[0], label_unit) + it.info[2:]
            by_stem = index.get(it.cls)
            if by_stem is None:
                by_stem = index[it.cls] = {}
            for st in it.slot:
                by_stem.setdefault(st, []).append(it)
        for it in items:  # (kept with the context, and never changed again: evqual/_untrack.pyx)
            untrack_atomic((it.slot, it.near, it.key, it.info))
        untrack_settled(items)
        for by_stem in index.values():  # (tuples of untracked items: untracked too)
            for st, found in by_stem.items():
                by_stem[st] = tuple(found)
            untrack_atomic((by_stem,))
        got = self._seg_items[seg] = (tuple(items), index)
        untrack_atomic((got,))
        return got

    def seg_stems(self, seg: int) -> frozenset:
        """The content stems of evidence sentence ``seg``, and its digits as ``"#" + digits``."""
        got = self._stems.get(seg)
        if got is None:
            got = self._stems[seg] = frozenset([t[4] if t[4] is not None else "#" + t[3] for t in self.tokens(seg)
                                                if t[4] is not None or t[3].isdigit()])
        return got

    def seg_values(self, seg: int) -> frozenset:
        """The values of the numbers evidence sentence ``seg`` states."""
        got = self._values.get(seg)
        if got is None:
            got = self._values[seg] = frozenset([it.key for it in self.segment_items(seg)[0] if it.cls == "number"])
        return got

    def sentences_for(self, stems) -> list:
        """Evidence sentences sharing at least MIN_SLOT of ``stems`` (record lines: one), in order.

        ``stems`` may hold values as ``"#" + digits`` ("#48"): a sentence that states the claim's numbers
        is about what the claim is about.

        In a context of more than :data:`LARGE_CONTEXT` sentences or :data:`LARGE_CONTEXT_CHARS`
        characters (:attr:`large`) the work per claim is bounded, so
        that scoring time grows with sentences plus passages, not with their product: stems are taken
        rarest first, a stem held by more than :data:`MAX_CANDIDATES` sentences only adds to sentences
        a rarer stem found (the first stem excepted), and the :data:`MAX_CANDIDATES` sentences sharing
        the most (IDF-weighted) stems are kept.  Smaller contexts (every RAGTruth context) are read
        whole, exactly as before."""
        if not self.large:
            return self._sentences_small(stems)
        postings = self.postings
        n = len(self.spans)
        # the claim's rarest stems place it (a claim of hundreds of words, a run-on text cut at
        # MAX_SENTENCE_CHARS, would otherwise make every call walk hundreds of posting lists)
        # (rarest first, ties by stem: a set's order of strings changes from one process to the next)
        lists = [postings[st] for st in sorted((st for st in stems if st in postings),
                                               key=lambda st: (len(postings[st]), st))[:MAX_PLACING_STEMS]]
        counts, weights = {}, {}
        for i, segs in enumerate(lists):
            w = math.log1p(n / len(segs))
            if i == 0 or len(segs) <= MAX_CANDIDATES:
                for seg in segs:
                    counts[seg] = counts.get(seg, 0) + 1
                    weights[seg] = weights.get(seg, 0.0) + w
            else:
                for seg in counts:
                    if seg in segs:
                        counts[seg] += 1
                        weights[seg] += w
        keep = [seg for seg, c in counts.items() if c >= MIN_SLOT or self.fields[seg]]
        if len(keep) > MAX_CANDIDATES:
            keep = sorted(keep, key=lambda seg: (-weights[seg], seg))[:MAX_CANDIDATES]
        return sorted(keep)

    def _sentences_small(self, stems) -> list:
        """:meth:`sentences_for` in a context that is not :attr:`large`: every sentence sharing the stems."""
        postings = self.postings
        fields = self.fields
        counts: dict = {}
        for st in stems:
            for seg in postings.get(st, ()):
                counts[seg] = counts.get(seg, 0) + 1
        return sorted([seg for seg, c in counts.items() if c >= MIN_SLOT or fields[seg]])

    def candidates(self, item, segs=None) -> dict:
        """Evidence items of ``item``'s class sharing slot stems with it (in ``segs``): item -> shared count."""
        counts: dict = {}
        cls = item.cls
        if cls == "pred":
            key = item.key
            held = self.postings.get(key, ())
            budget = None
            if self.large and segs is not None:  # bounded: the claim's candidate sentences
                held = [seg for seg in segs if seg in held]
                budget = 4 * MAX_ITEM_CANDIDATES  # and the first words with the stem in them
            for seg in sorted(held):
                for j in self.stem_positions(seg).get(key, ()):  # the words with that stem, not every word
                    it = self.pred_item(seg, j)
                    shared = len(item.slot & it.slot)
                    if shared:
                        counts[it] = shared
                    if budget is not None:
                        budget -= 1
                        if budget <= 0:
                            return self._bounded(counts)
            return self._bounded(counts)
        if segs is None:
            segs = self.sentences_for(item.slot)
        # the candidates' order may pick one: never a set's order (a process's hash seed)
        stems = sorted(item.slot)
        for seg in segs:
            by_stem = self.segment_items(seg)[1].get(cls)
            if by_stem is None:
                continue  # no item of the class in that sentence
            get = by_stem.get
            for st in stems:
                found = get(st)
                if found:
                    for it in found:
                        counts[it] = counts.get(it, 0) + 1
        return self._bounded(counts)

    def _bounded(self, counts: dict) -> dict:
        """In a large context, the :data:`MAX_ITEM_CANDIDATES` candidates sharing the most slot stems (the
        earliest on a tie), in their order: each is compared with the claim's item, so more would make the
        work per item grow with the context (issue 39: 350 per item in a word salad)."""
        if not self.large or len(counts) <= MAX_ITEM_CANDIDATES:
            return counts
        kept = set(sorted(counts, key=lambda it: (-counts[it], it.seg, it.start))[:MAX_ITEM_CANDIDATES])
        return {it: n for it, n in counts.items() if it in kept}

    def stem_positions(self, seg: int) -> dict:
        """Stem -> positions (from 1: a sentence's first word is never a predicate here) of the words of
        evidence sentence ``seg`` with that stem, in order (made on first use)."""
        got = self._stem_pos.get(seg)
        if got is None:
            got = {}
            for j, t in enumerate(self.tokens(seg)):
                if j and t[4] is not None:
                    got.setdefault(t[4], []).append(j)
            self._stem_pos[seg] = got
        return got

    def name_items(self, key: str) -> list:
        """Name items with lower-case text ``key``, in context order (made on first use: the role check asks
        for a name once per pair of names of every claim)."""
        out = self._name_items.get(key)
        if out is None:
            out = []
            for seg in sorted(self.words.get(key, ())):
                out.extend([it for it in self.segment_items(seg)[0] if it.cls == "name" and it.key == key])
            self._name_items[key] = out
        return out

    def pred_item(self, seg: int, j: int):
        """The predicate item of word ``j`` of evidence sentence ``seg`` (made on first use)."""
        got = self._pred_items.get((seg, j))
        if got is None:
            k = self.spans[seg][0]
            toks = self.tokens(seg)
            a, b, w, _, st = toks[j]
            marked = self._marked.get(seg)
            if marked is None:
                marked = self._marked[seg] = _clause_marked(self.chunk_texts[k], toks)
            got = self._pred_items[(seg, j)] = _item("pred", st, (j in self.negated(seg), marked.get(j)),
                                                      _slot(toks, 0, len(toks), j, j + 1), a, b, w, k, False, seg, j)
            untrack_atomic((got.slot, got.near, got.info))
            untrack_settled((got,))
        return got



def _common(index: dict, keys) -> set:
    """The sentences that ``index`` (a word or stem to its sentences) gives every one of ``keys``."""
    keys = iter(keys)
    out = set(index.get(next(keys, None), ()))
    for k in keys:
        if not out:
            break
        out.intersection_update(index.get(k, ()))
    return out


def _record_fields(chunk_texts) -> tuple:
    from ._structure import field_lookup, parse_fields

    fields = []
    for k, text in enumerate(chunk_texts):
        if ": " not in text or "; " in text or len(text) > 300:
            continue
        got, _ = parse_fields([text])
        fields.extend((k,) + f for f in got)
    return fields, field_lookup([f[1:] for f in fields]) if fields else {}


_COPULA = frozenset({"is", "are", "was", "were", "be", "isn", "aren", "wasn", "weren", "does", "do", "did",
                     "doesn", "don", "didn", "s"})


def _locate(word: str, lows, norms):
    """``(first, last)`` token positions of ``word`` in a claim: one token, or two written apart ("Wi-Fi")."""
    for q in range(len(lows)):
        if lows[q] == word or norms[q] == word:
            return q, q
    for q in range(len(lows) - 1):
        if lows[q] + lows[q + 1] == word:
            return q, q + 1
    return None


def _field_check(text: str, toks, ev: EvidenceUnits) -> list:
    """Findings of the ``field`` check for one claim: a yes/no record field stated the other way."""
    fields, lookup = ev.record
    if not fields:
        return []
    from ._structure import _norm, candidate_fields, token_set

    lows = [t[3] for t in toks]
    norms = [_norm(w) for w in lows]
    tset = token_set(lows)
    out = []
    for j in candidate_fields(lookup, tset):
        k, label, kind, phrase, joined = fields[j]
        if kind == "null":
            continue
        if phrase and all(t in tset for t in phrase):
            got = _locate(phrase[0], lows, norms)
            if got is None:
                continue
            pos, last = got
            while last + 1 < len(toks) and (norms[last + 1] in phrase or lows[last + 1] in phrase):
                last += 1
        elif joined and joined in tset:
            got = _locate(joined, lows, norms)
            if got is None:
                continue
            pos, last = got
        else:
            continue
        negated = any(lows[q] in _NEG_CUES or lows[q] == "non" for q in range(max(0, pos - 3), pos))
        if not negated:  # "no WiFi, outdoor seating or alcohol": one cue over a list, within its clause
            cue = max((q for q in range(pos) if lows[q] in _NEG_CUES), default=None)
            negated = cue is not None and any(lows[q] in ("or", "nor") for q in range(cue, pos)) \
                and not _LIST_END.search(text, toks[cue][1], toks[pos][0])
        if not negated:  # "pets are not allowed", "breakfast isn't included"
            q = last + 1
            while q < len(toks) and lows[q] in _COPULA:
                q += 1
            negated = q > last + 1 and q < len(toks) and lows[q] in _NEG_CUES
        if last + 1 < len(toks) and lows[last + 1] == "free" and "free" not in phrase and joined != "wifi":
            negated = True  # "smoke-free"
        if negated == (kind == "false"):
            continue
        line = ev.chunk_texts[k]
        out.append(Finding("field", toks[pos][0], toks[last][1], text[toks[pos][0]:toks[last][1]],
                           line.strip(), k, 0, len(line)))
    return out


def _same_clock(a, b) -> bool:
    """Whether two times agree on a 12-hour clock when either is written without a.m./p.m. ("5:15", "17:15")."""
    if a.info[1] == "clock" and b.info[1] == "clock":
        return False  # both say which half of the day
    try:
        (ha, ma), (hb, mb) = (k[1:].split(":") for k in (a.key, b.key))
        return ma == mb and int(ha) % 12 == int(hb) % 12
    except ValueError:
        return False


def _number_same(a, b) -> str | None:
    """``None`` when evidence number ``b`` agrees with claim number ``a``; else the check it contradicts.

    Two quantities of one value given per different periods ("1.2 g per week" against "1,200 mg in 24
    hours") contradict under ``unit``; of different values per different periods they are not compared.
    """
    (ka, ua, approx, pa, _), (kb, ub, _, pb, _) = a.info, b.info
    cur_a, cur_b = ka in _CURRENCIES, kb in _CURRENCIES
    agree = "unit" if pa and pb and pa != pb else None
    if ka == "time" or kb == "time":
        if ka != kb:
            return "skip"
        if a.key == b.key or _same_clock(a, b):
            return None  # "5:15" without a.m. or p.m. may be "5:15 PM"
        return "number"
    elif cur_a and cur_b:
        pass
    elif cur_a != cur_b:
        return "skip"  # money against a plain number
    elif (ka == "year") != (kb == "year") or (ka == "century") != (kb == "century"):
        return "skip"
    elif ka in ("%",) and kb not in ("%",) and ub not in ("pt", "bp", "%"):
        return "skip"
    elif kb == "%" and ka != "%" and ua not in ("pt", "bp", "%"):
        return "skip"
    if a.key == b.key:
        if cur_a and cur_b and ka != kb:
            return "unit"
        if ua and ub and ua != ub and _GROUPS.get(ua) == _GROUPS.get(ub) and _GROUPS.get(ua) \
                and "deg" not in (ua, ub):  # "400 degrees" may be Fahrenheit or Celsius
            return "unit"
        if (ka == "%") != (kb == "%") and (ua in ("pt", "bp") or ub in ("pt", "bp")):
            return "unit"
        return agree
    if ua and ub and _GROUPS.get(ua) != _GROUPS.get(ub):
        return "skip"
    if ua and ub and ua != ub and not (ua in _BASE and ub in _BASE) and "deg" not in (ua, ub):
        return "skip"  # units we do not convert (Celsius and Fahrenheit)
    if ua in _BASE and ub in _BASE and ua != ub:
        try:
            x, y = float(a.key) * _BASE[ua], float(b.key) * _BASE[ub]
            if abs(x - y) <= (0.1 if approx else 0.02) * max(abs(x), abs(y)):
                return agree  # a conversion: 1.2 g is 1,200 mg, two and a half years are 30 months
        except ValueError:
            pass
    if (ua is None) != (ub is None) and not (cur_a or cur_b or ka == "%" or b.field):
        return "skip"
    if approx and not (ua in _BASE and ub in _BASE and ua != ub):
        try:
            x, y = float(a.key), float(b.key)
            if abs(x - y) <= 0.1 * max(abs(x), abs(y)):
                return agree
        except ValueError:
            pass
    if pa and pb and pa != pb:
        return "skip"  # 1,200 mg a day may be 8,400 mg a week
    return "date" if ka in ("year", "century") else "number"


def _disagrees(a, b) -> str | None:
    """The check that evidence item ``b`` contradicts claim item ``a`` under, ``None`` when they agree,
    ``"skip"`` when they are not comparable."""
    cls = a.cls
    if cls == "number":
        return _number_same(a, b)
    if cls == "date":
        if a.info != b.info:
            return "skip"
        return None if a.key == b.key else "date"
    if cls == "name":
        if b.field:
            return "skip"
        x, y = a.key, b.key
        if x == y or stem(x) == stem(y) or (min(len(x), len(y)) >= 3 and (x.startswith(y) or y.startswith(x))):
            return None
        if _acronym(a.text) != _acronym(b.text):
            return "skip"  # "FAA" and "Federal Aviation Administration", "CA" and "California"
        if min(len(x), len(y)) >= 5 and _one_edit(x, y):
            return None  # a misspelling ("Parkistan")
        return "entity"
    if cls == "scope":
        if a.key[0] != b.key[0]:
            return "skip"
        if a.key[0] == "bound" and (a.info is None or a.info != b.info):
            return "skip"  # bounds compare only on the same number
        if a.key[1] == b.key[1] or (a.key[1], b.key[1]) in _COMPATIBLE_SCOPES:
            return None
        return "quantifier"
    if cls == "word":
        if a.key == b.key:
            return None
        return "antonym" if b.key in antonyms_of(a.key) else "skip"
    if cls == "pred":
        if a.key != b.key:
            return "skip"
        (sa, la), (sb, lb) = a.info, b.info
        if sa == sb:
            return None
        if la == "hedge" or lb == "hedge":
            return "skip"  # a condition ("if you don't have seaweed"), not an assertion
        if (sa and not lb) or (sb and not la):
            return "negation"  # negated on one side, plainly affirmed on the other
        return "skip"
    return "skip"


def _check_item(item, ev: EvidenceUnits, claim_words: set, query_words: set, claim_values=frozenset(), segs=None,
                out_lower=frozenset(), anchors=frozenset()):
    """The finding for one claim item, or None.

    ``anchors``: the values the claim unit states; for a number, an evidence sentence that states two or
    more of the others too shares two more slot words with it, and its items of the same value are compared ("went up by 12%, from 36% in 2020 to 48% in
    2024" is about the sentence that holds 36%, 2020, 48% and 2024).
    """
    if item.cls == "name" and (item.key in ev.lower or item.key in out_lower):
        return None  # a common word capitalised ("Photos", "Insurance"), not a name
    if item.cls in ("number", "name", "date") and item.text.lower() in query_words and item.cls != "number":
        return None
    if item.cls == "number" and item.key in query_words:
        return None
    if item.cls == "pred" and not item.info[0] and item.key not in ev.neg_stems:
        return None
    cands = ev.candidates(item, segs)
    anchors = anchors - {item.key} if item.cls == "number" else ()
    if anchors and segs:
        for seg in segs:  # the same value in a sentence that states the claim's other values
            if item.key in ev.seg_values(seg) and len(anchors & ev.seg_values(seg)) >= 2:
                for b in ev.segment_items(seg)[0]:
                    if b.cls == "number" and b.key == item.key and b not in cands:
                        cands[b] = 0
    if not cands:
        return None
    best_same, same_item, best_diff, which, check = 0, None, 0, None, None
    unit = item.info[1] if item.cls == "number" and item.info[0] != "time" else None
    for iid, shared in cands.items():
        b = iid
        if anchors:
            common = len(anchors & ev.seg_values(b.seg))
            if common >= 2:  # one shared value is chance; two or more place the sentence
                shared += 2
        if item.cls == "name" and (b.key in ev.lower or b.key in out_lower):
            continue
        verdict = _disagrees(item, b)
        if verdict is not None and item.cls == "name" and b.info == "pos":
            continue  # an evidence word capitalised by its position may agree with a name, never replace one
        if verdict == "skip":
            continue
        if b.field:
            # a record line "label: value": the label must be a word next to the claim's item
            labelled = False
            for _, st in item.near:
                if st in b.slot:
                    labelled = True
                    break
            score = shared + (2 if labelled else 0)
        else:
            labelled = True
            score = shared + 2 * len(item.near & b.near)
        if unit is not None and item.info[3] is not None and item.info[3] == b.info[3]:
            score += 1  # the same period ("per day" and "in 24 hours")
        if unit is not None and unit == b.info[1]:
            score += 1  # the same unit ("mg" and "mg"); a time's "clock" is not one
        elif unit is not None and b.info[1] is None and not b.field:
            score -= 1  # "twelve tablets" is less about a bare "12" than about "8 tablets"
        if verdict is None:
            if score > best_same or (score == best_same and same_item is not None
                                     and (b.seg, b.start) < (same_item.seg, same_item.start)):
                best_same, same_item = score, b
            continue
        if item.cls == "name" and b.key in claim_words:
            continue  # the claim names it too: not a substitute
        if item.cls == "word" and b.key in claim_words:
            continue
        if verdict in ("number", "date") and item.cls == "number" and b.key in claim_values:
            continue  # the claim states that value too
        if not labelled:
            continue
        if verdict in ("quantifier", "antonym") and not b.field and not (item.near & b.near) \
                and not (item.cls == "scope" and item.key[0] == "bound") \
                and not (verdict == "quantifier" and shared >= _SCOPE_SLOT):
            continue  # a scope or opposite word only counts next to the same word, or (a scope word) in a
            # slot of _SCOPE_SLOT shared words ("always causes delays" against "frequently causes ...")
        need = 1 if b.field and item.cls in ("number", "date") else 3 if item.cls == "pred" else MIN_SLOT
        if verdict == "unit" and item.key == b.key:
            need = 1  # one value in two units of one dimension ("-20\u00b0F", "minus 20 degrees Celsius")
        if shared < need:
            continue
        if score > best_diff or (score == best_diff and which is not None
                                 and (b.seg, b.start) < (which.seg, which.start)):
            best_diff, which, check = score, b, verdict  # ties: the first in the context, whatever the set order
    if which is None or best_diff <= best_same:
        if item.cls == "number" and same_item is not None and best_same >= MIN_SLOT + 1:
            ta, tb = item.info[4], same_item.info[4]
            if ta and tb and ta[0] != tb[0]:  # "dropped 4.2%" against "rose 4.2%"
                return Finding("antonym", ta[1], ta[2], ta[3], tb[3], same_item.chunk, tb[1], tb[2])
        return None
    d = which
    if same_item is not None and same_item.seg == d.seg and len(item.near & same_item.near) >= len(item.near & d.near):
        return None  # the agreeing item sits in the same evidence sentence, as close to the claim's words
    if item.cls in ("name", "date", "word") and d.seg in ev.words.get(item.key, ()):
        return None  # the evidence sentence holds the claim's word too
    if item.cls == "date":
        for g in ev.words.get(item.key, ()):
            if ev.fields[g]:
                return None  # a record has a line for that day or month ("Sunday: 7:00-15:00")
    if item.cls == "name" and item.key in ev.words and (len(item.slot & d.slot) < 3 or best_same >= MIN_SLOT):
        return None  # a name the context has elsewhere: only a close slot match says it was swapped in, and
        # not when the context has the name itself in a slot of the claim's words (it may be about that one)
    if item.cls == "pred" and len(item.slot) < 3:
        return None
    b = d
    return Finding(check, item.start, item.end, item.text, b.text, b.chunk, b.start, b.end)


class _Near:
    """Membership in ``segs`` and their neighbours in the same chunk, without listing them."""

    __slots__ = ("ev", "segs")

    def __init__(self, ev, segs):
        self.ev, self.segs = ev, segs

    def __contains__(self, g) -> bool:
        if g in self.segs:
            return True
        spans = self.ev.spans
        if not 0 <= g < len(spans):
            return False
        return any(h in self.segs and 0 <= h < len(spans) and spans[h][0] == spans[g][0] for h in (g - 1, g + 1))


def _displaced_name(items, toks, ev: EvidenceUnits, unit_start: int, claim_words: set, query_words: set):
    """A ``displaced`` finding: a name of the context placed where another name stands: the claim's words
    sit together in one evidence sentence (three or more of them) beside another name (in the same slot),
    while the sentences that hold the claim's name (and the sentences on either side of them in the same
    chunk) share at most one of those words.

    "The architect David Mitchell designed the Royal Exhibition Building" against "... designed by architect
    Joseph Reed ..." and, elsewhere, "constructed by the builder David Mitchell".
    """
    runs = _name_runs(items, unit_start)
    if not runs:
        return None
    claim = {t[4] for t in toks if t[4] is not None and t[0] >= unit_start}
    for run in runs:
        keys = [it.key for it in run]
        asked = False
        for k in keys:
            if k in query_words:
                asked = True
                break
        if asked:
            continue
        segs = _common(ev.words, keys)
        if not segs:
            continue  # a name the context lacks is unsupported, not displaced
        own = {stem(it.key) for it in run}
        words = claim - own
        if len(words) < _DISPLACED_MIN:
            continue
        counts = {}
        if not ev.large:
            near = set(segs)
            n_spans = len(ev.spans)
            for g in segs:
                for h in (g - 1, g + 1):
                    if 0 <= h < n_spans and ev.spans[h][0] == ev.spans[g][0]:
                        near.add(h)
            for st in words:
                for g in ev.postings.get(st, ()):
                    counts[g] = counts.get(g, 0) + 1
        else:
            # bounded: the claim's best candidate sentences, and the sentences holding its name (and their
            # neighbours) when there are few; a name held by many sentences is compared where they meet
            near = _Near(ev, segs)
            pool = set(ev.sentences_for(words))
            if len(segs) <= MAX_CANDIDATES:
                for g in segs:
                    for h in (g - 1, g, g + 1):
                        if h in near:
                            pool.add(h)
            for g in pool:
                shared = len(words & ev.seg_stems(g))
                if shared:
                    counts[g] = shared
        best = max(counts.values(), default=0)
        if best < _DISPLACED_MIN:
            continue
        held = 0
        for g, c in counts.items():
            if g in near and c > held:
                held = c
        if best - held < _DISPLACED_MIN or held > 1:
            continue
        first = run[0]
        for g in sorted([g for g, c in counts.items() if c == best]):
            if g in near:
                continue
            # the name standing in the claim name's place: the same neighbour word first, then the most
            # shared slot words, then the first in the sentence
            others = [b for b in ev.segment_items(g)[0]
                      if b.cls == "name" and b.info is None and b.key not in claim_words and not b.field]
            if not others:
                continue
            b = None  # the first of the most alike (max's choice on a tie)
            top = None
            for o in others:
                rank = (len(first.near & o.near), len(first.slot & o.slot), -o.pos)
                if top is None or rank > top:
                    b, top = o, rank
            if len(first.slot & b.slot) < MIN_SLOT:
                continue
            names = {it.pos: it for it in ev.segment_items(g)[0] if it.cls == "name"}
            end = b
            while end.pos + 1 in names:
                end = names[end.pos + 1]
            k = ev.spans[g][0]
            return Finding("displaced", first.start, run[-1].end, " ".join([it.text for it in run]),
                           ev.chunk_texts[k][b.start:end.end], b.chunk, b.start, end.end)
    return None


def _role_check(items, toks, ev: EvidenceUnits):
    names = [it for it in items if it.cls == "name"]
    if len(names) < 2:
        return None
    # words of one multi-word name ("Talvo" and "Foods" of "Talvo Foods beat Talvo Foods") are not two parties
    together = {(x.key, y.key) for r in _name_runs(items, 0) for x in r for y in r}
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            a, b = names[x], names[y]
            if a.key == b.key or b.pos - a.pos < 2 or (a.key, b.key) in together:
                continue
            between_c = toks[a.pos + 1:b.pos]
            if len(between_c) > 6:
                continue
            if _no_predicate(between_c):
                continue
            pred_c = {t[4] for t in between_c if t[4] is not None}
            by_c = _holds_low(between_c, _BY)
            segs_a = {it.seg: it for it in ev.name_items(a.key)}
            same_order = reverse = None
            for eb in ev.name_items(b.key):
                ea = segs_a.get(eb.seg)
                if ea is None:
                    continue
                etoks = ev.tokens(eb.seg)
                lo, hi = sorted((ea.pos, eb.pos))
                between_e = etoks[lo + 1:hi]
                if len(between_e) > 6 or _holds_low(between_e, _PASSIVE) or _holds_low(between_c, _PASSIVE):
                    continue
                pred_e = {t[4] for t in between_e if t[4] is not None}
                if not (pred_c & pred_e):
                    continue
                by_e = _holds_low(between_e, _BY)
                ordered = ea.pos < eb.pos
                if ordered == (by_c == by_e):
                    same_order = True
                else:
                    reverse = (ea, eb)
            if reverse and not same_order:
                ea, eb = reverse
                first, second = (ea, eb) if ea.pos <= eb.pos else (eb, ea)  # (sorted by position, stable)
                return Finding("role", a.start, b.end, f"{a.text} ... {b.text}", f"{first.text} ... {second.text}",
                               ea.chunk, first.start, second.end)
    return None


_BY = frozenset({"by"})


def _no_predicate(toks) -> bool:
    """Whether no word of ``toks`` is a content word in lower case (only names and stop words)."""
    for t in toks:
        if t[4] is not None and not t[2][:1].isupper():
            return False
    return True


def _holds_low(toks, words) -> bool:
    """Whether a word of ``toks`` is, in lower case, one of ``words``."""
    for t in toks:
        if t[3] in words:
            return True
    return False


def _pairable(run, words) -> bool:
    """Whether a run of name items can be one side of an order swap: every word of it in the context
    (``words``), none a month or weekday or a word in capitals ("PAID", "PAC")."""
    for it in run:
        if it.key not in words or it.key in _CALENDAR_WORDS or (it.text.isupper() and len(it.text) > 1):
            return False
    return True


def _placed(items, last: bool):
    """The item of ``items`` placed last (``last``) or first: the first of those on a tie, as ``max`` and ``min``
    with a key choose."""
    got = items[0]
    for it in items:
        if (it.pos > got.pos) if last else (it.pos < got.pos):
            got = it
    return got


def _name_runs(items, unit_start: int) -> list:
    """The claim unit's names as runs of adjacent name items ("Harwick City")."""
    runs, run = [], []
    for it in items:
        if it.cls != "name" or it.start < unit_start:
            continue
        if run and it.pos == run[-1].pos + 1:
            run.append(it)
        else:
            run = [it]
            runs.append(run)
    return runs


def _order_swap(text: str, items, toks, ev: EvidenceUnits, unit_start: int):
    """A ``role`` finding from name order: two names of the claim, a predicate between them, stand in the
    other order in the evidence sentence that shares most of the claim's words ("Dunmore Athletic won the
    cup final, beating Harwick City" against "Harwick City beat Dunmore Athletic ... in the cup final").

    A passive ("by") on one side only, or names further apart than :data:`_ORDER_GAP` words, are left alone.
    """
    # names the context has ("A320s" between two airlines is not one of the pair); not months, weekdays
    # or all-capital words (a "PAID" stamp, a "PAC" code)
    runs = [r for r in _name_runs(items, unit_start) if _pairable(r, ev.words)]
    if len(runs) < 2:
        return None
    names = {it.key for r in runs for it in r}
    claim = {t[4] if t[4] is not None else "#" + t[3] for t in toks
             if t[0] >= unit_start and t[3] not in names and (t[4] is not None or t[3].isdigit())}
    if len(claim) < MIN_SLOT:
        return None
    for x in range(len(runs) - 1):
        for y in (x + 1,):  # neighbouring names only: "a court ordered A to pay B" is not about the court
            ra, rb = runs[x], runs[y]
            ka, kb = {it.key for it in ra}, {it.key for it in rb}
            ka, kb = ka - kb, kb - ka  # "Declan Keane" and "Orla Keane": told apart by their first names
            if not ka or not kb:
                continue
            between = toks[ra[-1].pos + 1:rb[0].pos]
            if len(between) > _ORDER_GAP or _no_predicate(between):
                continue  # no predicate between them ("Olympia and York")
            gap = text[ra[-1].end:rb[0].start].strip()
            if _holds_low(between, _CONNECTIVES) or gap[:1] == "," or gap[-1:] == ",":
                continue  # another clause ("Finn's resignation comes after the Pope ..."), an apposition
            # the sentences that hold every word of both names ("Gulf Oil" is not "Gulf Canada Resources"),
            # not record lines
            segs = {g for g in _common(ev.words, ka | kb) if not ev.fields[g]}
            if not segs:
                continue
            # the sentence sharing most of the claim's words that holds the two names in the other order, and
            # none holding them in the claim's order that shares as many
            best, seg, kept = 0, None, 0
            for g in sorted(segs):
                named = [it for it in ev.segment_items(g)[0] if it.cls == "name"]
                pa = [it.pos for it in named if it.key in ka]
                pb = [it.pos for it in named if it.key in kb]
                if not pa or not pb:
                    continue
                shared = len(claim & ev.seg_stems(g))
                if min(pa) > max(pb):
                    if shared > best:
                        best, seg = shared, g
                else:
                    kept = max(kept, shared)
            if seg is None or best < MIN_SLOT or kept >= best:
                continue
            named = [it for it in ev.segment_items(seg)[0] if it.cls == "name"]
            pa = [it for it in named if it.key in ka]
            pb = [it for it in named if it.key in kb]
            ea, eb = _placed(pb, True), _placed(pa, False)
            etoks = ev.tokens(seg)
            between_e = etoks[ea.pos + 1:eb.pos]
            gap_e = ev.chunk_texts[ev.spans[seg][0]][ea.end:eb.start].strip()
            if len(between_e) > _ORDER_GAP or _holds_low(between_e, _CONNECTIVES) or _no_predicate(between_e) \
                    or gap_e[:1] == "," or gap_e[-1:] == ",":
                continue  # another clause, no predicate, or an apposition ("Aaron Hernandez, the former ...")
            if _holds_low(between, _BY) != _holds_low(between_e, _BY):
                continue  # "A was bought by B" against "B bought A"
            if _CLAUSE_TURN.search(ev.chunk_texts[ev.spans[seg][0]], ea.end, eb.start) \
                    and "," not in text[ra[-1].end:rb[0].start]:
                continue  # "B missed a payment, prompting A to ...": another clause, not A's role
            at = {it.pos: it for it in named}
            while ea.pos - 1 in at:
                ea = at[ea.pos - 1]
            while eb.pos + 1 in at:
                eb = at[eb.pos + 1]
            k = ev.spans[seg][0]
            text = ev.chunk_texts[k]
            return Finding("role", ra[0].start, rb[-1].end, " ".join([it.text for it in ra]) + " ... "
                           + " ".join([it.text for it in rb]), text[ea.start:eb.end], ea.chunk, ea.start, eb.end)
    return None


def _unsupported_claim(text: str, toks, ev: EvidenceUnits, unit_start: int, unit_end: int, query_stems):
    """An ``unsupported`` finding: a claim unit most of whose content words the context and the query lack."""
    words = [t for t in toks if t[4] is not None and t[0] >= unit_start]
    if len(words) < UNSUPPORTED_MIN:
        return None
    novel = [t for t in words if t[4] not in ev.postings and t[4] not in query_stems]
    if len(novel) < UNSUPPORTED_MIN or len(novel) < UNSUPPORTED_SHARE * len(words):
        return None
    start = next(t[0] for t in toks if t[0] >= unit_start)
    end = max(t[1] for t in toks)
    return Finding("unsupported", start, end, text[start:end], ", ".join(dict.fromkeys(t[2] for t in novel)),
                   -1, 0, 0)


def _query_words(query: str) -> frozenset:
    """The query's lower-case words and numbers (kept for queries up to :data:`_QUERY_CACHED_CHARS`)."""
    return _query_words_cached(query) if len(query) <= _QUERY_CACHED_CHARS else _read_query_words(query)


def _query_stems(query: str) -> frozenset:
    """The query's content stems (kept for queries up to :data:`_QUERY_CACHED_CHARS`)."""
    return _query_stems_cached(query) if len(query) <= _QUERY_CACHED_CHARS else _read_query_stems(query)


_QUERY_CACHED_CHARS = 4000
"""The longest query whose words and stems are kept, as the engine keeps its keys (4,096 long queries are not
kept; issue 41, session 14)."""


def _read_query_words(query: str) -> frozenset:
    words = {w.lower() for w in _WORD_RE.findall(query)}
    words.update(m.value for m in extract_numbers(query))
    return frozenset(words)


def _read_query_stems(query: str) -> frozenset:
    return frozenset(t[4] for t in _tokens(query, 0, len(query)) if t[4] is not None)


@lru_cache(maxsize=4096)
def _query_words_cached(query: str) -> frozenset:
    return _read_query_words(query)


@lru_cache(maxsize=4096)
def _query_stems_cached(query: str) -> frozenset:
    return _read_query_stems(query)


def _inside(found: list, start: int) -> bool:
    """Whether one of the findings ``found`` covers character ``start``."""
    for g in found:
        if g.start <= start < g.end:
            return True
    return False


def claim_checks(output: str, sentences, ev: EvidenceUnits, query: str = "", claim_spans=None,
                 units=None, words=None) -> tuple[dict, list]:
    """Per-sentence check counts (``sent.check.*``) and each sentence's findings.

    Parameters
    ----------
    output : str
    sentences : list of (start, end)
        The output's sentences.
    ev : EvidenceUnits
        The context's evidence items.
    query : str
        Numbers, names and dates of the query are not checked.
    claim_spans : list of (start, end), optional
        The output's claim units from another backend
        (:class:`evqual.text.SpacyClaimSplitter`); by default each sentence is
        cut with :func:`evqual.text.sentence_claims` (backend ``"rules"``).
    units : list of list of (start, end), optional
        Each sentence's rules units, already cut (:func:`evqual.features.analyze` cuts them once for
        this family and the evidence engine); ignored with ``claim_spans``.
    words : TextWords, optional
        The output's :class:`~evqual.text.TextWords` (:func:`evqual.features.analyze` finds the answer's
        words once for every reader); its words are taken instead of scanning again.

    Returns
    -------
    sent : dict
        ``sent.check.<check>.v1`` counts per sentence and ``sent.check.any.v1``
        (how many different checks fired).
    findings : list of list of Finding
    """
    n = len(sentences)
    counts = {c: np.zeros(n) for c in CHECKS}
    findings: list[list[Finding]] = [[] for _ in range(n)]
    qw = _query_words(query or "")
    qs = _query_stems(query or "")
    if words is not None and words.text is not output:
        if words.text == output:
            output = words.text
        else:
            raise ValueError("claim_checks: words must be the TextWords of output")
    out_tokens = words.words_in() if words is not None else _WORD_RE.findall(output)
    out_words = {w.lower() for w in out_tokens}
    out_lower = {w for w in out_tokens if w.islower()}
    for i, (s, e) in enumerate(sentences):
        seen = set()
        if claim_spans is not None:
            units_i = [(max(a, s), min(b, e)) for a, b in claim_spans if a < e and b > s] or [(s, e)]
        else:
            units_i = units[i] if units is not None else sentence_claims(output, s, e)
        sent_toks = _tokens(output, s, e, words) if len(units_i) > 1 else None
        # the values the sentence states anywhere ("one or two tablets ..., but no more than eight"): an
        # evidence value the sentence states too is not one the claim replaced
        sent_values = {m.value for m in _numbers_in(output, s, e, words)} if len(units_i) > 1 and \
            has_digit(output, s, e) else set()
        if len(units_i) > 1:
            sent_values.update([_WORD_VALUES[t[3]] for t in sent_toks if t[3] in _WORD_VALUES])
        for a, b in units_i:
            check_deadline()
            # a unit's items, with slots that reach back into the sentence on the left (a coordinated
            # predicate keeps its subject: "... and closed in 1995") but not past a semicolon (an
            # independent clause) and stop at the unit's end
            left = output.rfind(";", s, a) + 1 or s
            toks = None
            if sent_toks is not None:  # the sentence's words up to the unit's end, tokenized once
                k = bisect.bisect_right([t[1] for t in sent_toks], b)
                if k == len(sent_toks) or sent_toks[k][0] >= b:
                    toks = sent_toks[:k]
                    if left > s:
                        toks = [t for t in toks if t[0] >= left]
            items, toks, _ = _segment_items(output, left, b, first=True, neg_stems=ev.neg_stems, toks=toks,
                                            unit_start=a, words=words)
            # a positional name ("Brightmere agreed ...") counts when the context writes that word, and
            # never in lower case, and neither does the answer
            items = [it for it in items if it.start >= a and not (
                it.cls == "name" and it.info == "pos"
                and (it.key not in ev.words or it.key in ev.lower or it.key in out_lower))]
            # the answer's words (a copy only when the unit has a word the answer-wide set lacks: copying the
            # answer's vocabulary for every unit made long answers quadratic)
            extra = {t[3] for t in toks}.difference(out_words)
            claim_words = out_words | extra if extra else out_words
            values = {it.key for it in items if it.cls == "number"} | sent_values
            # the evidence sentences sharing two words or values with the claim
            segs = ev.sentences_for({t[4] if t[4] is not None else "#" + t[3] for t in toks
                                     if t[4] is not None or t[3].isdigit()}) if items else []
            anchors = frozenset([it.key for it in items if it.cls == "number"])
            found = []
            for it in items:
                check_deadline()
                found.append(_check_item(it, ev, claim_words, qw, values, segs, out_lower, anchors))
            found.append(_role_check(items, toks, ev) or _order_swap(output, items, toks, ev, a))
            moved = _displaced_name(items, toks, ev, a, claim_words, qw)
            if moved is not None:
                for k, f in enumerate(found):
                    if f is not None and f.check == "entity" and moved.start <= f.start < moved.end:
                        # the entity check caught the name too: keep its finding, with the evidence of the
                        # name that stands in the same slot (a word-level pairing can show a weaker one)
                        found[k] = Finding("entity", moved.start, moved.end, moved.mention, moved.evidence,
                                           moved.chunk, moved.ev_start, moved.ev_end)
                found.append(moved)
            found.append(_unsupported_claim(output, toks, ev, a, b, qs))
            found.extend(_field_check(output, toks, ev))
            for f in found:
                if f is None or f.start < a:
                    continue
                key = (f.check, f.start)
                if key in seen or _inside(findings[i], f.start):
                    continue
                seen.add(key)
                findings[i].append(f)
                counts[f.check][i] += 1
    sent = {f"sent.check.{c}.v1": counts[c] for c in CHECKS}
    total = np.zeros(n)
    for c in CHECKS:
        total += counts[c] > 0
    sent["sent.check.any.v1"] = total
    return sent, findings


def checks_response(sent: dict) -> dict:
    """Response-level check features: the most findings of each check in one sentence, and sentences with any."""
    out = {}
    for c in CHECKS + ("any",):
        v = sent[f"sent.check.{c}.v1"]
        out[f"check.{c}.v1"] = float(_MAX(v, None)) if len(v) else 0.0
    v = sent["sent.check.any.v1"]
    out["check.sentences.v1"] = float(_SUM(v > 0, None))
    return out
