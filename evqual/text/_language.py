"""Is an answer likely not in English?  A small, documented heuristic (no model, no dependency).

evqual's features and checks are built for English: a French answer with a wrong year
or a faithful Spanish one gets a risk that means little.  :func:`language_warning`
says when a text is likely not English so that a result can carry a warning.

What it measures, in linear time over the text (regular expressions in C):

* **script**: the share of letters outside the Latin script (Cyrillic, Greek, Arabic,
  Hebrew, Devanagari, Thai, Hangul, kana, CJK ideographs ...);
* **function words**: the share of word tokens that are common function words of
  English (``the``, ``of``, ``and``, ``is``, ``with`` ...) and of each of
  :data:`FUNCTION_WORDS`'s other languages (French, Spanish, German, Italian,
  Portuguese, Dutch, Swedish, Polish, Turkish, Indonesian), from small shipped lists of
  words that are rare in English text (``the`` is English, ``de`` is not counted for
  any language because English answers quote names such as "Banco de España").

Decision (``W001``), with the thresholds measured on ``tests/data/language`` and on
every RAGTruth output (``scripts/language_eval.py``):

1. fewer than ``min_letters`` letters: ``None`` (too short to tell);
2. non-Latin letters are at least :data:`MAX_NON_LATIN` (30%) of the letters: warn;
3. at least :data:`MIN_WORDS` Latin word tokens, another language's function words
   are at least :data:`MIN_OTHER_SHARE` of them (and at least 2 tokens), and more
   than twice the English share: warn;
4. at least :data:`MIN_WORDS_NO_ENGLISH` tokens and English function words under
   :data:`MIN_ENGLISH_SHARE` of them while at least :data:`MIN_DIACRITIC_SHARE` of
   the letters carry a diacritic or the other languages' words reach 5%: warn
   (Latin-script languages without a list, short answers);
5. otherwise ``None``.

Known failure modes: very short answers ("Oui.", "42") are not judged; tables, lists
of names, code and JSON have few function words of any language and are judged by
script only; an English answer quoting a long passage in another language can warn
(and should: the scorer's English rules do not read the quote); a text in a
Latin-script language without a list and without diacritics (for instance Swahili)
can pass; mixed texts are judged by their majority.
"""

from __future__ import annotations

import re

__all__ = ["language_warning", "language_signal", "FUNCTION_WORDS", "LANGUAGE_WARNING_CODE", "MAX_NON_LATIN",
           "MIN_WORDS", "MIN_OTHER_SHARE", "MIN_WORDS_NO_ENGLISH", "MIN_ENGLISH_SHARE", "MIN_DIACRITIC_SHARE"]

LANGUAGE_WARNING_CODE = "W001"
MAX_NON_LATIN = 0.30
MIN_WORDS = 6
MIN_OTHER_SHARE = 0.10
MIN_WORDS_NO_ENGLISH = 8
MIN_ENGLISH_SHARE = 0.04
MIN_DIACRITIC_SHARE = 0.05

_ENGLISH = frozenset("""
the of and to is was are were for with that this these those from by at it its as be been being have has had
not but which who whom whose what when where why how there their they them he she his her him we our you your
i my me or an will would can could should shall may might must do does did done than then also about into over
after before between through during under because while if so such only just very more most other some any each
all both few many much no nor own same too up out off again further once here now well yes
""".split())

FUNCTION_WORDS: dict[str, frozenset] = {
    "fr": frozenset("le la les des du une est sont et dans pour avec sur ce cette ces qui que pas par au aux "
                    "il elle ils elles nous vous leur leurs mais ou où été être avait était sont aussi plus très "
                    "selon lors entre sans sous chez dont ainsi".split()),
    "es": frozenset("el los las del una es son y en para con por que se lo su sus al pero como más muy fue "
                    "era está están también entre sin sobre según hasta desde cuando donde porque este esta "
                    "estos estas ese esa ha han".split()),
    "de": frozenset("der die das und ist sind ein eine einen dem den des nicht mit von zu auf für im auch "
                    "sich es wurde wird werden sie wir ich nach bei aus oder aber wie noch nur über durch "
                    "zum zur vom hat haben".split()),
    "it": frozenset("il lo gli della delle dei degli di che è sono una uno per con non nel nella sul sulla "
                    "anche più come ma alla alle al dal dalla era stato stata essere questo questa tra fra "
                    "ha hanno".split()),
    "pt": frozenset("o os as um uma é são e em para com por que não do da dos das no na nos nas ao aos "
                    "mais muito foi era está também entre sem sobre como seu sua pelo pela tem".split()),
    "nl": frozenset("de het een en is zijn van te dat die niet met op voor aan er ook als bij uit naar "
                    "maar om dan nog wel werd wordt worden deze dit ze hij zij wij ik heeft hebben".split()),
    "sv": frozenset("och att det som en ett är av på för med till den har inte om var jag han hon de vi "
                    "men från eller så när också efter kan ska".split()),
    "pl": frozenset("i w na z do się że nie jest to jak o od po przez dla oraz jego jej ich był była było "
                    "są tak ale lub czy także który która które".split()),
    "tr": frozenset("ve bir bu da de ile için olarak olan çok daha gibi ama ancak kadar sonra önce en "
                    "değil var yok ise veya hem".split()),
    "id": frozenset("dan yang di ke dari ini itu dengan untuk adalah tidak dalam pada akan juga oleh "
                    "atau karena sebagai ada bisa sudah".split()),
}
"""Function words per language: frequent in that language, rare as words of English prose."""

# words English text also uses often (names, loans, the article "a"): counted for no language
_AMBIGUOUS = frozenset("""a de la in no on so me die was will den see son van von da do ha un e o w z men var hat
est par pour los las el al era sin per non come ma com""".split())
FUNCTION_WORDS = {lang: frozenset(words - _AMBIGUOUS - _ENGLISH) for lang, words in FUNCTION_WORDS.items()}

_WORD = re.compile(r"[^\W\d_]+")
_ASCII_WORD = re.compile(r"[a-z]+")
""":data:`_WORD` on lower-cased ASCII text, where its letters are a-z: a range, not three Unicode tests per
character (35 us of an answer's 60 us before)."""
_LETTER = re.compile(r"[^\W\d_]")
_LATIN = re.compile(r"[A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF]")
_DIACRITIC = re.compile(r"[\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF]")
# the exact complements of the three classes above: a count is the length of what removing the rest leaves
# (one string built, instead of a list of one-character matches)
_NOT_LETTER = re.compile(r"[\W\d_]+")
_NOT_LATIN = re.compile(r"[^A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF]+")
_NOT_DIACRITIC = re.compile(r"[^\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF]+")
_LANGUAGES_OF: dict[str, tuple] = {}
for _lang, _vocab in FUNCTION_WORDS.items():
    for _w in _vocab:
        _LANGUAGES_OF[_w] = _LANGUAGES_OF.get(_w, ()) + (_lang,)
del _lang, _vocab, _w
_SCRIPTS = {
    "Cyrillic": re.compile(r"[\u0400-\u052F]"),
    "Greek": re.compile(r"[\u0370-\u03FF\u1F00-\u1FFF]"),
    "Arabic": re.compile(r"[\u0600-\u06FF\u0750-\u077F\uFB50-\uFDFF\uFE70-\uFEFF]"),
    "Hebrew": re.compile(r"[\u0590-\u05FF]"),
    "Devanagari": re.compile(r"[\u0900-\u097F]"),
    "Thai": re.compile(r"[\u0E00-\u0E7F]"),
    "Hangul": re.compile(r"[\u1100-\u11FF\u3130-\u318F\uAC00-\uD7AF]"),
    "Kana": re.compile(r"[\u3040-\u30FF]"),
    "Han": re.compile(r"[\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF]"),
}


def _count(pattern: re.Pattern, text: str) -> int:
    return len(pattern.findall(text))


_LANGUAGE_ORDER = {lang: i for i, lang in enumerate(FUNCTION_WORDS)}


def _language_rank(counts: dict):
    """The key that ranks languages by their count, the first listed first on a tie."""
    def rank(lang):
        return counts[lang], -_LANGUAGE_ORDER[lang]
    return rank


def language_signal(text: str) -> dict:
    """The measurements :func:`language_warning` decides on (linear in the text's length).

    Returns
    -------
    dict
        ``letters``, ``non_latin_share``, ``diacritic_share`` (of the letters), ``words`` (Latin word
        tokens), ``english_share``, ``other_language`` and ``other_share`` (the language of
        :data:`FUNCTION_WORDS` with the largest share of function-word tokens, and that share) and
        ``scripts`` (letter count per non-Latin script found).

    Examples
    --------
    >>> s = language_signal("Le musée a été fondé en 1793 et il est situé à Paris.")
    >>> s["other_language"], round(s["other_share"], 2), s["english_share"]
    ('fr', 0.33, 0.0)
    """
    text = text if isinstance(text, str) else str(text)
    # ASCII text (most answers; str knows it without a pass): every letter is Latin, none has a diacritic
    ascii_text = text.isascii()
    if ascii_text:
        # lower-casing ASCII keeps every character a letter or not, so the words (maximal runs of letters) hold
        # every letter once: their lengths add up to the letters (one pass of the text instead of two)
        words = _ASCII_WORD.findall(text.lower())
        letters = sum(map(len, words))
    else:
        letters = len(_NOT_LETTER.sub("", text))
    latin = letters if ascii_text else len(_NOT_LATIN.sub("", text))
    non_latin = letters - latin
    scripts = {}
    if non_latin:
        for name, pat in _SCRIPTS.items():
            n = _count(pat, text)
            if n:
                scripts[name] = n
    if not ascii_text:
        words = [w for w in _WORD.findall(text.lower()) if _LATIN.match(w)]
    n = len(words)
    english = 0
    counts = {lang: 0 for lang in FUNCTION_WORDS}
    languages_of = _LANGUAGES_OF
    for w in words:
        if w in _ENGLISH:
            english += 1
        else:  # (no function word of another language is English: FUNCTION_WORDS leaves English's out)
            for lang in languages_of.get(w, ()):
                counts[lang] += 1
    best, best_hits = None, 0
    if n:
        best = max(counts, key=_language_rank(counts))
        best_hits = counts[best]
    return {"letters": letters, "non_latin_share": non_latin / letters if letters else 0.0,
            "diacritic_share": (0 if ascii_text else len(_NOT_DIACRITIC.sub("", text))) / letters if letters else 0.0,
            "words": n, "english_share": english / n if n else 0.0,
            "other_language": best if best_hits else None, "other_hits": best_hits,
            "other_share": best_hits / n if n else 0.0, "scripts": scripts}


def language_warning(text: str, *, min_letters: int = 20) -> dict | None:
    """A ``W001`` warning when ``text`` is likely not English, else ``None``.

    Parameters
    ----------
    text : str
        An answer (or any text).  Never raises on a string; other values are converted with ``str``.
    min_letters : int, default=20
        Texts with fewer letters are too short to tell: ``None``.

    Returns
    -------
    dict or None
        ``{"code": "W001", "message": str, "details": dict}``; ``details`` holds the rule that fired
        (``"script"``, ``"function_words"`` or ``"no_english"``), the likely language or script and
        the measurements of :func:`language_signal`.

    Examples
    --------
    >>> language_warning("The museum was founded in 1793 and it is located in Paris.") is None
    True
    >>> w = language_warning("El museo fue fundado en 1793 y está situado en el centro de París.")
    >>> w["code"], w["details"]["rule"], w["details"]["language"]
    ('W001', 'function_words', 'es')
    >>> language_warning("Музей был основан в 1793 году.")["details"]["language"]
    'Cyrillic'
    >>> language_warning("Oui.") is None
    True
    """
    s = language_signal(text)
    if s["letters"] < min_letters:
        return None
    rule = language = None
    if s["non_latin_share"] >= MAX_NON_LATIN:
        rule = "script"
        language = max(s["scripts"], key=s["scripts"].get) if s["scripts"] else "non-Latin"
    elif (s["words"] >= MIN_WORDS and s["other_hits"] >= 2 and s["other_share"] >= MIN_OTHER_SHARE
          and s["other_share"] > 2 * s["english_share"]):
        rule, language = "function_words", s["other_language"]
    elif (s["words"] >= MIN_WORDS_NO_ENGLISH and s["english_share"] < MIN_ENGLISH_SHARE
          and (s["diacritic_share"] >= MIN_DIACRITIC_SHARE or s["other_share"] >= 0.05)):
        rule, language = "no_english", s["other_language"] or "unknown"
    if rule is None:
        return None
    what = {"script": f"{s['non_latin_share']:.0%} of its letters are {language}",
            "function_words": f"{s['other_share']:.0%} of its words are {language} function words, "
                              f"{s['english_share']:.0%} English ones",
            "no_english": f"only {s['english_share']:.0%} of its words are English function words"}[rule]
    details = {"rule": rule, "language": language,
               **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}}
    return {"code": LANGUAGE_WARNING_CODE,
            "message": f"the answer is likely not in English ({what}); evqual's checks are built for English, "
                       "so its risk is unreliable", "details": details}
