"""Scoring without scikit-learn: stand-ins for the scikit-learn objects of a saved model.

A saved detector holds scikit-learn objects (histogram gradient boosting,
a TF-IDF vectoriser, a logistic regression, Platt's sigmoid); importing
scikit-learn to rebuild them cost a scoring process more than a second,
most of its start-up (issue 41).  Scoring needs only their fitted arrays, so
a *lean* load (``load_detector(..., lean=True)``, what
:meth:`evqual.scoring.Scorer.load` does) builds each of them as a stand-in of
this module instead: the same attributes, read from the same audited packed
file, and only the methods scoring calls, computed as evqual's fast paths
compute them for the scikit-learn objects (:mod:`evqual.models._fasttrees`:
the tree walker, the TF-IDF dot product, the sigmoid), so a lean detector's
results equal a full one's to the last bit (``tests/test_lean.py``).

A stand-in is never a scikit-learn object: anything else (fitting, adapting,
saving, scikit-learn's own methods) needs a full load.  A model holding a
type without a stand-in (random forests, isotonic calibration, scalers)
loads fully.

>>> from evqual.models import default_model_path, load_detector
>>> det = load_detector(default_model_path(), lean=True)
>>> lean_name(det.model_.response_model_).rpartition(".")[2], det.lean_
('HistGradientBoostingClassifier', True)
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["LEAN_TYPES", "LeanObject", "lean_name"]


class LeanObject:
    """A stand-in: the saved attributes of the scikit-learn object named :attr:`stands_for`."""

    stands_for: str = ""
    """The scikit-learn class (``module.qualname``, as saved files name it) this object stands in for."""

    def __init__(self, *args):
        self._args = args  # a ``$reduce`` type's constructor arguments (none for the losses)

    def __setstate__(self, state: dict) -> None:
        _set(self, state)

    def __repr__(self) -> str:
        return f"<lean {self.stands_for.rpartition('.')[2]}>"


_OWN: dict = {}


def _set(obj, state: dict) -> None:
    """``obj``'s attributes from a saved state; a name of the class's own (a method, ``stands_for``) is
    refused, so that a file cannot put data where scoring calls code."""
    own = _OWN.get(type(obj))
    if own is None:
        own = _OWN[type(obj)] = frozenset(dir(type(obj)))
    for key in state:
        if not isinstance(key, str) or key in own:
            raise ValueError(f"a {type(obj).__name__}'s saved state names {str(key)[:40]!r}, which is not an "
                             f"attribute it saves")
    obj.__dict__.update(state)


def lean_name(obj) -> str | None:
    """The scikit-learn class ``obj`` stands in for, or ``None`` when it is not a stand-in."""
    return type(obj).stands_for if isinstance(obj, LeanObject) else None


class HistGradientBoostingClassifier(LeanObject):
    """Binary histogram gradient boosting: ``predict_proba`` walks every tree at once (the same floats as
    scikit-learn's, :func:`evqual.models.hgb_proba`)."""

    stands_for = "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingClassifier"

    def predict_proba(self, X) -> np.ndarray:
        from ._fasttrees import _compilable, hgb_proba

        if not _compilable(self):
            raise ValueError("only a binary model without categorical splits scores without scikit-learn")
        return hgb_proba(self, X)


class Pipeline(LeanObject):
    """A pipeline ``[..., vectoriser, logistic regression]``: its probability is evqual's row-by-row linear
    score (:func:`evqual.models._fasttrees.fast_proba`)."""

    stands_for = "sklearn.pipeline.Pipeline"

    def predict_proba(self, X) -> np.ndarray:
        from ._fasttrees import _pipeline_linear_score

        z = _pipeline_linear_score(self, X)
        if z is None:
            raise ValueError("only a pipeline ending in a binary logistic regression scores without scikit-learn")
        from ._fasttrees import expit

        p = expit(z)
        return np.column_stack([1.0 - p, p])


class LogisticRegression(LeanObject):
    """A binary logistic regression's coefficients (read by the pipeline's linear score)."""

    stands_for = "sklearn.linear_model._logistic.LogisticRegression"


class SigmoidCalibration(LeanObject):
    """Platt's sigmoid ``1 / (1 + exp(a x + b))``: :meth:`predict` is scikit-learn's formula."""

    stands_for = "sklearn.calibration._SigmoidCalibration"

    def predict(self, T) -> np.ndarray:
        from ._fasttrees import expit

        T = np.asarray(T, dtype=np.float64).ravel()
        return expit(-(self.a_ * T + self.b_))


class TfidfTransformer(LeanObject):
    """The IDF weights of a TF-IDF vectoriser."""

    stands_for = "sklearn.feature_extraction.text.TfidfTransformer"


class CompactTfidfVectorizer(LeanObject):
    """evqual's TF-IDF vectoriser (:class:`evqual.models._tfidf.CompactTfidfVectorizer`): its vocabulary
    (decoded and validated as the full class does) and scikit-learn's word analyser, for the parameters
    evqual's methods use (:data:`ANALYSER_PARAMS`); any other setting loads fully."""

    stands_for = "evqual.models._estimators.CompactTfidfVectorizer"
    also = "sklearn.feature_extraction.text.TfidfVectorizer"

    def __setstate__(self, state: dict) -> None:
        from ._estimators import decode_vocabulary

        state = dict(state)
        if "vocabulary_utf8_" in state or "vocabulary_offsets_" in state:
            state["vocabulary_"] = decode_vocabulary(state.pop("vocabulary_utf8_", None),
                                                     state.pop("vocabulary_offsets_", None))
        _set(self, state)

    @property
    def idf_(self) -> np.ndarray:
        return self._tfidf.idf_

    def analyser_supported(self) -> bool:
        """Whether :meth:`build_analyzer` is scikit-learn's analyser for this vectoriser's parameters."""
        d = self.__dict__
        return (all(d.get(k, object()) == v for k, v in ANALYSER_PARAMS.items())
                and isinstance(d.get("token_pattern"), str) and isinstance(d.get("lowercase"), bool)
                and _ngram_range(d.get("ngram_range")) is not None)

    def build_analyzer(self):
        """scikit-learn's ``build_analyzer()`` for a word analyser without preprocessor, tokenizer, accent
        stripping or stop words: lower-case (when ``lowercase``), the token pattern's matches, then the
        n-grams of ``ngram_range`` in scikit-learn's order."""
        if not self.analyser_supported():
            raise ValueError("this vectoriser's analyser needs scikit-learn (load the model fully)")
        find = re.compile(self.token_pattern).findall
        lower = self.lowercase
        min_n, max_n = _ngram_range(self.ngram_range)

        def analyse(doc: str) -> list:
            if isinstance(doc, bytes):
                doc = doc.decode("utf-8", "strict")
            if doc is np.nan:
                raise ValueError("np.nan is an invalid document, expected byte or unicode string.")
            tokens = find(doc.lower() if lower else doc)
            if max_n == 1:
                return tokens
            lo = min_n
            out = list(tokens) if lo == 1 else []
            if lo == 1:
                lo = 2
            n_tok = len(tokens)
            for n in range(lo, min(max_n + 1, n_tok + 1)):
                # the n-grams from each position in order, joined in C ("a b" from ("a", "b"), as from the slice)
                out.extend(map(" ".join, zip(*[tokens[k:] for k in range(n)])))
            return out

        return analyse


def _ngram_range(value):
    if (isinstance(value, (tuple, list)) and len(value) == 2 and all(type(v) is int for v in value)
            and 1 <= value[0] <= value[1] <= 8):
        return value[0], value[1]
    return None


ANALYSER_PARAMS = {"analyzer": "word", "input": "content", "encoding": "utf-8", "decode_error": "strict",
                   "preprocessor": None, "tokenizer": None, "strip_accents": None, "stop_words": None}
"""The vectoriser parameters :meth:`CompactTfidfVectorizer.build_analyzer` reproduces (evqual's methods')."""


class RandomGenerator(LeanObject):
    """A numpy random generator's saved state (a boosting model's feature subsampler, which prediction never
    draws from): a lean load keeps the checked state and does not import ``numpy.random``."""

    stands_for = "numpy.random._generator.Generator"

    def __init__(self, state: dict | None = None):
        super().__init__()
        self.state = state


class _State(LeanObject):
    """Attributes scoring never reads (a boosting model's bins, labels and loss), kept as saved."""


def _holder(name: str) -> type:
    short = name.rpartition(".")[2].lstrip("_")
    cls = type(short, (_State,), {"stands_for": name, "__module__": __name__, "__qualname__": short})
    globals()[short] = cls  # importable by name: a scorer is pickled to its worker processes
    return cls


_HOLDERS = ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
            "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
            "sklearn.preprocessing._label.LabelEncoder",
            "sklearn._loss.loss.HalfBinomialLoss",
            "sklearn._loss._loss.CyHalfBinomialLoss",
            "sklearn._loss.link.LogitLink",
            "sklearn._loss.link.Interval")

LEAN_TYPES: dict = {cls.stands_for: cls for cls in (HistGradientBoostingClassifier, Pipeline, LogisticRegression,
                                                    SigmoidCalibration, TfidfTransformer, CompactTfidfVectorizer)}
"""Saved type name -> its stand-in (a lean load builds these instead of the saved classes)."""
LEAN_TYPES.update((name, _holder(name)) for name in _HOLDERS)
TreePredictor = LEAN_TYPES["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"]
