"""The data of the evidence engine: stems, the logic lexicon and synonym groups.

Everything here is data read from two shipped files, not code per kind of error:

* ``logic.tsv``: words that carry logic, by class and sense (see :data:`LOGIC_CLASSES`);
* ``synonyms.tsv``: groups of interchangeable words (also used by the verification stage's
  lexicon mutations), so that a paraphrase with a listed synonym reads as the same word.

>>> lex = logic_lexicon()
>>> [(c, s) for _, _, c, s in lex.match("it may not open before noon".split())]
[('modality', 'hedge'), ('polarity', 'neg'), ('time', 'before')]
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..text import english_stemmer

__all__ = ["LOGIC_CLASSES", "LogicLexicon", "inflections", "logic_lexicon", "stem", "synonym_map",
           "SYNONYMS_FILE"]

LOGIC_CLASSES = ("polarity", "modality", "quantity", "condition", "direction", "comparison", "order", "time",
                 "frequency", "cause", "role")
"""The classes of words that carry logic, in feature order (``logic.tsv`` defines their senses)."""

SYNONYMS_FILE = "synonyms.tsv"
_MAX_PHRASE = 6




_STEMS: dict[str, str] = {}
MEMO_MAX_CHARS = 64
"""The longest word or key that this package's process-wide memos keep (the stems here, the readers' word keys,
the engine's aliases): with their bounds on entries, a bound on their bytes too, whatever texts a service is
sent (issue 41, session 14: a 5,000-character word was kept whole, with its key); a longer one is computed
each time, to the same result."""


def stem(word: str) -> str:
    """Snowball English stem of a lower-case word (memoised).

    >>> stem("proved"), stem("opening"), stem("tablets")
    ('prove', 'open', 'tablet')
    """
    s = _STEMS.get(word)
    if s is None:
        s = english_stemmer().stemWord(word) if len(word) > 3 and not word.isdigit() else word
        if len(_STEMS) < 500_000 and len(word) <= MEMO_MAX_CHARS:
            _STEMS[word] = s
    return s


def _phrase_words(phrase: str) -> list[str]:
    from ..text import tokenize

    return tokenize(phrase)


def inflections(word: str) -> set:
    """The word and its regular inflections (-s, -es, -ed, -d, -ing; y -> ies/ied; e dropped before -ing;
    a final consonant doubled), so that a lexicon entry matches its forms and not its derivations.

    >>> sorted(inflections("prove"))
    ['prove', 'proved', 'proves', 'proving']
    """
    out = {word}
    if not word.isalpha() or len(word) < 3 or word in _FUNCTION_WORDS:
        return out  # "not" must not match "noted"
    out.update({word + "s", word + "ed", word + "ing"})
    if word.endswith(("s", "x", "z", "ch", "sh")):
        out.add(word + "es")
    if word.endswith("e"):
        out.update({word + "d", word[:-1] + "ing"})
        out.discard(word + "ed")
        out.discard(word + "ing")
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        out.update({word[:-1] + "ies", word[:-1] + "ied"})
        out.discard(word + "s")
        out.discard(word + "ed")
    if len(word) <= 4 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        out.update({word + word[-1] + "ed", word + word[-1] + "ing"})
    return out


def _function_words():
    from ..text import STOP_WORDS

    return STOP_WORDS


_FUNCTION_WORDS = _function_words()


class LogicLexicon:
    """Phrases of ``logic.tsv`` matched on lower-case words, longest first.

    A phrase's first word also matches its regular inflections (:func:`inflections`): "prove" matches
    "proved", "depends on" matches "depended on"; "clearly" does not match "clears".

    Attributes
    ----------
    senses : dict
        ``class -> tuple of senses`` in file order.
    phrases : dict
        ``(class, sense) -> list of phrases`` as written in the file.
    groups : tuple
        ``(class, senses)``: senses that exclude each other ("before" / "after"); two senses of one class
        conflict only when a group holds both.
    """

    def __init__(self, rows, groups=()):
        self.groups = tuple((c, tuple(g)) for c, g in groups)
        self._group_of = {(c, s): i for i, (c, g) in enumerate(self.groups) for s in g}
        self._first: dict[str, list] = {}
        senses: dict[str, list] = {}
        self.phrases: dict[tuple, list] = {}
        for cls, sense, phrase in rows:
            words = tuple(_phrase_words(phrase))
            if not words or len(words) > _MAX_PHRASE:
                continue
            self.phrases.setdefault((cls, sense), []).append(phrase)
            for w0 in inflections(words[0]):
                self._first.setdefault(w0, []).append((words[1:], cls, sense))
            senses.setdefault(cls, [])
            if sense not in senses[cls]:
                senses[cls].append(sense)
        for lst in self._first.values():
            lst.sort(key=lambda t: -len(t[0]))
        self.senses = {c: tuple(v) for c, v in senses.items()}

    def exclusive(self, cls: str, a: str, b: str) -> bool:
        """Whether senses ``a`` and ``b`` of ``cls`` exclude each other (one ``group`` line of the file)."""
        g = self._group_of.get((cls, a))
        return a != b and g is not None and g == self._group_of.get((cls, b))

    def match(self, words) -> list[tuple[int, int, str, str]]:
        """``(first token, end token, class, sense)`` of every phrase in ``words`` (lower case).

        At each position the longest phrases win; a position covered by a
        match is not the start of another match of the same class, but a
        word may carry senses of several classes ("over": quantity and
        direction).
        """
        return _match(self._first, words if isinstance(words, list) else list(words))


def _match(first: dict, words: list) -> list:
    """:meth:`LogicLexicon.match` (a module function, so that the compiled module can type it:
    ``_lexicon.pxd``); a phrase's words are compared one by one, the first difference ending the test."""
    out = []
    n = len(words)
    covered: dict = {}  # class -> end of its last match
    i = 0
    for cands in map(first.get, words):  # (the lookups in C: most words start no phrase)
        if cands:
            best_len: dict = {}
            for rest, cls, sense in cands:
                k = 1 + len(rest)
                if covered.get(cls, 0) > i or i + k > n:
                    continue
                if best_len.get(cls, k) > k:
                    continue
                same = True
                for t in range(k - 1):
                    if words[i + 1 + t] != rest[t]:
                        same = False
                        break
                if same:
                    best_len[cls] = k
                    out.append((i, i + k, cls, sense))
            for cls, k in best_len.items():
                covered[cls] = i + k
        i += 1
    return out


def _data_rows(name: str):
    text = resources.files("evqual.evidence").joinpath(name).read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        yield line


@lru_cache(maxsize=1)
def logic_lexicon() -> LogicLexicon:
    """The shipped logic lexicon (``evqual/evidence/logic.tsv``), parsed once."""
    rows, groups = [], []
    for line in _data_rows("logic.tsv"):
        a, b, c = line.split("\t")
        if a == "group":
            groups.append((b, c.split()))
            continue
        for p in c.split(" | "):
            if p.strip():
                rows.append((a, b, p.strip()))
    return LogicLexicon(rows, groups)


@lru_cache(maxsize=1)
def synonym_map() -> dict[str, str]:
    """A one-word synonym (as written, lower case) -> the stem of its group's first word (``synonyms.tsv``).

    Keyed by the word, not its stem: stems of different words can coincide ("marketed", "market").
    """
    out: dict[str, str] = {}
    for line in _data_rows(SYNONYMS_FILE):
        group = [g.strip() for g in line.split("\t") if g.strip()]
        words = [g for g in group if " " not in g]
        if len(words) < 2:
            continue
        head = stem(words[0])
        for w in words[1:]:
            out.setdefault(w, head)
    return out
