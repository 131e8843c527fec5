"""Deterministic provenance explanations: reason codes and their templates (seed 004).

Every output sentence is checked for the support gaps below; each gap found
becomes a :class:`~evqual.scoring.Reason` with a stable ``code``, a sentence
a person can read (the code's ``template`` filled in) and machine-readable
``details``.  No language model is involved: the same input always gives the
same reasons.  This table is the one place the codes are defined.

==========================  ================================================================
code                        raised when (per sentence)
==========================  ================================================================
``NUMBER_CONFLICT``         a value of a claim where the evidence aligned with it states
                            another of the same kind ("69 million" vs "67 million")
``UNIT_CONFLICT``           the same number with another unit than its evidence ("500 g" vs
                            "500 mg")
``DATE_CONFLICT``           a year, month, weekday or date where the aligned evidence has
                            another
``ENTITY_CONFLICT``         a name where the aligned evidence has another name
``ROLE_SWAP``               the claim orders the evidence's names or values the other way
                            ("A beat B" vs "B beat A")
``QUANTIFIER_SHIFT``        a quantity, modality or frequency word of another sense than the
                            evidence's ("always" vs "usually", "must" vs "may"), or added
``NEGATION_CONFLICT``       a negation on one side only, a negative prefix, or a word taken
                            from a negated evidence sentence
``ANTONYM``                 a word whose opposite stands in the aligned evidence
``LOGIC_CONFLICT``          another logic word (time, order, direction, comparison, condition,
                            cause, role) of a sense the evidence's excludes ("before" vs
                            "after", "in" vs "outside")
``LOGIC_ADDED``             a logic word the aligned evidence does not have ("because",
                            "always", "first")
``LOGIC_DROPPED``           a logic word of the aligned evidence the claim leaves out ("only",
                            "if", "not")
``BORROWED``                a name or value that is in the context, but not in the evidence
                            the claim is aligned with
``UNSUPPORTED_CLAIM``       a claim most of whose content words (five or more, 70%) appear
                            nowhere in the context or the query (an added claim)
``NUMBER_UNSUPPORTED``      a value absent from the context
``ENTITY_UNSUPPORTED``      a name absent from the context
``NOVEL_PHRASE``            a claim holds runs of two or more content words absent from the
                            context and the query (one reason per claim, quoting them)
``NOVEL_WORDS``             a claim holds single content words absent from the context and the
                            query (one reason per claim)
``LOW_SUPPORT``             evidence-chain score below 0.35: few of the sentence's words
                            are in its nearest chunk
``FIELD_CONFLICT``          Data2txt: the sentence states a yes/no field of the record the
                            other way
``FIELD_NULL``              Data2txt: a field whose value is null is stated
``FIELD_ABSENT``            Data2txt: a business attribute the record does not have
``REFUSAL_WITH_CONTEXT``    refusal-like wording although the context covers the query
``NO_EVIDENCE``             the context is empty
``MODEL_RISK``              flagged by the model without any of the gaps above
==========================  ================================================================

The codes up to ``NOVEL_WORDS`` come from the evidence engine
(:mod:`evqual.evidence`): each is one :class:`~evqual.evidence.Difference`
between a claim and the evidence it is aligned with, quoting both sides
(``details``: ``mention``, ``evidence``, ``cls``, ``kind``, ``chunk_id``,
offsets, and the claim's risk ``claim_risk`` when the model has a claim
model).  With a claim model, only the claims at or above the detector's
claim threshold give reasons: those are the claims the model found
unsupported.

Examples
--------
>>> from evqual.explain import REASONS
>>> REASONS["NUMBER_CONFLICT"].template
"'{mention}' where the aligned evidence ({chunk_id}) says '{evidence}'"
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace

from ..features import (
    KNOWN_ATTRIBUTES,
    candidate_fields,
    field_lookup,
    has_negation,
    mentions_field,
    token_set,
)
from ..results import Citation, Reason
from ..text import STOP_WORDS, TOKEN_PATTERN

__all__ = ["REASONS", "ReasonCode", "sentence_reasons", "claim_reasons", "CONTRADICTION_KINDS", "MAX_CLAIM_REASONS",
           "model_risk_reason", "citation_for", "explanation_text",
           "LOW_SUPPORT_ECS"]

LOW_SUPPORT_ECS = 0.35
_TOKEN_RE = re.compile(TOKEN_PATTERN)


@dataclass(frozen=True)
class ReasonCode:
    """A reason code: its stable ``code``, a short ``title`` and the ``template`` of its text."""

    code: str
    title: str
    template: str


REASONS: dict[str, ReasonCode] = {r.code: r for r in (
    ReasonCode("NUMBER_CONFLICT", "conflicting number",
               "'{mention}' where the aligned evidence ({chunk_id}) says '{evidence}'"),
    ReasonCode("UNIT_CONFLICT", "conflicting unit",
               "'{mention}' where the aligned evidence ({chunk_id}) says '{evidence}'"),
    ReasonCode("DATE_CONFLICT", "conflicting date",
               "'{mention}' where the aligned evidence ({chunk_id}) says '{evidence}'"),
    ReasonCode("ENTITY_CONFLICT", "substituted name",
               "'{mention}' where the aligned evidence ({chunk_id}) names '{evidence}'"),
    ReasonCode("ROLE_SWAP", "swapped roles",
               "'{mention}' reverses the roles of the evidence ({chunk_id}): '{evidence}'"),
    ReasonCode("QUANTIFIER_SHIFT", "changed quantifier",
               "'{mention}' where the aligned evidence ({chunk_id}) says '{evidence}'"),
    ReasonCode("NEGATION_CONFLICT", "negation reverses the evidence",
               "'{mention}' is {side} in the claim but not in the aligned evidence ({chunk_id}): '{evidence}'"),
    ReasonCode("ANTONYM", "antonym of the evidence",
               "'{mention}' reverses '{evidence}' in the aligned evidence ({chunk_id})"),
    ReasonCode("LOGIC_CONFLICT", "changed logic word",
               "'{mention}' ({cls}) where the aligned evidence ({chunk_id}) says '{evidence}'"),
    ReasonCode("LOGIC_ADDED", "added logic word",
               "'{mention}' ({cls}) is not in the aligned evidence ({chunk_id}): '{evidence}'"),
    ReasonCode("LOGIC_DROPPED", "dropped logic word",
               "the claim leaves out '{evidence}' ({cls}) of the aligned evidence ({chunk_id})"),
    ReasonCode("BORROWED", "taken from other evidence",
               "'{mention}' is in the context, but not in the evidence this claim is aligned with ({chunk_id}): "
               "'{evidence}'"),
    ReasonCode("UNSUPPORTED_CLAIM", "unsupported claim",
               "the claim '{mention}' has no support: {words} appear nowhere in the context or the query"),
    ReasonCode("NUMBER_UNSUPPORTED", "unsupported number", "'{mention}' does not appear in the context"),
    ReasonCode("ENTITY_UNSUPPORTED", "unsupported entity", "'{mention}' is absent from the context"),
    ReasonCode("NOVEL_PHRASE", "unsupported phrase",
               "the claim's phrases {words} have no support in the context or the query"),
    ReasonCode("NOVEL_WORDS", "unsupported words", "words absent from the context and the query: {words}"),
    ReasonCode("LOW_SUPPORT", "low evidence-chain score",
               "low evidence-chain score ({ecs:.2f}): {recall:.0%} of the sentence's content words are in the "
               "nearest evidence ({chunk_id})"),
    ReasonCode("FIELD_CONFLICT", "contradicts a record field",
               "states '{field}' the other way round: the record says {value}"),
    ReasonCode("FIELD_NULL", "states an unknown field", "states '{field}', which the record leaves null"),
    ReasonCode("FIELD_ABSENT", "attribute not in the record", "mentions '{attribute}', which the record does not list"),
    ReasonCode("REFUSAL_WITH_CONTEXT", "refusal despite relevant context",
               "refusal-like wording although the context covers {query_coverage:.0%} of the query's content words"),
    ReasonCode("NO_EVIDENCE", "no evidence", "the context is empty: nothing can support this sentence"),
    ReasonCode("MODEL_RISK", "model risk",
               "the model rates the sentence risky ({risk:.2f}) without one clear support gap"),
)}


def _reason(code: str, **details) -> Reason:
    return Reason(code, REASONS[code].template.format(**details), details)


def model_risk_reason(risk: float) -> Reason:
    """``MODEL_RISK``: the sentence is flagged by the model without a specific support gap."""
    return _reason("MODEL_RISK", risk=float(risk))


def citation_for(example, analysis, i: int) -> Citation | None:
    """The nearest evidence chunk of sentence ``i`` as a :class:`~evqual.scoring.Citation`."""
    k = int(analysis.match.nearest[i]) if len(analysis.match.nearest) > i else -1
    if k < 0 or k >= len(example.chunks):
        return None
    c = example.chunks[k]
    # the context index holds every chunk's text once: sentences citing one chunk share that string
    index = getattr(analysis, "index", None)
    texts = getattr(index, "chunk_texts", None)
    text = texts[k] if texts is not None and k < len(texts) else example.context[c.start:c.end]
    return Citation(c.id, k, c.start, c.end, text, float(analysis.match.recall[i]))


_UNSET = object()


def sentence_reasons(example, analysis, i: int, *, risk: float | None = None, citation=_UNSET,
                     claim_risks=None, claim_threshold: float | None = None) -> list[Reason]:
    """Every support gap of output sentence ``i``: the differences of its claims, then the sentence's own gaps.

    ``risk`` (the model's sentence risk) only fills ``MODEL_RISK``'s text,
    which is added when no other gap is found; pass ``None`` to leave it out.
    ``citation`` is the sentence's :func:`citation_for`, when the caller has it.
    ``claim_risks`` (the risk of each claim of ``analysis.reading``, from a
    detector's claim model) and ``claim_threshold``: only claims at or above
    the threshold give difference reasons; without them every claim does.
    """
    output = example.output
    sent = analysis.sentence
    index = analysis.index
    if citation is _UNSET:
        citation = citation_for(example, analysis, i)
    chunk_id = citation.chunk_id if citation else "none"
    out: list[Reason] = []
    if index.n_chunks == 0:
        out.append(_reason("NO_EVIDENCE"))
    found = _finding_reasons(example, analysis, i)
    out.extend(found)
    # the engine's differences, except where a check already names the gap
    taken = _overlap_test([(r.details["start"], r.details["end"]) for r in found])
    named = {(r.code, r.details["start"]) for r in found}
    out.extend(r for r in claim_reasons(example, analysis, i, claim_risks=claim_risks,
                                         claim_threshold=claim_threshold)
               if not taken(r.details["start"], r.details["end"])
               and not any(code == r.code and r.details["claim_start"] <= at < r.details["claim_end"]
                           for code, at in named))
    s, e = analysis.offsets[i]
    ecs = float(sent["sent.chain.ecs.v2"][i])
    if index.n_chunks and ecs < LOW_SUPPORT_ECS and analysis.match.n_content[i] > 0:
        out.append(_reason("LOW_SUPPORT", ecs=ecs, recall=float(analysis.match.recall[i]), chunk_id=chunk_id))
    if (sent["sent.structure.conflict.v1"][i] or sent["sent.structure.null.v1"][i]
            or sent["sent.structure.absent.v1"][i]):
        reading = getattr(analysis, "reading", None)
        claims = ([(reading.claims[c].start, reading.claims[c].end) for c in reading.claims_in(s, e)]
                  if reading is not None else [])
        out.extend(r for r in _field_reasons(output, s, e, index, claims)
                   if not (r.code == "FIELD_CONFLICT" and any(f.code == "FIELD_CONFLICT" for f in found)))
    if sent["sent.refusal.v1"][i] and index.n_chunks:
        # the share of the query's content words in the context: the coverage feature, computed once
        cov = analysis.response.get("coverage.query_context.v1")
        if cov is None:
            q = analysis.query_vocab
            cov = (sum(1 for t in q if t in index.vocab) / len(q)) if q else 0.0
        if cov >= 0.5:
            out.append(_reason("REFUSAL_WITH_CONTEXT", query_coverage=cov))
    if not out and risk is not None:
        out.append(model_risk_reason(risk))
    return out


def _finding_reasons(example, analysis, i: int) -> list[Reason]:
    """The reasons of the claim-aligned checks (``check`` family) that fired in sentence ``i``."""
    out = []
    for f in (analysis.findings[i] if hasattr(analysis, "findings") else []):
        if f.check == "unsupported":
            continue  # the engine names unsupported claims (UNSUPPORTED_CLAIM) with their words
        chunk = example.chunks[f.chunk] if 0 <= f.chunk < len(example.chunks) else None
        cid = chunk.id if chunk is not None else "none"
        # where the evidence item stands in the context as evqual joined it (ScoreResult.context)
        at = dict(context_start=chunk.start + f.ev_start, context_end=chunk.start + f.ev_end) if chunk else {}
        common = dict(mention=f.mention, evidence=f.evidence, chunk_id=cid, chunk_index=f.chunk,
                      evidence_start=f.ev_start, evidence_end=f.ev_end, start=f.start, end=f.end, check=f.check,
                      kind="conflict", **at)
        if f.check == "negation":
            out.append(_reason("NEGATION_CONFLICT", side="negated" if _negated_before(example.output, f.start)
                               else "affirmed", **common))
        elif f.check == "field":
            label, _, value = f.evidence.rpartition(": ")
            out.append(_reason("FIELD_CONFLICT", field=label or f.evidence, value=value.strip().lower(), **common))
        else:
            out.append(_reason(_CHECK_CODES[f.check], **common))
    return out


_CHECK_CODES = {"number": "NUMBER_CONFLICT", "unit": "UNIT_CONFLICT", "date": "DATE_CONFLICT",
                "entity": "ENTITY_CONFLICT", "role": "ROLE_SWAP", "quantifier": "QUANTIFIER_SHIFT",
                "displaced": "ENTITY_CONFLICT", "antonym": "ANTONYM"}
_NEG_BEFORE = re.compile(r"\b(?:no|not|never|without|cannot|unable|failed|refused|denied)\W+(?:\w+\W+){0,2}$|"
                         r"n['\u2019]t\W+(?:\w+\W+){0,2}$", re.IGNORECASE)


def _negated_before(output: str, pos: int) -> bool:
    """Whether a negation cue stands within three words before ``pos``."""
    return _NEG_BEFORE.search(output[max(0, pos - 40):pos]) is not None


_LOGIC_CODES = {"polarity": "NEGATION_CONFLICT", "quantity": "QUANTIFIER_SHIFT", "modality": "QUANTIFIER_SHIFT",
                "frequency": "QUANTIFIER_SHIFT"}
_OPPOSITES = ("direction", "comparison")
"""Logic classes whose exclusive senses are opposites ("increased" / "decreased"): a conflict is an ``ANTONYM``."""
"""Logic classes (``evidence/logic.tsv``) with a reason code of their own; the others are ``LOGIC_*``."""
CONTRADICTION_KINDS = ("conflict", "swap", "reversed", "prefix", "borrowed_negated")
"""Kinds of difference that contradict the evidence (the others add to it or leave it out)."""
_DATE_KINDS = ("year", "month", "day", "date", "weekday")
MAX_CLAIM_REASONS = 4
"""Difference reasons given per claim (contradictions first); novel words make one more."""


def _diff_code(d, value_kinds=None) -> str | None:
    """The reason code of an engine :class:`~evqual.evidence.Difference` (``None``: not a reason)."""
    if d.cls == "value":
        if d.kind == "conflict":
            (kind_c, raw_c, key_c), (kind_e, raw_e, key_e) = value_kinds or (("", None, ""), ("", None, ""))
            if kind_c in _DATE_KINDS or kind_e in _DATE_KINDS:
                return "DATE_CONFLICT"
            if raw_c is not None and raw_c == raw_e and key_c != key_e:
                return "UNIT_CONFLICT"  # the same number, another unit
            return "NUMBER_CONFLICT"
        return {"novel": "NUMBER_UNSUPPORTED", "borrowed": "BORROWED"}.get(d.kind)
    if d.cls == "name":
        return {"swap": "ENTITY_CONFLICT", "novel": "ENTITY_UNSUPPORTED", "borrowed": "BORROWED"}.get(d.kind)
    if d.cls == "order":
        return "ROLE_SWAP"
    if d.cls == "opposite":
        return "ANTONYM"
    if d.cls == "polarity" or d.kind == "borrowed_negated":
        return "NEGATION_CONFLICT"
    if d.cls == "word":
        return None  # novel words: one reason per claim (below); borrowed words: too common to name
    if d.cls in _OPPOSITES and d.kind == "conflict":
        return "ANTONYM"
    if d.cls in _LOGIC_CODES and d.kind != "drops":
        return _LOGIC_CODES[d.cls]
    return {"conflict": "LOGIC_CONFLICT", "adds": "LOGIC_ADDED", "drops": "LOGIC_DROPPED"}.get(d.kind)


def _value_kinds(d) -> tuple:
    from ..evidence import read_values

    def kind(text):
        vals = read_values(text) if text else []
        return (vals[0].kind, vals[0].raw, vals[0].key) if vals else ("", None, "")

    return kind(d.claim_text), kind(d.evidence_text)


def claim_reasons(example, analysis, i: int, *, claim_risks=None, claim_threshold: float | None = None
                  ) -> list[Reason]:
    """The reasons of the claims of output sentence ``i``: one per difference the evidence engine read
    between a claim and its aligned evidence (at most :data:`MAX_CLAIM_REASONS` per claim, contradictions
    first), plus one for the claim's novel words.  See :func:`sentence_reasons` for ``claim_risks`` and
    ``claim_threshold``."""
    reading = getattr(analysis, "reading", None)
    if reading is None or not reading.claims:
        return []
    s, e = analysis.offsets[i]
    out: list[Reason] = []
    for c_i in reading.claims_in(s, e):
        claim = reading.claims[c_i]
        c_risk = float(claim_risks[c_i]) if claim_risks is not None and c_i < len(claim_risks) else None
        if c_risk is not None and claim_threshold is not None and c_risk < claim_threshold:
            continue
        out.extend(_one_claim(example, claim, c_risk))
    return out


def _joined(differences, text: str) -> list:
    """Differences with adjacent novel or borrowed words of one class joined into one ("Joseph" and
    "Strauss" are one name): consecutive in the claim, only white space between them, no evidence side."""
    out = []
    for d in differences:
        prev = out[-1] if out else None
        if (prev is not None and d.kind in ("novel", "borrowed") and d.evidence is None and prev.evidence is None
                and (prev.cls, prev.kind) == (d.cls, d.kind) and prev.claim is not None and d.claim is not None
                and prev.claim[1] <= d.claim[0] and not text[prev.claim[1]:d.claim[0]].strip()):
            out[-1] = replace(prev, claim=(prev.claim[0], d.claim[1]),
                              claim_text=text[prev.claim[0]:d.claim[1]])
        else:
            out.append(d)
    return out


def _one_claim(example, claim, c_risk) -> list[Reason]:
    found, novel = [], []
    for d in _joined(claim.differences, example.output):
        if d.cls == "word" and d.kind == "novel" and d.claim is not None:
            novel.append(d)
            continue
        code = _diff_code(d, _value_kinds(d) if d.cls == "value" and d.kind == "conflict" else None)
        if code is not None:
            found.append((d.kind not in CONTRADICTION_KINDS, code, d))
    found.sort(key=lambda t: t[0])  # contradictions first, then in the order read
    out = [_diff_reason(example, claim, code, d, c_risk) for _, code, d in found[:MAX_CLAIM_REASONS]]
    named = _overlap_test([(r.details["start"], r.details["end"]) for r in out])
    novel = [d for d in novel if not named(*d.claim)]  # a word already quoted as a difference is not repeated
    if novel:
        words = list(dict.fromkeys(d.claim_text for d in novel))
        quoted = ", ".join(f"'{w}'" for w in words[:6]) + (f" and {len(words) - 6} more" if len(words) > 6 else "")
        n_words = sum(len(w.split()) for w in words)
        share = float(claim.features[_UNSUPPORTED_SHARE]) if _UNSUPPORTED_SHARE is not None else 0.0
        start, end = novel[0].claim[0], novel[-1].claim[1]
        common = dict(words=quoted, word_list=words, start=start, end=end, claim_start=claim.start,
                      claim_end=claim.end, cls="word", kind="novel")
        if c_risk is not None:
            common["claim_risk"] = c_risk
        if n_words >= 5 and share >= 0.7:
            out.append(_reason("UNSUPPORTED_CLAIM", mention=claim.text, **common))
        elif any(len(w.split()) >= 2 for w in words):
            out.append(_reason("NOVEL_PHRASE", **common))
        else:
            out.append(_reason("NOVEL_WORDS", **common))
    return out


def _column(name):
    from ..evidence import CLAIM_FEATURES

    return CLAIM_FEATURES.index(name) if name in CLAIM_FEATURES else None


_UNSUPPORTED_SHARE = _column("word.unsupported_share.v1")


def _diff_reason(example, claim, code, d, c_risk) -> Reason:
    chunk = k = None
    ev_start = ev_end = None
    where = d.evidence if d.evidence is not None else claim.unit
    evidence = d.evidence_text
    if where is not None:
        k, ev_start, ev_end = where
        chunk = example.chunks[k] if 0 <= k < len(example.chunks) else None
        if not evidence:
            evidence = example.chunk_text(k)[ev_start:ev_end] if chunk is not None else example.context[ev_start:ev_end]
    start, end = d.claim if d.claim is not None else (claim.start, claim.end)
    mention = d.claim_text or claim.text
    details = dict(mention=mention, evidence=evidence or "", cls=d.cls, kind=d.kind, sense=d.sense,
                   chunk_id=chunk.id if chunk is not None else "none", chunk_index=k if k is not None else -1,
                   start=start, end=end, claim_start=claim.start, claim_end=claim.end)
    if ev_start is not None:
        details.update(evidence_start=ev_start, evidence_end=ev_end)
        base = chunk.start if chunk is not None else 0
        details.update(context_start=base + ev_start, context_end=base + ev_end)
    if c_risk is not None:
        details["claim_risk"] = c_risk
    if code == "NEGATION_CONFLICT":
        details["side"] = "affirmed" if d.kind == "drops" else "negated"
    return _reason(code, **details)


def _overlap_test(intervals):
    """A function telling whether ``[a, b)`` overlaps any of ``intervals`` (``(start, end)`` pairs).

    Intervals sorted by start with the running maximum of their ends answer
    each test with one binary search: some interval overlaps ``[a, b)`` when
    one of those starting before ``b`` ends after ``a``.

    >>> f = _overlap_test([(10, 12), (2, 4)])
    >>> f(0, 2), f(3, 5), f(4, 10), f(11, 20)
    (False, True, False, True)
    """
    if not intervals:
        return lambda a, b: False
    ordered = sorted(intervals)
    starts = [cs for cs, _ in ordered]
    reach, top = [], None
    for _, ce in ordered:
        top = ce if top is None or ce > top else top
        reach.append(top)

    def overlaps(a, b) -> bool:
        k = bisect.bisect_left(starts, b)
        return k > 0 and reach[k - 1] > a

    return overlaps


def _field_reasons(output, s, e, index, claims=()) -> list[Reason]:
    """Record-field reasons of the sentence ``output[s:e]``: null and absent fields, and a yes/no field a
    claim (``(start, end)`` spans; the sentence when none) states the other way."""
    fields, keys = index.fields
    out = []
    lookup = index.field_lookup if hasattr(index, "field_lookup") else field_lookup(fields)
    conflicts = set()
    for a, b in (claims or [(s, e)]):
        ctoks = [t.lower() for t in _TOKEN_RE.findall(output[a:b])]
        cset = token_set([t for t in ctoks if t not in STOP_WORDS]) | set(ctoks)
        negated = has_negation(output, a, b)
        for j in candidate_fields(lookup, cset):
            label, kind, phrase, joined = fields[j]
            if kind in ("true", "false") and mentions_field(phrase, joined, cset) and (kind == "false") != negated:
                conflicts.add((label, kind))
    for label, kind in sorted(conflicts):
        out.append(_reason("FIELD_CONFLICT", field=label, value="no" if kind == "false" else "yes"))
    toks = [t.lower() for t in _TOKEN_RE.findall(output[s:e])]
    tset = token_set([t for t in toks if t not in STOP_WORDS]) | set(toks)
    for j in candidate_fields(lookup, tset):
        label, kind, phrase, joined = fields[j]
        if kind == "null" and mentions_field(phrase, joined, tset):
            out.append(_reason("FIELD_NULL", field=label))
    for key, words in KNOWN_ATTRIBUTES.items():
        if key.lower() not in keys and all(w in tset for w in words):
            out.append(_reason("FIELD_ABSENT", attribute=key))
    return out


PARAGRAPH_REASONS = 3
"""Reasons quoted in the paragraph of :func:`explanation_text` (the rest are counted; all are listed)."""


def explanation_text(flagged: bool, risk: float, threshold: float, reasons, citation, *, why: str = "risk") -> str:
    """One readable paragraph for a sentence: verdict, reasons and the cited evidence.

    ``why`` says what flagged the sentence: ``"risk"`` (its risk reached the
    sentence threshold), ``"span"`` (it holds a predicted span), ``"finding"``
    (it holds a claim-aligned contradiction finding of a flagged answer) or ``"top"``
    (the riskiest sentence of a flagged answer); for a sentence that is not
    flagged, ``"note"`` says it would have been on its own signals but the
    answer is shown.
    """
    if not flagged and why == "note":
        verdict = (f"Note, not flagged (the answer is shown): sentence risk {risk:.2f}"
                   + (f" >= {threshold:.2f}" if risk >= threshold else ""))
    elif not flagged:
        verdict = f"Not flagged (risk {risk:.2f} < {threshold:.2f})"
    elif why == "span":
        verdict = f"Flagged (holds a predicted hallucinated span; sentence risk {risk:.2f})"
    elif why == "finding":
        verdict = f"Flagged (contradicts the evidence in a flagged answer; sentence risk {risk:.2f})"
    elif why == "top":
        verdict = f"Flagged (the riskiest sentence of a flagged answer; sentence risk {risk:.2f})"
    else:
        verdict = f"Flagged (risk {risk:.2f} >= {threshold:.2f})"
    parts = [r.text for r in reasons[:PARAGRAPH_REASONS]]
    if len(reasons) > PARAGRAPH_REASONS:
        parts.append(f"{len(reasons) - PARAGRAPH_REASONS} more listed")
    text = verdict + (" because " + "; ".join(parts) if flagged and parts else "")
    if not flagged and why == "note" and parts:
        text += "; noted: " + "; ".join(parts)
    elif not flagged and parts:
        text += "; gaps noted: " + "; ".join(parts)
    if citation is not None:
        text += f". Nearest evidence: {citation.chunk_id}."
    else:
        text += ". No evidence chunk."
    return text
