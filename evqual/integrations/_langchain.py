"""evqual in a LangChain chain (the ``langchain`` extra: ``langchain-core``).

:class:`EvqualRunnable` scores a chain's answer against the documents it
retrieved and adds the result under ``"evqual"``; :func:`evqual_guard` routes
an answer by evqual's decision (a fallback for regenerate, a verification
step for escalate, a refusal for abstain, the answer itself otherwise).
Both are ordinary runnables: they take ``RunnableConfig``, fire the usual
callbacks (a ``chain`` run each) and compose with ``|``.
"""

from typing import Any

from ..errors import MissingDependencyError

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


def _text(value) -> str:
    if isinstance(value, BaseMessage):
        return value.content if isinstance(value.content, str) else str(value.content)
    if isinstance(value, Document):
        return value.page_content
    return value if isinstance(value, str) else str(value)


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

    def _item(self, value: dict) -> dict:
        if not isinstance(value, dict):
            raise TypeError(f"EvqualRunnable takes a dict with {self.question_key!r}, {self.context_key!r} and "
                            f"{self.answer_key!r}; got {type(value).__name__}")
        missing = [k for k in (self.context_key, self.answer_key) if k not in value]
        if missing:
            raise KeyError(f"EvqualRunnable: the input lacks {', '.join(map(repr, missing))} "
                           f"(has {sorted(map(str, value))})")
        docs = value[self.context_key]
        docs = [docs] if isinstance(docs, (str, Document)) else list(docs)
        query = value.get(self.question_key)
        item = {"query": None if query is None else _text(query), "context": [_text(d) for d in docs],
                "output": _text(value[self.answer_key])}
        if value.get("id") is not None:
            item["id"] = str(value["id"])
        return item

    def _score(self, inputs: list) -> list:
        results = self._scorer().score_batch([self._item(v) for v in inputs], policy=self.policy)
        return [{**v, self.output_key: r.to_dict()} for v, r in zip(inputs, results)]

    def invoke(self, input: dict, config: RunnableConfig | None = None, **kwargs: Any) -> dict:
        return self._call_with_config(lambda v: self._score([v])[0], input, config, run_type="chain")

    def batch(self, inputs: list, config=None, *, return_exceptions: bool = False, **kwargs: Any) -> list:
        """Score many inputs in one :meth:`~evqual.scoring.Scorer.score_batch` call (faster per answer)."""
        if not inputs:
            return []
        return self._batch_with_config(self._score, list(inputs), config, return_exceptions=return_exceptions,
                                       run_type="chain")


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
        Gets it when the decision is ``escalate`` (the verification stage);
        default: the answer, as for ``warn``.
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
    escalate = as_runnable(verify, answer)

    def decision(d):
        return lambda v: v[output_key]["decision"] == d

    route = RunnableBranch(
        (decision("abstain"), refuse),
        (decision("regenerate"), regenerate),
        (decision("escalate"), escalate),
        answer,
    ).with_config(run_name="evqual_guard")
    return scorer | route
