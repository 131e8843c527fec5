"""Time and memory linear in the input: regression tests for the quadratic spots of the scoring path.

No test here times anything (speed targets are met by ``python scripts/bench.py
sizes``); memory is bounded with ``tracemalloc`` and work is counted (characters
copied or scanned), and every rewritten lookup is checked against the naive
version it replaced.
"""

from __future__ import annotations

import random
import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.data import load_sample, make_example
from evqual.features import EvidenceFeaturizer
from evqual.features import _similarity
from evqual.features._similarity import ContextCache, split_tokens
from evqual.scoring._scorer import _sentence_of
from evqual.text import split_sentences

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _long_answer(n_sentences: int, *, seed: int = 0, vocabulary: int = 12_000) -> str:
    rng = random.Random(seed)
    words = ["".join(rng.choice(_LETTERS) for _ in range(rng.randint(5, 9))) for _ in range(vocabulary)]
    return " ".join(" ".join(rng.choice(words) for _ in range(6)).capitalize() + "." for _ in range(n_sentences))


# ------------------------------------------------------------------ sentence-versus-chunk matching
def test_sentence_match_memory_does_not_grow_with_sentences_times_vocabulary():
    """2,000 sentences with ~10,000 distinct words: the dense sentences x terms matrix alone was 160 MB."""
    ex = make_example(query="q?", context=["Paris is the capital of France.", "The tower was built in 1889."],
                      output=_long_answer(2000), task_type="QA")
    fz = EvidenceFeaturizer(level="sentence").fit([ex])
    tracemalloc.start()
    try:
        X = fz.transform([ex])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert X.shape == (2000, fz.n_features_out_) and np.isfinite(X).all()
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def _matches(examples, monkeypatch, dense_cells, budget=None):
    monkeypatch.setattr(_similarity, "DENSE_CELLS", dense_cells)
    if budget is not None:
        monkeypatch.setattr(_similarity, "_PAIR_BUDGET", budget)
    cache = ContextCache()
    out = []
    for ex in examples:
        toks = [split_tokens(ex.output[s:e])[0] for s, e in split_sentences(ex.output)]
        out.append(cache.get(ex).match(toks))
    return out


FIELDS = ("nearest", "jaccard", "recall", "precision", "tfidf", "bm25", "support", "n_content")


def test_sparse_path_agrees_with_the_dense_path(monkeypatch):
    """Same measures up to the rounding of sums (the dense path is kept for small inputs, bit for bit)."""
    examples = load_sample().examples
    dense = _matches(examples, monkeypatch, 1 << 18)
    sparse_ = _matches(examples, monkeypatch, -1)
    for d, s in zip(dense, sparse_):
        for name in FIELDS:
            a, b = getattr(d, name), getattr(s, name)
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=name)


def test_sparse_path_blocks_do_not_change_results(monkeypatch):
    """Blocks of sentences are a memory bound only: one sentence per block gives the same floats."""
    examples = load_sample().examples[:24]
    whole = _matches(examples, monkeypatch, -1)
    blocks = _matches(examples, monkeypatch, -1, budget=1)
    for a, b in zip(whole, blocks):
        for name in FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("exact_pairs", [None, 8])
def test_one_sort_of_a_blocks_products_gives_the_floats_of_three(monkeypatch, exact_pairs):
    """_sorted_alike sorts the three products of a block with one permutation (issue 41, session 4): the
    same floats as sorting each alone, with every pair counted and with pairs from the rarer terms only."""
    examples = load_sample().examples[:30]
    if exact_pairs is not None:
        monkeypatch.setattr(_similarity, "EXACT_PAIRS", exact_pairs)
    one = _matches(examples, monkeypatch, -1)
    monkeypatch.setattr(_similarity, "_sorted_alike", lambda prods: [_similarity._sorted(m) for m in prods])
    three = _matches(examples, monkeypatch, -1)
    for a, b in zip(one, three):
        for name in FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 40), st.integers(1, 30), st.data())
def test_sorted_alike_equals_sorting_each_product(n, v, c, data):
    from scipy import sparse

    def random_csr(rows, cols, seed, density):
        return sparse.random(rows, cols, density=density, format="csr", random_state=seed,
                             data_rvs=lambda k: np.arange(1, k + 1, dtype=np.float64))

    seed = data.draw(st.integers(0, 2**16))
    a = random_csr(n, v, seed, 0.4)
    b = random_csr(v, c, seed + 1, 0.5)
    prods = [a @ b, (a * 2.0) @ (b * 3.0), a @ (b * 0.5)]
    got = _similarity._sorted_alike([m.copy() for m in prods])
    want = [_similarity._sorted(m.copy()) for m in prods]  # (_sorted sorts in place)
    for g, w in zip(got, want):
        assert np.array_equal(g.indptr, w.indptr) and np.array_equal(g.indices, w.indices)
        assert g.data.tobytes() == w.data.tobytes() and g.has_sorted_indices


def test_sparse_path_handles_empty_sentences_and_contexts(monkeypatch):
    idx = _similarity.ContextIndex(["paris is in france", "berlin is in germany"])
    sentences = [[], ["paris", "france"], ["atlantis"], ["berlin", "germany", "paris"], ["paris", "berlin"]]
    dense = idx.match(sentences)
    monkeypatch.setattr(_similarity, "DENSE_CELLS", -1)
    m = idx.match(sentences)
    assert m.nearest.tolist() == [0, 0, 0, 1, 0]  # no shared word: chunk 0; ties: the first chunk
    assert m.jaccard.tolist()[:3] == [1.0, 1.0, 0.0] and m.support.tolist() == [1.0, 1.0, 0.0, 1.0, 1.0]
    for name in FIELDS:
        np.testing.assert_allclose(getattr(m, name), getattr(dense, name), rtol=1e-12, err_msg=name)
    empty = _similarity.ContextIndex([]).match([["paris"], []])
    assert empty.nearest.tolist() == [-1, -1] and empty.tfidf.tolist() == [0.0, 1.0]


# ------------------------------------------------------------------ span -> sentence lookup
def _sentence_of_naive(offsets, pos):
    for i, (s, e) in enumerate(offsets):
        if s <= pos < e:
            return i
    return -1


@st.composite
def _offsets(draw):
    gaps = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6)), max_size=30))
    out, pos = [], 0
    for gap, length in gaps:
        out.append((pos + gap, pos + gap + length))
        pos += gap + length
    return out


@settings(max_examples=300, deadline=None)
@given(_offsets(), st.lists(st.integers(-3, 250), max_size=40))
def test_sentence_of_equals_the_linear_scan(offsets, positions):
    starts = [s for s, _ in offsets]
    for pos in positions:
        want = _sentence_of_naive(offsets, pos)
        assert _sentence_of(offsets, pos) == want
        assert _sentence_of(offsets, pos, starts) == want


# ------------------------------------------------------------------ work counted on long inputs
class _CountingStr(str):
    """A str that counts the characters of every slice taken from it."""

    copied = 0

    def __getitem__(self, key):
        got = super().__getitem__(key)
        if isinstance(key, slice):
            _CountingStr.copied += len(got)
        return got


def _copied_while(fn, text: str) -> int:
    _CountingStr.copied = 0
    fn(_CountingStr(text))
    return _CountingStr.copied


def test_sentence_split_copies_linear_text_on_long_runs_of_false_stops():
    """``"J. J. J. ..."``: every period is an initial, so the segment grows; each test copied all of it."""
    from evqual.text._sentences import _split

    from evqual.text import MAX_SENTENCE_CHARS

    text = "J. " * 3000 + "went home."
    pieces = [text[s:e] for s, e in _split(text)]  # one sentence, cut at the cap (issue 39)
    assert " ".join(pieces) == text.strip() and all(len(p) <= MAX_SENTENCE_CHARS for p in pieces)
    assert _copied_while(_split, text) < 10 * len(text)


def test_entity_extraction_copies_linear_text_on_one_long_sentence():
    """One sentence with thousands of capitalised words: the text before each run was copied."""
    from evqual.text._entities import RegexEntityExtractor

    text = " ".join(f"Alpha{i} beta" for i in range(3000))
    ents = RegexEntityExtractor().extract(text)
    assert len(ents) == 3000 and ents[1].text == "Alpha1"
    assert _copied_while(RegexEntityExtractor().extract, text) < 10 * len(text)


# the sentence splitter's false-stop test as it was (copying the segment): the reference semantics


def _false_stop_naive(text, seg_start, punct_pos, next_pos):
    from evqual.text._sentences import ABBREVIATIONS

    if text[punct_pos] != ".":
        return False
    before = text[seg_start:punct_pos]
    if re.match(r"^\s*(?:\d{1,3}|[A-Za-z]|[ivxIVX]{1,4})[.)]?$", before):
        return True
    m = re.search(r"([\w.]+)$", before)
    if m:
        word = m.group(1).lower().strip(".")
        if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            return True
    return next_pos < len(text) and text[next_pos].islower()


def _split_naive(text):
    from evqual.text._sentences import _BOUNDARY_RE, _add

    spans, seg_start = [], 0
    for m in _BOUNDARY_RE.finditer(text):
        if text[m.start()] != "\n" and _false_stop_naive(text, seg_start, m.start(), m.end()):
            continue
        end = m.start() if text[m.start()] == "\n" else m.start() + len(m.group().rstrip())
        _add(text, seg_start, end, spans)
        seg_start = m.end()
    _add(text, seg_start, len(text), spans)
    return spans


_ATOMS = ["J", ".", " ", "\n", "Mr", "mr", "e.g", "U.S", "1", "12", "iv", "a", ")", "?", "!", "'", "\u201d",
          "word", "Word", "...", "\t", "x.y", "_", "Dr", "x" * 70, "." * 70, "ab.c" * 30]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_ATOMS), max_size=40))
def test_sentence_split_equals_the_copying_version(atoms):
    from evqual.text._sentences import _split

    text = "".join(atoms)
    assert _split(text) == _split_naive(text)


# ------------------------------------------------------------------ refusals, reasons, record fields
def test_refusal_flags_equal_the_linear_scan():
    from evqual.features._surface import _REFUSAL_RE, refusal_sentence

    out = " ".join(["The passages do not mention it.", "Paris is big.", "I'm sorry, unable to answer that."] * 50)
    sentences = split_sentences(out)
    naive = np.zeros(len(sentences))
    for m in _REFUSAL_RE.finditer(out):
        for i, (s, e) in enumerate(sentences):
            if s <= m.start() and m.end() <= e:
                naive[i] = 1.0
                break
    flags = refusal_sentence(out, sentences)
    assert flags.sum() == 100 and np.array_equal(flags, naive)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=12),
       st.lists(st.tuples(st.integers(0, 60), st.integers(1, 8)), max_size=12))
def test_reason_overlap_test_equals_any(covered, runs):
    from evqual.explain._reasons import _overlap_test

    covered = [(s, s + n) for s, n in covered]
    overlaps = _overlap_test(covered)
    for a, n in runs:
        b = a + n
        assert overlaps(a, b) == any(a < ce and b > cs for cs, ce in covered)


def test_record_field_lookup_finds_every_mentioned_field():
    """Looking fields up by token gives exactly the fields a scan over all of them finds."""
    from evqual.features._structure import _norm, candidate_fields, field_lookup, mentions_field, parse_fields

    checked = 0
    for ex in load_sample().examples:
        fields, _ = parse_fields(ex.chunk_texts)
        if not fields:
            continue
        lookup = field_lookup(fields)
        for s, e in split_sentences(ex.output):
            toks = split_tokens(ex.output[s:e])[0]
            tset = {_norm(t) for t in toks} | set(toks)
            scan = [j for j, (_, _, phrase, joined) in enumerate(fields) if mentions_field(phrase, joined, tset)]
            found = [j for j in candidate_fields(lookup, tset) if mentions_field(fields[j][2], fields[j][3], tset)]
            assert found == scan
            checked += bool(scan)
    assert checked > 10


# ------------------------------------------------------------------ the size benchmark
def test_size_benchmark_runs_a_case_in_a_fresh_process():
    from evqual.bench import bench_sizes, size_case_example

    with pytest.raises(ValueError, match="unknown size case"):
        size_case_example("answer_huge")
    got = bench_sizes(("answer_1k",), timeout=300)
    (row,) = got["cases"]
    assert row["status"] == "ok" and row["sentences"] > 900 and row["seconds"] > 0
    assert row["peak_rss_mb"] >= row["rss_before_scoring_mb"] > 0


def test_splitter_offsets_are_what_the_binary_searches_need():
    """Span and refusal lookups assume the splitter's offsets are ordered and non-overlapping."""
    text = _long_answer(50) + "\n\nJ. K. Rowling wrote it. 1. First item. Mr. Smith left!"
    offsets = split_sentences(text)
    starts = [s for s, _ in offsets]
    assert all(s < e for s, e in offsets) and all(e <= s2 for (_, e), (s2, _) in zip(offsets, offsets[1:]))
    assert [_sentence_of(offsets, s, starts) for s in starts] == list(range(len(offsets)))
