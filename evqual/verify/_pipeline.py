"""Claim-level verification of whole answers (seed 003, Stages 1 and 3).

:class:`ClaimVerifier` runs, for one answer: claims (:class:`ClaimExtractor`)
-> evidence per claim (:class:`EvidenceRetriever`) -> a judge (``rules`` or
``llm``) -> verdicts -> factual precision, hallucination rate and tier.

* A judge's ``REFUTED`` stands, and so does a ``SUPPORTED`` the judge decided
  by a check (``answer="YES"``: the rules judge's negated clause whose value
  the evidence states otherwise); otherwise a claim is ``SUPPORTED`` when the
  judge's probability reaches ``tau`` and ``NO_EVIDENCE`` below it (so one
  ``tau`` applies to every backend; seed 003's default 0.75).
* factual precision = supported claims / all claims; the answer's ``score``
  is the hallucination rate ``1 - factual precision``.
* tiers on the factual precision: ``accept`` at >= 0.85, ``revise`` at
  >= 0.60, ``reject`` below (seed 003; configurable); ``flagged`` means the
  tier is not ``accept``.
* An answer without a factual claim (a refusal, a question) has score 0,
  factual precision ``None`` and tier ``accept``.
"""

from __future__ import annotations

import time

from ._claims import ClaimExtractor
from ._evidence import EvidenceRetriever
from ._types import ClaimResult, Evidence, Usage, VerificationResult

__all__ = ["ClaimVerifier", "DEFAULT_TIERS", "make_judge", "tier_of", "BACKENDS"]

DEFAULT_TIERS = (0.85, 0.60)
BACKENDS = ("rules", "llm")


def tier_of(factual_precision, tiers=DEFAULT_TIERS) -> str:
    """``accept`` / ``revise`` / ``reject`` of a factual precision (``None``: accept).

    >>> tier_of(0.9), tier_of(0.7), tier_of(0.5), tier_of(None)
    ('accept', 'revise', 'reject', 'accept')
    """
    accept, revise = tiers
    if factual_precision is None or factual_precision >= accept:
        return "accept"
    return "revise" if factual_precision >= revise else "reject"


def make_judge(backend: str = "rules", *, mode: str = "claim", client=None, **client_options):
    """The judge of a backend: :class:`RulesJudge` or the LLM judge (``client`` or ``client_options``
    such as ``base_url``/``model``/``api_key`` build an :class:`LLMClient`)."""
    if backend == "rules":
        from ._rules import RulesJudge

        return RulesJudge().load()  # a model that fails its audit is refused here, once, not per answer
    if backend == "llm":
        from ._llm import LLMClient
        from ._llm_backend import LLMJudge

        return LLMJudge(client if client is not None else LLMClient(**client_options), mode=mode)
    raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")


def _validate_tiers(tiers):
    ok = (isinstance(tiers, (tuple, list)) and len(tiers) == 2
          and all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in tiers)
          and 0.0 <= tiers[1] <= tiers[0] <= 1.0)
    if not ok:
        raise ValueError(f"tiers must be (accept, revise) with 0 <= revise <= accept <= 1; got {tiers!r}")


class ClaimVerifier:
    """Verify answers claim by claim (see the module docstring).

    Parameters
    ----------
    judge : Judge, optional
        Default: the ``rules`` judge (:class:`RulesJudge`, the shipped claim model).
    extractor : ClaimExtractor, optional
        Default ``ClaimExtractor(backend="rules")``.
    retriever : {"sparse", "dense", "hybrid", "rrf"} or EvidenceRetriever, default="sparse"
    k : int, default=3
        Evidence passages per claim.
    tau : float, default=0.75
    tiers : (float, float), default=(0.85, 0.60)

    Examples
    --------
    >>> v = ClaimVerifier()
    >>> ctx = ["The Golden Gate Bridge opened in 1937 after four years of construction. It is 2.7 km long.",
    ...        "Paris is the capital of France."]
    >>> r = v.verify(query="Tell me about the bridge.", context=ctx,
    ...              output="The bridge opened in 1937 after four years of construction. It is 2.7 km long.")
    >>> r.score, r.tier, [c.verdict for c in r.claims]
    (0.0, 'accept', ['SUPPORTED', 'SUPPORTED'])
    >>> r = v.verify(query="Tell me about the bridge.", context=ctx,
    ...              output="The bridge opened in 1932 after four years of construction. It is 2.7 km long.")
    >>> r.score, r.flagged, r.tier, r.claims[0].verdict, r.claims[0].reason
    (0.5, True, 'reject', 'REFUTED', "date: '1932' vs '1937'")
    >>> r.claims[0].evidence[0]["chunk"]
    0
    """

    method = "claims"

    def __init__(self, *, judge=None, extractor=None, retriever="sparse", k: int = 3, tau: float = 0.75,
                 tiers=DEFAULT_TIERS):
        self.judge = judge
        self.extractor = extractor
        self.retriever = retriever
        self.k = k
        self.tau = tau
        self.tiers = tiers

    def _parts(self):
        if self.judge is None:
            from ._rules import RulesJudge

            self.judge = RulesJudge()
        if self.extractor is None:
            self.extractor = ClaimExtractor()
        if not isinstance(self.tau, (int, float)) or isinstance(self.tau, bool) or not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau must be a number in [0, 1]; got {self.tau!r}")
        _validate_tiers(self.tiers)
        return self.judge, self.extractor

    def _retriever(self):
        if isinstance(self.retriever, EvidenceRetriever):
            return self.retriever
        return EvidenceRetriever(k=self.k, method=self.retriever)

    def verify(self, *, context, output: str, query: str = "", task_type: str | None = None,
               claims=None) -> VerificationResult:
        """Verify one answer; never raises for bad content (the error is in the result)."""
        judge, extractor = self._parts()  # built once, on the first answer: not part of its latency
        t0 = time.perf_counter()
        backend = getattr(judge, "name", type(judge).__name__)
        try:
            if not isinstance(output, str):
                raise TypeError(f"output must be a string; got {type(output).__name__}")
            retr = self._retriever().fit(context, task_type)
            claims = extractor.extract(output) if claims is None else claims
            evidence = [retr.retrieve(c.text) for c in claims]
            usage = Usage()
            scope = getattr(getattr(judge, "client", None), "usage_scope", None)
            if scope is not None:
                with scope() as u:
                    judgements = judge.judge([c.text for c in claims], evidence, query=query or "",
                                             chunks=[e.text for e in retr.chunks_])
                usage.add(u)
            else:
                judgements = judge.judge([c.text for c in claims], evidence, query=query or "",
                                         chunks=[e.text for e in retr.chunks_])
        except Exception as exc:  # noqa: BLE001 - one answer's failure is its result, never a lost line
            return VerificationResult(self.method, str(backend), None, None, None, tau=self.tau,
                                      latency_ms=round((time.perf_counter() - t0) * 1000, 3),
                                      error=f"{type(exc).__name__}: {exc}")
        results, errors = [], []
        for c, j in zip(claims, judgements):
            if j.error:
                errors.append(j.error)
            verdict = j.verdict if j.verdict == "REFUTED" or (j.verdict == "SUPPORTED" and j.answer == "YES") \
                else ("SUPPORTED" if j.probability >= self.tau else "NO_EVIDENCE")  # a check decides either way
            if j.error:
                verdict = "NO_EVIDENCE"
            ev = [self._located(e, retr) for e in j.evidence]
            results.append(ClaimResult(c.start, c.end, c.text, verdict, round(float(j.probability), 6),
                                       [e.to_dict() for e in ev], j.reason or j.error,
                                       list(c.triple) if c.triple else None))
        n = len(results)
        fp = sum(r.verdict == "SUPPORTED" for r in results) / n if n else None
        score = round(1.0 - fp, 6) if fp is not None else 0.0
        tier = tier_of(fp, self.tiers)
        error = None
        if errors and len(errors) == n:
            error = f"every claim failed to verify: {errors[0]}"
        return VerificationResult(self.method, str(backend), score if error is None else None,
                                  (tier != "accept") if error is None else None, tier if error is None else None,
                                  tau=self.tau, factual_precision=None if fp is None else round(fp, 6),
                                  claims=results, usage=usage,
                                  latency_ms=round((time.perf_counter() - t0) * 1000, 3), error=error)

    @staticmethod
    def _located(e: Evidence, retr) -> Evidence:
        """An evidence item a judge named by chunk only gets the chunk's offsets in the context."""
        if e.start >= 0 or not 0 <= e.chunk < len(retr.chunks_):
            return e
        c = retr.chunks_[e.chunk]
        return Evidence(c.chunk, c.start, c.end, c.text, e.score, e.overlap)



