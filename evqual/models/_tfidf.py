"""evqual's TF-IDF vectoriser: scikit-learn's, saved compactly.

Its own module because it derives from scikit-learn's ``TfidfVectorizer``:
scoring with a saved model never imports it (issue 41).  Saved models name it
``evqual.models._estimators.CompactTfidfVectorizer``, where it is importable.
"""

from __future__ import annotations

from sklearn.feature_extraction.text import TfidfVectorizer

from ._estimators import decode_vocabulary, encode_vocabulary

__all__ = ["CompactTfidfVectorizer"]


class CompactTfidfVectorizer(TfidfVectorizer):
    """:class:`~sklearn.feature_extraction.text.TfidfVectorizer` that drops ``stop_words_`` after fitting.

    ``stop_words_`` lists every term pruned by ``min_df``/``max_features``
    (hundreds of thousands of n-grams); it is only there for inspection, and
    scikit-learn's documentation suggests deleting it before saving a model.

    Saved (``__getstate__``, what pickle and skops store), the ``vocabulary_``
    dict becomes two flat arrays: ``vocabulary_utf8_``, the UTF-8 bytes of the
    terms in column order (``uint8``), and ``vocabulary_offsets_``, where each
    term starts and ends in them (``int64``, ``n_terms + 1`` values).  A dict
    of 50,000 terms is 100,000 skops nodes to audit and construct; two arrays
    are two.  ``__setstate__`` validates them (offsets from 0 to the end, never
    decreasing; valid UTF-8; unique terms) and rebuilds the same dict; a state
    holding the dict itself (models saved before) is read as it is.

    >>> vec = CompactTfidfVectorizer().fit(["a red apple", "a green apple"])
    >>> state = vec.__getstate__()
    >>> "vocabulary_" in state, state["vocabulary_offsets_"].tolist()
    (False, [0, 5, 10, 13])
    >>> clone = CompactTfidfVectorizer.__new__(CompactTfidfVectorizer)
    >>> clone.__setstate__(state)
    >>> clone.vocabulary_ == vec.vocabulary_
    True
    """

    def __getstate__(self):
        state = super().__getstate__()
        vocab = state.get("vocabulary_")
        if isinstance(vocab, dict):
            state = dict(state)
            del state["vocabulary_"]
            state["vocabulary_utf8_"], state["vocabulary_offsets_"] = encode_vocabulary(vocab)
        return state

    def __setstate__(self, state):
        if "vocabulary_utf8_" in state or "vocabulary_offsets_" in state:
            state = dict(state)
            state["vocabulary_"] = decode_vocabulary(state.pop("vocabulary_utf8_", None),
                                                     state.pop("vocabulary_offsets_", None))
        super().__setstate__(state)

    def _compact(self):
        self.stop_words_ = None
        # plain ints: skops stores each numpy scalar as a file of its own
        self.vocabulary_ = {term: int(i) for term, i in self.vocabulary_.items()}

    def fit(self, raw_documents, y=None):
        super().fit(raw_documents, y)
        self._compact()
        return self

    def fit_transform(self, raw_documents, y=None):
        X = super().fit_transform(raw_documents, y)
        self._compact()
        return X


CompactTfidfVectorizer.__module__ = "evqual.models._estimators"  # the name saved models give it
