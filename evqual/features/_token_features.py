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
from ..text import TOKEN_PATTERN
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


def _segment_window_share(flags: np.ndarray, seg_start: np.ndarray, seg_end: np.ndarray, w: int) -> np.ndarray:
    """Share of ``flags`` within ``w`` positions either side, not crossing segment bounds."""
    idx = np.arange(len(flags))
    csum = np.concatenate([[0.0], np.cumsum(flags, dtype=np.float64)])
    lo, hi = np.maximum(idx - w, seg_start), np.minimum(idx + w + 1, seg_end)
    return (csum[hi] - csum[lo]) / (hi - lo)


def token_block(output: str, analysis, spans=None, *, only_sentences=None) -> TokenBlock:
    """Token features of ``output`` from its :class:`~evqual.features._analysis.Analysis`.

    Parameters
    ----------
    output : str
    analysis : Analysis
    spans : iterable of (start, end), optional
        Gold character spans; a token is labelled 1 when it overlaps one.
    only_sentences : boolean array, optional
        Only the tokens of these sentences (every feature stays within a
        sentence, so their values do not change).
    """
    # every feature is computed over the whole output at once; windows, runs and clauses stay
    # within a sentence (segment bounds per token)
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

    starts, ends, raws, sent = [], [], [], []
    keep = only_sentences
    for i, (s, e) in enumerate(analysis.offsets):
        if keep is not None and not keep[i]:
            continue
        for m in _TOKEN_RE.finditer(output, s, e):
            starts.append(m.start())
            ends.append(m.end())
            raws.append(m.group())
            sent.append(i)
    n = len(raws)
    width = len(TOKEN_FEATURE_NAMES)
    if not n:
        labels = gold = None
        if spans is not None:
            gold = tuple((int(s), int(e)) for s, e in spans)
            labels = np.zeros(0, dtype=np.int8)
        return TokenBlock(np.zeros((0, width), dtype=np.float32), np.zeros((0, 2), dtype=np.int64),
                          np.zeros(0, dtype=np.int64), labels, gold)
    sent_a = np.asarray(sent, dtype=np.int64)
    # per-token segment bounds (first token index of its sentence, one past its last)
    first = np.flatnonzero(np.r_[True, sent_a[1:] != sent_a[:-1]])
    seg_len = np.diff(np.r_[first, n])
    seg_start = np.repeat(first, seg_len)
    seg_end = seg_start + np.repeat(seg_len, seg_len)
    idx = np.arange(n)

    near_sets = {}
    for i in set(sent):
        k = nearest[i] if i < len(nearest) else -1
        near_sets[i] = index.chunk_negation(k)[1] if k >= 0 else set()
    low = [t.lower() for t in raws]
    content = [t not in stop for t in low]
    tids = [vocab.get(t) if c else None for t, c in zip(low, content)]
    # a conditional, not `c and ...`: Cython miscompiles an `and` of a Python object and C booleans (setup.py)
    novel = [(tid is None and t not in qv) if c else False for t, c, tid in zip(low, content, tids)]
    in_near = [(t in near_sets[i]) if c else True for t, c, i in zip(low, content, sent)]
    idf, idf_novel = index.idf_tfidf, index.idf_tfidf_novel

    V = np.zeros((n, width), dtype=np.float32)
    V[:, 0] = content
    V[:, 1] = [(tid is not None) if c else True for c, tid in zip(content, tids)]
    V[:, 2] = [t in qv for t in low]
    V[:, 3] = novel
    V[:, 4] = [((idf[tid] if tid is not None else idf_novel) / idf_scale) if c else 0.0
               for c, tid in zip(content, tids)]
    V[:, 5] = in_near
    V[:, 6] = [(tid is not None and not nr) if c else False for c, tid, nr in zip(content, tids, in_near)]
    # bigram novelty between consecutive content tokens of one sentence
    cpos = [j for j, c in enumerate(content) if c]
    for a, b in zip(cpos, cpos[1:]):
        if sent[a] == sent[b] and (low[a], low[b]) not in bigrams:
            V[b, 7] = 1.0
            V[a, 8] = 1.0
    for j in cpos:
        opp = ANTONYMS.get(low[j])
        if opp and not in_near[j] and any(o in near_sets[sent[j]] for o in opp):
            V[j, 18] = 1.0
    V[:, 16] = [r[:1].isupper() for r in raws]
    V[first, 16] = 0.0
    V[:, 17] = [not r.isalpha() for r in raws]
    V[:, 19] = (idx - seg_start) / np.maximum(seg_end - seg_start - 1, 1)
    V[:, 21] = np.minimum([e - s for s, e in zip(starts, ends)], 20)
    # runs of novel content tokens within a sentence (stop words neither break nor extend a run)
    if cpos:
        cp = np.asarray(cpos)
        nov_c = np.asarray([novel[j] for j in cpos], dtype=bool)
        sent_c = sent_a[cp]
        brk = np.r_[True, (~nov_c[1:]) | (~nov_c[:-1]) | (sent_c[1:] != sent_c[:-1])]
        run_id = np.cumsum(brk) - 1
        run_len = np.bincount(run_id, weights=nov_c.astype(np.float64))
        V[cp, 9] = np.where(nov_c, run_len[run_id], 0.0)
    nov = np.asarray(novel, dtype=np.float64)
    V[:, 10] = _segment_window_share(nov, seg_start, seg_end, 3)
    V[:, 11] = _segment_window_share(nov, seg_start, seg_end, 8)
    where = np.flatnonzero(nov)
    if len(where):
        pos = np.searchsorted(where, idx)
        left_i = where[np.maximum(pos - 1, 0)]
        right_i = where[np.minimum(pos, len(where) - 1)]
        left = np.where((pos > 0) & (left_i >= seg_start), idx - left_i, 99)
        # a novel token is its own nearest (distance 0): searchsorted puts it at pos
        right = np.where((pos < len(where)) & (right_i < seg_end), right_i - idx, 99)
        V[:, 12] = np.minimum(np.minimum(np.abs(left), np.abs(right)), 20)
    else:
        V[:, 12] = 20
    offs = list(zip(starts, ends))
    bounds = {int(sent_a[f]): (int(f), int(f + L)) for f, L in zip(first, seg_len)}
    for col, mentions in ((13, numbers), (14, unsup_numbers), (15, unsup_ents)):
        # a mention marks tokens of the sentence it was assigned to (as the per-sentence features do)
        for i, ms in enumerate(mentions):
            if ms and i in bounds:
                a, b = bounds[i]
                V[a:b, col] = _inside(offs[a:b], ms)
    V[:, 20] = sent_a / max(n_sent - 1, 1)
    # clauses: token runs between punctuation breaks, within a sentence
    breaks = np.asarray([m.start() for m in _CLAUSE_BREAK.finditer(output)], dtype=np.int64)
    st_a, en_a = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    gap_break = np.zeros(n, dtype=bool)
    if len(breaks) and n > 1:
        # a break lies in [end of previous token, start of this token)
        gap_break[1:] = np.searchsorted(breaks, st_a[1:]) > np.searchsorted(breaks, en_a[:-1])
    new_clause = gap_break | (idx == seg_start)
    clause = np.cumsum(new_clause) - 1
    cont = np.asarray(content, dtype=np.float64)
    n_cl = int(clause[-1]) + 1
    c_total = np.bincount(clause, weights=cont, minlength=n_cl)
    c_novel = np.bincount(clause, weights=nov, minlength=n_cl)
    c_near = np.bincount(clause, weights=cont * np.asarray(in_near, dtype=np.float64), minlength=n_cl)
    safe = np.maximum(c_total, 1.0)
    V[:, 22] = (c_novel / safe)[clause]
    V[:, 23] = np.where(c_total > 0, c_near / safe, 1.0)[clause]
    V[:, 24] = np.minimum(np.bincount(clause, minlength=n_cl), 40)[clause]
    # clause position within its sentence
    first_clause = clause[seg_start]
    last_clause = clause[seg_end - 1]
    V[:, 25] = (clause - first_clause) / np.maximum(last_clause - first_clause, 1)
    offsets = np.c_[st_a, en_a]
    labels = gold = None
    if spans is not None:
        gold = tuple((int(s), int(e)) for s, e in spans)
        labels = np.zeros(n, dtype=np.int8)
        for s, e in gold:
            labels[(st_a < e) & (en_a > s)] = 1
    return TokenBlock(V, offsets, sent_a, labels, gold)
