"""The evidence engine: align each claim of an answer to its evidence and read the whole difference.

For every *claim* (a clause of the answer, :func:`evqual.text.split_claims`) the engine

1. **aligns** it to the context sentence that shares the most of its content
   (words, names and values weighted by inverse sentence frequency, BM25's
   idf), then to a second sentence covering what the first lacks, and records
   how strong the alignment is, whether other sentences compete for it and
   whether the claim's subject is in its evidence;
2. **diffs** it against that evidence in both directions: every item of the
   claim (:mod:`evqual.evidence._reading`) is *aligned* (in the evidence),
   *second* (in the second sentence), *elsewhere* (in another sentence of the
   context: borrowed), *query* or *novel*; a value the evidence states
   differently is a *conflict* (numbers with units, dates, durations and
   rates normalised, and a value the evidence's numbers give by arithmetic is
   supported); a name where the evidence has another is a *swap*; for each
   logic class of ``logic.tsv`` the senses the claim *adds*, the senses the
   evidence has and the claim *drops*, and both at once (a *conflict*: "after"
   against "before", "daily" against "weekly", "confirmed" against "may");
   borrowed words found only in negated sentences; negative prefixes
   (un-, in-, dis-, non-); names and values in the other order;
3. returns one numeric row per claim (:data:`CLAIM_FEATURES`) and the
   differences behind it (:class:`Difference`), which explanations quote.

What a difference *means* is not written here: a claim model learns it
(:class:`evqual.evidence.ClaimModel`).

>>> eng = EvidenceEngine()
>>> r = eng.read("Lake Orva lies just outside the park.",
...              ["Lake Orva lies entirely within the park.", "Lake Aska sits just outside the park."])
>>> [(d.cls, d.kind, d.claim_text, d.evidence_text) for d in r.claims[0].differences]
[('quantity', 'conflict', 'just', 'entirely'), ('direction', 'conflict', 'outside', 'within')]
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import OrderedDict
from difflib import SequenceMatcher
from functools import lru_cache, partial
from dataclasses import dataclass, field

import numpy as np

from .._build import kernel
from .._deadline import check_deadline
from .._gcpause import untrack_atomic
from ..text import split_claims, split_sentences
from ._lexicon import LOGIC_CLASSES, MEMO_MAX_CHARS, logic_lexicon, stem
from ._reading import NEGATIVE_PREFIXES, read_span
from ._values import value_kind

__all__ = ["EvidenceEngine", "EvidenceIndex", "Reading", "ClaimEvidence", "Difference", "CLAIM_FEATURES"]

# ------------------------------------------------------------------------------------------------ features

_PREFIX_HEADS = frozenset(p[:2] for p in NEGATIVE_PREFIXES)

_STATUSES = ("aligned", "second", "elsewhere", "query", "novel")
_KINDS = (("w", "word"), ("n", "name"), ("v", "value"))


def _feature_table():
    rows = [
        ("align.recall", "idf-weighted share of the claim's words, names and values in its evidence sentence"),
        ("align.recall2", "the same over the evidence sentence and the second sentence"),
        ("align.recall_context", "the same over the whole context and the query"),
        ("align.margin", "best sentence score minus the runner-up's, over the claim's total weight"),
        ("align.competitors", "other sentences scoring at least 80% of the best"),
        ("align.subject", "1 if the claim's first word, name or value is in its evidence sentence"),
        ("align.second_used", "1 if a second sentence covers something the first lacks"),
        ("align.evidence_items", "items in the evidence sentence (log1p)"),
        ("claim.items", "words, names and values of the claim (log1p)"),
        ("claim.negated", "1 if the claim holds a negator"),
    ]
    for k, kname in _KINDS:
        for s in _STATUSES:
            rows.append((f"{kname}.{s}", f"{kname}s of the claim found: {s} (count)"))
        rows.append((f"{kname}.unsupported_share", f"share of the claim's {kname}s neither aligned, second nor "
                                                   "in the query"))
    rows += [
        ("word.novel_run", "longest run of consecutive novel words"),
        ("word.borrowed_negated", "words found only in negated sentences of the context (claim not negated)"),
        ("word.swap_borrowed", "words from another sentence standing where the aligned evidence has other words"),
        ("word.swap_novel", "novel words standing where the aligned evidence has other words"),
        ("name.swap", "names of the claim where the aligned evidence has another name (same place in the word "
                      "alignment)"),
        ("name.swap_far", "names of the claim not in its evidence while the evidence has, elsewhere, a name the "
                          "claim lacks"),
        ("value.conflict", "values of the claim where the aligned evidence has another value of the same kind"),
        ("value.conflict_far", "values of the claim not in its evidence while the evidence has, elsewhere, a value "
                               "of the same kind the claim lacks"),
        ("value.derived", "values the evidence's numbers give by arithmetic (sum, difference, ratio, change)"),
        ("order.reversed", "pairs of names and values in the other order than in the evidence"),
        ("order.discordant", "pairs of shared words, names and values in the other order than in the evidence"),
        ("order.tau", "rank correlation of shared items' order, claim against evidence (0 if under 3 shared)"),
        ("polarity.prefix", "a word against its negative-prefix form (available / unavailable)"),
        ("opposite.conflict", "words whose opposite (evqual.text.ANTONYM_PAIRS) is in the evidence sentence and "
                              "which themselves are not"),
    ]
    for c in LOGIC_CLASSES:
        for what, desc in (("adds", "senses the claim has and neither its evidence sentence nor the query has"),
                           ("adds_second", "of those, senses the second sentence has (borrowed)"),
                           ("drops", "senses the evidence sentence has between the words the claim shares "
                                     "with it, and the claim lacks"),
                           ("conflict", "1 if, at one place of the word alignment, the claim has a sense and the "
                                        "evidence another"),
                           ("conflict_far", "1 if the claim adds a sense and drops another, not at one place")):
            rows.append((f"logic.{c}.{what}", f"{c}: {desc}"))
    return tuple((f"{n}.v1", d) for n, d in rows)


CLAIM_FEATURE_TABLE = _feature_table()
CLAIM_FEATURES = tuple(n for n, _ in CLAIM_FEATURE_TABLE)
"""Names of the claim features, in column order (see :data:`CLAIM_FEATURE_TABLE` for definitions)."""
_COL = {n: i for i, n in enumerate(CLAIM_FEATURES)}
_KIND_COLS = tuple((code, tuple((st, _COL[f"{kname}.{st}.v1"]) for st in _STATUSES),
                    _COL[f"{kname}.unsupported_share.v1"]) for code, kname in _KINDS)
"""Per item kind: its code, the column of each status and of the unsupported share."""
_LOGIC_COLS = tuple((c, tuple(_COL[f"logic.{c}.{x}.v1"] for x in ("adds", "adds_second", "drops", "conflict",
                                                                 "conflict_far"))) for c in LOGIC_CLASSES)
"""Per logic class: the columns of its adds, adds in the second sentence, drops, conflict and far conflict."""


# ------------------------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class Difference:
    """One difference between a claim and its evidence.

    Attributes
    ----------
    cls : str
        ``"word"``, ``"name"``, ``"value"``, ``"order"``, ``"polarity"`` or a
        logic class (``"modality"``, ``"time"`` ...).
    kind : str
        ``"adds"``, ``"drops"``, ``"conflict"``, ``"borrowed"``, ``"novel"``,
        ``"swap"``, ``"reversed"``, ``"prefix"`` or ``"borrowed_negated"``.
    claim : tuple or None
        ``(start, end)`` of the claim's words in the answer.
    claim_text : str
    evidence : tuple or None
        ``(chunk index, start, end)`` of the evidence words, offsets into the chunk's text.
    evidence_text : str
    sense : str
        The logic sense(s) involved, ``"claim/evidence"`` (empty for words, names, values).
    """

    cls: str
    kind: str
    claim: tuple | None
    claim_text: str
    evidence: tuple | None
    evidence_text: str
    sense: str = ""


@dataclass
class ClaimEvidence:
    """A claim, where its evidence is, its feature row and its differences."""

    start: int
    end: int
    text: str
    unit: tuple | None  # (chunk index, start, end) of the evidence sentence, offsets into the chunk
    strength: float  # align.recall
    features: np.ndarray
    differences: list = field(default_factory=list)


_new = object.__new__


def _difference(cls, kind, claim, claim_text, evidence, evidence_text, sense=""):
    """``Difference(...)`` without the frozen dataclass's generated ``__init__`` (a Python function that sets
    each field through ``object.__setattr__``, about 2 us): the same fields in the same order in the
    instance's dict, so the same object (``tests/test_evidence.py`` compares the two)."""
    d = _new(Difference)
    d.__dict__.update({"cls": cls, "kind": kind, "claim": claim, "claim_text": claim_text, "evidence": evidence,
                       "evidence_text": evidence_text, "sense": sense})
    return d


def _claim_evidence(start, end, text, unit, strength, features, differences):
    """``ClaimEvidence(...)`` without the dataclass's generated ``__init__`` (see :func:`_difference`)."""
    c = _new(ClaimEvidence)
    c.__dict__.update({"start": start, "end": end, "text": text, "unit": unit, "strength": strength,
                       "features": features, "differences": differences})
    return c


@dataclass
class Reading:
    """What the engine read in one answer: its claims in order."""

    claims: list

    def claims_in(self, start: int, end: int) -> list:
        """Indices, in order, of the claims that start in ``[start, end)`` of the answer (a binary search:
        an answer of 30,000 sentences asks this once per sentence).  The claims' positions are read on the
        first call; a ``claims`` list reordered in place afterwards is not seen (give a new list instead).

        >>> r = EvidenceEngine().read("It opened in 1932. It closed in 1990.", ["It opened in 1932."])
        >>> r.claims_in(0, 18), r.claims_in(19, 37), r.claims_in(5, 10)
        ([0], [1], [])
        """
        claims = self.claims
        cached = self.__dict__.get("_starts")
        if cached is None or cached[0] is not claims or cached[1] != len(claims):
            starts = [c.start for c in claims]
            ordered = all(a <= b for a, b in zip(starts, starts[1:]))
            cached = self.__dict__["_starts"] = (claims, len(claims), starts if ordered else None)
        starts = cached[2]
        if starts is None:  # claims out of order (a reading built by hand): a scan
            return [i for i, c in enumerate(claims) if start <= c.start < end]
        lo = bisect_left(starts, start)
        return list(range(lo, bisect_left(starts, end, lo)))

    @property
    def matrix(self) -> np.ndarray:
        """Feature rows of the claims, shape ``(n_claims, len(CLAIM_FEATURES))``."""
        if not self.claims:
            return np.zeros((0, len(CLAIM_FEATURES)))
        return np.vstack([c.features for c in self.claims])


# ------------------------------------------------------------------------------------------------ index


_MEMO_MAX = 1 << 16
"""Keys whose aliases and canonical form are memoised at most (a long-running service stays bounded)."""

_ALIASES: dict = {}
_CANON: dict = {}


def _aliases(key: str) -> tuple:
    """A name also matches the same word written lower case, and the other way round (memoised: a pure
    function of the key, asked for several times per item of every claim; a dict, not ``lru_cache``, whose
    bookkeeping cost more than the function)."""
    got = _ALIASES.get(key)
    if got is None:
        if key.startswith("n:"):
            got = (key, "w:" + stem(key[2:]))
        elif key.startswith("w:"):
            got = (key, "n:" + key[2:])
        else:
            got = (key,)
        if len(_ALIASES) < _MEMO_MAX and len(key) <= MEMO_MAX_CHARS:
            untrack_atomic((got,))  # (before it goes in: the memo then stays a dict no collection walks)
            _ALIASES[key] = got
    return got


_SCATTER_MIN = 256
"""Postings above which a claim's unit scores are summed by ``np.bincount`` (below, a Python loop is faster)."""

_LIST_UNITS = 256
"""Evidence sentences up to which a claim's unit scores are a list (above, an array: the maximum, the runner-up
and the count near the top take one numpy call each instead of a pass in Python)."""


def _unit_scores(n_units: int, weights: list, present: list, arrays: list, skip: int | None):
    """Each unit's summed weight of the items it holds (items held by unit ``skip`` left out): a list of
    floats for up to :data:`_LIST_UNITS` units, else an array.

    Every way adds each unit's weights in item order from 0.0, so they give the same floats to the last bit.
    """
    keep = [i for i, us in enumerate(present) if skip is None or skip not in us]
    if n_units <= _LIST_UNITS:
        scores = [0.0] * n_units
        for i in keep:
            w = weights[i]
            for u in present[i]:
                scores[u] += w
        return scores
    n_post = 0
    for i in keep:
        n_post += len(arrays[i])
    if n_post <= _SCATTER_MIN or not keep:
        scores = np.zeros(n_units)
        for i in keep:
            w = weights[i]
            for u in present[i]:
                scores[u] += w
        return scores
    units = np.concatenate([arrays[i] for i in keep])
    ws = np.repeat(np.asarray(weights, dtype=np.float64)[keep], [len(arrays[i]) for i in keep])
    return np.bincount(units, weights=ws, minlength=n_units)


def _sum_as_numpy(values: list) -> float:
    """``float(np.array(values).sum())`` to the last bit, signed zeros included, without making an array for up
    to 128 values: numpy's pairwise sum adds fewer than 8 one after another to -0.0, and up to 128 in eight
    running sums (the items 8 apart in each) joined in pairs, then the rest one after another; the reduction
    adds that to its identity 0.0.  Above 128 numpy sums them (``tests/test_fastpaths.py`` holds the two
    equal)."""
    n = len(values)
    if n < 8:
        t = -0.0
        for v in values:
            t += v
        return t + 0.0
    if n > 128:
        return float(np.array(values, dtype=np.float64).sum())
    r0, r1, r2, r3, r4, r5, r6, r7 = values[:8]
    stop = n - n % 8
    for i in range(8, stop, 8):
        r0 += values[i]
        r1 += values[i + 1]
        r2 += values[i + 2]
        r3 += values[i + 3]
        r4 += values[i + 4]
        r5 += values[i + 5]
        r6 += values[i + 6]
        r7 += values[i + 7]
    t = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(stop, n):
        t += values[i]
    return t + 0.0


def _first_best(scores) -> int:
    """The first unit with the highest score, or -1 when no score is above 0 (numpy's ``argmax``)."""
    if not len(scores):
        return -1
    if isinstance(scores, list):
        top = max(scores)
        return scores.index(top) if top > 0 else -1
    return int(np.argmax(scores)) if scores.max() > 0 else -1


def _runner_up(scores) -> float:
    """The second highest score, ties counted (the smaller of numpy's top two by ``partition``)."""
    if isinstance(scores, list):  # (one pass for the top two: what sorted(scores)[-2] gives)
        top = second = -math.inf
        for x in scores:
            if x > top:
                second = top
                top = x
            elif x > second:
                second = x
        return second
    return float(min(np.partition(scores, -2)[-2:]))


def _at_least(scores, bar: float) -> int:
    """How many scores are ``bar`` or more."""
    if isinstance(scores, list):
        n = 0
        for x in scores:
            if x >= bar:
                n += 1
        return n
    return int((scores >= bar).sum())


_PRESENT_MAX = 1 << 16
"""Keys whose units an index keeps at most (a context kept for a stream of answers stays bounded)."""


class EvidenceIndex:
    """The evidence sentences of one context, read once: their items, postings and idf.

    What :meth:`EvidenceEngine.read` compares claims with.  It depends on the context alone (the query is read
    with each answer), so the per-context analysis of :class:`evqual.features.ContextIndex` keeps one for
    every answer to that context.

    Parameters
    ----------
    chunks : list of str
        The context's passages.
    words : list of TextWords, optional
        Each chunk's :class:`~evqual.text.TextWords`: their sentences and words are read instead of finding
        them again (the same index); ignored unless they are the chunks' own.

    Examples
    --------
    >>> idx = EvidenceIndex(["Buses run every 30 minutes. Trams run hourly."])
    >>> idx.units
    [(0, 0, 27), (0, 28, 45)]
    >>> r = EvidenceEngine().read("Trams run every hour.", idx.chunks, index=idx)
    >>> r.claims[0].unit
    (0, 28, 45)
    """

    def __init__(self, chunks, *, words=None):
        chunks = list(chunks)
        self.chunks = chunks
        self._read(_matching_words(words, chunks))
        n = max(1, len(self.units))
        self.default_idf = math.log(1.0 + (n + 0.5) / 0.5)
        # filled as claims ask (an index is shared by every answer to its context): a key's units, and a
        # unit's canonical keys, first positions and logic senses; a key's idf and a unit's numbers
        self._present: dict = {}
        self._unit_cache: dict = {}
        self._prefix_cache: dict = {}
        self._idf: dict = {}
        self._numbers: dict = {}

    def _read(self, words):
        """Read every sentence of the chunks and index their keys (:attr:`units`, :attr:`readings`,
        :attr:`unit_keys`, :attr:`postings`, :attr:`negated`); a method, so that the compiled module can type it
        (``_engine.pxd``)."""
        units, readings = [], []
        for ci, text in enumerate(self.chunks):
            check_deadline()
            w = words[ci] if words is not None else None
            if w is not None:
                text = w.text  # (equal to the chunk: the same object, so that read_span compares no characters)
            sentences = w.sentences if w is not None else split_sentences(text)
            for s, e in sentences or ([(0, len(text))] if text.strip() else []):
                units.append((ci, s, e))
                readings.append(read_span(text, s, e, words=w))
        self.units = units
        self.readings = readings
        unit_keys = []
        postings: dict = {}
        for u, r in enumerate(readings):
            keys = set()
            for k in r.keys:
                keys.update(_aliases(k))
            for k in keys:
                found = postings.get(k)
                if found is None:
                    postings[k] = [u]
                else:
                    found.append(u)
            unit_keys.append(frozenset(keys))  # (a frozenset, which the collector need not walk)
        # kept as tuples: a tuple of ints leaves the garbage collector's lists at its first collection, a list
        # is walked by every collection of its generation for as long as the context stays cached (issue 41);
        # replaced one by one, so that a large context never holds both
        for k, v in postings.items():
            postings[k] = tuple(v)
        # kept with the context: the tuples of numbers and strings never walked by a collection (_untrack.pyx)
        untrack_atomic((postings,))
        untrack_atomic(unit_keys)
        for r in readings:
            untrack_atomic((r.keys, r.spans, r.raws))
        self.unit_keys = unit_keys
        self.postings = postings
        self.negated = np.array([r.negated for r in readings], dtype=bool)

    def idf_of(self, key: str) -> float:
        """The idf of ``key`` over the evidence sentences, ``log(1 + (n - df + 0.5) / (df + 0.5))``, and
        :attr:`default_idf` for a key no sentence holds (made as claims ask for it, then kept)."""
        got = self._idf.get(key)
        if got is None:
            v = self.postings.get(key)
            if v is None:
                return self.default_idf
            n = max(1, len(self.units))
            got = self._idf[key] = math.log(1.0 + (n - len(v) + 0.5) / (len(v) + 0.5))
        return got

    @property
    def idf(self) -> dict:
        """Every key's :meth:`idf_of` (the claim reader asks for its keys' only)."""
        return {k: self.idf_of(k) for k in self.postings}

    def numbers_of(self, u: int) -> list:
        """``(unit, value)`` of the plain numbers (``"v:num:"`` keys) of evidence sentence ``u``, in order (made
        on first use)."""
        got = self._numbers.get(u)
        if got is None:
            got = []
            for k in self.readings[u].keys:
                if k.startswith("v:num:"):
                    _, _, unit, val = k.split(":", 3)
                    try:
                        got.append((unit, float(val)))
                    except ValueError:
                        pass
            self._numbers[u] = got
        return got

    @property
    def numbers(self) -> list:
        """Every evidence sentence's :meth:`numbers_of`."""
        return [self.numbers_of(u) for u in range(len(self.readings))]

    def present(self, key: str) -> tuple:
        """``(frozenset, int array)`` of the units holding ``key`` or one of its aliases (the same units)."""
        entry = self._present.get(key)
        if entry is None:
            found: set = set()
            for a in _aliases(key):
                found.update(self.postings.get(a, ()))
            entry = (frozenset(found), np.fromiter(found, dtype=np.intp, count=len(found)))
            if len(self._present) < _PRESENT_MAX:
                untrack_atomic((entry,))  # (before it goes in: see _aliases)
                self._present[key] = entry
        return entry

    def unit_view(self, u: int) -> tuple:
        """``(canonical keys, {key or alias: first position}, logic senses, ids)`` of unit ``u``'s items (ids:
        :func:`_ids` of the canonical keys, what :func:`_blocks` aligns)."""
        view = self._unit_cache.get(u)
        if view is None:
            keys = self.readings[u].keys
            pos: dict = {}
            for j, k in enumerate(keys):
                for a in _aliases(k):
                    pos.setdefault(a, j)
            canon = [_canon(k) for k in keys]
            view = (canon, pos, _logic_items(keys)[0], _ids(canon))
            self._unit_cache[u] = view
        return view

    def prefix_view(self, u: int) -> tuple:
        """``(word keys, stripped)`` of unit ``u``: its ``"w:"`` keys, and its words that start with a negative
        prefix, without it ("unlikely": "likely").  A claim's word is tried against the prefixes only when it is
        one of those or starts as a prefix does (computed once per unit, not per claim)."""
        view = self._prefix_cache.get(u)
        if view is None:
            ev_words = {k for k in self.unit_keys[u] if k.startswith("w:")}
            stripped = set()
            for k in ev_words:
                if k[2:4] in _PREFIX_HEADS:
                    for p in NEGATIVE_PREFIXES:
                        if k.startswith(p, 2):
                            stripped.add(k[2 + len(p):])
            view = self._prefix_cache[u] = (ev_words, stripped)
        return view


# ------------------------------------------------------------------------------------------------ engine


class EvidenceEngine:
    """Reads answers against their evidence (see the module docstring).

    Parameters
    ----------
    cache_size : int, default=256
        Contexts whose sentence index is kept (answers to one source share it).
    max_chars : int or None, default=None
        Total characters of the contexts kept, at most (``None``: no bound); a
        context longer than this alone is indexed and not kept.

    Examples
    --------
    >>> eng = EvidenceEngine()
    >>> r = eng.read("Buses run every ten minutes on Sundays.", ["On Sundays buses run every 30 minutes."])
    >>> [(d.cls, d.kind, d.claim_text, d.evidence_text) for d in r.claims[0].differences]
    [('value', 'conflict', 'every ten minutes', 'every 30 minutes')]
    """

    def __init__(self, *, cache_size: int = 256, max_chars: int | None = None):
        self.cache_size = cache_size
        self.max_chars = max_chars
        self._cache: OrderedDict = OrderedDict()
        self._chars = 0

    def index(self, chunks, *, words=None) -> EvidenceIndex:
        """The :class:`EvidenceIndex` of ``chunks`` (kept in the bounded cache).

        ``words``: each chunk's :class:`~evqual.text.TextWords`, when the caller has them (their words and
        sentences are read instead of finding them again)."""
        key = tuple(chunks)
        idx = self._cache.get(key)
        if idx is not None:
            self._cache.move_to_end(key)
            return idx
        idx = EvidenceIndex(key, words=words)
        size = sum(map(len, key))
        if self.max_chars is not None and size > self.max_chars:
            return idx
        self._cache[key] = idx
        self._chars += size
        while len(self._cache) > self.cache_size or (self.max_chars is not None and self._chars > self.max_chars):
            old_chunks, _ = self._cache.popitem(last=False)
            self._chars -= sum(map(len, old_chunks))
        return idx

    def read(self, output: str, chunks, query: str = "", claims=None, *, words=None,
             chunk_words=None, index: EvidenceIndex | None = None) -> Reading:
        """Read ``output`` against ``chunks`` (list of evidence texts).

        ``claims``: ``(start, end)`` spans of the output; default :func:`evqual.text.split_claims`.
        ``words`` and ``chunk_words``: the :class:`~evqual.text.TextWords` of the output and of each chunk,
        when the caller has them (:func:`evqual.features.analyze` does): read instead of finding the words
        again, with the same result.  ``index``: the :class:`EvidenceIndex` of ``chunks``, when the caller
        keeps one (then this engine's cache is not used); it must be of these chunks.
        """
        if isinstance(chunks, str):
            chunks = [chunks]
        if index is not None:
            if not isinstance(index, EvidenceIndex):
                raise TypeError(f"EvidenceEngine.read: index must be an EvidenceIndex, got {type(index).__name__}")
            if len(index.chunks) != len(chunks) or any(
                    a is not b and a != b for a, b in zip(index.chunks, chunks)):
                raise ValueError("EvidenceEngine.read: index is not the EvidenceIndex of these chunks")
            idx = index
        else:
            idx = self.index(list(chunks), words=chunk_words)
        query_keys = _query_keys(query or "")
        if words is not None and words.text is not output:
            if words.text == output:
                output = words.text  # (the same object, so that read_span compares no characters)
            else:
                words = None
        spans = split_claims(output) if claims is None else list(claims)
        claims = []
        for s, e in spans:
            check_deadline()
            claims.append(self._claim(output, s, e, idx, query_keys, words))
        return Reading(claims)

    # -------------------------------------------------------------- one claim
    def _claim(self, output: str, start: int, end: int, idx: EvidenceIndex, query_keys: frozenset,
               words=None) -> ClaimEvidence:
        return _read_claim(output, start, end, idx, query_keys, words)


def _read_claim(output: str, start: int, end: int, idx: EvidenceIndex, query_keys: frozenset,
                words=None) -> ClaimEvidence:
    """The reading of the claim ``output[start:end]`` against the context ``idx`` (:meth:`EvidenceEngine._claim`):
    a module function, so that the compiled module can type it (``_engine.pxd``)."""
    r = read_span(output, start, end, words=words)
    f = [0.0] * len(CLAIM_FEATURES)  # the claim's row, an array at the end (list items are cheaper to set)
    diffs: list[Difference] = []
    keys = r.keys
    # distinct non-logic items, first occurrence
    first: dict = {}
    for i, k in enumerate(keys):
        if k[0] in "wnv" and k not in first:
            first[k] = i
    items = list(first)
    w_list = [idx.idf_of(k) for k in items]
    total = _sum_as_numpy(w_list) or 1.0
    n_units = len(idx.units)
    present = []  # per item: the units holding it (aliases included), as a set and as an array
    arrays = []
    for k in items:
        us, arr = idx.present(k)
        present.append(us)
        arrays.append(arr)
    scores = _unit_scores(n_units, w_list, present, arrays, None)
    best = _first_best(scores)
    # second sentence: most of what the first lacks
    second = -1
    if best >= 0:
        second = _first_best(_unit_scores(n_units, w_list, present, arrays, best))
    f[_COL["align.recall.v1"]] = float(scores[best]) / total if best >= 0 else 0.0
    # (sums added in order, as a loop: sum() of floats compensates its rounding from Python 3.12 on)
    cov2 = covc = 0.0
    for k, w, us in zip(items, w_list, present):
        if best in us or second in us:
            cov2 += w
        if us or k in query_keys:
            covc += w
    f[_COL["align.recall2.v1"]] = cov2 / total if items else 0.0
    f[_COL["align.recall_context.v1"]] = covc / total if items else 0.0
    if n_units > 1 and best >= 0:
        top = float(scores[best])
        f[_COL["align.margin.v1"]] = (top - _runner_up(scores)) / total
        f[_COL["align.competitors.v1"]] = float(_at_least(scores, 0.8 * top) - 1)
    f[_COL["align.subject.v1"]] = 1.0 if items and best >= 0 and best in present[0] else 0.0
    f[_COL["align.second_used.v1"]] = 1.0 if second >= 0 else 0.0
    f[_COL["align.evidence_items.v1"]] = math.log1p(len(idx.readings[best].keys)) if best >= 0 else 0.0
    f[_COL["claim.items.v1"]] = math.log1p(len(items))
    f[_COL["claim.negated.v1"]] = 1.0 if r.negated else 0.0

    ev_reading = idx.readings[best] if best >= 0 else None
    unit = idx.units[best] if best >= 0 else None


    # ---- statuses of words, names, values
    status_of = {}
    ev_numbers = (idx.numbers_of(best) if best >= 0 else []) + (idx.numbers_of(second) if second >= 0 else [])
    for k, us in zip(items, present):
        if best in us:
            st = "aligned"
        elif second in us:
            st = "second"
        elif us:
            st = "elsewhere"
        elif _any_in(_aliases(k), query_keys):
            st = "query"
        else:
            st = "novel"
        if st == "novel" and k.startswith("v:num:") and _derived(k, ev_numbers):
            st = "aligned"
            f[_COL["value.derived.v1"]] += 1
        if st in ("second", "elsewhere", "novel") and k.startswith(("v:num:", "v:qty:")):
            # the number as written, where the context states it without a unit (a record's
            # "price_usd: 149" supports "$149", "battery_hours: 14" "fourteen hours")
            raw = r.raws[first[k]]
            plain = f"v:num::{raw:g}" if raw is not None else None
            where = idx.postings.get(plain, ()) if plain is not None else ()
            if best in where or (second >= 0 and second in where):
                st = "aligned"
            elif where and st == "novel":
                st = "elsewhere"
        status_of[k] = st
    counts: dict = {}
    for k in items:
        ck = (k[0], status_of[k])
        counts[ck] = counts.get(ck, 0) + 1
    for code, cols, share_col in _KIND_COLS:
        n_kind = 0
        for st, col in cols:
            c_st = counts.get((code, st), 0)
            f[col] = c_st
            n_kind += c_st
        if n_kind:
            f[share_col] = (counts.get((code, "elsewhere"), 0) + counts.get((code, "novel"), 0)) / n_kind
    # longest run of novel words
    run = best_run = 0
    for k in keys:
        if k[0] == "w":
            run = run + 1 if status_of.get(k) == "novel" else 0
            best_run = max(best_run, run)
    f[_COL["word.novel_run.v1"]] = best_run
    # borrowed from negated sentences only
    if not r.negated:
        nb = 0
        for k, us in zip(items, present):
            if status_of[k] in ("second", "elsewhere") and us and _all_negated(idx.negated, us):
                nb += 1
                i = first[k]
                diffs.append(_difference("word", "borrowed_negated", *_claim_span(r, output, i), None, ""))
        f[_COL["word.borrowed_negated.v1"]] = nb
    # the word alignment of the claim with its evidence sentence
    ev_keys = ev_reading.keys if ev_reading else ()
    ev_canon, ev_pos, _, ev_ids = idx.unit_view(best) if best >= 0 else ((), {}, {}, None)
    blocks, lo, hi = _blocks(keys, ev_keys, ev_canon, ev_ids)
    claim_alias = set()
    for k in items:
        claim_alias.update(_aliases(k))
    block_of = {}  # claim item index -> evidence index range of its block
    block_len = {}  # claim item index -> the longer side of its block, in items
    for i1, i2, j1, j2 in blocks:
        for i in range(i1, i2):
            block_of[i] = (j1, j2)
            block_len[i] = max(i2 - i1, j2 - j1)
    # words standing in for other words of the evidence (a replaced stretch of the alignment)
    for i1, i2, j1, j2 in blocks:
        if not _stands_in(ev_keys, j1, j2, claim_alias):
            continue
        for i in range(i1, i2):
            k = keys[i]
            if k[0] == "w" and first.get(k) == i:
                st = status_of[k]
                if st in ("second", "elsewhere"):
                    f[_COL["word.swap_borrowed.v1"]] += 1
                elif st == "novel":
                    f[_COL["word.swap_novel.v1"]] += 1
    # names: swap, borrowed, novel; values: conflict, borrowed, novel
    for k in items:
        st = status_of[k]
        if st in ("aligned", "query"):
            continue
        i = first[k]
        j1, j2 = block_of.get(i, (0, 0))
        if k[0] == "n":
            local = [ev_keys[j] for j in range(j1, j2) if ev_keys[j][0] == "n" and ev_keys[j] not in claim_alias]
            far = [kk for kk in ev_keys if kk[0] == "n" and kk not in claim_alias]
            if local or far:
                f[_COL["name.swap.v1" if local else "name.swap_far.v1"]] += 1
            if local and block_len.get(i, 0) <= _SWAP_SLOT:
                # another name stands where this one stands, the words around aligned: a conflict
                ev, et = _ev_span(idx, ev_reading, unit, frozenset(local).__contains__)
                diffs.append(_difference("name", "swap", *_claim_span(r, output, i), ev, et))
            # a name elsewhere in the aligned sentence, or in a long stretch the alignment could not pair,
            # contradicts nothing (issue 24: "'Arkansas' where the aligned evidence names 'CEOs'", a
            # 9-item stretch against 12): the name is borrowed from another passage, or unsupported
            elif st in ("second", "elsewhere"):
                diffs.append(_difference("name", "borrowed", *_claim_span(r, output, i), None, ""))
            elif st == "novel":
                diffs.append(_difference("name", "novel", *_claim_span(r, output, i), None, ""))
        elif k[0] == "v":
            kind = value_kind(k[2:])

            local = [ev_keys[j] for j in range(j1, j2) if _same_value(ev_keys[j], kind, claim_alias)]
            far = [kk for kk in ev_keys if _same_value(kk, kind, claim_alias)]
            if local or far:
                f[_COL["value.conflict.v1" if local else "value.conflict_far.v1"]] += 1
                ev, et = _ev_span(idx, ev_reading, unit, frozenset(local or far).__contains__)
                diffs.append(_difference("value", "conflict", *_claim_span(r, output, i), ev, et))
            else:
                diffs.append(_difference("value", "borrowed" if st in ("second", "elsewhere") else "novel",
                                        *_claim_span(r, output, i), None, ""))
    # novel words as one difference per run, borrowed words one each (capped)
    _word_diffs(keys, r.spans, output, status_of, diffs)
    # negative prefixes
    # (a word with a prefix of the evidence's word, or with its word as a prefix's stem)
    ev_words, stripped = idx.prefix_view(best) if best >= 0 else ((), ())
    for i, k in enumerate(keys):
        if k[0] != "w" or (k[2:4] not in _PREFIX_HEADS and k[2:] not in stripped) or \
                status_of.get(k) == "aligned":
            continue
        w = k[2:]
        for p in NEGATIVE_PREFIXES:
            if (w.startswith(p) and "w:" + w[len(p):] in ev_words) or ("w:" + p + w) in ev_words:
                f[_COL["polarity.prefix.v1"]] += 1
                ev, et = _ev_span(idx, ev_reading, unit, ("w:" + w[len(p):], "w:" + p + w).__contains__)
                diffs.append(_difference("polarity", "prefix", *_claim_span(r, output, i), ev, et))
                break
    # opposites
    opp = _opposite_stems()
    for i, k in enumerate(keys):
        if k[0] != "w" or status_of.get(k) == "aligned":
            continue
        hits = [o for o in opp.get(k[2:], ()) if "w:" + o in ev_words and "w:" + o not in claim_alias]
        if hits:
            f[_COL["opposite.conflict.v1"]] += 1
            ev, et = _ev_span(idx, ev_reading, unit, partial(_word_in, hits))
            diffs.append(_difference("opposite", "conflict", *_claim_span(r, output, i), ev, et))
    # order of shared names and values, and of all shared items
    if ev_reading is not None:
        shared = [(first[k], ev_pos[k]) for k in items if k in ev_pos]
        nv = [(a, b) for (a, b), k in zip(shared, [k for k in items if k in ev_pos]) if k[0] in "nv"]
        rev = _reversed_pairs(nv)
        f[_COL["order.reversed.v1"]] = rev
        if rev:
            diffs.append(_difference("order", "reversed", (start, end), output[start:end],
                                    (unit[0], unit[1], unit[2]), idx.chunks[unit[0]][unit[1]:unit[2]]))
        conc = disc = 0
        for x in range(len(shared)):
            for y in range(x + 1, len(shared)):
                d = (shared[x][0] - shared[y][0]) * (shared[x][1] - shared[y][1])
                conc += d > 0
                disc += d < 0
        f[_COL["order.discordant.v1"]] = disc
        if len(shared) >= 3:
            f[_COL["order.tau.v1"]] = (conc - disc) / max(1, conc + disc)
    # logic classes: adds, inner drops, conflicts at one place of the alignment
    ev2_logic = idx.unit_view(second)[2] if second >= 0 else {}
    cl_logic, cl_pos, _ = _logic_items(keys)
    ev_logic, _, inner = _logic_items(ev_keys, lo, hi)
    lex = logic_lexicon()
    local: dict = {}
    for i1, i2, j1, j2 in blocks:
        cset = {tuple(keys[i].split(":", 2)[1:]) for i in range(i1, i2) if keys[i][0] == "L"}
        eset = {tuple(ev_keys[j].split(":", 2)[1:]) for j in range(j1, j2) if ev_keys[j][0] == "L"}
        for c, a in cset:
            for c2, b in eset:
                if c2 == c and lex.exclusive(c, a, b):
                    local.setdefault(c, []).append((a, b))
    for c, (c_adds, c_adds2, c_drops, c_conflict, c_far) in _LOGIC_COLS:
        if c not in cl_logic and c not in inner:
            continue  # neither adds nor drops: every feature of the class stays 0
        cs, es, es2 = cl_logic.get(c, set()), ev_logic.get(c, set()), ev2_logic.get(c, set())
        # a sense the query asks about ("Does it have to ...?") is not added by the answer
        adds = cs - es - {x for x in cs if f"L:{c}:{x}" in query_keys}
        drops = inner.get(c, set()) - cs
        pairs = [(a, b) for a, b in local.get(c, ()) if a in adds and b not in cs]
        f[c_adds] = len(adds)
        f[c_adds2] = len(adds & es2)
        f[c_drops] = len(drops)
        far = not pairs and _any_exclusive(lex, c, adds, drops)
        if pairs:
            f[c_conflict] = 1.0
        elif far:
            f[c_far] = 1.0
        if adds or drops:
            kind = "conflict" if (pairs or far) else ("adds" if adds else "drops")
            a_set = {a for a, _ in pairs} or adds
            d_set = {b for _, b in pairs} or drops
            if a_set:
                cspan, ctext = _claim_span(r, output, min([cl_pos[(c, x)] for x in a_set]))
            else:
                cspan, ctext = None, ""
            ev, et = _ev_span(idx, ev_reading, unit, frozenset([f"L:{c}:{x}" for x in d_set]).__contains__) \
                if d_set else (None, "")
            diffs.append(_difference(c, kind, cspan, ctext, ev, et,
                                    "/".join([",".join(sorted(a_set)), ",".join(sorted(d_set))])))
    strength = float(f[_COL["align.recall.v1"]])
    return _claim_evidence(start, end, output[start:end], unit, strength, _float_row(f), diffs)


def _ev_span(idx, reading, u, key_pred):
    """(chunk, start, end) and text of the evidence items of ``reading`` (unit ``u``) matching ``key_pred``."""
    if reading is None:
        return None, ""
    sp = [s for k, s in zip(reading.keys, reading.spans) if key_pred(k)]
    if not sp:
        return None, ""
    text = idx.chunks[u[0]]
    return (u[0], sp[0][0], sp[0][1]), " / ".join(dict.fromkeys([text[a:b] for a, b in sp[:4]]))


def _claim_span(r, output: str, i: int) -> tuple:
    """``((start, end), text)`` of item ``i`` of the claim's reading ``r``."""
    a, b = r.spans[i]
    return (a, b), output[a:b]


def _any_in(keys, container) -> bool:
    """Whether one of ``keys`` is in ``container``."""
    for k in keys:
        if k in container:
            return True
    return False


def _all_negated(negated, units) -> bool:
    """Whether every one of ``units`` is negated."""
    for u in units:
        if not negated[u]:
            return False
    return True


def _stands_in(ev_keys, j1: int, j2: int, claim_alias) -> bool:
    """Whether ``ev_keys[j1:j2]`` holds a word or name the claim lacks."""
    for j in range(j1, j2):
        if ev_keys[j][0] in "wn" and ev_keys[j] not in claim_alias:
            return True
    return False


def _same_value(kk: str, kind, claim_alias) -> bool:
    """Whether ``kk`` is a value of ``kind`` the claim lacks."""
    return kk[0] == "v" and value_kind(kk[2:]) == kind and kk not in claim_alias


def _word_in(hits, kk: str) -> bool:
    """Whether ``kk`` is the word key of one of the stems ``hits``."""
    return kk[2:] in hits and kk[0] == "w"


def _reversed_pairs(nv: list) -> int:
    """How many pairs of ``(claim position, evidence position)`` are in opposite orders."""
    rev = 0
    for x in range(len(nv)):
        for y in range(x + 1, len(nv)):
            if (nv[x][0] - nv[y][0]) * (nv[x][1] - nv[y][1]) < 0:
                rev += 1
    return rev


def _any_exclusive(lex, c, adds, drops) -> bool:
    """Whether a sense of ``adds`` and one of ``drops`` exclude each other in logic class ``c``."""
    for a in adds:
        for b in drops:
            if lex.exclusive(c, a, b):
                return True
    return False


def _query_keys(query: str) -> frozenset:
    """The items of ``query`` and their aliases; kept for queries up to :data:`_QUERY_CACHED_CHARS` (queries
    repeat across the answers to one source, and a long one is not kept 4,096 times)."""
    if len(query) <= _QUERY_CACHED_CHARS:
        return _query_keys_cached(query)
    return _read_query_keys(query)


_QUERY_CACHED_CHARS = 4000


@lru_cache(maxsize=4096)
def _query_keys_cached(query: str) -> frozenset:
    return _read_query_keys(query)


def _read_query_keys(query: str) -> frozenset:
    keys: set = set()
    for k in read_span(query).keys:
        keys.update(_aliases(k))
    return frozenset(keys)


def _matching_words(words, chunks):
    """``words`` if it holds one :class:`~evqual.text.TextWords` of each of ``chunks``, else ``None``."""
    if words is None or len(words) != len(chunks):
        return None
    for w, text in zip(words, chunks):
        if w.text is not text and w.text != text:
            return None
    return words


def _canon(key: str) -> str:
    """A key as the alignment compares it: a name as its lower-case word's key (memoised as :func:`_aliases`)."""
    got = _CANON.get(key)
    if got is None:
        got = "w:" + stem(key[2:]) if key.startswith("n:") else key
        if len(_CANON) < _MEMO_MAX and len(key) <= MEMO_MAX_CHARS:
            _CANON[key] = got
    return got


_SWAP_SLOT = 3
"""The longest unaligned stretch (items on either side) in which a name standing for another is read as a
swap (``ENTITY_CONFLICT``); a longer one pairs nothing word for word."""


_ALIGN = kernel("evqual.evidence._align", "nonequal_blocks")  # the compiled alignment, or None: difflib
_FLOAT_ROW = kernel("evqual.evidence._align", "float_row")


def _float_row(values: list) -> np.ndarray:
    """A claim's feature row as a float64 array (the compiled kernel's :func:`float_row` where it is built)."""
    if _FLOAT_ROW is not None:
        return _FLOAT_ROW(values)
    return np.array(values, dtype=np.float64)


def _ids(canon) -> tuple:
    """``({key: id}, ids)``: the keys numbered from 0 in order of first occurrence, and each key's id."""
    ids: dict = {}
    return ids, [ids.setdefault(k, len(ids)) for k in canon]


def _blocks(claim_keys, ev_keys, ev_canon=None, ev_ids=None):
    """The non-equal blocks ``(i1, i2, j1, j2)`` of the alignment of the claim's items with the evidence's
    (difflib's longest matching blocks, names and words compared alike), and the evidence index range
    ``[lo, hi)`` between the first and the last shared item.  ``ev_canon``, ``ev_ids``: the evidence keys
    already canonical, and :func:`_ids` of them (:meth:`EvidenceIndex.unit_view`).

    The compiled kernel (``evqual/evidence/_align.pyx``) aligns the keys as integer ids with difflib's
    algorithm; without it, difflib aligns the strings.  Both give the same blocks."""
    if not ev_keys:
        return [(0, len(claim_keys), 0, 0)] if claim_keys else [], 0, 0
    b = list(ev_canon) if ev_canon is not None else [_canon(k) for k in ev_keys]
    align = _ALIGN
    if align is not None:
        index, b_ids = ev_ids if ev_ids is not None else _ids(b)
        get = index.get
        return align([get(_canon(k), -1) for k in claim_keys], b_ids)
    a = [_canon(k) for k in claim_keys]
    sm = SequenceMatcher(None, a, b, autojunk=False)
    ops = sm.get_opcodes()
    eq = [(j1, j2) for tag, _, _, j1, j2 in ops if tag == "equal"]
    lo, hi = (eq[0][0], eq[-1][1]) if eq else (0, 0)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"], lo, hi


@lru_cache(maxsize=1)
def _opposite_stems() -> dict:
    """Stem -> stems of its opposites (:data:`evqual.text.ANTONYM_PAIRS`), one-word pairs only."""
    from ..text import ANTONYM_PAIRS
    from ._lexicon import stem

    out: dict = {}
    for a, b in ANTONYM_PAIRS:
        if " " in a or " " in b:
            continue
        sa, sb = stem(a), stem(b)
        if sa != sb:
            out.setdefault(sa, set()).add(sb)
            out.setdefault(sb, set()).add(sa)
    return {k: frozenset(v) for k, v in out.items()}


def _logic_items(keys, lo: int = 0, hi: int = 0):
    """Logic senses of an item sequence: ``({class: senses}, {(class, sense): first index},
    {class: senses at indices in [lo, hi)})``."""
    senses: dict = {}
    pos: dict = {}
    inner: dict = {}
    for j, k in enumerate(keys):
        if k[0] == "L":
            _, c, s = k.split(":", 2)
            senses.setdefault(c, set()).add(s)
            pos.setdefault((c, s), j)
            if lo <= j < hi:
                inner.setdefault(c, set()).add(s)
    return senses, pos, inner


def _word_diffs(keys, spans, output, status_of, diffs, cap: int = 6) -> None:
    run = None
    n = 0
    for i, k in enumerate(keys):
        st = status_of.get(k) if k[0] == "w" else None
        if st == "novel":
            run = (run[0], spans[i][1]) if run else spans[i]
            continue
        if run:
            diffs.append(_difference("word", "novel", run, output[run[0]:run[1]], None, ""))
            n += 1
            run = None
        if st in ("second", "elsewhere") and n < cap:
            diffs.append(_difference("word", "borrowed", spans[i], output[spans[i][0]:spans[i][1]], None, ""))
            n += 1
    if run:
        diffs.append(_difference("word", "novel", run, output[run[0]:run[1]], None, ""))


def _derived(key: str, numbers) -> bool:
    """Whether a claim number not in the context follows from the evidence's numbers of the same unit: a
    rounding (within 1%), or two of them by +, -, / or % change (not for small counts)."""
    try:
        _, _, unit, val = key.split(":", 3)
        v = float(val)
    except ValueError:
        return False
    vals = [x for u, x in numbers if u == unit or (unit == "%" and u == "")]
    if not vals:
        return False
    if not unit and float(v).is_integer() and abs(v) < 100:
        return False  # a small count follows from almost any two numbers

    def close(a, b):
        return abs(a - b) <= 0.01 * max(abs(a), abs(b), 1e-9) + 1e-9

    for x in vals:
        if close(v, x):  # a rounding ("1.1 million" for 1,093,000) or another unit spelling
            return True
    for i, a in enumerate(vals):
        for b in vals[i + 1:]:
            cands = [a + b, abs(a - b)]
            if b:
                cands += [a / b, 100.0 * (a - b) / b]
            if a:
                cands += [b / a, 100.0 * (b - a) / a]
            if any(close(abs(v), abs(c)) for c in cands if math.isfinite(c)):
                return True
    return False
