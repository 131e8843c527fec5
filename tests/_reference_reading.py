"""The engine's span reader as it was before issue 41's session 7 (commit 49d8b51), kept as the reference that
``tests/test_fastpaths.py`` holds the faster reader equal to.  Only the reader's body is copied; the helpers it
calls (``_span_tokens``, ``_is_name``, ``read_values``, the lexicons) are the package's own and have tests of
their own."""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter

from evqual.evidence._lexicon import logic_lexicon, stem, synonym_map
from evqual.evidence._reading import (_NEGATED_SENSE, _NOT_SUPERLATIVE, _STATE_CODES, SpanReading, _is_name,
                                      _span_tokens)
from evqual.evidence._values import read_values
from evqual.text import STOP_WORDS

_POSITION = itemgetter(0, 2)  # an item's token position, then its start (the reader's order until session 14)


def reference_read_span(text: str, start: int = 0, end: int | None = None) -> SpanReading:
    """Read ``text[start:end]`` (offsets of the result are into ``text``)."""
    end = len(text) if end is None else end
    piece = text[start:end]
    toks, plain = _span_tokens(text, start, end)
    lows = [t[2].lower() for t in toks]
    for k, w in enumerate(lows):
        if "'" in w:
            lows[k] = "not" if w.endswith("n't") else w.split("'")[0]
            plain = False
    # plain: the words are the text's TOKEN_PATTERN words (no apostrophe joined, no camel case cut), which
    # the values reader may use instead of cutting the text again
    values = read_values(piece, words=lows if plain else None)
    st = [stem(w) for w in lows]
    items: list[tuple[int, str, int, int]] = []  # (token position, key, start, end)
    covered = [False] * len(toks)
    # values
    value_starts = set()
    tok_starts = [t[0] for t in toks]
    for v in values:
        a, b = v.start + start, v.end + start
        first = None
        # the tokens inside [a, b]: a run from the first starting at or after a (tokens are ordered and do not
        # overlap), found by bisection: linear in values plus tokens, not their product (issue 39)
        k = bisect_left(tok_starts, a)
        while k < len(toks) and toks[k][1] <= b:
            covered[k] = True
            if first is None:
                first = k
            k += 1
        items.append((first if first is not None else 0, "v:" + v.key, a, b, v.raw))
        if first is not None:
            value_starts.add(first)
    # logic words; a negator just before a scalar word turns it ("not more than" is at most,
    # "did not cut" is unchanged) and is then not a negation of its own
    negated = False
    matches = logic_lexicon().match(lows)
    consumed = set()
    def scalar(i, j, cls):
        # a limit word ("over", "under", "more than") is scalar before a value; a comparison word always
        return cls == "comparison" or any(k in value_starts for k in range(j, j + 3))

    # negators by the token they end at, in the order of ``matches`` (a scalar word looks at the negators ending
    # at most two tokens before it: a lookup, not a pass over every match)
    negators_ending: dict = {}
    for order, (i2, j2, c2, _) in enumerate(matches):
        if c2 == "polarity":
            negators_ending.setdefault(j2, []).append((order, i2))

    def negators_before(i):
        return sorted(x for j2 in range(i - 2, i + 1) for x in negators_ending.get(j2, ()))

    for i, j, cls, sense in matches:
        if (cls, sense) in _NEGATED_SENSE and scalar(i, j, cls):
            for _, i2 in negators_before(i):
                if i2 not in consumed:
                    consumed.add(i2)
                    break
    for i, j, cls, sense in matches:
        if any(covered[i:j]) and cls not in ("quantity", "frequency", "comparison"):
            continue
        if cls == "polarity" and i in consumed:
            continue
        if (cls, sense) in _NEGATED_SENSE and scalar(i, j, cls) and any(
                i2 in consumed for _, i2 in negators_before(i)):
            sense = _NEGATED_SENSE[(cls, sense)]
        items.append((i, f"L:{cls}:{sense}", toks[i][0], toks[j - 1][1]))
        if cls == "polarity":
            negated = True
        for k in range(i, j):
            if cls != "role":
                covered[k] = True
    syn = synonym_map()
    for k, (a, b, tok) in enumerate(toks):
        if covered[k]:
            continue
        low = lows[k]
        if tok[:1].isupper() and _is_name(tok, k, toks, text) and low not in STOP_WORDS:  # (a name is capitalised)
            items.append((k, "n:" + _STATE_CODES.get(low, low), a, b))
            continue
        if low in STOP_WORDS or len(low) < 2:
            continue
        s = syn.get(low) or st[k]
        items.append((k, "w:" + s, a, b))
        if low.endswith("est") and len(low) > 5 and low not in _NOT_SUPERLATIVE:
            items.append((k, "L:comparison:superlative", a, b))
    items.sort(key=_POSITION)
    return SpanReading(tuple([t[1] for t in items]), tuple([(t[2], t[3]) for t in items]), negated, len(toks),
                       tuple([t[4] if len(t) > 4 else None for t in items]))
