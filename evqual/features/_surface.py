"""Families ``refusal``, ``length`` and ``task``.

Refusal wording is matched by :data:`REFUSAL_PATTERN` (case-insensitive):
"unable to answer", "I'm sorry", "cannot be determined", "the passages do
not mention", "no information about", "not provided in", and similar.
"""

from __future__ import annotations

import bisect
import re

import numpy as np

from ._registry import TASKS
from ._reduce import _MAX

REFUSAL_PATTERN = (
    r"\b(?:unable to (?:answer|provide|determine|find|say|give)"
    r"|(?:i am|i'm|i’m) (?:sorry|afraid|not able)"
    r"|(?:cannot|can't|can’t|could not|couldn't) (?:be )?(?:answer|answered|determine|determined|provide|find|say)"
    r"|(?:do|does|did) not (?:provide|contain|mention|include|specify|state|say|give|offer|discuss)"
    r"|(?:don't|doesn't|didn't|don’t|doesn’t|didn’t) (?:provide|contain|mention|include|specify|state|say|give)"
    r"|(?:is|are|was|were) not (?:mentioned|provided|specified|stated|given|available|included)"
    r"|no (?:information|mention|details?|data) (?:about|on|regarding|is|was|provided|given|available)"
    r"|not (?:enough|sufficient) information"
    r"|insufficient information"
    r"|not possible to (?:answer|determine|say))"
)
# every alternative starts with one of these letters: a cheap look-ahead skips other positions
_REFUSAL_RE = re.compile(r"\b(?=[uicdawnUICDAWN])" + REFUSAL_PATTERN[2:], re.IGNORECASE)

_TASK_NAMES = {t: f"task.{t.lower()}.v1" for t in TASKS}


def is_refusal(text: str) -> bool:
    """Whether ``text`` uses refusal wording.

    >>> is_refusal("Unable to answer based on given passages."), is_refusal("Paris is big.")
    (True, False)
    """
    return _REFUSAL_RE.search(text) is not None


_REFUSAL_FIRST = frozenset({"unable", "i", "cannot", "can", "could", "couldn", "do", "does", "did", "don", "doesn",
                            "didn", "is", "are", "was", "were", "no", "not", "insufficient"})
"""The first word (a :data:`~evqual.text.TOKEN_PATTERN` run, lower case) of every alternative of
:data:`REFUSAL_PATTERN`: a match starts only at a word that is one of these, or that has a character past ASCII
(``re``'s ignored case takes "ſ" for "s" and "İ" or "ı" for "i")."""


def _refusal_matches(output: str, words=None) -> list:
    """``list(_REFUSAL_RE.finditer(output))``; with ``words`` (the output's :class:`~evqual.text.TextWords`), the
    pattern is tried only where a match can start: at a word of :data:`_REFUSAL_FIRST` (a match starts at a word
    boundary before a letter, so at the start of a word).  The leftmost match from a position is the first of
    these tries that matches, so the matches are the same (``tests/test_fastpaths.py``)."""
    if words is None:
        return list(_REFUSAL_RE.finditer(output))
    out = []
    last = 0
    match = _REFUSAL_RE.match
    first = _REFUSAL_FIRST
    for (a, _, _), low in zip(words.spans_in(), words.lows_in()):
        if a >= last and (low in first or not low.isascii()):
            m = match(output, a)
            if m is not None:
                out.append(m)
                last = m.end()
    return out


def refusal_sentence(output: str, sentences, words=None) -> np.ndarray:
    """Per sentence: 1.0 where a refusal wording (:data:`REFUSAL_PATTERN`) lies inside it.  ``words``: the output's
    :class:`~evqual.text.TextWords`, whose words say where a wording can start."""
    flags = np.zeros(len(sentences))
    if not sentences:
        return flags
    # sentences are ordered and non-overlapping: only the last one starting at or before a match can hold it
    starts = [s for s, _ in sentences]
    for m in _refusal_matches(output, words):
        i = bisect.bisect_right(starts, m.start()) - 1
        if i >= 0 and m.end() <= sentences[i][1]:
            flags[i] = 1.0
    return flags


def refusal_response(flags: np.ndarray) -> dict:
    if not len(flags):
        return {"refusal.any.v1": 0.0, "refusal.rate.v1": 0.0}
    return {"refusal.any.v1": float(_MAX(flags, None)), "refusal.rate.v1": float(flags.mean())}


def task_features(task_type: str | None, prefix: str = "") -> dict:
    out = {f"{prefix}{name}": 0.0 for name in _TASK_NAMES.values()}
    if task_type in _TASK_NAMES:
        out[f"{prefix}{_TASK_NAMES[task_type]}"] = 1.0
    return out


def length_response(n_out: int, n_ctx: int, n_query: int, n_sent: int, n_chunks: int) -> dict:
    return {
        "length.output_tokens.v1": float(n_out),
        "length.context_tokens.v1": float(n_ctx),
        "length.query_tokens.v1": float(n_query),
        "length.output_context_ratio.v1": n_out / max(1, n_ctx),
        "length.sentences.v1": float(n_sent),
        "length.mean_sentence_tokens.v1": n_out / max(1, n_sent),
        "length.chunks.v1": float(n_chunks),
    }


def length_sentence(sent_all_tokens: np.ndarray, n_chunks: int) -> dict:
    n = len(sent_all_tokens)
    pos = np.arange(n, dtype=np.float64) / max(1, n - 1)
    return {
        "sent.length.tokens.v1": sent_all_tokens.astype(np.float64),
        "sent.length.position.v1": pos,
        "sent.length.sentences.v1": np.full(n, float(n)),
        "sent.length.chunks.v1": np.full(n, float(n_chunks)),
    }
