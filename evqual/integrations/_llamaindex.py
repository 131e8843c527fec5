"""evqual in LlamaIndex (the ``llamaindex`` extra: ``llama-index-core``).

:class:`EvqualEvaluator` is a ``BaseEvaluator``: ``evaluate(query=, response=, contexts=)`` gives an
``EvaluationResult`` whose ``score`` is evqual's support (1 - risk), ``passing`` is "not flagged" and
``feedback`` cites the flagged sentences with their reasons and evidence; it runs in
``BatchEvalRunner`` like LlamaIndex's own evaluators.  :func:`attach_evqual` is a response hook: it
scores a ``Response`` against its source nodes and puts the result in ``response.metadata["evqual"]``.
"""

import asyncio
import threading
from typing import Any, Optional, Sequence

from ..errors import EvqualDataError, MissingDependencyError
from ._inputs import check_passages, check_text

try:
    from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependencyError("evqual's LlamaIndex integration", "llamaindex", "llama-index-core") from exc

__all__ = ["EvqualEvaluator", "attach_evqual", "feedback_of"]

_LOCK = threading.Lock()
_DEFAULT = {}


def _default_scorer():
    with _LOCK:
        if "scorer" not in _DEFAULT:
            from ..scoring import Scorer

            _DEFAULT["scorer"] = Scorer.load()
        return _DEFAULT["scorer"]


def feedback_of(result: dict, max_sentences: int = 5) -> str:
    """One paragraph an evaluator shows: the decision and why, then each flagged sentence with its reasons.

    >>> feedback_of({"decision": "show", "risk": 0.1, "threshold": 0.35, "sentences": []})
    'evqual: show (risk 0.100, threshold 0.350); no sentence flagged.'
    """
    head = (f"evqual: {result.get('decision')} (risk {float(result.get('risk', 0.0)):.3f}, "
            f"threshold {float(result.get('threshold', 0.0)):.3f})")
    flagged = [s for s in result.get("sentences") or () if s.get("flagged")]
    if not flagged:
        return head + "; no sentence flagged."
    parts = []
    for s in flagged[:max_sentences]:
        reasons = "; ".join(f"{r.get('code')}: {r.get('text')}" for r in s.get("reasons") or ()) or "no reason code"
        ev = (s.get("evidence") or {}).get("text")
        parts.append(f"sentence {s.get('index', 0) + 1} \"{s.get('text')}\" ({reasons})"
                     + (f" [evidence: \"{ev}\"]" if ev else ""))
    more = f" (+{len(flagged) - max_sentences} more)" if len(flagged) > max_sentences else ""
    return head + ". Flagged: " + " | ".join(parts) + more


class EvqualEvaluator(BaseEvaluator):
    """LlamaIndex evaluator backed by evqual (no LLM).

    Parameters
    ----------
    scorer : evqual.scoring.Scorer, optional
        Default: the shipped model (loaded once per process, on first use).
    policy : evqual.scoring.Policy, optional
        Overrides the scorer's policy.

    Examples
    --------
    >>> from evqual.integrations import EvqualEvaluator
    >>> r = EvqualEvaluator().evaluate(query="Who designed it?", response="Joseph Strauss designed it.",
    ...                                contexts=["Joseph Strauss designed the bridge."])
    >>> r.passing, 0.0 <= r.score <= 1.0, r.feedback.startswith("evqual: ")
    (True, True, True)
    """

    def __init__(self, scorer=None, *, policy=None):
        self._scorer = scorer
        self._policy = policy

    def _get_prompts(self) -> dict:
        return {}  # no prompt: evqual is not an LLM judge

    def _update_prompts(self, prompts) -> None:
        return None

    def score(self, query: Optional[str], response: str, contexts) -> dict:
        """evqual's result (as ``evqual score`` writes it) for one answer.

        ``contexts``: one string (one passage) or a sequence of strings.  A ``None`` or non-text response or
        passage raises :class:`~evqual.errors.EvqualDataError` (E102/E103), never becomes the text "None"
        (issue 39: a string context had become one passage per character)."""
        where = "<EvqualEvaluator input>"
        item = {"query": check_text(query, where=where, position=1, field="query", optional=True),
                "context": check_passages(contexts, where=where, position=1, field="contexts"),
                "output": check_text(response, where=where, position=1, field="response")}
        scorer = self._scorer if self._scorer is not None else _default_scorer()
        return scorer.score_batch([item], policy=self._policy)[0].to_dict()

    async def aevaluate(self, query: Optional[str] = None, response: Optional[str] = None,
                        contexts: Optional[Sequence[str]] = None, sleep_time_in_seconds: int = 0,
                        **kwargs: Any) -> EvaluationResult:
        if isinstance(contexts, str):  # one passage, not one per character
            contexts = [contexts]
        if response is None or not contexts:
            return EvaluationResult(query=query, response=response, contexts=list(contexts or []),
                                    invalid_result=True,
                                    invalid_reason="evqual needs the response and at least one context")
        await asyncio.sleep(sleep_time_in_seconds)
        try:  # CPU-bound: off the event loop, so BatchEvalRunner's other jobs keep running
            result = await asyncio.to_thread(self.score, query, response, contexts)
        except (EvqualDataError, ValueError, TypeError) as exc:
            return EvaluationResult(query=query, response=response if isinstance(response, str) else None,
                                    contexts=[c for c in contexts if isinstance(c, str)], invalid_result=True,
                                    invalid_reason=f"evqual could not score it: {exc}")
        return EvaluationResult(query=query, response=response, contexts=list(contexts),
                                passing=not result["flagged"], score=1.0 - float(result["risk"]),
                                feedback=feedback_of(result))


def attach_evqual(response, query: Optional[str] = None, *, scorer=None, policy=None, key: str = "evqual"):
    """Score a LlamaIndex ``Response`` against its ``source_nodes`` and store the result (a dict as ``evqual
    score`` writes it) in ``response.metadata[key]``; returns the response.

    Use it after ``query_engine.query(q)``: ``attach_evqual(query_engine.query(q), q)``.
    """
    contexts = [n.node.get_content() for n in (getattr(response, "source_nodes", None) or [])]
    if not contexts:
        raise ValueError("the response has no source nodes: nothing to check it against")
    result = EvqualEvaluator(scorer, policy=policy).score(query, str(response), contexts)
    if response.metadata is None:
        response.metadata = {}
    response.metadata[key] = result
    return response
