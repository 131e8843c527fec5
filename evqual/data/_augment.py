"""Contrastive augmentation: minimally edited hallucinations derived from grounded answers.

RAGTruth's grounded answers often carry numbers and names the passages lack,
so a learner trained on it alone discounts the evidence checks.  This module
derives clean contradictions from grounded training rows: one sentence of a
grounded answer gets one realistic edit, and the edited answer is a
hallucination whose character span is known.

Edit types (:data:`EDIT_TYPES`):

* ``number``: a number changed (``1,600`` -> ``1,800``; ``three`` -> ``five``);
* ``date``: a year, month or weekday changed (``1932`` -> ``1935``);
* ``negation``: polarity reversed (``is not`` -> ``is``; ``was`` -> ``was not``);
* ``antonym``: a word replaced by its opposite (:data:`evqual.text.ANTONYM_PAIRS`);
* ``entity``: a name replaced by another name of the context (a distractor);
* ``role_swap``: two names of one sentence exchanged (``A acquired B`` -> ``B acquired A``);
* ``quantifier``: quantifier or modality scope changed (:data:`evqual.text.QUANTIFIER_SWAPS`);
* ``addition``: an unsupported sentence added (a shipped, hand-written list per task).

Rules: deterministic (each answer's edit depends only on the answer, the
seed and the version, through SHA-256, never on other rows or on the order
of the input); only rows with ``label == 0`` and no gold span are edited; the
augmented rows keep the parent's query, context, task and source, get
``label = 1``, one span on the edit and the id ``<parent id>~aug.<type>``.
Apply it to training rows only: never to validation, calibration or held-out
rows (:class:`evqual.models.Detector` and :func:`evqual.evaluation.evaluate`
do this when given ``augment="contrastive.v1"``).

>>> from evqual.data import augment_contrastive, make_example
>>> ex = make_example(query="When did the bridge open?", context="The bridge opened in 1932 after four years.",
...                   output="The bridge opened in 1932.", label=0, id="b1")
>>> [a.id for a in augment_contrastive([ex], rate=1.0, types=("date",))]
['b1~aug.date']
>>> aug = augment_contrastive([ex], rate=1.0, types=("date",))[0]
>>> aug.label, aug.output[aug.spans[0].start:aug.spans[0].end] != "1932"
(1, True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re

from ..text import MONTHS, NUMBER_WORDS, QUANTIFIER_SWAPS, WEEKDAYS, antonyms_of, split_sentences
from ._records import Example, Span

__all__ = ["augment_contrastive", "AUGMENT_VERSIONS", "EDIT_TYPES"]

AUGMENT_VERSIONS = ("contrastive.v1",)
EDIT_TYPES = ("number", "date", "negation", "antonym", "entity", "role_swap", "quantifier", "addition")

_NUM = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(w for w in NUMBER_WORDS if w not in ("half", "hundred", "one"))
                          + r")\b", re.IGNORECASE)
_MONTH = re.compile(r"\b(" + "|".join(m.capitalize() for m in MONTHS if m != "may") + r")\b")
_WEEKDAY = re.compile(r"\b(" + "|".join(d.capitalize() for d in WEEKDAYS) + r")\b")
_NEG_REMOVE = re.compile(r"\b(is|are|was|were|can|could|will|would|should|does|do|did|has|have|had|must)"
                         r"\s+not\b", re.IGNORECASE)
_CONTRACTED = {"isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "can't": "can",
               "couldn't": "could", "won't": "will", "wouldn't": "would", "doesn't": "does", "don't": "do",
               "didn't": "did", "hasn't": "has", "haven't": "have", "shouldn't": "should"}
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(k) for k in _CONTRACTED) + r")", re.IGNORECASE)
_NEG_INSERT = re.compile(r"\b(is|are|was|were|can|will|has|have|should|must)(?=\s+(?!not\b)[a-z])")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
_NAME = re.compile(r"(?<![\w])[A-Z][a-zA-Z&'.-]*[a-zA-Z](?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][a-zA-Z&'.-]*[a-zA-Z])*")
_NOT_NAMES = frozenset({"The", "A", "An", "This", "That", "These", "Those", "It", "Its", "He", "She", "They",
                        "We", "I", "You", "In", "On", "At", "For", "And", "But", "Or", "If", "As", "By", "To",
                        "However", "Although", "While", "According", "There", "Their", "His", "Her", "Our",
                        "After", "Before", "During", "With", "From", "Based", "Overall", "Yes", "No", "Passage",
                        "Also", "Some", "Many", "Most", "All", "Each", "When", "Where", "What", "Who", "Why", "Unable",
                        "Please", "Note", "Here", "Then", "Finally", "First", "Second", "Third", "Additionally"})
_FUNCTION_WORDS = frozenset({"for", "of", "and", "the", "in", "on", "at", "to", "de", "a", "an", "or", "&"})
_REFUSAL = re.compile(r"unable to answer|not possible to answer|cannot be answered|no information", re.I)

_ADDITIONS = {
    "QA": (
        "This was confirmed by a {year} study published by researchers at Stanford University.",
        "Experts estimate that about {pct}% of cases are never reported.",
        "The practice has been standard since {year}.",
        "It is also recommended by the World Health Organization.",
        "Around {n},000 people rely on it every year.",
        "The original version was developed in Germany in {year}.",
        "Most users see results within {small} days.",
        "It was later banned in several European countries.",
    ),
    "Summary": (
        "Officials said {n} people have been questioned so far.",
        "The company expects its profits to double by {year}.",
        "A spokesperson declined to comment on the reports.",
        "The decision is expected to cost taxpayers about ${n} million.",
        "Similar incidents were reported in {small} other cities last year.",
        "The investigation is being led by the FBI.",
        "Local residents held a vigil on Sunday evening.",
        "The new rules will take effect in {year}.",
    ),
    "Data2txt": (
        "It also offers free valet parking.",
        "The venue has a rooftop terrace with live music on Fridays.",
        "Reservations are required for groups of more than {small} people.",
        "It has been family-owned since {year}.",
        "Customers praise its gluten-free options and fast delivery.",
        "It is open 24 hours on weekends.",
        "The staff speak {small} languages.",
        "It accepts cryptocurrency payments.",
    ),
}


def _rng(seed, version: str, key: str) -> random.Random:
    digest = hashlib.sha256(f"{version}|{seed}|{key}".encode("utf-8", "surrogatepass")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _case_like(word: str, model: str) -> str:
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _format_like(value: float, literal: str) -> str:
    if "." in literal:
        decimals = len(literal.rsplit(".", 1)[1])
        text = f"{value:,.{decimals}f}" if "," in literal else f"{value:.{decimals}f}"
    else:
        text = f"{int(value):,}" if "," in literal else str(int(value))
    return text


# ---------------------------------------------------------------------------------------------- editors
# each editor: (example, sentence text, rng) -> (start, end, replacement, lead) in sentence coordinates or None;
# the span of the edit is replacement[lead:]


def _edit_number(ex, text, rng):
    # not a year, not a list index ("3." or "3)" opening the sentence)
    found = [m for m in _NUM.finditer(text) if not _YEAR.fullmatch(m.group()) and text[:m.start()].strip()]
    words = list(_NUMBER_WORD.finditer(text))
    if not found and not words:
        return None
    pick = rng.randrange(len(found) + len(words))
    if pick >= len(found):
        m = words[pick - len(found)]
        value = NUMBER_WORDS[m.group().lower()]
        others = [w for w, v in NUMBER_WORDS.items() if v not in (value, 0, 1, 100) and w not in ("dozen",)]
        word = rng.choice(sorted(others))
        return m.start(), m.end(), _case_like(word, m.group()), 0
    m = found[pick]
    literal = m.group()
    value = float(literal.replace(",", ""))
    if value == 0:
        new = float(rng.choice([1, 2, 5]))
    else:
        factor = rng.choice([0.5, 0.75, 1.25, 1.5, 2.0, 3.0])
        new = value * factor
        if "." not in literal:
            new = round(new)
            if new == value:
                new = value + rng.choice([1, 2, 3])
    text_new = _format_like(new, literal)
    if text_new == literal or text_new in ex.context:
        text_new = _format_like(new + (1 if "." not in literal else 0.1), literal)
        if text_new == literal or text_new in ex.context:
            return None
    return m.start(), m.end(), text_new, 0


def _edit_date(ex, text, rng):
    options = [("year", m) for m in _YEAR.finditer(text)] + [("month", m) for m in _MONTH.finditer(text)] + \
              [("weekday", m) for m in _WEEKDAY.finditer(text)]
    if not options:
        return None
    kind, m = options[rng.randrange(len(options))]
    if kind == "year":
        year = int(m.group())
        for _ in range(4):
            new = str(year + rng.choice([-10, -5, -3, -2, -1, 1, 2, 3, 5, 10]))
            if new not in ex.context:
                return m.start(), m.end(), new, 0
        return None
    names = MONTHS if kind == "month" else WEEKDAYS
    current = m.group().lower()
    choices = [n for n in names if n != current and n != "may" and n.capitalize() not in ex.context]
    if not choices:
        return None
    return m.start(), m.end(), rng.choice(choices).capitalize(), 0


def _edit_negation(ex, text, rng):
    options = [("remove", m) for m in _NEG_REMOVE.finditer(text)] + \
              [("contracted", m) for m in _CONTRACTION.finditer(text)]
    if not options:
        options = [("insert", m) for m in _NEG_INSERT.finditer(text)]
    if not options:
        return None
    kind, m = options[rng.randrange(len(options))]
    if kind == "remove":
        return m.start(), m.end(), m.group(1), 0
    if kind == "contracted":
        return m.start(), m.end(), _case_like(_CONTRACTED[m.group().lower()], m.group()), 0
    return m.start(), m.end(), f"{m.group(1)} not", 0


def _edit_antonym(ex, text, rng):
    lead = len(text) - len(text.lstrip())
    options = [m for m in _WORD.finditer(text) if antonyms_of(m.group().lower())
               and (m.group().islower() or m.start() == lead)]  # not inside a name or title
    if not options:
        return None
    m = options[rng.randrange(len(options))]
    word = rng.choice(sorted(antonyms_of(m.group().lower())))
    return m.start(), m.end(), _case_like(word, m.group()), 0


_MID_CAPS = re.compile(r"(?<=[a-z,;] )[A-Z][a-zA-Z&'.-]*[a-zA-Z]")


def _names(text, known=frozenset()):
    """Capitalised name mentions ``(start, end, name)``; a single capitalised word opening the sentence
    counts only when ``known`` (words seen capitalised mid-sentence in the context) holds it."""
    out = []
    for m in _NAME.finditer(text):
        name = m.group()
        if name in _NOT_NAMES or len(name) < 3:
            continue
        start = m.start()
        first = name.split()[0]
        if first in _NOT_NAMES:  # "The Lions" -> "Lions"
            rest = name[len(first):].lstrip()
            if not rest or not rest[:1].isupper():
                continue
            start, name = m.end() - len(rest), rest
        if start == len(text) - len(text.lstrip()) and " " not in name and name not in known:
            continue  # a capitalised first word is not a name
        out.append((start, start + len(name), name))
    return out


def _known(ex):
    return frozenset(m.group() for m in _MID_CAPS.finditer(ex.context))


def _edit_entity(ex, text, rng):
    here = _names(text, _known(ex))
    if not here:
        return None
    present = {n for _, _, n in here}
    pool = sorted({n for _, _, n in _names(ex.context) if n not in present and n not in text
                   and not any(n in p or p in n for p in present)})
    if not pool:
        return None
    start, end, name = here[rng.randrange(len(here))]
    same = [n for n in pool if len(n.split()) == len(name.split())] or pool
    return start, end, rng.choice(same), 0


def _edit_role_swap(ex, text, rng):
    names = _names(text, _known(ex))
    pairs = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            a, b = names[i], names[j]
            between = text[a[1]:b[0]]
            if a[2] == b[2] or a[2] in b[2] or b[2] in a[2]:
                continue
            words = between.split()
            if 1 <= len(words) <= 6 and "," not in between and \
                    any(w.isalpha() and w.islower() and w not in _FUNCTION_WORDS for w in words):
                pairs.append((a, b))
    if not pairs:
        return None
    a, b = pairs[rng.randrange(len(pairs))]
    return a[0], b[1], b[2] + text[a[1]:b[0]] + a[2], 0


def _edit_quantifier(ex, text, rng):
    options = [m for m in _WORD.finditer(text) if m.group().lower() in QUANTIFIER_SWAPS and
               not (m.group() == "May")]
    if not options:
        return None
    m = options[rng.randrange(len(options))]
    return m.start(), m.end(), _case_like(QUANTIFIER_SWAPS[m.group().lower()], m.group()), 0


def _edit_addition(ex, text, rng):
    task = ex.task_type if ex.task_type in _ADDITIONS else "QA"
    template = rng.choice(_ADDITIONS[task])
    sentence = template.format(year=rng.randrange(1950, 2021), pct=rng.randrange(12, 88),
                               n=rng.randrange(2, 95), small=rng.randrange(3, 9))
    end = len(text.rstrip())
    if not text.rstrip().endswith((".", "!", "?")):
        return None
    return end, end, " " + sentence, 1


_EDITORS = {"number": _edit_number, "date": _edit_date, "negation": _edit_negation, "antonym": _edit_antonym,
            "entity": _edit_entity, "role_swap": _edit_role_swap, "quantifier": _edit_quantifier,
            "addition": _edit_addition}


def _augment_one(ex: Example, rng: random.Random, types) -> Example | None:
    sentences = [(s, e) for s, e in split_sentences(ex.output) if ex.output[s:e].strip()]
    if not sentences:
        return None
    order = list(types)
    rng.shuffle(order)
    for kind in order:
        picks = list(range(len(sentences)))
        rng.shuffle(picks)
        for k in picks:
            s, e = sentences[k]
            edit = _EDITORS[kind](ex, ex.output[s:e], rng)
            if edit is None:
                continue
            start, end, replacement, lead = edit
            start, end = s + start, s + end
            output = ex.output[:start] + replacement + ex.output[end:]
            span_start, span_end = start + lead, start + len(replacement)
            if span_end <= span_start or output == ex.output:
                continue
            span = Span(span_start, span_end, text=output[span_start:span_end], label_type=f"Augmented {kind}")
            return dataclasses.replace(ex, id=f"{ex.id}~aug.{kind}", output=output, spans=(span,), label=1,
                                       origin=None)
    return None


def augment_contrastive(examples, *, version: str = "contrastive.v1", rate: float = 0.5, types=EDIT_TYPES,
                        seed: int = 0) -> list[Example]:
    """Minimally edited hallucinations of grounded answers (see the module docstring).

    Parameters
    ----------
    examples : iterable of Example
        Training rows only.  Rows with ``label != 0`` or with gold spans are
        not edited.
    version : str, default="contrastive.v1"
        The augmentation version (:data:`AUGMENT_VERSIONS`); recorded with a model.
    rate : float, default=0.5
        Share of the eligible rows that get an edited twin (each row decides
        by its own seeded draw).
    types : sequence of str, default=EDIT_TYPES
        Edit types to use; each edited row uses the first type (in a seeded
        order) that applies to one of its sentences.
    seed : int, default=0

    Returns
    -------
    list of Example
        The edited rows, in input order (parents are not included).
    """
    if version not in AUGMENT_VERSIONS:
        raise ValueError(f"version must be one of {AUGMENT_VERSIONS}; got {version!r}")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1]; got {rate!r}")
    unknown = [t for t in types if t not in EDIT_TYPES]
    if unknown or not types:
        raise ValueError(f"types must be a non-empty subset of {EDIT_TYPES}; got {list(types)!r}")
    out = []
    for ex in examples:
        if ex.label != 0 or ex.spans or not ex.output.strip() or _REFUSAL.search(ex.output[:200]):
            continue
        rng = _rng(seed, version, str(ex.id))
        if rng.random() >= rate:
            continue
        edited = _augment_one(ex, rng, types)
        if edited is not None:
            out.append(edited)
    return out
