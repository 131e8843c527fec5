"""How far an answer is from the data a model was trained on (the out-of-distribution signal).

A model fitted on one kind of RAG answer says little that can be trusted about another kind: on
HaluEval's dialogues a RAGTruth model ranks answers barely better than chance (issue 40).  The signal
here says so per answer, from the answer's response features alone, so it costs one small matrix
product per answer and needs no label:

1. each feature is centred on its median over the fitting rows and divided by a robust scale (the
   interquartile range / 1.349, else the standard deviation, else 1), then compressed
   (``sign(z) * log1p(|z|)``) so that one huge count cannot dominate while an extreme value still counts;
2. the compressed vector's Mahalanobis distance to the fitting rows' mean, under their covariance
   (ridge ``1e-3`` on the diagonal), is the answer's *distance*; it is measured against the training
   answers of the answer's own task type when the training data held at least :data:`MIN_GROUP_ROWS` of
   them, else against all of them (a marginal or all-task view misses most of HaluEval's summaries, which
   look like RAGTruth's answers as a whole but not like its summaries: docs/RESULTS.md, issue 40);
3. the *threshold* of each map is the ``quantile`` (default 0.98) of the distances of rows it was not fitted
   on (the detector's validation part, or its cross-fitting folds' held-out rows), so about 2% of answers
   like the training data's are over it.  The *score* is the distance over the threshold.

An answer scored over 1 gets the warning ``W004`` (:func:`ood_warning`), and the policy sends it to
verification when its risk is near the threshold (:class:`evqual.scoring.Policy`'s
``ood_escalate_margin``).  The state is plain arrays and numbers (saved with the model, audited like
everything else in it): :func:`fit_ood` builds it, :func:`ood_distance` applies it.

Examples
--------
>>> import numpy as np
>>> from evqual.models import fit_ood, ood_distance
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(400, 3))
>>> state = fit_ood(X[:300], X[300:], ["a", "b", "c"])
>>> score = ood_distance(state, np.array([[0.0, 0.0, 0.0], [40.0, -40.0, 40.0]]))
>>> bool(score[0] < 1.0 < score[1])
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["OOD_VERSION", "OOD_QUANTILE", "OOD_WARNING_CODE", "MIN_GROUP_ROWS", "fit_ood", "ood_distance",
           "ood_scores", "ood_contributions", "ood_warning", "check_ood_state"]

OOD_VERSION = 1
OOD_QUANTILE = 0.98
"""The share of answers like the training data's that fall under the threshold (on rows the map did not
see)."""
OOD_WARNING_CODE = "W004"
MIN_GROUP_ROWS = 200
"""A task type with at least this many fitting rows gets its own map."""
_RIDGE = 1e-3
_MAX_FEATURES = 512
_MAX_GROUPS = 64


def _scale(X: np.ndarray) -> np.ndarray:
    q75, q25 = np.percentile(X, [75, 25], axis=0)
    scale = (q75 - q25) / 1.349
    std = X.std(axis=0)
    scale = np.where(scale > 1e-9, scale, std)
    return np.where(scale > 1e-9, scale, 1.0)


def _compress(X, center, scale) -> np.ndarray:
    Z = (np.asarray(X, dtype=np.float64) - center) / scale
    Z = np.nan_to_num(Z, nan=0.0, posinf=1e6, neginf=-1e6)
    return np.sign(Z) * np.log1p(np.abs(Z))


def _fit_group(X_fit, names) -> dict:
    center = np.median(X_fit, axis=0)
    scale = _scale(X_fit)
    Z = _compress(X_fit, center, scale)
    mean = Z.mean(axis=0)
    cov = np.cov(Z, rowvar=False).reshape(len(names), len(names)) + _RIDGE * np.eye(len(names))
    vals, vecs = np.linalg.eigh(cov)
    whiten = vecs / np.sqrt(np.maximum(vals, _RIDGE))
    return {"center": center, "scale": scale, "mean": mean, "spread": np.maximum(Z.std(axis=0), 0.1),
            "whiten": whiten, "threshold": float("inf"), "n_fit": int(len(X_fit))}


def _raw_distance(group: dict, X) -> np.ndarray:
    Z = _compress(X, group["center"], group["scale"]) - group["mean"]
    W = Z @ group["whiten"]
    return np.sqrt(np.einsum("ij,ij->i", W, W))


def _group_keys(groups, n, known) -> np.ndarray:
    """The group of each row: its task when the map has one for it, else ``"*"`` (every row)."""
    if groups is None:
        return np.full(n, "*", dtype=object)
    keys = [g if g in known else "*" for g in map(str, groups)]  # (a set lookup per row: np.isin sorts objects)
    out = np.empty(len(keys), dtype=object)
    out[:] = keys
    return out


def fit_ood(X_fit, X_ref, names, *, groups_fit=None, groups_ref=None, quantile: float = OOD_QUANTILE,
            min_group_rows: int = MIN_GROUP_ROWS) -> dict:
    """The out-of-distribution map of the rows ``X_fit``, its thresholds set on the rows ``X_ref``.

    Parameters
    ----------
    X_fit : array of shape (n, d)
        Response features of the fitting rows.
    X_ref : array of shape (m, d), or list of (X_fit_k, X_ref_k, groups_fit_k, groups_ref_k)
        Rows the map is not fitted on (the validation part): each group's threshold is the ``quantile`` of
        its rows' distances.  A list is cross-fitting: a map per item, the thresholds the ``quantile`` of
        every item's held-out distances, and the returned map fitted on ``X_fit``.
    names : list of str
        The feature of each column (which columns :func:`ood_distance` reads, by name, from a frame).
    groups_fit, groups_ref : array of str, optional
        Each row's task type.  A task with at least ``min_group_rows`` fitting rows gets its own map (answers
        of one task are compared with that task's training answers: HaluEval's news summaries look like
        RAGTruth's answers as a whole, not like its summaries); every row also feeds the map of all rows
        (``"*"``), which judges answers of other tasks.
    quantile : float, default=0.98

    Returns
    -------
    dict
        ``{"version", "names", "quantile", "n_fit", "groups": {name: {"center", "scale", "mean", "spread",
        "whiten", "threshold", "n_fit"}}}``.
    """
    if not 0.5 <= quantile < 1:
        raise ValueError(f"quantile must be in [0.5, 1); got {quantile!r}")
    X_fit = np.asarray(X_fit, dtype=np.float64)
    if X_fit.ndim != 2 or X_fit.shape[1] != len(names) or len(X_fit) < 2:
        raise ValueError(f"X_fit must be (n >= 2, {len(names)}); got shape {X_fit.shape}")
    keys_fit = (np.asarray([str(g) for g in groups_fit], dtype=object) if groups_fit is not None
                else np.full(len(X_fit), "*", dtype=object))
    groups = {"*": _fit_group(X_fit, names)}
    for key in sorted(set(keys_fit.tolist()) - {"*"}):
        rows = keys_fit == key
        if rows.sum() >= min_group_rows:
            groups[key] = _fit_group(X_fit[rows], names)
    state = {"version": OOD_VERSION, "names": [str(n) for n in names], "quantile": float(quantile),
             "n_fit": int(len(X_fit)), "groups": groups}
    if isinstance(X_ref, list):
        parts = []
        for a, b, ga, gb in X_ref:
            sub = fit_ood(a, b, names, groups_fit=ga, groups_ref=gb, quantile=quantile,
                          min_group_rows=min_group_rows)
            # each held-out row is scored by the item's map of its group, if that map has the group
            parts.append(_distances_by_group(sub, np.asarray(b, dtype=np.float64), gb, keep=set(groups)))
        ref = {key: np.concatenate([p[key] for p in parts if key in p]) for key in groups}
    else:
        ref = _distances_by_group(state, np.asarray(X_ref, dtype=np.float64), groups_ref, keep=set(groups))
    for key, group in groups.items():
        values = ref.get(key, np.zeros(0))
        if len(values) < 20:  # too few held-out rows of the group: its fitting rows' own (optimistic) distances
            own = X_fit if key == "*" else X_fit[keys_fit == key]
            values = _raw_distance(group, own)
        group["threshold"] = float(np.quantile(values, quantile))
    return state


def _distances_by_group(state: dict, X, groups, keep) -> dict:
    """``{group: distances}`` of the rows of ``X`` under ``state``'s map of their group (and of every row
    under ``"*"``), for the groups of ``keep``."""
    out = {}
    if len(X) == 0:
        return out
    out["*"] = _raw_distance(state["groups"]["*"], X)
    if groups is not None:
        keys = np.asarray([str(g) for g in groups], dtype=object)
        for key in keep - {"*"}:
            rows = keys == key
            if rows.any() and key in state["groups"]:
                out[key] = _raw_distance(state["groups"][key], X[rows])
    return out


def ood_scores(state: dict, X, groups=None) -> tuple:
    """``(distance, threshold, group)`` of each row: its distance under the map of its task (else of all
    rows) and that map's threshold; a row is out of distribution when ``distance > threshold``."""
    X = np.asarray(X, dtype=np.float64)
    keys = _group_keys(groups, len(X), set(state["groups"]))
    distinct = set(keys.tolist())
    if len(distinct) == 1:  # (one group, as when scoring one answer: no row masks)
        group = state["groups"][distinct.pop()]
        return np.asarray(_raw_distance(group, X), dtype=np.float64), np.full(len(X), float(group["threshold"])), keys
    dist, thr = np.zeros(len(X)), np.zeros(len(X))
    for key in distinct:
        rows = keys == key
        group = state["groups"][key]
        dist[rows] = _raw_distance(group, X[rows])
        thr[rows] = group["threshold"]
    return dist, thr, keys


def ood_distance(state: dict, X, groups=None) -> np.ndarray:
    """Each row's distance over its threshold (:func:`ood_scores`): over 1 is out of distribution."""
    dist, thr, _ = ood_scores(state, X, groups)
    return dist / np.maximum(thr, 1e-12)


def ood_contributions(state: dict, x, group: str = "*", top: int = 3) -> list:
    """The features that make one row unusual: ``[(name, value, training median, z)]``, largest ``|z|``
    first, where ``z`` is the row's compressed deviation from its group's training mean in units of that
    feature's training spread (at least 0.1)."""
    g = state["groups"].get(group, state["groups"]["*"])
    x = np.asarray(x, dtype=np.float64)
    Z = _compress(x[None, :], g["center"], g["scale"])[0] - g["mean"]
    z = Z / g["spread"]
    order = np.argsort(-np.abs(z), kind="stable")[:top]
    return [(state["names"][i], float(x[i]), float(g["center"][i]), round(float(z[i]), 2)) for i in order]


def ood_warning(score: float, state: dict, x=None, group: str = "*") -> dict | None:
    """The ``W004`` warning of an answer whose score (distance over threshold, :func:`ood_distance`) is over
    1, else None.

    >>> ood_warning(0.5, {}) is None
    True
    >>> ood_warning(3.0, {})["code"]
    'W004'
    """
    if not score > 1.0:
        return None
    details = {"score": round(float(score), 3), "group": str(group)}
    unusual = ""
    if x is not None and "groups" in state:
        found = ood_contributions(state, x, group)
        details["features"] = [{"feature": n, "value": round(v, 4), "training_median": round(m, 4), "z": z}
                               for n, v, m, z in found]
        unusual = "; most unusual: " + ", ".join(f"{n} {v:.3g} (training median {m:.3g})" for n, v, m, _ in found)
    against = "the model's training answers" + (f" of task {group}" if group != "*" else "")
    return {"code": OOD_WARNING_CODE,
            "message": (f"this answer is unlike {against} ({score:.1f} times the distance that 98% of them are "
                        f"within{unusual}): its risk is less reliable; label a few answers of this kind and run "
                        "`evqual adapt`"),
            "details": details}


def check_ood_state(state) -> str | None:
    """Why a loaded model's out-of-distribution state is unusable, or None (checked at load)."""
    if state is None:
        return None
    if not isinstance(state, dict):
        return f"ood_ must be a dict; got {type(state).__name__}"
    for key, kind in {"version": int, "names": list, "quantile": float, "n_fit": int, "groups": dict}.items():
        if not isinstance(state.get(key), kind) or isinstance(state.get(key), bool):
            return f"ood_[{key!r}] must be {kind.__name__}"
    if state["version"] != OOD_VERSION:
        return f"ood_ version {state['version']} is not {OOD_VERSION}"
    d = len(state["names"])
    if not 1 <= d <= _MAX_FEATURES or not all(isinstance(n, str) for n in state["names"]):
        return "ood_['names'] must be 1 to 512 feature names"
    groups = state["groups"]
    if "*" not in groups or len(groups) > _MAX_GROUPS or not all(isinstance(k, str) and len(k) <= 200 for k in groups):
        return f"ood_['groups'] must hold '*' and at most {_MAX_GROUPS} named groups"
    for name, group in groups.items():
        if not isinstance(group, dict):
            return f"ood_['groups'][{name!r}] must be a dict"
        for key in ("center", "scale", "mean", "spread"):
            value = group.get(key)
            if not isinstance(value, np.ndarray) or value.shape != (d,) or value.dtype != np.float64 or \
                    not np.isfinite(value).all():
                return f"ood_['groups'][{name!r}][{key!r}] must be {d} finite float64 values"
        whiten = group.get("whiten")
        if not isinstance(whiten, np.ndarray) or whiten.shape != (d, d) or whiten.dtype != np.float64 or \
                not np.isfinite(whiten).all():
            return f"ood_['groups'][{name!r}]['whiten'] must be a finite float64 ({d}, {d}) matrix"
        if (group["scale"] <= 0).any() or (group["spread"] <= 0).any():
            return f"ood_['groups'][{name!r}]: scales must be positive"
        thr = group.get("threshold")
        if isinstance(thr, bool) or not isinstance(thr, float) or not np.isfinite(thr) or thr <= 0:
            return f"ood_['groups'][{name!r}]['threshold'] must be a positive finite number"
    return None
