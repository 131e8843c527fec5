"""The decision policy: what to do with an answer given its risk and topics.

A :class:`Policy` turns a calibrated risk into one of the decisions of
:data:`evqual.scoring.DECISIONS` (show, warn, regenerate, abstain,
escalate), with a stricter threshold for sensitive topics. A policy can be
written in TOML and read with :func:`load_policy`; see
``policy_example.toml`` next to this module for every key.

Examples
--------
>>> from evqual.scoring import Policy
>>> policy = Policy()
>>> policy.decide(0.1).decision
'show'
>>> policy.decide(0.8).decision
'regenerate'
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from numbers import Real

from ._topics import BUILTIN_TOPICS, Topic, TopicTagger

__all__ = ["Decision", "Policy", "load_policy", "ESCALATE_REASONS", "FALLBACK_THRESHOLD"]

ESCALATE_REASONS = ("NUMBER_CONFLICT", "UNIT_CONFLICT", "DATE_CONFLICT", "NEGATION_CONFLICT", "ANTONYM",
                    "FIELD_CONFLICT")
"""The default high-precision conflict reasons: a claim-aligned contradiction check of one of these kinds
forces at least ``escalate`` (see :class:`Policy`)."""

FALLBACK_THRESHOLD = 0.5
"""The general threshold when the policy follows the model (``general_threshold=None``) but no model
threshold is given (:meth:`Policy.decide` called without ``model_threshold``)."""

_DEFAULTS = {
    "general_threshold": None,
    "sensitive_threshold": 0.3,
    "regenerate_at": 0.75,
    "abstain_at": 0.87,
    "escalate_band": (0.35, 0.65),
    "escalate_sensitive": True,
    "escalate_reasons": ESCALATE_REASONS,
    "ood_escalate_margin": 0.1,
    "flag_rate": None,
    "topics": None,
}
_SEVERITY = {"show": 0, "warn": 1, "escalate": 2, "regenerate": 3, "abstain": 4}


@dataclass(frozen=True)
class Decision:
    """What the policy decided for one answer.

    Attributes
    ----------
    decision : str
        One of :data:`evqual.scoring.DECISIONS`.
    flagged : bool
        ``decision != "show"``.
    threshold : float
        The threshold applied (sensitive or general).
    verify : bool
        True when the answer goes on to LLM verification
        (``decision == "escalate"``).
    sensitive : bool
        Whether any topic was sensitive.
    rule : str
        The rule that decided (see :class:`Policy`).
    """

    decision: str
    flagged: bool
    threshold: float
    verify: bool
    sensitive: bool
    rule: str = ""


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


class Policy:
    """Decide what to do with an answer from its risk and topics.

    Parameters are stored as given and checked when :meth:`decide` runs (and
    by :func:`load_policy`).

    Parameters
    ----------
    general_threshold : float or None, default=None
        The answer threshold: a risk at or above it is over the threshold.
        None follows the model: the detector's validation-tuned threshold
        (the one ``evqual predict`` applies), passed to :meth:`decide` as
        ``model_threshold`` (:data:`FALLBACK_THRESHOLD`, 0.5, without one).
        So ``evqual predict`` and ``evqual score`` flag at the same number
        unless the answer is on a sensitive topic.
    sensitive_threshold : float, default=0.3
        The threshold when any topic is sensitive; never looser than the
        general threshold (the smaller of the two applies).
    regenerate_at : float, default=0.75
        An answer over the threshold at or above this risk is regenerated.
    abstain_at : float, default=0.87
        An answer over the threshold at or above this risk is withheld (the
        system abstains). At least ``regenerate_at``.  Under ``cv5`` with
        the shipped recipe (cross-fitted, issue 24 session 5) the band holds
        10.1% of the held-out answers at a hallucination rate of 0.956 (0.85
        would take 12.4% at 0.944).  In-sample, on the shared RAGTruth copy
        the shipped model was fitted on, it holds 609 of 6,027 answers, all
        hallucinated: a model fitted on every row is surer of its own rows.
    escalate_band : tuple of (float, float) or None, default=(0.35, 0.65)
        The uncertain band ``[low, high)``: an answer whose risk lies in it
        is escalated to LLM verification. None disables it.
    escalate_sensitive : bool, default=True
        Escalate (rather than warn about) an answer over the threshold on a
        sensitive topic that is below ``regenerate_at``.
    escalate_reasons : tuple of str, default=ESCALATE_REASONS
        Reason codes of claim-aligned contradiction checks (reasons whose
        ``details`` name a ``check``) that force at least ``escalate``: an
        answer that would be shown or warned about is escalated instead.
        ``()`` disables it.  Severity order: show < warn < escalate <
        regenerate < abstain.
    ood_escalate_margin : float or None, default=0.1
        An answer outside what the model knows (its ``W004`` warning: the
        model's out-of-distribution signal, :func:`evqual.models.ood_warning`)
        whose risk is within this distance of the threshold is escalated
        (rule ``out_of_distribution``) instead of shown or warned about: near
        the threshold, the model's risk is the least reliable on data unlike
        its training data.  None disables it.
    flag_rate : float or None, default=None
        A budget: the share of answers to flag or escalate, in (0, 1).
        It needs the risks of answers like the ones to score (no label):
        :meth:`for_flag_rate` sets the general threshold and the escalate
        band from them; ``evqual score --flag-rate`` does it on the first
        ``--budget-rows`` answers of its input.  :meth:`decide` refuses a
        policy with a budget it was not fitted to.
    topics : TopicTagger, default=None
        Knows which topics are sensitive (and tags them, see :meth:`tag`).
        None uses ``TopicTagger()`` with the built-in topics.

    Notes
    -----
    With ``τ = threshold_for(topics, model_threshold)``, the first rule that
    applies gives the decision (``rule`` names it):

    =====  ===============================================  ==============  ===================
    order  condition                                        decision        rule
    =====  ===============================================  ==============  ===================
    1      ``escalate_band`` set and ``low <= risk < high``  ``escalate``    ``escalate_band``
    2      ``risk < τ``                                     ``show``        ``below_threshold``
    3      ``risk >= abstain_at``                           ``abstain``     ``abstain_at``
    4      ``risk >= regenerate_at``                        ``regenerate``  ``regenerate_at``
    5      sensitive topic and ``escalate_sensitive``       ``escalate``    ``sensitive_topic``
    6      otherwise                                        ``warn``        ``threshold``
    =====  ===============================================  ==============  ===================

    Then, when the decision is ``show`` or ``warn`` and a reason of
    ``escalate_reasons`` was found by a claim-aligned check, the decision
    is ``escalate`` (rule ``reason:<CODE>``); else, when the answer is out
    of distribution (``ood=True``) and ``|risk - τ| < ood_escalate_margin``,
    it is ``escalate`` (rule ``out_of_distribution``).

    ``flagged`` is ``decision != "show"`` and ``verify`` is
    ``decision == "escalate"``.  Without the band, decisions never get
    milder as risk grows (show < warn < regenerate < abstain, with escalate
    taking the place of warn on sensitive topics).

    Examples
    --------
    >>> policy = Policy()
    >>> policy.decide(0.4)  # in the uncertain band
    Decision(decision='escalate', flagged=True, threshold=0.5, verify=True, sensitive=False, rule='escalate_band')
    >>> policy.decide(0.2, reasons=["NUMBER_CONFLICT"]).decision  # a high-precision conflict
    'escalate'
    >>> policy.decide(0.7, model_threshold=0.53).threshold
    0.53
    >>> policy.decide(0.7).decision
    'warn'
    >>> policy.decide(0.7, topics=("healthcare",)).decision  # sensitive: verify
    'escalate'
    >>> Policy(escalate_band=None).decide(0.4, topics=("healthcare",)).decision
    'escalate'
    >>> Policy(escalate_band=None, escalate_sensitive=False).decide(0.4, ("healthcare",)).decision
    'warn'
    """

    def __init__(self, *, general_threshold=None, sensitive_threshold=0.3, regenerate_at=0.75,
                 abstain_at=0.87, escalate_band=(0.35, 0.65), escalate_sensitive=True,
                 escalate_reasons=ESCALATE_REASONS, ood_escalate_margin=0.1, flag_rate=None, topics=None):
        self.general_threshold = general_threshold
        self.sensitive_threshold = sensitive_threshold
        self.regenerate_at = regenerate_at
        self.abstain_at = abstain_at
        self.escalate_band = escalate_band
        self.escalate_sensitive = escalate_sensitive
        self.escalate_reasons = escalate_reasons
        self.ood_escalate_margin = ood_escalate_margin
        self.flag_rate = flag_rate
        self.topics = topics

    def _check(self):
        """Raise ValueError if a parameter is invalid."""
        for name in ("general_threshold", "sensitive_threshold", "regenerate_at", "abstain_at"):
            value = getattr(self, name)
            if name == "general_threshold" and value is None:
                continue
            if not _is_number(value) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be in [0, 1]{' or None' if name == 'general_threshold' else ''}; "
                                 f"got {value!r}")
        reasons = self.escalate_reasons
        if (isinstance(reasons, (str, bytes)) or not hasattr(reasons, "__iter__")
                or not all(isinstance(r, str) and r for r in reasons)):
            raise ValueError(f"escalate_reasons must be a sequence of reason codes; got {reasons!r}")
        if self.general_threshold is not None and self.sensitive_threshold > self.general_threshold:
            raise ValueError(
                "sensitive_threshold must be <= general_threshold (sensitive topics get the stricter "
                f"threshold); got {self.sensitive_threshold!r} > {self.general_threshold!r}")
        if self.regenerate_at > self.abstain_at:
            raise ValueError(f"regenerate_at must be <= abstain_at; got {self.regenerate_at!r} > {self.abstain_at!r}")
        band = self.escalate_band
        if band is not None:
            if (isinstance(band, (str, bytes)) or not hasattr(band, "__len__") or len(band) != 2
                    or not all(_is_number(v) and 0 <= v <= 1 for v in band) or not band[0] < band[1]):
                raise ValueError(f"escalate_band must be (low, high) with 0 <= low < high <= 1, or None; got {band!r}")
        margin = getattr(self, "ood_escalate_margin", None)
        if margin is not None and (not _is_number(margin) or not 0 <= margin <= 1):
            raise ValueError(f"ood_escalate_margin must be in [0, 1] or None; got {margin!r}")
        rate = getattr(self, "flag_rate", None)
        if rate is not None:
            if not _is_number(rate) or not 0 < rate < 1:
                raise ValueError(f"flag_rate must be in (0, 1) (the share of answers to flag) or None; got {rate!r}")
            if self.general_threshold is not None:
                raise ValueError("flag_rate sets the general threshold from your answers' risks: leave "
                                 "general_threshold as None (\"model\") or drop flag_rate")
        if not isinstance(self.escalate_sensitive, bool):
            raise ValueError(f"escalate_sensitive must be a bool; got {self.escalate_sensitive!r}")
        if self.topics is not None and not isinstance(self.topics, TopicTagger):
            raise ValueError(f"topics must be a TopicTagger or None; got {type(self.topics).__name__}")

    @property
    def tagger(self) -> TopicTagger:
        """The topic tagger in use (``topics``, or a default ``TopicTagger()``)."""
        if self.topics is not None:
            return self.topics
        if getattr(self, "_default_tagger", None) is None:
            self._default_tagger = TopicTagger()
        return self._default_tagger

    def get_params(self) -> dict:
        """The constructor parameters, as stored."""
        return {name: getattr(self, name) for name in _DEFAULTS}

    def __repr__(self):
        changed = {k: v for k, v in self.get_params().items() if v != _DEFAULTS[k]}
        return "Policy(" + ", ".join(f"{k}={v!r}" for k, v in changed.items()) + ")"

    def tag(self, query, context="") -> tuple:
        """The topics of a query and its context (see :meth:`TopicTagger.tag`).

        Examples
        --------
        >>> Policy().tag("Is ibuprofen safe in the third trimester?")
        ('healthcare',)
        """
        return self.tagger.tag(query, context)

    def general_for(self, model_threshold=None) -> float:
        """The general threshold: ``general_threshold``, or the model's when it is None.

        Examples
        --------
        >>> Policy().general_for(0.53), Policy().general_for(), Policy(general_threshold=0.6).general_for(0.53)
        (0.53, 0.5, 0.6)
        """
        if self.general_threshold is not None:
            return float(self.general_threshold)
        if model_threshold is None:
            return FALLBACK_THRESHOLD
        if not _is_number(model_threshold) or math.isnan(model_threshold) or not 0 <= model_threshold <= 1:
            raise ValueError(f"model_threshold must be in [0, 1]; got {model_threshold!r}")
        return float(model_threshold)

    def threshold_for(self, topics=(), model_threshold=None) -> float:
        """The threshold for answers on ``topics``.

        Parameters
        ----------
        topics : iterable of str, default=()
        model_threshold : float, optional
            The detector's validation-tuned threshold (used when
            ``general_threshold`` is None).

        Returns
        -------
        float
            The smaller of ``sensitive_threshold`` and the general threshold
            if any topic is sensitive, else the general threshold (see
            :meth:`general_for`).

        Examples
        --------
        >>> Policy().threshold_for(("migration",), 0.53), Policy().threshold_for((), 0.53)
        (0.3, 0.53)
        """
        general = self.general_for(model_threshold)
        return min(self.sensitive_threshold, general) if self.tagger.is_sensitive(topics) else general

    budget_ = None
    """After :meth:`for_flag_rate`: ``{"flag_rate", "rows", "flagged", "threshold"}`` of the fit."""

    def for_flag_rate(self, risks, rate=None, *, topics=None, model_threshold=None, reasons=None, ood=None):
        """A copy whose general threshold and escalate band hold the flagged share to a budget.

        The smallest threshold ``c`` (a risk of ``risks``, or 1) at which at most ``rate`` of these answers
        would be flagged or escalated by the copy: general threshold ``c``, escalate band ``[max(low, c),
        high)`` (dropped when empty).  What else flags an answer (a sensitive topic, a forcing reason, the
        out-of-distribution rule) counts against the budget.  When those alone exceed it, the budget wins:
        the forcing reasons are dropped (``escalate_reasons=()``), then the out-of-distribution rule, then
        the stricter treatment of sensitive topics, until it can be met; :attr:`budget_` lists what was
        ``"relaxed"``.  The copy has ``flag_rate=None`` and records the fit in :attr:`budget_`.

        Parameters
        ----------
        risks : array of float
            Risks of answers like the ones to score (labels are not needed).
        rate : float, optional
            The budget (default: this policy's ``flag_rate``).
        topics, reasons : list of tuples, optional
            Per answer, its topics and its claim-aligned reason codes (as :meth:`decide` takes them).
        model_threshold : float, optional
        ood : list of bool, optional
            Per answer, whether it is out of distribution.

        Examples
        --------
        >>> import numpy as np
        >>> risks = np.linspace(0.0, 0.99, 100)
        >>> fitted = Policy().for_flag_rate(risks, 0.2)
        >>> fitted.general_threshold, fitted.escalate_band, fitted.budget_["flagged"]
        (0.8, None, 0.2)
        >>> Policy().for_flag_rate(risks, 0.5).escalate_band
        (0.5, 0.65)
        """
        import numpy as np

        rate = self.flag_rate if rate is None else rate
        if rate is None or not _is_number(rate) or not 0 < rate < 1:
            raise ValueError(f"flag_rate must be in (0, 1); got {rate!r}")
        risks = np.asarray(risks, dtype=float).reshape(-1)
        n = len(risks)
        if n == 0:
            raise ValueError("a flag-rate budget needs the risks of some answers; got none")
        topics = [()] * n if topics is None else list(topics)
        reasons = [()] * n if reasons is None else list(reasons)
        ood = [False] * n if ood is None else list(ood)
        if not len(topics) == len(reasons) == len(ood) == n:
            raise ValueError("topics, reasons and ood must hold one entry per risk")
        params = self.get_params()
        params["flag_rate"] = None
        low, high = self.escalate_band if self.escalate_band is not None else (None, None)

        def policy_at(c):
            sensitive = float(c) if params.get("_flat") else min(params["sensitive_threshold"], float(c))
            p = dict({k: v for k, v in params.items() if k != "_flat"}, general_threshold=float(c),
                     sensitive_threshold=sensitive)
            if low is not None:
                p["escalate_band"] = (max(low, float(c)), high) if max(low, float(c)) < high else None
            out = Policy(**p)
            if self.topics is None and getattr(self, "_default_tagger", None) is not None:
                out._default_tagger = self._default_tagger
            return out

        def share(c):
            pol = policy_at(c)
            return sum(pol.decide(float(r), t, reasons=rs, ood=o).flagged
                       for r, t, rs, o in zip(risks, topics, reasons, ood)) / n

        cuts = np.unique(np.clip(np.round(np.concatenate([risks, [1.0]]), 6), 0.0, 1.0))
        lo, hi = 0, len(cuts) - 1  # share(cuts[hi]) is the least possible; find the first cut within budget
        relaxed = []
        for name, change in (("escalate_reasons", {"escalate_reasons": ()}),
                             ("ood_escalate_margin", {"ood_escalate_margin": None}),
                             ("sensitive_threshold", {"escalate_sensitive": False, "_flat": True})):
            if share(cuts[hi]) <= rate:
                break
            params.update(change)
            relaxed.append(name)
        if share(cuts[hi]) > rate:
            lo = hi
        while lo < hi:
            mid = (lo + hi) // 2
            if share(cuts[mid]) <= rate:
                hi = mid
            else:
                lo = mid + 1
        fitted = policy_at(cuts[lo])
        fitted._check()
        fitted.budget_ = {"flag_rate": float(rate), "rows": n, "flagged": round(share(cuts[lo]), 6),
                          "threshold": fitted.general_threshold, "relaxed": relaxed}
        return fitted

    def decide(self, risk, topics=(), *, model_threshold=None, reasons=(), ood=False) -> Decision:
        """Decide what to do with an answer.

        Parameters
        ----------
        risk : float
            Calibrated hallucination risk in [0, 1].
        topics : iterable of str, default=()
            Topics of the query and context (see :meth:`tag`).
        model_threshold : float, optional
            The detector's validation-tuned threshold: the general threshold
            when ``general_threshold`` is None.
        reasons : iterable of str, default=()
            Reason codes found by claim-aligned contradiction checks; one of
            ``escalate_reasons`` forces at least ``escalate``.
        ood : bool, default=False
            The answer is outside what the model knows (``W004``): near the
            threshold (``ood_escalate_margin``) it is escalated.

        Returns
        -------
        Decision

        Examples
        --------
        >>> Policy().decide(0.95).decision
        'abstain'
        """
        self._check()
        if getattr(self, "flag_rate", None) is not None:
            raise ValueError("this policy has a flag-rate budget it was not fitted to: fit it to your answers' "
                             "risks with Policy.for_flag_rate (evqual score --flag-rate does it on the first "
                             "--budget-rows answers)")
        if not _is_number(risk) or math.isnan(risk) or not 0 <= risk <= 1:
            raise ValueError(f"risk must be in [0, 1]; got {risk!r}")
        risk = float(risk)
        sensitive = self.tagger.is_sensitive(topics)
        tau = self.threshold_for(topics, model_threshold)
        band = self.escalate_band
        if band is not None and band[0] <= risk < band[1]:
            decision, rule = "escalate", "escalate_band"
        elif risk < tau:
            decision, rule = "show", "below_threshold"
        elif risk >= self.abstain_at:
            decision, rule = "abstain", "abstain_at"
        elif risk >= self.regenerate_at:
            decision, rule = "regenerate", "regenerate_at"
        elif sensitive and self.escalate_sensitive:
            decision, rule = "escalate", "sensitive_topic"
        else:
            decision, rule = "warn", "threshold"
        if _SEVERITY[decision] < _SEVERITY["escalate"]:
            forcing = [r for r in reasons if r in self.escalate_reasons]
            margin = getattr(self, "ood_escalate_margin", None)
            if forcing:
                decision, rule = "escalate", f"reason:{forcing[0]}"
            elif ood and margin is not None and abs(risk - tau) < margin:
                decision, rule = "escalate", "out_of_distribution"
        return Decision(decision=decision, flagged=decision != "show", threshold=float(tau),
                        verify=decision == "escalate", sensitive=sensitive, rule=rule)

    OVERRIDABLE = ("general_threshold", "sensitive_threshold", "regenerate_at", "abstain_at", "escalate_band",
                   "escalate_sensitive", "escalate_reasons", "ood_escalate_margin")
    """The parameters :meth:`with_overrides` may change (every one but ``topics``)."""

    def with_overrides(self, overrides: dict) -> "Policy":
        """A validated copy with some of :attr:`OVERRIDABLE` changed (the topics kept, not copied).

        ``overrides`` uses the names of :meth:`to_dict`: ``general_threshold`` may be ``"model"`` (the
        model's threshold) and ``escalate_band`` a two-item list or ``None``.  Raises ValueError naming
        an unknown key or an invalid value; ``self`` is never changed.

        >>> Policy().with_overrides({"sensitive_threshold": 0.2, "escalate_band": None}).escalate_band is None
        True
        >>> Policy().with_overrides({"topics": {}})
        Traceback (most recent call last):
        ...
        ValueError: unknown policy key 'topics' (allowed: general_threshold, sensitive_threshold, regenerate_at, \
abstain_at, escalate_band, escalate_sensitive, escalate_reasons, ood_escalate_margin)
        """
        if not isinstance(overrides, dict):
            raise ValueError(f"policy overrides must be an object; got {type(overrides).__name__}")
        params = self.get_params()
        for key, value in overrides.items():
            if key not in self.OVERRIDABLE:
                raise ValueError(f"unknown policy key {key!r} (allowed: {', '.join(self.OVERRIDABLE)})")
            if key == "general_threshold" and value == "model":
                value = None
            elif key == "escalate_band" and isinstance(value, list):
                value = tuple(value)
            elif key == "escalate_reasons" and isinstance(value, list):
                value = tuple(value)
            elif key == "ood_escalate_margin" and value is False:
                value = None
            params[key] = value
        out = Policy(**params)
        out._check()
        if self.topics is None and getattr(self, "_default_tagger", None) is not None:
            out._default_tagger = self._default_tagger  # share the warm tagger (its cache is thread-safe)
        return out

    def looser_than(self, base: "Policy", model_threshold: float | None = None) -> list:
        """The keys in which this policy could give a milder decision than ``base`` for some answer.

        Stricter or equal means: thresholds (``general_threshold`` resolved with ``model_threshold``,
        ``sensitive_threshold``, ``regenerate_at``, ``abstain_at``) no higher; ``escalate_band`` covering
        ``base``'s and ending at or below ``regenerate_at`` (an answer it takes would otherwise be
        regenerated or withheld); ``escalate_sensitive`` not switched off; ``escalate_reasons`` holding
        every reason of ``base``.  What ``evqual serve --policy-overrides stricter`` accepts from a client.

        >>> base = Policy()
        >>> Policy(sensitive_threshold=0.2).looser_than(base)
        []
        >>> Policy(general_threshold=1.0, escalate_band=None, escalate_reasons=()).looser_than(base, 0.3)
        ['general_threshold', 'escalate_band', 'escalate_reasons']
        """
        fallback = FALLBACK_THRESHOLD if model_threshold is None else model_threshold
        out = []

        def resolved(p):
            return fallback if p.general_threshold is None else p.general_threshold

        if resolved(self) > resolved(base):
            out.append("general_threshold")
        for name in ("sensitive_threshold", "regenerate_at", "abstain_at"):
            if getattr(self, name) > getattr(base, name):
                out.append(name)
        band, old = self.escalate_band, base.escalate_band
        if old is not None and (band is None or band[0] > old[0] or band[1] < old[1]):
            out.append("escalate_band")
        elif band is not None and band[1] > min(self.regenerate_at, self.abstain_at) and (
                old is None or band[1] > old[1]):
            out.append("escalate_band")
        if base.escalate_sensitive and not self.escalate_sensitive:
            out.append("escalate_sensitive")
        if not set(base.escalate_reasons) <= set(self.escalate_reasons):
            out.append("escalate_reasons")
        mine, theirs = getattr(self, "ood_escalate_margin", None), getattr(base, "ood_escalate_margin", None)
        if theirs is not None and (mine is None or mine < theirs):
            out.append("ood_escalate_margin")
        return out

    def to_dict(self, *, terms=False) -> dict:
        """A JSON-ready description of the policy, for audit records.

        Parameters
        ----------
        terms : bool, default=False
            Include every topic term; otherwise the SHA-256 of each topic's
            terms (see :meth:`TopicTagger.to_dict`).

        Returns
        -------
        dict

        Examples
        --------
        >>> d = Policy().to_dict()
        >>> d["general_threshold"], d["escalate_band"], sorted(d["topics"]["topics"])
        ('model', [0.35, 0.65], ['healthcare', 'labour', 'migration'])
        """
        band = self.escalate_band
        return {
            "general_threshold": "model" if self.general_threshold is None else self.general_threshold,
            "sensitive_threshold": self.sensitive_threshold,
            "regenerate_at": self.regenerate_at,
            "abstain_at": self.abstain_at,
            "escalate_band": None if band is None else [band[0], band[1]],
            "escalate_sensitive": self.escalate_sensitive,
            "escalate_reasons": list(self.escalate_reasons),
            "ood_escalate_margin": getattr(self, "ood_escalate_margin", None),
            "flag_rate": getattr(self, "flag_rate", None),
            **({"budget": self.budget_} if self.budget_ is not None else {}),
            "topics": self.tagger.to_dict(terms=terms),
        }


# ---------------------------------------------------------------------------
# TOML

_SCHEMA = {
    "thresholds": {"general": "general_threshold", "sensitive": "sensitive_threshold"},
    "bands": {"regenerate": "regenerate_at", "abstain": "abstain_at", "escalate": "escalate_band",
              "escalate_sensitive": "escalate_sensitive", "escalate_reasons": "escalate_reasons",
              "ood_margin": "ood_escalate_margin"},
    "budget": {"flag_rate": "flag_rate"},
}
_TOPIC_SETTINGS = ("builtin", "min_query_hits", "min_context_hits")
_TOPIC_KEYS = ("terms", "sensitive", "weak", "exclude")


def _unknown(path, key):
    return ValueError(f"{path}: unknown key {key!r}")


def load_policy(path) -> Policy:
    """Read a :class:`Policy` from a TOML file.

    Every key is optional; a missing key keeps the :class:`Policy` default.

    .. code-block:: toml

        [thresholds]
        general = "model"        # Policy.general_threshold: "model" (None) or a number
        sensitive = 0.3          # Policy.sensitive_threshold

        [bands]
        regenerate = 0.75        # Policy.regenerate_at
        abstain = 0.87           # Policy.abstain_at
        escalate = [0.35, 0.65]  # Policy.escalate_band; false disables it
        escalate_sensitive = true
        escalate_reasons = ["NUMBER_CONFLICT", "NEGATION_CONFLICT"]  # [] disables it
        ood_margin = 0.1         # Policy.ood_escalate_margin; false disables it

        [budget]
        flag_rate = 0.1          # Policy.flag_rate: flag about 10% of answers (evqual score fits it)

        [topics]
        builtin = true           # false drops the built-in topics
        min_query_hits = 1
        min_context_hits = 2

        [topics.housing]         # adds a topic; a built-in name replaces it
        terms = ["eviction", "tenan*", "rent increase"]
        sensitive = true         # default true
        weak = ["rent", "lease"] # count only next to one of `terms` (default [])
        exclude = ["car rental"] # each occurrence cancels one hit (default [])

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Policy

    Raises
    ------
    ValueError
        On a TOML syntax error (naming the file, line and column), an unknown
        key (naming the file and the dotted key) or an invalid value.
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> from pathlib import Path
    >>> import evqual.scoring
    >>> example = Path(evqual.scoring.__file__).with_name("policy_example.toml")
    >>> load_policy(example).sensitive_threshold
    0.3
    """
    import tomllib  # here: scoring without a policy file never loads it

    path = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read(_MAX_POLICY_BYTES + 1)
    if len(raw) > _MAX_POLICY_BYTES:
        raise ValueError(f"{path}: larger than {_MAX_POLICY_BYTES:,} bytes; not a policy file")
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e})") from e
    except tomllib.TOMLDecodeError as e:
        # tomllib's message ends with "(at line L, column C)".
        raise ValueError(f"{path}: invalid TOML: {e}") from e
    except RecursionError:
        raise ValueError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    if _depth(doc) > _MAX_POLICY_DEPTH:
        raise ValueError(f"{path}: arrays or tables nested deeper than {_MAX_POLICY_DEPTH} levels; "
                         "a policy needs at most 3")

    params = {}
    for section, value in doc.items():
        if section == "topics":
            continue
        if section not in _SCHEMA:
            raise _unknown(path, section)
        if not isinstance(value, dict):
            raise ValueError(f"{path}: {section!r} must be a table ([{section}]); got {value!r}")
        for key, item in value.items():
            if key not in _SCHEMA[section]:
                raise _unknown(path, f"{section}.{key}")
            params[_SCHEMA[section][key]] = item

    if params.get("general_threshold", None) == "model":
        params["general_threshold"] = None
    elif isinstance(params.get("general_threshold"), str):
        raise ValueError(f"{path}: 'thresholds.general' must be a number in [0, 1] or \"model\"; "
                         f"got {params['general_threshold']!r}")
    reasons = params.get("escalate_reasons", ESCALATE_REASONS)
    if not isinstance(reasons, (list, tuple)) or not all(isinstance(r, str) for r in reasons):
        raise ValueError(f"{path}: 'bands.escalate_reasons' must be a list of reason codes; got {reasons!r}")
    from ..explain import REASONS

    unknown_codes = [r for r in reasons if r not in REASONS]
    if unknown_codes:
        raise ValueError(f"{path}: 'bands.escalate_reasons': unknown reason code {unknown_codes[0]!r}; "
                         f"expected some of {sorted(REASONS)}")
    params["escalate_reasons"] = tuple(reasons)
    band = params.get("escalate_band", _DEFAULTS["escalate_band"])
    if band is False:
        params["escalate_band"] = None
    elif isinstance(band, list):
        params["escalate_band"] = tuple(band)
    elif band is not None and not isinstance(band, tuple):
        raise ValueError(f"{path}: 'bands.escalate' must be [low, high] or false; got {band!r}")

    if params.get("ood_escalate_margin", 0.1) is False:
        params["ood_escalate_margin"] = None
    params["topics"] = _load_topics(path, doc.get("topics"))
    policy = Policy(**params)
    try:
        policy._check()
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e
    return policy


_MAX_POLICY_BYTES = 1 << 20
_MAX_POLICY_DEPTH = 8


def _depth(value) -> int:
    """Nesting depth of tables and arrays, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if children is None:
            continue
        deepest = max(deepest, d)
        if deepest > _MAX_POLICY_DEPTH:
            break
        stack.extend((c, d + 1) for c in children)
    return deepest


def _load_topics(path, table):
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValueError(f"{path}: 'topics' must be a table ([topics]); got {table!r}")
    builtin = table.get("builtin", True)
    if not isinstance(builtin, bool):
        raise ValueError(f"{path}: 'topics.builtin' must be true or false; got {builtin!r}")
    topics = dict(BUILTIN_TOPICS) if builtin else {}
    for name, spec in table.items():
        if name in _TOPIC_SETTINGS:
            continue
        if not isinstance(spec, dict):
            raise _unknown(path, f"topics.{name}")
        for key in spec:
            if key not in _TOPIC_KEYS:
                raise _unknown(path, f"topics.{name}.{key}")
        if "terms" not in spec:
            raise ValueError(f"{path}: 'topics.{name}' needs 'terms', a list of words or phrases")
        try:
            topics[name] = Topic(name, spec["terms"], sensitive=spec.get("sensitive", True),
                                 weak=spec.get("weak", ()), exclude=spec.get("exclude", ()))
        except ValueError as e:
            raise ValueError(f"{path}: 'topics.{name}': {e}") from e
    kwargs = {k: table[k] for k in ("min_query_hits", "min_context_hits") if k in table}
    try:
        return TopicTagger(topics, **kwargs)
    except ValueError as e:
        raise ValueError(f"{path}: 'topics': {e}") from e
