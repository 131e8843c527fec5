"""Context once (issue 23): a fitted featurizer keeps context indexes between calls, bounded, never saved,
and what it keeps changes no feature."""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from evqual.data import load_sample, make_example
from evqual.evidence import EvidenceEngine
from evqual.features import CONTEXT_CACHE_CHARS, CONTEXT_CACHE_SIZE, ContextCache, EvidenceFeaturizer
from evqual.models import Detector, save_detector

SAMPLE = list(load_sample().examples)[:24]


@pytest.fixture(scope="module")
def fitted():
    return EvidenceFeaturizer().fit(SAMPLE)


def _fresh(featurizer):
    return clone(featurizer).fit(SAMPLE)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(len(SAMPLE))), cut=st.integers(1, len(SAMPLE)))
def test_kept_contexts_change_no_feature(fitted, order, cut):
    # the same answers in any order and any batches, through warm caches, give the features a fresh one does
    want = _fresh(fitted).transform(SAMPLE)
    shuffled = [SAMPLE[i] for i in order]
    got = np.vstack([fitted.transform(shuffled[:cut]), fitted.transform(shuffled[cut:])]) \
        if cut < len(SAMPLE) else fitted.transform(shuffled)
    back = np.empty_like(got)
    back[list(order)] = got
    np.testing.assert_array_equal(back, want)


def test_a_fitted_featurizer_keeps_contexts_between_calls(fitted):
    fitted.transform(SAMPLE[:6])
    _, cache, engine = fitted._context_caches()
    kept = len(cache)
    assert 0 < kept <= CONTEXT_CACHE_SIZE
    fitted.transform(SAMPLE[:6])
    assert len(cache) == kept  # the same contexts again: nothing new


def test_the_context_cache_is_bounded_by_count_and_characters():
    exs = [make_example(query="q", context=f"Passage {i}. " + "x" * 40, output="o") for i in range(5)]
    cache = ContextCache(maxsize=3)
    for ex in exs:
        cache.get(ex)
    assert len(cache) == 3
    cache = ContextCache(maxsize=10, max_chars=120)
    for ex in exs:
        cache.get(ex)
    assert len(cache) == 2 and cache._chars <= 120
    big = make_example(query="q", context="y" * 500, output="o")
    assert cache.get(big) is not None and len(cache) == 2  # indexed, not kept
    assert cache.get(exs[-1]) is cache.get(exs[-1])  # a kept context is reused


def test_the_engine_cache_is_bounded_by_count_and_characters():
    eng = EvidenceEngine(cache_size=2)
    for i in range(4):
        eng.index([f"Passage {i} says little."])
    assert len(eng._cache) == 2
    eng = EvidenceEngine(cache_size=10, max_chars=50)
    for i in range(4):
        eng.index([f"Passage {i} says little."])  # 22 characters each
    assert len(eng._cache) == 2 and eng._chars <= 50
    eng.index(["z" * 80])
    assert len(eng._cache) == 2
    assert eng.index(["Passage 3 says little."]) is eng.index(["Passage 3 says little."])


def test_the_caches_are_never_saved(fitted, tmp_path, evqual_sample_detector):
    fitted.transform(SAMPLE[:3])
    assert "_contexts" in fitted.__dict__
    assert "_contexts" not in fitted.__getstate__()
    copy = pickle.loads(pickle.dumps(fitted))  # a lock would not pickle
    assert "_contexts" not in copy.__dict__
    np.testing.assert_array_equal(copy.transform(SAMPLE[:3]), fitted.transform(SAMPLE[:3]))
    assert "_contexts" not in clone(fitted).__dict__
    # a detector that has scored saves and loads through the audit, and scores the same
    det = evqual_sample_detector
    before = det.predict_proba(SAMPLE[:4])
    folder = save_detector(det, tmp_path / "m")
    assert np.array_equal(Detector.load(folder).predict_proba(SAMPLE[:4]), before)


def test_the_bounds_are_documented_constants():
    assert CONTEXT_CACHE_SIZE >= 8 and CONTEXT_CACHE_CHARS >= 100_000


@pytest.mark.parametrize("level", ["response", "sentence"])
def test_transform_in_chunks_gives_the_matrix_of_one_piece(monkeypatch, level):
    """transform analyses TRANSFORM_CHUNK examples at a time (bounded memory); rows never depend on the chunk."""
    import evqual.features._featurizer as featurizer_module

    examples = load_sample().examples[:40]
    whole = EvidenceFeaturizer(level=level).fit(examples).transform(examples)
    assert featurizer_module.TRANSFORM_CHUNK >= 40  # the reference is one piece
    for chunk in (1, 7, 39):
        monkeypatch.setattr(featurizer_module, "TRANSFORM_CHUNK", chunk)
        got = EvidenceFeaturizer(level=level).fit(examples).transform(examples)
        assert got.shape == whole.shape and np.array_equal(got, whole, equal_nan=True)


def test_one_analysis_per_context_holds_the_engines_reading():
    """Issue 41, session 8: the evidence engine's reading of a context lives in the context's analysis
    (ContextIndex.evidence_index), built once for every answer to it; the engine keeps no second copy."""
    from evqual.features import analyze_many

    cache, engine = ContextCache(), EvidenceEngine(cache_size=8)
    exs = SAMPLE[:12]
    analyze_many(exs, cache=cache, engine=engine)
    assert len(engine._cache) == 0
    idx = cache.get(exs[0])
    assert idx.evidence_index is idx.evidence_index
    # the kept reading is what the engine builds for those chunks
    fresh = EvidenceEngine().index(exs[0].chunk_texts)
    assert idx.evidence_index.units == fresh.units and idx.evidence_index.postings == fresh.postings
    assert idx.evidence_index.idf == fresh.idf


def test_reading_with_a_kept_index_is_reading_without_it():
    from evqual.evidence import EvidenceIndex

    chunks = ["Buses run every 30 minutes on Sundays.", "Trams do not run at night. The museum opened in 1932."]
    out = "Buses run every ten minutes on Sundays, and trams run at night."
    idx = EvidenceIndex(chunks)
    a = EvidenceEngine().read(out, chunks, "When do buses run?")
    b = EvidenceEngine(cache_size=0).read(out, list(chunks), "When do buses run?", index=idx)
    assert (a.matrix == b.matrix).all()
    assert [[repr(d) for d in c.differences] for c in a.claims] == [[repr(d) for d in c.differences] for c in b.claims]
    with pytest.raises(ValueError, match="not the EvidenceIndex of these chunks"):
        EvidenceEngine().read(out, chunks[:1], index=idx)
    with pytest.raises(TypeError, match="index must be an EvidenceIndex"):
        EvidenceEngine().read(out, chunks, index=object())
    # one index serves every query: the query is read with each answer
    q1 = EvidenceEngine().read("It opened in 1932.", chunks, "When did the museum open?", index=idx)
    q2 = EvidenceEngine().read("It opened in 1932.", chunks, "Which year?", index=idx)
    assert q1.matrix.shape == q2.matrix.shape


def test_a_long_query_is_read_and_not_kept():
    from evqual.evidence import _engine

    long_query = "Does the museum open on Sundays? " * 200
    before = _engine._query_keys_cached.cache_info().currsize
    got = _engine._query_keys(long_query)
    assert got == _engine._read_query_keys(long_query) and "w:museum" in got
    assert _engine._query_keys_cached.cache_info().currsize == before


def test_a_context_let_go_keeps_no_readers():
    """An analysis keeps its ContextIndex for the explanations; the checks' units and the engine's reading
    live only as long as the cache keeps the context (issue 41, session 8: the first version, which kept
    them with every analysis of a batch, measured 8 MB more on 300 new contexts)."""
    from evqual.features import analyze_many

    cache = ContextCache(maxsize=2)
    exs = [make_example(query="When?", context=f"Passage {i} says it opened in 19{i}0.", output="It opened in 1930.")
           for i in range(4)]
    analyses = analyze_many(exs, cache=cache)
    first, last = analyses[0].index, analyses[-1].index
    assert first._evidence_index is None and first._evidence_units is None  # let go by the cache
    assert last._evidence_index is not None and last._evidence_units is not None  # still kept
    assert first.evidence_index.units == last.evidence_index.units  # rebuilt on request, same reading
    small = ContextCache(maxsize=4, max_chars=10)  # too large to keep: released after its analysis
    (a,) = analyze_many(exs[:1], cache=small)
    assert not a.index.kept and a.index._evidence_index is None and len(small) == 0


def test_long_queries_are_read_by_the_features_and_not_kept():
    """Issue 41, session 14: the features' and the checks' query caches (4,096 queries each) kept queries of any
    length; like the engine's, they keep none longer than 4,000 characters, and read a long one the same way."""
    from evqual.features import _analysis, _checks

    split_tokens = _analysis.split_tokens
    long_query = "Does the museum open on Sundays at 10 am? " * 120
    caches = (_analysis._query_tokens_cached, _checks._query_words_cached, _checks._query_stems_cached)
    before = [c.cache_info().currsize for c in caches]
    assert _analysis._query_tokens(long_query) == split_tokens(long_query)
    assert _checks._query_words(long_query) == _checks._read_query_words(long_query) and "museum" in \
        _checks._query_words(long_query)
    assert _checks._query_stems(long_query) == _checks._read_query_stems(long_query)
    assert [c.cache_info().currsize for c in caches] == before
    short = "Does the museum open on Sundays?"
    assert _checks._query_words(short) is _checks._query_words(short)  # a short one is kept


def test_the_process_wide_memos_keep_no_long_word():
    """Issue 41, session 14: the memos of word keys, stems, aliases and word ids were bounded in entries, not in
    bytes: a 5,000-character word was kept whole with its key, so that a service sent such words could grow by
    gigabytes.  Now a word past the memos' length is read to the same result and not kept."""
    from evqual.evidence import EvidenceIndex, _engine, _lexicon, _reading
    from evqual.features import _checks
    from evqual.text import TextWords

    long_word = "zq" + "x" * 4998
    name = "Zq" + "y" * 4998
    text = f"The {long_word} of {name} opened in 1932. {name} said the {long_word} stays."
    got = _reading.read_span(text)
    assert "w:" + _lexicon.stem(long_word) in got.keys and "n:" + name.lower() in got.keys
    EvidenceIndex([text]).present("w:" + _lexicon.stem(long_word))
    EvidenceEngine().read(f"The {long_word} opened in 1932.", [text], index=EvidenceIndex([text]))
    ev = _checks.EvidenceUnits([text])
    for seg in range(len(ev.spans)):
        ev.segment_items(seg)
    _checks.stem(long_word)
    memos = [(_reading, "_WORD_KEYS"), (_reading, "_NAME_KEYS"), (_lexicon, "_STEMS"), (_engine, "_ALIASES"),
             (_engine, "_CANON"), (_checks, "_STEM_MEMO"), (_checks, "_CONTENT_STEM")]
    seen = [getattr(module, name) for module, name in memos if hasattr(module, name)]  # (a compiled module's
    # C-level dicts are not visible: the pure-Python pass of .ci/run checks them)
    assert len(seen) >= 4
    for memo in seen:
        assert all(len(k) <= 64 for k in memo)
    words = TextWords(text)
    ids = words._bounds.ids_in(0, len(text)) if getattr(words, "_bounds", None) is not None else []
    assert all(k == -1 for k, (_, _, w) in zip(ids, words.spans_in(0, len(text))) if len(w) > 64)
    assert words.lows_in(0, len(text))[1] == long_word  # the word itself, sliced from the text
