"""Atomic claims of an answer, with character spans (seed 003, claim extraction).

The claims are the detector's own claim units, not a second segmenter:
sentences from :func:`evqual.text.split_sentences`, then

* ``backend="rules"`` (default): :func:`evqual.features.split_claims`, the
  rule-based units of the ``check`` family (cut at semicolons and at a comma
  or dash before a conjunction);
* ``backend="spacy"`` (the ``ner`` extra): the parser's units
  (:class:`evqual.text.SpacyClaimSplitter`), each with its
  subject-verb-object triple read off the dependency parse.

Seed 003 keeps factual statements only: a unit is dropped when it is a
question (it ends with ``?``) or an opinion (it opens with a first-person
stance such as "I think", "in my opinion", "personally", or is a courtesy
such as "I hope this helps").  Units without a letter or digit are dropped too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..features import split_claims
from ..text import SpacyClaimSplitter, split_sentences

__all__ = ["CLAIM_EXTRACTORS", "Claim", "ClaimExtractor", "extract_claims", "is_opinion", "is_question"]

CLAIM_EXTRACTORS = ("rules", "spacy")

_OPINION_RE = re.compile(
    r"^\W*(?:(?:and|but|so)\s+)?(?:"
    r"(?:i|we)\s+(?:personally\s+)?(?:think|believe|feel|guess|suppose|hope|reckon|would\s+say|'d\s+say|"
    r"would\s+argue|am\s+(?:sure|confident|glad|happy)|prefer|love|like)\b"
    r"|in\s+(?:my|our)\s+(?:opinion|view|experience)\b"
    r"|personally\b|it\s+seems\s+to\s+me\b|imho\b|to\s+me\b"
    r"|(?:please|feel\s+free|let\s+me\s+know|thank\s+you|thanks|hope\s+this\s+helps)\b"
    r")",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    """True when ``text`` ends with a question mark (closing quotes and brackets ignored).

    >>> is_question("Did the bridge open in 1932?"), is_question("It opened in 1932.")
    (True, False)
    """
    return text.rstrip().rstrip("\"')]}\u201d\u2019").endswith("?")


def is_opinion(text: str) -> bool:
    """True when ``text`` opens with a first-person stance or a courtesy (see the module docstring).

    >>> is_opinion("I think the plan is good."), is_opinion("The plan was approved.")
    (True, False)
    """
    return bool(_OPINION_RE.match(text))


@dataclass(frozen=True)
class Claim:
    """One atomic claim: ``output[start:end] == text``; ``triple`` is (subject, verb, object) or ``None``."""

    start: int
    end: int
    text: str
    triple: tuple | None = None


def _keep(text: str) -> bool:
    return any(c.isalnum() for c in text) and not is_question(text) and not is_opinion(text)


_SUBJ = {"nsubj", "nsubjpass", "csubj", "expl"}
_OBJ = {"dobj", "attr", "acomp", "oprd", "dative", "xcomp", "ccomp"}


def _triple(doc, a: int, b: int):
    """(subject, verb, object) of the first verb in the character span ``[a, b)`` of ``doc``."""
    toks = [t for t in doc if a <= t.idx < b]
    verbs = [t for t in toks if t.pos_ in ("VERB", "AUX") and (t.dep_ in ("ROOT", "conj", "advcl", "ccomp", "relcl")
                                                               or any(c.dep_ in _SUBJ for c in t.children))]
    for v in verbs:
        subj = next((c for c in v.children if c.dep_ in _SUBJ), None)
        if subj is None and v.dep_ == "conj":  # "... and rejected the plan": the subject of the first verb
            subj = next((c for c in v.head.children if c.dep_ in _SUBJ), None)
        obj = next((c for c in v.children if c.dep_ in _OBJ), None)
        if obj is None:
            prep = next((c for c in v.children if c.dep_ in ("prep", "agent")), None)
            if prep is not None:
                pobj = next((c for c in prep.children if c.dep_ == "pobj"), None)
                obj = pobj if pobj is not None else None
                if pobj is not None:
                    obj_text = doc[prep.i:pobj.right_edge.i + 1].text
                    return (_span(doc, subj), v.text, obj_text)
        if subj is not None or obj is not None:
            return (_span(doc, subj), v.text, _span(doc, obj))
    return None


def _span(doc, tok) -> str:
    return "" if tok is None else doc[tok.left_edge.i:tok.right_edge.i + 1].text


class ClaimExtractor:
    """Atomic claims of answers (see the module docstring for the two backends).

    Parameters
    ----------
    backend : {"rules", "spacy"}, default="rules"
        ``"spacy"`` needs the ``ner`` extra (``pip install 'evqual[ner]'``).

    Examples
    --------
    >>> ext = ClaimExtractor()
    >>> [c.text for c in ext.extract("The plant opened in 1932, but it closed in 1990. Was it sold? "
    ...                              "I think it was a good plant.")]
    ['The plant opened in 1932', 'but it closed in 1990.']
    """

    def __init__(self, *, backend: str = "rules"):
        self.backend = backend
        if backend not in CLAIM_EXTRACTORS:
            raise ValueError(f"backend must be one of {CLAIM_EXTRACTORS}; got {backend!r}")
        self._splitter = SpacyClaimSplitter() if backend == "spacy" else None

    def extract(self, output: str) -> list:
        """The claims of one answer, in order."""
        return self.extract_batch([output])[0]

    def extract_batch(self, outputs) -> list:
        """:meth:`extract` for many answers (the spaCy backend parses them with ``nlp.pipe``)."""
        outputs = list(outputs)
        for i, o in enumerate(outputs):
            if not isinstance(o, str):
                raise TypeError(f"output {i} must be a string; got {type(o).__name__}")
        out = []
        if self._splitter is None:
            for o in outputs:
                units = [u for s, e in split_sentences(o) for u in split_claims(o, s, e)]
                out.append([Claim(a, b, o[a:b]) for a, b in units if _keep(o[a:b])])
            return out
        docs = self._splitter.nlp.pipe(outputs, batch_size=self._splitter.batch_size)
        for o, doc in zip(outputs, docs):
            units = self._splitter.units(o, split_sentences(o), doc)
            out.append([Claim(a, b, o[a:b], _triple(doc, a, b)) for a, b in units if _keep(o[a:b])])
        return out


def extract_claims(output: str, *, backend: str = "rules") -> list:
    """The claims of ``output`` (a shortcut for ``ClaimExtractor(backend=backend).extract(output)``).

    >>> [(c.start, c.end) for c in extract_claims("Paris is in France; Lyon is too.")]
    [(0, 18), (20, 32)]
    """
    return ClaimExtractor(backend=backend).extract(output)
