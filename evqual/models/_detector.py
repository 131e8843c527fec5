"""Fitting a method with validation-tuned calibration and threshold.

A :class:`Detector` fits a method on a training part, then on a *separate*
validation part (grouped by source, so no source is on both sides):

1. calibrates its scores with ``CalibratedClassifierCV(FrozenEstimator(model),
   method=...)`` (``"sigmoid"``, ``"isotonic"`` or ``"none"``);
2. picks the decision threshold on the calibrated validation risks with
   ``TunedThresholdClassifierCV(..., cv="prefit", refit=False)`` under one of
   the :data:`THRESHOLD_RULES`;
3. for methods that score sentences, picks a separate sentence threshold the
   same way on the validation sentences.

The held-out data is never seen by any of these steps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from .._estimator import BaseEstimator, ClassifierMixin, available_if

from ._fasttrees import fast_calibrate, fast_decision, fast_proba
from ._frame import CLAIM, TOK, FrameBuilder
from ._methods import RESPONSE_FALLBACK, MethodSpec, get_method
from ._ood import fit_ood, ood_distance
from ._spans import tokens_to_spans

__all__ = ["Detector", "Detections", "THRESHOLD_RULES", "CALIBRATIONS", "COMPOSITIONS", "compose_risks",
           "seed002_objective", "validation_split", "crossfit_folds",
           "CALIBRATION_FOLDS", "check_training_data", "training_needs"]

CALIBRATIONS = ("sigmoid", "isotonic", "none")
COMPOSITIONS = ("bounds", "none")
THRESHOLD_RULES = ("f1", "seed002")


def seed002_objective(y_true, y_pred) -> float:
    """Seed 002's threshold objective, as we read it.

    F1 with a mild precision preference and a penalty on extreme
    precision-recall imbalance: ``F1 + 0.05 * precision - 0.5 * max(0,
    |precision - recall| - 0.25)``.  Seed 002 does not publish its constants;
    these are ours.
    """
    from sklearn.metrics import f1_score, precision_score, recall_score

    p = precision_score(y_true, y_pred, zero_division=0)
    r = recall_score(y_true, y_pred, zero_division=0)
    f = f1_score(y_true, y_pred, zero_division=0)
    return f + 0.05 * p - 0.5 * max(0.0, abs(p - r) - 0.25)


_GRIDS = {"f1": np.round(np.arange(0.01, 0.99 + 1e-9, 0.005), 4),
          "seed002": np.round(np.arange(0.20, 0.80 + 1e-9, 0.005), 4)}
_SPAN_GRID = np.round(np.arange(0.05, 0.90 + 1e-9, 0.025), 4)
_SPAN_GATES = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3)


class _ScoreClassifier(ClassifierMixin, BaseEstimator):
    """A 'classifier' whose probability is its single input column (for tuning thresholds on scores)."""

    def fit(self, X, y=None):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        s = np.asarray(X, dtype=float).reshape(-1)
        return np.c_[1.0 - s, s]

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(int)


FLOOR_CHECKS = ("check.number.v1", "check.unit.v1", "check.date.v1", "check.negation.v1", "check.antonym.v1",
                "check.entity.v1", "check.role.v1", "check.quantifier.v1", "check.field.v1", "check.displaced.v1")
"""The response features whose firing can floor the risk (``Detector(evidence_floor=True)``).

``check.unsupported.v1`` (a claim unit the context does not support) is a feature and a reason, not a floor:
floored, it cost RAGTruth ``cv5`` 0.013 F1 and 0.009 AUROC (QA answers there often add general knowledge the
annotators accept) and bought the development suite nothing (docs/RESULTS.md, issue 9 session 4)."""
FLOOR_MIN_PRECISION = 0.35
"""A check floors the risk only where its estimated precision is at least this: the start of the default
policy's escalate band (:class:`evqual.scoring.Policy`), so an answer on which a check fires that is right
at least that often is looked at again.  Session 3 of issue 9 lowered it from 0.5: on RAGTruth under
``cv5`` that cost 0.007 F1, on the development suite it flagged 8 points more of the hallucinated
answers at 0.7 points more false alarms (``docs/RESULTS.md``, "Evidence-first risk")."""
FLOOR_PRIOR = (0.8, 10.0)
"""Prior precision of a contradiction check and its weight, in rows (sentences; answers uncomposed).
The checks are built to be precise: on the hand-written minimal edits of ``tests/data/contrastive`` each
measured 0.7-1.0 (``scripts/check_precision.py``).  A check the fitting data rarely sees keeps near this prior (a check
that never fired there floors at 0.8, so a contradiction still counts on logs unlike the training data);
one it sees often is judged by that data."""


def evidence_floors(*frames, min_precision: float = FLOOR_MIN_PRECISION, prior=FLOOR_PRIOR,
                    level: str = "answer", risks=None) -> dict:
    """Risk floors of the contradiction checks, per task, learned from labelled frames.

    For each check of :data:`FLOOR_CHECKS`, over all rows (``"*"``) and over
    each task of the frames' ``task_type`` column: the posterior mean precision
    ``(hallucinated + p0 * m) / (fired + m)`` of the rows where the check fired,
    with the prior ``(p0, m)`` = :data:`FLOOR_PRIOR`.  The all-row floor is
    kept, as ``"*:<feature>"``, when it is at least ``min_precision``; a task
    where the check fired gets ``"<task>:<feature>"``: its floor, or 0.0 (no
    floor) when below ``min_precision``, so that a task where the check is
    imprecise does not take the all-row floor.  The all-row floor applies to
    tasks the data did not hold (a user's own task types).

    With ``level="sentence"`` the rows are the labelled sentences of the
    frames' sentence blocks: a check fired on a sentence when its
    ``sent.check.*`` count is positive, and the precision is that of the
    sentence labels (what :class:`Detector` with ``compose="bounds"`` floors).

    With ``risks`` (the model's calibrated risks before any floor: one per
    row of the frames at ``level="answer"``, one array per row at
    ``level="sentence"``), a floor is estimated where it *binds*: the floor
    ``f`` is the largest value of :data:`FLOOR_GRID` whose posterior
    precision over the fired rows with risk below ``f`` (the rows it lifts)
    is at least ``f``.  The risk stays calibrated where the floor acts: a
    check that fires mostly on answers the model already rates high, and is
    right on those, no longer lifts the rest to the precision of the whole.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"label": [1, 1, 1, 0, 0, 0], "task_type": ["QA"] * 3 + ["Summary"] * 3,
    ...                      "check.unit.v1": [1.0] * 6})
    >>> {k: round(v, 3) for k, v in evidence_floors(rows).items() if "unit" in k}
    {'*:check.unit.v1': 0.688, 'QA:check.unit.v1': 0.846, 'Summary:check.unit.v1': 0.615}
    """
    p0, m = prior
    if not (0.0 <= p0 <= 1.0 and m >= 0):
        raise ValueError(f"prior must be (precision in [0, 1], weight >= 0); got {prior!r}")
    if level not in ("answer", "sentence"):
        raise ValueError(f"level must be 'answer' or 'sentence'; got {level!r}")
    import pandas as pd

    rows = pd.concat(frames, ignore_index=True)
    task_col = rows["task_type"].astype(str).to_numpy() if "task_type" in rows.columns else None
    if level == "sentence":
        fired_of, y, task_col, keep = _sentence_firings(rows, task_col)
        if risks is not None:
            risks = list(risks)
            if len(risks) != len(rows):
                raise ValueError(f"risks holds {len(risks)} rows; the frames hold {len(rows)}")
            risks = np.concatenate([np.asarray(risks[i], dtype=np.float64) for i in keep] or [np.zeros(0)])
    else:
        y = rows["label"].astype(int).to_numpy()

        def fired_of(name):
            return rows[name].to_numpy(dtype=np.float64) > 0 if name in rows.columns else None
        if risks is not None:
            risks = np.asarray(risks, dtype=np.float64).reshape(-1)
    if risks is not None and len(risks) != len(y):
        raise ValueError(f"risks holds {len(risks)} values; the frames hold {len(y)} labelled "
                         f"{'sentences' if level == 'sentence' else 'rows'}")
    out = {}
    tasks = ["*"] + sorted(set(task_col.tolist())) if task_col is not None else ["*"]
    for name in FLOOR_CHECKS:
        fired = fired_of(name)
        if fired is None:
            continue
        for task in tasks:
            sel = fired if task == "*" else fired & (task_col == task)
            n = int(sel.sum())
            if task != "*" and n == 0:
                continue  # the all-row floor stands in
            if risks is not None:
                precision = _binding_floor(y[sel], risks[sel], p0, m)
            else:
                precision = (int(y[sel].sum()) + p0 * m) / (n + m) if n + m > 0 else 0.0
            if precision >= min_precision:
                out[f"{task}:{name}"] = float(precision)
            elif task != "*":
                out[f"{task}:{name}"] = 0.0
    return out


def _sentence_firings(rows, task_col):
    """``(fired_of(name), sentence labels, sentence tasks)`` over the labelled sentences of a frame."""
    from ._frame import SENT

    blocks = [(i, b) for i, b in enumerate(rows[SENT].tolist()) if b.labels is not None and len(b.labels)]
    if not blocks:
        empty = np.zeros(0, dtype=bool)
        return (lambda name: empty), np.zeros(0, dtype=int), (np.zeros(0, dtype=str) if task_col is not None
                                                               else None), []
    names = {n: j for j, n in enumerate(blocks[0][1].names)}
    values = np.vstack([b.values for _, b in blocks])
    y = np.concatenate([b.labels for _, b in blocks]).astype(int)
    tasks = np.concatenate([[task_col[i]] * len(b.labels) for i, b in blocks]) if task_col is not None else None

    def fired_of(name):
        j = names.get("sent." + name)
        return None if j is None else values[:, j] > 0

    return fired_of, y, tasks, [i for i, _ in blocks]


FLOOR_GRID = np.round(np.arange(0.01, 1.0, 0.01), 2)
"""Candidate floor values of :func:`evidence_floors` with ``risks`` (binding floors)."""


def _binding_floor(y, risk, p0: float, m: float) -> float:
    """The largest ``f`` of :data:`FLOOR_GRID` with ``(sum(y[risk < f]) + p0 * m) / (count(risk < f) + m) >= f``
    (0.0 when none): the floor is the posterior precision of the rows it lifts.

    >>> round(_binding_floor(np.array([1, 1, 0, 0]), np.array([0.1, 0.2, 0.9, 0.95]), 0.0, 0.0), 2)
    0.9
    >>> _binding_floor(np.array([0, 0, 1]), np.array([0.1, 0.2, 0.9]), 0.0, 0.0)
    0.0
    """
    order = np.argsort(risk, kind="stable")
    r, yy = np.asarray(risk, dtype=np.float64)[order], np.asarray(y, dtype=np.float64)[order]
    below = np.searchsorted(r, FLOOR_GRID, side="left")  # rows with risk < f
    pos = np.concatenate([[0.0], np.cumsum(yy)])[below]
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = (pos + p0 * m) / (below + m)
    ok = np.flatnonzero(np.nan_to_num(prec, nan=0.0) >= FLOOR_GRID)
    return float(FLOOR_GRID[ok[-1]]) if len(ok) else 0.0


def _pool_rows(frame, validation_pool: str | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Row positions ``(pool, rest)``: the rows of split ``validation_pool`` (several joined by ``+``:
    ``"test+dev"``) and all others; None when ``validation_pool`` is None or the frame has no row of it."""
    if validation_pool is None:
        return None
    in_pool = np.isin(frame["split"].astype(str).to_numpy(), str(validation_pool).split("+"))
    all_idx = np.arange(len(frame))
    return (all_idx[in_pool], all_idx[~in_pool]) if in_pool.any() else None


def _grouped_splits(frame, idx, n_splits: int, random_state: int, *, purpose: str):
    """``(fit, validation)`` positions of rows ``idx``, one pair per fold: grouped by ``source_id`` and
    stratified by task and label (:class:`grouped_folds`).  ``purpose`` completes the error when ``idx``
    has fewer sources than folds."""
    idx = np.asarray(idx)
    sub = frame.iloc[idx]
    strata = (sub["task_type"].astype(str) + "|" + sub["label"].astype(str)).to_numpy()
    groups = sub["source_id"].to_numpy()
    n_sources = len(np.unique(groups))
    if n_sources < n_splits:
        raise ValueError(f"need at least {n_splits} sources {purpose}; got {n_sources}")
    return [(idx[fit_pos], idx[val_pos])
            for fit_pos, val_pos in grouped_folds(n_splits, random_state).split(idx, strata, groups)]


def _crossfit_problem(value, *, none: str = "None") -> str | None:
    """Why ``value`` is not a valid ``crossfit`` (None or an integer >= 2), or None when it is: the one
    rule :class:`Detector`, its ``meta.json`` and a loaded model file are checked by (``none``: how the
    message names None, "null" for JSON)."""
    if value is None or (not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 2):
        return None
    return f"must be {none} or an integer >= 2; got {repr(value)[:80]}"


def training_split(frame, *, validation_pool: str | None = None, validation_size: float = 0.2,
                   random_state: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(fit, validation)`` of a detector frame, as :meth:`Detector.fit` splits it.

    With ``validation_pool`` (a split name the frame holds), the validation part is 25% of that
    split's sources, and rows of other splits from those sources are fitted on by nobody; otherwise
    it is ``validation_size`` of all sources.  Both are grouped by ``source_id`` and stratified by
    task and label (:func:`evqual.models.validation_split`).
    """
    rows = _pool_rows(frame, validation_pool)
    if rows is None:
        return validation_split(frame, np.arange(len(frame)), size=validation_size, random_state=random_state)
    pool, rest = rows
    fit_idx, val_idx = validation_split(frame, pool, size=0.25, random_state=random_state)
    sources = frame["source_id"].to_numpy()
    rest = rest[~np.isin(sources[rest], sources[val_idx])]
    return np.concatenate([fit_idx, rest]), val_idx


def crossfit_folds(frame, n_folds: int, *, validation_pool: str | None = None,
                   random_state: int = 42) -> list[tuple[np.ndarray, np.ndarray]]:
    """Row indices ``(fit, validation)`` per fold of a cross-fitted detector (:meth:`Detector.fit` with
    ``crossfit=n_folds``).

    The validation parts are ``n_folds`` grouped folds (by ``source_id``, stratified by task and label) of
    the rows of split ``validation_pool`` (of all rows without one): together they are that split, each row
    once.  A fold's fitting part is every row of another source, of any split.

    Examples
    --------
    >>> from evqual.data import load_sample
    >>> from evqual.models import FrameBuilder, crossfit_folds
    >>> frame = FrameBuilder().fit_transform(load_sample())
    >>> folds = crossfit_folds(frame, 3)
    >>> sorted(int(i) for _, v in folds for i in v) == list(range(len(frame)))
    True
    """
    if n_folds is None or _crossfit_problem(n_folds) is not None:
        raise ValueError(f"n_folds must be an integer >= 2; got {n_folds!r}")
    all_idx = np.arange(len(frame))
    rows = _pool_rows(frame, validation_pool)
    pool = all_idx if rows is None else rows[0]
    sources = frame["source_id"].to_numpy()
    return [(all_idx[~np.isin(sources, sources[val_idx])], val_idx)
            for _, val_idx in _grouped_splits(frame, pool, int(n_folds), random_state,
                                              purpose=f"to cross-fit {n_folds} folds")]


def _pop_oof(model):
    """The transient out-of-fold sentence and claim risks a fitted model keeps for a span tagger (never saved)."""
    return model.__dict__.pop("oof_sentence_risks_", None), model.__dict__.pop("oof_claim_risks_", None)


def _routed(name: str):
    """A :class:`_CrossFitted` method ``name(X)`` sending each row to its fold's model (present only when the
    fold models have it)."""
    def method(self, X):
        return self._route(name, X)

    method.__name__ = name
    return available_if(lambda self: hasattr(self.models[0], name))(method)


class _CrossFitted(ClassifierMixin, BaseEstimator):
    """Fold models behind one model: each row is scored by the model of its source's fold.

    Used only while a cross-fitted :class:`Detector` fits its calibration and thresholds (never saved):
    every row of the pooled validation part gets the score of the one model that did not see its source.
    """

    def __init__(self, models, fold_of):
        self.models = models
        self.fold_of = fold_of
        self.classes_ = np.array([0, 1])
        self.uses_claim_risks_ = getattr(models[0], "uses_claim_risks_", False)

    def __sklearn_is_fitted__(self):
        return True

    def fit(self, X=None, y=None):
        """Nothing to fit: the fold models are fitted (scikit-learn's wrappers want the method)."""
        return self

    def _parts(self, frame):
        folds = np.array([self.fold_of[s] for s in frame["source_id"].to_numpy()], dtype=int)
        return [(j, np.flatnonzero(folds == j)) for j in range(len(self.models)) if (folds == j).any()]

    def _route(self, name, frame, *per_row, per_row_kw=None, **kwargs):
        """``models[j].name(rows of fold j, ...)`` for each fold, put back in row order (tuples element-wise).

        ``per_row`` (positional) and ``per_row_kw`` (keyword) hold one item per row of ``frame``."""
        n = len(frame)
        out = None
        for j, pos in self._parts(frame):
            args = [None if a is None else [a[i] for i in pos] for a in per_row]
            kw = {k: None if a is None else [a[i] for i in pos] for k, a in (per_row_kw or {}).items()}
            got = getattr(self.models[j], name)(frame.iloc[pos], *args, **kw, **kwargs)
            if got is None:
                return None
            parts = got if isinstance(got, tuple) else (got,)
            if out is None:
                out = [None if p is None else ([None] * n if isinstance(p, list) else
                                                np.zeros((n,) + np.shape(p)[1:], dtype=np.asarray(p).dtype))
                       for p in parts]
            for k, p in enumerate(parts):
                if p is None or out[k] is None:
                    out[k] = None
                elif isinstance(out[k], list):
                    for i, v in zip(pos, p):
                        out[k][i] = v
                else:
                    out[k][pos] = p
        if out is None:
            return None
        return tuple(out) if len(out) > 1 else out[0]

    def predict_proba(self, X):
        return self._route("predict_proba", X)

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(int)

    decision_function = _routed("decision_function")
    predict_all = _routed("predict_all")
    predict_proba_and_sentences = _routed("predict_proba_and_sentences")
    sentence_proba = _routed("sentence_proba")
    claim_proba = _routed("claim_proba")

    @available_if(lambda self: hasattr(self.models[0], "token_proba"))
    def token_proba(self, frame, sentence_risks=None, *, gate: float = 0.0, claim_risks=None):
        return self._route("token_proba", frame, sentence_risks, per_row_kw={"claim_risks": claim_risks}, gate=gate)


FLOOR_MODES = ("binding", "fired")
"""Values of ``Detector(evidence_floor=...)`` besides ``True`` (``"fired"``) and ``False`` (no floors)."""


def _floor_mode(value) -> str | None:
    """``"binding"``, ``"fired"`` or None (no floors) for a ``Detector.evidence_floor`` value."""
    if value is True:
        return "fired"
    if value is False or value is None:
        return None
    if isinstance(value, str) and value in FLOOR_MODES:
        return value
    raise ValueError(f"evidence_floor must be True, False or one of {FLOOR_MODES}; got {value!r}")


def _floor_table(floors: dict) -> dict:
    """``{check: (all-task floor, {task: floor})}`` of every check of :data:`FLOOR_CHECKS` in an
    ``evidence_floor_`` dict (``"task:check"`` keys; ``"*"`` is every task), read in one pass over the dict.

    >>> _floor_table({"*:check.date.v1": 0.4, "QA:check.date.v1": 0.5})["check.date.v1"]
    (0.4, {'QA': 0.5})
    >>> _floor_table({})["check.unit.v1"]
    (0.0, {})
    """
    per_task: dict = {name: {} for name in FLOOR_CHECKS}
    for k, v in floors.items():
        # (a check's name holds no colon: a key ends with ":" + name exactly when its last part is the name)
        name = k.rpartition(":")[2] if ":" in k else None
        if name in per_task and k[0] != "*":
            per_task[name][k.split(":", 1)[0]] = v
    return {name: (floors.get(f"*:{name}", 0.0), per_task[name]) for name in FLOOR_CHECKS}


CALIBRATION_FOLDS = 5
"""``CalibratedClassifierCV``'s default folds: calibrating needs this many validation rows of each label."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def training_needs(n_splits: int = 5, calibration: str = "sigmoid") -> dict:
    """Fewest rows, rows of each label, rows of the more common label and sources :meth:`Detector.fit` needs.

    The grouped validation split keeps one in ``n_splits`` sources apart
    (stratified by label) to calibrate the risk and tune the threshold: each
    label needs ``n_splits`` rows for one to land there.  Calibration
    (:data:`CALIBRATION_FOLDS`-fold stratified) needs :data:`CALIBRATION_FOLDS`
    validation rows of one label, so ``n_splits`` times as many overall.

    >>> training_needs()
    {'rows': 30, 'per_label': 5, 'majority': 25, 'sources': 5}
    >>> training_needs(calibration="none")
    {'rows': 10, 'per_label': 5, 'majority': 5, 'sources': 5}
    """
    majority = n_splits * (CALIBRATION_FOLDS if calibration != "none" else 1)
    return {"rows": n_splits + majority, "per_label": n_splits, "majority": majority, "sources": n_splits}


def check_training_data(labels, sources, *, n_splits: int = 5, calibration: str = "sigmoid") -> None:
    """Raise :class:`~evqual.errors.TrainingDataError` when ``labels`` are too few or one-sided to fit on.

    The minimum is :func:`training_needs`; the message gives what was found and what is needed.

    Examples
    --------
    >>> check_training_data([0, 1] * 2, ["a", "b", "c", "d"])
    Traceback (most recent call last):
    ...
    evqual.errors.TrainingDataError: too little training data: found 4 rows (2 hallucinated, 2 grounded) from 4 sources, short of 30 rows, 5 of each label, 25 of the more common label, 5 sources; need at least 30 rows: 5 hallucinated, 5 grounded and 25 of the more common label, from at least 5 sources (one in 5 sources is held out to calibrate the risk and tune the threshold; calibration needs 5 rows of one label there)
    """
    from ..errors import TrainingDataError

    need = training_needs(n_splits, calibration)
    y = np.asarray(labels).astype(int)
    n, pos = len(y), int(y.sum())
    n_sources = len(set(np.asarray(sources).tolist()))
    if (n >= need["rows"] and min(pos, n - pos) >= need["per_label"] and max(pos, n - pos) >= need["majority"]
            and n_sources >= need["sources"]):
        return
    single = " (all one label)" if n and pos in (0, n) else ""
    why = f"; calibration needs {CALIBRATION_FOLDS} rows of one label there" if calibration != "none" else ""
    short = [what for what, ok in ((f"{need['rows']} rows", n >= need["rows"]),
                                   (f"{need['per_label']} of each label", min(pos, n - pos) >= need["per_label"]),
                                   (f"{need['majority']} of the more common label",
                                    max(pos, n - pos) >= need["majority"]),
                                   (f"{need['sources']} sources", n_sources >= need["sources"])) if not ok]
    raise TrainingDataError(
        f"too little training data: found {_plural(n, 'row')} ({pos} hallucinated, {n - pos} grounded){single} "
        f"from {_plural(n_sources, 'source')}, short of {', '.join(short)}; need at least {need['rows']} rows: "
        f"{need['per_label']} hallucinated, {need['per_label']} grounded and {need['majority']} of the more common "
        f"label, from at least {need['sources']} sources (one in {n_splits} sources is held out to calibrate the "
        f"risk and tune the threshold{why})", rows=n, positives=pos, sources=n_sources)


def _has_sentence_labels(frame) -> bool:
    """Whether some sentence of a hallucinated answer has a known label of 1 (so a sentence model can learn)."""
    from ._frame import SENT

    if SENT not in frame.columns:
        return False
    return any(b.labels is not None and len(b.labels) and (np.asarray(b.labels) == 1).any() for b in frame[SENT])


def _ood_names(frame) -> list:
    """The response features of a frame the out-of-distribution map reads: every content feature (no
    ``meta.*``) the frame holds, in its order."""
    from ..features import FEATURES

    return [c for c in frame.columns if isinstance(c, str) and c in FEATURES and FEATURES[c].level == "response"
            and FEATURES[c].family != "meta"]


def _tasks(frame) -> list:
    """The task type of each row of a frame (its ``task_type`` column; ``"None"`` when unknown)."""
    if "task_type" not in frame.columns:
        return ["None"] * len(frame)
    return [str(t) for t in frame["task_type"]]


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1.0 - p))


def compose_risks(answer_risk, sentence_risks) -> np.ndarray:
    """The answer's risk on the scale of its sentences' calibrated risks: ``clip(answer, max_j s_j, sum_j s_j)``.

    An answer is at least as likely to be hallucinated as its most likely hallucinated sentence, and at most
    as likely as any of its sentences is (the union bound, capped at 1).  The learned answer risk (its priors:
    task, style, wording) is kept where it lies between the two; outside, the bound the sentences set wins, so
    the sentences a user reads as the reasons are the reasons for the decision.  An answer without sentences
    keeps its risk.

    Examples
    --------
    >>> compose_risks(np.array([0.17, 0.80, 0.40]),
    ...               [np.array([0.59, 0.1]), np.array([0.03]), np.array([0.2, 0.3])]).round(2).tolist()
    [0.59, 0.03, 0.4]
    """
    out = np.asarray(answer_risk, dtype=np.float64).copy()
    for i, s in enumerate(sentence_risks):
        if len(s):
            out[i] = min(max(out[i], float(np.max(s))), min(1.0, float(np.sum(s))))
    return out


def tune_threshold(estimator, X, y, rule: str = "f1"):
    """Tune the decision threshold of a fitted ``estimator`` on ``(X, y)``; return the tuned classifier."""
    if rule not in THRESHOLD_RULES:
        raise ValueError(f"threshold rule must be one of {THRESHOLD_RULES}; got {rule!r}")
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import TunedThresholdClassifierCV

    scoring = {"f1": "f1", "seed002": make_scorer(seed002_objective)}[rule]
    tuned = TunedThresholdClassifierCV(estimator, scoring=scoring, thresholds=_GRIDS[rule], cv="prefit",
                                       refit=False, response_method="predict_proba")
    return tuned.fit(X, np.asarray(y).astype(int))


def validation_split(frame, idx, *, size: float = 0.2, random_state: int = 42):
    """Split row positions ``idx`` into (fit, validation), grouped by source, stratified by task and label.

    Uses :class:`~sklearn.model_selection.StratifiedGroupKFold` with
    ``round(1 / size)`` folds and keeps its first fold as validation.
    """
    n_splits = max(2, int(round(1.0 / size)))
    return _grouped_splits(frame, idx, n_splits, random_state, purpose="for a validation split")[0]


class grouped_folds:  # noqa: N801 - behaves like a splitter class
    """StratifiedGroupKFold, falling back to GroupKFold when a stratum is too small to stratify."""

    def __init__(self, n_splits: int, random_state: int):
        self.n_splits, self.random_state = n_splits, random_state

    def split(self, X, strata, groups):
        from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

        try:
            return list(StratifiedGroupKFold(n_splits=self.n_splits, shuffle=True,
                                             random_state=self.random_state).split(X, strata, groups))
        except ValueError:
            return list(GroupKFold(n_splits=self.n_splits, shuffle=True,
                                   random_state=self.random_state).split(X, strata, groups))


class Detections(NamedTuple):
    """What :meth:`Detector.detect` finds for a batch of examples (input order).

    Attributes
    ----------
    examples : list of Example
        The examples as featurized.
    analyses : list of evqual.features.Analysis
        Their analyses (sentences, offsets, evidence, check findings), which
        explanations read.
    risk : numpy.ndarray of shape (n_examples,)
        Calibrated response risks (composed with the sentence risks, ``compose="bounds"``; floored by the
        evidence checks).
    sentence_risk : list of numpy.ndarray or None
        Raw sentence risks per example (sentence-level methods only).
    spans : list of list of (start, end, risk) or None
        Predicted character spans per example (methods with a span tagger).
    claim_risk : list of numpy.ndarray or None
        Risk of each claim the evidence engine read (``analysis.reading.claims``), per example (methods with a
        claim model).
    ood : numpy.ndarray or None
        Each example's out-of-distribution score (:meth:`Detector.ood_distance_frame`; over 1 is out of
        distribution), or None for a detector without the map.
    frame : LiteFrame or None
        The features the risks came from (what the out-of-distribution warning names).
    """

    examples: list
    analyses: list
    risk: np.ndarray
    sentence_risk: list | None
    spans: list | None
    claim_risk: list | None = None
    ood: np.ndarray | None = None
    frame: object = None


class Detector:
    """A method fitted with validation-tuned calibration and threshold.

    Parameters
    ----------
    method : str or MethodSpec
        A name from :data:`evqual.models.METHODS` (or a custom spec, for ablations).
    calibration : {"sigmoid", "isotonic", "none"}, default="sigmoid"
    threshold_rule : {"f1", "seed002"}, default="f1"
        ``"f1"`` maximises validation F1 over 0.01..0.99 (step 0.005, seed
        004); ``"seed002"`` uses :func:`seed002_objective` over 0.20..0.80.
    entity_backend : {"regex", "spacy"}, default="regex"
    validation_size : float, default=0.2
        Share of training sources held out for calibration and threshold.
    random_state : int, default=42
    exclude_implicit_true : bool, default=False
        Target definition.
    augment : {None, "contrastive.v1"}, default=None
        Add minimally edited hallucinations of the fitting rows' grounded
        answers to the fitting side (:func:`evqual.data.augment_contrastive`,
        seeded with ``random_state``); never to the calibration and threshold
        part.
    augment_rate : float, default=0.5
        Share of grounded fitting rows that get an edited twin.
    evidence_floor : bool or {"binding", "fired"}, default=True
        Respect the evidence: an answer on which a claim-aligned contradiction
        check fires (``check.*`` features, see :mod:`evqual.features`) gets a
        risk of at least that check's precision for its task on the fitting
        and calibration data (the posterior mean under the prior
        :data:`FLOOR_PRIOR`), whatever the learned model says, where that
        precision is at least :data:`FLOOR_MIN_PRECISION` (see
        :func:`evidence_floors`).  ``True`` means ``"fired"``: every row
        the check fired on.  ``"binding"`` takes the precision of the rows the floor lifts (fired, with an
        unfloored risk below the floor: out-of-fold sentence risks on the
        fitting part, the model's on the validation part), so the risk stays
        calibrated where the floor acts (better calibrated and slightly better on
        RAGTruth ``cv5``, but worse on the hand-written development suite: not the
        default; docs/RESULTS.md, issue 22 session 4).  With ``compose="bounds"`` the floor acts
        on the sentence the check fired on, with the check's precision on
        sentence labels (``evidence_floors(level="sentence")``), before the
        composition: the answer is at least its riskiest sentence, so a
        floored answer always shows the floored sentence.  Without
        composition it acts on the answer.  Thresholds are tuned on the
        floored risks.
        Only evqual's own methods (``evqual``, ``evqual-meta``) are floored;
        the seeds' baselines are left as their seeds describe them.
        The response model is also constrained never to lower the risk when
        a check fires more (monotonic constraints).
    compose : {"bounds", "none"}, default="bounds"
        For methods that score sentences: calibrate the sentence risks on the
        validation sentences (sigmoid) and compose the answer risk with them
        (:func:`compose_risks`: at least the highest sentence risk, at most
        their sum), so that answer, sentences and their reasons share one
        scale; the answer threshold is tuned on the composed risks and the
        sentence threshold on the calibrated sentence risks.  ``"none"``
        keeps raw sentence scores and the answer risk as calibrated.
    crossfit : int or None, default=None
        Cross-fit the calibration and thresholds (:meth:`fit` without
        ``validation``): ``crossfit`` grouped folds of the validation pool
        (``validation_pool``'s split, else every row) are each scored by a
        model fitted on every other source, every map and threshold is fitted
        on those out-of-fold scores of the whole pool, and :attr:`model_` is
        then refitted on all rows (:meth:`fit_crossfit_frames`).  Fitting
        costs ``crossfit + 1`` fits; prediction costs the same.  ``None``:
        the model is fitted on the rows outside one validation part
        (``validation_size`` of the sources, or 25% of the pool) and the maps
        on that part alone, so which part was drawn moves the threshold.

    Attributes
    ----------
    model_ : classifier
        The method fitted on the training part.
    classifier_ : TunedThresholdClassifierCV or FixedThresholdClassifier or None
        The calibration and threshold-tuning result (not saved with the model;
        ``None`` after cross-fitting, whose wrappers held the fold models).
    calibrator_ : object or None
        The fitted calibration map of the positive-class score.
    threshold_ : float
    sentence_threshold_ : float or None
    span_tagger_ : SpanTagger or None
        Character-span tagger (methods with ``span_tagger``), fitted on the
        training part with out-of-fold sentence risks.
    span_threshold_ : float or None
        Token threshold of the tagger, maximising character F1 on validation.
    sentence_calibrator_ : object or None
        The sigmoid map of the sentence model's raw scores (``compose="bounds"``).
    claim_threshold_ : float or None
        The claim risk at which a claim is flagged (validation claim F1; methods with a claim model): the
        differences of flagged claims are the reasons explanations give.
    evidence_floor_ : dict
        ``"<task>:<check feature>"`` (task ``"*"``: any) to its risk floor
        (empty when ``evidence_floor`` is off): of a sentence when
        :attr:`sentence_calibrator_` is set, else of the answer.
    span_gate_ : float
        Tokens of sentences with a sentence risk below this are not scored
        (risk 0): the largest gate of a small grid that keeps validation
        character F1 within 0.002 of the ungated tagger (0 = no gate).
    builder_ : FrameBuilder
        Featurizers (fitted by :meth:`fit`; unset after :meth:`fit_frames`).
    ood_ : dict or None
        The out-of-distribution map (:func:`evqual.models.fit_ood`) of the fitting rows' response
        features, its threshold set on rows it was not fitted on (the validation part, or the
        cross-fitting folds' held-out rows): :meth:`ood_distance_frame` and :attr:`Detections.ood`.

    Examples
    --------
    >>> from evqual.data import load_sample
    >>> from evqual.models import Detector
    >>> det = Detector("nli-proxy").fit(load_sample())
    >>> risk = det.predict_proba(load_sample())
    >>> bool(((risk >= 0) & (risk <= 1)).all())
    True
    """

    def __init__(self, method: str, *, calibration: str = "sigmoid", threshold_rule: str = "f1",
                 entity_backend: str = "regex", validation_size: float = 0.2, random_state: int = 42,
                 exclude_implicit_true: bool = False, augment: str | None = None, augment_rate: float = 0.5,
                 evidence_floor: bool | str = True, compose: str = "bounds", crossfit: int | None = None):
        self.method = method
        self.calibration = calibration
        self.threshold_rule = threshold_rule
        self.entity_backend = entity_backend
        self.validation_size = validation_size
        self.random_state = random_state
        self.exclude_implicit_true = exclude_implicit_true
        self.augment = augment
        self.augment_rate = augment_rate
        self.evidence_floor = evidence_floor
        self.compose = compose
        self.crossfit = crossfit

    compose = "none"  # detectors saved before the parameter existed load without composition
    sentence_calibrator_ = None
    ood_ = None  # detectors saved before issue 40 have no out-of-distribution map
    adapter_ = None  # not adapted (Detector.adapt)
    claim_threshold_ = None
    crossfit = None  # detectors saved before the parameter existed were fitted on one validation part

    @property
    def spec(self):
        """The :class:`~evqual.models.MethodSpec` of :attr:`method` (a name or a spec)."""
        return self.method if isinstance(self.method, MethodSpec) else get_method(self.method)

    def _check(self):
        self.spec  # noqa: B018 - raises for an unknown method name
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}; got {self.calibration!r}")
        if self.threshold_rule not in THRESHOLD_RULES:
            raise ValueError(f"threshold_rule must be one of {THRESHOLD_RULES}; got {self.threshold_rule!r}")
        from ..data import AUGMENT_VERSIONS

        augment = getattr(self, "augment", None)
        if augment is not None and augment not in AUGMENT_VERSIONS:
            raise ValueError(f"augment must be None or one of {AUGMENT_VERSIONS}; got {augment!r}")
        if getattr(self, "compose", "none") not in COMPOSITIONS:
            raise ValueError(f"compose must be one of {COMPOSITIONS}; got {self.compose!r}")
        _floor_mode(getattr(self, "evidence_floor", True))
        problem = _crossfit_problem(getattr(self, "crossfit", None))
        if problem is not None:
            raise ValueError(f"crossfit {problem}")

    # ------------------------------------------------------------------ fitting
    def fit(self, examples, validation=None, *, validation_pool: str | None = None):
        """Featurize, split off a grouped validation part (unless given), fit, calibrate, tune.

        Parameters
        ----------
        examples : examples (see :func:`evqual.features.as_examples`)
        validation : examples, optional
            Use these for calibration and threshold instead of a split.
        validation_pool : str, optional
            Draw the validation part only from rows of this split (for
            instance ``"test"``, whose task mix is the one scored), 25% of its
            sources; rows of other splits from those sources are not fitted on.
        """
        from ..features import as_examples

        self._check()
        examples = as_examples(examples)
        self.builder_ = FrameBuilder(entity_backend=self.entity_backend,
                                     exclude_implicit_true=self.exclude_implicit_true)
        crossfit = getattr(self, "crossfit", None)
        if crossfit is not None and validation is not None:
            raise ValueError("crossfit scores its own validation rows out of fold; it cannot be combined "
                             "with validation=: pass one or the other")
        if validation is None:
            frame = self.builder_.fit_transform(examples)
            check_training_data(frame["label"].to_numpy(), frame["source_id"].to_numpy(),
                                n_splits=max(2, int(round(1.0 / self.validation_size)), crossfit or 0),
                                calibration=self.calibration)
            if crossfit is not None:
                folds = crossfit_folds(frame, crossfit, validation_pool=validation_pool,
                                       random_state=self.random_state)
                return self.fit_crossfit_frames(
                    frame, folds, lambda idx: self._augmented(frame.iloc[idx], [examples[i] for i in idx]))
            fit_idx, val_idx = training_split(frame, validation_pool=validation_pool,
                                              validation_size=self.validation_size, random_state=self.random_state)
            train = self._augmented(frame.iloc[fit_idx], [examples[i] for i in fit_idx])
            return self.fit_frames(train, frame.iloc[val_idx])
        validation = as_examples(validation)
        self.builder_.fit(list(examples) + list(validation))
        train = self._augmented(self.builder_.transform(examples), list(examples))
        return self.fit_frames(train, self.builder_.transform(validation))

    def _augmented(self, train, train_examples):
        """The training frame plus the featurized contrastive edits of its own rows (``augment``)."""
        augment = getattr(self, "augment", None)
        if augment is None:
            return train
        import pandas as pd

        from ..data import augment_contrastive

        edits = augment_contrastive(train_examples, version=augment, rate=self.augment_rate,
                                    seed=self.random_state)
        if not edits:
            return train
        return pd.concat([train, self.builder_.transform(edits)], ignore_index=True)

    def fit_frames(self, train, val):
        """Fit on a training frame; calibrate and tune thresholds on a validation frame.

        ``evqual`` and ``evqual-meta`` need sentence labels (spans on hallucinated answers); when the training
        frame has none, the detector is trained as the method's response-level variant
        (:data:`~evqual.models.RESPONSE_FALLBACK`): :attr:`method` becomes the variant's name, :attr:`fallback_`
        records it and a :class:`~evqual.errors.ResponseLevelFallbackWarning` says so.
        """
        self._check()
        self._check_parts(("training part", train, 1), ("validation part", val, self._majority()))
        self._fallback_without_spans(train)
        self.model_ = self.spec.make().fit(train, train["label"].astype(int).to_numpy())
        oof, claim_oof = _pop_oof(self.model_)
        self._fit_maps(val, floor_frames=(train, val), train_oof=(train, oof))
        names = _ood_names(train)
        self.ood_ = fit_ood(train[names].to_numpy(), val[names].to_numpy(), names, groups_fit=_tasks(train),
                            groups_ref=_tasks(val)) if names else None
        self.span_tagger_, self.span_threshold_, self.span_gate_ = None, None, 0.0
        tagger = self._new_span_tagger(train, oof, claim_oof)
        if tagger is not None:
            self._tune_span_tagger(tagger, val)
        self.n_train_, self.n_validation_ = len(train), len(val)
        return self

    def fit_crossfit_frames(self, frame, folds, train_of=None):
        """Cross-fitted calibration and thresholds: every row of the folds' validation parts is scored out of
        fold, the maps are fitted on all of them, and the final model on every row.

        Parameters
        ----------
        frame : DataFrame
            The detector frame (:class:`~evqual.models.FrameBuilder`) of every training row.
        folds : list of (fit_idx, val_idx)
            Row positions in ``frame``; the validation parts are disjoint and share no ``source_id`` with
            their fitting parts (:func:`crossfit_folds`).
        train_of : callable, optional
            ``train_of(idx)`` gives the fitting frame of rows ``idx`` (default ``frame.iloc[idx]``; with
            ``augment``, :meth:`fit` adds the rows' contrastive edits).

        For each fold a model is fitted on its fitting part and scores its validation part; the calibration
        map, the sentence calibrator, the evidence floors' binding risks, the thresholds (answer, sentence,
        claim) and the span tagger's threshold and gate are fitted on the pooled out-of-fold scores of every
        validation row (a span tagger per fold, fitted as :meth:`fit_frames` fits it).  Then :attr:`model_`
        (and the span tagger) are refitted on all rows: prediction costs what it costs without
        cross-fitting; fitting costs ``len(folds) + 1`` fits.
        """
        self._check()
        if train_of is None:
            def train_of(idx):
                return frame.iloc[idx]
        if len(folds) < 2:
            raise ValueError(f"cross-fitting needs at least 2 folds; got {len(folds)}")
        pool = np.concatenate([np.asarray(v) for _, v in folds])
        if len(np.unique(pool)) != len(pool):
            raise ValueError("the folds' validation parts overlap")
        sources = frame["source_id"].to_numpy()
        fold_of = {}
        for j, (fit_idx, val_idx) in enumerate(folds):
            if np.isin(sources[np.asarray(fit_idx)], sources[np.asarray(val_idx)]).any():
                raise ValueError(f"fold {j}: a source is on both sides of the split")
            fold_of.update((s, j) for s in sources[np.asarray(val_idx)])
        val = frame.iloc[pool]
        train = train_of(np.arange(len(frame)))
        self._check_parts(("training data", train, 1), ("pooled validation part", val, self._majority()))
        self._fallback_without_spans(train)
        parts = []
        for j, (fit_idx, val_idx) in enumerate(folds):
            part = train_of(np.asarray(fit_idx))
            self._check_parts((f"fitting part of fold {j}", part, 1))
            model = self.spec.make().fit(part, part["label"].astype(int).to_numpy())
            parts.append((part, model, *_pop_oof(model)))
        self.model_ = _CrossFitted([m for _, m, _, _ in parts], fold_of)
        self._fit_maps(val, floor_frames=(train,), train_oof=None)
        names = _ood_names(train)
        held = [(part, frame.iloc[np.asarray(v)]) for (part, _, _, _), (_, v) in zip(parts, folds)]
        self.ood_ = fit_ood(train[names].to_numpy(), [(a[names].to_numpy(), b[names].to_numpy(), _tasks(a), _tasks(b))
                                                      for a, b in held], names, groups_fit=_tasks(train)) \
            if names else None
        del held
        self.span_tagger_, self.span_threshold_, self.span_gate_ = None, None, 0.0
        taggers = [self._new_span_tagger(part, oof, claim_oof) for part, _, oof, claim_oof in parts]
        del parts
        if taggers and all(t is not None for t in taggers):
            self._tune_span_tagger(_CrossFitted(taggers, fold_of), val)
        del taggers
        # the wrappers hold the fold models; only the fitted maps and thresholds are kept
        self.classifier_ = None
        self.model_ = self.spec.make().fit(train, train["label"].astype(int).to_numpy())
        oof, claim_oof = _pop_oof(self.model_)
        if self.span_tagger_ is not None:
            self.span_tagger_ = self._new_span_tagger(train, oof, claim_oof)
        self.n_train_, self.n_validation_ = len(train), len(val)
        return self

    def _majority(self) -> int:
        return CALIBRATION_FOLDS if self.calibration != "none" else 1

    def _check_parts(self, *parts):
        """Each ``(name, frame, most)``: both labels, and ``most`` rows of one of them."""
        for part, rows, most in parts:
            y = rows["label"].astype(int).to_numpy()
            pos = int(y.sum())
            if min(pos, len(y) - pos) < 1 or max(pos, len(y) - pos) < most:
                from ..errors import TrainingDataError

                raise TrainingDataError(
                    f"too little training data: the {part} holds {_plural(len(y), 'row')} ({pos} hallucinated, "
                    f"{len(y) - pos} grounded); it needs both labels"
                    + (f" and {most} rows of one of them ({self.calibration} calibration is "
                       f"{CALIBRATION_FOLDS}-fold)" if most > 1 else "")
                    + "; add rows (and sources)", rows=len(y), positives=pos,
                    sources=len(set(rows["source_id"])) if "source_id" in rows.columns else 0)

    def _fallback_without_spans(self, train):
        self.fallback_ = None
        variant = RESPONSE_FALLBACK.get(self.spec.name)
        if variant is not None and not _has_sentence_labels(train):
            import warnings

            from ..errors import ResponseLevelFallbackWarning

            reason = (f"the training data have answer labels but no spans, and '{self.spec.name}' learns from "
                      f"sentence labels; trained the response-level variant '{variant}' (no sentence risks, "
                      "sentence threshold or character spans)")
            warnings.warn(reason, ResponseLevelFallbackWarning, stacklevel=3)
            self.fallback_ = {"from": self.spec.name, "to": variant, "reason": reason}
            self.method = variant

    def _fit_maps(self, val, *, floor_frames, train_oof):
        """Calibration maps, evidence floors and thresholds from :attr:`model_`'s scores of ``val``.

        ``floor_frames``: the rows whose check firings set the floors; ``train_oof``: ``(training frame,
        its out-of-fold sentence risks)`` for binding floors, or ``None``."""
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.frozen import FrozenEstimator
        from sklearn.model_selection import FixedThresholdClassifier

        y_val = val["label"].astype(int).to_numpy()
        frozen = FrozenEstimator(self.model_)
        if self.calibration == "none":
            calibrated = frozen
        else:
            calibrated = CalibratedClassifierCV(frozen, method=self.calibration).fit(val, y_val)
        # the fitted calibration map (sigmoid or isotonic) of the positive-class score, kept on its own so
        # that a saved detector holds the model once (the tuning wrappers each keep a copy of it)
        self.calibrator_ = (calibrated.calibrated_classifiers_[0].calibrators[0]
                            if self.calibration != "none" else None)
        raw = calibrated.predict_proba(val)[:, 1]
        self.sentence_calibrator_ = None
        self.evidence_floor_ = {}
        if self.compose == "bounds" and self.spec.sentence_level:
            sraw, slabels = self._sentence_scores(val)
            if len(slabels) and len(np.unique(slabels)) == 2:
                from sklearn.calibration import _SigmoidCalibration

                self.sentence_calibrator_ = _SigmoidCalibration().fit(_logit(sraw), slabels)
        mode = _floor_mode(getattr(self, "evidence_floor", True))
        if mode and self.spec.source == "evqual":
            # evqual's own methods only: the seeds' baselines are reproduced as their seeds describe them;
            # composed, a check floors the sentence it fired on (the answer is at least its riskiest sentence)
            level = "sentence" if self.sentence_calibrator_ is not None else "answer"
            frames, risks = floor_frames, None
            if mode == "binding" and level == "sentence":
                # the unfloored calibrated sentence risks: out-of-fold on the fitting part when the model
                # keeps them, the fitted model's on the validation part
                val_risks = self._calibrate_sentences(self.model_.sentence_proba(val))
                train, oof = train_oof if train_oof is not None else (None, None)
                if oof is not None and len(oof) == len(train):
                    frames, risks = (train, val), list(self._calibrate_sentences(oof)) + list(val_risks)
                else:
                    frames, risks = (val,), val_risks
            elif mode == "binding":
                frames, risks = (val,), raw  # the fitting part has no out-of-sample answer risks
            self.evidence_floor_ = evidence_floors(*frames, level=level, risks=risks)
        if self.sentence_calibrator_ is not None:
            raw = compose_risks(raw, self.sentence_proba_frame(val))
        else:
            raw = self._floor(val, raw)
        if np.ptp(raw) == 0:
            # a constant score (the majority baseline) has no threshold to tune: keep 0.5
            self.classifier_ = FixedThresholdClassifier(calibrated, threshold=0.5).fit(val, y_val)
            self.threshold_ = 0.5
        elif self.evidence_floor_ or self.sentence_calibrator_ is not None:
            self.classifier_ = tune_threshold(_ScoreClassifier().fit(raw[:, None], y_val), raw[:, None], y_val,
                                              self.threshold_rule)
            self.threshold_ = float(self.classifier_.best_threshold_)
        else:
            self.classifier_ = tune_threshold(calibrated, val, y_val, self.threshold_rule)
            self.threshold_ = float(self.classifier_.best_threshold_)
        from ._metrics import binary_metrics

        # raw holds the calibrated validation risks already (same map as predict_proba_frame)
        self.validation_metrics_ = binary_metrics(y_val, raw, self.threshold_)
        self.sentence_threshold_ = None
        if self.spec.sentence_level:
            risks, labels = self._sentence_scores(val)
            if len(labels) and len(np.unique(labels)) == 2:
                from sklearn.metrics import roc_auc_score

                self.validation_metrics_["sentence_auroc"] = float(roc_auc_score(labels, risks))
                tuned = tune_threshold(_ScoreClassifier().fit(risks[:, None], labels), risks[:, None], labels,
                                       self.threshold_rule)
                self.sentence_threshold_ = float(tuned.best_threshold_)
        self.claim_threshold_ = None
        risks = self.claim_proba_frame(val) if self.spec.sentence_level and CLAIM in val.columns else None
        if risks is not None:
            labels = [b.labels for b in val[CLAIM]]
            r = np.concatenate([x for x, y in zip(risks, labels) if y is not None and len(y)] or [np.zeros(0)])
            y = np.concatenate([y for y in labels if y is not None and len(y)] or [np.zeros(0, dtype=int)])
            if len(np.unique(y)) == 2:
                tuned = tune_threshold(_ScoreClassifier().fit(r[:, None], y), r[:, None], y, "f1")
                self.claim_threshold_ = float(tuned.best_threshold_)

    def _new_span_tagger(self, train, oof, claim_oof=None):
        """A span tagger fitted on ``train`` with its out-of-fold sentence (and claim) risks, or ``None``
        (no tagger for the method, no token gold, or no hallucinated token)."""
        from ._spans import SpanTagger

        if not (self.spec.span_tagger and TOK in train.columns and oof is not None):
            return None
        has_gold = [t.gold is not None for t in train[TOK]]
        if not any(has_gold) or not any(t.labels is not None and t.labels.any() for t in train[TOK]):
            return None
        oof = self._floor_sentences(train, self._calibrate_sentences(oof))
        return SpanTagger(random_state=self.random_state).fit(train, sentence_risks=oof, claim_risks=claim_oof)

    def _tune_span_tagger(self, tagger, val):
        """Token threshold and gate of ``tagger`` on ``val`` (character F1); sets the ``span_*_`` attributes."""
        from ._spans import span_scores

        sr = self.sentence_proba_frame(val)
        probs = tagger.token_proba(val, sr, claim_risks=self._claim_risks(val, tagger))
        keep = [i for i, t in enumerate(val[TOK]) if t.gold is not None]
        toks = [val[TOK].iloc[i] for i in keep]
        gold = [t.gold for t in toks]

        def best_threshold(token_probs):
            best = (0.5, -1.0)
            for th in _SPAN_GRID:
                f = span_scores([tokens_to_spans(t.offsets, token_probs[i], th, t.sentence)
                                 for i, t in zip(keep, toks)],
                                gold)["f1"]
                if f > best[1]:
                    best = (float(th), f)
            return best

        best = best_threshold(probs)
        # production fast path: skip tokens of low-risk sentences when validation F1 stays within 0.002
        gate = 0.0
        for g in _SPAN_GATES:
            gated = [np.where(np.asarray(r)[t.sentence] >= g, p, 0.0) if len(p) else p
                     for t, p, r in zip(val[TOK], probs, sr)]
            th, f = best_threshold(gated)
            if f < best[1] - 0.002:
                break
            gate, gated_best = g, (th, f)
        if gate > 0:
            best = gated_best
        self.span_tagger_, self.span_threshold_, self.span_gate_ = tagger, best[0], gate
        self.validation_metrics_["span_f1"] = best[1]

    def _sentence_scores(self, frame):
        from ._frame import SENT

        risks = self.sentence_proba_frame(frame)
        r, y = [], []
        for block, risk in zip(frame[SENT], risks):
            if block.labels is not None:
                r.append(risk)
                y.append(block.labels)
        if not r:
            return np.zeros(0), np.zeros(0, dtype=int)
        return np.concatenate(r), np.concatenate(y)

    # ------------------------------------------------------------------ prediction
    def ood_distance_frame(self, frame) -> np.ndarray | None:
        """Each row's out-of-distribution score (:func:`evqual.models.ood_distance`: its distance to the
        training answers of its task over that map's threshold; over 1 is out of distribution), or None for a
        detector without the map."""
        state = getattr(self, "ood_", None)
        if state is None:
            return None
        return ood_distance(state, frame[state["names"]].to_numpy(), _tasks(frame))

    def predict_proba_frame(self, frame) -> np.ndarray:
        """Calibrated response risk in [0, 1] for each row of a frame."""
        return self.predict_proba_and_sentences_frame(frame)[0]

    def _floor(self, frame, risk) -> np.ndarray:
        """``risk`` raised to the floor of every contradiction check that fired (:attr:`evidence_floor_`).

        A row uses its task's floor for a check, else the all-task (``"*"``) one.
        """
        floors = getattr(self, "evidence_floor_", None)
        if not floors:
            return risk
        out = np.asarray(risk, dtype=np.float64).copy()
        tasks = np.asarray([str(t) for t in frame["task_type"].to_numpy(dtype=object)]) \
            if "task_type" in frame.columns else None
        table = _floor_table(floors)
        for name in FLOOR_CHECKS:
            if name not in frame.columns:
                continue
            default, per_task = table[name]
            if not default and not per_task:
                continue
            floor = np.full(len(out), default)
            if tasks is not None:
                for task, value in per_task.items():
                    floor[tasks == task] = value
            fired = frame[name].to_numpy(dtype=np.float64) > 0
            np.maximum(out, np.where(fired, floor, 0.0), out=out)
        return out

    def _floor_sentences(self, frame, risks):
        """Composed detectors: each sentence's calibrated risk raised to the floor of every contradiction check
        that fired on it (its ``sent.check.*`` count; :attr:`evidence_floor_`, learned from sentence labels).

        Without a sentence calibrator the floors act on the answer instead (:meth:`_floor`).
        """
        floors = getattr(self, "evidence_floor_", None)
        if not floors or risks is None or getattr(self, "sentence_calibrator_", None) is None:
            return risks
        from ._frame import SENT

        blocks = frame[SENT].tolist()
        tasks = [str(t) for t in frame["task_type"].tolist()] if "task_type" in frame.columns else None
        if not blocks or not any(len(b.values) for b in blocks):
            return risks
        names = {n: j for j, n in enumerate(next(b for b in blocks if len(b.values)).names)}
        cols, values = [], []
        table = _floor_table(floors)
        for name in FLOOR_CHECKS:
            j = names.get("sent." + name)
            default, per_task = table[name]
            if j is not None and (default or per_task):
                cols.append(j)
                values.append((default, per_task))
        if not cols:
            return risks
        out = []
        for i, (b, r) in enumerate(zip(blocks, risks)):
            r = np.asarray(r, dtype=np.float64)
            if len(r) and len(b.values):
                fired = b.values[:, cols] > 0
                if fired.any():
                    task = tasks[i] if tasks is not None else None
                    floor = np.array([pt.get(task, d) if task is not None else d for d, pt in values])
                    r = np.maximum(r, (fired * floor).max(axis=1))
            out.append(r)
        return out

    def _calibration_input(self, frame, proba=None) -> np.ndarray:
        """The score the calibration map was fitted on.

        ``CalibratedClassifierCV`` calibrates ``decision_function`` when the
        model has one (logistic regression, gradient boosting) and the
        positive-class probability otherwise; the same score must be fed to
        :attr:`calibrator_`.
        """
        if hasattr(self.model_, "decision_function"):
            return fast_decision(self.model_, frame)
        return (proba if proba is not None else fast_proba(self.model_, frame))[:, 1]

    def _calibrate(self, score) -> np.ndarray:
        return np.clip(fast_calibrate(self.calibrator_, score), 0.0, 1.0)

    def __getstate__(self):
        # classifier_ (the calibration and threshold-tuning wrappers) is only needed while fitting;
        # it holds further copies of model_, so it is not saved
        state = self.__dict__.copy()
        state.pop("classifier_", None)
        return state

    def sentence_proba_frame(self, frame) -> list[np.ndarray] | None:
        """Sentence risks per row (sentence-level methods only): calibrated when the detector composes its
        answer risk from them (``compose="bounds"``), else the sentence model's raw scores."""
        if not self.spec.sentence_level:
            return None
        return self._floor_sentences(frame, self._calibrate_sentences(self.model_.sentence_proba(frame)))

    def _calibrate_sentences(self, risks):
        cal = getattr(self, "sentence_calibrator_", None)
        if cal is None or risks is None:
            return risks
        lengths = [len(r) for r in risks]
        if not sum(lengths):
            return risks
        flat = np.clip(fast_calibrate(cal, _logit(np.concatenate(risks))), 0.0, 1.0)
        return np.split(flat, np.cumsum(lengths)[:-1])

    def predict_proba_and_sentences_frame(self, frame):
        """``(response risks, sentence risks per row or None)``, the sentence model run once.

        The response risk is calibrated and, with ``compose="bounds"``, composed with the calibrated
        sentence risks (:func:`compose_risks`)."""
        return self._predict_all_frame(frame)[:2]

    def _predict_all_frame(self, frame, *, adapted: bool = True):
        """``(response risks, sentence risks or None, claim risks or None)``, each model run once
        (``adapted=False``: the response risk before the adapter, :meth:`base_proba_frame`)."""
        model = self.model_
        claims = None
        if hasattr(model, "predict_all"):
            proba, sent, claims = model.predict_all(frame)
            sent = self._calibrate_sentences(sent)
        elif hasattr(model, "predict_proba_and_sentences"):
            proba, sent = model.predict_proba_and_sentences(frame)
            sent = self._calibrate_sentences(sent)
        else:
            proba, sent = fast_proba(model, frame), self.sentence_proba_frame(frame)
        risk = proba[:, 1] if self.calibrator_ is None else self._calibrate(self._calibration_input(frame, proba))
        if getattr(self, "sentence_calibrator_", None) is not None:
            sent = self._floor_sentences(frame, sent)
            risk = compose_risks(risk, sent)
        else:
            risk = self._floor(frame, risk)
        return (self._adapted(frame, risk) if adapted else risk), sent, claims

    def _adapted(self, frame, risk):
        state = getattr(self, "adapter_", None)
        if state is None or state["kind"] == "shipped":
            return risk
        from ._adapt import adapter_risk

        return adapter_risk(state, risk, frame[state["names"]].to_numpy()
                            if state["kind"].startswith("top_layer") else None)

    def base_proba_frame(self, frame) -> np.ndarray:
        """The response risk before any adaptation (:meth:`adapt`): what :meth:`predict_proba_frame` gives
        for a detector that was not adapted."""
        return self._predict_all_frame(frame, adapted=False)[0]

    def adapt(self, examples, **kwargs):
        """A copy adapted to a few labelled answers of your own domain, and its report.

        See :func:`evqual.models.adapt_detector` (what is refitted, how it is chosen, the report); keyword
        arguments go there.

        Examples
        --------
        >>> from evqual.data import load_sample
        >>> from evqual.models import Detector
        >>> adapted, report = Detector.load().adapt(load_sample(), learning_curve=())
        >>> report.rows, report.kind in ("shipped", "recalibrated", "top_layer", "top_layer_local")
        (72, True)
        """
        from ._adapt import adapt_detector

        return adapt_detector(self, examples, **kwargs)

    # ------------------------------------------------------------------ production scoring
    @classmethod
    def load(cls, path=None, *, sha256: str | None = None) -> "Detector":
        """Load a saved detector (default: the shipped ``models/default``); see :func:`evqual.models.load_detector`.

        ``sha256`` pins the SHA-256 of the model file (checked before
        anything else is read); without it, ``$EVQUAL_MODEL_SHA256`` when set.
        """
        from ._io import default_model_path, load_detector

        return load_detector(path if path is not None else default_model_path(), sha256=sha256)

    # ------------------------------------------------------------------ deprecated scoring shims
    def score(self, **kwargs):
        """Deprecated since 0.2: use :class:`evqual.scoring.Scorer` (``Scorer(detector).score(...)``).

        Scoring (reasons, policy, results) is not the estimator's job; this
        shim keeps code written for evqual 0.1 running and will be removed
        in 0.3.  It warns with a :class:`FutureWarning`.
        """
        return self._scorer("score").score(**kwargs)

    def score_batch(self, items, **kwargs) -> list:
        """Deprecated since 0.2: use :meth:`evqual.scoring.Scorer.score_batch` (removed in 0.3)."""
        return self._scorer("score_batch").score_batch(items, **kwargs)

    def _scorer(self, name):
        import warnings

        warnings.warn(f"Detector.{name} is deprecated and will be removed in evqual 0.3; use "
                      f"evqual.scoring.Scorer(detector).{name}(...) (or Scorer.load(...))", FutureWarning,
                      stacklevel=3)
        # the one import of a higher layer in evqual.models, allowed by tests/test_architecture.py for these
        # deprecated shims only
        from ..scoring import Scorer

        return Scorer(self)

    def _claim_risks(self, frame, tagger):
        if not getattr(tagger, "uses_claim_risks_", False):
            return None
        return self.model_.claim_proba(frame)

    def claim_proba_frame(self, frame) -> list[np.ndarray] | None:
        """Raw claim risks per row, over the evidence engine's claims (``None`` without a claim model)."""
        fn = getattr(self.model_, "claim_proba", None)
        return fn(frame) if fn is not None else None

    def span_proba_frame(self, frame, sentence_risks=None, claim_risks=None) -> list[np.ndarray] | None:
        """Token risks per row from the span tagger (``None`` without one)."""
        tagger = getattr(self, "span_tagger_", None)
        if tagger is None:
            return None
        if sentence_risks is None:
            sentence_risks = self.model_.sentence_proba(frame)
        if claim_risks is None:
            claim_risks = self._claim_risks(frame, tagger)
        return tagger.token_proba(frame, sentence_risks, gate=getattr(self, "span_gate_", 0.0),
                                  claim_risks=claim_risks)

    def predict_spans_frame(self, frame, sentence_risks=None, claim_risks=None) -> list[list[tuple]] | None:
        """``(start, end, risk)`` character spans per row from the span tagger (``None`` without one)."""
        probs = self.span_proba_frame(frame, sentence_risks, claim_risks)
        if probs is None:
            return None
        return [tokens_to_spans(tok.offsets, p, self.span_threshold_, tok.sentence)
                for tok, p in zip(frame[TOK], probs)]

    def _frame(self, examples):
        if not hasattr(self, "builder_"):
            raise ValueError("this Detector was fitted on frames; pass frames to *_frame methods.")
        # risks need no token features (spans come from score / predict_spans_frame)
        return self.builder_.transform(examples, with_targets=False, with_tokens=False)

    def detect(self, examples, *, spans: bool = True) -> "Detections":
        """Everything the detector says about examples, in one pass: risks, sentence risks, spans.

        The production path: features are built once (no pandas frame, no
        targets), the sentence model runs once, and token features are
        built only for sentences past the span tagger's gate.

        Parameters
        ----------
        examples : examples (see :func:`evqual.features.as_examples`)
        spans : bool, default=True
            Run the span tagger (when the method has one).

        Returns
        -------
        Detections

        Examples
        --------
        >>> from evqual.data import load_sample
        >>> from evqual.models import Detector
        >>> det = Detector.load()
        >>> d = det.detect(list(load_sample())[:3])
        >>> len(d.risk), len(d.analyses), bool(((d.risk >= 0) & (d.risk <= 1)).all())
        (3, 3, True)
        """
        if not hasattr(self, "builder_"):
            raise ValueError("this Detector was fitted on frames; pass frames to *_frame methods.")
        frame, exs, analyses = self.builder_.transform_with_analyses(examples, with_targets=False,
                                                                     with_tokens=False, lite=True)
        if not exs:
            return Detections([], [], np.zeros(0), None, None)
        risks, sent_risks, claim_risks = self._predict_all_frame(frame)
        found = None
        if spans and getattr(self, "span_tagger_", None) is not None:
            from ..features import token_block

            # token features only for the sentences the tagger's gate lets through (the others get no span)
            gate = getattr(self, "span_gate_", 0.0)
            frame.set_column(TOK, [token_block(ex.output, an,
                                               only_sentences=np.asarray(sr) >= gate if gate > 0 else None)
                                   for ex, an, sr in zip(exs, analyses, sent_risks)])
            found = self.predict_spans_frame(frame, sent_risks, claim_risks)
        return Detections(exs, analyses, np.asarray(risks, dtype=np.float64), sent_risks, found, claim_risks,
                          self.ood_distance_frame(frame), frame)

    def predict_proba(self, examples) -> np.ndarray:
        """Calibrated risk that each example's output is hallucinated (the fast path of :meth:`detect`)."""
        return self.detect(examples, spans=False).risk

    def predict(self, examples) -> np.ndarray:
        """1 where the calibrated risk reaches the tuned threshold."""
        return (self.predict_proba(examples) >= self.threshold_).astype(int)
