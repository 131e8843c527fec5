"""Bounded JSON: parsing and checking untrusted values without unbounded cost.

Every JSON text evqual reads from a user (an input line, a Data2txt record held
in a string, a span list in a table cell) goes through :func:`loads_bounded`,
and every value that reaches the featurizer through :func:`check_value`, so
that no input can end a run with an exception the loaders do not turn into a
row-level issue:

* an integer literal longer than :data:`MAX_INT_DIGITS` digits is not
  converted (Python refuses more than 4,300 digits and the conversion is
  quadratic); it becomes a :class:`LongInt` marker, which no field accepts;
* nesting deeper than :data:`MAX_DEPTH` levels (or deep enough to exhaust the
  parser's recursion) is refused;
* text with an unpaired UTF-16 surrogate (``"\\ud800"`` in JSON), which is not
  valid Unicode and cannot be written as UTF-8, is refused.

Examples
--------
>>> v = loads_bounded('{"a": [1, 2], "b": ' + "9" * 5000 + '}')
>>> v["a"], type(v["b"]).__name__
([1, 2], 'LongInt')
>>> check_value(v, "row")
'row.b: an integer literal of 5000 digits (more than 1000)'
>>> check_value({"x": "a\\ud800b"}, "row")
'row.x: unpaired surrogate U+D800 at character 1 (not valid Unicode text)'
>>> loads_bounded("[" * 100 + "]" * 100)
Traceback (most recent call last):
...
evqual.data._json.DepthError: nested deeper than 64 levels
"""

from __future__ import annotations

import json
import math
import re

__all__ = ["DepthError", "LongInt", "loads_bounded", "loads_literal", "check_value", "json_depth", "MAX_DEPTH",
           "MAX_INT_DIGITS", "find_surrogate"]

MAX_DEPTH = 64
"""Deepest nesting of lists and objects accepted in any JSON evqual reads."""

MAX_INT_DIGITS = 1000
"""Longest integer literal converted to ``int``; longer ones become :class:`LongInt`."""

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class LongInt:
    """An integer literal too long to convert; keeps its digits, accepted by no field."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"<integer literal of {len(self.text.lstrip('-'))} digits>"

    def __eq__(self, other) -> bool:
        return isinstance(other, LongInt) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("LongInt", self.text))


class DepthError(ValueError):
    """JSON nested deeper than the limit; ``field`` names the top-level key holding it, when known."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _parse_int(text: str):
    return int(text) if len(text) <= MAX_INT_DIGITS else LongInt(text)


def json_depth(value, limit: int | None = None) -> int:
    """Nesting depth of lists/dicts in ``value`` (a scalar is 0), computed without recursion.

    Stops early and returns ``limit + 1`` once ``limit`` is exceeded.

    >>> json_depth([1, {"a": [2]}]), json_depth("x")
    (3, 0)
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            continue
        if d > deepest:
            deepest = d
            if limit is not None and deepest > limit:
                return deepest
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return deepest


def loads_bounded(text, *, max_depth: int = MAX_DEPTH):
    """``json.loads`` that never raises anything but :class:`ValueError` for bad or hostile text.

    Parameters
    ----------
    text : str or bytes
    max_depth : int, default=MAX_DEPTH
        Deepest nesting accepted.

    Raises
    ------
    ValueError
        Invalid JSON (a :class:`json.JSONDecodeError`, with position) or
        nesting deeper than ``max_depth`` (a :class:`DepthError`).
    """
    try:
        value = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise DepthError(f"nested deeper than {max_depth} levels") from None
    if isinstance(value, (dict, list)) and json_depth(value, max_depth) > max_depth:
        deep = [k for k, v in value.items() if json_depth(v, max_depth - 1) > max_depth - 1] if isinstance(
            value, dict) else []
        raise DepthError(f"nested deeper than {max_depth} levels", deep[0] if deep else None)
    return value


def find_surrogate(text: str) -> int:
    """Position of the first unpaired surrogate in ``text``, or -1."""
    m = _SURROGATE_RE.search(text)
    return m.start() if m else -1


def check_value(value, field: str, *, max_depth: int = MAX_DEPTH) -> str | None:
    """First problem of a parsed value that no evqual field accepts, as ``"field.path: reason"``.

    Checks, without recursion: nesting depth, :class:`LongInt` markers,
    numbers that are not finite (``1e999``, ``NaN``: strict JSON cannot hold
    them) and unpaired surrogates in strings (values and keys). Returns ``None`` when
    the value is clean.
    """
    stack = [(value, field, 0)]
    while stack:
        v, where, depth = stack.pop()
        if isinstance(v, str):
            k = find_surrogate(v)
            if k >= 0:
                return (f"{where}: unpaired surrogate U+{ord(v[k]):04X} at character {k} "
                        "(not valid Unicode text)")
        elif isinstance(v, float) and not math.isfinite(v):
            return f"{where}: {v!r} is not a finite number (strict JSON cannot hold it)"
        elif isinstance(v, LongInt):
            return f"{where}: an integer literal of {len(v.text.lstrip('-'))} digits (more than {MAX_INT_DIGITS})"
        elif isinstance(v, (dict, list, tuple)):
            if depth >= max_depth:
                return f"{where}: nested deeper than {max_depth} levels"
            if isinstance(v, dict):
                items = []
                for k, item in v.items():
                    key = str(k)
                    if isinstance(k, str) and find_surrogate(k) >= 0:
                        return f"{where}: a key holds an unpaired surrogate (not valid Unicode text)"
                    items.append((item, f"{where}.{key}", depth + 1))
                stack.extend(reversed(items))
            else:
                stack.extend(reversed([(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(v)]))
    return None


_LITERAL_TOKEN = re.compile(
    r"""\s*(?:(?P<str>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
    r"|(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<name>True|False|None|true|false|null)\b"
    r"|(?P<punct>[\[\]{}(),:]))",
    re.S,
)
_NAMES = {"True": True, "true": True, "False": False, "false": False, "None": None, "null": None}
_CLOSE = {"[": "]", "(": ")", "{": "}"}


def loads_literal(text: str, *, max_depth: int = MAX_DEPTH):
    """A JSON text or a Python literal of lists, tuples, dicts, strings, numbers, booleans and None.

    A bounded stand-in for :func:`ast.literal_eval`, which can take memory
    without bound on crafted input: one linear pass over the text, nesting
    limited to ``max_depth``, long integers kept as :class:`LongInt`.
    Used for span lists written by pandas (``"[{'start': 1, 'end': 4}]"``).

    Raises
    ------
    ValueError
        When ``text`` is neither.

    Examples
    --------
    >>> loads_literal("[{'start': 1, 'end': 4, 'text': 'it\\\\'s'}, (2, None)]")
    [{'start': 1, 'end': 4, 'text': "it's"}, [2, None]]
    >>> loads_literal('{"a": [true, 1.5]}')
    {'a': [True, 1.5]}
    """
    try:
        return loads_bounded(text, max_depth=max_depth)
    except ValueError:
        pass
    tokens = _LITERAL_TOKEN.finditer(text)
    pos = 0

    def next_token():
        nonlocal pos
        m = next(tokens, None)
        if m is None or m.start() != pos:
            where = pos if m is None else pos
            if text[pos:].strip() == "":
                raise ValueError("unexpected end of the literal")
            raise ValueError(f"not a literal at character {where}")
        pos = m.end()
        return m

    def scalar(m):
        if m.group("str") is not None:
            s = m.group("str")
            if "\\" not in s:
                return s[1:-1]
            import ast

            return ast.literal_eval(s)  # one string literal: linear in its length
        if m.group("num") is not None:
            s = m.group("num")
            if any(c in s for c in ".eE"):
                return float(s)
            return _parse_int(s)
        return _NAMES[m.group("name")]

    # iterative parser: a stack of open containers
    stack: list = []  # entries: [container, closing char, pending key or sentinel, expecting_value]
    root = None
    done = False
    _NO_KEY = object()
    while True:
        m = next_token()
        p = m.group("punct")
        if done:
            raise ValueError(f"unexpected text after the literal at character {m.start()}")
        if p in ("[", "(", "{"):
            if len(stack) >= max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
            value = {} if p == "{" else []
            opened = True
        elif p in ("]", ")", "}"):
            if not stack or _CLOSE[stack[-1][1]] != p:
                raise ValueError(f"unbalanced {p!r} at character {m.start()}")
            value = stack.pop()[0]
            opened = False
        elif p in (",", ":"):
            if not stack:
                raise ValueError(f"unexpected {p!r} at character {m.start()}")
            top = stack[-1]
            if p == ":" and (top[1] != "{" or top[2] is _NO_KEY):
                raise ValueError(f"unexpected ':' at character {m.start()}")
            continue
        else:
            value = scalar(m)
            opened = False
        if opened:
            stack.append([value, p, _NO_KEY])
            continue
        # attach a finished value to its parent
        if not stack:
            root, done = value, True
            if pos == len(text) or not text[pos:].strip():
                return root
            continue
        top = stack[-1]
        if top[1] == "{":
            if top[2] is _NO_KEY:
                if isinstance(value, (list, dict)):
                    raise ValueError("a dict key must be a string or a number")
                top[2] = value
            else:
                top[0][top[2]] = value
                top[2] = _NO_KEY
        else:
            top[0].append(value)
        if len(stack) and pos >= len(text):
            raise ValueError("unexpected end of the literal")
