"""The verification stage's vocabulary: verdicts, evidence, judges and results.

Every backend (``rules``, ``llm``) speaks through two small protocols:

* a **judge** reads statements (claims, or MetaRAG's mutated factoids) with the
  evidence retrieved for each and returns one :class:`Judgement` per statement:
  a verdict, the probability that the statement is supported, and the evidence
  it was checked against;
* a **mutator** (MetaRAG only) turns a factoid into synonym and antonym variants.

Results (:class:`ClaimResult`, :class:`FactoidResult`, :class:`VerificationResult`)
hold JSON values only, so that ``to_dict`` round-trips through a JSONL line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "ANSWERS",
    "ClaimResult",
    "Evidence",
    "FactoidResult",
    "Judge",
    "Judgement",
    "MUTATION_KINDS",
    "Mutator",
    "PENALTIES",
    "Usage",
    "VERDICTS",
    "Variant",
    "VerificationResult",
    "penalty",
]

#: Claim verdicts of seed 003 (Stage 3).
VERDICTS = ("SUPPORTED", "REFUTED", "NO_EVIDENCE")
#: Answers of MetaRAG's verifier (seed 000, Algorithm 1).
ANSWERS = ("YES", "NO", "NOT SURE")
#: The two kinds of MetaRAG mutation.
MUTATION_KINDS = ("synonym", "antonym")
#: Seed 000, Table 1: penalty of a verifier answer for each mutation kind.
PENALTIES = {
    "synonym": {"YES": 0.0, "NOT SURE": 0.5, "NO": 1.0},
    "antonym": {"YES": 1.0, "NOT SURE": 0.5, "NO": 0.0},
}


def penalty(kind: str, answer: str) -> float:
    """Table 1 of seed 000: the hallucination penalty of ``answer`` to a ``kind`` variant.

    >>> penalty("synonym", "NO"), penalty("antonym", "NO"), penalty("antonym", "NOT SURE")
    (1.0, 0.0, 0.5)
    """
    try:
        return PENALTIES[kind][answer]
    except KeyError:
        raise ValueError(f"penalty: kind must be one of {MUTATION_KINDS} and answer one of {ANSWERS}; "
                         f"got kind={kind!r}, answer={answer!r}") from None


@dataclass(frozen=True)
class Evidence:
    """One evidence passage a statement was checked against.

    ``start``/``end`` are character offsets in the context as evqual joined it
    (:func:`evqual.data.chunk_context`), like :class:`evqual.results.Citation`;
    ``chunk`` is the chunk's index.  ``score`` is the retriever's ranking score:
    only its order within one answer means something (BM25 scores are not
    bounded, and on a context of one or two passages BM25's IDF is zero or
    negative; fused scores lie in [0, 1]).  ``overlap`` is the share of the
    statement's content words (Snowball stems) the passage holds, in [0, 1],
    comparable across answers; ``None`` where the passage was not retrieved
    (a judge named it).
    """

    chunk: int
    start: int
    end: int
    text: str
    score: float = 0.0
    overlap: float | None = None

    def to_dict(self) -> dict:
        """The JSON form written in a claim's or factoid's ``evidence``."""
        return {"chunk": self.chunk, "start": self.start, "end": self.end, "text": self.text, "score": self.score,
                "overlap": self.overlap}


@dataclass
class Judgement:
    """What a judge says of one statement.

    ``probability`` is the judge's probability that the statement is supported
    by the evidence; ``verdict`` is one of :data:`VERDICTS`; ``evidence`` the
    passages it was checked against, best first; ``reason`` a short code or
    rationale (a check name such as ``"number"``, or the LLM's words).
    ``answer`` is set by judges that answer MetaRAG's question directly
    (YES / NO / NOT SURE); ``None`` lets the caller derive it from the
    probability.
    """

    verdict: str
    probability: float
    evidence: list = field(default_factory=list)
    reason: str | None = None
    answer: str | None = None
    error: str | None = None


@runtime_checkable
class Judge(Protocol):
    """Checks statements against their evidence.

    ``judge(statements, evidence, query=..., chunks=...)`` takes parallel lists
    (``evidence[i]`` is the list of :class:`Evidence` retrieved for
    ``statements[i]``), the query, and all context chunks as text, and returns
    one :class:`Judgement` per statement, in order.  A judge never raises for
    one bad statement: it returns a judgement with ``error`` set and verdict
    ``NO_EVIDENCE``.
    """

    name: str

    def judge(self, statements, evidence, *, query: str = "", chunks=()) -> list: ...


@runtime_checkable
class Mutator(Protocol):
    """Makes MetaRAG variants: ``mutate(factoid, kind, n)`` returns up to ``n`` strings of ``kind``."""

    name: str

    def mutate(self, factoid: str, kind: str, n: int) -> list: ...


@dataclass
class Usage:
    """Cost accounting of one answer's verification (LLM calls and tokens; zero for ``rules``)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0

    def add(self, other: "Usage") -> "Usage":
        """Add ``other`` into this one (in place) and return self."""
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.latency_ms += other.latency_ms
        return self


@dataclass
class ClaimResult:
    """One claim of an answer and its verdict.

    ``start``/``end`` are character offsets in the answer; ``triple`` is the
    (subject, verb, object) of the spaCy backend or ``None``.  ``p_supported`` is
    the judge's probability that the claim is *supported* by the evidence, whatever
    the verdict: a ``REFUTED`` claim with ``p_supported`` 0.9 is one a
    contradiction check refuted although its words are well covered.
    """

    start: int
    end: int
    text: str
    verdict: str
    p_supported: float
    evidence: list = field(default_factory=list)
    reason: str | None = None
    triple: list | None = None


@dataclass
class Variant:
    """One mutated factoid, the verifier's answer and its Table 1 penalty.

    ``p_supported`` is the judge's probability that the variant is supported by the
    evidence (``None`` when the judge answers YES / NO / NOT SURE directly)."""

    kind: str
    text: str
    answer: str
    penalty: float
    p_supported: float | None = None


@dataclass
class FactoidResult:
    """One MetaRAG factoid: its span in the answer, its variants and its score ``S_i``.

    ``missing`` counts the variants asked for (``2N``) that the mutator could not make.
    """

    start: int
    end: int
    text: str
    score: float
    flagged: bool
    variants: list = field(default_factory=list)
    evidence: list = field(default_factory=list)
    missing: int = 0


@dataclass
class VerificationResult:
    """The verification of one answer.

    ``score`` is in [0, 1], higher is worse: the hallucination rate
    (1 - factual precision) for ``method="claims"``, ``H = max_i S_i`` for
    ``method="metarag"``.  ``tier`` is ``accept``, ``revise`` or ``reject``;
    ``error`` is set (and ``score`` is ``None``) when the answer could not be
    verified.  ``warnings`` says what makes the verdict less reliable
    (``{"code", "message", "details"}``; ``W003``: MetaRAG made fewer variants
    than it was asked for).
    """

    method: str
    backend: str
    score: float | None
    flagged: bool | None
    tier: str | None
    tau: float | None = None
    factual_precision: float | None = None
    claims: list = field(default_factory=list)
    factoids: list = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    error: str | None = None
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        """A JSON-ready dict (nested dataclasses become dicts)."""
        return asdict(self)
