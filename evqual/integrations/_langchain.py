"""evqual in a LangChain chain (the ``langchain`` extra: ``langchain-core``).

:class:`EvqualRunnable` scores a chain's answer against the documents it
retrieved and adds the result under ``"evqual"``; :func:`evqual_guard` routes
an answer by evqual's decision (a fallback for regenerate, a verification
step for escalate, a refusal for abstain, the answer itself otherwise).
Both are ordinary runnables: they take ``RunnableConfig``, fire the usual
callbacks (a ``chain`` run each) and compose with ``|``.
"""

from typing import Any

from ..errors import EvqualDataError, MissingDependencyError
from ._inputs import check_passages, check_text

try:
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable, RunnableBranch, RunnableLambda
    from langchain_core.runnables.config import RunnableConfig
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependencyError("evqual's LangChain integration", "langchain", "langchain-core") from exc

__all__ = ["EvqualRunnable", "evqual_guard", "REFUSAL"]

REFUSAL = "I can't answer that reliably from the sources I was given."
"""What :func:`evqual_guard` answers for an answer evqual withholds (``abstain``) when no refusal is given."""


def _convert(value):
    """The text of a message or a document (None for anything else: it is refused, never ``str()``-ed)."""
    if isinstance(value, BaseMessage):
        content = value.content
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # content blocks: the text ones, joined
            parts = [b if isinstance(b, str) else b.get("text") for b in content
                     if isinstance(b, str) or (isinstance(b, dict) and isinstance(b.get("text"), str))]
            return "".join(parts) if parts or not content else None
        return None
    if isinstance(value, Document):
        return value.page_content if isinstance(value.page_content, str) else None
    return None


def _text(value) -> str:
    return value if isinstance(value, str) else (_convert(value) or "")


class EvqualRunnable(Runnable[dict, dict]):
    """A runnable that scores ``{question, documents, answer}`` with evqual and adds ``"evqual"``.

    Parameters
    ----------
    scorer : evqual.scoring.Scorer, optional
        Default: ``Scorer.load()`` (the shipped model), made on first use.
    question_key, context_key, answer_key : str
        Where the input dict holds the question, the retrieved documents
        (``Document`` objects or strings) and the answer (a string or a
        message).
    output_key : str, default="evqual"
        The key of the result, a dict as ``evqual score`` writes it
        (``risk``, ``flagged``, ``decision``, ``sentences`` with reasons, ...).
        An ``"id"`` in the input becomes the result's id; without one, a
        result's id is its position in the batch.
    policy : evqual.scoring.Policy, optional
        Overrides the scorer's policy.

    Examples
    --------
    >>> from evqual.integrations import EvqualRunnable
    >>> r = EvqualRunnable().invoke({"question": "Who designed it?",
    ...                              "context": ["Joseph Strauss designed the bridge."],
    ...                              "answer": "Joseph Strauss designed it."})
    >>> sorted(r)
    ['answer', 'context', 'evqual', 'question']
    >>> r["evqual"]["decision"] in ("show", "warn", "regenerate", "abstain", "escalate")
    True
    """

    def __init__(self, scorer=None, *, question_key: str = "question", context_key: str = "context",
                 answer_key: str = "answer", output_key: str = "evqual", policy=None):
        self.scorer = scorer
        self.question_key = question_key
        self.context_key = context_key
        self.answer_key = answer_key
        self.output_key = output_key
        self.policy = policy

    def _scorer(self):
        if self.scorer is None:
            from ..scoring import Scorer

            self.scorer = Scorer.load()
        return self.scorer

    def _item(self, value: dict, position: int = 1) -> dict:
        if not isinstance(value, dict):
            raise TypeError(f"EvqualRunnable takes a dict with {self.question_key!r}, {self.context_key!r} and "
                            f"{self.answer_key!r}; got {type(value).__name__}")
        missing = [k for k in (self.context_key, self.answer_key) if k not in value]
        if missing:
            raise KeyError(f"EvqualRunnable: the input lacks {', '.join(map(repr, missing))} "
                           f"(has {sorted(map(str, value))})")
        return self._checked(value, position)

    def _checked(self, value: dict, position: int) -> dict:
        """The scorer's item of one input; an answer or a passage that is not text (None, a number, a dict of
        documents) raises :class:`~evqual.errors.EvqualDataError` with its E1xx code, never becomes a text."""
        where = "<EvqualRunnable input>"
        item = {"query": check_text(value.get(self.question_key), where=where, position=position,
                                    field=self.question_key, convert=_convert, optional=True),
                "context": check_passages(value[self.context_key], where=where, position=position,
                                          field=self.context_key, convert=_convert),
                "output": check_text(value[self.answer_key], where=where, position=position, field=self.answer_key,
                                     convert=_convert)}
        # the input's id, or its position in the batch (kept when a bad input before it is left out)
        item["id"] = str(value["id"]) if value.get("id") is not None else str(position - 1)
        return item

    def _score(self, inputs: list, return_exceptions: bool = False) -> list:
        items: list = []
        issues: list = []
        for n, v in enumerate(inputs, 1):
            try:
                items.append(self._item(v, n))
            except EvqualDataError as exc:
                issues.extend(exc.issues)
                items.append(exc)
            except (TypeError, KeyError) as exc:  # not a dict, or a key missing
                if not return_exceptions:
                    raise
                items.append(exc)
        if issues and not return_exceptions:
            raise EvqualDataError(issues)
        good = [it for it in items if not isinstance(it, Exception)]
        results = iter(self._scorer().score_batch(good, policy=self.policy) if good else [])
        return [it if isinstance(it, Exception) else {**v, self.output_key: next(results).to_dict()}
                for v, it in zip(inputs, items)]

    def invoke(self, input: dict, config: RunnableConfig | None = None, **kwargs: Any) -> dict:
        return self._call_with_config(lambda v: self._score([v])[0], input, config, run_type="chain")

    def batch(self, inputs: list, config=None, *, return_exceptions: bool = False, **kwargs: Any) -> list:
        """Score many inputs in one :meth:`~evqual.scoring.Scorer.score_batch` call (faster per answer).

        A bad input raises :class:`~evqual.errors.EvqualDataError` naming every bad input (its position as
        the line, and the field); with ``return_exceptions=True`` it is that input's error and the others are
        scored."""
        if not inputs:
            return []
        return self._batch_with_config(lambda vs: self._score(vs, return_exceptions), list(inputs), config,
                                       return_exceptions=return_exceptions, run_type="chain")


def evqual_guard(scorer: EvqualRunnable | None = None, *, fallback=None, verify=None, refusal=None,
                 answer_key: str = "answer", output_key: str = "evqual") -> Runnable:
    """``scorer | route``: the answer when evqual shows or warns, else by its decision.

    Parameters
    ----------
    scorer : EvqualRunnable, optional
        Default: ``EvqualRunnable()``.
    fallback : Runnable or callable, optional
        Gets the scored input (with ``"evqual"``) when the decision is
        ``regenerate``, e.g. a stricter chain; default: the refusal.
    verify : Runnable or callable, optional
        Gets it when the decision is ``escalate`` (the verification stage).
        Without one, an escalated answer is never passed on unchecked: it
        goes to ``fallback`` (and so, without a fallback, to the refusal).
    refusal : Runnable, callable or str, optional
        What ``abstain`` (and ``regenerate`` without a fallback) returns;
        default :data:`REFUSAL`.

    Returns
    -------
    Runnable
        Its output is what the chosen branch returns (by default a string).
    """
    scorer = EvqualRunnable(answer_key=answer_key, output_key=output_key) if scorer is None else scorer

    def as_runnable(x, default):
        if x is None:
            return default
        if isinstance(x, Runnable):
            return x
        if callable(x):
            return RunnableLambda(x)
        return RunnableLambda(lambda _v, text=str(x): text)

    answer = RunnableLambda(lambda v: _text(v[answer_key])).with_config(run_name="evqual_answer")
    refuse = as_runnable(refusal, RunnableLambda(lambda _v: REFUSAL)).with_config(run_name="evqual_refusal")
    regenerate = as_runnable(fallback, refuse)
    # an answer evqual escalates needs a check it has not had: with no verification step it is regenerated
    # (or refused), never shown as it is (issue 39: the README's guard passed "The bridge opened in 1952.")
    escalate = as_runnable(verify, regenerate)

    def decision(d):
        return lambda v: v[output_key]["decision"] == d

    route = RunnableBranch(
        (decision("abstain"), refuse),
        (decision("regenerate"), regenerate),
        (decision("escalate"), escalate),
        answer,
    ).with_config(run_name="evqual_guard")
    return scorer | route
