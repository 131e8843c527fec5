"""A rule-based topic tagger for queries and their retrieved context.

A :class:`TopicTagger` assigns topic labels (``"healthcare"``,
``"migration"``, ``"labour"`` by default) to a query and its context by
matching small lexicons of terms. The labels let the decision policy
(:class:`evqual.scoring.Policy`) apply a stricter threshold to answers about
sensitive topics, where a wrong answer costs more.

The tagger labels the *topic of the text* only. It infers no attribute of a
person (health, nationality, migration status, sexual orientation,
employment, ...) and stores nothing: :meth:`TopicTagger.tag` returns topic
names and keeps no copy of the text or of the matches.

Examples
--------
>>> from evqual.scoring import TopicTagger
>>> tagger = TopicTagger()
>>> tagger.tag("Can I take ibuprofen during pregnancy?", "")
('healthcare',)
>>> tagger.tag("How tall is the Eiffel Tower?", "It is 330 metres tall.")
()
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType

__all__ = ["Topic", "TopicTagger", "BUILTIN_TOPICS"]


@dataclass(frozen=True)
class Topic:
    """A topic: its name, lexicons and whether it is sensitive.

    A text (the query, or the context) gets *hits* for a topic as follows:
    every occurrence of one of ``terms`` is a hit; occurrences of ``weak``
    terms add hits only when the same text also has at least one of
    ``terms`` and none of ``exclude``; and every occurrence of an
    ``exclude`` term takes one hit away (never below 0). See
    :class:`TopicTagger` for how hits become tags.

    Parameters
    ----------
    name : str
        The topic label returned by :meth:`TopicTagger.tag`.
    terms : tuple of str
        Words or phrases that mark the topic on their own, matched
        case-insensitively as whole words. A trailing ``*`` makes a term a
        prefix (``"diagnos*"`` matches "diagnosis" and "diagnosed"). Inside
        a phrase any run of whitespace matches any run of whitespace. A list
        is converted to a tuple. Must not be empty.
    sensitive : bool, default=True
        Whether answers on this topic get the stricter threshold of the
        policy (:attr:`evqual.scoring.Policy.sensitive_threshold`).
    weak : tuple of str, default=()
        Ambiguous terms, same syntax: they count only next to a term of
        ``terms`` in the same text ("eligible" is labour in "eligible for
        sick pay", not in "eligible for a loyalty discount"; "visa" is
        migration in "a visa application", not in "a Visa card"). A phrase
        that contains a shorter term counts once, whichever list it is in.
    exclude : tuple of str, default=()
        Terms of another sense or domain, same syntax: in a text with one
        of them the weak terms do not count, and each occurrence cancels one
        hit of the topic in that text ("restaurant" and "menu" cancel
        "allergic reaction" in a restaurant review, and "allergy" there is
        not read as medical). A term may be in only one of ``terms``,
        ``weak`` and ``exclude``.

    Examples
    --------
    >>> Topic("housing", ("eviction", "tenan*"), sensitive=True).terms
    ('eviction', 'tenan*')
    >>> from evqual.scoring import TopicTagger
    >>> tax = Topic("tax", ("tax return*", "VAT"), weak=("refund*",), exclude=("tax-free shopping",))
    >>> tagger = TopicTagger({"tax": tax})
    >>> tagger.tag("When will I get my refund?"), tagger.tag("Is my tax return refund late?")
    ((), ('tax',))
    """

    name: str
    terms: tuple
    sensitive: bool = True
    weak: tuple = ()
    exclude: tuple = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"topic name must be a non-empty str; got {self.name!r}")
        seen = {}
        for field in ("terms", "weak", "exclude"):
            value = getattr(self, field)
            if isinstance(value, str) or not isinstance(value, Sequence):
                raise ValueError(f"{field} of topic {self.name!r} must be a sequence of str; got {value!r}")
            terms = tuple(value)
            if field == "terms" and not terms:
                raise ValueError(f"terms of topic {self.name!r} must not be empty")
            for term in terms:
                if not isinstance(term, str) or not term.strip().rstrip("*").strip():
                    raise ValueError(f"{field} of topic {self.name!r} must be non-empty str; got {term!r}")
                key = " ".join(term.lower().split())
                if seen.get(key, field) != field:
                    raise ValueError(f"term {term!r} of topic {self.name!r} is in both {seen[key]} and {field}")
                seen[key] = field
            object.__setattr__(self, field, terms)
        if not isinstance(self.sensitive, bool):
            raise ValueError(f"sensitive of topic {self.name!r} must be a bool; got {self.sensitive!r}")


def _term_pattern(term: str) -> str:
    """The regex of one term: whole words, ``*`` suffix = prefix, flexible whitespace."""
    term = term.strip()
    prefix = term.endswith("*")
    words = term.rstrip("*").split()
    body = r"\s+".join(re.escape(w) for w in words)
    # Look-arounds rather than \b so that terms ending in a symbol ("LGBTQ+") still
    # need a word boundary of their own.
    return r"(?<!\w)" + body + (r"\w*" if prefix else r"(?!\w)")


_WORD_RE = re.compile(r"\w+")


def _first_key(term):
    """``(key, is_prefix)``: the lower-cased first run of word characters of ``term``.

    A term's first run of word characters ("LGBTQ+" -> "lgbtq", "H-1B" -> "h")
    is a word of any text the term matches or, for a one-word prefix term whose
    first word is one run ("diagnos*"), the start of one. ``(None, False)``
    for a term without word characters at its start.
    """
    words = term.strip().lower().split()
    runs = _WORD_RE.findall(words[0].rstrip("*")) if words else []
    if not runs:
        return None, False
    prefix = len(words) == 1 and len(runs) == 1 and term.strip().endswith("*") \
        and words[0].rstrip("*").endswith(runs[0])
    return runs[0], prefix


def _first_word_keys(terms):
    """``(exact first words, prefix regex or None)`` of a lexicon (see :func:`_first_key`).

    The prefix regex finds words starting with a prefix key in the text's
    distinct words joined by newlines.
    """
    exact, prefixes = set(), set()
    for term in terms:
        key, prefix = _first_key(term)
        if key is not None:
            (prefixes if prefix else exact).add(key)
    prefix_re = None
    if prefixes:
        prefix_re = re.compile(r"^(?:" + "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
                               + r")[^\n]*$", re.MULTILINE)
    return frozenset(exact), prefix_re


def _is_word(ch) -> bool:
    """Whether ``ch`` is a character of ``\\w`` (for str patterns)."""
    return ch.isalnum() or ch == "_"


def _positions(low: str, starts) -> list:
    """Sorted ``(position, word)`` of the words ``starts`` as whole words of the lower-cased text ``low``."""
    out = []
    size = len(low)
    for w in starts:
        n = len(w)
        i = low.find(w)
        while i != -1:
            j = i + n
            if (i == 0 or not _is_word(low[i - 1])) and (j == size or not _is_word(low[j])):
                out.append((i, w))
            i = low.find(w, j)
    out.sort()
    return out


def _count(lexicon, text, low, starts) -> tuple:
    """``(strong, weak)`` non-overlapping matches of a :class:`_Lexicon` in ``text``.

    Terms are tried only where a word of ``starts`` begins, and only those
    that can begin with that word. ``low`` is ``text.lower()``, or None when
    lower-casing changed the length (then a regex finds the words).
    """
    if low is not None:
        positions = _positions(low, starts)
    else:
        positions = [(m.start(), m.group().lower()) for m in _finder(frozenset(starts)).finditer(text)]
    strong = weak = 0
    end = -1
    for start, word in positions:
        if start < end:
            continue
        compiled = lexicon.at(word)
        if not compiled:
            continue
        pattern, kinds = compiled
        hit = pattern.match(text, start)
        if hit:
            if kinds[hit.lastindex - 1]:
                weak += 1
            else:
                strong += 1
            end = hit.end()
    return strong, weak


class _Lexicon:
    """Strong and weak terms, compiled per first word on first use.

    At a word of the text only the terms that can begin with it are tried,
    longest first, so that a phrase ("LGBTQ+ refugee", "child labour") is one
    match rather than a match of a shorter term inside it.
    """

    _MAX_WORDS = 4096

    def __init__(self, terms, weak=()):
        self._entries = []
        for term, is_weak in [(t, False) for t in terms] + [(t, True) for t in weak]:
            key, prefix = _first_key(term)
            if key is not None:
                self._entries.append((term, is_weak, key, prefix))
        self._by_word = {}

    def at(self, word):
        """``(pattern, kinds)`` of the terms that can begin with ``word`` (``kinds``: weak or not), or None."""
        try:
            return self._by_word[word]
        except KeyError:
            pass
        found = [(t, w) for t, w, key, prefix in self._entries if (word.startswith(key) if prefix else word == key)]
        compiled = None
        if found:
            found.sort(key=lambda tw: len(tw[0].rstrip("*")), reverse=True)
            compiled = (re.compile("|".join("(" + _term_pattern(t) + ")" for t, _ in found), re.IGNORECASE),
                        tuple(w for _, w in found))
        if len(self._by_word) < self._MAX_WORDS:  # a bounded cache (the words of a lexicon are few)
            self._by_word[word] = compiled
        return compiled


@lru_cache(maxsize=256)
def _finder(words: frozenset) -> re.Pattern:
    """A regex finding the given (lower-cased) words as whole words, case-insensitively."""
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
                      + r")(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=64)
def _compile(terms, weak=()) -> _Lexicon:
    """The :class:`_Lexicon` of the terms (shared by taggers with the same terms)."""
    return _Lexicon(terms, weak)


# Each built-in topic: terms that mark it on their own, weak (ambiguous) terms that count only
# next to one of them in the same text, and terms of other senses or domains that cancel a hit.
# Labelled development set and measurements: tests/data/topics, scripts/topic_eval.py.
_HEALTHCARE = (
    "pregnan*", "trimester*", "contraindicat*", "medication*", "medicine*", "overdos*",
    "ibuprofen", "paracetamol", "acetaminophen", "aspirin", "antibiotic*", "prescription*",
    "symptom*", "vaccin*", "breastfeed*", "allergic reaction*", "anaphyla*", "physician*",
    "midwi*", "mental health", "chronic illness*", "health insurance", "health care", "healthcare",
    "patients", "disease*", "illness*", "infection*", "cancer*", "tumour*", "tumor*", "diabetes",
    "diabetic", "surgery", "surgeries", "surgeon*", "surgical", "chemotherapy", "radiotherapy",
    "biopsy", "insulin", "epidural", "anaesthe*", "anesthe*", "childbirth", "miscarriage*",
    "postpartum", "contracepti*", "intensive care", "emergency room", "Medicare", "Medicaid",
    "NHS", "pharmacist*", "dentist*", "dental", "physiotherap*", "physical therapy",
    "psychotherap*", "psychiatr*", "antidepressant*", "concussion*", "tetanus", "influenza", "flu",
    "measles", "malaria", "hepatitis", "HIV", "pneumonia", "meningitis", "asthma", "arthritis",
    "dementia", "alzheimer*", "parkinson*", "osteopor*", "headache*", "nausea", "vomit*",
    "diarrh*", "blood pressure", "blood test*", "heart attack*", "heart disease", "heart rate",
    "medically", "clinical trial*", "amoxicillin", "penicillin", "metformin", "statin", "statins", "opioid*",
    "antihistamine*", "painkiller*", "antiviral*", "omeprazole", "placenta*", "cervix",
    "umbilical", "obstetric*", "gynaecolog*", "gynecolog*", "maternity ward*", "labour ward*",
    "labor and delivery", "giving birth", "gave birth",
)
_HEALTHCARE_WEAK = (
    "dose", "doses", "dosage*", "prescrib*", "clinic", "clinics", "hospital*", "diagnos*",
    "side effect*", "allerg*", "doctor", "doctors", "patient", "nurse*", "treatment*", "treated",
    "therap*", "fever", "infected", "virus*", "stroke", "depression", "anxiety", "injur*", "wound*",
    "health", "medical", "labour", "labor", "contractions", "baby", "babies", "pain",
)
_HEALTHCARE_EXCLUDE = (
    "restaurant*", "menu", "menus", "cuisine*", "cafe", "cafes", "café*", "bakery", "bakeries",
    "diner", "diners", "veterinar*", "vet", "vets", "pet", "pets", "dog", "dogs", "puppy", "puppies",
    "cat", "cats", "kitten*",
)
_MIGRATION = (
    "asylum", "refugee*", "LGBTQ+ refugee*", "deport*", "immigra*", "emigra*", "migrant*",
    "residence permit*", "residence status", "permanent resident*", "permanent residency",
    "citizenship", "naturalis*", "naturaliz*", "undocumented", "stateless*", "family reunification",
    "green card*", "integration course*", "net migration", "mass migration", "illegal migration",
    "irregular migration", "migration policy", "border control*", "border crossing*",
    "border patrol", "border wall", "border agent*", "border police", "visa application*",
    "visa requirement*", "visa waiver", "visa-free", "visa free", "visa on arrival",
    "student visa*", "work visa*", "tourist visa*", "spouse visa*", "partner visa*",
    "family visa*", "skilled worker visa*", "visa sponsorship", "visa overstay*", "entry visa*",
    "transit visa*", "exit visa*", "need a visa", "H-1B", "H-2A", "Blue Card", "UNHCR", "DACA",
    "ESTA", "reception centre*", "reception center*", "people smuggl*", "leave to remain",
    "right to remain",
)
_MIGRATION_WEAK = (
    "visa", "visas", "border", "borders", "passport*", "consulate*", "consular", "embassy",
    "embassies", "residency", "migration", "nationality", "detention", "detained", "smuggl*",
    "small boats", "Home Office", "foreigner*", "expat*", "sponsor*", "arrivals", "eligib*",
)
_LABOUR = (
    "labour rights", "labor rights", "labour law*", "labor law*", "workers' rights",
    "employment rights", "minimum wage*", "living wage*", "wage theft", "wages", "work permit*",
    "employment contract*", "unemployment benefit*", "sick leave", "maternity leave",
    "paternity leave", "parental leave", "trade union*", "labour union*", "labor union*",
    "unionis*", "unioniz*", "collective agreement*", "collective bargaining", "severance",
    "employment", "unemploy*", "pay gap*", "equal pay", "sick pay", "holiday pay",
    "maternity pay", "paternity pay", "annual leave", "paid leave", "unpaid leave", "layoff*",
    "laid off", "furlough*", "workers' compensation", "workers compensation", "workers' comp",
    "workplace injur*", "workplace safety", "occupational safety", "occupational health",
    "unfair dismissal*", "wrongful dismissal*", "wrongful termination", "made redundant",
    "redundancy pay*", "zero-hours", "zero hours contract*", "gig worker*", "gig economy",
    "child labour", "child labor", "forced labour", "forced labor", "labour market*",
    "labor market*", "labour standards", "labor standards", "labour commissioner",
    "labor commissioner", "FLSA", "FMLA", "NLRB", "EEOC", "OSHA", "non-compete*", "strike action",
    "on strike", "walkout*", "picket*", "self-employed", "guest worker*",
    "seasonal worker*", "farm worker*", "farmworker*", "right to work", "permission to work",
    "work authori*", "employment authori*", "authorised to work", "authorized to work", "work visa*",
    "skilled worker*", "H-1B", "H-2A", "Blue Card", "my employer", "your employer", "my boss",
    "your boss", "harassment at work", "workplace harassment",
    "general strike*", "strikers", "strike ballot*", "day strike*", "hour strike*",
)
_LABOUR_WEAK = (
    "overtime", "eligib*", "dismissal*", "dismissed", "redundancy", "notice period*",
    "working hours", "labour", "labor", "wage", "salary", "salaries", "union", "unions", "strike",
    "strikes", "worker", "workers", "workplace*", "employer*", "employee*", "intern", "interns",
    "internship*", "harassment", "payroll*", "pension*", "fired", "walked out",
)

#: The built-in topics, all sensitive: ``"healthcare"``, ``"migration"``, ``"labour"``.
#: A read-only mapping from name to :class:`Topic`.
BUILTIN_TOPICS = MappingProxyType({
    "healthcare": Topic("healthcare", _HEALTHCARE, sensitive=True, weak=_HEALTHCARE_WEAK,
                        exclude=_HEALTHCARE_EXCLUDE),
    "migration": Topic("migration", _MIGRATION, sensitive=True, weak=_MIGRATION_WEAK),
    "labour": Topic("labour", _LABOUR, sensitive=True, weak=_LABOUR_WEAK),
})


CONTEXT_COUNTS_CACHED = 32
"""Contexts whose topic counts a :class:`TopicTagger` keeps (see :meth:`TopicTagger.tag`)."""
CONTEXT_COUNTS_MAX_CHARS = 200_000
"""Longest context whose topic counts are kept."""


class TopicTagger:
    """Tag a query and its context with topics by matching term lexicons.

    A topic is assigned when it has at least ``min_query_hits`` hits in the
    query **or** at least ``min_context_hits`` hits in the context. Hits are
    *occurrences*, not distinct terms: a context that says "asylum" twice
    has two migration hits. Occurrences do not overlap, and a phrase counts
    once even when it contains a shorter term of the same topic ("LGBTQ+
    refugees" is one hit, not two). Ambiguous (``weak``) terms add hits only
    in a text that has one of the topic's own ``terms``, and each
    ``exclude`` term takes a hit away (see :class:`Topic`): "eligible" alone
    is no labour hit, "allergies" in a restaurant review no healthcare hit.
    The query and the context are counted separately. The context needs more
    hits by default because a retrieved passage mentions a topic in passing
    more often than a question does.

    Only topics of the text are tagged. No attribute of a person is inferred
    or stored; the tagger keeps no copy of the text or of what matched.

    Parameters
    ----------
    topics : mapping of str to Topic, default=None
        The topics, in the order :meth:`tag` reports them. Each key must equal
        its topic's ``name``. None uses :data:`BUILTIN_TOPICS`.
    min_query_hits : int, default=1
        Hits in the query needed to assign a topic (at least 1).
    min_context_hits : int, default=2
        Hits in the context needed to assign a topic (at least 1).

    Attributes
    ----------
    topics_ : dict of str to Topic
        The topics in use (``topics`` or the built-ins).

    Examples
    --------
    >>> tagger = TopicTagger()
    >>> tagger.tag("What is the minimum wage?", "")
    ('labour',)
    >>> tagger.tag("What does the report say?", "Asylum claims rose. Most asylum seekers ...")
    ('migration',)
    >>> tagger.tag("Am I eligible for the loyalty discount?", "")
    ()
    >>> tagger.tag("Am I eligible for sick pay?", "")
    ('labour',)
    >>> tagger.is_sensitive(("labour",))
    True
    """

    def __init__(self, topics=None, *, min_query_hits=1, min_context_hits=2):
        self.topics = topics
        self.min_query_hits = min_query_hits
        self.min_context_hits = min_context_hits
        self._check()
        self.topics_ = dict(BUILTIN_TOPICS if topics is None else topics)
        # One regex per topic, compiled once (and shared by taggers with the same terms).
        # Strong terms alone first (most texts have none of a topic's terms, and then its weak
        # terms are not looked for), then strong and weak terms together.
        self._patterns = {name: _compile(tuple(t.terms)) for name, t in self.topics_.items()}
        self._keys = {name: _first_word_keys(t.terms) for name, t in self.topics_.items()}
        self._weak = {name: (_compile(tuple(t.terms), tuple(t.weak)), _first_word_keys(t.terms + t.weak))
                      for name, t in self.topics_.items() if t.weak}
        self._exclude = {name: (_compile(tuple(t.exclude)), _first_word_keys(t.exclude))
                         for name, t in self.topics_.items() if t.exclude}

    def _check(self):
        for name in ("min_query_hits", "min_context_hits"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ValueError(f"{name} must be an int >= 1; got {value!r}")
        if self.topics is None:
            return
        if not isinstance(self.topics, Mapping):
            raise ValueError(f"topics must be a mapping of name to Topic or None; got {type(self.topics).__name__}")
        for key, topic in self.topics.items():
            if not isinstance(topic, Topic):
                raise ValueError(f"topics[{key!r}] must be a Topic; got {type(topic).__name__}")
            if key != topic.name:
                raise ValueError(f"topics[{key!r}] has name {topic.name!r}; the key must equal the name")

    def __getstate__(self):
        # the context cache (a lock and recent contexts) is never pickled or copied
        state = dict(self.__dict__)
        state.pop("_context_cache", None)
        return state

    def _context_counts(self, text: str) -> dict:
        """:meth:`counts` of a context, kept for the next answers to that context (answers often share
        one): at most :data:`CONTEXT_COUNTS_CACHED` contexts of at most :data:`CONTEXT_COUNTS_MAX_CHARS`
        characters each, least recently used out first; a copy is returned."""
        cache = self.__dict__.get("_context_cache")
        if cache is None:
            cache = self.__dict__.setdefault("_context_cache", (threading.Lock(), OrderedDict()))
        lock, kept = cache
        with lock:
            got = kept.get(text)
            if got is not None:
                kept.move_to_end(text)
                return dict(got)
        got = self.counts(text)
        if len(text) <= CONTEXT_COUNTS_MAX_CHARS:
            with lock:
                kept[text] = got
                kept.move_to_end(text)
                while len(kept) > CONTEXT_COUNTS_CACHED:
                    kept.popitem(last=False)
        return dict(got)

    def __repr__(self):
        args = []
        if self.topics is not None:
            args.append(f"topics={list(self.topics)!r}")
        if self.min_query_hits != 1:
            args.append(f"min_query_hits={self.min_query_hits!r}")
        if self.min_context_hits != 2:
            args.append(f"min_context_hits={self.min_context_hits!r}")
        return f"TopicTagger({', '.join(args)})"

    def counts(self, text) -> dict:
        """Number of hits of each topic in ``text``.

        Occurrences of the topic's terms, plus those of its weak terms when
        there is at least one of its terms and none of its exclude terms,
        minus those of its exclude terms (at least 0); see :class:`Topic`.

        Parameters
        ----------
        text : str or sequence of str
            A list of passages is joined with blank lines.

        Returns
        -------
        dict of str to int

        Examples
        --------
        >>> TopicTagger().counts("Refugees and asylum seekers; refugee status.")
        {'healthcare': 0, 'migration': 3, 'labour': 0}
        """
        text = _as_text(text)
        # A term matches only where its first word is a word of the text: check that on the text's
        # distinct words first (cheap), and run a topic's regex only where such a word begins.
        low = text.lower()
        words = set(_WORD_RE.findall(low))
        if len(low) != len(text):  # lower-casing changed offsets (rare letters): find words by regex
            low = None
        blob = []
        out = {}
        for name, compiled in self._patterns.items():
            starts = _starts(words, blob, self._keys[name])
            hits = _count(compiled, text, low, starts)[0] if starts else 0
            excluded = 0
            if hits and name in self._exclude:
                compiled_x, keys_x = self._exclude[name]
                starts = _starts(words, blob, keys_x)
                excluded = _count(compiled_x, text, low, starts)[0] if starts else 0
            if hits and not excluded and name in self._weak:
                compiled_w, keys_w = self._weak[name]
                hits = sum(_count(compiled_w, text, low, _starts(words, blob, keys_w)))
            out[name] = max(0, hits - excluded)
        return out

    def tag(self, query, context="") -> tuple:
        """The topics of a query and its context.

        Parameters
        ----------
        query : str
        context : str or sequence of str, default=""
            A list of passages is joined with blank lines.

        Returns
        -------
        tuple of str
            Topic names, in the order of :attr:`topics_`.

        Examples
        --------
        >>> TopicTagger().tag("Are LGBTQ+ refugees protected?", "")
        ('migration',)
        """
        q, c = self.counts(query), self._context_counts(_as_text(context))
        return tuple(name for name in self._patterns
                     if q[name] >= self.min_query_hits or c[name] >= self.min_context_hits)

    def is_sensitive(self, topics) -> bool:
        """Whether any of ``topics`` is a sensitive topic.

        Parameters
        ----------
        topics : iterable of str
            Topic names, as returned by :meth:`tag`.

        Returns
        -------
        bool

        Raises
        ------
        ValueError
            If a name is not a topic of this tagger (a label from another
            lexicon must not silently lose its stricter threshold).

        Examples
        --------
        >>> TopicTagger().is_sensitive(())
        False
        """
        if isinstance(topics, str):
            topics = (topics,)
        sensitive = False
        for name in topics:
            if name not in self.topics_:
                raise ValueError(f"unknown topic {name!r}; known topics: {list(self.topics_)}")
            sensitive = sensitive or self.topics_[name].sensitive
        return sensitive

    def to_dict(self, *, terms=False) -> dict:
        """A JSON-ready description of the tagger, for audit records.

        Parameters
        ----------
        terms : bool, default=False
            Include every term. Otherwise each topic carries the SHA-256 of
            its terms, which identifies the lexicon in a fraction of the space.

        Returns
        -------
        dict

        Examples
        --------
        >>> d = TopicTagger().to_dict()
        >>> d["min_query_hits"], d["topics"]["labour"]["sensitive"]
        (1, True)
        """
        out = {}
        for name, t in self.topics_.items():
            entry = {"sensitive": t.sensitive}
            for field in ("terms", "weak", "exclude"):
                values = getattr(t, field)
                if field != "terms" and not values:
                    continue  # a topic without weak or exclude terms is described as before
                if terms:
                    entry[field] = list(values)
                else:
                    entry[f"{field}_sha256"] = hashlib.sha256("\n".join(values).encode("utf-8")).hexdigest()
            out[name] = entry
        return {"min_query_hits": self.min_query_hits, "min_context_hits": self.min_context_hits, "topics": out}


def _starts(words, blob, keys) -> set:
    """The words of a text (``words``) where a term of a lexicon (``keys``) can begin.

    ``blob`` is a list holding the text's distinct words joined by newlines,
    filled on first use (shared by lexicons).
    """
    exact, prefix_re = keys
    starts = words & exact
    if prefix_re is not None and words:
        if not blob:
            blob.append("\n".join(words))
        starts.update(prefix_re.findall(blob[0]))
    return starts


def _as_text(text) -> str:
    if text is None:
        return ""
    if isinstance(text, str):
        return text
    return "\n\n".join(text)
