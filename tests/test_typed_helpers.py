"""The loops that replaced generator expressions where issue 41's session 10 typed the compiled modules
(``evqual/*/*.pxd``): each computes what the expression it replaced computed, on the compiled and the pure
path alike (these tests run on both: ``.ci/pure_python_tests.txt``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.evidence import _engine, _reading
from evqual.features import _checks
from evqual.text import _entities

_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))
_WORDS = st.lists(st.sampled_from(["no", "not", "about", "nearly", "over", "more", "than", "a", "the", "x"]),
                  max_size=8)


def _toks(lows):
    return [(i, i + 1, w, w, None) for i, w in enumerate(lows)]


@settings(max_examples=300, deadline=None)
@given(st.text(_CHARS, max_size=12))
def test_is_special_is_the_expression_it_replaced(word):
    core = word.strip(".'\u2019")
    want = (len(core) >= 2 and core.isupper()) or any(c.isupper() for c in core[1:]) or (
        any(c.isdigit() for c in core) and any(c.isalpha() for c in core))
    assert _entities._is_special(word) == want


@settings(max_examples=200, deadline=None)
@given(st.text(_CHARS, max_size=10))
def test_has_alpha(s):
    assert _checks._has_alpha(s) == any(c.isalpha() for c in s)


@settings(max_examples=200, deadline=None)
@given(_WORDS, st.integers(0, 8), st.lists(st.sampled_from(["more", "than", "a", "no"]), min_size=1, max_size=3))
def test_words_before_and_after(lows, j, phrase):
    toks = _toks(lows)
    j = min(j, len(toks))
    cues = frozenset({"no", "not"})
    assert _checks._low_before(toks, j, cues) == any(toks[k][3] in cues for k in range(max(0, j - 2), j))
    words = tuple(phrase)
    if j + len(words) <= len(toks):
        assert _checks._words_follow(toks, j, words) == all(toks[j + i][3] == words[i] for i in range(1, len(words)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5)), max_size=8))
def test_reversed_pairs(nv):
    want = sum(1 for x in range(len(nv)) for y in range(x + 1, len(nv))
               if (nv[x][0] - nv[y][0]) * (nv[x][1] - nv[y][1]) < 0)
    assert _engine._reversed_pairs(nv) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=5), st.sets(st.integers(0, 5)))
def test_any_consumed(negators, consumed):
    assert _reading._any_consumed(negators, consumed) == any(i2 in consumed for _, i2 in negators)


def _reference_match(first: dict, words: list) -> list:
    """The logic lexicon's phrase matcher before session 11 (phrases compared as tuple slices)."""
    out = []
    n = len(words)
    covered: dict = {}
    for i, cands in enumerate(map(first.get, words)):
        if not cands:
            continue
        best_len: dict = {}
        for rest, cls, sense in cands:
            k = 1 + len(rest)
            if covered.get(cls, 0) > i or i + k > n:
                continue
            if best_len.get(cls, k) > k:
                continue
            if k == 1 or tuple(words[i + 1:i + k]) == rest:
                best_len[cls] = k
                out.append((i, i + k, cls, sense))
        for cls, k in best_len.items():
            covered[cls] = i + k
    return out


_LEXICON_WORDS = ["not", "no", "more", "than", "at", "least", "most", "in", "the", "past", "will", "never", "over",
                  "under", "before", "after", "less", "only", "a", "x", "may", "must", "every", "day", "once"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LEXICON_WORDS), max_size=30))
def test_logic_phrases_are_matched_word_by_word_as_by_tuples(words):
    """The shipped lexicon's matcher (issue 41, session 11: each phrase word compared in turn, no tuple made)
    finds what the tuple comparison found, on the lexicon's own phrase words."""
    from evqual.evidence import logic_lexicon

    lex = logic_lexicon()
    assert lex.match(words) == _reference_match(lex._first, words)
    assert lex.match(tuple(words)) == _reference_match(lex._first, words)
