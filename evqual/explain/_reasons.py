"""Deterministic provenance explanations: reason codes and their templates (seed 004).

Every output sentence is checked for the support gaps below; each gap found
becomes a :class:`~evqual.scoring.Reason` with a stable ``code``, a sentence
a person can read (the code's ``template`` filled in) and machine-readable
``details``.  No language model is involved: the same input always gives the
same reasons.  This table is the one place the codes are defined.

==========================  ================================================================
code                        raised when (per sentence)
==========================  ================================================================
``NUMBER_CONFLICT``         a number of a claim where the evidence aligned with the claim
                            states another ("69 million" vs "67 million"), or a number
                            absent from the context while the nearest chunk states another
``UNIT_CONFLICT``           the same number with another unit than its evidence ("500 g" vs
                            "500 mg")
``DATE_CONFLICT``           a year, month or weekday where the aligned evidence has another
``ENTITY_CONFLICT``         a name where the aligned evidence has another name in the same slot
``ROLE_SWAP``               two names in the reverse roles of the evidence ("A beat B" vs
                            "B beat A")
``QUANTIFIER_SHIFT``        a quantifier or modal of another scope than the evidence's
                            ("always" vs "usually", "must" vs "may")
``NEGATION_CONFLICT``       a word negated on one side only (the claim against its evidence)
``UNSUPPORTED_CLAIM``       a claim unit most of whose content words (five or more, 70%)
                            appear nowhere in the context or the query (an added claim)
``NUMBER_UNSUPPORTED``      a number absent from the context (no competing number nearby)
``ENTITY_UNSUPPORTED``      a named entity with a word absent from the context
``NOVEL_PHRASE``            two or more consecutive content words absent from the context
                            and the query
``NOVEL_WORDS``             single content words absent from the context and the query
``LOW_SUPPORT``             evidence-chain score below 0.35: few of the sentence's words
                            are in its nearest chunk
``NEGATION_MISMATCH``       the sentence and its nearest chunk disagree on a negation
                            while sharing most of their words
``ANTONYM``                 a word whose opposite is in the nearest chunk and it is not
``FIELD_CONFLICT``          Data2txt: the claim that mentions a yes/no field of the record
                            states it the other way (the ``field`` check; the evidence is
                            that record line)
``FIELD_NULL``              Data2txt: a field whose value is null is stated
``FIELD_ABSENT``            Data2txt: a business attribute the record does not have
``REFUSAL_WITH_CONTEXT``    refusal-like wording although the context covers the query
``NO_EVIDENCE``             the context is empty
``MODEL_RISK``              flagged by the model without any of the gaps above
==========================  ================================================================

Examples
--------
>>> from evqual.explain import REASONS
>>> REASONS["NUMBER_CONFLICT"].template
"unsupported number '{mention}' where the nearest evidence ({chunk_id}) says '{evidence}'"
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..features import (
    ANTONYMS,
    KNOWN_ATTRIBUTES,
    candidate_fields,
    field_lookup,
    is_novel,
    mentions_field,
    query_stems,
    token_set,
)
from ..results import Citation, Reason
from ..text import STOP_WORDS, TOKEN_PATTERN, extract_numbers

__all__ = ["REASONS", "ReasonCode", "sentence_reasons", "model_risk_reason", "citation_for", "explanation_text",
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
               "unsupported number '{mention}' where the nearest evidence ({chunk_id}) says '{evidence}'"),
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
    ReasonCode("UNSUPPORTED_CLAIM", "unsupported claim",
               "the claim '{mention}' has no support: '{evidence}' appear nowhere in the context or the query"),
    ReasonCode("NUMBER_UNSUPPORTED", "unsupported number", "number '{mention}' does not appear in the context"),
    ReasonCode("ENTITY_UNSUPPORTED", "unsupported entity", "entity '{mention}' is absent from the context"),
    ReasonCode("NOVEL_PHRASE", "unsupported phrase",
               "the phrase '{phrase}' has no support in the context or the query"),
    ReasonCode("NOVEL_WORDS", "unsupported words", "words absent from the context and the query: {words}"),
    ReasonCode("LOW_SUPPORT", "low evidence-chain score",
               "low evidence-chain score ({ecs:.2f}): {recall:.0%} of the sentence's content words are in the "
               "nearest evidence ({chunk_id})"),
    ReasonCode("NEGATION_MISMATCH", "negation reverses the evidence",
               "the sentence {sentence_side} a negation that the nearest evidence ({chunk_id}) {evidence_side}"),
    ReasonCode("ANTONYM", "antonym of the evidence",
               "'{word}' reverses '{opposite}' in the nearest evidence ({chunk_id})"),
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


def _closest_number(mention, chunk, sentence_values: set):
    """The number of the chunk most like ``mention`` (same unit first, then nearest value).

    ``chunk`` is the chunk's text or its number mentions (already extracted).
    """
    mentions = extract_numbers(chunk) if isinstance(chunk, str) else chunk
    cands = [m for m in mentions if m.value not in sentence_values]
    if not cands:
        return None

    def key(m):
        try:
            gap = abs(float(m.value) - float(mention.value))
        except ValueError:
            gap = float("inf")
        return (m.unit != mention.unit, gap)

    return min(cands, key=key)


def _novel_runs(output: str, s: int, e: int, vocab, query_vocab, stems=frozenset(), q_stems=frozenset()):
    """Runs of consecutive novel content words (stop words inside a run are kept) as (start, end, words)."""
    runs, cur = [], None
    for m in _TOKEN_RE.finditer(output, s, e):
        t = m.group().lower()
        if t in STOP_WORDS:
            continue
        if is_novel(t, vocab, query_vocab, stems, q_stems):
            if cur is None:
                cur = [m.start(), m.end(), [m.group()]]
            else:
                cur[1] = m.end()
                cur[2].append(m.group())
        elif cur is not None:
            runs.append(cur)
            cur = None
    if cur is not None:
        runs.append(cur)
    return runs


_UNSET = object()


def sentence_reasons(example, analysis, i: int, *, risk: float | None = None, citation=_UNSET) -> list[Reason]:
    """Every support gap of output sentence ``i``, in the order of :data:`REASONS`.

    ``risk`` (the model's sentence risk) only fills ``MODEL_RISK``'s text,
    which is added when no other gap is found; pass ``None`` to leave it out.
    ``citation`` is the sentence's :func:`citation_for`, when the caller has it.
    """
    output = example.output
    s, e = analysis.offsets[i]
    sent = analysis.sentence
    index = analysis.index
    if citation is _UNSET:
        citation = citation_for(example, analysis, i)
    chunk_id = citation.chunk_id if citation else "none"
    k = citation.chunk_index if citation else -1
    out: list[Reason] = []
    if index.n_chunks == 0:
        out.append(_reason("NO_EVIDENCE"))
    findings = analysis.findings[i] if hasattr(analysis, "findings") else []
    checked = set()
    for f in findings:
        checked.add(f.check)
        chunk = example.chunks[f.chunk] if 0 <= f.chunk < len(example.chunks) else None
        cid = chunk.id if chunk is not None else "none"
        # where the evidence item stands in the context as evqual joined it (ScoreResult.context)
        at = dict(context_start=chunk.start + f.ev_start, context_end=chunk.start + f.ev_end) if chunk else {}
        common = dict(mention=f.mention, evidence=f.evidence, chunk_id=cid, chunk_index=f.chunk,
                      evidence_start=f.ev_start, evidence_end=f.ev_end, start=f.start, end=f.end, check=f.check,
                      **at)
        if f.check == "negation":
            negated = _negated_before(output, f.start)
            out.append(_reason("NEGATION_CONFLICT", side="negated" if negated else "affirmed", **common))
        elif f.check == "field":
            label, _, value = f.evidence.rpartition(": ")
            out.append(_reason("FIELD_CONFLICT", field=label or f.evidence, value=value.strip().lower(), **common))
        elif f.check == "antonym":
            out.append(_reason("ANTONYM", word=f.mention, opposite=f.evidence, chunk_id=cid, chunk_index=f.chunk,
                               start=f.start, end=f.end, evidence_start=f.ev_start, evidence_end=f.ev_end,
                               check=f.check, **at))
        else:
            out.append(_reason(_CHECK_CODES[f.check], **common))
    # a contradiction finding stands for the gaps it covers; an unsupported claim unit leaves the specific
    # gaps inside it (a number, a name) to be named too
    taken = _overlap_test([(f.start, f.end) for f in findings if f.check != "unsupported"])
    numbers, unsup_numbers = analysis.numbers
    sentence_values = {m.value for m in numbers[i]} | {m.raw_value for m in numbers[i]}
    for m in unsup_numbers[i]:
        if taken(m.start, m.end):
            continue
        ev = _closest_number(m, _chunk_mentions(example, index, k), sentence_values) if k >= 0 else None
        if ev is not None:
            out.append(_reason("NUMBER_CONFLICT", mention=m.text, evidence=ev.text, chunk_id=chunk_id,
                               start=m.start, end=m.end))
        else:
            out.append(_reason("NUMBER_UNSUPPORTED", mention=m.text, start=m.start, end=m.end))
    for ent in analysis.unsupported_entities[i]:
        if taken(ent.start, ent.end):
            continue  # already explained by an aligned check (ENTITY_CONFLICT)
        out.append(_reason("ENTITY_UNSUPPORTED", mention=ent.text, label=ent.label, start=ent.start, end=ent.end))
    overlaps = _overlap_test([(r.details["start"], r.details["end"]) for r in out if "start" in r.details])
    singles = []
    for a, b, words in _novel_runs(output, s, e, index.vocab, analysis.query_vocab, index.stem_vocab,
                                   query_stems(analysis.query_vocab)):
        if overlaps(a, b):
            continue  # already explained as a number or an entity
        if len(words) >= 2:
            out.append(_reason("NOVEL_PHRASE", phrase=output[a:b], start=a, end=b))
        elif not words[0].isdigit():
            singles.append(words[0])
    if singles:
        out.append(_reason("NOVEL_WORDS", words=", ".join(f"'{w}'" for w in dict.fromkeys(singles)),
                           word_list=list(dict.fromkeys(singles))))
    ecs = float(sent["sent.chain.ecs.v2"][i])
    if index.n_chunks and ecs < LOW_SUPPORT_ECS and analysis.match.n_content[i] > 0:
        out.append(_reason("LOW_SUPPORT", ecs=ecs, recall=float(analysis.match.recall[i]), chunk_id=chunk_id))
    if sent["sent.negation.mismatch.v1"][i] and k >= 0 and "negation" not in checked:
        chunk_neg = index.chunk_negation(k)[0]
        out.append(_reason("NEGATION_MISMATCH", chunk_id=chunk_id,
                           sentence_side="has" if not chunk_neg else "lacks",
                           evidence_side="does not have" if not chunk_neg else "has"))
    if sent["sent.negation.antonym.v1"][i] and k >= 0 and "antonym" not in checked:
        near = index.chunk_negation(k)[1]
        for m in _TOKEN_RE.finditer(output, s, e):
            t = m.group().lower()
            opp = [o for o in sorted(ANTONYMS.get(t, ())) if o in near]
            if opp and t not in near:
                out.append(_reason("ANTONYM", word=m.group(), opposite=opp[0], chunk_id=chunk_id,
                                   start=m.start(), end=m.end()))
                break
    if (sent["sent.structure.conflict.v1"][i] or sent["sent.structure.null.v1"][i]
            or sent["sent.structure.absent.v1"][i]):
        out.extend(_field_reasons(output, s, e, index))
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


_CHECK_CODES = {"number": "NUMBER_CONFLICT", "unit": "UNIT_CONFLICT", "date": "DATE_CONFLICT",
                "entity": "ENTITY_CONFLICT", "role": "ROLE_SWAP", "quantifier": "QUANTIFIER_SHIFT",
                "displaced": "ENTITY_CONFLICT", "unsupported": "UNSUPPORTED_CLAIM"}
_NEG_BEFORE = re.compile(r"\b(?:no|not|never|without|cannot|unable|failed|refused|denied)\W+(?:\w+\W+){0,2}$|"
                         r"n['\u2019]t\W+(?:\w+\W+){0,2}$", re.IGNORECASE)


def _negated_before(output: str, pos: int) -> bool:
    """Whether a negation cue stands within three words before ``pos``."""
    return _NEG_BEFORE.search(output[max(0, pos - 40):pos]) is not None


def _chunk_mentions(example, index, k: int):
    """Number mentions of chunk ``k``, extracted once per context (cached on its index)."""
    if index is not None and hasattr(index, "chunk_mentions"):
        return index.chunk_mentions(k)
    return extract_numbers(example.chunk_text(k))


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


def _field_reasons(output, s, e, index) -> list[Reason]:
    fields, keys = index.fields
    toks = [t.lower() for t in _TOKEN_RE.findall(output[s:e])]
    tset = token_set([t for t in toks if t not in STOP_WORDS]) | set(toks)
    out = []
    lookup = index.field_lookup if hasattr(index, "field_lookup") else field_lookup(fields)
    for j in candidate_fields(lookup, tset):
        label, kind, phrase, joined = fields[j]
        if not mentions_field(phrase, joined, tset):
            continue
        if kind == "null":
            out.append(_reason("FIELD_NULL", field=label))
        # FIELD_CONFLICT comes from the claim-aligned ``field`` check (the claim that mentions the field),
        # not from a negation anywhere in the sentence
    for key, words in KNOWN_ATTRIBUTES.items():
        if key.lower() not in keys and all(w in tset for w in words):
            out.append(_reason("FIELD_ABSENT", attribute=key))
    return out


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
    parts = [r.text for r in reasons]
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
