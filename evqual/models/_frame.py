"""The detector frame: one row per response with everything any method needs.

Every method in :mod:`evqual.models` is an ordinary scikit-learn binary
classifier over *response rows*, so that calibration
(``CalibratedClassifierCV(FrozenEstimator(...))``) and threshold tuning
(``TunedThresholdClassifierCV``) apply to all of them alike.  The frame holds:

* one column per response-level feature (all content families plus metadata);
* ``__sent__``: a :class:`SentenceBlock` per response (its sentence-level
  feature matrix, the column names and, when known, sentence labels) for
  methods that score sentences and take the maximum;
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

__all__ = ["SentenceBlock", "FrameBuilder", "LiteFrame", "SENT", "TEXT", "OUTPUT", "TOK", "FRAME_INFO_COLUMNS"]

SENT = "__sent__"
TOK = "__tok__"
TEXT = "__text__"
OUTPUT = "__output__"
FRAME_INFO_COLUMNS = ("id", "source_id", "task_type", "model", "quality", "split", "label")


class SentenceBlock(NamedTuple):
    """Sentence-level features of one response."""

    values: np.ndarray  # (n_sentences, n_features)
    names: tuple  # feature names, shared by every block of a frame
    labels: np.ndarray | None  # (n_sentences,) 0/1, or None when spans are unknown
    offsets: tuple = ()  # ((start, end), ...) in the output
    nearest: tuple = ()  # index of each sentence's nearest evidence chunk (-1: none)


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
        self._index = {n: i for i, n in enumerate(names)}
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
        return _Block(self._values[:, [self._index[k] for k in key]])


class FrameBuilder:
    """Fits the two featurizers and turns examples into detector frames.

    Parameters
    ----------
    entity_backend : {"regex", "spacy"}
    exclude_implicit_true : bool
        Target definition (see :func:`evqual.data.response_label`).
    """

    def __init__(self, *, entity_backend: str = "regex", exclude_implicit_true: bool = False):
        self.entity_backend = entity_backend
        self.exclude_implicit_true = exclude_implicit_true

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
        import pandas as pd

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
            TEXT: [f"{ex.query}\n{ex.context}\n{ex.output}" for ex in ex_list],
            OUTPUT: [ex.output for ex in ex_list],
            "id": [ex.id for ex in ex_list],
            "source_id": [ex.source_id if ex.source_id is not None else ex.id for ex in ex_list],
            "task_type": [ex.task_type for ex in ex_list],
            "model": [ex.model for ex in ex_list],
            "quality": [ex.quality for ex in ex_list],
            "split": [ex.split for ex in ex_list],
            "label": pd.array(labels, dtype="Int64"),
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
        info = {k: (v if k == "label" else _objects(v)) for k, v in info.items()}
        frame = pd.concat([pd.DataFrame(R, columns=self.response_names), pd.DataFrame(info)], axis=1)
        return frame, ex_list, analyses

    def fit_transform(self, examples, **kw):
        examples = as_examples(examples)
        return self.fit(examples).transform(examples, **kw)
