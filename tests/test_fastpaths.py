"""Issue 23, step 6: the shortcuts of the engine and the models give what the long way gives.

Each shortcut is held equal to the code it replaced (kept here as the reference) on any text
hypothesis draws, with a vocabulary that reaches every rule the shortcut skips.
"""

from __future__ import annotations

import re

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evqual.evidence import EvidenceEngine
from evqual.evidence import _engine, _reading, _values

# words that start or stop a value, a name, a logic phrase or a camel-case key, and plain words
_VOCAB = [
    "every", "each", "other", "second", "day", "days", "week", "weekly", "daily", "twice", "once", "times", "a",
    "an", "per", "half", "hour", "fortnight", "fortnights", "noon", "midnight", "afternoon", "Noon", "May", "may",
    "Monday", "mondays", "Sept", "sept", "june", "one", "two", "ten", "twenty", "hundred", "and", "million",
    "thousand", "km", "miles", "percent", "%", "$", "€", "5", "12", "1,600", "3.5", "10:30", "7pm", "2021",
    "٣", "²", "not", "more", "than", "at", "least", "OutdoorSeating", "iPhone", "priceUSD", "Lake", "Orva",
    "the", "park", "lies", "outside", "Harbour", "Bank", "said", "\u212a", "İstanbul", "ſ", "_", "'s", "don't",
    ".", ",", ";", ":", "-", "\u2013", "(", ")", '"', "\n",
]
_texts = st.one_of(
    st.lists(st.sampled_from(_VOCAB), max_size=25).map(" ".join),
    st.lists(st.sampled_from(_VOCAB), max_size=25).map("".join),
    st.text(max_size=80),
)


# ------------------------------------------------------------------------------------------------ references

_SPAN_TOKEN_RE = re.compile(r"[^\W_]+(?:'[a-z]+)?")


def _reference_span_tokens(piece: str, offset: int = 0) -> list:
    toks = []
    for m in _SPAN_TOKEN_RE.finditer(piece):
        a, w = m.start() + offset, m.group()
        if _reading._CAMEL_RE.search(w):
            for sub in _reading._CAMEL_PART_RE.finditer(w):
                toks.append((a + sub.start(), a + sub.end(), sub.group()))
        else:
            toks.append((a, m.end() + offset, w))
    return toks


@given(_texts, st.integers(0, 5), st.integers(0, 90))
@settings(max_examples=300, deadline=None)
def test_span_tokens_equal_the_per_token_loop(text, start, end):
    """The engine's words of a window of the text (the compiled scanner since issue 41) equal the regular
    expression's words of the window cut out."""
    end = max(start, min(end, len(text)))
    toks, plain = _reading._span_tokens(text, start, end)
    assert toks == _reference_span_tokens(text[start:end], start)
    if plain and not any("'" in t[2] for t in toks):  # what read_span gives the values reader as the words
        assert [t[2] for t in toks] == re.findall(r"[^\W_]+", text[start:end])


@given(_texts)
@settings(max_examples=300, deadline=None)
def test_read_values_shortcut_equals_the_full_reading(text):
    fast = _values.read_values(text)
    saved = _values._may_hold_value
    _values._may_hold_value = lambda text, words=None: True  # the shortcut is never taken
    try:
        full = _values.read_values(text)
    finally:
        _values._may_hold_value = saved
    assert fast == full


@given(_texts, st.integers(0, 5), st.integers(0, 90))
@example("Sept\u212a at ſeven, MİDNIGHT noon", 0, 40)
@settings(max_examples=300, deadline=None)
def test_read_span_passing_its_words_equals_the_values_reading_the_text(text, start, end):
    """Issue 41, session 6: read_span gives the values reader the words it cut when they are the text's plain
    words; the reading equals the one where the values reader cuts the text itself."""
    end = max(start, min(end, len(text)))
    fast = _reading.read_span(text, start, end)
    saved = _reading.read_values
    _reading.read_values = lambda piece, words=None, numbers=None: saved(piece)
    try:
        slow = _reading.read_span(text, start, end)
    finally:
        _reading.read_values = saved
    assert fast == slow


@given(_texts)
@example("MİDNIGHT")
@example("mıdnight and ſeven")
@settings(max_examples=300, deadline=None)
def test_value_gate_equals_the_regular_expressions(text):
    """The values reader's shortcut (issue 41, session 6: ASCII text lower-cased once) decides as the ignored-case
    pattern and the per-word lower-casing did."""
    reference = bool(re.search(r"\d", text) or _values._NOON_RE.search(text)
                     or not _values._TRIGGERS.isdisjoint(map(str.lower, _values._TOKEN_RE.findall(text))))
    assert _values._may_hold_value(text) == reference
    words = [w.lower() for w in re.findall(r"[^\W_]+", text)]
    assert _values._may_hold_value(text, words) == reference


@given(_texts)
@example("at noon")
@example("MİDNIGHT")
@example("mıdnıght, NOON and nooN")
@example("at 5 a.m. and 7\u00a0PM, 12:30, \u0663:\u0664\u0665 and 9 p")
@example("5  pm, 5:3 and 10:")
@settings(max_examples=500, deadline=None)
def test_number_gate_skips_only_texts_without_numbers(text):
    """extract_numbers and context_number_values skip a scan where its pattern cannot match (issue 41, sessions 6
    and 7: no digit, no "noon" or "midnight"; no time shape): what they find equals both scans run on every text.
    Each pattern is also held to its flag: where it matches, the flag says it can."""
    from evqual.text import _numbers

    fast = (_numbers._numbers(text), _numbers.context_number_values(text))
    saved = _numbers._number_flags
    _numbers._number_flags = lambda t: 3
    try:
        slow = (_numbers._numbers(text), _numbers.context_number_values(text))
    finally:
        _numbers._number_flags = saved
    assert fast == slow
    flags = _numbers._number_flags(text)
    assert not _numbers._NUMBER_RE.search(text) or flags & 1
    assert not _numbers._TIME_RE.search(text) or flags & 2


_NUMBER_ALPHABET = "0123456789\u0663\u00b2 .,$\u20ac\u00a3\u00a5%\n\u00a0_:aAbmkMptT"


@given(st.one_of(_texts, st.text(alphabet=_NUMBER_ALPHABET, max_size=60),
                 st.lists(st.sampled_from(["$", " ", ".", ",", "5", "12", "1,600", ".5", "percent", "million", "bn",
                                           "x", "a", "\u20ac", "%", "\t", "7.", ",000"]), max_size=20).map("".join)))
@example("$ .5 and \u20ac\u00a012 bn, x1 a.5 1,000,00 .7percent")
@example("ab1 " + "word " * 40 + "$ 3")
@settings(max_examples=600, deadline=None)
def test_number_matches_near_digits_equal_finditer(text):
    """The number pattern tried only up to _NUMBER_REACH characters before each digit (issue 41, session 11)
    finds what finditer finds, match for match."""
    from evqual.text import _numbers

    got = [(m.span(), m.groupdict()) for m in _numbers._number_matches(text)]
    assert got == [(m.span(), m.groupdict()) for m in _numbers._NUMBER_RE.finditer(text)]


_REFUSAL_VOCAB = ["unable", "to", "answer", "I", "i", "am", "I'm", "i\u2019m", "sorry", "cannot", "can't", "be",
                  "determined", "could", "not", "couldn't", "does", "doesn\u2019t", "mention", "is", "are",
                  "mentioned", "no", "information", "about", "enough", "insufficient", "possible", "say", "\u0130",
                  "\u0131", "\u017f", "i\u017f", "x_is", "_no", "IS", "NOT", "Provided", "given", ".", ",", "\n"]


@given(st.one_of(st.lists(st.sampled_from(_REFUSAL_VOCAB), max_size=20).map(" ".join),
                 st.lists(st.sampled_from(_REFUSAL_VOCAB), max_size=20).map("".join), _texts))
@example("\u0130 am sorry, the passages do not mention it")
@example("Iſ not mentioned; it was not provided in the text")
@example("There is not enough information, and it is not possible to say; insufficient information.")
@example("I'm sorry: unable to answer. No information about it; it couldn't be determined.")
@settings(max_examples=600, deadline=None)
def test_refusal_wording_tried_at_first_words_equals_finditer(text):
    """The refusal pattern tried only at words that can start it (issue 41, session 11) finds what finditer finds."""
    from evqual.features import _surface
    from evqual.text import TextWords

    got = [(m.span(), m.group()) for m in _surface._refusal_matches(text, TextWords(text))]
    assert got == [(m.span(), m.group()) for m in _surface._REFUSAL_RE.finditer(text)]


@given(st.one_of(_texts, st.lists(st.sampled_from(list("ABZaz. _\n1\u00c9,") + ["TX", "CA", "NY."]), max_size=15)
                 .map("".join)))
@settings(max_examples=500, deadline=None)
def test_state_code_pattern_starting_with_a_capital_matches_as_before(text):
    from evqual.features import _similarity

    old = re.compile(r"(?<![\w.])[A-Z]{2}(?![\w.])")
    assert [m.span() for m in _similarity._STATE_CODE_RE.finditer(text)] == [m.span() for m in old.finditer(text)]


def test_read_values_shortcut_keeps_every_value_kind():
    # each of these is read from words alone, no digit: the shortcut must not drop them
    for text, key in [("twice a day", "rate:"), ("every other week", "rate:"), ("daily", "rate:"),
                      ("a fortnight", "qty:time:14"), ("half an hour", "qty:time:"), ("in May", "month:5"),
                      ("on Mondays", "weekday:1"), ("at noon", "time:"), ("twenty one km", "qty:length:")]:
        keys = [v.key for v in _values.read_values(text)]
        assert any(k.startswith(key) for k in keys), (text, keys)


@given(st.text(max_size=40), st.integers(0, 40), st.integers(0, 40))
@example("a_b; \u00b2\u2160", 1, 3)
@settings(max_examples=300, deadline=None)
def test_alnum_pattern_is_str_isalnum(text, a, b):
    """The claim rules (evqual/text/_claims.py, shared by the engine and the checks since issue 41 session 5)
    drop a unit without a letter or digit by this pattern; the rule is str.isalnum(), character by character."""
    from evqual.text import has_alnum

    assert has_alnum(text, a, b) == any(c.isalnum() for c in text[a:b])


# ------------------------------------------------------------------------------------------------ engine caches

def _same(r1, r2):
    assert len(r1.claims) == len(r2.claims)
    for c1, c2 in zip(r1.claims, r2.claims):
        assert (c1.start, c1.end, c1.unit, c1.strength) == (c2.start, c2.end, c2.unit, c2.strength)
        np.testing.assert_array_equal(c1.features, c2.features)
        assert c1.differences == c2.differences


_CONTEXT = ["Lake Orva lies entirely within the park, 6 km south of Tennby. Buses run every 30 minutes on "
            "Sundays. The museum opened in 1932 and closed in 1990; it may reopen in May.",
            "Lake Aska sits just outside the park. Tickets cost $12 for adults and $5 for children."]
_answers = st.lists(st.sampled_from(_VOCAB[:60] + ["Lake", "Orva", "Aska", "park", "museum", "opened", "closed",
                                                   "buses", "run", "Tennby", "tickets", "cost", "adults"]),
                    min_size=1, max_size=20).map(" ".join)


@given(st.lists(_answers, min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_warm_index_caches_read_as_a_fresh_engine(answers):
    warm = EvidenceEngine()
    for a in answers:  # the index's per-key and per-unit caches fill up across answers ...
        warm.read(a, _CONTEXT, "When do buses run?")
    for a in answers:  # ... and every answer reads as it does on a fresh engine
        _same(warm.read(a, _CONTEXT, "When do buses run?"), EvidenceEngine().read(a, _CONTEXT, "When do buses run?"))


def test_index_key_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(_engine, "_PRESENT_MAX", 3)
    idx = _engine.EvidenceIndex(_CONTEXT)
    for k in ["w:lake", "n:orva", "w:park", "w:bus", "n:aska", "v:num:$:12"]:
        units, array = idx.present(k)
        assert units == frozenset(u for a in _engine._aliases(k) for u in idx.postings.get(a, ()))
        assert sorted(array.tolist()) == sorted(units)
    assert len(idx._present) == 3


# ------------------------------------------------------------------------------------------------ calibration

@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=30),
       st.floats(-8, 8, allow_nan=False), st.floats(-8, 8, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_fast_calibrate_equals_sklearn_predict(xs, a, b):
    from sklearn.calibration import _SigmoidCalibration

    from evqual.models._fasttrees import fast_calibrate

    cal = _SigmoidCalibration()
    cal.a_, cal.b_ = a, b
    x = np.array(xs, dtype=np.float64)
    np.testing.assert_array_equal(fast_calibrate(cal, x), cal.predict(x))
    # other inputs take scikit-learn's own path (and its validation)
    np.testing.assert_array_equal(fast_calibrate(cal, xs), cal.predict(xs))
    np.testing.assert_array_equal(fast_calibrate(cal, x.reshape(-1, 1)), cal.predict(x.reshape(-1, 1)))


def test_fast_calibrate_leaves_other_calibrators_to_their_predict():
    from sklearn.isotonic import IsotonicRegression

    from evqual.models._fasttrees import fast_calibrate

    iso = IsotonicRegression(out_of_bounds="clip").fit([0.0, 1.0, 2.0, 3.0], [0.0, 0.2, 0.7, 1.0])
    x = np.array([-1.0, 0.5, 2.5, 9.0])
    np.testing.assert_array_equal(fast_calibrate(iso, x), iso.predict(x))


# ------------------------------------------------------------------------------------------------ stemmer

def _both_stemmers():
    # snowballstemmer.stemmer() hands out PyStemmer's class when PyStemmer is installed: take its own
    # pure-Python class, so the two builds are really compared
    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    c, py = Stemmer.Stemmer("english", 0), EnglishStemmer()
    assert type(c) is not type(py)
    return c, py


def test_pystemmer_and_snowballstemmer_stem_every_sample_and_lexicon_word_alike():
    from evqual.data import load_sample
    from evqual.evidence import logic_lexicon, synonym_map  # noqa: F401  (the lexicon files' words below)
    from evqual.text import ANTONYM_PAIRS, STOP_WORDS

    c, py = _both_stemmers()
    words = set(STOP_WORDS) | {w for pair in ANTONYM_PAIRS for p in pair for w in p.split()}
    for ex in load_sample().examples:
        words.update(w.lower() for w in re.findall(r"[^\W_]+(?:'[a-z]+)?", ex.context + " " + ex.output))
    assert len(words) > 1000
    differ = [w for w in sorted(words) if c.stemWord(w) != py.stemWord(w)]
    assert not differ, differ[:20]


@given(st.text(alphabet=st.sampled_from(list("aeiouybcdlmnrstgh'") + list("éüßı0İ\u0301Y")), max_size=16))
@settings(max_examples=500, deadline=None)
def test_pystemmer_and_snowballstemmer_agree_on_any_word(word):
    c, py = _both_stemmers()
    assert c.stemWord(word) == py.stemWord(word)


def test_each_thread_has_its_own_stemmer_and_stems_as_one_thread_does():
    import threading

    from evqual.text import english_stemmer, stemmer_backend

    assert stemmer_backend() == "pystemmer"  # a core dependency: installed with evqual
    words = [f"{w}{s}" for w in ("connect", "relat", "hop", "generaliz", "nation") for s in ("ing", "ed", "ions", "al")]
    serial = [english_stemmer().stemWord(w) for w in words]
    seen, results = [], []

    def work():
        seen.append(id(english_stemmer()))
        results.append([english_stemmer().stemWord(w) for w in words * 50][: len(words)])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(set(seen)) == 4 and id(english_stemmer()) not in seen
    assert all(r == serial for r in results)


def test_snowballstemmer_is_the_fallback(monkeypatch):
    import sys
    import threading

    from evqual.text import _stem

    monkeypatch.setitem(sys.modules, "Stemmer", None)  # importing PyStemmer now raises ImportError
    _stem.stemmer_backend.cache_clear()
    monkeypatch.setattr(_stem, "_LOCAL", threading.local())
    try:
        assert _stem.stemmer_backend() == "snowballstemmer"
        assert _stem.english_stemmer().stemWord("opening") == "open"
    finally:
        _stem.stemmer_backend.cache_clear()


# ------------------------------------------------------------------------------------------------ checks

@given(_texts, st.integers(0, 5), st.integers(0, 90))
@example("not now, (maybe)\u2013 later; yes.\nno", 0, 40)
@settings(max_examples=300, deadline=None)
def test_clause_breaks_equal_a_search_per_gap(text, start, end):
    """The checks find the clause breaks between words in one scan (issue 41, session 6); each equals the
    search of the gap between two words that it replaced, on whole sentences and on a unit's tail of them."""
    from evqual.features import _checks

    end = max(start, min(end, len(text)))
    toks = _checks._tokens(text, start, end)
    for words in (toks, toks[len(toks) // 2:]):
        got = _checks._clause_breaks(text, words)
        breaks = re.compile("[" + re.escape(_checks._CLAUSE_BREAK_CHARS) + "]")
        want = [k > 0 and breaks.search(text, words[k - 1][1], words[k][0]) is not None
                for k in range(len(words))]
        assert got == want


# ------------------------------------------------------------------------------------------------ analysis

def _reference_evidence_sentences(M, owner, n_sent, min_cols):
    """The per-claim loop the runs replaced (issue 41, session 6)."""
    S = np.zeros((n_sent, M.shape[1]))
    seen = np.zeros(n_sent, dtype=bool)
    for row, o in zip(M, owner):
        if not seen[o]:
            S[o] = row
            seen[o] = True
        else:
            S[o] = np.where(min_cols, np.minimum(S[o], row), np.maximum(S[o], row))
    return S


@given(st.lists(st.integers(0, 60), max_size=8), st.integers(1, 5), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_evidence_sentence_rows_equal_the_claim_loop(claim_starts, n_sent, rnd):
    """A sentence's evidence row is the max (min) of its claims' rows, claims in any order; -0.0 and 0.0 and
    ties kept as the loop kept them."""
    from types import SimpleNamespace

    from evqual.evidence import CLAIM_FEATURES
    from evqual.features import EVIDENCE_MIN, _analysis

    sentences = [(12 * i, 12 * i + 10) for i in range(n_sent)]
    values = [0.0, -0.0, 1.0, 0.5, 2.0, -1.0]
    M = np.array([[rnd.choice(values) for _ in CLAIM_FEATURES] for _ in claim_starts]).reshape(
        len(claim_starts), len(CLAIM_FEATURES))
    claims = [SimpleNamespace(start=s, features=row) for s, row in zip(claim_starts, M)]
    reading = SimpleNamespace(matrix=M, claims=claims)
    resp, sent = _analysis._evidence_features(reading, sentences)
    min_cols = np.array([n in EVIDENCE_MIN for n in CLAIM_FEATURES])
    got = np.column_stack([sent["sent.evidence." + n] for n in CLAIM_FEATURES]) if n_sent else None
    owner = _analysis.claim_sentences(claims, sentences) if len(M) else []
    want = _reference_evidence_sentences(M, owner, n_sent, min_cols)
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()
    # the answer's row: the same reduction over all its claims (issue 41, session 9: one reduction, the min
    # as the max of the negation)
    whole = _reference_evidence_sentences(M, [0] * len(M), 1, min_cols)[0]
    got_resp = np.array([resp["evidence." + n] for n in CLAIM_FEATURES])
    np.testing.assert_array_equal(got_resp, whole)
    assert (np.signbit(got_resp) == np.signbit(whole)).all()


# ------------------------------------------------------------------------------------------------ engine sums

@given(st.lists(st.one_of(st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 1.5, 0.1, 0.2]),
                          st.floats(0, 12, allow_nan=False)), max_size=300))
@example([-0.0])
@example([])
@example([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
@example([0.1 * k for k in range(8)])
@example([0.1 * k for k in range(23)])
@example([1e16] + [1.0] * 15 + [-1e16])
@example([0.1 * k for k in range(128)])
@example([0.1 * k for k in range(129)])
@example([-0.0] * 16)
@settings(max_examples=1500, deadline=None)
def test_claim_weight_sum_is_numpys_to_the_last_bit(values):
    """The claim's total weight is summed without an array up to 128 items (issue 41, sessions 6 and 8);
    numpy's own sum is what the features were always computed with."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # inf + -inf, overflow
        want = float(np.array(values, dtype=np.float64).sum())
        got = _engine._sum_as_numpy(values)
    assert (got == want or (np.isnan(got) and np.isnan(want))) and np.signbit(got) == np.signbit(want)


@given(st.lists(st.floats(0, 50, allow_nan=False), min_size=2, max_size=40))
@settings(max_examples=300, deadline=None)
def test_runner_up_is_the_second_of_the_two_largest(scores):
    import heapq

    assert _engine._runner_up(scores) == heapq.nlargest(2, scores)[1]
    assert _engine._runner_up(np.array(scores)) == heapq.nlargest(2, scores)[1]


# ------------------------------------------------------------------------------------------------ the span reader

@given(_texts, st.integers(0, 5), st.integers(0, 90))
@example("not more than 5 km, isn't it? OutdoorSeating: Monday's", 0, 60)
@example("He did not cut more than twice a week; the largest, honest Harbour Bank said", 0, 80)
@settings(max_examples=500, deadline=None)
def test_read_span_equals_the_reader_it_replaced(text, start, end):
    """Issue 41, session 7: the span reader without closures, stems taken only for the words that become
    content items, the apostrophe pass only where the text has one, gives what the reader it replaced gave
    (tests/_reference_reading.py)."""
    from _reference_reading import reference_read_span

    end = max(start, min(end, len(text)))
    assert _reading.read_span(text, start, end) == reference_read_span(text, start, end)


_CONTEXT_SENTENCES = [
    "The architect Joseph Reed designed the Royal Exhibition Building in 1879.",
    "It was constructed by the builder David Mitchell, who later worked in Melbourne.",
    "The museum is not open on Mondays and tickets cost $12.",
    "Gulf Oil sold its Canadian arm to Gulf Canada Resources in 1985.",
    "At least 40 staff moved to Leeds, but fewer than 10 stayed.",
]
_CLAIMS = [
    "The architect David Mitchell designed the Royal Exhibition Building in 1879.",
    "Gulf Canada Resources sold its arm to Gulf Oil in 1985.",
    "The museum is open on Mondays and tickets cost $15.",
    "At most 40 staff moved to Leeds.",
    "Joseph Reed worked in Melbourne.",
]


@given(st.lists(st.sampled_from(_CONTEXT_SENTENCES), min_size=1, max_size=5),
       st.lists(st.sampled_from(_CLAIMS), min_size=1, max_size=3))
@settings(max_examples=60, deadline=None)
def test_checks_read_tuple_sentence_lists_as_sets(context, claims):
    """Issue 41, session 7: a context below the large-context bound keeps its word and stem -> sentences lists as
    tuples (the garbage collector leaves them alone); the checks find what they found with the sets."""
    from evqual.features import _checks
    from evqual.text import split_sentences

    ev = _checks.EvidenceUnits([" ".join(context), *context[:2]])
    assert not ev.large and all(type(v) is tuple for v in [*ev.postings.values(), *ev.words.values()])
    as_sets = _checks.EvidenceUnits([" ".join(context), *context[:2]])
    as_sets.postings = {k: set(v) for k, v in as_sets.postings.items()}
    as_sets.words = {k: set(v) for k, v in as_sets.words.items()}
    output = " ".join(claims)
    sentences = split_sentences(output)
    got = _checks.claim_checks(output, sentences, ev, "")
    want = _checks.claim_checks(output, sentences, as_sets, "")
    assert {k: v.tolist() for k, v in got[0].items()} == {k: v.tolist() for k, v in want[0].items()}
    assert [[repr(f) for f in fs] for fs in got[1]] == [[repr(f) for f in fs] for fs in want[1]]


def test_common_sentences_of_keys():
    from evqual.features._checks import _common

    index = {"a": (0, 2, 5), "b": {2, 5, 7}, "c": (9,)}
    assert _common(index, ["a", "b"]) == {2, 5}
    assert _common(index, ["a", "c"]) == set() and _common(index, ["a", "zz"]) == set()
    assert _common(index, []) == set() and _common(index, ["b"]) == {2, 5, 7}


def test_negation_words_are_the_patterns_words():
    """NEGATION_WORDS are exactly the whole words NEGATION_RE lists (``lacks?`` is lack and lacks)."""
    from evqual.features import NEGATION_RE, NEGATION_WORDS

    inner = re.search(r"\\b\(\?:(.*?)\)\\b", NEGATION_RE.pattern).group(1).split("|")
    words = set()
    for w in inner:
        words.update({w[:-2], w[:-1]} if w.endswith("s?") else {w})
    assert words == set(NEGATION_WORDS)


@given(st.one_of(_texts, st.lists(st.sampled_from(["not", "NOT", "n't", "n\u2019t", "don't", "lacKs", "lack\u017f",
                                                   "cannot", "none_", "NONE", "İ", "never", "x", " ", ".", "_"]),
                                  max_size=12).map("".join)), st.integers(0, 5), st.integers(0, 90))
@settings(max_examples=500, deadline=None)
def test_has_negation_equals_the_pattern(text, start, end):
    """Issue 41, session 7: the features' negation test (compiled) finds what NEGATION_RE's search found."""
    from evqual.features import NEGATION_RE, has_negation

    assert has_negation(text, start, end) == (NEGATION_RE.search(text, start, end) is not None)
