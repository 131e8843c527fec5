"""The ``rules`` judge: the claim-level model and the evidence engine, no LLM.

For each statement the judge builds the one-claim example ``(query, context
chunks, statement)``, runs the detector's analysis on it once, and reads two
things off that analysis:

* the calibrated probability that the statement is supported,
  ``1 - P(hallucinated)`` from :class:`~evqual.verify.ClaimModel` (whose
  features include the evidence engine's reading of the statement);
* the findings of the ``check`` family (number, unit, date, negation, antonym,
  entity, role, quantifier, field, displaced): any of them makes the verdict
  ``REFUTED``, with the disagreeing evidence passage first;
* the differences the evidence engine (:mod:`evqual.evidence`) read between
  the statement and the evidence it is aligned with: a contradiction (a value,
  name or logic word of an exclusive sense, swapped roles, a negation on one
  side only) makes the verdict ``REFUTED`` when the probability is below
  ``tau`` (the engine's contradictions are less precise than the checks').

A negated statement ("did not open in 1932") does not inherit a value
(number, unit or date) conflict: it is true when the evidence affirms another value, so a value check
that fires on it makes the verdict ``SUPPORTED`` with MetaRAG's answer ``YES`` set on the judgement
(the claim model's probability is kept as it is: the model reads a negation the evidence does not
state as unsupported).  Only for a negated clause ("did not", "never") without a bound ("did not exceed
50", "no more than 8": their truth depends on which way the values differ), against evidence sentences
without a negation cue.  Otherwise the
verdict is ``SUPPORTED`` when the probability reaches ``tau`` (seed 003's
entailment threshold, 0.75) and ``NO_EVIDENCE`` below it.
"""

from __future__ import annotations

import re

from ..text import split_sentences
from ._claim_model import claim_example, load_claim_model
from ._types import Evidence, Judgement

__all__ = ["REFUTING_CHECKS", "REFUTING_KINDS", "RulesJudge", "answer_from"]

_NEGATED_RE = re.compile(r"\b(?:not|never|no|none|neither|nor|without)\b|n't\b", re.IGNORECASE)

#: A negation of the clause ("did not", "never"), not of a quantity ("no more than"): the only kind whose
#: wrong value makes the statement true.
_CLAUSE_NEGATION_RE = re.compile(r"\b(?:not|never)\b|n't\b", re.IGNORECASE)
#: A bound ("did not exceed 50", "not more than 8"): its truth depends on which way the values differ.
_BOUND_RE = re.compile(r"\b(?:more|less|fewer|greater|over|under|above|below|exceed\w*|least|most|up to|than)\b",
                       re.IGNORECASE)

#: Value checks whose conflict a negated statement does not inherit ("it did not open in 1932" is true when
#: the evidence says 1937).
_VALUE_CHECKS = ("number", "unit", "date")

#: Check findings that refute a statement whatever its probability (``unsupported`` only lowers it).
REFUTING_CHECKS = ("number", "unit", "date", "negation", "antonym", "entity", "role", "quantifier", "field",
                   "displaced")

#: Kinds of engine difference (:class:`evqual.evidence.Difference`) that refute a statement; novel and
#: borrowed items only lower its probability.
REFUTING_KINDS = ("conflict", "swap", "reversed", "prefix", "borrowed_negated")


def answer_from(judgement: Judgement, *, yes_at: float = 0.75, no_at: float = 0.4) -> str:
    """MetaRAG's YES / NO / NOT SURE from a judgement: its own ``answer`` when it has one, else
    YES at ``probability >= yes_at``, NO when refuted or ``probability < no_at``, NOT SURE between.

    >>> answer_from(Judgement("SUPPORTED", 0.9)), answer_from(Judgement("REFUTED", 0.8)), answer_from(Judgement("NO_EVIDENCE", 0.5))
    ('YES', 'NO', 'NOT SURE')
    """
    if judgement.answer is not None:
        return judgement.answer
    if judgement.verdict == "REFUTED" or judgement.probability < no_at:
        return "NO"
    return "YES" if judgement.probability >= yes_at else "NOT SURE"


class RulesJudge:
    """Judges statements with the claim-level model and the evidence engine (see the module docstring).

    Parameters
    ----------
    model : ClaimModel or str or Path, optional
        A fitted model or its folder; default the shipped one
        (:func:`evqual.verify.default_claim_model_path`).
    tau : float, default=0.75
        ``SUPPORTED`` at ``probability >= tau``.

    Examples
    --------
    >>> judge = RulesJudge()
    >>> chunks = ["The Golden Gate Bridge opened in 1937 after four years of work."]
    >>> [j.verdict for j in judge.judge(["The bridge opened in 1937.", "The bridge opened in 1932."],
    ...                                 [[], []], chunks=chunks)]
    ['SUPPORTED', 'REFUTED']
    """

    name = "rules"

    def __init__(self, model=None, *, tau: float = 0.75):
        self.model = model
        self.tau = tau

    def load(self) -> "RulesJudge":
        """Load (and audit) the claim model now rather than at the first statement; returns ``self``.

        Raises :class:`~evqual.models.ModelLoadError` for a model that fails the audit.  A model is
        loaded once: a failure is remembered and raised again, the file is not read again per answer.
        """
        self._model()
        return self

    def _model(self):
        if self.model is None or not hasattr(self.model, "predict_proba_features"):
            failed = getattr(self, "_load_error", None)
            if failed is not None:
                raise failed
            try:
                self.model = load_claim_model(self.model)
            except Exception as exc:
                self._load_error = exc
                raise
        return self.model

    def judge(self, statements, evidence=None, *, query: str = "", chunks=()) -> list:
        """One :class:`Judgement` per statement (see the :class:`~evqual.verify.Judge` protocol)."""
        statements = list(statements)
        evidence = [list(e) for e in evidence] if evidence is not None else [[] for _ in statements]
        if len(evidence) != len(statements):
            raise ValueError(f"got {len(statements)} statements but {len(evidence)} evidence lists")
        if not statements:
            return []
        model = self._model()
        chunks = [c for c in chunks if isinstance(c, str)]
        examples = [claim_example(query, chunks, s if isinstance(s, str) else "") for s in statements]
        featurizer = model.featurizer_
        exs, analyses = featurizer.analyze(examples)
        p_hall = model.predict_proba_features(featurizer.assemble(exs, analyses))[:, 1]
        out = []
        for stmt, ev, ex, an, ph in zip(statements, evidence, exs, analyses, p_hall):
            if not isinstance(stmt, str):
                out.append(Judgement("NO_EVIDENCE", 0.0, ev, error=f"statement is a {type(stmt).__name__}, "
                                                                   "not a string"))
                continue
            prob = round(float(1.0 - ph), 6)
            negated = _NEGATED_RE.search(stmt) is not None
            findings = [f for sent in an.findings for f in sent if f.check in REFUTING_CHECKS]
            found = [d for c in an.reading.claims for d in c.differences if d.kind in REFUTING_KINDS]
            if negated:  # a negated wrong value is a true statement, not a refuted one
                values = [f for f in findings if f.check in _VALUE_CHECKS]
                if values and _CLAUSE_NEGATION_RE.search(stmt) and not _BOUND_RE.search(stmt) \
                        and not any(self._negated_evidence(ex, f) for f in values):
                    # the evidence affirms another value ("opened in 1937"): the negation holds.  Only when the
                    # evidence's sentence is not negated: "no more than 12" against "not more than 8" is wrong.
                    f = values[0]
                    ev = self._evidence_first(ex, f.chunk, ev)
                    out.append(Judgement("SUPPORTED", prob, ev, answer="YES",
                                         reason=f"negated {f.check}: the evidence has {f.evidence!r}, "
                                                f"not {f.mention!r}"))
                    continue
                findings = [f for f in findings if f.check not in _VALUE_CHECKS]
                found = [d for d in found if d.cls != "value"]
            if findings:
                f = findings[0]
                ev = self._evidence_first(ex, f.chunk, ev)
                out.append(Judgement("REFUTED", prob, ev, reason=f"{f.check}: {f.mention!r} vs {f.evidence!r}"))
            elif found and prob < self.tau:
                d = found[0]
                ev = self._evidence_first(ex, d.evidence[0] if d.evidence is not None else -1, ev)
                out.append(Judgement("REFUTED", prob, ev,
                                     reason=f"{d.cls} {d.kind}: {d.claim_text!r} vs {d.evidence_text!r}"))
            else:
                verdict = "SUPPORTED" if prob >= self.tau else "NO_EVIDENCE"
                out.append(Judgement(verdict, prob, ev, reason=None if verdict == "SUPPORTED" else "low support"))
        return out

    @staticmethod
    def _negated_evidence(example, finding) -> bool:
        """Whether the evidence sentence holding ``finding``'s value has a negation cue (or cannot be read)."""
        if not 0 <= finding.chunk < len(example.chunks):
            return True
        c = example.chunks[finding.chunk]
        text = example.context[c.start:c.end]
        for a, b in split_sentences(text):
            if a <= finding.ev_start < b:
                return _NEGATED_RE.search(text[a:b]) is not None
        return True

    @staticmethod
    def _evidence_first(example, k: int, evidence) -> list:
        """Chunk ``k`` (the disagreeing item's; an index of the judge's ``chunks``) first."""
        if not 0 <= k < len(example.chunks):
            return evidence
        rest = [e for e in evidence if e.chunk != k]
        same = [e for e in evidence if e.chunk == k]
        if same:
            return same + rest
        c = example.chunks[k]
        return [Evidence(k, -1, -1, example.context[c.start:c.end], 0.0)] + rest
