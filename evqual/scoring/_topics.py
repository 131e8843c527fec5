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
from bisect import bisect_left
from functools import lru_cache
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType

__all__ = ["Topic", "TopicTagger", "BUILTIN_TOPICS"]


@dataclass(frozen=True)
class Topic:
    """A topic: its name, lexicon and whether it is sensitive.

    Parameters
    ----------
    name : str
        The topic label returned by :meth:`TopicTagger.tag`.
    terms : tuple of str
        Words or phrases, matched case-insensitively as whole words. A
        trailing ``*`` makes a term a prefix (``"diagnos*"`` matches
        "diagnosis" and "diagnosed"). Inside a phrase any run of whitespace
        matches any run of whitespace. A list is converted to a tuple.
    sensitive : bool, default=True
        Whether answers on this topic get the stricter threshold of the
        policy (:attr:`evqual.scoring.Policy.sensitive_threshold`).

    Examples
    --------
    >>> Topic("housing", ("eviction", "tenan*"), sensitive=True).terms
    ('eviction', 'tenan*')
    """

    name: str
    terms: tuple
    sensitive: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"topic name must be a non-empty str; got {self.name!r}")
        if isinstance(self.terms, str) or not isinstance(self.terms, Sequence):
            raise ValueError(f"terms of topic {self.name!r} must be a sequence of str; got {self.terms!r}")
        terms = tuple(self.terms)
        if not terms:
            raise ValueError(f"terms of topic {self.name!r} must not be empty")
        for term in terms:
            if not isinstance(term, str) or not term.strip().rstrip("*").strip():
                raise ValueError(f"terms of topic {self.name!r} must be non-empty str; got {term!r}")
        if not isinstance(self.sensitive, bool):
            raise ValueError(f"sensitive of topic {self.name!r} must be a bool; got {self.sensitive!r}")
        object.__setattr__(self, "terms", terms)


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


def _first_word_keys(terms):
    """``(exact first words, first-word prefixes, prefix lengths)`` of a lexicon, lower-cased.

    A term's first word, reduced to its word characters ("LGBTQ+" -> "lgbtq"),
    must be a word of any text the term matches (or, for a one-word prefix
    term, the start of one).
    """
    exact, prefixes = set(), set()
    for term in terms:
        words = term.strip().lower().split()
        first = "".join(_WORD_RE.findall(words[0].rstrip("*"))) if words else ""
        if not first:
            continue
        if len(words) == 1 and term.strip().endswith("*"):
            prefixes.add(first)
        else:
            exact.add(first)
    return frozenset(exact), frozenset(prefixes), tuple(sorted({len(p) for p in prefixes}))


def _count(pattern, text, starts: frozenset) -> int:
    """``len(pattern.findall(text))``, trying the pattern only where a word of ``starts`` begins."""
    n, end = 0, -1
    for m in _finder(starts).finditer(text):
        start = m.start()
        if start < end:
            continue
        hit = pattern.match(text, start)
        if hit:
            n += 1
            end = hit.end()
    return n


@lru_cache(maxsize=256)
def _finder(words: frozenset) -> re.Pattern:
    """A regex finding the given (lower-cased) words as whole words, case-insensitively."""
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
                      + r")(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=64)
def _compile(terms) -> re.Pattern:
    # Longest terms first, so that a phrase ("LGBTQ+ refugee") is one match rather
    # than a match of its shorter sub-term ("refugee*").
    ordered = sorted(terms, key=lambda t: len(t.rstrip("*")), reverse=True)
    return re.compile("|".join(_term_pattern(t) for t in ordered), re.IGNORECASE)


_HEALTHCARE = (
    "pregnan*", "trimester*", "contraindicat*", "medication*", "medicine*", "dose", "doses",
    "dosage*", "overdos*", "ibuprofen", "paracetamol", "acetaminophen", "aspirin", "antibiotic*",
    "prescription*", "prescribed", "clinic", "clinics", "hospital*", "diagnos*", "symptom*",
    "vaccin*", "breastfeed*", "side effect*", "allerg*", "doctor", "doctors", "physician*",
    "midwi*", "mental health", "chronic illness*", "health insurance",
)
_MIGRATION = (
    "asylum", "refugee*", "LGBTQ+ refugee*", "visa*", "deport*", "immigra*", "emigra*",
    "migrant*", "residence permit*", "residency", "citizenship", "naturalis*", "naturaliz*",
    "border", "borders", "undocumented", "stateless*", "family reunification", "green card*",
    "passport*", "consulate*", "embassy", "embassies", "integration course*",
)
_LABOUR = (
    "labour rights", "labor rights", "labour law*", "labor law*", "workers' rights",
    "employment rights", "minimum wage*", "living wage*", "wage theft", "overtime", "eligib*",
    "work permit*", "employment contract*", "unemployment benefit*", "sick leave",
    "maternity leave", "paternity leave", "parental leave", "trade union*", "labour union*",
    "labor union*", "unionis*", "unioniz*", "collective agreement*", "collective bargaining",
    "dismissal*", "severance", "redundancy", "notice period*", "working hours",
)

#: The built-in topics, all sensitive: ``"healthcare"``, ``"migration"``, ``"labour"``.
#: A read-only mapping from name to :class:`Topic`.
BUILTIN_TOPICS = MappingProxyType({
    "healthcare": Topic("healthcare", _HEALTHCARE, sensitive=True),
    "migration": Topic("migration", _MIGRATION, sensitive=True),
    "labour": Topic("labour", _LABOUR, sensitive=True),
})


class TopicTagger:
    """Tag a query and its context with topics by matching term lexicons.

    A topic is assigned when its terms match at least ``min_query_hits``
    times in the query **or** at least ``min_context_hits`` times in the
    context. Hits are *occurrences*, not distinct terms: a context that says
    "asylum" twice has two migration hits. Occurrences do not overlap, and
    a phrase counts once even when it contains a shorter term of the same
    topic ("LGBTQ+ refugees" is one hit, not two). The context needs more
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
        self._patterns = {name: _compile(tuple(t.terms)) for name, t in self.topics_.items()}
        self._keys = {name: _first_word_keys(t.terms) for name, t in self.topics_.items()}

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
        """Number of term occurrences of each topic in ``text``.

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
        # distinct words first (cheap), and run a topic's regex only when it can match.
        words = set(_WORD_RE.findall(text.lower()))
        ordered = None
        out = {}
        for name, pattern in self._patterns.items():
            exact, prefixes, _ = self._keys[name]
            starts = words & exact
            if prefixes:
                if ordered is None:
                    ordered = sorted(words)
                for p in prefixes:  # words starting with p sit together in sorted order
                    i = bisect_left(ordered, p)
                    while i < len(ordered) and ordered[i].startswith(p):
                        starts.add(ordered[i])
                        i += 1
            out[name] = _count(pattern, text, frozenset(starts)) if starts else 0
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
        q, c = self.counts(query), self.counts(context)
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
            if terms:
                entry["terms"] = list(t.terms)
            else:
                entry["terms_sha256"] = hashlib.sha256("\n".join(t.terms).encode("utf-8")).hexdigest()
            out[name] = entry
        return {"min_query_hits": self.min_query_hits, "min_context_hits": self.min_context_hits, "topics": out}


def _as_text(text) -> str:
    if text is None:
        return ""
    if isinstance(text, str):
        return text
    return "\n\n".join(text)
