"""MetaRAG: metamorphic testing of an answer against its context (seed 000, Section 3, Algorithm 1).

For one answer ``A`` to a query ``Q`` over a context ``C``:

1. **Factoids.**  The answer's claim units (:func:`evqual.text.split_sentences`,
   then :func:`evqual.features.split_claims`, the units of the ``check``
   family), keeping each one's character span in ``A``.  A unit is dropped when
   it is a question (it ends with ``?``), an opinion or a courtesy (it opens
   with a first-person stance such as "I think", "in my opinion",
   "personally", or "I hope this helps", "feel free", "let me know"), a
   lead-in that ends with a colon ("Here is a summary of the article:"), or
   has no letter or digit: seed 000 decomposes an answer into *verifiable*
   facts.
   A leading coordinator ("and", "but", "or", "so", "yet") is not part of the
   statement that is mutated and judged (the span keeps it).
2. **Mutations.**  ``N`` synonym and ``N`` antonym variants of each factoid
   from the mutator (by default :class:`RulesMutator`, no LLM).
3. **Verification.**  Each variant is checked against the ``k`` passages of
   the context retrieved for it (:class:`EvidenceRetriever`) by the judge, all
   variants of the answer in one call.  The answer is the judgement's
   ``answer`` when the judge gives one (an LLM judge answering seed 000's
   question); otherwise it is derived from the calibrated probability of the
   ``rules`` judge: **YES** when ``probability >= yes_at`` (0.75, seed 003's
   entailment threshold, the ``SUPPORTED`` threshold of the claim verifier),
   **NO** when the verdict is ``REFUTED`` (a high-precision check fired) or
   ``probability < no_at`` (0.4: the judge finds the statement more likely
   unsupported than not, with a margin), **NOT SURE** between.  A judgement
   with an ``error`` counts as NOT SURE (the verifier could not decide).
4. **Scores.**  Each variant gets its Table 1 penalty (:func:`penalty`);
   ``S_i`` is the mean over the variants actually made (``2N``, or fewer when
   the mutator could not make more: :attr:`FactoidResult.missing` says how
   many are missing); with ``aggregate="balanced"`` it is the mean of the
   synonym mean and the antonym mean instead, which is the same number when
   both relations have ``N`` variants (seed 000's equation 1) but keeps each
   relation's weight at one half when the rule-based mutator makes, say, one
   synonym and five antonyms (a relation without variants is left out).  A factoid of which no variant could be made is checked
   itself, as its own synonym (Table 1's synonym row: ``S_i`` is 0 for YES,
   0.5 for NOT SURE, 1 for NO), so an unmutable factoid still counts.  The
   answer's score is ``H = max_i S_i`` (0 for an answer without a factoid).

**Flag and tier.**  The answer is flagged when ``H >= tau``; a factoid when
``S_i >= tau``.  ``tau`` is the explicit ``tau`` or topic-aware: the
policy's threshold for the answer's topics (seed 000, Section 3.6:
``tau_general = 0.5``, ``tau_sensitive = 0.3``; topics from the policy's
:class:`~evqual.scoring.TopicTagger` on the query and context when not
given).  The tier follows the flag, so that ``flagged == (tier != "accept")``
as for the claim verifier: ``accept`` when ``H < tau``, ``reject`` when
``H >= max(tau, reject_at)`` (0.75: three quarters of the maximal penalty,
the policy's ``regenerate_at``), ``revise`` between.

Bad content never raises: an answer that cannot be verified comes back with
``error`` set and ``score`` ``None``.  Bad parameters raise ``ValueError``.
"""

from __future__ import annotations

import math
import re
import time

from ..features import split_claims
from ..scoring import Policy
from ..text import split_sentences
from ._claims import is_opinion, is_question
from ._evidence import EvidenceRetriever
from ._mutations import RulesMutator
from ._types import ANSWERS, Evidence, FactoidResult, Usage, Variant, VerificationResult, penalty

__all__ = ["AGGREGATES", "DEFAULT_TAU", "MetaRAG", "extract_factoids", "metarag_answer"]

#: How ``S_i`` averages the penalties of a factoid's variants (see :class:`MetaRAG`).
AGGREGATES = ("mean", "balanced")
#: Seed 000, Section 3.6: the general and the sensitive-topic threshold.
DEFAULT_TAU = {"general": 0.5, "sensitive": 0.3}

_LEAD_COORD = re.compile(r"^(?:(?:and|but|or|so|yet)\b[\s,]*)+", re.IGNORECASE)


def extract_factoids(output: str) -> list:
    """The factoids of an answer as ``(start, end)`` spans (see the module docstring, step 1).

    >>> out = "The plant opened in 1932, but it closed in 1990. Was it sold? I think it was a good plant."
    >>> [out[a:b] for a, b in extract_factoids(out)]
    ['The plant opened in 1932', 'but it closed in 1990.']
    """
    if not isinstance(output, str):
        raise TypeError(f"output must be a string; got {type(output).__name__}")
    spans = []
    for s, e in split_sentences(output):
        for a, b in split_claims(output, s, e):
            unit = output[a:b]
            if any(c.isalnum() for c in unit) and not is_question(unit) and not is_opinion(unit) \
                    and not unit.rstrip().endswith(":"):
                spans.append((a, b))
    return spans


def metarag_answer(judgement, *, yes_at: float = 0.75, no_at: float = 0.4) -> str:
    """YES / NO / NOT SURE of a judgement (see the module docstring, step 3).

    >>> from evqual.verify import Judgement
    >>> [metarag_answer(Judgement(v, p)) for v, p in [("SUPPORTED", 0.9), ("REFUTED", 0.9), ("NO_EVIDENCE", 0.5),
    ...                                                ("NO_EVIDENCE", 0.1)]]
    ['YES', 'NO', 'NOT SURE', 'NO']
    """
    if getattr(judgement, "error", None):
        return "NOT SURE"
    answer = getattr(judgement, "answer", None)
    if answer is not None:
        if answer not in ANSWERS:
            raise ValueError(f"judge answered {answer!r}; an answer must be one of {ANSWERS}")
        return answer
    p = judgement.probability
    if judgement.verdict == "REFUTED":
        return "NO"
    if not isinstance(p, (int, float)) or isinstance(p, bool) or math.isnan(p):
        return "NOT SURE"
    if p >= yes_at:
        return "YES"
    return "NO" if p < no_at else "NOT SURE"


def _number(value, name, lo=0.0, hi=1.0):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a number in [{lo}, {hi}]; got {value!r}")


MISSING_VARIANTS_CODE = "W003"


def _missing_warning(factoids, n: int) -> list:
    """A ``W003`` warning when the mutator made fewer than the ``2 n`` variants asked for some factoid."""
    missing = sum(f.missing for f in factoids)
    if not missing:
        return []
    asked = 2 * n * len(factoids)
    short = sum(1 for f in factoids if f.missing)
    return [{"code": MISSING_VARIANTS_CODE,
             "message": f"the mutator made {asked - missing} of the {asked} variants asked for ({missing} missing, "
                        f"in {short} of {len(factoids)} factoids): it found too few words it can change, so those "
                        "factoids' S_i average fewer variants",
             "details": {"asked": asked, "made": asked - missing, "missing": missing, "factoids_short": short}}]


class MetaRAG:
    """Metamorphic hallucination detection of RAG answers (seed 000; see the module docstring).

    Parameters
    ----------
    judge : Judge
        Checks statements against evidence (:class:`~evqual.verify.Judge`): the
        ``rules`` judge, an LLM judge, or any object with ``name`` and
        ``judge(statements, evidence, *, query, chunks)``.
    mutator : Mutator, optional
        Default ``RulesMutator()`` (LLM-free mutations).
    extractor : callable or object with ``extract``, optional
        ``extractor(output)`` returning ``(start, end)`` spans, or an object
        whose ``extract(output)`` returns items with ``start`` and ``end``
        (such as a claim extractor).  Default :func:`extract_factoids`.
    n : int, default=5
        ``N``: variants of each kind per factoid (seed 000 ablates 2 and 5).
    tau : float, optional
        A fixed threshold; default the topic-aware one of ``policy``.
    policy : Policy, optional
        Gives the topic-aware threshold and tags topics; default
        ``Policy(general_threshold=0.5, sensitive_threshold=0.3)``
        (:data:`DEFAULT_TAU`).
    retriever : {"sparse", "dense", "hybrid", "rrf"} or EvidenceRetriever, default="sparse"
    k : int, default=3
        Evidence passages per variant.
    yes_at, no_at : float, default=0.75, 0.4
        YES at ``probability >= yes_at``; NO at ``probability < no_at`` (or ``REFUTED``).
    reject_at : float, default=0.75
        ``reject`` tier at ``H >= max(tau, reject_at)``.
    aggregate : {"mean", "balanced"}, default="mean"
        ``S_i`` as the mean penalty over the variants made, or the mean of the two relations' means.

    Examples
    --------
    >>> import re
    >>> from evqual.verify import Judgement
    >>> class Overlap:  # a toy judge: YES when every word of the statement is in the context, else NOT SURE
    ...     name = "overlap"
    ...     def judge(self, statements, evidence, *, query="", chunks=()):
    ...         ctx = set(re.findall(r"\\w+", " ".join(chunks).lower()))
    ...         return [Judgement("SUPPORTED", 1.0) if set(re.findall(r"\\w+", s.lower())) <= ctx
    ...                 else Judgement("NO_EVIDENCE", 0.5) for s in statements]
    >>> m = MetaRAG(judge=Overlap(), n=2)
    >>> r = m.verify(query="When did it open?", context=["The bridge opened in 1932."],
    ...              output="The bridge opened in 1935.")
    >>> r.score, r.flagged, r.tier, r.tau
    (0.5, True, 'revise', 0.5)
    >>> [(v.kind, v.text, v.answer, v.penalty) for v in r.factoids[0].variants]  # doctest: +NORMALIZE_WHITESPACE
    [('synonym', 'In 1935, the bridge opened.', 'NOT SURE', 0.5),
     ('antonym', 'The bridge closed in 1935.', 'NOT SURE', 0.5),
     ('antonym', 'The bridge did not open in 1935.', 'NOT SURE', 0.5)]
    >>> r = m.verify(query="When did it open?", context=["The bridge opened in 1932."],
    ...              output="The bridge opened in 1932.")
    >>> r.score, r.flagged, r.tier, r.factoids[0].missing
    (0.333333, False, 'accept', 1)
    """

    method = "metarag"

    def __init__(self, *, judge, mutator=None, extractor=None, n: int = 5, tau=None, policy=None,
                 retriever="sparse", k: int = 3, yes_at: float = 0.75, no_at: float = 0.4,
                 reject_at: float = 0.75, aggregate: str = "mean"):
        self.judge = judge
        self.mutator = mutator
        self.extractor = extractor
        self.n = n
        self.tau = tau
        self.policy = policy
        self.retriever = retriever
        self.k = k
        self.yes_at = yes_at
        self.no_at = no_at
        self.reject_at = reject_at
        self.aggregate = aggregate

    # ------------------------------------------------------------------ parts

    def _check(self):
        if not callable(getattr(self.judge, "judge", None)):
            raise ValueError(f"judge must have a judge(statements, evidence, *, query, chunks) method; "
                             f"got {type(self.judge).__name__}")
        if self.mutator is not None and not callable(getattr(self.mutator, "mutate", None)):
            raise ValueError(f"mutator must have a mutate(factoid, kind, n) method; got {type(self.mutator).__name__}")
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 1:
            raise ValueError(f"n must be an int >= 1; got {self.n!r}")
        if self.tau is not None:
            _number(self.tau, "tau")
        for name in ("yes_at", "no_at", "reject_at"):
            _number(getattr(self, name), name)
        if self.no_at > self.yes_at:
            raise ValueError(f"no_at must be <= yes_at; got {self.no_at!r} > {self.yes_at!r}")
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}; got {self.aggregate!r}")
        if self.policy is not None and not isinstance(self.policy, Policy):
            raise ValueError(f"policy must be an evqual.scoring.Policy or None; got {type(self.policy).__name__}")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ValueError(f"k must be an int >= 1; got {self.k!r}")

    def _policy(self) -> Policy:
        if self.policy is None:
            self.policy = Policy(general_threshold=DEFAULT_TAU["general"],
                                 sensitive_threshold=DEFAULT_TAU["sensitive"])
        return self.policy

    def _mutator(self):
        if self.mutator is None:
            self.mutator = RulesMutator()
        return self.mutator

    def _retriever(self) -> EvidenceRetriever:
        if isinstance(self.retriever, EvidenceRetriever):
            return self.retriever
        return EvidenceRetriever(k=self.k, method=self.retriever or "sparse")

    def _factoids(self, output: str) -> list:
        """``(start, end, statement)`` per factoid: ``statement`` is the extractor's own wording when it gives
        one (an LLM's decontextualised factoid, a ``(start, end, text)`` tuple or an object with ``text``
        that differs from the span), else ``None`` (the span's text is used)."""
        ext = self.extractor
        if ext is None:
            items = extract_factoids(output)
        elif callable(getattr(ext, "extract", None)):
            items = list(ext.extract(output))
        else:
            items = list(ext(output))
        out = []
        for item in items:
            if hasattr(item, "start") and hasattr(item, "end"):
                a, b, text = item.start, item.end, getattr(item, "text", None)
            elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
                a, b, text = item[0], item[1], (item[2] if len(item) == 3 else None)
            else:
                raise ValueError(f"extractor returned {item!r}; expected (start, end) or (start, end, text)")
            if not (isinstance(a, int) and isinstance(b, int) and 0 <= a < b <= len(output)):
                raise ValueError(f"extractor returned the span ({a!r}, {b!r}), not inside the answer "
                                 f"(length {len(output)})")
            given = text if isinstance(text, str) and text.strip() and text != output[a:b] else None
            out.append((a, b, given))
        return out

    def threshold(self, query: str = "", context="", topics=None) -> tuple:
        """``(tau, topics)`` for an answer: the fixed ``tau``, or the policy's for the (tagged) topics.

        >>> m = MetaRAG(judge=None)
        >>> m.threshold("Can pregnant women take ibuprofen?"), m.threshold("Where is the bridge?")
        ((0.3, ('healthcare',)), (0.5, ()))
        """
        policy = self._policy()
        if topics is None:
            topics = policy.tag(query or "", context or "")
        topics = (topics,) if isinstance(topics, str) else tuple(topics)
        if self.tau is not None:
            return float(self.tau), topics
        return float(policy.threshold_for(topics)), topics

    def tier(self, score: float, tau: float) -> str:
        """``accept`` below ``tau``; ``reject`` at ``max(tau, reject_at)`` and above; ``revise`` between.

        >>> m = MetaRAG(judge=None)
        >>> m.tier(0.2, 0.5), m.tier(0.5, 0.5), m.tier(0.8, 0.5), m.tier(0.35, 0.3)
        ('accept', 'revise', 'reject', 'revise')
        """
        if score < tau:
            return "accept"
        return "reject" if score >= max(tau, self.reject_at) else "revise"

    def _aggregate(self, variants) -> float:
        if self.aggregate == "mean":
            return sum(v.penalty for v in variants) / len(variants)
        means = []
        for kind in ("synonym", "antonym"):
            ps = [v.penalty for v in variants if v.kind == kind]
            if ps:
                means.append(sum(ps) / len(ps))
        return sum(means) / len(means)

    # ------------------------------------------------------------------ verification

    def verify(self, *, context, output: str, query: str = "", task_type: str | None = None,
               topics=None) -> VerificationResult:
        """Verify one answer (Algorithm 1); never raises for bad content (the error is in the result).

        Parameters
        ----------
        context : str, list of str or dict
            The retrieved context (chunked as :func:`evqual.data.chunk_context` does).
        output : str
            The answer.
        query : str, default=""
        task_type : str, optional
            ``QA``, ``Summary`` or ``Data2txt`` (how the context is chunked).
        topics : iterable of str, optional
            The answer's topics; default tagged by the policy from the query and context.

        Returns
        -------
        VerificationResult
            ``method="metarag"``, ``score = H``, ``factoids`` with their ``S_i``, spans and variants.
        """
        self._check()
        judge, mutator = self.judge, self._mutator()  # built once, on the first answer: not part of its latency
        t0 = time.perf_counter()
        backend = str(getattr(judge, "name", type(judge).__name__))
        fixed = None
        if topics is not None:  # the caller's topics are checked here: an unknown name is a caller's error
            fixed = self.threshold(topics=topics)
        tau = fixed[0] if fixed else self.tau

        def failed(exc):
            return VerificationResult(self.method, backend, None, None, None, tau=tau,
                                      latency_ms=round((time.perf_counter() - t0) * 1000, 3),
                                      error=f"{type(exc).__name__}: {exc}")

        try:
            if not isinstance(output, str):
                raise TypeError(f"output must be a string; got {type(output).__name__}")
            if query is None:
                query = ""
            if not isinstance(query, str):
                raise TypeError(f"query must be a string; got {type(query).__name__}")
            retr = self._retriever().fit(context, task_type)
            if fixed is None:
                tau, _ = self.threshold(query, retr.context_text_)
            spans = self._factoids(output)
            plan = []  # (factoid index, kind, statement)
            missing = []
            for i, (a, b, given) in enumerate(spans):
                stmt = given.strip() if given else (_LEAD_COORD.sub("", output[a:b]).strip() or output[a:b].strip())
                syn = [v for v in mutator.mutate(stmt, "synonym", self.n) if isinstance(v, str)][: self.n]
                ant = [v for v in mutator.mutate(stmt, "antonym", self.n) if isinstance(v, str)][: self.n]
                missing.append(2 * self.n - len(syn) - len(ant))
                if not syn and not ant:
                    plan.append((i, "synonym", stmt))  # the factoid checked itself (module docstring, step 4)
                plan.extend((i, "synonym", v) for v in syn)
                plan.extend((i, "antonym", v) for v in ant)
            statements = [p[2] for p in plan]
            evidence = [retr.retrieve(s) for s in statements]
            chunks = [e.text for e in retr.chunks_]
            usage = Usage()
            scope = getattr(getattr(judge, "client", None), "usage_scope", None)
            if not statements:
                judgements = []
            elif scope is not None:
                with scope() as u:
                    judgements = list(judge.judge(statements, evidence, query=query, chunks=chunks))
                usage.add(u)
            else:
                judgements = list(judge.judge(statements, evidence, query=query, chunks=chunks))
            if len(judgements) != len(statements):
                raise ValueError(f"judge returned {len(judgements)} judgements for {len(statements)} statements")
            if judgements and all(getattr(j, "error", None) for j in judgements):
                raise RuntimeError(f"every variant failed to verify: {judgements[0].error}")
            variants = [[] for _ in spans]
            for (i, kind, text), j in zip(plan, judgements):
                answer = metarag_answer(j, yes_at=self.yes_at, no_at=self.no_at)
                prob = getattr(j, "probability", None)
                prob = round(float(prob), 6) if isinstance(prob, (int, float)) and not isinstance(prob, bool) \
                    and math.isfinite(prob) else None
                variants[i].append(Variant(kind, text, answer, penalty(kind, answer), prob))
            factoids = []
            for (a, b, _), vs, miss in zip(spans, variants, missing):
                s_i = round(self._aggregate(vs), 6)
                ev = [e.to_dict() for e in retr.retrieve(output[a:b])]
                factoids.append(FactoidResult(a, b, output[a:b], s_i, s_i >= tau, vs, ev, miss))
        except Exception as exc:  # noqa: BLE001 - one answer's failure is its result, never a lost line
            return failed(exc)
        h = max((f.score for f in factoids), default=0.0)
        return VerificationResult(self.method, backend, h, h >= tau, self.tier(h, tau), tau=tau,
                                  factoids=factoids, usage=usage,
                                  latency_ms=round((time.perf_counter() - t0) * 1000, 3),
                                  warnings=_missing_warning(factoids, self.n))

    def verify_many(self, examples) -> list:
        """:meth:`verify` each example: dicts with ``context``, ``output`` and optional ``query``,
        ``task_type``, ``topics``, or objects with those attributes (such as :class:`evqual.data.Example`).

        >>> from evqual.verify import Judgement
        >>> class No:
        ...     name = "no"
        ...     def judge(self, statements, evidence, *, query="", chunks=()):
        ...         return [Judgement("NO_EVIDENCE", 0.0) for _ in statements]
        >>> [r.score for r in MetaRAG(judge=No(), n=2).verify_many([{"context": "x", "output": "Paris is big."}])]
        [0.5]
        """
        out = []
        for ex in examples:
            get = ex.get if isinstance(ex, dict) else (lambda key, default=None, _e=ex: getattr(_e, key, default))
            out.append(self.verify(context=get("context", ""), output=get("output"), query=get("query", "") or "",
                                   task_type=get("task_type"), topics=get("topics")))
        return out
