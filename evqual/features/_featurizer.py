"""The scikit-learn compatible :class:`EvidenceFeaturizer`."""

from __future__ import annotations

import sys
import threading

import numpy as np

from .._estimator import BaseEstimator, TransformerMixin, check_is_fitted
from .._gcpause import gc_paused
from ..data import Example, LoadResult, make_example
from ..data import response_label, sentence_targets
from ..evidence import EvidenceEngine
from ..text import ENTITY_BACKENDS, SpacyClaimSplitter, make_entity_extractor
from ._analysis import analyze_many
from ._registry import CONTENT_FAMILIES, META_NUMERIC, list_features, meta_feature_name
from ._similarity import ContextCache

CONTEXT_CACHE_SIZE = 32
"""Contexts whose indexes a fitted featurizer keeps between calls (answers to one source share them)."""
CONTEXT_CACHE_CHARS = 500_000
"""Total characters of the contexts kept between calls, at most; a longer context is indexed and not kept."""
TRANSFORM_CHUNK = 256
"""Examples :meth:`EvidenceFeaturizer.transform` analyses at a time: each chunk's analyses (claims,
alignments, findings) are turned into rows and dropped before the next, so memory does not grow with
the input (featurizing all of RAGTruth peaked at 1.2 GB in one piece, 0.3 GB in chunks).  A row never
depends on the rows around it, so the matrix is the same for any chunk size."""

__all__ = ["EvidenceFeaturizer", "as_examples", "InvalidParameterError"]

LEVELS = ("response", "sentence")
META_FIELDS = ("model", "quality")


class InvalidParameterError(ValueError, TypeError):
    """A constructor parameter has an invalid value (scikit-learn's wording)."""


def as_examples(X) -> list[Example]:
    """Coerce featurizer input to a list of :class:`~evqual.data.Example`.

    Accepted: a :class:`~evqual.data.LoadResult`, a sequence of ``Example``,
    a sequence of dicts with ``query``/``context``/``output`` (and optional
    ``task_type``, ``id``, ``model``, ``temperature``, ``quality``, ``chunks``
    ...), or a :class:`pandas.DataFrame` with those columns.
    """
    if isinstance(X, LoadResult):
        return list(X.examples)
    pd = sys.modules.get("pandas")  # a DataFrame exists only once pandas is imported (scoring imports none)
    if pd is not None and isinstance(X, pd.DataFrame):
        missing = [c for c in ("context", "output") if c not in X.columns]
        if missing:
            raise ValueError(f"the DataFrame lacks required column(s) {missing}; "
                             "expected 'query', 'context' and 'output'.")
        cols = [c for c in ("id", "query", "context", "output", "task_type", "model", "temperature", "quality",
                            "split", "source_id", "chunks") if c in X.columns]
        rows = X[cols].to_dict("records")
        return [_from_mapping(r, i) for i, r in enumerate(rows)]
    if isinstance(X, (str, bytes)) or (isinstance(X, np.ndarray) and X.ndim != 1):
        raise TypeError(_input_message(X))
    try:
        items = list(X)
    except TypeError:
        raise TypeError(_input_message(X)) from None
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Example):
            out.append(item)
        elif isinstance(item, dict):
            out.append(_from_mapping(item, i))
        else:
            raise TypeError(f"item {i} of the input is a {type(item).__name__}; " + _input_message(X))
    return out


def _input_message(X) -> str:
    return ("EvidenceFeaturizer expects a sequence of evqual.data.Example, a sequence of dicts with "
            "'query', 'context' and 'output', a LoadResult, or a pandas DataFrame with those columns; "
            f"got {type(X).__name__}.")


def _clean(value):
    if value is None:
        return None
    if isinstance(value, float) and np.isnan(value):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    return value


def _from_mapping(row: dict, i: int) -> Example:
    if "context" not in row or "output" not in row:
        raise ValueError(f"row {i} lacks 'context' or 'output'.")
    get = lambda k: _clean(row.get(k))  # noqa: E731
    output = get("output")
    context = row.get("context")
    if output is None or not isinstance(output, str):
        raise TypeError(f"row {i}: 'output' must be a string; got {type(output).__name__}.")
    if context is None or (isinstance(context, float) and np.isnan(context)):
        context = ""
    temp = get("temperature")
    chunks = row.get("chunks")
    if isinstance(chunks, float) or (chunks is not None and not isinstance(context, str)):
        chunks = None
    return make_example(
        id=get("id") if get("id") is not None else str(i),
        query=get("query"),
        context=context,
        output=output,
        task_type=get("task_type"),
        model=get("model"),
        temperature=float(temp) if temp is not None else None,
        quality=get("quality"),
        split=get("split"),
        source_id=get("source_id"),
        chunks=chunks,
    )


class EvidenceFeaturizer(TransformerMixin, BaseEstimator):
    """Deterministic evidence-quality features for (query, context, output) triples.

    Turns each example (or each output sentence) into a row of numeric
    features measuring how well the output is supported by its context:
    lexical coverage, sentence support, TF-IDF / BM25 / Jaccard evidence
    chains, unsupported numbers and entities, refusal wording, lengths and
    the task.  Names are versioned (``support.min.v1``); see
    :mod:`evqual.features` for every definition.

    Parameters
    ----------
    level : {"response", "sentence"}, default="response"
        ``"response"`` gives one row per example (a regular transformer).
        ``"sentence"`` gives one row per output sentence, in example order
        then sentence order; :meth:`sentence_frame` returns the matching ids
        and offsets.
    families : sequence of str or None, default=None
        Content families to keep (``None`` = all of
        ``("coverage", "support", "semantic", "chain", "entity", "number",
        "refusal", "length", "task")``).  Order is ignored: columns always come
        in canonical order.
    include_metadata : bool, default=False
        Add the ``meta`` family: one-hot generator ``model`` and ``quality``
        (categories learned in :meth:`fit`; unseen or missing values encode as
        all zeros), ``meta.temperature.v1`` (0 when unknown) and
        ``meta.temperature_missing.v1``.  Off by default so that models stay
        content-only.
    entity_backend : {"regex", "spacy"}, default="regex"
        Entity extractor, and how the ``check`` family cuts claim units:
        ``"regex"`` uses the rule-based claim splitter, ``"spacy"`` spaCy's
        NER and dependency parse (:class:`evqual.text.SpacyClaimSplitter`).
        ``"spacy"`` needs the ``ner`` extra (``pip install "evqual[ner]"``)
        and raises if it is missing; evqual never switches backends silently.

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        Output column names.
    n_features_out_ : int
    meta_categories_ : dict
        ``{"model": [...], "quality": [...]}`` learned in :meth:`fit`
        (empty lists unless ``include_metadata``).
    entity_backend_ : str
        The backend used, recorded for saved models.
    claim_backend_ : str
        ``"spacy"`` or ``"rules"``: follows ``entity_backend_``.

    Examples
    --------
    >>> from evqual.features import EvidenceFeaturizer
    >>> X = [{"query": "Where is Paris?", "context": ["Paris is the capital of France."],
    ...       "output": "Paris is the capital of France, with 9 million people.", "task_type": "QA"}]
    >>> fz = EvidenceFeaturizer().fit(X)
    >>> row = dict(zip(fz.get_feature_names_out(), fz.transform(X)[0].tolist()))
    >>> row["number.unsupported_count.v2"], row["task.qa.v1"]
    (1.0, 1.0)
    """

    def __init__(self, *, level="response", families=None, include_metadata=False, entity_backend="regex"):
        self.level = level
        self.families = families
        self.include_metadata = include_metadata
        self.entity_backend = entity_backend

    # ------------------------------------------------------------ validation
    def _check_params(self) -> tuple:
        name = type(self).__name__
        if not isinstance(self.level, str) or self.level not in LEVELS:
            raise InvalidParameterError(
                f"The 'level' parameter of {name} must be a str among {set(LEVELS)}. Got {self.level!r} instead.")
        if not isinstance(self.entity_backend, str) or self.entity_backend not in ENTITY_BACKENDS:
            raise InvalidParameterError(
                f"The 'entity_backend' parameter of {name} must be a str among {set(ENTITY_BACKENDS)}. "
                f"Got {self.entity_backend!r} instead.")
        if not isinstance(self.include_metadata, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The 'include_metadata' parameter of {name} must be an instance of 'bool'. "
                f"Got {self.include_metadata!r} instead.")
        if self.families is None:
            fams = CONTENT_FAMILIES
        else:
            if isinstance(self.families, str) or not hasattr(self.families, "__iter__"):
                raise InvalidParameterError(
                    f"The 'families' parameter of {name} must be a sequence of family names or None. "
                    f"Got {self.families!r} instead.")
            fams = tuple(self.families)
            bad = [f for f in fams if f not in CONTENT_FAMILIES]
            if "meta" in bad:
                raise InvalidParameterError(
                    f"The 'families' parameter of {name} takes content families only; "
                    "use include_metadata=True for the 'meta' family.")
            if bad or not fams:
                raise InvalidParameterError(
                    f"The 'families' parameter of {name} must be a non-empty subset of {CONTENT_FAMILIES}. "
                    f"Got {self.families!r} instead.")
        return tuple(f for f in CONTENT_FAMILIES if f in fams)

    # ------------------------------------------------------------ fit / transform
    def fit(self, X, y=None):
        """Validate parameters and learn metadata categories.

        Parameters
        ----------
        X : examples
            See :func:`as_examples`.
        y : ignored

        Returns
        -------
        self
        """
        families = self._check_params()
        examples = as_examples(X)
        cats = {f: [] for f in META_FIELDS}
        if self.include_metadata:
            for f in META_FIELDS:
                cats[f] = sorted({getattr(ex, f) for ex in examples if getattr(ex, f) is not None})
        self.meta_categories_ = cats
        self.entity_backend_ = self.entity_backend
        self.families_ = families
        names = list_features(self.level, families)
        if self.include_metadata:
            prefix = "sent." if self.level == "sentence" else ""
            names += [prefix + n for n, _, _, _ in META_NUMERIC]
            for f in META_FIELDS:
                names += [meta_feature_name(f, v, self.level) for v in cats[f]]
        self.feature_names_out_ = np.asarray(names, dtype=object)
        self.n_features_out_ = len(names)
        return self

    def analyze(self, X, progress=None):
        """Per-example :class:`~evqual.features.Analysis` (features plus evidence).

        Used by explanations; ``progress`` is called with the count done.
        """
        check_is_fitted(self, "feature_names_out_")
        examples = as_examples(X)
        # the Evidence-Chain Score uses entity support, so the chain family needs entities too:
        # a feature's value never depends on which other families are selected
        needs_entities = "entity" in self.families_ or "chain" in self.families_
        extractor = make_entity_extractor(self.entity_backend_) if needs_entities else None
        splitter = SpacyClaimSplitter() if self.claim_backend_ == "spacy" and "check" in self.families_ else None
        lock, cache, engine = self._context_caches()
        with lock:  # the caches are not safe for threads; analysing is CPU-bound Python, so little is lost
            return examples, analyze_many(examples, extractor, cache, progress, claim_splitter=splitter,
                                          engine=engine)

    def _context_caches(self):
        """The context indexes kept between calls: bounded (:data:`CONTEXT_CACHE_SIZE` contexts,
        :data:`CONTEXT_CACHE_CHARS` characters), made on first use and never saved with a model."""
        caches = self.__dict__.get("_contexts")
        if caches is None:
            # (the engine's reading of a context is kept in its ContextIndex: the engine's own cache holds
            # only a context without chunks)
            caches = (threading.Lock(), ContextCache(CONTEXT_CACHE_SIZE, CONTEXT_CACHE_CHARS),
                      EvidenceEngine(cache_size=1, max_chars=CONTEXT_CACHE_CHARS))
            self._contexts = caches
        return caches

    def __getstate__(self):
        # what pickle and skops store: the fitted state, never the context caches
        state = super().__getstate__()
        if "_contexts" in state:
            state = dict(state)
            del state["_contexts"]
        return state

    @property
    def claim_backend_(self) -> str:
        """How claim units are cut for the ``check`` family: ``"spacy"`` (the parser of the ``ner``
        extra) with ``entity_backend="spacy"``, else ``"rules"``; recorded in a model with the entity
        backend."""
        check_is_fitted(self, "entity_backend_")
        return "spacy" if self.entity_backend_ == "spacy" else "rules"

    def transform(self, X):
        """Feature matrix, one row per example (or per sentence).

        Parameters
        ----------
        X : examples
            See :func:`as_examples`.

        Returns
        -------
        ndarray of shape (n_rows, n_features_out_), dtype float64

        Notes
        -----
        Examples are analysed :data:`TRANSFORM_CHUNK` at a time and each
        chunk's analyses dropped once its rows are built; the result is the
        same for any chunk size.
        """
        check_is_fitted(self, "feature_names_out_")
        examples = as_examples(X)
        parts = []
        for i in range(0, len(examples), TRANSFORM_CHUNK):
            # the collector paused until the chunk's analyses are dropped: after the block it has only the
            # context caches' new entries to look at, not a chunk of analyses (evqual/_gcpause.py)
            with gc_paused():
                parts.append(self._assemble(*self.analyze(examples[i:i + TRANSFORM_CHUNK])))
        if len(parts) == 1:
            return parts[0]
        return np.vstack(parts) if parts else self._assemble(examples, [])

    def assemble(self, examples, analyses) -> np.ndarray:
        """The feature matrix of already computed ``(examples, analyses)`` (what :meth:`analyze` returns),
        so that a caller who needs the analyses too does not analyse twice."""
        check_is_fitted(self, "feature_names_out_")
        return self._assemble(examples, analyses)

    def _assemble(self, examples, analyses) -> np.ndarray:
        names = list(self.feature_names_out_)
        # the fitted names, not today's registry: a model fitted before a feature was added keeps its columns
        meta = ("sent.meta." if self.level == "sentence" else "meta.")
        static = [n for n in names if not n.startswith(meta)]
        n_static = len(static)
        if self.level == "response":
            out = np.zeros((len(analyses), len(names)), dtype=np.float64)
            for i, (ex, an) in enumerate(zip(examples, analyses)):
                vals = an.response
                out[i, :n_static] = [vals[n] for n in static]
                if self.include_metadata:
                    out[i, n_static:] = self._meta_row(ex)
            return out
        blocks = []
        for ex, an in zip(examples, analyses):
            n = len(an.offsets)  # (one row per sentence; the per-sentence evidence objects are not needed here)
            block = np.zeros((n, len(names)), dtype=np.float64)
            if n_static:  # (the columns in one copy: a numpy call per column cost about 50 us an answer)
                sent = an.sentence
                block[:, :n_static] = np.array([sent[name] for name in static], dtype=np.float64).T
            if self.include_metadata and n:
                block[:, n_static:] = self._meta_row(ex)[None, :]
            blocks.append(block)
        if not blocks:
            return np.zeros((0, len(names)))
        return np.vstack(blocks)

    def _meta_row(self, ex: Example) -> np.ndarray:
        vals = [float(ex.temperature) if ex.temperature is not None else 0.0,
                1.0 if ex.temperature is None else 0.0]
        for f in META_FIELDS:
            v = getattr(ex, f)
            vals += [1.0 if v == c else 0.0 for c in self.meta_categories_[f]]
        return np.asarray(vals, dtype=np.float64)

    def get_feature_names_out(self, input_features=None):
        """Output feature names (``input_features`` is ignored: the input is text)."""
        check_is_fitted(self, "feature_names_out_")
        return self.feature_names_out_.copy()

    # ------------------------------------------------------------ frames
    def frame(self, X, *, with_targets: bool = True, exclude_implicit_true: bool = False, progress=None):
        """Features as a :class:`pandas.DataFrame` with ids, metadata and targets.

        Response level: ``id, source_id, split, task_type, model, label`` then
        the features.  Sentence level: ``id, source_id, split, task_type, model,
        sentence, start, end, nearest_chunk, label`` then the features.
        ``label`` is the gold target (missing when unknown).

        Examples
        --------
        >>> from evqual.data import load_sample
        >>> fz = EvidenceFeaturizer(level="sentence")
        >>> df = fz.fit(load_sample()).frame(load_sample())
        >>> list(df.columns[:8])
        ['id', 'source_id', 'split', 'task_type', 'model', 'sentence', 'start', 'end']
        """
        import pandas as pd

        examples, analyses = self.analyze(X, progress=progress)
        feats = self._assemble(examples, analyses)
        ids = []
        for ex, an in zip(examples, analyses):
            base = {"id": ex.id, "source_id": ex.source_id, "split": ex.split, "task_type": ex.task_type,
                    "model": ex.model}
            if self.level == "response":
                base["label"] = response_label(ex, exclude_implicit_true=exclude_implicit_true) \
                    if with_targets else None
                ids.append(base)
                continue
            targets = sentence_targets(ex, exclude_implicit_true=exclude_implicit_true) if with_targets else None
            for j, se in enumerate(an.sentences):
                k = se.nearest_chunk
                row = dict(base, sentence=j, start=se.start, end=se.end,
                           nearest_chunk=ex.chunks[k].id if k >= 0 else None,
                           label=targets[j]["label"] if targets else None)
                ids.append(row)
        meta = pd.DataFrame(ids)
        if len(meta) == 0:
            cols = ["id", "source_id", "split", "task_type", "model"]
            if self.level == "sentence":
                cols += ["sentence", "start", "end", "nearest_chunk"]
            meta = pd.DataFrame(columns=cols + ["label"])
        meta["label"] = meta["label"].astype("Int64")
        fdf = pd.DataFrame(feats, columns=list(self.feature_names_out_))
        return pd.concat([meta.reset_index(drop=True), fdf], axis=1)

    def sentence_frame(self, X):
        """Sentence-level ids, offsets, nearest chunk and targets with features.

        Same as ``clone(self).set_params(level="sentence").fit(X).frame(X)``
        but keeps this featurizer's fitted metadata categories.
        """
        if self.level != "sentence":
            raise ValueError("sentence_frame needs level='sentence'.")
        return self.frame(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags

