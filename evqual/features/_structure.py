"""Family ``structure``: field-by-field checks against a structured record (Data2txt).

A *field* is a chunk line ``label: value`` whose value is a yes/no/null flag
(``true``, ``false``, ``null``, ``no``, ``none``; the rendering of
:func:`evqual.data.render_structured`, but any context with such lines
qualifies).  A sentence *mentions* a field when it contains every content token
of the field's last label component (plural ``s`` ignored, generic words such
as "restaurants" or "business" dropped) or their concatenation (``WiFi`` for
"Wi Fi", ``takeout`` for "Take Out"; two neighbouring words written together also count:
"Wi-Fi" mentions ``WiFi``).  Per sentence:

* ``conflict``: a field whose value is false/no/none is mentioned without a
  negation cue, or a true field is mentioned with one ("has outdoor seating"
  when ``OutdoorSeating: false``);
* ``null``: a field whose value is null is mentioned (RAGTruth's
  ``due_to_null`` hallucinations: "does not take reservations" when
  ``RestaurantsReservations: null``);
* ``absent``: a common business attribute of :data:`KNOWN_ATTRIBUTES` is
  mentioned while the record has no such field at all ("accepts credit
  cards" with no credit-card field).  Only for contexts that have fields.
"""

from __future__ import annotations

import re

import numpy as np

from ..text import STOP_WORDS, TOKEN_PATTERN, has_cue_word
from ._reduce import _SUM

__all__ = ["parse_fields", "structure_sentence", "structure_response", "token_set", "KNOWN_ATTRIBUTES", "NEGATION_RE",
           "NEGATION_WORDS", "has_negation", "candidate_fields", "field_lookup", "mentions_field"]

_TOKEN_RE = re.compile(TOKEN_PATTERN)
_GENERIC = frozenset({"attributes", "restaurants", "business", "accepts", "allowed", "good", "range2", "level",
                      "has", "offers"})
_FALSE = frozenset({"false", "no", "none", "u'no'", "u'none'", "'no'", "'none'"})
_TRUE = frozenset({"true", "yes"})
_NULL = frozenset({"null"})
NEGATION_RE = re.compile(
    r"\b(?:no|not|never|without|lacks?|lacking|neither|nor|unavailable|cannot|none)\b|n['\u2019]t\b", re.IGNORECASE)
NEGATION_WORDS = frozenset({"no", "not", "never", "without", "lack", "lacks", "lacking", "neither", "nor",
                            "unavailable", "cannot", "none"})
"""The whole words of :data:`NEGATION_RE` (``tests/test_features.py`` derives them from the pattern)."""


def has_negation(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether :data:`NEGATION_RE` finds a negation cue in ``text[start:end]``: one scan of compiled code where
    the package is compiled (:func:`evqual.text.has_cue_word`), the pattern otherwise.

    >>> has_negation("It is not open."), has_negation("It's open."), has_negation("It isn\u2019t open.")
    (True, False, True)
    """
    return has_cue_word(text, NEGATION_WORDS, start, end, contraction=True)

KNOWN_ATTRIBUTES = {
    "BusinessAcceptsCreditCards": ("credit", "card"),
    "RestaurantsDelivery": ("delivery",),
    "RestaurantsTakeOut": ("takeout",),
    "OutdoorSeating": ("outdoor", "seating"),
    "WiFi": ("wifi",),
    "RestaurantsReservations": ("reservation",),
    "GoodForKids": ("kid",),
    "DogsAllowed": ("dog",),
    "WheelchairAccessible": ("wheelchair",),
    "HasTV": ("tv",),
    "HappyHour": ("happy", "hour"),
    "BikeParking": ("bike", "parking"),
    "Caters": ("catering",),
    "DriveThru": ("drive", "thru"),
    "RestaurantsTableService": ("table", "service"),
    "GoodForDancing": ("dancing",),
    "CoatCheck": ("coat", "check"),
    "Smoking": ("smoking",),
    "ByAppointmentOnly": ("appointment",),
    "Music": ("live", "music"),
    "BusinessParking": ("parking",),
    "Alcohol": ("alcohol",),
}
"""Common business attributes and the words that mention them (for ``absent``)."""


def _norm(tok: str) -> str:
    return tok[:-1] if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss") else tok


def _phrase(label: str):
    last = label.split(" / ")[-1]
    full = [t.lower() for t in _TOKEN_RE.findall(last)]
    content = [_norm(t) for t in full if t not in STOP_WORDS and t not in _GENERIC]
    return tuple(content), "".join(full)


def parse_fields(chunk_texts):
    """Flag fields and key names of a structured context.

    Returns
    -------
    fields : list of (label, kind, phrase_tokens, joined)
        Every flag field (kind ``"true"``, ``"false"`` or ``"null"``).
    keys : set of str
        Every label component of every ``label: value`` line, lower-cased
        without spaces (``"businessacceptscreditcards"``).
    """
    fields, keys = [], set()
    for text in chunk_texts:
        if ": " not in text or "; " in text:
            continue
        label, _, value = text.rpartition(": ")
        keys.update(part.replace(" ", "").lower() for part in label.split(" / "))
        v = value.strip().lower()
        kind = "false" if v in _FALSE else "true" if v in _TRUE else "null" if v in _NULL else None
        if kind is None:
            continue
        phrase, joined = _phrase(label)
        if phrase or joined:
            fields.append((label, kind, phrase, joined))
    return fields, keys


def token_set(toks) -> set:
    """The words a field mention is looked up in: the tokens, without a plural ``s``, and each two
    neighbours written together ("Wi-Fi" and "wi fi" mention ``WiFi``; "take out" mentions ``takeout``)."""
    toks = list(toks)
    out = set(toks)
    out.update(_norm(t) for t in toks)
    out.update(a + b for a, b in zip(toks, toks[1:]))
    return out


def mentions_field(phrase, joined, toks: set) -> bool:
    if phrase and all(t in toks for t in phrase):
        return True
    return bool(joined) and joined in toks


def field_lookup(fields) -> dict:
    """Token to the indices of the fields a sentence holding it may mention (in field order).

    A field can only be mentioned by a sentence holding the first token of
    its phrase or its concatenation, so looking the sentence's tokens up
    gives every candidate without scanning all fields (see
    :func:`candidate_fields`).
    """
    lookup: dict = {}
    for j, (_, _, phrase, joined) in enumerate(fields):
        keys = {phrase[0]} if phrase else set()
        if joined:
            keys.add(joined)
        for key in keys:
            lookup.setdefault(key, []).append(j)
    return lookup


def candidate_fields(lookup: dict, tset) -> list[int]:
    """Indices (ascending) of the fields whose mention test can pass for the token set ``tset``."""
    found = set()
    for t in tset:
        got = lookup.get(t)
        if got:
            found.update(got)
    return sorted(found)


def structure_sentence(output: str, sentences, sent_tokens, fields, field_keys, lookup=None) -> dict:
    """Per-sentence counts of conflicting, null and absent field mentions.

    ``lookup`` is :func:`field_lookup` of ``fields`` (built here when not given).
    """
    n = len(sentences)
    conflict, null, absent = np.zeros(n), np.zeros(n), np.zeros(n)
    if fields:
        lookup = field_lookup(fields) if lookup is None else lookup
        for i, ((s, e), toks) in enumerate(zip(sentences, sent_tokens)):
            tset = token_set(toks)
            negated = has_negation(output, s, e)
            for j in candidate_fields(lookup, tset):
                _, kind, phrase, joined = fields[j]
                if not mentions_field(phrase, joined, tset):
                    continue
                if kind == "null":
                    null[i] += 1
                elif (kind == "false") != negated:
                    conflict[i] += 1
            for key, words in KNOWN_ATTRIBUTES.items():
                if key.lower() not in field_keys and all(w in tset for w in words):
                    absent[i] += 1
    return {"sent.structure.conflict.v1": conflict, "sent.structure.null.v1": null,
            "sent.structure.absent.v1": absent}


def structure_response(sent: dict) -> dict:
    return {"structure.conflict.v1": float(_SUM(sent["sent.structure.conflict.v1"], None)),
            "structure.null.v1": float(_SUM(sent["sent.structure.null.v1"], None)),
            "structure.absent.v1": float(_SUM(sent["sent.structure.absent.v1"], None))}
