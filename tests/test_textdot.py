"""The text model's decision value (``evqual.models._fasttrees._tfidf_dot``): the compiled term index
(``evqual/models/_textdot.pyx``, issue 41) gives scikit-learn's float, and so does the Python path it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from evqual._build import kernel
from evqual.data import load_sample
from evqual.models import _fasttrees as ft

COMPILED = kernel("evqual.models._textdot", "TermIndex") is not None
needs_kernel = pytest.mark.skipif(not COMPILED, reason="the compiled term index is not built (pure Python)")

_WORDS = ["new", "york", "the", "of", "a", "x", "price", "usd", "149", "hours", "Über", "straße", "İstanbul",
          "ΣΑΣ", "snake_case", "__", "co2", "½", "٣٤", "don't", "e-mail"]


def _fit(ngram_range=(1, 2), sublinear_tf=True, lowercase=True, **kw):
    docs = [ex.output for ex in load_sample()] + [" ".join(_WORDS), "new york of the new york", "snake_case co2"]
    vec = TfidfVectorizer(ngram_range=ngram_range, sublinear_tf=sublinear_tf, lowercase=lowercase, min_df=1, **kw)
    X = vec.fit_transform(docs)
    y = np.arange(len(docs)) % 2
    lr = LogisticRegression(max_iter=500).fit(X, y)
    return vec, lr


def _sklearn(vec, lr, doc):
    return float(lr.decision_function(vec.transform([doc]))[0])


def _python_path(vec, lr, doc):
    """``_tfidf_dot`` with the compiled index set aside."""
    ft._tfidf_dot(vec, "", lr)  # (makes the cached lean text)
    lean = ft._CACHE[vec][1]
    saved, lean.index = lean.index, None
    try:
        return ft._tfidf_dot(vec, doc, lr)
    finally:
        lean.index = saved


@pytest.fixture(scope="module", params=[((1, 2), True, True), ((1, 1), True, True), ((1, 2), False, True),
                                        ((1, 2), True, False)], ids=["bigrams", "unigrams", "raw-tf", "cased"])
def model(request):
    ngram_range, sublinear, lowercase = request.param
    return _fit(ngram_range, sublinear, lowercase)


def test_every_path_gives_scikit_learns_float_on_the_sample(model):
    vec, lr = model
    for ex in load_sample():
        want = _sklearn(vec, lr, ex.output)
        assert ft._tfidf_dot(vec, ex.output, lr) == want
        assert _python_path(vec, lr, ex.output) == want


_TEXT = st.lists(st.one_of(st.sampled_from(_WORDS), st.sampled_from([" ", "  ", ".", ",", "\n", "_", "-", "'"]),
                           st.text(max_size=3)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_TEXT)
def test_every_path_gives_scikit_learns_float_on_any_text(model, doc):
    """Words of the vocabulary and around them anything: one-letter words (no token, and no break in a bigram),
    underscores (word characters to ``re``), letters whose lower case is longer ("İ"), digits of other
    scripts."""
    vec, lr = model
    want = _sklearn(vec, lr, doc)
    assert ft._tfidf_dot(vec, doc, lr) == want
    assert _python_path(vec, lr, doc) == want


def test_a_term_counted_past_the_log_table_takes_the_python_path():
    vec, lr = _fit()
    doc = "new york " * 5000  # each term 5,000 times: past LOG_TF_MAX
    assert ft._tfidf_dot(vec, doc, lr) == _sklearn(vec, lr, doc)


@needs_kernel
def test_the_compiled_index_is_used_for_the_default_analyser_only():
    vec, lr = _fit()
    ft._tfidf_dot(vec, "new york", lr)
    assert ft._CACHE[vec][1].index is not None
    for other in (dict(token_pattern=r"(?u)\b\w+\b"), dict(stop_words="english"), dict(ngram_range=(1, 3))):
        kw = {"ngram_range": (1, 2), **other}
        v2, lr2 = _fit(**kw)
        ft._tfidf_dot(v2, "new york", lr2)
        assert ft._CACHE[v2][1].index is None
        assert ft._tfidf_dot(v2, "the new york price", lr2) == _sklearn(v2, lr2, "the new york price")


@needs_kernel
def test_a_vocabulary_the_index_cannot_hold_takes_the_python_path():
    """A vocabulary whose column is outside the IDF's (a hand-edited model) makes no index; the answer is then
    scored as before, not refused by the compiled path."""
    vec, lr = _fit()
    broken = dict(vec.vocabulary_)
    broken["new"] = len(vec.idf_) + 5
    assert ft._term_index(type("V", (), {**{k: getattr(vec, k) for k in ("analyzer", "token_pattern",
                          "preprocessor", "tokenizer", "strip_accents", "stop_words", "ngram_range", "lowercase",
                          "sublinear_tf")}, "vocabulary_": broken})(), lr, vec.idf_, lr.coef_.ravel()) is None
    assert ft._term_index(vec, lr, vec.idf_, lr.coef_.ravel()) is not None


@needs_kernel
def test_the_log_table_is_numpys_log_wherever_a_count_stands():
    from evqual.models._textdot import LOG_TF_MAX

    table = np.log(np.arange(1, LOG_TF_MAX + 1, dtype=np.float64)) + 1.0
    rng = np.random.default_rng(0)
    for n in (1, 3, 8, 17, 100):
        counts = rng.integers(1, LOG_TF_MAX + 1, size=n).astype(np.float64)
        np.testing.assert_array_equal(np.log(counts) + 1.0, table[counts.astype(np.int64) - 1])


@needs_kernel
def test_a_bad_vocabulary_is_refused():
    from evqual.models._textdot import TermIndex

    idf, coef = np.ones(2), np.ones(2)
    with pytest.raises(TypeError):
        TermIndex({b"new": 0}, idf, coef, 0.0, True, True)
    with pytest.raises(ValueError, match="outside"):
        TermIndex({"new": 2}, idf, coef, 0.0, True, True)
    with pytest.raises(ValueError, match="outside"):
        TermIndex({"new": -1}, idf, coef, 0.0, True, True)
    with pytest.raises(ValueError, match="one value per column"):
        TermIndex({"new": 0}, idf, np.ones(3), 0.0, True, True)
    ix = TermIndex({"new": 0, "new york": 1, "a  b": 1, " x": 0}, idf, coef, 0.5, True, True)
    with pytest.raises(RuntimeError):
        ix.__init__({"new": 0}, idf, coef, 0.0, True, True)
    assert ix.decision("") == 0.5
    # an index made without __init__, or whose making failed, is refused rather than read
    with pytest.raises(RuntimeError):
        TermIndex.__new__(TermIndex).decision("new york")
    half = TermIndex.__new__(TermIndex)
    with pytest.raises(ValueError):
        half.__init__({"new": 0, "york": 9}, idf, coef, 0.0, True, True)
    with pytest.raises(RuntimeError):
        half.decision("new york")
    assert ix.decision("new york") == pytest.approx(0.5 + np.sqrt(2.0), rel=1e-15)
