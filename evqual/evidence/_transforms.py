"""Training claims made from evidence: label-flipping and label-preserving transformations.

A claim model learns from labelled claims.  RAGTruth's labelled claims are
mostly unsupported additions; to learn what a changed word of logic means,
evqual also turns sentences of the training contexts into claims:

* **preserving** (label 0): a listed synonym (``synonyms.tsv``), another
  phrase of the same sense (``logic.tsv``: "may" -> "might"), a small number
  written as a word, a clause cut off;
* **flipping** (label 1), each tagged with what it changes
  (:data:`FLIP_TAGS`): a phrase of a logic class replaced by one of another
  sense of that class (``logic:<class>``), a hedge, condition or limit
  deleted (``drop:<class>``), a negation added or removed (``polarity``), a
  value changed (``value``), a name or a content word replaced by one from
  another sentence of the same context (``borrow:name``, ``borrow:word``),
  two names exchanged (``swap``), a word replaced by its opposite
  (``opposite``).

The transformations are generic: they know the lexicon's classes, not the
kinds of error of any evaluation suite, and no suite is their input.  Each
claim depends only on its sentence, the context, the seed and the version
(SHA-256), never on other rows.  :data:`FLIP_TAGS` lets an evaluation leave
one kind out (leave-one-type-out).

>>> ctx = ["The clinic may open before noon on weekdays.", "Dr Ana Ruiz runs the clinic with Dr Ben Cole."]
>>> rows = transform_evidence(ctx, seed=0, rate=1.0)
>>> sorted({r.label for r in rows})
[0, 1]
>>> all(r.text != ctx[0] for r in rows)
True
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import NamedTuple

from ..text import ANTONYM_PAIRS, split_sentences
from ._lexicon import LOGIC_CLASSES, logic_lexicon
from ._values import read_values

__all__ = ["TransformedClaim", "transform_evidence", "flip_claim", "preserve_claim", "FLIP_TAGS", "PRESERVE_TAGS",
           "TRANSFORM_VERSION"]

TRANSFORM_VERSION = "transforms.v1"
FLIP_TAGS = tuple([f"logic:{c}" for c in LOGIC_CLASSES if c != "polarity"]
                  + ["drop:modality", "drop:condition", "drop:quantity", "polarity", "value", "borrow:name",
                     "borrow:word", "swap", "opposite"])
"""Tags of the label-flipping transformations."""
PRESERVE_TAGS = ("synonym", "same_sense", "number_word", "cut")
"""Tags of the label-preserving transformations."""

def _group_of():
    lex = logic_lexicon()
    return {(c, s): g for c, g in lex.groups for s in g}


_DROPPABLE = {("modality", "hedge"), ("condition", "conditional"), ("quantity", "only"), ("quantity", "at_most"),
              ("quantity", "at_least"), ("quantity", "some"), ("quantity", "most")}
_TOKEN_RE = re.compile(r"[^\W_]+(?:'[a-z]+)?")
_NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
_AUX_RE = re.compile(r"\b(is|are|was|were|will|can|could|should|would|has|have|had|does|do|did|must|may)\b(?!\s+not)")
_NOT_RE = re.compile(r"\s+not\b|n't\b")
_LIST_WORDS = frozenset({"and", "or", "the", "of", "s", "nor", "plus", "as", "well", "both", "either"})
_SMALL = {str(i): w for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


class TransformedClaim(NamedTuple):
    """A claim made from a context sentence: its text, label (1 = not supported) and transformation tag."""

    text: str
    label: int
    tag: str
    source: str  # the sentence it was made from


def _rng(*parts) -> random.Random:
    h = hashlib.sha256("\x1f".join([TRANSFORM_VERSION, *map(str, parts)]).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def _tokens(text):
    return [(m.start(), m.end(), m.group()) for m in _TOKEN_RE.finditer(text)]


def _logic_spans(text):
    """Logic phrases of ``text`` written exactly as the lexicon lists them (no other inflection)."""
    toks = _tokens(text)
    if not toks:
        return []
    lex = logic_lexicon()
    out = []
    for i, j, c, s in lex.match([t[2].lower() for t in toks]):
        a, b = toks[i][0], toks[j - 1][1]
        if text[a:b].lower() in lex.phrases.get((c, s), ()):
            out.append((a, b, c, s))
    return out


def _splice(text, a, b, new):
    out = text[:a] + new + text[b:]
    return re.sub(r"\s{2,}", " ", out).replace(" ,", ",").replace(" .", ".").strip()


def _match_case(old, new):
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


# ------------------------------------------------------------------------------------------------ flips


def _flip_logic(text, rng, cls=None):
    lex = logic_lexicon()
    group_of = _group_of()
    spans = [s for s in _logic_spans(text) if (s[2], s[3]) in group_of and (cls is None or s[2] == cls)]
    if not spans:
        return None
    a, b, c, sense = rng.choice(spans)
    s2 = rng.choice([s for s in group_of[(c, sense)] if s != sense])
    phrase = rng.choice(lex.phrases[(c, s2)])
    return _splice(text, a, b, _match_case(text[a:b], phrase)), f"logic:{c}"


def _drop_logic(text, rng):
    spans = [s for s in _logic_spans(text) if (s[2], s[3]) in _DROPPABLE]
    if not spans:
        return None
    a, b, c, _ = rng.choice(spans)
    return _splice(text, a, b, ""), f"drop:{c}"


def _flip_polarity(text, rng):
    m = list(_NOT_RE.finditer(text))
    if m and rng.random() < 0.5:
        x = rng.choice(m)
        return _splice(text, x.start(), x.end(), ""), "polarity"
    aux = list(_AUX_RE.finditer(text))
    if aux:
        x = rng.choice(aux)
        return _splice(text, x.end(), x.end(), " not"), "polarity"
    if m:
        x = m[0]
        return _splice(text, x.start(), x.end(), ""), "polarity"
    return None


def _flip_value(text, rng, other_values):
    vals = [v for v in read_values(text) if v.kind in ("num", "qty", "year", "month", "weekday", "rate")]
    if not vals:
        return None
    v = rng.choice(vals)
    old = text[v.start:v.end]
    if other_values and rng.random() < 0.4:
        cand = [o for o in other_values if o != old]
        if cand:
            return _splice(text, v.start, v.end, rng.choice(cand)), "value"
    digits = re.search(r"\d[\d,]*(?:\.\d+)?", old)
    if digits:
        raw = digits.group().replace(",", "")
        try:
            x = float(raw)
        except ValueError:
            return None
        if v.kind == "year":
            y = int(x) + rng.choice([-3, -2, -1, 1, 2, 3, 10])
            new_num = str(y)
        else:
            factor = rng.choice([0.5, 0.75, 1.25, 1.5, 2.0, 3.0])
            y = x * factor
            if y == x:
                y = x + 1
            new_num = f"{y:,.0f}" if x.is_integer() and "," in digits.group() else (
                str(int(round(y))) if x.is_integer() else f"{y:.1f}")
            if new_num == digits.group():
                new_num = str(int(x) + 1) if x.is_integer() else f"{x + 1:.1f}"
        new = old[:digits.start()] + new_num + old[digits.end():]
        return _splice(text, v.start, v.end, new), "value"
    from ._values import RATE_WORDS

    if v.kind == "rate":
        return _splice(text, v.start, v.end, rng.choice([w for w in RATE_WORDS if w not in old.lower()])), "value"
    return None


def _names(text):
    from ..text import STOP_WORDS

    out = []
    for m in _NAME_RE.finditer(text):
        first = m.group().split()[0].lower()
        if m.start() == 0 or first in STOP_WORDS or not text[:m.start()].strip(" \"'(\u201c") \
                or logic_lexicon().match([first]):
            continue
        out.append((m.start(), m.end(), m.group()))
    return out


def _borrow_name(text, rng, other_names):
    mine = _names(text)
    if not mine:
        return None
    cand = [n for n in other_names if n not in text]
    if not cand:
        return None
    a, b, _ = rng.choice(mine)
    return _splice(text, a, b, rng.choice(cand)), "borrow:name"


def _content_tokens(text):
    from ..text import STOP_WORDS

    covered = set()
    for a, b, _, _ in _logic_spans(text):
        covered.update(range(a, b))
    for v in read_values(text):
        covered.update(range(v.start, v.end))
    return [(a, b, w) for a, b, w in _tokens(text)
            if w.lower() not in STOP_WORDS and len(w) > 3 and w[:1].islower() and a not in covered]


def _borrow_word(text, rng, other_words):
    mine = _content_tokens(text)
    if not mine or not other_words:
        return None
    lows = {w.lower() for _, _, w in mine}
    cand = [w for w in other_words if w.lower() not in lows and w.lower() not in text.lower()]
    if not cand:
        return None
    a, b, w = rng.choice(mine)
    # keep the word's rough form: a plural for a plural
    pick = [c for c in cand if c.endswith("s") == w.endswith("s")] or cand
    return _splice(text, a, b, rng.choice(pick)), "borrow:word"


def _swap_names(text, rng):
    mine = _names(text)
    distinct = {m[2] for m in mine}
    if len(distinct) < 2:
        return None
    (a1, b1, n1), (a2, b2, n2) = sorted(rng.sample([m for m in mine], 2))
    between = [w.lower() for w in _TOKEN_RE.findall(text[b1:a2])]
    if n1 == n2 or not [w for w in between if w not in _LIST_WORDS]:
        return None  # names of one list ("A, B and C") keep their meaning in any order
    return text[:a1] + n2 + text[b1:a2] + n1 + text[b2:], "swap"


_OPP: dict = {}
for _a, _b in ANTONYM_PAIRS:
    if " " not in _a and " " not in _b:
        _OPP.setdefault(_a, []).append(_b)
        _OPP.setdefault(_b, []).append(_a)


def _opposite(text, rng):
    toks = [(a, b, w) for a, b, w in _tokens(text) if w.lower() in _OPP]
    if not toks:
        return None
    a, b, w = rng.choice(toks)
    return _splice(text, a, b, _match_case(w, rng.choice(_OPP[w.lower()]))), "opposite"


# ------------------------------------------------------------------------------------------------ preserving


def _synonym(text, rng):

    groups = _synonym_groups()
    toks = [(a, b, w) for a, b, w in _tokens(text) if w.lower() in groups]
    if not toks:
        return None
    out = text
    for a, b, w in sorted(rng.sample(toks, min(len(toks), rng.choice([1, 2, 3]))), reverse=True):
        out = out[:a] + _match_case(w, rng.choice(groups[w.lower()])) + out[b:]
    return out, "synonym"


_SYN: dict = {}


def _synonym_groups():
    if not _SYN:
        from ._lexicon import SYNONYMS_FILE, _data_rows

        for line in _data_rows(SYNONYMS_FILE):
            g = [x.strip() for x in line.split("\t") if x.strip()]
            for w in g:
                if " " not in w:
                    _SYN.setdefault(w, []).extend(x for x in g if x != w)
    return _SYN


def _same_sense(text, rng):
    lex = logic_lexicon()
    spans = [s for s in _logic_spans(text) if len(lex.phrases.get((s[2], s[3]), ())) > 1]
    if not spans:
        return None
    a, b, c, s = rng.choice(spans)
    old = text[a:b].lower()
    cand = [p for p in lex.phrases[(c, s)] if p != old]
    if not cand:
        return None
    return _splice(text, a, b, _match_case(text[a:b], rng.choice(cand))), "same_sense"


def _number_word(text, rng):
    m = [x for x in re.finditer(r"(?<![\d.,$€£])\b(\d{1,2})\b(?![.,]\d)", text) if x.group(1) in _SMALL]
    if not m:
        return None
    x = rng.choice(m)
    return _splice(text, x.start(), x.end(), _SMALL[x.group(1)]), "number_word"


def _cut(text, rng):
    parts = [m.start() for m in re.finditer(r",\s", text)]
    if not parts:
        return None
    p = rng.choice(parts)
    left, right = text[:p].strip(), text[p + 1:].strip()
    piece = left if len(left) >= len(right) else right
    if len(piece.split()) < 5:
        return None
    piece = piece[:1].upper() + piece[1:]
    return (piece if piece.endswith((".", "!", "?")) else piece + "."), "cut"


_PRESERVE = (_synonym, _same_sense, _number_word, _cut)


# ------------------------------------------------------------------------------------------------ driver


def _context_material(sentences, skip=None):
    others = [t for t in sentences if t != skip]
    names = list(dict.fromkeys(n for o in others for _, _, n in _names(o)))
    words = list(dict.fromkeys(w for o in others for _, _, w in _content_tokens(o)))
    values = list(dict.fromkeys(o[v.start:v.end] for o in others for v in read_values(o)
                                if v.kind in ("num", "qty", "year")))
    return names, words, values


def flip_claim(text: str, sentences, *, rng, exclude=()):
    """One label-flipping transformation of ``text`` (a claim or a sentence), borrowing names, words and
    values from ``sentences`` (the context's); ``(new text, tag)`` or ``None`` when none applies."""
    names, words, values = _context_material(sentences, skip=text)
    flips = [
        lambda: _flip_logic(text, rng),
        lambda: _drop_logic(text, rng),
        lambda: _flip_polarity(text, rng),
        lambda: _flip_value(text, rng, values),
        lambda: _borrow_name(text, rng, names),
        lambda: _borrow_word(text, rng, words),
        lambda: _swap_names(text, rng),
        lambda: _opposite(text, rng),
    ]
    rng.shuffle(flips)
    for fn in flips:
        got = fn()
        if got is not None and got[1] not in exclude and got[0] != text and got[0].strip():
            return got
    return None


def preserve_claim(text: str, *, rng):
    """One label-preserving transformation of ``text``: ``(new text, tag)`` or ``None``."""
    pres = list(_PRESERVE)
    rng.shuffle(pres)
    for fn in pres:
        got = fn(text, rng)
        if got is not None and got[0].strip() and got[0] != text:
            return got
    return None


def transform_evidence(chunks, *, seed: int = 0, rate: float = 0.5, n_flips: int = 2, exclude=(),
                       max_sentences: int = 6) -> list[TransformedClaim]:
    """Claims made from the sentences of one context (see the module docstring).

    Parameters
    ----------
    chunks : list of str
        The context's evidence texts.
    seed : int
    rate : float
        Share of the context's sentences used (at most ``max_sentences``).
    n_flips : int
        Label-flipping claims per sentence used (each of another kind when possible); every
        used sentence also gives one label-preserving claim.
    exclude : sequence of str
        Flip tags (:data:`FLIP_TAGS`) not to produce (leave-one-type-out).

    Returns
    -------
    list of TransformedClaim
    """
    exclude = set(exclude)
    sents = []
    for text in chunks:
        for s, e in split_sentences(text):
            t = text[s:e].strip()
            if 6 <= len(t.split()) <= 60:
                sents.append(t)
    if not sents:
        return []
    key = "\x1e".join(chunks)
    rng = _rng(seed, key)
    k = min(max_sentences, max(1, int(round(rate * len(sents)))))
    chosen = rng.sample(range(len(sents)), min(k, len(sents)))
    out: list[TransformedClaim] = []
    for i in chosen:
        src = sents[i]
        others = [sents[j] for j in range(len(sents)) if j != i]
        other_names = list(dict.fromkeys(n for o in others for _, _, n in _names(o)))
        other_words = list(dict.fromkeys(w for o in others for _, _, w in _content_tokens(o)))
        other_values = list(dict.fromkeys(o[v.start:v.end] for o in others for v in read_values(o)
                                          if v.kind in ("num", "qty", "year")))
        r = _rng(seed, key, i)
        flips = [
            lambda: _flip_logic(src, r),
            lambda: _drop_logic(src, r),
            lambda: _flip_polarity(src, r),
            lambda: _flip_value(src, r, other_values),
            lambda: _borrow_name(src, r, other_names),
            lambda: _borrow_word(src, r, other_words),
            lambda: _swap_names(src, r),
            lambda: _opposite(src, r),
        ]
        r.shuffle(flips)
        made = 0
        for fn in flips:
            if made >= n_flips:
                break
            got = fn()
            if got is None or got[1] in exclude or got[0] == src or not got[0].strip():
                continue
            out.append(TransformedClaim(got[0], 1, got[1], src))
            made += 1
        pres = list(_PRESERVE)
        r.shuffle(pres)
        for fn in pres:
            got = fn(src, r)
            if got is not None and got[0].strip():
                out.append(TransformedClaim(got[0], 0, got[1], src))
                break
        else:
            out.append(TransformedClaim(src, 0, "copy", src))
    return out
