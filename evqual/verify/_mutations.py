"""LLM-free MetaRAG mutations: synonym and antonym variants of a factoid by rule (seed 000, Step 2).

Seed 000 asks an LLM for ``N`` synonym (meaning-preserving) and ``N`` antonym
(contradicting) rewrites of each factoid.  :class:`RulesMutator` makes them by
rule instead, each variant **one minimal edit** of the factoid, from named
*mutation sets* that an ablation can switch on and off
(:data:`MUTATION_SETS`):

=================  =========  ===================================================================
set                kind       the edit
=================  =========  ===================================================================
``negation``       antonym    ``not`` after the first auxiliary, copula or modal of a clause
                              ("is" -> "is not", "can" -> "cannot"); "never" or "did not" before a
                              past-tense verb ("opened" -> "never opened", "did not open"); "does not"
                              before a common present-tense verb ("includes" -> "does not include");
                              an existing negation removed ("was not" -> "was", "didn't" -> "did",
                              "never opened" -> "opened", "no injuries" -> "injuries")
``antonym``        antonym    a word swapped for its opposite (:data:`evqual.text.ANTONYM_PAIRS`)
``number``         antonym    one number changed by a realistic amount in the same format
                              ("12%" -> "18%", "1,200" -> "1,800", "3.5" -> "5.2"), or a number word
                              ("three" -> "five"); years are left to ``date``
``date``           antonym    one year shifted ("1932" -> "1935", "1990s" -> "1980s"), one month or
                              weekday swapped ("March 3" -> "April 3", "Monday" -> "Tuesday")
``quantifier``     antonym    a quantifier or modal of another scope
                              (:data:`evqual.text.QUANTIFIER_SWAPS`: "some" -> "all", "may" -> "must")
``lexicon``        synonym    a word or phrase swapped for a synonym from the shipped, hand-written
                              lexicon ``evqual/evidence/synonyms.tsv`` (:func:`load_synonyms`)
``number_format``  synonym    one number written another way: "3" <-> "three", "1,200" <-> "1200",
                              "50%" <-> "50 percent", "September" -> "Sept."
``paraphrase``     synonym    a harmless rewording: a fronted phrase moved to the end and back ("In
                              1932, the bridge opened." <-> "The bridge opened in 1932."), a
                              negation or copula contracted or expanded ("did not" <-> "didn't")
=================  =========  ===================================================================

Case is kept (a capitalised word's replacement is capitalised).  Words inside
a name (capitalised, not at the start) and hyphenated words are left alone.

Selection is deterministic given ``seed``: every set yields its candidates,
each set's order is shuffled by a generator seeded with ``(seed, kind,
factoid)``, and the ``n`` variants are taken round-robin across the sets (so
``n=2`` mixes, say, a negation and a number change), deduplicated, never equal
to the factoid.  When the factoid offers fewer than ``n`` edits the list is
shorter; :class:`~evqual.verify.MetaRAG` records the shortfall
(:attr:`~evqual.verify.FactoidResult.missing`).
"""

from __future__ import annotations

import hashlib
import random
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..text import MONTHS, NUMBER_WORDS, QUANTIFIER_SWAPS, WEEKDAYS, antonyms_of, extract_numbers

__all__ = ["ANTONYM_SETS", "MUTATION_SETS", "RulesMutator", "SYNONYM_SETS", "load_synonyms"]

#: Antonym (contradicting) mutation sets, in their default order.
ANTONYM_SETS = ("negation", "antonym", "number", "date", "quantifier")
#: Synonym (meaning-preserving) mutation sets, in their default order.
SYNONYM_SETS = ("lexicon", "number_format", "paraphrase")
#: The mutation sets of each kind.
MUTATION_SETS = {"antonym": ANTONYM_SETS, "synonym": SYNONYM_SETS}

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_DIGITS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+")

# ------------------------------------------------------------------------------------------- helpers


def _case_like(word: str, model: str) -> str:
    if len(model) > 1 and model.isupper() and word.isascii():
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _edit(text: str, a: int, b: int, new: str) -> str:
    """``text`` with ``[a, b)`` replaced by ``new``; an article "a"/"an" just before follows the new word."""
    m = _ARTICLE.search(text, 0, a) if a else None
    if m is not None and m.end() == a and new[:1].isalpha():
        article = "an" if _vowel_sound(new) else "a"
        old = m.group(1)
        if old.lower() != article:
            return text[:m.start(1)] + _case_like(article, old) + text[m.end(1):a] + new + text[b:]
    return text[:a] + new + text[b:]


_ARTICLE = re.compile(r"(?<![\w'])([Aa]n?) $")


def _vowel_sound(word: str) -> bool:
    low = word.lower()
    if low.startswith(("uni", "use", "usu", "eu", "one", "once")):
        return False
    return low[:1] in "aeiou" or low.startswith(("hour", "honest", "honor", "honour"))


def _words(text: str) -> list:
    """``(start, end, word)`` of the ASCII words of ``text``."""
    return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]


def _first_word_start(text: str) -> int:
    m = _WORD.search(text)
    return m.start() if m else -1


def _in_name_or_compound(text: str, a: int, b: int, first: int) -> bool:
    """A capitalised word not at the start (part of a name) or a word joined by a hyphen."""
    w = text[a:b]
    if w[:1].isupper() and a != first:
        return True
    return (a > 0 and text[a - 1] in "-/") or (b < len(text) and text[b] in "-/")


def _prev_word(words, i):
    return words[i - 1][2].lower() if i > 0 else ""


def _next_word(words, i):
    return words[i + 1][2].lower() if i + 1 < len(words) else ""


# ------------------------------------------------------------------------------------------- negation

_AUX = frozenset({"is", "are", "was", "were", "am", "has", "have", "had", "can", "could", "will", "would", "shall",
                  "should", "may", "might", "must", "does", "do", "did"})
_NEGATED = {"isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "doesn't": "does", "don't": "do",
            "didn't": "did", "hasn't": "has", "haven't": "have", "hadn't": "had", "can't": "can",
            "couldn't": "could", "won't": "will", "wouldn't": "would", "shouldn't": "should", "mustn't": "must",
            "cannot": "can"}
_NEG_WORDS = frozenset({"not", "never", "no", "n't"}) | frozenset(_NEGATED)
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her", "our",
                          "my", "your", "some", "any", "each", "every", "no", "all", "both", "many", "more",
                          "most", "of", "with", "well", "newly", "recently", "so", "too", "very", "also"})
_NOT_BASE = _DETERMINERS | frozenset({"it", "he", "she", "they", "we", "you", "i", "there", "nothing",
                                      "everything", "something", "anything", "so", "not", "never", "to"})
_IRREGULAR = {
    "went": "go", "made": "make", "took": "take", "gave": "give", "found": "find", "said": "say", "told": "tell",
    "won": "win", "lost": "lose", "began": "begin", "became": "become", "came": "come", "got": "get",
    "held": "hold", "built": "build", "led": "lead", "left": "leave", "met": "meet", "paid": "pay", "sold": "sell",
    "bought": "buy", "brought": "bring", "thought": "think", "wrote": "write", "saw": "see", "knew": "know",
    "grew": "grow", "rose": "rise", "fell": "fall", "ran": "run", "spent": "spend", "sent": "send", "kept": "keep",
    "felt": "feel", "stood": "stand", "taught": "teach", "caught": "catch", "fought": "fight", "chose": "choose",
    "drove": "drive", "ate": "eat", "flew": "fly", "drew": "draw", "broke": "break", "spoke": "speak",
    "wore": "wear", "won't": "will", "struck": "strike", "sought": "seek", "shot": "shoot", "fled": "flee",
    "froze": "freeze", "hid": "hide", "lent": "lend", "meant": "mean", "rode": "ride", "sang": "sing",
    "sank": "sink", "swore": "swear", "threw": "throw", "understood": "understand", "woke": "wake",
}
_PRESENT = {"includes": "include", "contains": "contain", "requires": "require", "provides": "provide",
            "offers": "offer", "allows": "allow", "supports": "support", "covers": "cover", "shows": "show",
            "says": "say", "states": "state", "remains": "remain", "means": "mean", "needs": "need", "uses": "use",
            "makes": "make", "takes": "take", "gives": "give", "affects": "affect", "causes": "cause",
            "reduces": "reduce", "increases": "increase", "prevents": "prevent", "applies": "apply",
            "owns": "own", "employs": "employ", "operates": "operate", "produces": "produce", "serves": "serve",
            "plans": "plan", "expects": "expect", "believes": "believe", "knows": "know", "works": "work",
            "lives": "live", "holds": "hold", "leads": "lead", "sells": "sell", "accepts": "accept",
            "treats": "treat", "recommends": "recommend", "opens": "open", "closes": "close", "costs": "cost",
            "lasts": "last", "exists": "exist", "depends": "depend", "helps": "help", "involves": "involve"}
_PARTICIPLE_IRREGULAR = frozenset({"been", "done", "made", "gone", "won", "lost", "seen", "taken", "given", "known",
                                   "shown", "grown", "written", "become", "begun", "held", "built", "led", "left",
                                   "met", "paid", "sold", "bought", "brought", "thought", "found", "told", "said",
                                   "kept", "sent", "spent", "got", "gotten", "had", "put", "set", "run", "come",
                                   "fallen", "risen", "chosen", "driven", "broken", "spoken", "stood", "taught"})


def _ed_lemma(word: str) -> str | None:
    """The base form of a regular ``-ed`` past tense when the rule is sure of it, else None."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if not w.endswith("ed") or len(w) < 5:
        return None
    stem = w[:-2]
    if w.endswith("ied"):
        return w[:-3] + "y"
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "aeioulsfz":
        return stem[:-1]  # stopped -> stop
    for suffix in ("at", "iz", "is", "uc", "ur", "ir", "v", "g", "os", "aus", "us", "iv", "ag", "ag"):
        if stem.endswith(suffix) and not stem.endswith("gg"):
            return stem + "e"  # created, organized, produced, moved, changed, closed, caused, used
    if stem.endswith(("en", "er", "ll", "ss", "ck", "sh", "ch", "ain", "ect", "ort", "ist", "and", "ard", "ect",
                      "orm", "ess", "ount", "ept", "ow", "ay", "ey", "oy", "ew", "rk", "lk", "nk", "rn", "rm",
                      "lp", "mp", "nd", "rt", "st", "ft", "ct", "pt", "nt", "rd", "ld", "wn")):
        return stem  # opened, entered, called, passed, attacked, reported, announced? (no), ...
    return None


def _negation_candidates(text: str) -> list:
    words = _words(text)
    out = []
    seen_clause_aux = False
    for i, (a, b, w) in enumerate(words):
        low = w.lower()
        nxt = _next_word(words, i)
        prev = _prev_word(words, i)
        if low in _NEGATED:  # contracted negation or cannot: remove it
            out.append(_edit(text, a, b, _case_like(_NEGATED[low], w)))
            continue
        if low in ("not", "never") and i > 0:
            # "was not" -> "was", "never opened" -> "opened" (the word and the spaces before it)
            j = a
            while j > 0 and text[j - 1] == " ":
                j -= 1
            out.append(text[:j] + text[b:])
            continue
        if low == "no" and i > 0 and nxt and nxt not in ("one", "longer", "more", "less", "matter", "doubt") \
                and i + 1 < len(words) and words[i + 1][0] == b + 1:
            out.append(text[:a] + text[words[i + 1][0]:])  # "no injuries" -> "injuries"
            continue
        if low in _AUX and i > 0 and w.islower() and nxt not in _NEG_WORDS and nxt != "to":
            if low in ("has", "have", "had") and not (nxt in _PARTICIPLE_IRREGULAR or nxt.endswith(("ed", "en"))):
                if nxt and nxt not in ("been",):
                    do = {"has": "does", "have": "do", "had": "did"}[low]
                    out.append(_edit(text, a, b, f"{do} not have"))
                continue
            if low in ("do", "does", "did") and (not nxt or nxt in _NOT_BASE):
                continue
            if low == "may" and w[:1].isupper():
                continue
            out.append(_edit(text, a, b, w + ("not" if low == "can" else " not")))
            seen_clause_aux = True
            continue
        if i == 0 or not w.islower() or prev in _AUX or prev in _DETERMINERS or prev in _NEG_WORDS:
            continue
        if low in _PRESENT and not seen_clause_aux:
            does = "do" if prev in ("they", "we", "i", "you") else "does"
            out.append(_edit(text, a, b, f"{does} not {_PRESENT[low]}"))
            continue
        lemma = _ed_lemma(low) if (low.endswith("ed") or low in _IRREGULAR) else None
        if (low.endswith("ed") and len(low) >= 5) or low in _IRREGULAR:
            if (a > 0 and text[a - 1] in "-/") or (b < len(text) and text[b] in "-/"):
                continue
            if lemma is not None:
                out.append(_edit(text, a, b, f"did not {lemma}"))
            out.append(_edit(text, a, b, f"never {w}"))
            seen_clause_aux = True
    return out


# ------------------------------------------------------------------------------------------- antonyms


def _antonym_candidates(text: str) -> list:
    words = _words(text)
    first = _first_word_start(text)
    out = []
    for a, b, w in words:
        low = w.lower()
        opposites = antonyms_of(low)
        if not opposites or _in_name_or_compound(text, a, b, first):
            continue
        for opp in sorted(opposites):
            out.append(_edit(text, a, b, _case_like(opp, w)))
    return out


def _quantifier_candidates(text: str) -> list:
    words = _words(text)
    first = _first_word_start(text)
    out = []
    for i, (a, b, w) in enumerate(words):
        low = w.lower()
        if low not in QUANTIFIER_SWAPS or _in_name_or_compound(text, a, b, first):
            continue
        if low == "may" and w[:1].isupper():
            continue
        if low == "all" and _prev_word(words, i) == "at":
            continue
        out.append(_edit(text, a, b, _case_like(QUANTIFIER_SWAPS[low], w)))
    return out


# ------------------------------------------------------------------------------------------- numbers and dates

_WORD_VALUES = {w: v for w, v in NUMBER_WORDS.items() if w not in ("one", "half", "hundred", "dozen")}
_VALUE_WORDS = {v: w for w, v in _WORD_VALUES.items()}
_SMALL_WORDS = {v: w for w, v in NUMBER_WORDS.items() if 2 <= v <= 12}
_MONTH_ABBR = {"january": "Jan.", "february": "Feb.", "march": "Mar.", "april": "Apr.", "august": "Aug.",
               "september": "Sept.", "october": "Oct.", "november": "Nov.", "december": "Dec."}


def _is_year(m, text: str) -> bool:
    raw = m.text
    return (m.unit == "" and len(raw) == 4 and raw.isdigit() and 1000 <= int(raw) <= 2100
            and not (m.start > 0 and text[m.start - 1] in "$.,"))


def _digit_runs(text: str):
    """``(start, end, literal, mention)`` of the digits of each number mention (not times, ordinals, codes)."""
    out = []
    for m in extract_numbers(text):
        if m.unit == "time":
            continue
        d = _DIGITS.search(text, m.start, m.end)
        if d is None:
            continue
        after = text[d.end():d.end() + 1]
        before = text[d.start() - 1:d.start()] if d.start() else ""
        if after.isalpha() and not (after == "s" and d.group().endswith("0")):
            continue  # 3rd, 10am, 5k
        if before.isalpha() or after.isdigit():
            continue
        out.append((d.start(), d.end(), d.group(), m))
    return out


def _format_like(value: float, literal: str) -> str:
    decimals = len(literal.split(".", 1)[1]) if "." in literal else 0
    if decimals:
        s = f"{value:,.{decimals}f}" if "," in literal else f"{value:.{decimals}f}"
        return s[1:] if literal.startswith(".") and s.startswith("0.") else s
    v = int(round(value))
    s = f"{v:,}" if "," in literal else str(v)
    if literal.startswith("0") and len(literal) > 1:
        s = s.zfill(len(literal))
    return s


def _perturbed(literal: str, percent: bool) -> list:
    """Other values in ``literal``'s format, realistic moves first (none equal to it)."""
    try:
        value = float(literal.replace(",", ""))
    except ValueError:
        return []
    if value == 0:
        moves = [1.0, 2.0, 5.0]
    elif "." not in literal and value < 10:
        moves = [value + 2, value + 1, value - 1, value * 2, value + 3]
    else:
        factors = (1.5, 0.5, 2.0, 0.75, 1.25) if not percent or value <= 60 else (0.5, 0.75, 1.25, 0.25, 0.9)
        moves = [value * f for f in factors]
    out = []
    for v in moves:
        if v < 0:
            continue
        s = _format_like(v, literal)
        if s != literal and s not in out and float(s.replace(",", "")) != value:
            out.append(s)
    return out


_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MONTH_NAME = "|".join(sorted({*MONTHS, *(x.rstrip(".").lower() for x in ("Jan.", "Feb.", "Mar.", "Apr.", "Aug.",
                                                                         "Sept.", "Sep.", "Oct.", "Nov.", "Dec.")),
                               "jun", "jul"}, key=len, reverse=True))
_MONTH_BEFORE = re.compile(rf"\b({_MONTH_NAME})\.?\s+$", re.IGNORECASE)
_MONTH_AFTER = re.compile(rf"^(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAME})\b", re.IGNORECASE)


def _month_index(name: str) -> int:
    low = name.lower().rstrip(".")
    for k, month in enumerate(MONTHS):
        if month.startswith(low[:3]):
            return k
    return -1


def _day_of_month(text: str, a: int, b: int) -> int | None:
    """The days in the month when the number at ``text[a:b]`` is a day of it ("September 30", "30 Sept.",
    "the 3rd of May"), else None."""
    m = _MONTH_BEFORE.search(text[max(0, a - 12):a]) or _MONTH_AFTER.match(text[b:b + 16])
    if m is None:
        return None
    k = _month_index(m.group(1))
    return _MONTH_DAYS[k] if k >= 0 else None


def _other_days(literal: str, days: int) -> list:
    """Other days of the same month, near ones first (a day never moves out of its month: no "September 45")."""
    d = int(literal)
    return [str(x) for x in (d + 1, d - 1, d + 7, d - 7, d + 2) if 1 <= x <= days and x != d]


def _number_candidates(text: str) -> list:
    slots = []
    for a, b, literal, m in _digit_runs(text):
        if _is_year(m, text) or len(literal.replace(",", "").replace(".", "")) > 15:
            continue
        days = _day_of_month(text, a, b) if literal.isdigit() and int(literal) <= 31 else None
        moves = _other_days(literal, days) if days else _perturbed(literal, m.unit == "%")
        slots.append([_edit(text, a, b, s) for s in moves])
    words = _words(text)
    for i, (a, b, w) in enumerate(words):
        low = w.lower()
        if low in _WORD_VALUES:
            v = _WORD_VALUES[low]
            others = sorted((o for o in _VALUE_WORDS if o != v and o > 1), key=lambda o: (abs(o - v - 2), o))
            slots.append([_edit(text, a, b, _case_like(_VALUE_WORDS[o], w)) for o in others[:3]])
    return _interleave(slots)


_YEAR_SHIFTS = (3, -2, 1, -5, 10)
_DECADE_SHIFTS = (10, -10, 20)
_MONTH_SHIFTS = (1, -1, 3, -4, 6)
_DAY_SHIFTS = (1, -1, 2, -3)


def _month_word(text: str, words, i) -> bool:
    a, b, w = words[i]
    low = w.lower()
    if low not in MONTHS or not w[:1].isupper():
        return False
    if low in ("may", "march"):  # the modal and the verb: only next to a number
        around = text[max(0, a - 4):a] + text[b:b + 4]
        return any(c.isdigit() for c in around)
    return True


def _date_candidates(text: str) -> list:
    slots = []
    for a, b, literal, m in _digit_runs(text):
        if not _is_year(m, text):
            continue
        decade = text[b:b + 1] == "s"
        shifts = _DECADE_SHIFTS if decade else _YEAR_SHIFTS
        slots.append([_edit(text, a, b, str(int(literal) + s)) for s in shifts if 1000 <= int(literal) + s <= 2999])
    words = _words(text)
    for i, (a, b, w) in enumerate(words):
        low = w.lower()
        if _month_word(text, words, i):
            k = MONTHS.index(low)
            alts = [MONTHS[(k + s) % 12] for s in _MONTH_SHIFTS]
            slots.append([_edit(text, a, b, _case_like(x, w)) for x in alts if x not in ("may", "march")])
        elif low in WEEKDAYS and w[:1].isupper():
            k = WEEKDAYS.index(low)
            slots.append([_edit(text, a, b, _case_like(WEEKDAYS[(k + s) % 7], w)) for s in _DAY_SHIFTS])
    return _interleave(slots)


def _number_format_candidates(text: str) -> list:
    out = []
    for a, b, literal, m in _digit_runs(text):
        if _is_year(m, text):
            continue
        plain = literal.replace(",", "")
        after = text[b:]
        if m.unit == "" and "." not in literal and plain.isdigit() and 2 <= int(plain) <= 12 \
                and not (a > 0 and text[a - 1] in "$#") and not re.match(r"\s?(%|percent)", after):
            out.append(_edit(text, a, b, _SMALL_WORDS[int(plain)]))
        if "," in literal:
            out.append(_edit(text, a, b, plain))
        elif "." not in plain and plain.isdigit() and int(plain) >= 10000 and not plain.startswith("0"):
            out.append(_edit(text, a, b, f"{int(plain):,}"))
        if m.unit == "%":
            tail = re.match(r"(\s?%)|(\s?percent\b)", text[b:], re.IGNORECASE)
            if tail is not None:
                new = " percent" if tail.group(1) else "%"
                out.append(text[:b] + new + text[b + tail.end():])
    words = _words(text)
    for i, (a, b, w) in enumerate(words):
        low = w.lower()
        if low in _SMALL_WORDS.values() and low in _WORD_VALUES and w.islower():
            nxt = _next_word(words, i)
            if nxt not in ("of", "another", "other", "-"):
                out.append(_edit(text, a, b, str(_WORD_VALUES[low])))
        elif low in _MONTH_ABBR and _month_word(text, words, i):
            new = _MONTH_ABBR[low]
            if text[b:b + 1] == ".":
                new = new[:-1]
            out.append(_edit(text, a, b, new))
    return out


# ------------------------------------------------------------------------------------------- synonyms and paraphrases

_LEXICON_FILE = "synonyms.tsv"


def load_synonyms(path=None) -> dict:
    """The synonym lexicon: each term mapped to the terms it can be swapped with, in file order.

    The file (default: the shipped, hand-written ``evqual/evidence/synonyms.tsv``, which the evidence
    engine reads too) has one
    group of interchangeable lower-case terms per line, separated by tabs; a term may be a phrase
    ("set up"); ``#`` starts a comment line.  A term in several groups gets the union.

    Parameters
    ----------
    path : str or Path, optional

    Returns
    -------
    dict of str to tuple of str

    Raises
    ------
    ValueError
        On a bad line, naming the file, the line and the field.

    Examples
    --------
    >>> syn = load_synonyms()
    >>> "purchased" in syn["bought"], len(syn) > 500
    (True, True)
    """
    if path is None:
        text = resources.files("evqual.evidence").joinpath(_LEXICON_FILE).read_text(encoding="utf-8")
        name = f"evqual/evidence/{_LEXICON_FILE}"
        return dict(_parse_synonyms(text, name))
    p = Path(path)
    return dict(_parse_synonyms(p.read_text(encoding="utf-8"), str(p)))


@lru_cache(maxsize=1)
def _shipped_synonyms() -> dict:
    return load_synonyms()


def _parse_synonyms(text: str, name: str) -> dict:
    out: dict = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        terms = line.rstrip("\n").split("\t")
        for f, t in enumerate(terms, 1):
            if not t or t != t.strip() or t != t.lower() or not re.fullmatch(r"[a-z][a-z' -]*[a-z]", t):
                raise ValueError(f"{name}, line {n}, field {f}: a term must be lower-case words "
                                 f"(letters, spaces, hyphens, apostrophes); got {t!r}")
        if len(terms) < 2:
            raise ValueError(f"{name}, line {n}: a group needs at least two tab-separated terms; got {terms!r}")
        if len(set(terms)) != len(terms):
            raise ValueError(f"{name}, line {n}: a term is repeated in the group {terms!r}")
        for t in terms:
            bucket = out.setdefault(t, [])
            bucket.extend(o for o in terms if o != t and o not in bucket)
    return {k: tuple(v) for k, v in out.items()}


def _lexicon_candidates(text: str, synonyms: dict) -> list:
    if not synonyms:
        return []
    first = _first_word_start(text)
    words = _words(text)
    longest = max((k.count(" ") + 1 for k in synonyms), default=1)
    slots = []
    taken = set()
    for i in range(len(words)):
        for span in range(min(longest, len(words) - i), 0, -1):
            a, b = words[i][0], words[i + span - 1][1]
            phrase = text[a:b]
            key = " ".join(w for _, _, w in words[i:i + span]).lower()
            if key not in synonyms or re.search(r"[^A-Za-z' -]", phrase) or " " * 2 in phrase:
                continue
            if any(j in taken for j in range(i, i + span)) or _in_name_or_compound(text, a, words[i][1], first):
                continue
            slots.append([_edit(text, a, b, _case_like(s, phrase)) for s in synonyms[key]])
            taken.update(range(i, i + span))
            break
    return _interleave(slots)


_FRONTED = re.compile(r"^(?P<lead>\s*)(?P<phrase>(?:In|On|By|During|Since|After|Before|At|According to|Under|"
                      r"Until|From|For|Throughout)\s[^,;:]{1,60}?),\s+(?P<rest>[^,;:]{3,}?)(?P<end>[.!]?\s*)$")
_TRAILING = re.compile(r"^(?P<lead>\s*)(?P<rest>\S[^,;:]*?)\s+(?P<phrase>(?:in|on|during|since|by)\s(?:(?:early|"
                       r"late|mid)\s)?(?:[A-Z][a-z]+\s(?:\d{1,2},\s)?)?\d{4}s?)(?P<end>[.!]?\s*)$")
_FUNCTION_START = frozenset({"the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her", "our",
                             "it", "they", "he", "she", "we", "there", "some", "many", "most", "all", "each"})
_CONTRACT = (("is not", "isn't"), ("are not", "aren't"), ("was not", "wasn't"), ("were not", "weren't"),
             ("does not", "doesn't"), ("do not", "don't"), ("did not", "didn't"), ("has not", "hasn't"),
             ("have not", "haven't"), ("had not", "hadn't"), ("cannot", "can't"), ("could not", "couldn't"),
             ("will not", "won't"), ("would not", "wouldn't"), ("should not", "shouldn't"), ("it is", "it's"),
             ("there is", "there's"), ("they are", "they're"), ("we are", "we're"), ("that is", "that's"))


def _lower_first(rest: str) -> str:
    m = _WORD.match(rest)
    if m and m.group().lower() in _FUNCTION_START and m.group()[:1].isupper() and m.group()[1:].islower():
        return rest[:1].lower() + rest[1:]
    return rest


def _paraphrase_candidates(text: str) -> list:
    out = []
    m = _FRONTED.match(text)
    if m:
        phrase = m.group("phrase")
        rest = m.group("rest")
        first = phrase.split(" ", 1)[0]
        phrase = (first.lower() if first != first.upper() else first) + phrase[len(first):]
        out.append(f"{m.group('lead')}{rest[:1].upper()}{rest[1:]} {phrase}{m.group('end')}")
    m = _TRAILING.match(text)
    if m and len(m.group("rest").split()) >= 2:
        rest = _lower_first(m.group("rest"))
        phrase = m.group("phrase")
        out.append(f"{m.group('lead')}{phrase[:1].upper()}{phrase[1:]}, {rest}{m.group('end')}")
    for full, short in _CONTRACT:
        for src, dst in ((full, short), (short, full)):
            for hit in re.finditer(rf"\b{re.escape(src)}\b", text, re.IGNORECASE):
                out.append(_edit(text, hit.start(), hit.end(), _case_like(dst, hit.group())))
    return out


# ------------------------------------------------------------------------------------------- the mutator


def _interleave(slots) -> list:
    """First alternative of every slot, then the second of every slot, and so on."""
    out = []
    for rank in range(max((len(s) for s in slots), default=0)):
        out.extend(s[rank] for s in slots if rank < len(s))
    return out


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


class RulesMutator:
    """LLM-free MetaRAG variants from named mutation sets (see the module docstring).

    Parameters
    ----------
    seed : int, default=0
        Seeds the per-factoid shuffles; the same seed, factoid and kind give the same variants.
    antonym_sets : sequence of str, default=ANTONYM_SETS
        Antonym mutation sets in use (a subset of :data:`ANTONYM_SETS`).
    synonym_sets : sequence of str, default=SYNONYM_SETS
        Synonym mutation sets in use (a subset of :data:`SYNONYM_SETS`).
    synonyms : dict or str or Path, optional
        A lexicon (as :func:`load_synonyms` returns) or its TSV file; default the shipped one.

    Examples
    --------
    >>> m = RulesMutator()
    >>> m.mutate("The bridge opened in 1932.", "antonym", 2)
    ['The bridge opened in 1935.', 'The bridge closed in 1932.']
    >>> m.mutate("The bridge opened in 1932.", "synonym", 2)  # one paraphrase only: fewer than n
    ['In 1932, the bridge opened.']
    >>> RulesMutator(antonym_sets=["number"]).mutate("Sales rose 12% to 1,200 units.", "antonym", 3)
    ['Sales rose 18% to 1,200 units.', 'Sales rose 12% to 600 units.', 'Sales rose 12% to 2,400 units.']
    """

    name = "rules"

    def __init__(self, *, seed: int = 0, antonym_sets=ANTONYM_SETS, synonym_sets=SYNONYM_SETS, synonyms=None):
        self.seed = seed
        self.antonym_sets = antonym_sets
        self.synonym_sets = synonym_sets
        self.synonyms = synonyms
        self._check()

    def _check(self):
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed must be an int; got {self.seed!r}")
        for kind, given in (("antonym", self.antonym_sets), ("synonym", self.synonym_sets)):
            if isinstance(given, str) or not hasattr(given, "__iter__"):
                raise ValueError(f"{kind}_sets must be a sequence of set names; got {given!r}")
            unknown = [s for s in given if s not in MUTATION_SETS[kind]]
            if unknown:
                raise ValueError(f"{kind}_sets: unknown mutation set(s) {unknown}; "
                                 f"known: {list(MUTATION_SETS[kind])}")
        self.antonym_sets = tuple(self.antonym_sets)
        self.synonym_sets = tuple(self.synonym_sets)

    def _lexicon(self) -> dict:
        if self.synonyms is None:
            return _shipped_synonyms()
        if isinstance(self.synonyms, dict):
            return self.synonyms
        self.synonyms = load_synonyms(self.synonyms)
        return self.synonyms

    def candidates(self, factoid: str, kind: str) -> dict:
        """Every variant each set in use can make of ``factoid``, in the set's own order (not shuffled).

        >>> RulesMutator().candidates("Sales rose 12%.", "antonym")["antonym"]
        ['Sales declined 12%.', 'Sales dropped 12%.', 'Sales fell 12%.']
        """
        if kind not in MUTATION_SETS:
            raise ValueError(f"kind must be one of {tuple(MUTATION_SETS)}; got {kind!r}")
        if not isinstance(factoid, str):
            raise TypeError(f"factoid must be a string; got {type(factoid).__name__}")
        sets = self.antonym_sets if kind == "antonym" else self.synonym_sets
        makers = {"negation": _negation_candidates, "antonym": _antonym_candidates, "number": _number_candidates,
                  "date": _date_candidates, "quantifier": _quantifier_candidates,
                  "lexicon": lambda t: _lexicon_candidates(t, self._lexicon()),
                  "number_format": _number_format_candidates, "paraphrase": _paraphrase_candidates}
        own = _norm(factoid)
        out = {}
        for s in sets:
            seen, kept = set(), []
            for c in makers[s](factoid):
                key = _norm(c)
                if key != own and key not in seen and c.strip():
                    seen.add(key)
                    kept.append(c)
            out[s] = kept
        return out

    def mutate(self, factoid: str, kind: str, n: int) -> list:
        """Up to ``n`` distinct variants of ``kind`` (``"synonym"`` or ``"antonym"``), none equal to ``factoid``."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"n must be an int >= 0; got {n!r}")
        cands = self.candidates(factoid, kind)
        if n == 0:
            return []
        digest = hashlib.sha256(f"{self.seed}|{kind}|{factoid}".encode("utf-8", "surrogatepass")).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        order = [s for s in cands if cands[s]]
        rng.shuffle(order)
        # keep each set's own order for its first pick (the most realistic edit), shuffle the rest
        queues = {}
        for s in order:
            head, tail = cands[s][:1], cands[s][1:]
            rng.shuffle(tail)
            queues[s] = head + tail
        out, seen = [], {_norm(factoid)}
        while len(out) < n and any(queues.values()):
            for s in order:
                if queues[s] and len(out) < n:
                    c = queues[s].pop(0)
                    if _norm(c) not in seen:
                        seen.add(_norm(c))
                        out.append(c)
        return out

