"""The result of scoring one answer, and its lossless JSON form.

A :class:`ScoreResult` is what :meth:`evqual.scoring.Scorer.score` returns:
the calibrated response ``risk``, the decision the policy took, one
:class:`SentenceResult` per output sentence (offsets, risk, the nearest
evidence chunk as a :class:`Citation`, :class:`Reason` codes and a readable
explanation), predicted character :class:`SpanResult` spans, topic labels and
the :class:`ModelInfo` of the model that scored it.

Every class is a frozen dataclass with ``to_dict`` / ``from_dict``;
:meth:`ScoreResult.to_json` and :meth:`ScoreResult.from_json` round-trip
exactly (``ScoreResult.from_json(r.to_json()) == r``).

Examples
--------
>>> from evqual.results import ScoreResult
>>> r = ScoreResult(id="a1", risk=0.25, flagged=False, decision="show", threshold=0.5, output="Hi.")
>>> ScoreResult.from_json(r.to_json()) == r
True
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields

__all__ = ["Citation", "Reason", "SentenceResult", "SpanResult", "ModelInfo", "ScoreResult", "DECISIONS", "validate_result"]

DECISIONS = ("show", "warn", "regenerate", "abstain", "escalate")

_ATOMS = (str, int, float, bool, type(None))
_FIELD_NAMES: dict = {}


def _plain(obj):
    """:func:`dataclasses.asdict`'s conversion, about four times faster on a result: dataclasses become
    dicts, lists and tuples keep their type, dicts are copied, JSON atoms are kept as they are and any other
    value is deep-copied (as ``asdict`` does)."""
    if isinstance(obj, _ATOMS):
        return obj
    names = _FIELD_NAMES.get(type(obj))
    if names is None and hasattr(type(obj), "__dataclass_fields__"):
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in fields(obj))
    if names is not None:
        return {n: _plain(getattr(obj, n)) for n in names}
    if type(obj) in (list, tuple):
        return type(obj)(_plain(v) for v in obj)
    if type(obj) is dict:
        return {_plain(k): _plain(v) for k, v in obj.items()}
    return copy.deepcopy(obj)


@dataclass(frozen=True)
class Citation:
    """An evidence chunk cited for a sentence: its id, position and text.

    ``start``/``end`` are character offsets in the context as evqual joined
    it (a list context is joined with blank lines, see
    :func:`evqual.data.chunk_context`); ``support`` is the share of the
    sentence's content words found in the chunk.
    """

    chunk_id: str
    chunk_index: int
    start: int
    end: int
    text: str
    support: float = 0.0


@dataclass(frozen=True)
class Reason:
    """One support gap: a stable code (see :data:`evqual.explain.REASONS`), its sentence and details.

    ``details`` holds JSON values only (strings, numbers, booleans, lists,
    objects), so that a result survives its JSON round trip unchanged.
    """

    code: str
    text: str
    details: dict = field(default_factory=dict)

    def __hash__(self):  # details is a dict; hash on the readable parts
        return hash((self.code, self.text))


@dataclass(frozen=True)
class SentenceResult:
    """One output sentence: offsets in the output, risk, evidence and reasons.

    ``flagged`` sentences exist exactly in flagged answers (see
    :attr:`ScoreResult.flagged`).  ``note`` marks a sentence of an answer
    the policy *shows* that would have been flagged on its own signals (its
    risk reached the sentence threshold, it holds a predicted span or a
    claim-aligned contradiction): it is reported, not flagged.  ``reasons``
    are given for every sentence, flagged or not.
    """

    index: int
    start: int
    end: int
    text: str
    risk: float
    flagged: bool
    evidence: Citation | None = None
    reasons: tuple = ()
    explanation: str = ""
    note: bool = False

    @classmethod
    def from_dict(cls, d: dict) -> "SentenceResult":
        d = dict(d)
        d["evidence"] = Citation(**d["evidence"]) if d.get("evidence") is not None else None
        d["reasons"] = tuple(Reason(**r) for r in d.get("reasons", ()))
        return cls(**d)


@dataclass(frozen=True)
class SpanResult:
    """A predicted hallucinated character span of the output."""

    start: int
    end: int
    text: str
    risk: float
    sentence: int = -1

    @classmethod
    def from_dict(cls, d: dict) -> "SpanResult":
        return cls(**d)


@dataclass(frozen=True)
class ModelInfo:
    """Which model scored the answer."""

    name: str = ""
    method: str = ""
    version: str = ""
    sha256: str = ""
    entity_backend: str = ""


@dataclass(frozen=True)
class ScoreResult:
    """The result of scoring one answer.

    Attributes
    ----------
    id : str
    risk : float
        Calibrated probability that the answer holds a hallucination.
    flagged : bool
        ``decision != "show"``: the answer needs more than showing.  An
        answer is flagged exactly when at least one of its sentences is.
    decision : str
        One of :data:`DECISIONS` (see :class:`evqual.scoring.Policy`).
    threshold : float
        The answer threshold applied (topic-aware): a risk at or above it
        is flagged.  By default the model's validation-tuned threshold, or
        the stricter sensitive threshold.
    rule : str
        Which rule of the policy decided (see :class:`evqual.scoring.Policy`):
        ``"below_threshold"``, ``"escalate_band"``, ``"abstain_at"``,
        ``"regenerate_at"``, ``"sensitive_topic"``, ``"threshold"``,
        ``"reason:<CODE>"`` (a high-precision conflict forced escalation) or
        ``"out_of_distribution"`` (a ``W004`` answer near the threshold).
    sentence_threshold : float or None
        The model's validation-tuned sentence threshold (a sentence whose
        risk reaches it is flagged in a flagged answer, a note otherwise).
    verify : bool
        True when the decision sends the answer on to LLM verification
        (``decision == "escalate"``).
    topics : tuple of str
        Topic labels of the query and context.
    sensitive : bool
        Whether any topic is sensitive (the stricter threshold applied).
    sentences : tuple of SentenceResult
    spans : tuple of SpanResult
        Predicted hallucinated character spans of ``output``.
    output, query : str
        The scored answer and its query (so a report can be rendered from
        results alone).
    task_type : str or None
    model : ModelInfo
    context : str
        The context as evqual joined it (citation offsets index into it);
        ``""`` when left out (``evqual score --no-context``).
    label : int or None
        The gold or user label of the input (1 = hallucinated), when it had one.
    extra : dict
        Input fields evqual does not read, passed through unchanged.
    warnings : tuple of dict
        ``{"code", "message", "details"}``: conditions that make the score
        less reliable (``W001``: the text looks non-English; ``W002``: an
        extra field was not passed through; ``W004``: the answer is unlike
        the model's training data, ``details`` giving its ``distance``, the
        model's ``threshold`` and the most unusual ``features``).
    verification : dict or None
        The verification stage's result for an escalated answer when the
        scorer has a verifier (:meth:`evqual.verify.VerificationResult.to_dict`:
        ``method``, ``backend``, ``score``, ``flagged``, ``tier``, ``claims`` or
        ``factoids``, ``usage``, ``error``); ``None`` when not verified.
    """

    id: str
    risk: float
    flagged: bool
    decision: str
    threshold: float
    output: str = ""
    query: str = ""
    task_type: str | None = None
    verify: bool = False
    topics: tuple = ()
    sensitive: bool = False
    sentences: tuple = ()
    spans: tuple = ()
    model: ModelInfo = field(default_factory=ModelInfo)
    rule: str = ""
    sentence_threshold: float | None = None
    context: str = ""
    label: int | None = None
    extra: dict = field(default_factory=dict)
    warnings: tuple = ()
    verification: dict | None = None

    @property
    def final_flagged(self) -> bool:
        """The cascade's verdict: the verifier's ``flagged`` when the answer was verified without error,
        else the pre-filter's ``flagged``."""
        v = self.verification
        if v and v.get("error") is None and v.get("flagged") is not None:
            return bool(v["flagged"])
        return self.flagged

    @property
    def reason_codes(self) -> list[str]:
        """Distinct reason codes of the flagged sentences, in order of appearance."""
        return list(dict.fromkeys(r.code for s in self.sentences if s.flagged for r in s.reasons))

    @property
    def note_codes(self) -> list[str]:
        """Distinct reason codes of the sentences that are not flagged, in order of appearance."""
        return list(dict.fromkeys(r.code for s in self.sentences if not s.flagged for r in s.reasons))

    @property
    def citations(self) -> list[Citation]:
        """The evidence cited by flagged sentences (forced citation)."""
        return [s.evidence for s in self.sentences if s.flagged and s.evidence is not None]

    def to_dict(self) -> dict:
        """A JSON-ready dict (tuples become lists); a verified answer also gets ``final_flagged``, the
        cascade's verdict (:attr:`final_flagged`), after ``verification``."""
        d = _plain(self)
        if self.verification is not None:
            d["final_flagged"] = self.final_flagged
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ScoreResult":
        d = dict(d)
        final = d.pop("final_flagged", None)  # derived: checked against the verification, not stored
        out = cls._from_fields(d)
        if final is not None and (not isinstance(final, bool) or final != out.final_flagged):
            raise ValueError(f"final_flagged {final!r} disagrees with the verification and flagged fields "
                             f"(they give {out.final_flagged})")
        return out

    @classmethod
    def _from_fields(cls, d: dict) -> "ScoreResult":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown ScoreResult fields: {sorted(unknown)}")
        d["topics"] = tuple(d.get("topics", ()))
        d["sentences"] = tuple(SentenceResult.from_dict(s) for s in d.get("sentences", ()))
        d["spans"] = tuple(SpanResult.from_dict(s) for s in d.get("spans", ()))
        d["model"] = ModelInfo(**d.get("model", {}))
        d["warnings"] = tuple(d.get("warnings", ()))
        d["extra"] = dict(d.get("extra") or {})
        return cls(**d)

    def to_json(self, **kw) -> str:
        """One line of JSON (``ensure_ascii=False``; floats keep their full precision)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, **kw)

    @classmethod
    def from_json(cls, text: str) -> "ScoreResult":
        return cls.from_dict(json.loads(text))


_SIMPLE = {"int": int, "str": str, "bool": bool, "tuple": tuple, "dict": dict}


def _check_field(value, annotation: str, where: str) -> None:
    import math

    options = [a.strip() for a in annotation.split("|")]
    if value is None and "None" in options:
        return
    kind = options[0]
    if kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind in _SIMPLE:
        ok = isinstance(value, _SIMPLE[kind])
    else:  # a dataclass of this module
        cls = globals().get(kind)
        ok = isinstance(value, cls)
        if ok:
            validate_result(value, where)
    if not ok:
        raise TypeError(f"field '{where}' must be {annotation}; got {type(value).__name__}")


def validate_result(result, where: str = "") -> None:
    """Raise :class:`TypeError` naming the first field of ``result`` (a :class:`ScoreResult` or one of its
    parts) whose value is not of its declared type: a result read back from a file that was edited by
    hand is checked before it is rendered.  Numbers must be finite.

    >>> validate_result(ScoreResult(id="a", risk=0.2, flagged=False, decision="show", threshold=0.5))
    >>> validate_result(ScoreResult(id="a", risk=0.2, flagged=False, decision="show", threshold=0.5, output=7))
    Traceback (most recent call last):
    ...
    TypeError: field 'output' must be str; got int
    """
    from dataclasses import fields

    for f in fields(result):
        name = f"{where}.{f.name}" if where else f.name
        value = getattr(result, f.name)
        if isinstance(result, ScoreResult) and f.name == "id":
            if value is not None and not isinstance(value, (str, int)):
                raise TypeError(f"field 'id' must be a string; got {type(value).__name__}")
            continue
        _check_field(value, str(f.type), name)
    if isinstance(result, ScoreResult):
        for i, s in enumerate(result.sentences):
            if not isinstance(s, SentenceResult):
                raise TypeError(f"field 'sentences[{i}]' must be a sentence")
            validate_result(s, f"sentences[{i}]")
        for i, s in enumerate(result.spans):
            if not isinstance(s, SpanResult):
                raise TypeError(f"field 'spans[{i}]' must be a span")
            validate_result(s, f"spans[{i}]")
        for i, t in enumerate(result.topics):
            if not isinstance(t, str):
                raise TypeError(f"field 'topics[{i}]' must be a string")
    if isinstance(result, SentenceResult):
        for i, r in enumerate(result.reasons):
            if not isinstance(r, Reason):
                raise TypeError(f"field '{where}.reasons[{i}]' must be a reason")
            validate_result(r, f"{where}.reasons[{i}]")

