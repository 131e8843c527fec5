"""Scoring answers with a fitted :class:`~evqual.models.Detector`: risk, decision, sentences, spans, reasons.

This is the production path behind :meth:`Detector.score` and
:meth:`Detector.score_batch` and the ``evqual score`` command.

Which sentences are *flagged*: every sentence whose sentence risk reaches
the detector's validation-tuned sentence threshold, and every sentence holding
a predicted span; when the answer itself is flagged, every sentence holding a
claim-aligned contradiction finding is too; when the answer is flagged but no
sentence is, its riskiest sentence is (so a flagged answer always points at a sentence and
cites its evidence: forced citation).  For methods that score whole responses
only, sentence risks are 0 and that sentence is the one with the most support
gaps.
"""

from __future__ import annotations

import bisect

import numpy as np

from ..features._token_features import token_block
from ..models._frame import TOK
from ..explain._reasons import citation_for, explanation_text, model_risk_reason, sentence_reasons
from ._policy import Policy
from ._result import ModelInfo, ScoreResult, SentenceResult, SpanResult

__all__ = ["score_examples", "as_scoring_example", "model_info"]

_METADATA_KEYS = ("model", "temperature", "quality", "source_id", "split")


def as_scoring_example(item, *, default_id: str = "0", limits=None):
    """An :class:`~evqual.data.Example` from an Example or a mapping of score() arguments.

    The mapping holds ``output`` and ``context`` (required), ``query``,
    ``task_type``, ``id`` and ``metadata`` (``model``, ``temperature``,
    ``quality``, ``source_id``, ``split``).  Its texts must fit ``limits``
    (default :data:`evqual.data.DEFAULT_LIMITS`; a :class:`ValueError` names
    the field); an Example is taken as it is.
    """
    from ..data import DEFAULT_LIMITS, Example, make_example

    if isinstance(item, Example):
        return item
    if not isinstance(item, dict):
        raise TypeError(f"expected an Example or a dict of score() arguments; got {type(item).__name__}")
    unknown = set(item) - {"query", "context", "output", "task_type", "metadata", "id"}
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}; expected query, context, output, task_type, "
                         "metadata, id")
    for key in ("output", "context"):
        if key not in item:
            raise ValueError(f"missing required field {key!r}")
    output, context, query = item["output"], item["context"], item.get("query")
    if not isinstance(output, str):
        raise TypeError(f"output must be a string; got {type(output).__name__}")
    if not isinstance(context, (str, list, tuple, dict)):
        raise TypeError(f"context must be a string, a list of strings or a record; got {type(context).__name__}")
    if isinstance(context, (list, tuple)):
        bad = [i for i, c in enumerate(context) if not isinstance(c, str)]
        if bad:
            raise TypeError(f"context[{bad[0]}] must be a string; got {type(context[bad[0]]).__name__}")
        context = list(context)
    if query is not None and not isinstance(query, str):
        raise TypeError(f"query must be a string or None; got {type(query).__name__}")
    meta = item.get("metadata") or {}
    if not isinstance(meta, dict):
        raise TypeError(f"metadata must be a dict; got {type(meta).__name__}")
    bad_meta = set(meta) - set(_METADATA_KEYS)
    if bad_meta:
        raise ValueError(f"unknown metadata keys {sorted(bad_meta)}; expected some of {list(_METADATA_KEYS)}")
    rid = item.get("id")
    limits = DEFAULT_LIMITS if limits is None else limits
    over = limits.check_sizes(output=output, context="", query=query)
    if over is not None:
        raise ValueError(f"{over[0]} {over[1]}")
    ex = make_example(query=query, context=context, output=output, task_type=item.get("task_type"),
                      id=str(rid) if rid is not None else default_id, **meta)
    over = limits.check_sizes(output="", context=ex.context, query=None)
    if over is not None:
        raise ValueError(f"{over[0]} {over[1]}")
    return ex


def model_info(detector) -> ModelInfo:
    """The :class:`ModelInfo` of a detector (from its ``meta.json`` when it was loaded from disk)."""
    meta = getattr(detector, "meta_", None) or {}
    from .._version import __version__

    return ModelInfo(name=meta.get("name", ""), method=str(detector.spec.name),
                     version=meta.get("evqual_version", __version__), sha256=meta.get("model_sha256", ""),
                     entity_backend=detector.entity_backend)


def score_examples(detector, examples, *, policy: Policy | None = None) -> list[ScoreResult]:
    """Score examples with ``detector`` under ``policy`` (default :class:`Policy`); results in input order."""
    policy = policy if policy is not None else _default_policy()
    examples = list(examples)
    if not examples:
        return []
    builder = detector.builder_
    tagger = getattr(detector, "span_tagger_", None)
    frame, exs, analyses = builder.transform_with_analyses(examples, with_targets=False, with_tokens=False,
                                                           lite=True)
    risks, sent_risks = detector.predict_proba_and_sentences_frame(frame)
    spans = None
    if tagger is not None:
        # token features only for the sentences the tagger's gate lets through (the others get no span)
        gate = getattr(detector, "span_gate_", 0.0)
        frame.set_column(TOK, [token_block(ex.output, an,
                                           only_sentences=np.asarray(sr) >= gate if gate > 0 else None)
                               for ex, an, sr in zip(exs, analyses, sent_risks)])
        spans = detector.predict_spans_frame(frame, sent_risks)
    sthr = detector.sentence_threshold_ if detector.sentence_threshold_ is not None else detector.threshold_
    info = model_info(detector)
    out = []
    for k, (ex, an) in enumerate(zip(exs, analyses)):
        risk = float(risks[k])
        topics = policy.tag(ex.query, ex.context)
        decision = policy.decide(risk, topics)
        srisk = sent_risks[k] if sent_risks is not None else np.zeros(len(an.offsets))
        pred_spans = spans[k] if spans is not None else []
        offsets = an.offsets
        holds_span = np.zeros(len(offsets), dtype=bool)
        span_results = []
        starts = [s for s, _ in offsets]
        for s, e, r in pred_spans:
            j = _sentence_of(offsets, s, starts)
            if j >= 0:
                holds_span[j] = True
            span_results.append(SpanResult(s, e, ex.output[s:e], float(r), j))
        cites = [citation_for(ex, an, i) for i in range(len(offsets))]
        gaps = [sentence_reasons(ex, an, i, citation=cites[i]) for i in range(len(offsets))]
        by_risk = srisk >= sthr if len(offsets) else np.zeros(0, dtype=bool)
        flagged = by_risk | holds_span
        # contradictions only: an unsupported claim unit is a gap (a reason), not a contradiction
        found = [sum(x.check != "unsupported" for x in f) for f in getattr(an, "findings", ())]
        if decision.flagged and len(found) == len(offsets):
            # a flagged answer's contradictions are shown where they are
            flagged = flagged | (np.asarray(found) > 0)
        top = -1
        if decision.flagged and len(offsets) and not flagged.any():
            # the sentence with the most contradiction findings; else the riskiest; for a method that scores
            # whole responses only, the one with most gaps
            top = int(np.argmax(srisk)) if sent_risks is not None else int(np.argmax([len(g) for g in gaps]))
            flagged[top] = True
        sentences = []
        for i, (s, e) in enumerate(offsets):
            r = float(srisk[i])
            reasons = gaps[i] if gaps[i] or not flagged[i] else [model_risk_reason(r)]
            cite = cites[i]
            why = ("risk" if by_risk[i] else "span" if holds_span[i] else "top" if i == top
                   else "finding" if flagged[i] else "risk")
            sentences.append(SentenceResult(i, s, e, ex.output[s:e], r, bool(flagged[i]), cite, tuple(reasons),
                                            explanation_text(bool(flagged[i]), r, sthr, reasons, cite, why=why)))
        out.append(ScoreResult(id=ex.id, risk=risk, flagged=decision.flagged, decision=decision.decision,
                               threshold=decision.threshold, output=ex.output, query=ex.query,
                               task_type=ex.task_type, verify=decision.verify, topics=tuple(topics),
                               sensitive=decision.sensitive, sentences=tuple(sentences),
                               spans=tuple(span_results), model=info))
    return out


_DEFAULT_POLICY: list = []


def _default_policy() -> Policy:
    """``Policy()``, built once (its topic tagger compiles the lexicons)."""
    if not _DEFAULT_POLICY:
        _DEFAULT_POLICY.append(Policy())
    return _DEFAULT_POLICY[0]


def _sentence_of(offsets, pos: int, starts=None) -> int:
    """Index of the sentence ``(start, end)`` of ``offsets`` holding character ``pos`` (``-1``: none).

    ``offsets`` are ordered and non-overlapping (as
    :func:`evqual.text.split_sentences` gives them), so a binary search over
    the sentence starts finds the only candidate: the last sentence starting
    at or before ``pos``.  ``starts`` (the starts of ``offsets``) may be
    passed when many positions are looked up in one answer.

    Examples
    --------
    >>> _sentence_of([(0, 5), (6, 10)], 7), _sentence_of([(0, 5), (6, 10)], 5)
    (1, -1)
    """
    if starts is None:
        starts = [s for s, _ in offsets]
    i = bisect.bisect_right(starts, pos) - 1
    return i if i >= 0 and pos < offsets[i][1] else -1
