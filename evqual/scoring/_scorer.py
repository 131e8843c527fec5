"""The scoring pipeline: one object from answers to results.

A :class:`Scorer` composes the stages of :mod:`evqual` in the one direction
data flows::

    answer -> Example -> Detector.detect (features, risks, sentence risks, spans)
           -> reasons and citations (evqual.explain) -> Policy (decision) -> ScoreResult

It is what ``evqual score``, ``evqual explain``, :func:`score_frame`, the
``--jobs`` workers and the distributed engines all use, so that every entry
point gives the same result for the same answer.

One rule holds everywhere (JSON, HTML, markdown, audit log): **an answer is
flagged exactly when at least one of its sentences is**, and an answer is
flagged exactly when the policy's decision is not ``show``.

* In a flagged answer, the flagged sentences are those whose sentence risk
  reaches the detector's validation-tuned sentence threshold, those holding a
  predicted span and those holding a claim-aligned contradiction finding;
  when none is, the riskiest sentence is (for methods that score whole
  responses only, the one with most support gaps), so a flagged answer
  always points at a sentence and cites its evidence (forced citation).
* In an answer the policy shows, no sentence is flagged; the sentences that
  would have been on the signals above are *notes* (``note=True``).

Every sentence carries its reasons, flagged or not.  A high-precision
conflict found by a claim-aligned check (see
:data:`evqual.scoring.ESCALATE_REASONS`) forces at least ``escalate``.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json

import numpy as np

from .._gcpause import gc_paused
from .._version import __version__
from ..explain import CONTRADICTION_KINDS, citation_for, explanation_text, model_risk_reason, sentence_reasons
from ..results import ModelInfo, ScoreResult, SentenceResult, SpanResult
from ..text import language_warning
from ._policy import Policy

__all__ = ["Scorer", "as_scoring_example", "model_info", "split_extra"]

_METADATA_KEYS = ("model", "temperature", "quality", "source_id", "split")


_FIELDS = ("query", "context", "output", "task_type", "metadata", "id", "label")


def split_extra(item: dict) -> tuple[dict, dict]:
    """``(fields evqual reads, extra fields passed through)`` of a mapping of score() arguments.

    Extra values must be JSON values (strings, numbers, booleans, None,
    lists, objects; bounded nesting): a :class:`ValueError` names the field.

    Examples
    --------
    >>> split_extra({"output": "o", "context": "c", "user": "u7"})
    ({'output': 'o', 'context': 'c'}, {'user': 'u7'})
    """
    from ..data import check_value

    known = {k: v for k, v in item.items() if k in _FIELDS}
    extra = {k: v for k, v in item.items() if k not in _FIELDS}
    for key, value in extra.items():
        if not isinstance(key, str):
            raise TypeError(f"field names must be strings; got {key!r}")
        problem = check_value(value, key)
        if problem is None:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                problem = f"{key}: not a JSON value ({exc})"
        if problem is not None:
            raise ValueError(f"extra field {problem}")
    return known, extra


def _label(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    raise ValueError(f"label must be 0 or 1 (or false/true, or None); got {value!r}")


def as_scoring_example(item, *, default_id: str = "0", limits=None):
    """An :class:`~evqual.data.Example` from an Example or a mapping of score() arguments.

    The mapping holds ``output`` and ``context`` (required), ``query``,
    ``task_type``, ``id``, ``label`` (0/1, the gold or user label, shown in
    results and reports) and ``metadata`` (``model``, ``temperature``,
    ``quality``, ``source_id``, ``split``); other keys are not read here
    (see :func:`split_extra`: the scorer passes them through).  Its texts
    must fit ``limits`` (default :data:`evqual.data.DEFAULT_LIMITS`; a
    :class:`ValueError` names the field); an Example is taken as it is.
    """
    from ..data import DEFAULT_LIMITS, Example, make_example

    if isinstance(item, Example):
        return item
    if not isinstance(item, dict):
        raise TypeError(f"expected an Example or a dict of score() arguments; got {type(item).__name__}")
    item, _ = split_extra(item)
    missing = [key for key in ("context", "output") if key not in item]
    if missing:  # every missing field named at once, as the JSONL loader's E102 records do
        raise ValueError(f"missing required field{'s' if len(missing) > 1 else ''} "
                         f"{' and '.join(repr(k) for k in missing)}")
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
                      id=str(rid) if rid is not None else default_id, label=_label(item.get("label")), **meta)
    over = limits.check_sizes(output="", context=ex.context, query=None)
    if over is not None:
        raise ValueError(f"{over[0]} {over[1]}")
    return ex


def model_info(detector) -> ModelInfo:
    """The :class:`~evqual.results.ModelInfo` of a detector (from its ``meta.json`` when loaded from disk)."""
    meta = getattr(detector, "meta_", None) or {}
    return ModelInfo(name=meta.get("name", ""), method=str(detector.spec.name),
                     version=meta.get("evqual_version", __version__), sha256=meta.get("model_sha256", ""),
                     entity_backend=detector.entity_backend)


_DEFAULT_POLICY: list = []


def _default_policy() -> Policy:
    """``Policy()``, built once (its topic tagger compiles the lexicons)."""
    if not _DEFAULT_POLICY:
        _DEFAULT_POLICY.append(Policy())
    return _DEFAULT_POLICY[0]


class Scorer:
    """Score answers: a fitted detector, its explanations and a decision policy, composed once.

    Parameters
    ----------
    detector : evqual.models.Detector
        A fitted detector (see :meth:`load` for a saved one).
    policy : evqual.scoring.Policy, default=None
        Decision bands and topic thresholds; None uses ``Policy()``.
    verifier : object, default=None
        The verification stage (for example :class:`evqual.verify.ClaimVerifier`
        or :class:`evqual.verify.MetaRAG`): anything with
        ``verify(query=, context=, output=, task_type=)`` returning an object with
        ``to_dict()``.  Only answers the policy escalates (``verify: true``) are
        verified; the result lands in :attr:`~evqual.results.ScoreResult.verification`
        and the audit log, beside the pre-filter's decision.

    Attributes
    ----------
    model_info : evqual.results.ModelInfo
        Which model scores (name, method, version, sha256, entity backend).

    Examples
    --------
    >>> from evqual.scoring import Scorer
    >>> scorer = Scorer.load()
    >>> r = scorer.score(query="When did the bridge open?",
    ...                  context=["The bridge opened in 1932 after six years of work."],
    ...                  output="The bridge opened in 1935.")
    >>> r.sentences[0].reasons[0].code
    'DATE_CONFLICT'
    >>> 0.0 <= r.risk <= 1.0
    True
    """

    def __init__(self, detector, *, policy=None, verifier=None):
        self.detector = detector
        self.policy = policy
        self.verifier = verifier

    @classmethod
    def load(cls, path=None, *, sha256: str | None = None, policy=None, verifier=None) -> "Scorer":
        """A scorer over a saved detector (default: the shipped ``models/default``).

        ``sha256`` pins the SHA-256 of the model file (checked before anything
        else is read; without it, ``$EVQUAL_MODEL_SHA256`` when set); see
        :func:`evqual.models.load_detector`.  The detector is loaded lean
        (``lean=True``): scoring imports no scikit-learn, with the same results.
        """
        from ..models import default_model_path, load_detector

        return cls(load_detector(path if path is not None else default_model_path(), sha256=sha256, lean=True),
                   policy=policy, verifier=verifier)

    def __repr__(self) -> str:
        return f"Scorer({self.model_info.method!r}, policy={self.policy!r})"

    @property
    def model_info(self) -> ModelInfo:
        return model_info(self.detector)

    def _policy(self, policy) -> Policy:
        if policy is not None:
            return policy
        return self.policy if self.policy is not None else _default_policy()

    # ------------------------------------------------------------------ entry points
    def score(self, *, query=None, context, output, task_type=None, metadata=None, id=None, label=None,
              policy=None, limits=None, **extra) -> ScoreResult:
        """Score one answer: calibrated risk, decision, sentences with reasons and evidence, spans.

        Parameters
        ----------
        query : str or None
            The user's request (``None``: derived from ``task_type``).
        context : str, list of str or dict
            The evidence given to the generator (a list is one chunk per item).
        output : str
            The answer under audit.
        task_type : str or None
            ``"QA"``, ``"Summary"``, ``"Data2txt"`` or another string.
        metadata : dict or None
            ``model``, ``temperature``, ``quality``, ``source_id``, ``split``
            (only metadata-using methods read them).
        id : str, optional
        label : {0, 1} or None
            The gold or user label (1 = hallucinated), carried into the
            result and shown in reports; never read by the detector.
        policy : evqual.scoring.Policy, optional
            Overrides the scorer's policy for this call.
        limits : evqual.data.Limits, optional
            Size caps on output, context and query (default
            :data:`evqual.data.DEFAULT_LIMITS`); a text over its cap raises
            :class:`ValueError` naming the field.
        **extra
            Any other fields (JSON values): passed through unchanged to
            :attr:`~evqual.results.ScoreResult.extra`.

        Returns
        -------
        evqual.results.ScoreResult
        """
        item = {"query": query, "context": context, "output": output, "task_type": task_type,
                "metadata": metadata, "id": id, "label": label, **extra}
        _, extra = split_extra(item)
        return self.score_examples([as_scoring_example(item, limits=limits)], policy=policy, extras=[extra])[0]

    def score_batch(self, items, *, policy=None, batch_size: int = 64, limits=None) -> list[ScoreResult]:
        """Score many answers (dicts of :meth:`score`'s arguments, or Examples); results in input order.

        Answers are featurized and scored ``batch_size`` at a time, which is
        much faster per answer than calling :meth:`score` in a loop; results
        do not depend on ``batch_size``.  Dicts must fit ``limits`` (see
        :meth:`score`), and their keys other than :meth:`score`'s arguments
        pass through to :attr:`~evqual.results.ScoreResult.extra`; Examples
        are taken as they are.
        """
        out, batch, extras = [], [], []
        for n, item in enumerate(items):
            batch.append(as_scoring_example(item, default_id=str(n), limits=limits))
            extras.append(split_extra(item)[1] if isinstance(item, dict) else {})
            if len(batch) >= batch_size:
                out.extend(self.score_examples(batch, policy=policy, extras=extras))
                batch, extras = [], []
        if batch:
            out.extend(self.score_examples(batch, policy=policy, extras=extras))
        return out

    def score_examples(self, examples, *, policy=None, extras=None) -> list[ScoreResult]:
        """Score :class:`~evqual.data.Example` objects; results in input order.

        ``extras`` (one dict per example, optional) pass through to
        :attr:`~evqual.results.ScoreResult.extra`.
        """
        policy = self._policy(policy)
        examples = list(examples)
        if not examples:
            return []
        if extras is not None and len(extras) != len(examples):
            raise ValueError(f"extras must hold one dict per example; got {len(extras)} for {len(examples)}")
        detector = self.detector
        with gc_paused():  # reading, the model and the results make no reference cycles (evqual/_gcpause.py)
            found = detector.detect(examples)
            sthr = detector.sentence_threshold_ if detector.sentence_threshold_ is not None else detector.threshold_
            info = self.model_info
            claims = getattr(found, "claim_risk", None)
            cthr = getattr(detector, "claim_threshold_", None)
            oods = _ood_warnings(detector, found)
            results = [self._result(ex, an, float(found.risk[k]),
                                    found.sentence_risk[k] if found.sentence_risk is not None else None,
                                    found.spans[k] if found.spans is not None else [], sthr,
                                    float(detector.threshold_), policy, info, extras[k] if extras is not None else {},
                                    claims[k] if claims is not None and cthr is not None else None, cthr, oods[k])
                       for k, (ex, an) in enumerate(zip(found.examples, found.analyses))]
            scored = found.examples
            del found  # the analyses go before the collector is back on: it has nothing of theirs to walk
        if self.verifier is not None:
            results = [self._verified(ex, r) if r.verify else r for ex, r in zip(scored, results)]
        return results

    def _verified(self, ex, result: ScoreResult) -> ScoreResult:
        """``result`` with the verifier's result of its answer (a verifier failure is recorded, not raised)."""
        try:
            v = self.verifier.verify(query=ex.query, context=ex.context, output=ex.output,
                                     task_type=ex.task_type).to_dict()
        except Exception as exc:  # noqa: BLE001 - the pre-filter's result stands; the failure is recorded
            v = {"method": getattr(self.verifier, "method", None), "error": f"{type(exc).__name__}: {exc}",
                 "score": None, "flagged": None, "tier": None}
        return dataclasses.replace(result, verification=v)

    # ------------------------------------------------------------------ one answer
    @staticmethod
    def _result(ex, an, risk, sent_risk, pred_spans, sthr, model_threshold, policy, info, extra,
                claim_risk=None, claim_threshold=None, ood=None) -> ScoreResult:
        topics = policy.tag(ex.query, ex.context)
        srisk = sent_risk if sent_risk is not None else np.zeros(len(an.offsets))
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
        gaps = [sentence_reasons(ex, an, i, citation=cites[i], claim_risks=claim_risk, claim_threshold=claim_threshold)
                for i in range(len(offsets))]
        # the reasons of claim-aligned checks (their details name the check) can force escalation: the engine's
        # contradictions are too common in faithful answers for that (issue 22: forcing on them doubled the
        # development suite's false alarms); they flag their sentence in a flagged answer
        checked = [r.code for g in gaps for r in g if "check" in r.details]
        decision = policy.decide(risk, topics, model_threshold=model_threshold, reasons=checked, ood=ood is not None)
        by_risk = srisk >= sthr if len(offsets) else np.zeros(0, dtype=bool)
        # contradictions only: an unsupported claim unit is a gap (a reason), not a contradiction
        contradicts = np.array([any(r.details.get("kind") in CONTRADICTION_KINDS and
                                    ("check" in r.details or "claim_risk" in r.details) for r in g)
                                for g in gaps], dtype=bool)
        signals = by_risk | holds_span | contradicts
        top = -1
        if decision.flagged:
            flagged, notes = signals, np.zeros(len(offsets), dtype=bool)
            if len(offsets) and not flagged.any():
                # the riskiest sentence; for a method that scores whole responses only, the one with most gaps
                top = int(np.argmax(srisk)) if sent_risk is not None else int(np.argmax([len(g) for g in gaps]))
                flagged = flagged.copy()
                flagged[top] = True
        else:
            # one rule everywhere: a shown answer has no flagged sentence; its signals are notes
            flagged, notes = np.zeros(len(offsets), dtype=bool), signals
        sentences = []
        for i, (s, e) in enumerate(offsets):
            r = float(srisk[i])
            reasons = gaps[i] if gaps[i] or not flagged[i] else [model_risk_reason(r)]
            cite = cites[i]
            if notes[i]:
                why = "note"
            else:
                why = ("risk" if by_risk[i] else "span" if holds_span[i] else "top" if i == top
                       else "finding" if flagged[i] else "risk")
            sentences.append(SentenceResult(i, s, e, ex.output[s:e], r, bool(flagged[i]), cite, tuple(reasons),
                                            explanation_text(bool(flagged[i]), r, sthr, reasons, cite, why=why),
                                            note=bool(notes[i])))
        return ScoreResult(id=ex.id, risk=risk, flagged=decision.flagged, decision=decision.decision,
                           threshold=decision.threshold, output=ex.output, query=ex.query,
                           task_type=ex.task_type, verify=decision.verify, topics=tuple(topics),
                           sensitive=decision.sensitive, sentences=tuple(sentences),
                           spans=tuple(span_results), model=info, rule=decision.rule,
                           sentence_threshold=float(sthr), context=ex.context, label=_gold(ex),
                           **_extra_and_warnings(ex, extra, ood))


def _ood_warnings(detector, found) -> list:
    """The ``W004`` warning (or None) of each answer of :meth:`Detector.detect`'s ``found``."""
    state = getattr(detector, "ood_", None)
    n = len(found.examples)
    if state is None or found.ood is None:
        return [None] * n
    from ..models import ood_warning

    over = np.flatnonzero(found.ood > 1.0)
    out = [None] * n
    if len(over):
        X = found.frame[state["names"]].to_numpy()
        for k in over.tolist():
            task = str(found.examples[k].task_type)
            out[k] = ood_warning(float(found.ood[k]), state, X[k], task if task in state["groups"] else "*")
    return out


def _extra_and_warnings(ex, extra, ood=None) -> dict:
    """``extra`` without the fields no JSON output can hold, and the warnings (W002 names each one dropped;
    ``ood``, the answer's W004 warning, comes last)."""
    from ..data import check_value, find_surrogate

    kept, warnings = {}, _warnings(ex)
    for key, value in (extra or {}).items():
        if not isinstance(key, str):
            problem = f"{key!r}: not a string field name"
        elif find_surrogate(key) >= 0:
            problem = f"{key.encode('utf-8', 'backslashreplace').decode()[:200]}: the field name holds an " \
                      "unpaired surrogate (not valid Unicode text)"
        else:
            problem = check_value(value, key)
        if problem is None:
            kept[key] = value
        else:
            warnings.append({"code": "W002", "message": f"extra field not passed through: {problem}",
                             "details": {"field": str(key).encode("utf-8", "backslashreplace").decode()[:200]}})
    if ood is not None:
        warnings.append(ood)
    return {"extra": kept, "warnings": tuple(warnings)}


def _gold(ex):
    """The example's gold label: its ``label``, else whether it has gold spans (``None``: unknown)."""
    if ex.label is not None:
        return int(ex.label)
    if ex.spans is not None:
        return int(bool(ex.spans))
    return None


_LANGUAGE_SAMPLE = 2_000


@functools.lru_cache(maxsize=64)
def _context_language_warning(sample: str):
    """:func:`language_warning` of a context's first characters, kept for the next answers to that context
    (answers often share one; the function is pure, and callers copy the dict before changing it)."""
    return language_warning(sample)


def input_warnings(ex) -> list:
    """Conditions that make the score (or the verification) of the Example ``ex`` less reliable.

    ``W001`` (:func:`evqual.text.language_warning`): the answer, or else its
    context, looks non-English; evqual's features and checks are built for
    English.  ``details["field"]`` names which text.  The context is judged
    on its first 2,000 characters (enough to tell its language; the check
    then costs about 0.2 ms per answer).
    """
    out = []
    for name, text in (("output", ex.output), ("context", ex.context[:_LANGUAGE_SAMPLE])):
        w = language_warning(text) if name == "output" else _context_language_warning(text)
        if w is not None:
            w = dict(w)
            w["details"] = {**w.get("details", {}), "field": name}
            if name == "context":
                w["message"] = w["message"].replace("the answer is", "the context is", 1)
            out.append(w)
            break
    return out


_warnings = input_warnings


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
