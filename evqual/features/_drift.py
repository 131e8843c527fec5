"""Families ``number`` and ``entity``: details of the output absent from the evidence.

* A **number** mention is *unsupported* when its value (scale applied, see
  :mod:`evqual.text._numbers`) is not among the context's number values.
* A sentence has a **numeric conflict** when it has an unsupported number and
  its nearest chunk holds a number value the sentence does not mention (the
  pattern of "69 million" against a chunk saying "67 million").
* An **entity** mention is *unsupported* when one of its content tokens is not
  a content token of the context (case-insensitive).  Mentions with no content
  token are ignored.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from ..text import extract_numbers
from ._similarity import split_tokens
from ._reduce import _MAX, _SUM


_REFERENCE_RE = re.compile(r"\b(?:passages?|steps?|sections?|figures?|tables?|chapters?|options?|items?|parts?|"
                           r"pages?|paragraphs?|documents?|sources?|answers?|questions?|points?|#)\s*$",
                           re.IGNORECASE)


def sentence_numbers(output: str, sentences, index, query_values=frozenset(), words=None):
    """Per sentence: (mentions, unsupported mentions).

    A number the query states is not unsupported (the answer repeats the question), and a reference to a
    part of the text ("passage 2", "Step 3", "section 4.1") is not a number claim at all.  ``words``: the
    output's :class:`~evqual.text.TextWords`, whose number mentions are taken (found once for every reader).
    """
    found = words.numbers_in() if words is not None and words.text == output else extract_numbers(output)
    mentions = [m for m in found if not _REFERENCE_RE.search(output, max(0, m.start - 12), m.start)]
    per = [[] for _ in sentences]
    _assign(mentions, sentences, per)
    unsup = [[m for m in ms if m.value not in index.numbers and m.value not in query_values] for ms in per]
    return per, unsup


@lru_cache(maxsize=4096)
def query_number_values(query: str) -> frozenset:
    """Values of the numbers of a query (cached: queries repeat across answers)."""
    return frozenset(m.value for m in extract_numbers(query))


@lru_cache(maxsize=8192)
def _entity_tokens(text: str) -> tuple[str, ...]:
    return tuple(split_tokens(text)[0])


def sentence_entities(entities, sentences, vocab):
    """Per sentence: (mentions with content tokens, unsupported mentions)."""
    per = [[] for _ in sentences]
    kept = []
    for e in entities:
        toks = _entity_tokens(e.text)
        if toks:
            kept.append((e, toks))
    _assign(kept, sentences, per, key=lambda item: item[0].start)
    mentions = [[e for e, _ in items] for items in per]
    unsup = [[e for e, toks in items if any(t not in vocab for t in toks)] for items in per]
    return mentions, unsup


def _assign(items, sentences, per, key=lambda m: m.start):
    """Put each item in the sentence containing its start (or the closest before it)."""
    if not sentences:
        return
    starts = [s for s, _ in sentences]
    import bisect

    for item in items:
        i = bisect.bisect_right(starts, key(item)) - 1
        per[max(i, 0)].append(item)


def number_conflicts(unsup_numbers, numbers, nearest, index) -> np.ndarray:
    out = np.zeros(len(unsup_numbers))
    nearest = nearest.tolist()
    for i, unsup in enumerate(unsup_numbers):
        if not unsup:
            continue
        k = nearest[i]
        if k >= 0:
            mentioned = {m.value for m in numbers[i]} | {m.raw_value for m in numbers[i]}
            if index.chunk_numbers(k) - mentioned:
                out[i] = 1.0
    return out


def _rate(unsup: np.ndarray, total: np.ndarray) -> np.ndarray:
    # counts are whole numbers: unsup <= total, and unsup == 0 whenever total == 0
    return unsup / np.maximum(total, 1.0)


def drift_sentence(numbers, unsup_numbers, conflicts, entities, unsup_entities) -> dict:
    n_num = np.array([len(x) for x in numbers], dtype=np.float64)
    u_num = np.array([len(x) for x in unsup_numbers], dtype=np.float64)
    n_ent = np.array([len(x) for x in entities], dtype=np.float64)
    u_ent = np.array([len(x) for x in unsup_entities], dtype=np.float64)
    return {
        "sent.number.count.v2": n_num,
        "sent.number.unsupported_count.v2": u_num,
        "sent.number.new_rate.v2": _rate(u_num, n_num),
        "sent.number.conflict.v2": conflicts,
        "sent.entity.count.v1": n_ent,
        "sent.entity.unsupported_count.v1": u_ent,
        "sent.entity.unsupported_rate.v1": _rate(u_ent, n_ent),
    }


def drift_response(sent: dict) -> dict:
    n_num = float(_SUM(sent["sent.number.count.v2"], None))
    u_num = float(_SUM(sent["sent.number.unsupported_count.v2"], None))
    n_ent = float(_SUM(sent["sent.entity.count.v1"], None))
    u_ent = float(_SUM(sent["sent.entity.unsupported_count.v1"], None))
    conflict = sent["sent.number.conflict.v2"]
    return {
        "entity.count.v1": n_ent,
        "entity.unsupported_count.v1": u_ent,
        "entity.unsupported_rate.v1": u_ent / n_ent if n_ent else 0.0,
        "number.count.v2": n_num,
        "number.unsupported_count.v2": u_num,
        "number.new_rate.v2": u_num / n_num if n_num else 0.0,
        "number.conflict.v2": float(_MAX(conflict, None)) if len(conflict) else 0.0,
    }
