"""One pass over an example that computes every content feature and keeps the evidence.

:func:`analyze` returns an :class:`Analysis`: response-level and
sentence-level feature values plus what an explanation needs (sentence
offsets, nearest chunk, unsupported numbers and entities).  The featurizer
turns analyses into matrices; explanations read them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .._deadline import check_deadline
from .._gcpause import gc_paused
from ..evidence import CLAIM_FEATURES, EvidenceEngine
from ..text import TextWords, sentence_claims, split_sentences
from ._checks import checks_response, claim_checks
from ._drift import (
    drift_response,
    drift_sentence,
    number_conflicts,
    query_number_values,
    sentence_entities,
    sentence_numbers,
)
from ._lexical import (
    chain_features,
    coverage_features,
    ecs,
    semantic_features,
    sentence_lexical,
    support_features,
)
from ._similarity import ContextCache, content_split, split_tokens
from ._novelty import negation_response, negation_sentence, novelty_response, novelty_sentence, query_stems
from ._structure import structure_response, structure_sentence
from ._surface import length_response, length_sentence, refusal_response, refusal_sentence, task_features

__all__ = ["Analysis", "SentenceEvidence", "analyze", "analyze_many", "claim_sentences"]


def _query_tokens(query: str):
    """Queries repeat across responses to one source; tokenize each once (up to :data:`_QUERY_CACHED_CHARS`
    characters: a long query is not kept 4,096 times)."""
    if len(query) <= _QUERY_CACHED_CHARS:
        return _query_tokens_cached(query)
    return split_tokens(query)


_QUERY_CACHED_CHARS = 4000
"""The longest query whose reading the features keep, as the engine keeps its own (issue 41, session 14: the
4,096 queries kept had no bound on their length, so that a service sent long queries could keep 4,096 of
them whole, with their tokens)."""


@lru_cache(maxsize=4096)
def _query_tokens_cached(query: str):
    return split_tokens(query)


@dataclass
class SentenceEvidence:
    """What the analysis found for one output sentence."""

    start: int
    end: int
    nearest_chunk: int
    unsupported_numbers: list = field(default_factory=list)
    unsupported_entities: list = field(default_factory=list)
    refusal: bool = False


class Analysis:
    """Features and evidence of one example.

    Attributes
    ----------
    response : dict
        Response-level feature name to value (content families).
    sentence : dict
        Sentence-level feature name to an array over sentences.
    sentences : list of SentenceEvidence
        Built on first access (the feature matrix does not need it).
    match : SentenceMatch
        Sentence-versus-chunk measures.
    index : ContextIndex
        The context's token statistics.
    query_vocab : set of str
        The query's content tokens.
    """

    __slots__ = ("response", "sentence", "match", "index", "query_vocab", "_parts", "_sentences")

    def __init__(self, response: dict, sentence: dict, match, parts, index=None, query_vocab=frozenset()):
        self.response = response
        self.sentence = sentence
        self.match = match
        self.index = index
        self.query_vocab = query_vocab
        self._parts = parts
        self._sentences = None

    @property
    def sentences(self) -> list:
        if self._sentences is None:
            offsets, unsup_numbers, unsup_ents, refusal = self._parts[:4]
            nearest = self.match.nearest.tolist()
            self._sentences = [
                SentenceEvidence(start=s, end=e, nearest_chunk=nearest[i],
                                 unsupported_numbers=unsup_numbers[i], unsupported_entities=unsup_ents[i],
                                 refusal=bool(refusal[i]))
                for i, (s, e) in enumerate(offsets)
            ]
        return self._sentences

    @property
    def offsets(self) -> list[tuple[int, int]]:
        """``(start, end)`` of each output sentence."""
        return self._parts[0]

    @property
    def numbers(self) -> tuple[list, list]:
        """Per sentence: (number mentions, unsupported number mentions)."""
        return self._parts[4], self._parts[1]

    @property
    def unsupported_entities(self) -> list:
        """Per sentence: entity mentions with a content token absent from the context."""
        return self._parts[2]

    @property
    def reading(self):
        """The evidence engine's :class:`~evqual.evidence.Reading` of the output (claims, evidence, differences)."""
        return self._parts[6]

    @property
    def findings(self) -> list:
        """Per sentence: the :class:`~evqual.features._checks.Finding` s of its claims (``check`` family)."""
        return self._parts[5]

    def novel_tokens(self, i: int) -> list[str]:
        """Content tokens of sentence ``i`` absent from the whole context."""
        return self.match.novel_tokens[i]


_SIGN = None
_RESP_NAMES = ["evidence." + n for n in CLAIM_FEATURES]
_SENT_NAMES = ["sent.evidence." + n for n in CLAIM_FEATURES]


_TRUE = np.ones(1, dtype=bool)


def _evidence_features(reading, sentences):
    """Response and sentence features of the ``evidence`` family from an engine :class:`~evqual.evidence.Reading`:
    the max over the claims (for the features of :data:`~evqual.features.EVIDENCE_MIN`, the min).

    The min of a column is taken as the max of its negation (so one reduction serves both), and a sentence's
    claims are one run of rows without a sort when the claims come in order, as the engine gives them."""
    global _SIGN
    if _SIGN is None:
        from ._registry import EVIDENCE_MIN

        _SIGN = np.array([-1.0 if n in EVIDENCE_MIN else 1.0 for n in CLAIM_FEATURES])
    claims = reading.claims
    k = len(CLAIM_FEATURES)
    resp = {"evidence.claims.v1": float(len(claims))}
    n_sent = len(sentences)
    S = np.zeros((n_sent, k))
    if not claims:
        resp.update(zip(_RESP_NAMES, [0.0] * k))
        return resp, dict(zip(_SENT_NAMES, S.T))
    M = np.concatenate([c.features for c in claims]).reshape(len(claims), k)  # (np.vstack's rows, in C)
    M *= _SIGN
    resp.update(zip(_RESP_NAMES, (M.max(axis=0) * _SIGN).tolist()))
    if n_sent:
        # each sentence's claims as one run of rows (a stable sort when claims come out of order keeps their
        # order within a sentence), a sentence's row the max (min) of its run
        owner = claim_sentences(claims, sentences)
        if len(owner) > 1 and (owner[1:] < owner[:-1]).any():
            order = np.argsort(owner, kind="stable")
            owner, M = owner[order], M[order]
        if len(owner) == 1:
            S[owner[0]] = M[0] * _SIGN
        else:
            starts = np.concatenate((_TRUE, owner[1:] != owner[:-1])).nonzero()[0]  # (np.r_ and
            # np.flatnonzero are Python functions around these calls)
            S[owner[starts]] = np.maximum.reduceat(M, starts, axis=0) * _SIGN
    return resp, dict(zip(_SENT_NAMES, S.T))


def claim_sentences(claims, sentences) -> np.ndarray:
    """The index of the sentence holding each claim's start (claims and sentences in output order)."""
    starts = np.asarray([s for s, _ in sentences], dtype=np.int64)
    if not len(starts):
        return np.zeros(len(claims), dtype=np.int64)
    at = np.asarray([c.start for c in claims], dtype=np.int64)
    return np.maximum(starts.searchsorted(at, side="right") - 1, 0)


def analyze(example, entities, cache: ContextCache | None = None, claims=None, engine=None) -> Analysis:
    """Analyse one example.

    Parameters
    ----------
    example : Example
    entities : list of Entity or None
        Entity mentions of ``example.output`` from the featurizer's backend;
        ``None`` skips the entity family (its features are 0).
    cache : ContextCache, optional
        Re-uses context indexes across examples.
    claims : list of (start, end), optional
        Claim units of the output from the spaCy backend; ``None`` cuts
        claims with the rules backend.
    """
    check_deadline()
    cache = cache if cache is not None else ContextCache(maxsize=1)
    index = cache.get(example)
    check_deadline()
    output = example.output
    # the answer's words, found once: every family, the checks and the engine read them (issue 41)
    words = TextWords(output)
    sentences = words.sentences
    sent_tokens, sent_all = [], []
    for s, e in sentences:
        toks, n_all = content_split(words.lower_tokens(s, e))
        sent_tokens.append(toks)
        sent_all.append(n_all)
    match = index.match(sent_tokens)
    check_deadline()
    q_toks, n_query = _query_tokens(example.query or "")
    q_set = set(q_toks)

    # every letter/digit of the output lies in some sentence, so the output's
    # tokens are exactly the sentences' tokens
    out_set = set().union(*sent_tokens) if sent_tokens else set()
    n_out = sum(sent_all)

    numbers, unsup_numbers = sentence_numbers(output, sentences, index, query_number_values(example.query or ""),
                                              words=words)
    conflicts = number_conflicts(unsup_numbers, numbers, match.nearest, index)
    if entities is None:
        ents = [[] for _ in sentences]
        unsup_ents = [[] for _ in sentences]
    else:
        known = index.vocab if not index.aliases else index.aliases.union(index.vocab)
        ents, unsup_ents = sentence_entities(entities, sentences, known)
    drift_s = drift_sentence(numbers, unsup_numbers, conflicts, ents, unsup_ents)
    refusal = refusal_sentence(output, sentences, words)
    ecs_values = ecs(match, drift_s["sent.number.new_rate.v2"], drift_s["sent.entity.unsupported_rate.v1"])
    fields, field_keys = index.fields
    struct_s = structure_sentence(output, sentences, sent_tokens, fields, field_keys,
                                  index.field_lookup if fields else None)
    novelty_s = novelty_sentence(sent_tokens, index.vocab, q_set, index.bigrams, index.stem_vocab,
                                 query_stems(q_set))
    negation_s = negation_sentence(output, sentences, sent_tokens, match.nearest, match.recall, index)
    check_deadline()
    # the rules' claim units, cut once for the checks and the engine (what each would cut by itself)
    units = [sentence_claims(output, s, e) for s, e in sentences] if claims is None else None
    check_s, findings = claim_checks(output, sentences, index.evidence_units, example.query or "", claims,
                                     units=units, words=words)
    engine = engine if engine is not None else EvidenceEngine(cache_size=1)
    claim_spans = claims if claims is not None else [u for us in units for u in us]
    if index.chunk_texts:
        reading = engine.read(output, index.chunk_texts, example.query or "", claims=claim_spans, words=words,
                              index=index.evidence_index)
    else:  # (no chunk: the engine reads the context as one)
        reading = engine.read(output, [example.context], example.query or "", claims=claim_spans, words=words)
    evidence_r, evidence_s = _evidence_features(reading, sentences)
    if not index.kept:  # (a context the cache does not keep: its two largest views are not needed again)
        index.release_readers()

    response: dict = {}
    cov = coverage_features(out_set, q_set, index.vocab)
    response.update(cov)
    response.update(support_features(match))
    response.update(semantic_features(match, cov["coverage.output_context.v1"]))
    response.update(chain_features(match, ecs_values))
    response.update(drift_response(drift_s))
    response.update(refusal_response(refusal))
    response.update(structure_response(struct_s))
    response.update(novelty_response(novelty_s, sent_tokens))
    response.update(negation_response(negation_s))
    response.update(checks_response(check_s))
    response.update(evidence_r)
    response.update(length_response(n_out, index.n_tokens, n_query, len(sentences), index.n_chunks))
    response.update(task_features(example.task_type))

    n = len(sentences)
    sentence: dict = {}
    sentence.update(sentence_lexical(match, ecs_values))
    sentence.update(drift_s)
    sentence["sent.refusal.v1"] = refusal
    sentence.update(struct_s)
    sentence.update(novelty_s)
    sentence.update(negation_s)
    sentence.update(check_s)
    sentence.update(evidence_s)
    sentence.update(length_sentence(np.asarray(sent_all, dtype=np.float64), index.n_chunks))
    for name, value in task_features(example.task_type, prefix="sent.").items():
        sentence[name] = np.full(n, value)

    return Analysis(response, sentence, match, (sentences, unsup_numbers, unsup_ents, refusal, numbers, findings,
                                                 reading),
                    index=index, query_vocab=q_set)


def analyze_many(examples, extractor=None, cache: ContextCache | None = None, progress=None,
                 batch_size: int = 256, claim_splitter=None, engine: EvidenceEngine | None = None):
    """Analyse examples in order; entities come from ``extractor`` and claim units from ``claim_splitter``
    (``None``: the rules backend) batch by batch.  ``cache`` holds the contexts' analyses, the evidence
    engine's reading included (a fresh one by default; pass a long-lived one to reuse them across calls);
    ``engine`` reads the answers (its own cache holds only a context without chunks)."""
    examples = list(examples)
    cache = cache if cache is not None else ContextCache()
    engine = engine if engine is not None else EvidenceEngine(cache_size=1)
    out = []
    for b in range(0, len(examples), batch_size):
        batch = examples[b:b + batch_size]
        if extractor is not None:
            entities = extractor.extract_batch([ex.output for ex in batch])
        else:
            entities = [None] * len(batch)
        if claim_splitter is not None:
            outs = [ex.output for ex in batch]
            claims = claim_splitter.split_batch(outs, [split_sentences(o) for o in outs])
        else:
            claims = [None] * len(batch)
        with gc_paused():  # the analysis makes no reference cycles: collections would find nothing
            for ex, ents, cl in zip(batch, entities, claims):
                out.append(analyze(ex, ents, cache, cl, engine=engine))
        if progress is not None:
            progress(len(out))
    return out
