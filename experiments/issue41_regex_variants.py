"""Issue 41, session 6: faster spellings of the reading path's ignored-case patterns, tried and not kept.

    python experiments/issue41_regex_variants.py ../shared/data/ragtruth

Two rewrites that match exactly what the patterns match (each is checked on the sentences it is timed on):

1. tighter leading look-aheads for the number and time patterns of ``evqual/text/_numbers.py`` (a position must
   be followed by a digit, not only be a digit, space or letter that could start one);
2. the patterns without ``re.IGNORECASE``: each ASCII letter written as the class of the characters re's
   ignored case pairs with it (``i`` also pairs with U+0130 and U+0131, ``s`` with U+017F, ``k`` with U+212A,
   checked here over the first 0x30000 code points).

It prints the microseconds per sentence of each pattern and its rewrite over the sentences of RAGTruth's first
1,500 answers and their contexts.  Result (``docs/RESULTS.md``, issue 41 session 6;
``docs/bench/issue41_s6_regex_variants.txt``): the look-aheads are slower (an alternation in a look-ahead costs
more than the position it saves), and the rewrites save 0.05-0.9 us per sentence (the time pattern most: 3.1 ->
2.2 us on a sentence with a digit), well under 1% of an answer in all: not worth a rewriter of regular
expressions in the library.
"""

from __future__ import annotations

import re
import sys
import time
import warnings

from evqual.data import load_data
from evqual.features import _novelty, _surface
from evqual.text import _claims, _numbers, split_sentences

_EXTRA = {"i": "\u0130\u0131", "s": "\u017f", "k": "\u212a"}


def _letters(c: str) -> str:
    low = c.lower()
    return low + low.upper() + _EXTRA.get(low, "")


def caseless(pattern: str) -> str:
    """``pattern`` rewritten to match without ``re.IGNORECASE`` what it matches with it (ASCII letters only)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            width = 6 if pattern[i + 1] == "u" else 4 if pattern[i + 1] == "x" else 2
            out.append(pattern[i:i + width])
            i += width
            continue
        if in_class:
            in_class = c != "]"
            out.append(_letters(c) if c.isascii() and c.isalpha() else c)
        elif c == "[":
            in_class = True
            out.append(c)
        elif pattern.startswith("(?P<", i):
            j = pattern.index(">", i)
            out.append(pattern[i:j + 1])
            i = j + 1
            continue
        elif pattern.startswith("(?", i):
            m = re.match(r"\(\?(?::|=|!|<=|<!)", pattern[i:])
            out.append(m.group())
            i += len(m.group())
            continue
        elif c.isascii() and c.isalpha():
            out.append("[" + _letters(c) + "]")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _per_sentence(pattern, texts, passes: int = 5) -> float:
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        for t in texts:
            for _m in pattern.finditer(t):
                pass
        best = min(best, time.perf_counter() - start)
    return 1e6 * best / len(texts)


def _same(a, b, texts) -> None:
    for t in texts:
        got = [m.span() + m.groups() for m in b.finditer(t)]
        assert [m.span() + m.groups() for m in a.finditer(t)] == got, t


def main(data: str) -> None:
    warnings.simplefilter("ignore")
    for letter in "abcdefghijklmnopqrstuvwxyz":
        paired = {chr(o) for o in range(0x30000) if re.fullmatch(letter, chr(o), re.IGNORECASE)}
        assert paired == set(_letters(letter)), (letter, paired)
    texts, seen = [], set()
    for ex in load_data(data).examples[:1500]:
        texts += [ex.output[s:e] for s, e in split_sentences(ex.output)]
        if ex.context not in seen:
            seen.add(ex.context)
            texts += [ex.context[s:e] for s, e in split_sentences(ex.context)]
    digits = [t for t in texts if re.search(r"\d", t)]
    print(f"{len(texts)} sentences, {len(digits)} with a digit")
    looser = {
        "time": (_numbers._TIME_RE, r"(?=[0-9]|noon|midnight)", r"(?=[0-9nNmM])"),
        "number": (_numbers._NUMBER_RE, r"(?=[$\u20ac\u00a3\u00a5\d]|\s\.?\d|\.\d)", r"(?=[$\u20ac\u00a3\u00a5\s\d.])"),
    }
    for name, (pat, head, old_head) in looser.items():
        tight = re.compile(head + pat.pattern[len(old_head):], pat.flags)
        _same(pat, tight, digits)
        print(f"look-ahead, {name}: {_per_sentence(pat, digits):.2f} -> {_per_sentence(tight, digits):.2f} us "
              "per sentence with a digit")
    for name, pat in [("time", _numbers._TIME_RE), ("number", _numbers._NUMBER_RE),
                      ("negation", _novelty.NEGATION_RE), ("claim split", _claims._SPLIT_RE),
                      ("refusal", _surface._REFUSAL_RE)]:
        plain = re.compile(caseless(pat.pattern), pat.flags & ~re.IGNORECASE)
        _same(pat, plain, texts)
        print(f"without the flag, {name}: {_per_sentence(pat, digits):.2f} -> {_per_sentence(plain, digits):.2f} us "
              f"per sentence with a digit, {_per_sentence(pat, texts):.2f} -> {_per_sentence(plain, texts):.2f} "
              "per sentence")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ragtruth")
