"""Token-level features of an output, for the character-span tagger.

Every token of the output (a maximal run of letters and digits, as
:func:`evqual.text.token_spans` finds them, stop words included) gets a row
of :data:`TOKEN_FEATURE_NAMES`.  A token is *novel* when it is a content
token found neither in the context nor in the query; the window features let
a stop word inside an inserted phrase ("fled **the** scene") learn from its
neighbours.

The tagger (:class:`evqual.models.SpanTagger`) appends the row of the
token's sentence features to these.

Examples
--------
>>> from evqual.data import make_example
>>> from evqual.features._analysis import analyze
>>> ex = make_example(query="Where is Paris?", context="Paris is in France.", output="Paris is in Spain.")
>>> block = token_block(ex.output, analyze(ex, None))
>>> [ex.output[s:e] for s, e in block.offsets.tolist()]
['Paris', 'is', 'in', 'Spain']
>>> block.values[:, TOKEN_FEATURE_NAMES.index("tok.novel")].tolist()
[0.0, 0.0, 0.0, 1.0]
"""

from __future__ import annotations

import bisect
import math
import re
from typing import NamedTuple

import numpy as np

from ..text import STOP_WORDS
from ..text._tokens import TOKEN_PATTERN
from ._novelty import ANTONYMS

__all__ = ["TOKEN_FEATURE_NAMES", "TokenBlock", "token_block"]

_TOKEN_RE = re.compile(TOKEN_PATTERN)
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]\u2013\u2014\"]| - ")

TOKEN_FEATURE_NAMES = (
    "tok.content",            # not a stop word
    "tok.in_context",         # content token present in the context (stop words: 1)
    "tok.in_query",
    "tok.novel",              # content, in neither context nor query
    "tok.idf",                # smooth IDF over the chunks (novel: the unseen-term IDF), over ln(1 + C) + 1
    "tok.in_nearest",         # in the sentence's nearest chunk (stop words: 1)
    "tok.far_only",           # in the context but not in the nearest chunk
    "tok.novel_bigram_prev",  # (previous content token, token) is not a context bigram
    "tok.novel_bigram_next",
    "tok.novel_run",          # length of the run of novel content tokens holding the token
    "tok.window3",            # share of novel tokens within 3 tokens either side
    "tok.window8",
    "tok.dist_novel",         # tokens to the nearest novel token (capped at 20; 0 for a novel token)
    "tok.number",             # inside a number mention
    "tok.number_unsupported",
    "tok.entity_unsupported",  # inside an entity mention absent from the context
    "tok.capitalised",        # upper-case initial, not sentence-initial
    "tok.digit",
    "tok.antonym",            # its opposite is in the nearest chunk and it is not
    "tok.pos_sentence",       # relative position in its sentence
    "tok.pos_response",       # relative position of its sentence in the output
    "tok.length",             # characters, capped at 20
    "tok.clause_novel",       # share of novel content tokens in the token's clause
    "tok.clause_near",        # share of the clause's content tokens found in the nearest chunk
    "tok.clause_len",         # tokens in the clause, capped at 40
    "tok.clause_pos",         # relative position of the clause in its sentence
)
_IDX = {n: i for i, n in enumerate(TOKEN_FEATURE_NAMES)}


class TokenBlock(NamedTuple):
    """Token features of one output."""

    values: np.ndarray    # (n_tokens, len(TOKEN_FEATURE_NAMES)) float32
    offsets: np.ndarray   # (n_tokens, 2) int64, character offsets in the output
    sentence: np.ndarray  # (n_tokens,) int64, the sentence holding each token
    labels: np.ndarray | None = None  # (n_tokens,) 0/1 when spans are known
    gold: tuple | None = None  # merged gold character spans ((start, end), ...) when known


def _inside(offsets: list, mentions) -> np.ndarray:
    """1 for tokens overlapping any ``mention`` (objects with start/end)."""
    out = np.zeros(len(offsets), dtype=np.float32)
    if not mentions:
        return out
    starts = [s for s, _ in offsets]
    for m in mentions:
        i = max(bisect.bisect_right(starts, m.start) - 1, 0)
        while i < len(offsets) and offsets[i][0] < m.end:
            if offsets[i][1] > m.start:
                out[i] = 1.0
            i += 1
    return out


def token_block(output: str, analysis, spans=None) -> TokenBlock:
    """Token features of ``output`` from its :class:`~evqual.features._analysis.Analysis`.

    Parameters
    ----------
    output : str
    analysis : Analysis
    spans : iterable of (start, end), optional
        Gold character spans; a token is labelled 1 when it overlaps one.
    """
    index = analysis.index
    vocab, qv = index.vocab, analysis.query_vocab
    bigrams = index.bigrams
    C = index.n_chunks
    idf_scale = math.log(1.0 + C) + 1.0 if C else 1.0
    nearest = analysis.match.nearest.tolist()
    numbers, unsup_numbers = analysis.numbers
    unsup_ents = analysis.unsupported_entities
    sentences = analysis.offsets
    n_sent = max(len(sentences), 1)
    stop = STOP_WORDS

    rows: list[np.ndarray] = []
    all_offsets: list[tuple[int, int]] = []
    sent_of: list[int] = []
    for i, (s, e) in enumerate(sentences):
        toks = [(m.start(), m.end(), m.group()) for m in _TOKEN_RE.finditer(output, s, e)]
        n = len(toks)
        if not n:
            continue
        k = nearest[i] if i < len(nearest) else -1
        near = index.chunk_negation(k)[1] if k >= 0 else set()
        V = np.zeros((n, len(TOKEN_FEATURE_NAMES)), dtype=np.float32)
        raws = [t for _, _, t in toks]
        low = [t.lower() for t in raws]
        content = [t not in stop for t in low]
        tids = [vocab.get(t) if c else None for t, c in zip(low, content)]
        novel = [c and tid is None and t not in qv for t, c, tid in zip(low, content, tids)]
        V[:, 0] = content
        V[:, 1] = [(tid is not None) if c else True for c, tid in zip(content, tids)]
        V[:, 2] = [t in qv for t in low]
        V[:, 3] = novel
        idf, idf_novel = index.idf_tfidf, index.idf_tfidf_novel
        V[:, 4] = [((idf[tid] if tid is not None else idf_novel) / idf_scale) if c else 0.0
                   for c, tid in zip(content, tids)]
        in_near = [(t in near) if c else True for t, c in zip(low, content)]
        V[:, 5] = in_near
        V[:, 6] = [c and tid is not None and not nr for c, tid, nr in zip(content, tids, in_near)]
        content_pos = [j for j, c in enumerate(content) if c]
        for a, b in zip(content_pos, content_pos[1:]):
            V[b, 7] = (low[a], low[b]) not in bigrams
        for j in content_pos:
            opp = ANTONYMS.get(low[j])
            if opp and not in_near[j] and any(o in near for o in opp):
                V[j, 18] = 1.0
        V[1:, 16] = [r[:1].isupper() for r in raws[1:]]
        V[:, 17] = [not r.isalpha() for r in raws]
        V[:, 19] = np.arange(n) / max(n - 1, 1)
        V[:, 21] = np.minimum([len(r) for r in raws], 20)
        # next-bigram novelty: the previous-bigram flag of the next content token
        for a, b in zip(content_pos, content_pos[1:]):
            V[a, 8] = V[b, 7]
        # runs of novel content tokens (stop words neither break nor extend a run)
        run_start = 0
        while run_start < len(content_pos):
            run_end = run_start
            if novel[content_pos[run_start]]:
                while run_end + 1 < len(content_pos) and novel[content_pos[run_end + 1]]:
                    run_end += 1
                length = run_end - run_start + 1
                for p in content_pos[run_start:run_end + 1]:
                    V[p, 9] = length
            run_start = run_end + 1
        nov = np.asarray(novel, dtype=np.float32)
        csum = np.concatenate([[0.0], np.cumsum(nov)])
        idx = np.arange(n)
        for col, w in ((10, 3), (11, 8)):
            lo, hi = np.maximum(idx - w, 0), np.minimum(idx + w + 1, n)
            V[:, col] = (csum[hi] - csum[lo]) / (hi - lo)
        if nov.any():
            where = np.flatnonzero(nov)
            pos = np.searchsorted(where, idx)
            left = np.where(pos > 0, idx - where[np.maximum(pos - 1, 0)], 99)
            right = np.where(pos < len(where), where[np.minimum(pos, len(where) - 1)] - idx, 99)
            V[:, 12] = np.minimum(np.minimum(np.abs(left), np.abs(right)), 20)
        else:
            V[:, 12] = 20
        offs = [(a, b) for a, b, _ in toks]
        V[:, 13] = _inside(offs, numbers[i] if i < len(numbers) else ())
        V[:, 14] = _inside(offs, unsup_numbers[i] if i < len(unsup_numbers) else ())
        V[:, 15] = _inside(offs, unsup_ents[i] if i < len(unsup_ents) else ())
        V[:, 20] = i / max(n_sent - 1, 1)
        # clauses: token runs between punctuation breaks (commas, semicolons, brackets, dashes, quotes)
        clause = np.zeros(n, dtype=np.int64)
        for j in range(1, n):
            clause[j] = clause[j - 1] + (_CLAUSE_BREAK.search(output, toks[j - 1][1], toks[j][0]) is not None)
        n_clauses = int(clause[-1]) + 1
        cont = np.asarray(content, dtype=np.float64)
        c_total = np.bincount(clause, weights=cont, minlength=n_clauses)
        c_novel = np.bincount(clause, weights=nov.astype(np.float64), minlength=n_clauses)
        c_near = np.bincount(clause, weights=cont * np.asarray(in_near, dtype=np.float64), minlength=n_clauses)
        safe = np.maximum(c_total, 1.0)
        V[:, 22] = (c_novel / safe)[clause]
        V[:, 23] = np.where(c_total > 0, c_near / safe, 1.0)[clause]
        V[:, 24] = np.minimum(np.bincount(clause, minlength=n_clauses), 40)[clause]
        V[:, 25] = clause / max(n_clauses - 1, 1)
        rows.append(V)
        all_offsets.extend(offs)
        sent_of.extend([i] * n)
    values = np.vstack(rows) if rows else np.zeros((0, len(TOKEN_FEATURE_NAMES)), dtype=np.float32)
    offsets = np.asarray(all_offsets, dtype=np.int64).reshape(-1, 2)
    labels = gold = None
    if spans is not None:
        gold = tuple((int(s), int(e)) for s, e in spans)
        labels = np.zeros(len(offsets), dtype=np.int8)
        for s, e in gold:
            labels[(offsets[:, 0] < e) & (offsets[:, 1] > s)] = 1
    return TokenBlock(values, offsets, np.asarray(sent_of, dtype=np.int64), labels, gold)
