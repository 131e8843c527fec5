"""Adapting a fitted detector to a few labelled answers of a user's own domain, in seconds.

A model trained on RAGTruth ranks the answers of another source better than it decides about them: its
calibration and threshold do not carry over, and the weight it gives each signal is RAGTruth's (issue 40).
:func:`adapt_detector` refits, from 25 to 1,000 labelled answers, what transfers cheaply:

* the *top layer*: a logistic regression over the model's own risk (its logit, scaled by
  :data:`ANCHOR_SCALE` so that its coefficient is almost unpenalised) and the answer's response features
  (centred and compressed as the out-of-distribution map does), with an L2 penalty whose strength
  ``C`` is chosen by repeated stratified cross-validation on the user's labels.  A strong penalty leaves the
  features out and only recalibrates the model's risk (the anchor): the layer moves away from the shipped
  model only as far as the labels show it helps;
* the decision threshold, tuned (F1, as the model's own) on the out-of-fold adapted risks.

Candidates are the shipped model as it is, its recalibration (Platt scaling of its risk) and the top layer
at each ``C`` of :data:`C_GRID`.  The one with the lowest cross-validated log loss wins, among those whose
cross-validated AUROC is at least the shipped model's on the same answers: the adapted model is never worse
than the shipped one on the user's labels under that cross-validation (the shipped model itself is a
candidate).

The report (:class:`AdaptationReport`) gives the cross-validated precision, recall and F1 at the adapted
decision (thresholds tuned inside each fold, so the estimate is honest) with bootstrap confidence intervals,
AUROC and expected calibration error before and after, and a learning curve over ``k`` labelled answers.

What adaptation cannot do: add a signal the features lack.  It reweighs calibration, threshold and the
existing signals (docs/RESULTS.md, issue 40).

The adapter is plain arrays and numbers (``Detector.adapter_``), saved and audited with the model, and
applied with one dot product per answer.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ADAPT_VERSION", "ANCHOR_SCALE", "C_GRID", "MIN_ADAPT_ROWS", "MIN_ADAPT_PER_CLASS", "AdaptationReport",
           "adapt_detector", "adapter_features", "adapter_risk", "check_adapter_state", "decision_metrics",
           "expected_calibration_error", "fit_adapter", "logistic_fit", "recall_at_fpr"]

ADAPT_VERSION = 1
ANCHOR_SCALE = 10.0
"""The model's logit risk enters the top layer multiplied by this: its coefficient is then penalised
``ANCHOR_SCALE ** 2`` times less than a feature's, so the layer keeps the model's ranking unless the labels
say otherwise."""
C_GRID = (0.003, 0.01, 0.03, 0.1)
MIN_ADAPT_ROWS = 20
MIN_ADAPT_PER_CLASS = 5
MAX_ADAPT_ROWS = 100_000
_THRESHOLDS = np.round(np.arange(0.01, 0.99 + 1e-9, 0.005), 4)
_EPS = 1e-6


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


def _sigmoid(z) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))


def _features(state: dict, X) -> np.ndarray:
    Z = (np.asarray(X, dtype=np.float64) - state["center"]) / state["scale"]
    Z = np.nan_to_num(Z, nan=0.0, posinf=1e6, neginf=-1e6)
    return np.sign(Z) * np.log1p(np.abs(Z))


KINDS = ("shipped", "recalibrated", "top_layer", "top_layer_local")
"""The candidates: the model as it is; its recalibration; the top layer over features centred on the training
data's medians (``top_layer``), or standardised on the adaptation answers themselves (``top_layer_local``:
the better one when the user's answers differ from the training data in scale, as HaluEval's dialogues do)."""


def _design(risk, Z, kind: str) -> np.ndarray:
    anchor = (ANCHOR_SCALE * _logit(risk))[:, None]
    if kind == "recalibrated":
        return anchor
    return np.hstack([anchor, Z])


def adapter_risk(state: dict, risk, X) -> np.ndarray:
    """The adapted risk of answers whose model risk is ``risk`` and response features (the adapter's
    ``names``, in order) are ``X``."""
    risk = np.asarray(risk, dtype=np.float64)
    kind = state["kind"]
    if kind == "shipped":
        return risk
    if kind == "recalibrated":
        Z = np.zeros((len(risk), 0))
    else:
        Z = _features(state, X)
        if kind == "top_layer_local":
            Z = (Z - state["mean"]) / state["std"]
    return _sigmoid(_design(risk, Z, kind) @ state["coef"] + state["intercept"])


def expected_calibration_error(y, p, bins: int = 10) -> float:
    """The expected calibration error over ``bins`` equal-width risk bins (weighted by their size).

    >>> expected_calibration_error([0, 1, 0, 1], [0.0, 1.0, 0.0, 1.0])
    0.0
    """
    y, p = np.asarray(y, dtype=float), np.clip(np.asarray(p, dtype=float), 0, 1)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    err = 0.0
    for b in range(bins):
        sel = idx == b
        if sel.any():
            err += sel.mean() * abs(p[sel].mean() - y[sel].mean())
    return float(err)


def recall_at_fpr(y, p, fpr: float = 0.10) -> float:
    """The recall at the strictest threshold whose false-alarm rate is at most ``fpr`` (ROC step).

    >>> recall_at_fpr([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.9])
    1.0
    """
    y = np.asarray(y).astype(bool)
    p = np.asarray(p, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return float("nan")
    order = np.argsort(-p, kind="stable")
    ps, ys = p[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(ps)), len(ps) - 1]  # the last row of each tied block: a ROC point
    tps, fps = np.cumsum(ys)[last], np.cumsum(~ys)[last]
    ok = fps / n_neg <= fpr + 1e-12
    return float(tps[ok].max() / n_pos) if ok.any() else 0.0


def _auroc(y, p) -> float:
    """The area under the ROC curve (ties count half), NaN with one label only: the Mann-Whitney
    statistic, without scikit-learn's input checks (adaptation computes it hundreds of times)."""
    from scipy.stats import rankdata

    y = np.asarray(y).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return float("nan")
    ranks = rankdata(p)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _log_loss(y, p) -> float:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    y = np.asarray(y, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _best_threshold(y, p) -> float:
    """The F1-maximising threshold of the grid (the model's own rule), the lowest of ties."""
    y = np.asarray(y, dtype=bool)
    pos = y.sum()
    best, best_t = -1.0, 0.5
    for t in _THRESHOLDS:
        pred = p >= t
        tp = np.count_nonzero(pred & y)
        denom = pred.sum() + pos
        f1 = 2 * tp / denom if denom else 0.0
        if f1 > best + 1e-12:
            best, best_t = f1, float(t)
    return best_t


def logistic_fit(X, y, C: float, *, max_iter: int = 50, tol: float = 1e-8):
    """``(coef, intercept)`` of L2-penalised logistic regression, scikit-learn's objective
    (``C * sum(log loss) + ||coef||^2 / 2``, intercept unpenalised), by damped Newton steps.

    The same minimum as ``LogisticRegression(C=C)`` (a strictly convex problem) at a fraction of its cost on
    the small problems adaptation solves hundreds of times (no input validation, an exact Hessian).

    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> coef, b = logistic_fit(X, y, 1.0)
    >>> from sklearn.linear_model import LogisticRegression
    >>> ref = LogisticRegression(C=1.0, tol=1e-10).fit(X, y)
    >>> bool(abs(coef[0] - ref.coef_[0, 0]) < 1e-4 and abs(b - ref.intercept_[0]) < 1e-4)
    True
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    Xb = np.hstack([X, np.ones((n, 1))])
    lam = np.full(d + 1, 1.0 / C)
    lam[-1] = 1e-10

    def objective(w):
        z = Xb @ w
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.dot(lam * w, w))

    w = np.zeros(d + 1)
    f = objective(w)
    for _ in range(max_iter):
        p = _sigmoid(Xb @ w)
        g = Xb.T @ (p - y) + lam * w
        H = (Xb.T * (p * (1 - p))) @ Xb
        H[np.diag_indices_from(H)] += lam
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        while True:  # backtracking: Newton steps can overshoot on (nearly) separable labels
            w_new = w - t * step
            f_new = objective(w_new)
            if f_new <= f - 1e-4 * t * float(g @ step) or t < 1e-6:
                break
            t *= 0.5
        w, f_old, f = w_new, f, f_new
        if np.max(np.abs(t * step)) < tol or abs(f_old - f) < tol * max(1.0, abs(f)):
            break
    return w[:-1], float(w[-1])


def _fit(kind: str, C, risk, Z, y):
    """``(coef, intercept, mean, std)`` of one candidate on rows ``(risk, Z, y)`` (``mean`` and ``std``: the
    local standardisation of ``top_layer_local``, else None)."""
    if kind == "shipped":
        return None
    mean = std = None
    if kind == "top_layer_local":
        mean, std = Z.mean(axis=0), Z.std(axis=0) + 1e-3
        Z = (Z - mean) / std
    coef, intercept = logistic_fit(_design(risk, Z, kind), y, 1e4 if kind == "recalibrated" else C)
    return coef, intercept, mean, std


def _predict(kind, params, risk, Z):
    if kind == "shipped":
        return np.asarray(risk, dtype=np.float64)
    coef, intercept, mean, std = params
    if mean is not None:
        Z = (Z - mean) / std
    return _sigmoid(_design(risk, Z, kind) @ coef + intercept)


def _folds(y, n_splits: int, n_repeats: int, seed: int):
    from sklearn.model_selection import RepeatedStratifiedKFold

    return list(RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=n_repeats, random_state=seed).split(y, y))


def _candidates():
    return ([("shipped", None), ("recalibrated", None)] + [("top_layer", c) for c in C_GRID]
            + [("top_layer_local", c) for c in C_GRID])


def _select(risk, Z, y, *, seed: int, n_repeats: int = 3):
    """Cross-validate every candidate; returns ``(kind, C, table, oof of the first repeat by candidate)``."""
    n_splits = int(min(5, np.bincount(y, minlength=2).min()))
    folds = _folds(y, n_splits, n_repeats, seed)
    per_repeat = len(folds) // n_repeats
    table, first_oof = [], {}
    for kind, C in _candidates():
        losses, aurocs = [], []
        for r in range(n_repeats):
            oof = np.empty(len(y))
            for tr, te in folds[r * per_repeat:(r + 1) * per_repeat]:
                params = _fit(kind, C, risk[tr], Z[tr], y[tr])
                oof[te] = _predict(kind, params, risk[te], Z[te])
                # AUROC within each fold: pooling folds would mix the scales of five fitted maps and
                # penalise even a monotone recalibration against the shipped risk
                aurocs.append(_auroc(y[te], oof[te]))
            losses.append(_log_loss(y, oof))
            if r == 0:
                first_oof[(kind, C)] = oof
        table.append({"kind": kind, "C": C, "log_loss": float(np.mean(losses)), "auroc": float(np.nanmean(aurocs))})
    shipped = table[0]
    ok = [row for row in table if row["auroc"] >= shipped["auroc"] - 1e-9]
    best = min(ok, key=lambda row: (row["log_loss"], _candidates().index((row["kind"], row["C"]))))
    return best["kind"], best["C"], table, first_oof


def _decision_cv(kind, C, risk, Z, y, *, seed: int):
    """Out-of-fold decisions at a threshold tuned inside each fold (on the fold's training part's own
    out-of-fold risks): an honest estimate of the adapted decision."""
    n_splits = int(min(5, np.bincount(y, minlength=2).min()))
    outer = _folds(y, n_splits, 1, seed)
    pred = np.zeros(len(y), dtype=bool)
    for tr, te in outer:
        inner_splits = int(min(n_splits, np.bincount(y[tr], minlength=2).min()))
        if inner_splits >= 2 and kind != "shipped":
            inner = np.empty(len(tr))
            for itr, ite in _folds(y[tr], inner_splits, 1, seed):
                params = _fit(kind, C, risk[tr][itr], Z[tr][itr], y[tr][itr])
                inner[ite] = _predict(kind, params, risk[tr][ite], Z[tr][ite])
        else:
            inner = _predict(kind, None, risk[tr], Z[tr]) if kind == "shipped" else risk[tr]
        thr = _best_threshold(y[tr], inner)
        params = _fit(kind, C, risk[tr], Z[tr], y[tr])
        pred[te] = _predict(kind, params, risk[te], Z[te]) >= thr
    return pred


def decision_metrics(y, pred) -> dict:
    """Precision, recall, F1 and the share of faithful answers flagged, of decisions ``pred`` against labels ``y``.

    >>> decision_metrics(np.array([1, 0, 1, 0]), np.array([True, True, False, False]))["precision"]
    0.5
    """
    y, pred = np.asarray(y), np.asarray(pred, dtype=bool)
    tp = int(np.count_nonzero(pred & (y == 1)))
    fp = int(np.count_nonzero(pred & (y == 0)))
    fn = int(np.count_nonzero(~pred & (y == 1)))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "faithful_flagged": fp / max(1, int(np.count_nonzero(y == 0)))}


def _bootstrap(y, pred, *, seed: int, n: int = 1000) -> dict:
    rng = np.random.default_rng(seed)
    draws = {"precision": [], "recall": [], "f1": []}
    for _ in range(n):
        idx = rng.integers(0, len(y), len(y))
        m = decision_metrics(y[idx], pred[idx])
        for k in draws:
            draws[k].append(m[k])
    return {k: [round(float(np.quantile(v, 0.025)), 4), round(float(np.quantile(v, 0.975)), 4)]
            for k, v in draws.items()}


@dataclass
class AdaptationReport:
    """What :func:`adapt_detector` measured on the user's labels.

    Attributes
    ----------
    rows, positives : int
        Labelled answers used, and how many are hallucinated.
    kind : {"shipped", "recalibrated", "top_layer", "top_layer_local"}
        The candidate chosen; ``C`` its penalty (top layer only).
    candidates : list of dict
        Every candidate's cross-validated log loss and AUROC.
    before, after : dict
        On the user's labels: AUROC, recall at 10% false alarms, expected calibration error, and precision,
        recall, F1 and share of faithful answers flagged at the decision (``before``: the shipped model at its
        own threshold, in-sample, for it never saw these answers; ``after``: cross-validated (AUROC: the mean
        within the folds; recall at 10% false alarms and calibration: pooled out-of-fold risks; the decision:
        thresholds tuned inside each fold), with 95% bootstrap intervals in ``ci``).
    threshold_before, threshold : float
    learning_curve : list of dict
        Per ``k``: the mean and spread over random draws of k labelled answers (adapted on k, measured on the
        rest) of AUROC, recall at 10% false alarms and F1.
    seconds : float
    """

    rows: int
    positives: int
    kind: str
    C: float | None
    candidates: list
    before: dict
    after: dict
    threshold_before: float
    threshold: float
    learning_curve: list = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def to_markdown(self) -> str:
        """The report as markdown (what ``evqual adapt`` writes beside the model)."""
        from .._markdown import markdown_table

        def pct(x):
            return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"

        a, b = self.after, self.before
        ci = a.get("ci", {})
        lines = [f"# Adaptation report\n",
                 f"{self.rows} labelled answers ({self.positives} hallucinated). Chosen: **{self.kind}**"
                 + (f" (C = {self.C})" if self.C is not None else "")
                 + f"; threshold {self.threshold_before:.3f} -> {self.threshold:.3f}; {self.seconds:.1f} s.\n",
                 "## On your labels (cross-validated; before: the model as it was)\n"]
        rows = []
        for key in ("auroc", "recall_at_10fpr", "ece", "precision", "recall", "f1", "faithful_flagged"):
            interval = ci.get(key)
            rows.append({"metric": key, "before": pct(b.get(key)), "after": pct(a.get(key)),
                         "after 95% CI": f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""})
        import pandas as pd

        lines.append(markdown_table(pd.DataFrame(rows)) + "\n")
        lines.append("## Candidates (cross-validated)\n")
        lines.append(markdown_table(pd.DataFrame(self.candidates)) + "\n")
        if self.learning_curve:
            lines.append("## Learning curve (adapted on k answers, measured on the rest; mean ± sd)\n")
            lc = [{"k": r["k"], "draws": r["draws"],
                   **{m: f"{r[m]['mean']:.3f} ± {r[m]['sd']:.3f}" for m in ("auroc", "recall_at_10fpr", "f1")}}
                  for r in self.learning_curve]
            lines.append(markdown_table(pd.DataFrame(lc)) + "\n")
        lines.append("Adaptation refits calibration, the threshold and the weight of signals the features already "
                     "have. It cannot add a signal the features lack.\n")
        return "\n".join(lines)


def _adapt_core(risk, Z, y, *, seed: int, n_repeats: int = 3):
    """``(kind, C, params, threshold, table, out-of-fold adapted risks)`` of one adaptation."""
    kind, C, table, oof = _select(risk, Z, y, seed=seed, n_repeats=n_repeats)
    params = _fit(kind, C, risk, Z, y)
    thr_risk = oof[(kind, C)] if kind != "shipped" else risk
    threshold = _best_threshold(y, thr_risk)
    return kind, C, params, threshold, table, oof[(kind, C)]


def _learning_curve(risk, Z, y, ks, *, draws: int, seed: int) -> list:
    from sklearn.model_selection import StratifiedShuffleSplit

    out = []
    for k in ks:
        if k >= len(y) - 10 or k < MIN_ADAPT_ROWS:
            continue
        got = {"auroc": [], "recall_at_10fpr": [], "f1": []}
        splitter = StratifiedShuffleSplit(n_splits=draws, train_size=k, random_state=seed)
        for tr, te in splitter.split(y, y):
            if np.bincount(y[tr], minlength=2).min() < 2:
                continue
            kind, C, params, thr, _, _ = _adapt_core(risk[tr], Z[tr], y[tr], seed=seed, n_repeats=1)
            p = _predict(kind, params, risk[te], Z[te])
            got["auroc"].append(_auroc(y[te], p))
            got["recall_at_10fpr"].append(recall_at_fpr(y[te], p))
            got["f1"].append(decision_metrics(y[te], p >= thr)["f1"])
        if got["auroc"]:
            out.append({"k": int(k), "draws": len(got["auroc"]),
                        **{m: {"mean": float(np.mean(v)), "sd": float(np.std(v))} for m, v in got.items()}})
    return out


def _labels(examples, source: str = "the adaptation data") -> np.ndarray:
    from ..errors import TrainingDataError

    y = []
    for ex in examples:
        label = ex.label if ex.label is not None else (int(bool(ex.spans)) if ex.spans is not None else None)
        if label is None:
            raise TrainingDataError(f"{ex.origin or ex.id}: field 'label': an answer of {source} has no label "
                                    "(adaptation needs 0 or 1 on every answer)", rows=len(examples), positives=0, sources=0)
        y.append(int(label))
    y = np.asarray(y, dtype=int)
    n, pos = len(y), int(y.sum())
    if n and pos in (0, n):
        raise TrainingDataError(
            f"every one of the {n} answers is labelled {int(pos == n)} ({'hallucinated' if pos else 'faithful'}): "
            f"adaptation needs both labels, at least {MIN_ADAPT_PER_CLASS} of each", rows=n, positives=pos, sources=0)
    if n < MIN_ADAPT_ROWS or min(pos, n - pos) < MIN_ADAPT_PER_CLASS:
        raise TrainingDataError(
            f"too few labelled answers to adapt: {n} ({pos} hallucinated, {n - pos} faithful); adaptation needs "
            f"at least {MIN_ADAPT_ROWS}, with {MIN_ADAPT_PER_CLASS} of each label (about 100 is a good start)",
            rows=n, positives=pos, sources=0)
    if n > MAX_ADAPT_ROWS:
        raise TrainingDataError(f"too many answers to adapt on: {n} (at most {MAX_ADAPT_ROWS:,}); train a model "
                                "on them instead (evqual train --data ...)", rows=n, positives=pos, sources=0)
    return y


def adapt_detector(detector, examples, *, random_state: int = 0, learning_curve=(25, 50, 100, 200),
                   draws: int = 5):
    """A copy of ``detector`` adapted to labelled ``examples``, and its :class:`AdaptationReport`.

    Parameters
    ----------
    detector : Detector
        A fitted detector with its featurizers (:meth:`Detector.load`, or fitted with ``fit``).  An adapted
        detector is adapted again from its own base risk (the new adapter replaces the old).
    examples : examples with labels
        From 25 to 1,000 answers of the user's domain is the intended range (at least
        :data:`MIN_ADAPT_ROWS`, with :data:`MIN_ADAPT_PER_CLASS` of each label).
    random_state : int, default=0
        Seeds the cross-validation folds, the bootstrap and the learning curve's draws.
    learning_curve : tuple of int, default=(25, 50, 100, 200)
        The ``k`` of the learning curve (those below the number of answers minus 10).
    draws : int, default=5
        Random draws of ``k`` answers per point of the learning curve.

    Returns
    -------
    (Detector, AdaptationReport)

    Raises
    ------
    evqual.errors.TrainingDataError
        An answer without a label, too few answers or one label only.
    """
    import copy

    from ..features import as_examples

    start = time.perf_counter()
    examples = as_examples(examples)
    y = _labels(examples)
    if not hasattr(detector, "builder_"):
        raise ValueError("only a Detector with its featurizers (loaded, or fitted with .fit) can be adapted")
    frame = detector.builder_.transform_with_analyses(examples, with_targets=False, with_tokens=False,
                                                      lite=True)[0]
    base = detector.base_proba_frame(frame)
    state = _feature_state(detector, frame)
    X = frame[state["names"]].to_numpy()
    adapter, threshold, table, first_oof = _fit_adapter(base, X, y, state, seed=random_state)
    Z = _features(state, X)
    kind, C = adapter["kind"], adapter["C"]
    # the honest estimate of the adapted decision, and the model as it was on the same answers
    pred = _decision_cv(kind, C, base, Z, y, seed=random_state)
    old = detector._adapted(frame, base)  # the model as it was: its base risk through its own adapter, if any
    before = {"auroc": _auroc(y, old), "recall_at_10fpr": recall_at_fpr(y, old),
              "ece": expected_calibration_error(y, old), **decision_metrics(y, old >= detector.threshold_)}
    chosen = next(row for row in table if (row["kind"], row["C"]) == (kind, C))
    after = {"auroc": chosen["auroc"], "recall_at_10fpr": recall_at_fpr(y, first_oof),
             "ece": expected_calibration_error(y, first_oof), **decision_metrics(y, pred),
             "ci": _bootstrap(y, pred, seed=random_state)}
    curve = _learning_curve(base, Z, y, learning_curve, draws=draws, seed=random_state) if learning_curve else []
    adapted = copy.copy(detector)
    adapted.adapter_ = dict(adapter, threshold_before=float(detector.threshold_))
    adapted.threshold_ = float(threshold)
    report = AdaptationReport(rows=int(len(y)), positives=int(y.sum()), kind=kind, C=C, candidates=table,
                              before=before, after=after, threshold_before=float(detector.threshold_),
                              threshold=float(threshold), learning_curve=curve,
                              seconds=time.perf_counter() - start)
    return adapted, report


def _fit_adapter(base, X, y, state, *, seed: int):
    """``(adapter state, threshold, candidate table, out-of-fold adapted risks)`` from the base risks ``base``,
    the features ``X`` (columns ``state["names"]``) and labels ``y`` of the adaptation answers."""
    Z = _features(state, X)
    kind, C, params, threshold, table, oof = _adapt_core(np.asarray(base, dtype=np.float64), Z,
                                                         np.asarray(y, dtype=int), seed=seed)
    d = len(state["names"])
    adapter = {"version": ADAPT_VERSION, "kind": kind, "names": list(state["names"]),
               "center": np.asarray(state["center"], dtype=np.float64),
               "scale": np.asarray(state["scale"], dtype=np.float64),
               "coef": params[0] if params is not None else np.zeros(0),
               "intercept": params[1] if params is not None else 0.0,
               "mean": params[2] if params is not None and params[2] is not None else np.zeros(d),
               "std": params[3] if params is not None and params[3] is not None else np.ones(d),
               "C": float(C) if C is not None else None, "rows": int(len(y)), "positives": int(np.sum(y))}
    return adapter, float(threshold), table, oof


def fit_adapter(detector, base, X, y, *, state=None, random_state: int = 0):
    """``(adapter state, threshold)`` of answers already scored: their base risks ``base``
    (:meth:`Detector.base_proba_frame`), response features ``X`` (the columns :func:`adapter_features`
    names) and labels ``y``; what :func:`adapt_detector` fits, without featurizing or reporting (for
    protocols that adapt many times on answers featurized once, as ``scripts/transfer_eval.py`` does).
    Apply it with :func:`adapter_risk`.  ``state``: :func:`adapter_features`'s (default: the detector's)."""
    state = adapter_features(detector) if state is None else state
    adapter, threshold, _, _ = _fit_adapter(base, X, y, state, seed=random_state)
    return adapter, threshold


def adapter_features(detector, frame=None) -> dict:
    """``{"names", "center", "scale"}``: the response features the top layer reads and how they are centred
    (the out-of-distribution map's: the training data's medians and spreads; without one, ``frame``'s)."""
    return _feature_state(detector, frame)


def _feature_state(detector, frame) -> dict:
    """Which features the top layer reads and how they are centred: the out-of-distribution map's (the
    training data's medians and spreads), else the content response features of the frame."""
    ood = getattr(detector, "ood_", None)
    if ood is not None:
        every = ood["groups"]["*"]
        return {"names": list(ood["names"]), "center": every["center"], "scale": every["scale"]}
    from ._detector import _ood_names
    from ._ood import _scale

    names = _ood_names(frame)
    X = frame[names].to_numpy()
    return {"names": names, "center": np.median(X, axis=0), "scale": _scale(X)}


def check_adapter_state(state, feature_names) -> str | None:
    """Why a loaded model's adapter is unusable, or None (checked at load)."""
    if state is None:
        return None
    if not isinstance(state, dict):
        return f"adapter_ must be a dict; got {type(state).__name__}"
    if state.get("version") != ADAPT_VERSION:
        return f"adapter_ version must be {ADAPT_VERSION}"
    kind = state.get("kind")
    if kind not in KINDS:
        return f"adapter_['kind'] must be one of {', '.join(KINDS)}"
    names = state.get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names or \
            len(names) > 512 or not set(names) <= set(feature_names):
        return "adapter_['names'] must be response features of the model"
    d = len(names)
    for key in ("center", "scale", "coef", "mean", "std"):
        value = state.get(key)
        if not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.ndim != 1 or \
                not np.isfinite(value).all():
            return f"adapter_[{key!r}] must be finite float64 values"
    if any(state[k].shape != (d,) for k in ("center", "scale", "mean", "std")) or (state["scale"] <= 0).any() \
            or (state["std"] <= 0).any():
        return ("adapter_['center'], ['scale'], ['mean'] and ['std'] must hold one value per feature (scales "
                "positive)")
    want = {"shipped": 0, "recalibrated": 1, "top_layer": d + 1, "top_layer_local": d + 1}[kind]
    if state["coef"].shape != (want,):
        return f"adapter_['coef'] must hold {want} values for kind {kind!r}"
    intercept = state.get("intercept")
    if isinstance(intercept, bool) or not isinstance(intercept, (int, float)) or not math.isfinite(intercept):
        return "adapter_['intercept'] must be a finite number"
    return None
