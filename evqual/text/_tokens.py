"""Tokenisation shared by every lexical feature.

Tokens are maximal runs of Unicode letters and digits (``[^\\W_]+``) in the
lower-cased text, so ``"U.S.-based"`` gives ``["u", "s", "based"]`` and
``"1,600"`` gives ``["1", "600"]``.  *Content* tokens drop English stop words
(scikit-learn's ``ENGLISH_STOP_WORDS`` list, as :data:`STOP_WORDS`): they
carry the evidence signal, while stop words mostly measure length.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .._build import kernel

__all__ = ["tokenize", "content_tokens", "token_spans", "word_spans", "STOP_WORDS", "TOKEN_PATTERN", "has_digit",
           "has_alnum", "has_camel_case", "char_positions", "has_cue_word"]

TOKEN_PATTERN = r"[^\W_]+"
_TOKEN_RE = re.compile(TOKEN_PATTERN)
_SCAN = kernel("evqual.text._scan", "scan_words")  # the compiled scanner, or None: the regular expressions
# the compiled character tests (``evqual/text/_scan.pyx``), or None: the regular expressions they stand for
_HAS_DIGIT = kernel("evqual.text._scan", "has_digit")
_HAS_ALNUM = kernel("evqual.text._scan", "has_alnum")
_HAS_CAMEL = kernel("evqual.text._scan", "has_camel_case")
_CHAR_POSITIONS = kernel("evqual.text._scan", "char_positions")
_HAS_CUE_WORD = kernel("evqual.text._scan", "has_cue_word")
_DIGIT_RE = re.compile(r"\d")
_ALNUM_RE = re.compile(r"[^\W_]")
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
# scikit-learn's ENGLISH_STOP_WORDS, written out so that reading text does not import scikit-learn (whose import
# is most of a fresh process's start-up); tests/test_text.py checks that the two lists are equal
STOP_WORDS: frozenset[str] = frozenset("""
    a about above across after afterwards again against all almost alone along already also although
    always am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere
    are around as at back be became because become becomes becoming been before beforehand behind being
    below beside besides between beyond bill both bottom but by call can cannot cant co con could
    couldnt cry de describe detail do done down due during each eg eight either eleven else elsewhere
    empty enough etc even ever every everyone everything everywhere except few fifteen fifty fill find
    fire first five for former formerly forty found four from front full further get give go had has
    hasnt have he hence her here hereafter hereby herein hereupon hers herself him himself his how
    however hundred i ie if in inc indeed interest into is it its itself keep last latter latterly least
    less ltd made many may me meanwhile might mill mine more moreover most mostly move much must my
    myself name namely neither never nevertheless next nine no nobody none noone nor not nothing now
    nowhere of off often on once one only onto or other others otherwise our ours ourselves out over own
    part per perhaps please put rather re same see seem seemed seeming seems serious several she should
    show side since sincere six sixty so some somehow someone something sometime sometimes somewhere
    still such system take ten than that the their them themselves then thence there thereafter thereby
    therefore therein thereupon these they thick thin third this those though three through throughout
    thru thus to together too top toward towards twelve twenty two un under until up upon us very via
    was we well were what whatever when whence whenever where whereafter whereas whereby wherein
    whereupon wherever whether which while whither who whoever whole whom whose why will with within
    without would yet you your yours yourself yourselves
""".split())


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


def word_spans(text: str, start: int = 0, end: int | None = None, *, apostrophe: bool = False,
               symbols: str | None = None) -> list:
    """``(start, end, word)`` of the words of ``text[start:end]`` as written, offsets into ``text``.

    A word is a run of letters and digits (:data:`TOKEN_PATTERN`); with ``apostrophe``, a word followed by
    an apostrophe and lower-case letters takes them (``"isn't"``, ``"Leeds's"``); each character of
    ``symbols`` outside a word is a word of its own.  The compiled scanner (``evqual/text/_scan.pyx``) gives
    what the regular expression gives, which runs without it.

    Examples
    --------
    >>> word_spans("U.S.-based, isn't it?")
    [(0, 1, 'U'), (2, 3, 'S'), (5, 10, 'based'), (12, 15, 'isn'), (16, 17, 't'), (18, 20, 'it')]
    >>> word_spans("U.S.-based, isn't it?", 5, 17, apostrophe=True)
    [(5, 10, 'based'), (12, 17, "isn't")]
    >>> word_spans("$5, 16%", symbols="$%")
    [(0, 1, '$'), (1, 2, '5'), (4, 6, '16'), (6, 7, '%')]
    """
    end = len(text) if end is None else end
    if _SCAN is not None:
        return _SCAN(text, start, end, apostrophe, symbols)
    return [(m.start(), m.end(), m.group()) for m in _pattern(apostrophe, symbols or "").finditer(text, start, end)]


@lru_cache(maxsize=32)
def _pattern(apostrophe: bool, symbols: str):
    word = TOKEN_PATTERN + (r"(?:'[a-z]+)?" if apostrophe else "")
    return re.compile(word + ("|[" + re.escape(symbols) + "]" if symbols else ""))


def has_digit(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` holds a digit: a character the regular expression ``\\d`` matches (any
    Unicode decimal digit).  Compiled where the package is; the regular expression otherwise.

    Examples
    --------
    >>> has_digit("in 1932"), has_digit("in 1932", 0, 3), has_digit("\u0663")
    (True, False, True)
    """
    end = len(text) if end is None else end
    if _HAS_DIGIT is not None:
        return _HAS_DIGIT(text, start, end)
    return _DIGIT_RE.search(text, start, end) is not None


def has_alnum(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` holds a letter or digit (``str.isalnum``; the regular expression ``[^\\W_]``).

    Examples
    --------
    >>> has_alnum(" -- "), has_alnum("(a)"), has_alnum("_")
    (False, True, False)
    """
    end = len(text) if end is None else end
    if _HAS_ALNUM is not None:
        return _HAS_ALNUM(text, start, end)
    return _ALNUM_RE.search(text, start, end) is not None


def has_camel_case(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` holds an ASCII lower-case letter followed by an ASCII capital
    (``[a-z][A-Z]``), as a record key written in camel case ("OutdoorSeating") does.

    Examples
    --------
    >>> has_camel_case("OutdoorSeating"), has_camel_case("Outdoor Seating"), has_camel_case("iPhone", 1)
    (True, False, False)
    """
    end = len(text) if end is None else end
    if _HAS_CAMEL is not None:
        return _HAS_CAMEL(text, start, end)
    return _CAMEL_RE.search(text, start, end) is not None


def char_positions(text: str, chars: str, start: int = 0, end: int | None = None) -> list[int]:
    """Offsets of the characters of ``text[start:end]`` that are among ``chars``, in order.

    Examples
    --------
    >>> char_positions("a, b; c.", ",;")
    [1, 4]
    """
    end = len(text) if end is None else end
    if _CHAR_POSITIONS is not None:
        return _CHAR_POSITIONS(text, start, end, chars)
    return [m.start() for m in _chars_pattern(chars).finditer(text, start, end)]


@lru_cache(maxsize=32)
def _chars_pattern(chars: str):
    return re.compile("[" + re.escape(chars) + "]") if chars else re.compile(r"(?!)")


def has_cue_word(text: str, words: frozenset, start: int = 0, end: int | None = None, *,
                 contraction: bool = False) -> bool:
    """Whether ``text[start:end]`` holds one of ``words`` (ASCII lower-case letters) as a whole word, case ignored: what
    ``re.compile(r"\\b(?:w1|w2|...)\\b", re.IGNORECASE).search(text, start, end)`` finds (the character before
    ``start`` counts for the word boundary).  With ``contraction``, ``n't`` or ``n\u2019t`` before a word boundary
    counts too (``|n['\u2019]t\\b``).  Compiled where the package is; the regular expression otherwise.

    Examples
    --------
    >>> cues = frozenset({"no", "not", "never"})
    >>> has_cue_word("It is NOT open.", cues), has_cue_word("Nothing is open.", cues)
    (True, False)
    >>> has_cue_word("It isn't open.", cues), has_cue_word("It isn't open.", cues, contraction=True)
    (False, True)
    """
    end = len(text) if end is None else end
    words = _cue_words(words if isinstance(words, frozenset) else frozenset(words))
    if _HAS_CUE_WORD is not None:
        return _HAS_CUE_WORD(text, start, end, words, contraction)
    return _cue_pattern(words, contraction).search(text, start, end) is not None


@lru_cache(maxsize=32)
def _cue_words(words: frozenset) -> frozenset:
    """``words`` if each is 1 to 31 ASCII lower-case letters (what both paths read alike), else a ValueError."""
    bad = sorted(repr(w) for w in words if not (isinstance(w, str) and 0 < len(w) <= 31 and w.isascii()
                                                and w.isalpha() and w.islower()))
    if bad:
        raise ValueError(f"has_cue_word: each word must be 1 to 31 ASCII lower-case letters; got {', '.join(bad[:3])}")
    return words


@lru_cache(maxsize=32)
def _cue_pattern(words: frozenset, contraction: bool):
    alternatives = "|".join(sorted(map(re.escape, words), key=lambda w: (-len(w), w)))
    pattern = (r"\b(?:" + alternatives + r")\b") if words else r"(?!)"
    return re.compile(pattern + ("|n['\u2019]t\\b" if contraction else ""), re.IGNORECASE)
