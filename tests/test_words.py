"""TextWords: a text's words found once, read by window (issue 41, session 8: one reading of each text).

Every reader that now takes its words from a TextWords must read what its own scan of the window gave.
"""

import re
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evqual.evidence import EvidenceEngine, read_span
from evqual.features._checks import EvidenceUnits, _tokens, claim_checks
from evqual.text import TOKEN_PATTERN, TextWords, extract_numbers, split_sentences, word_spans

_CHARS = st.sampled_from(list("ab zAZ09_'.-:\t\n") + ["é", "İ", "ß", "Σ", "中", "٣", "½", "\u0301", "’", "\u0130"])
_TOKEN_RE = re.compile(TOKEN_PATTERN)


@settings(max_examples=1500, deadline=None)
@given(st.text(_CHARS, max_size=40), st.integers(-3, 45), st.integers(-3, 45))
@example("isn't", 2, 5)
@example("abc def", 1, 2)
@example("İstanbul", 0, 8)
def test_a_window_of_the_words_is_a_scan_of_the_window(text, start, end):
    """Any window, a word cut by either edge, bounds before the start and past the end."""
    words = TextWords(text)
    assert words.spans_in(start, end) == word_spans(text, start, end)
    lo, hi = max(start, 0), max(min(end, len(text)), 0)
    assert words.lower_tokens(lo, hi) == _TOKEN_RE.findall(text[lo:hi].lower())
    assert words.spans == word_spans(text)
    assert words.sentences == split_sentences(text)


def test_lower_casing_joins_no_words_and_makes_none():
    """What ``lower_tokens`` relies on, for every code point: a character that is not a word character
    lowers to none, and only U+0130 (İ) lowers to something a word stops at."""
    word = re.compile(r"[^\W_]")
    split = []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        low = c.lower()
        if word.match(c) is None:
            assert not any(word.match(x) for x in low), hex(cp)
        elif not all(word.match(x) for x in low):
            split.append(cp)
    assert split == [0x130]


_READ_CHARS = st.sampled_from(["Acme", "OutdoorSeating", "isn't", "O'Neil", " ", ". ", "5 km", "not", "more than",
                               "12", "fourteen", "hours", "Bank", ", ", "$149", "İzmir", "twice a week", "\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_READ_CHARS, max_size=14).map("".join), st.integers(0, 40), st.integers(0, 80))
def test_read_span_with_the_texts_words_reads_the_same(text, start, length):
    end = min(len(text), start + length)
    start = min(start, end)
    words = TextWords(text)
    assert read_span(text, start, end, words=words) == read_span(text, start, end)
    other = TextWords(text + " Other")  # another text's words are not used
    assert read_span(text, start, end, words=other) == read_span(text, start, end)


def test_readers_with_and_without_the_words_agree():
    chunks = ["The bridge opened in 1932 after six years of work. It isn't 40 m long.",
              "OutdoorSeating: True. The Harbour Bank said no more than 5 km."]
    out = "The bridge opened in 1935, after sixteen years. Harbour Bank says it's 50 m long and free."
    cw = [TextWords(c) for c in chunks]
    ow = TextWords(out)
    assert _tokens(out, 4, 60, ow) == _tokens(out, 4, 60)
    plain, shared = EvidenceUnits(chunks), EvidenceUnits(chunks, words=cw)
    assert plain.spans == shared.spans and plain.postings == shared.postings and plain.words == shared.words
    assert plain.neg_stems == shared.neg_stems
    assert [plain.tokens(i) for i in range(len(plain.spans))] == [shared.tokens(i) for i in range(len(shared.spans))]
    sents = split_sentences(out)
    got_plain = claim_checks(out, sents, EvidenceUnits(chunks))
    got_shared = claim_checks(out, sents, EvidenceUnits(chunks, words=cw), words=ow)
    assert [[repr(f) for f in fs] for fs in got_plain[1]] == [[repr(f) for f in fs] for fs in got_shared[1]]
    assert all((got_plain[0][k] == got_shared[0][k]).all() for k in got_plain[0])
    a = EvidenceEngine().read(out, chunks, "How long?")
    b = EvidenceEngine().read(out, chunks, "How long?", words=ow, chunk_words=cw)
    assert (a.matrix == b.matrix).all()
    assert [[repr(d) for d in c.differences] for c in a.claims] == [[repr(d) for d in c.differences] for c in b.claims]


def test_words_of_another_text_are_refused_or_ignored():
    chunks = ["The bridge opened in 1932."]
    with pytest.raises(TypeError, match="TextWords: text must be a str"):
        TextWords(b"bytes")
    with pytest.raises(ValueError, match="one TextWords of each chunk text"):
        EvidenceUnits(chunks, words=[TextWords("Another text.")])
    with pytest.raises(ValueError, match="one TextWords of each chunk text"):
        EvidenceUnits(chunks, words=[])
    out = "It opened in 1935."
    with pytest.raises(ValueError, match="words must be the TextWords of output"):
        claim_checks(out, split_sentences(out), EvidenceUnits(chunks), words=TextWords("Other."))
    # the engine reads the texts themselves when the words are another text's
    a = EvidenceEngine().read(out, chunks)
    b = EvidenceEngine().read(out, chunks, words=TextWords("Other."), chunk_words=[TextWords("x"), TextWords("y")])
    assert (a.matrix == b.matrix).all()


def test_equal_but_distinct_texts_are_read_as_the_same_text():
    """A caller's copy of the output (an equal str, another object) still uses the words."""
    out = "It opened in 1935 and isn't long."
    copy = "".join(list(out))
    assert copy is not out
    words = TextWords(copy)
    r1 = EvidenceEngine().read(out, ["It opened in 1932."], words=words)
    r2 = EvidenceEngine().read(out, ["It opened in 1932."])
    assert (r1.matrix == r2.matrix).all()


@settings(max_examples=800, deadline=None)
@given(st.text(_CHARS, max_size=40), st.integers(-3, 45), st.integers(-3, 45))
@example("A’Σ", 0, 3)
def test_the_lower_case_words_of_a_window(text, start, end):
    """``lows_in`` lowers each word of the window as written (a capital sigma alone, as ``read_span`` and the
    checks lower a word); ``lower_tokens`` lowers the window whole, as the similarity family did."""
    words = TextWords(text)
    assert words.lows_in(start, end) == [w.lower() for _, _, w in word_spans(text, start, end)]
    assert words.words_in(start, end) == [w for _, _, w in word_spans(text, start, end)]
    assert words.lows_in() == [t[2].lower() for t in words.spans]


_NUMBER_PIECES = st.sampled_from(list("0123456789 .,:%$ apmAPM\n\t_-x") + [
    "noon", "midnight", " million", " percent", "thousand", "5 pm", "17:00", "13:00 p.m.", "1,600", "$23.70",
    "\u20ac", "p.m.", "a.m. ", "\u0663", "\u00a0", "ab"])


@settings(max_examples=1500, deadline=None)
@given(st.lists(_NUMBER_PIECES, max_size=16).map("".join), st.integers(-3, 60), st.integers(-3, 60))
@example("17:00p.m. ", 0, 5)  # a time the whole text's scan dropped ("17" is no hour on a 12-hour clock),
@example("13:00 p.m.", 0, 5)  # which the window's scan keeps as "t17:00": the window is scanned again
@example(":m2", 2, 3)  # the whole text has no mention, the window one
@example("$ 5 and 7", 2, 5)
def test_a_windows_numbers_are_a_scan_of_the_window(text, start, end):
    """The text's number mentions are found once; a window's are those of a scan of the window (issue 41,
    session 9: the checks, the engine's value reader and the drift family took them from scans of their own)."""
    words = TextWords(text)
    lo, hi = max(start, 0), max(min(end, len(text)), 0)
    assert words.numbers_in(start, end) == (extract_numbers(text[lo:hi]) if lo < hi else [])
    assert words.numbers_in() == extract_numbers(text)


def test_the_compiled_word_offsets_back_textwords():
    """Compiled, TextWords keeps two arrays of offsets (no list of words); a str subclass is read as the
    characters it holds, and anything else is refused."""
    from evqual._build import kernel

    bounds = kernel("evqual.text._scan", "WordBounds")
    if bounds is None:
        pytest.skip("the compiled kernels are not built (or EVQUAL_PURE_PYTHON is set)")
    words = TextWords("It isn't 40 m long.")
    assert words._bounds is not None and len(words._bounds) == 6
    assert words.spans == word_spans(words.text)

    class Accessor(str):
        def __str__(self):
            return "something else"

    text = Accessor("Harbour Bank said no.")
    assert TextWords(text).spans == word_spans(str.__str__(text)) == word_spans(text)
    with pytest.raises(TypeError, match="expected a str"):
        bounds(b"bytes")
    assert len(bounds("")) == 0 and bounds("").words_in(0, 5) == [] and bounds("...").window(0, 3) == (0, 0)


# ---------------------------------------------------------------- word ids (issue 41, session 12)


def _scan_module():
    from evqual._build import kernel

    if kernel("evqual.text._scan", "WordBounds") is None:
        pytest.skip("the compiled scanner is not built (or EVQUAL_PURE_PYTHON is set)")
    from evqual.text import _scan

    return _scan


def _lows_reference(text, start, end):
    return [w.lower() for _, _, w in word_spans(text, start, end)]


def test_a_word_has_one_id_in_every_text_and_reads_as_one_str():
    scan = _scan_module()
    a, b = TextWords("The harbour opened."), TextWords("A HARBOUR, The Harbour and the harbour")
    ids_a = a._bounds.ids_in(0, len(a.text))
    ids_b = b._bounds.ids_in(0, len(b.text))
    assert ids_a[1] == ids_b[1] == ids_b[3] == ids_b[6]  # "harbour" lower-cased, as written in any case
    assert scan.word_of(ids_a[1]) == "harbour"
    assert a._bounds.ids_in(0, len(a.text), False)[0] == b._bounds.ids_in(0, len(b.text), False)[2]  # "The"
    assert a.lows_in(0, 19)[1] is b.lows_in(0, len(b.text))[6]  # the table's str, not a new slice
    assert a._bounds.ids_in(5, 19) == [-1, ids_a[2]]  # "arbour" is cut by the window: no id
    with pytest.raises(IndexError):
        scan.word_of(-1)
    assert scan.vocab_size() <= scan.VOCAB_MAX


@settings(max_examples=600, deadline=None)
@given(st.text(_CHARS, max_size=40), st.integers(-3, 45), st.integers(-3, 45), st.booleans())
@example("İstanbul ΣΑΣ Straße", 0, 30, False)
@example("ABC abc", 1, 6, True)
def test_words_read_through_the_table_are_the_scans_words_even_when_it_is_full(text, start, end, full):
    """A full table gives new words no id (-1); they are sliced from the text as before.  Either way the
    words of a window, as written and lower-cased, are the scan's."""
    scan = _scan_module()
    saved = scan.VOCAB_MAX
    if full:
        scan.VOCAB_MAX = scan.vocab_size()
    try:
        words = TextWords(text)
        assert words.spans_in(start, end) == word_spans(text, start, end)
        assert words.lows_in(start, end) == _lows_reference(text, start, end)
        assert words.words_in(start, end) == [w for _, _, w in word_spans(text, start, end)]
        ids = words._bounds.ids_in(start, end)
        assert len(ids) == len(word_spans(text, start, end))
        for k, low in zip(ids, words.lows_in(start, end)):
            assert k == -1 or scan.word_of(k) == low
    finally:
        scan.VOCAB_MAX = saved


def test_a_full_table_grows_no_more():
    scan = _scan_module()
    saved = scan.VOCAB_MAX
    scan.VOCAB_MAX = scan.vocab_size()
    try:
        text = "zqxwv1 Zqxwv2 zqxwv3"  # words no earlier test met
        words = TextWords(text)
        assert words.lows_in(0, len(text)) == ["zqxwv1", "zqxwv2", "zqxwv3"]
        assert words._bounds.ids_in(0, len(text)) == [-1, -1, -1]
        assert scan.vocab_size() == scan.VOCAB_MAX
    finally:
        scan.VOCAB_MAX = saved
