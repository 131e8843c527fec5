"""The detector frame: one row per response with everything any method needs.

Every method in :mod:`evqual.models` is an ordinary scikit-learn binary
classifier over *response rows*, so that calibration
(``CalibratedClassifierCV(FrozenEstimator(...))``) and threshold tuning
(``TunedThresholdClassifierCV``) apply to all of them alike.  The frame holds:

* one column per response-level feature (all content families plus metadata);
* ``__sent__``: a :class:`SentenceBlock` per response (its sentence-level
  feature matrix, the column names and, when known, sentence labels) for
  methods that score sentences and take the maximum;
* ``__claim__``: a :class:`ClaimBlock` per response (the evidence engine's
  claim features, offsets and sentences, claim labels when spans are known,
  and, for labelled answers, claims made by transformation) for the claim
  model of evqual's methods;
* ``__text__``: query, context and output joined, for the TF-IDF baseline;
* ``__output__``: the output alone, for evqual's output-text model;
* ``__tok__``: a :class:`~evqual.features.TokenBlock` per response (token
  features, offsets and, when spans are known, token labels) for the
  character-span tagger (only with ``with_tokens=True``);
* ``source_id`` and ``task_type`` (grouping and per-task models).

Features are computed once per dataset; evaluation protocols slice the frame.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..data import char_spans, response_label, sentence_targets
from ..features import EvidenceFeaturizer, as_examples

__all__ = ["SentenceBlock", "ClaimBlock", "FrameBuilder", "LiteFrame", "SENT", "CLAIM", "TEXT", "OUTPUT", "TOK",
           "FRAME_INFO_COLUMNS", "claim_block"]

SENT = "__sent__"
CLAIM = "__claim__"
TOK = "__tok__"
TEXT = "__text__"
OUTPUT = "__output__"
FRAME_INFO_COLUMNS = ("id", "source_id", "task_type", "model", "quality", "split", "dataset", "label")


class SentenceBlock(NamedTuple):
    """Sentence-level features of one response."""

    values: np.ndarray  # (n_sentences, n_features)
    names: tuple  # feature names, shared by every block of a frame
    labels: np.ndarray | None  # (n_sentences,) 0/1, or None when spans are unknown
    offsets: tuple = ()  # ((start, end), ...) in the output
    nearest: tuple = ()  # index of each sentence's nearest evidence chunk (-1: none)


class ClaimBlock(NamedTuple):
    """The evidence engine's claims of one response (see :mod:`evqual.evidence`)."""

    values: np.ndarray  # (n_claims, len(CLAIM_FEATURES))
    offsets: np.ndarray  # (n_claims, 2) character offsets in the output
    sentence: np.ndarray  # (n_claims,) index of the sentence holding each claim
    labels: np.ndarray | None  # (n_claims,) 1 when a gold span overlaps the claim; None when spans are unknown
    extra_values: np.ndarray | None = None  # claims made by transformation of the answer's own claims (training)
    extra_labels: np.ndarray | None = None
    extra_tags: np.ndarray | None = None  # each transformed claim's tag (``"value"``, ``"logic:quantity"`` ...)


def claim_block(reading, sentences, gold=None, extra=None) -> ClaimBlock:
    """A :class:`ClaimBlock` from an engine reading, the output's sentence offsets and the kept gold spans."""
    from ..evidence import CLAIM_FEATURES
    from ..features import claim_sentences

    claims = reading.claims
    offsets = np.asarray([(c.start, c.end) for c in claims], dtype=np.int64).reshape(-1, 2)
    labels = None
    if gold is not None:
        labels = np.asarray([int(any(g.start < e and s < g.end for g in gold)) for s, e in offsets.tolist()],
                            dtype=np.int64)
    values = reading.matrix if claims else np.zeros((0, len(CLAIM_FEATURES)))
    ev, el, et = extra if extra is not None else (None, None, None)
    return ClaimBlock(values, offsets, claim_sentences(claims, sentences), labels, ev, el, et)


def _objects(values) -> np.ndarray:
    """A 1-D object array (``np.array`` would unpack tuples into a second dimension)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


class _Column(list):
    """A frame column as a list, with the few pandas Series methods the estimators use."""

    def tolist(self):
        return list(self)

    def to_numpy(self, dtype=None):
        return np.asarray(self, dtype=dtype)

    @property
    def iloc(self):
        return self


class _Block:
    """Several numeric columns of a :class:`LiteFrame`."""

    def __init__(self, values):
        self.values = values

    def to_numpy(self, dtype=None):
        return self.values if dtype is None else self.values.astype(dtype, copy=False)


def _int64_labels(labels):
    import pandas as pd

    return pd.array(labels, dtype="Int64")


class LiteFrame:
    """A read-only stand-in for the detector frame when scoring (no pandas).

    Building a pandas DataFrame and selecting its columns costs about a
    millisecond per call, which dominates scoring one answer; every fitted
    evqual estimator reads a frame only through ``frame[name]`` (a column),
    ``frame[list_of_names].to_numpy()``, ``len(frame)`` and
    ``frame.columns``, which this class provides.  Fitting always uses real
    DataFrames.
    """

    def __init__(self, values: np.ndarray, names, info: dict):
        self._values = values
        self._index, self._selections = _layout(names)
        self._info = info
        self.columns = list(names) + list(info)

    def __len__(self) -> int:
        return len(self._values)

    def set_column(self, name: str, values) -> None:
        """Add or replace a non-numeric column (one value per row)."""
        if len(values) != len(self):
            raise ValueError(f"column {name!r} has {len(values)} values for {len(self)} rows")
        if name not in self._info:
            self.columns.append(name)
        self._info[name] = list(values)

    def __getitem__(self, key):
        if isinstance(key, str):
            if key in self._info:
                return _Column(self._info[key])
            return _Column(self._values[:, self._index[key]].tolist())
        key = tuple(key)
        cols = self._selections.get(key)
        if cols is None:
            cols = np.array([self._index[k] for k in key], dtype=np.intp)
            if len(self._selections) < _SELECTIONS_MAX:
                self._selections[key] = cols
        return _Block(self._values[:, cols])


_LAYOUTS: dict = {}
"""Column names of a :class:`LiteFrame` -> ``(name -> column, {selected names: column array})``: every frame a
fitted detector builds has the same names, so each scored answer looks up the model's column lists once per process
instead of name by name (issue 41)."""
_LAYOUTS_MAX = 16
_SELECTIONS_MAX = 64


def _layout(names) -> tuple:
    key = tuple(names)
    got = _LAYOUTS.get(key)
    if got is None:
        got = ({n: i for i, n in enumerate(key)}, {})
        if len(_LAYOUTS) >= _LAYOUTS_MAX:
            _LAYOUTS.clear()
        _LAYOUTS[key] = got
    return got


class FrameBuilder:
    """Fits the two featurizers and turns examples into detector frames.

    Parameters
    ----------
    entity_backend : {"regex", "spacy"}
    exclude_implicit_true : bool
        Target definition (see :func:`evqual.data.response_label`).
    claim_transform_rate : float
        With targets, each faithful claim of a labelled answer is, with this
        probability, flipped once and preserved once
        (:func:`evqual.evidence.transformed_rows`, seeded by the answer's id):
        training claims for the claim model (0 makes none).
    """

    claim_transform_rate = 0.35  # builders saved before the parameter existed load with the default

    def __init__(self, *, entity_backend: str = "regex", exclude_implicit_true: bool = False,
                 claim_transform_rate: float = 0.35):
        self.entity_backend = entity_backend
        self.exclude_implicit_true = exclude_implicit_true
        self.claim_transform_rate = claim_transform_rate

    def fit(self, examples):
        examples = as_examples(examples)
        self.response_featurizer_ = EvidenceFeaturizer(
            level="response", include_metadata=True, entity_backend=self.entity_backend).fit(examples)
        self.sentence_featurizer_ = EvidenceFeaturizer(
            level="sentence", include_metadata=True, entity_backend=self.entity_backend).fit(examples)
        return self

    @property
    def response_names(self) -> list[str]:
        return list(self.response_featurizer_.get_feature_names_out())

    @property
    def sentence_names(self) -> tuple:
        return tuple(self.sentence_featurizer_.get_feature_names_out())

    def transform(self, examples, *, with_targets: bool = True, with_tokens: bool = True):
        """Examples to a frame (pandas DataFrame, one row per example, input order)."""
        return self.transform_with_analyses(examples, with_targets=with_targets, with_tokens=with_tokens)[0]

    def transform_with_analyses(self, examples, *, with_targets: bool = True, with_tokens: bool = True,
                                lite: bool = False):
        """``(frame, examples, analyses)``: the frame and what explanations read.

        ``lite=True`` returns a :class:`LiteFrame` (for prediction only).
        """
        from ..features import token_block

        examples = as_examples(examples)
        rf = self.response_featurizer_
        sf = self.sentence_featurizer_
        ex_list, analyses = rf.analyze(examples)
        R = rf._assemble(ex_list, analyses)
        S = sf._assemble(ex_list, analyses)
        names = self.sentence_names
        blocks = []
        pos = 0
        for ex, an in zip(ex_list, analyses):
            n = len(an.sentences)
            labels = None
            if with_targets and ex.spans is not None:
                targets = sentence_targets(ex, exclude_implicit_true=self.exclude_implicit_true)
                labels = np.array([t["label"] for t in targets], dtype=np.int64)
            blocks.append(SentenceBlock(S[pos:pos + n], names, labels, tuple(an.offsets),
                                        tuple(an.match.nearest.tolist())))
            pos += n
        labels = [response_label(ex, exclude_implicit_true=self.exclude_implicit_true) if with_targets else None
                  for ex in ex_list]
        info = {
            SENT: blocks,
            CLAIM: self._claim_blocks(ex_list, analyses, with_targets),
            TEXT: [f"{ex.query}\n{ex.context}\n{ex.output}" for ex in ex_list],
            OUTPUT: [ex.output for ex in ex_list],
            "id": [ex.id for ex in ex_list],
            "source_id": [ex.source_id if ex.source_id is not None else ex.id for ex in ex_list],
            "task_type": [ex.task_type for ex in ex_list],
            "model": [ex.model for ex in ex_list],
            "quality": [ex.quality for ex in ex_list],
            "split": [ex.split for ex in ex_list],
            "dataset": [ex.dataset for ex in ex_list],
            # a frame to predict on (lite, no targets) has no labels, and scoring imports no pandas
            "label": (np.full(len(labels), None, dtype=object) if lite and not with_targets
                      else _int64_labels(labels)),
            "label_types": ["|".join(sorted({s.label_type for s in (ex.spans or ()) if s.label_type
                                             and not (self.exclude_implicit_true and s.implicit_true)}))
                            for ex in ex_list],
        }
        if with_tokens:
            info[TOK] = [token_block(ex.output, an, char_spans(ex, exclude_implicit_true=self.exclude_implicit_true)
                                     if with_targets else None)
                         for ex, an in zip(ex_list, analyses)]
        if lite:
            return LiteFrame(R, self.response_names, info), ex_list, analyses
        # one concatenation instead of a column insertion per field (a single response is scored in ~1 ms)
        # object columns: pandas would otherwise convert every text field to Arrow strings
        import pandas as pd

        info = {k: (v if k == "label" else _objects(v)) for k, v in info.items()}
        frame = pd.concat([pd.DataFrame(R, columns=self.response_names), pd.DataFrame(info)], axis=1)
        return frame, ex_list, analyses

    def _claim_blocks(self, ex_list, analyses, with_targets: bool) -> list:
        from ..data import kept_spans

        golds = [kept_spans(ex, exclude_implicit_true=self.exclude_implicit_true) if with_targets else None
                 for ex in ex_list]
        extras = [None] * len(ex_list)
        rate = getattr(self, "claim_transform_rate", 0.0)
        if with_targets and rate > 0 and any(g is not None for g in golds):
            from ..evidence import transformed_rows

            X, y, tags, owner = transformed_rows(ex_list, seed=0, claim_rate=rate,
                                                 exclude_implicit_true=self.exclude_implicit_true)
            tags = np.asarray(tags, dtype=object)
            for i in np.unique(owner).tolist():
                sel = owner == i
                extras[i] = (X[sel], y[sel], tags[sel])
        return [claim_block(an.reading, an.offsets, g, x) for an, g, x in zip(analyses, golds, extras)]

    def fit_transform(self, examples, **kw):
        examples = as_examples(examples)
        return self.fit(examples).transform(examples, **kw)
