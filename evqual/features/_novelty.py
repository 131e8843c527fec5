"""Families ``novelty`` and ``negation``.

``novelty`` (content the evidence does not contain):

* novel tokens: a sentence's distinct content tokens found neither in the
  context nor in the query, not even as another inflection (Snowball stems:
  "sources" matches "source", "opens" matches "open");
* novel bigram rate: share of the sentence's content-token bigrams (adjacent
  content tokens) absent from the context's bigrams;
* novel run: the longest run of consecutive novel content tokens, a proxy for
  an inserted phrase ("fleeing the scene", "Entertainer of the Year").

``negation`` (reversals against the nearest chunk, seed 002 section 4.5):

* mismatch: the sentence and its nearest chunk disagree on having a negation
  cue ("not", "no", "never", "without", "n't" ...) while the sentence shares
  at least half its tokens with that chunk;
* antonym: the sentence uses a word of :data:`ANTONYMS` whose opposite is in the
  nearest chunk while the word itself is not ("increased" against
  "decreased").
"""

from __future__ import annotations

import numpy as np

from ._checks import stem
from ._structure import has_negation
from ._reduce import _MAX, _SUM

__all__ = ["ANTONYMS", "is_novel", "query_stems", "novelty_sentence", "novelty_response", "negation_sentence", "negation_response"]

_PAIRS = [
    ("increase", "decrease"), ("increased", "decreased"), ("rise", "fall"), ("rose", "fell"), ("higher", "lower"),
    ("more", "less"), ("before", "after"), ("open", "closed"), ("allowed", "prohibited"), ("true", "false"),
    ("positive", "negative"), ("gain", "loss"), ("won", "lost"), ("win", "lose"), ("accept", "reject"),
    ("accepted", "rejected"), ("support", "oppose"), ("supported", "opposed"), ("legal", "illegal"),
    ("include", "exclude"), ("included", "excluded"), ("early", "late"), ("maximum", "minimum"),
    ("first", "last"), ("above", "below"), ("cheap", "expensive"), ("large", "small"), ("major", "minor"),
    ("strong", "weak"), ("best", "worst"), ("better", "worse"), ("male", "female"), ("husband", "wife"),
    ("mother", "father"), ("son", "daughter"), ("brother", "sister"), ("north", "south"), ("east", "west"),
    ("guilty", "innocent"), ("alive", "dead"), ("start", "end"), ("started", "ended"), ("arrived", "left"),
    ("buy", "sell"), ("bought", "sold"), ("agree", "disagree"), ("friendly", "rude"), ("quiet", "loud"),
    ("fast", "slow"), ("hot", "cold"), ("always", "never"), ("available", "unavailable"),
]
ANTONYMS: dict[str, frozenset] = {}
for a, b in _PAIRS:
    ANTONYMS.setdefault(a, set()).add(b)
    ANTONYMS.setdefault(b, set()).add(a)
ANTONYMS = {k: frozenset(v) for k, v in ANTONYMS.items()}


ATTRIBUTION_WORDS = frozenset({"passage", "passages", "according", "based", "provided", "mentioned", "context",
                               "document", "documents", "source", "sources", "step", "steps", "section"})
"""Words that point at the evidence rather than claim something ("According to Passage 2"): never novel."""


def query_stems(query_vocab) -> frozenset:
    """Snowball stems of the query's tokens."""
    return frozenset(stem(t) for t in query_vocab)


def is_novel(t: str, vocab, query_vocab, stems=frozenset(), q_stems=frozenset()) -> bool:
    """A content token is novel when neither it nor its Snowball stem is in the context or the query
    (``stems``, ``q_stems``: the stems of each); "opens" is not novel against "open".

    A single letter is never novel (the "m" of "7 a.m.", an initial).

    >>> is_novel("opens", {"open"}, set(), {"open"}), is_novel("closes", {"open"}, set(), {"open"})
    (False, True)
    >>> is_novel("m", {"open"}, set(), {"open"})
    False
    """
    if t in vocab or t in query_vocab or t in ATTRIBUTION_WORDS or len(t) < 2:
        return False
    st = stem(t)
    return st not in stems and st not in q_stems


def novelty_sentence(sent_tokens, vocab, query_vocab: set, bigrams: frozenset, stems=frozenset(),
                     q_stems=frozenset()) -> dict:
    n = len(sent_tokens)
    count, brate, run = np.zeros(n), np.zeros(n), np.zeros(n)
    for i, toks in enumerate(sent_tokens):
        novel_flags = [is_novel(t, vocab, query_vocab, stems, q_stems) for t in toks]
        count[i] = len({t for t, f in zip(toks, novel_flags) if f})
        best = cur = 0
        for f in novel_flags:
            cur = cur + 1 if f else 0
            best = max(best, cur)
        run[i] = best
        if len(toks) > 1:
            pairs = list(zip(toks, toks[1:]))
            brate[i] = sum(1 for p in pairs if p not in bigrams) / len(pairs)
    return {"sent.novelty.tokens.v1": count, "sent.novelty.bigram_rate.v1": brate, "sent.novelty.run.v1": run}


def novelty_response(sent: dict, sent_tokens) -> dict:
    pairs = np.array([max(0, len(t) - 1) for t in sent_tokens], dtype=np.float64)
    rate = sent["sent.novelty.bigram_rate.v1"]
    total = float(_SUM(pairs, None))
    run = sent["sent.novelty.run.v1"]
    return {"novelty.tokens.v1": float(_SUM(sent["sent.novelty.tokens.v1"], None)),
            "novelty.bigram_rate.v1": float(_SUM(rate * pairs, None) / total) if total else 0.0,
            "novelty.run.max.v1": float(_MAX(run, None)) if len(run) else 0.0}


def negation_sentence(output: str, sentences, sent_tokens, nearest, recall, index) -> dict:
    n = len(sentences)
    mismatch, antonym = np.zeros(n), np.zeros(n)
    nearest = nearest.tolist()
    for i, ((s, e), toks) in enumerate(zip(sentences, sent_tokens)):
        k = nearest[i]
        if k < 0:
            continue
        chunk_neg, chunk_toks = index.chunk_negation(k)
        sent_neg = has_negation(output, s, e)
        if sent_neg != chunk_neg and recall[i] >= 0.5:
            mismatch[i] = 1.0
        for t in toks:
            opp = ANTONYMS.get(t)
            if opp and t not in chunk_toks and any(o in chunk_toks for o in opp):
                antonym[i] = 1.0
                break
    return {"sent.negation.mismatch.v1": mismatch, "sent.negation.antonym.v1": antonym}


def negation_response(sent: dict) -> dict:
    m, a = sent["sent.negation.mismatch.v1"], sent["sent.negation.antonym.v1"]
    return {"negation.mismatch.v1": float(_MAX(m, None)) if len(m) else 0.0,
            "negation.antonym.v1": float(_MAX(a, None)) if len(a) else 0.0}
