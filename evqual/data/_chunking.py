"""Evidence chunking per task (seed 004, section III) and query derivation.

===========  ==============================================================
context      chunks
===========  ==============================================================
QA string    one chunk per ``passage N:`` marker (id ``"passage N"``), the
             marker itself excluded from the chunk text
Summary /    one chunk per sentence (id ``"sentence N"``, 1-based), using
other str    :func:`evqual.text.split_sentences`
Data2txt     the structured record is rendered as text, one line per chunk:
record       one ``key / sub key: value`` line per scalar leaf (id = dotted
             key path, e.g. ``"attributes.BusinessParking.garage"``), lists
             of scalars joined by ``", "``, and one line per element of a list
             of records, such as each review (id ``"review_info[0]"``)
Data2txt     a JSON object string is parsed and rendered as above; any other
string       string gives one chunk per non-empty line (id ``"line N"``)
list of str  one chunk per element (id ``"chunk N"``), joined by a blank line
===========  ==============================================================
"""

from __future__ import annotations

import json
import re

from ..text import split_sentences
from ._json import MAX_DEPTH, LongInt, json_depth, loads_bounded
from ._records import Chunk

__all__ = ["chunk_context", "render_structured", "derive_query", "TASK_QUERIES"]

TASK_QUERIES = {
    "Summary": "Summarize the following news article.",
    "Data2txt": (
        "Write an objective overview about the following local business based only "
        "on the provided structured data."
    ),
}
"""Fixed queries for tasks whose prompt is not a question.

RAGTruth's Summary and Data2txt prompts are missing from part of the data, and
they only vary by a word count; evqual uses these fixed instructions for every
Summary and Data2txt example so that features never depend on whether a prompt
happened to be available.
"""

_PASSAGE_RE = re.compile(r"(?im)^[ \t]*passage[ \t]*(\d+)[ \t]*:[ \t]*")
_CAMEL_RE = re.compile(r"(?<=[A-Za-z0-9][a-z0-9])(?=[A-Z][a-z]{2,})|(?<=[a-z]{2})(?=[A-Z]{2,}(?:$|[^a-z]))")
"""Where a CamelCase record key splits into words: before a capitalised word of three or more letters
("OutdoorSeating", "GoodForKids") or a final acronym ("HasTV"), never inside a short brand-like word
("WiFi", "iPhone", "eBay")."""


def derive_query(task_type: str | None, question: str | None = None) -> str:
    """The query for an example: the question for QA, a fixed instruction otherwise.

    Examples
    --------
    >>> derive_query("QA", "what is rba")
    'what is rba'
    >>> derive_query("Summary")
    'Summarize the following news article.'
    """
    if question:
        return question
    return TASK_QUERIES.get(task_type or "", "")


def _humanize(key: str) -> str:
    """A record key as words.

    >>> [_humanize(k) for k in ("OutdoorSeating", "WiFi", "iPhone", "HasTV", "RestaurantsPriceRange2", "pets_allowed")]
    ['Outdoor Seating', 'WiFi', 'iPhone', 'Has TV', 'Restaurants Price Range2', 'pets allowed']
    """
    return _CAMEL_RE.sub(" ", str(key)).replace("_", " ")


def _scalar(value) -> str:
    if isinstance(value, str):
        return " ".join(value.split())  # one line per chunk: fold new lines
    if isinstance(value, LongInt):
        return value.text
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # a non-JSON value given through the Python API
        return " ".join(str(value).split())


def render_structured(record: dict) -> tuple[str, tuple[Chunk, ...]]:
    """Render a structured (Data2txt) record as text with one chunk per line.

    Returns
    -------
    context : str
        The rendered text.
    chunks : tuple of Chunk
        One chunk per line, ids are key paths.

    Examples
    --------
    >>> text, chunks = render_structured({"name": "Finch & Fork", "hours": {"Monday": "9:0-14:0"}})
    >>> print(text)
    name: Finch & Fork
    hours / Monday: 9:0-14:0
    >>> [c.id for c in chunks]
    ['name', 'hours.Monday']
    """
    if json_depth(record, MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(f"the context record is nested deeper than {MAX_DEPTH} levels")
    lines: list[tuple[str, str]] = []

    def walk(value, path: list[str], label: list[str]):
        if isinstance(value, dict):
            if not value:
                lines.append((".".join(path), f"{' / '.join(label)}: {{}}"))
            for k, v in value.items():
                walk(v, path + [str(k)], label + [_humanize(k)])
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                parts = [f"{_humanize(k)}: {_scalar(v)}" for k, v in item.items()]
                pid = ".".join(path) + f"[{i}]"
                lines.append((pid, f"{' / '.join(label)}: " + "; ".join(parts)))
        elif isinstance(value, list):
            lines.append((".".join(path), f"{' / '.join(label)}: " + ", ".join(_scalar(v) for v in value)))
        else:
            lines.append((".".join(path), f"{' / '.join(label)}: {_scalar(value)}"))

    walk(record, [], [])
    text_parts, chunks, pos = [], [], 0
    for cid, line in lines:
        chunks.append(Chunk(cid or "record", pos, pos + len(line)))
        text_parts.append(line)
        pos += len(line) + 1
    return "\n".join(text_parts), tuple(chunks)


def _chunk_passages(context: str) -> tuple[Chunk, ...] | None:
    marks = list(_PASSAGE_RE.finditer(context))
    if not marks:
        return None
    chunks = []
    for i, m in enumerate(marks):
        start = m.end()
        end = marks[i + 1].start() if i + 1 < len(marks) else len(context)
        seg = context[start:end]
        stripped = seg.rstrip()
        chunks.append(Chunk(f"passage {m.group(1)}", start, start + len(stripped)))
    return tuple(chunks)


def _chunk_lines(context: str) -> tuple[Chunk, ...]:
    chunks, pos, n = [], 0, 0
    for line in context.split("\n"):
        stripped = line.strip()
        if stripped:
            n += 1
            lead = len(line) - len(line.lstrip())
            chunks.append(Chunk(f"line {n}", pos + lead, pos + lead + len(stripped)))
        pos += len(line) + 1
    return tuple(chunks)


def _chunk_sentences(context: str) -> tuple[Chunk, ...]:
    return tuple(Chunk(f"sentence {i + 1}", s, e) for i, (s, e) in enumerate(split_sentences(context)))


def chunk_context(context, task_type: str | None = None) -> tuple[str, tuple[Chunk, ...]]:
    """Turn any supported context into ``(context_text, chunks)``.

    Parameters
    ----------
    context : str, list of str, or dict
        The evidence. A dict is a structured (Data2txt) record.
    task_type : str or None
        Selects the strategy for strings (see the module docstring).

    Returns
    -------
    context_text : str
    chunks : tuple of Chunk

    Raises
    ------
    TypeError
        If ``context`` is none of the supported types.
    ValueError
        If a record (dict) is nested deeper than 64 levels (a string holding
        such JSON is chunked as lines of text instead).

    Examples
    --------
    >>> text, chunks = chunk_context(["Paris is in France.", "It has 2 million people."])
    >>> [(c.id, text[c.start:c.end]) for c in chunks]
    [('chunk 1', 'Paris is in France.'), ('chunk 2', 'It has 2 million people.')]
    """
    if isinstance(context, dict):
        return render_structured(context)
    if isinstance(context, (list, tuple)):
        parts, chunks, pos = [], [], 0
        for i, item in enumerate(context):
            if not isinstance(item, str):
                raise TypeError(f"context[{i}] must be a string; got {type(item).__name__}.")
            parts.append(item)
            chunks.append(Chunk(f"chunk {i + 1}", pos, pos + len(item)))
            pos += len(item) + 2
        return "\n\n".join(parts), tuple(chunks)
    if not isinstance(context, str):
        raise TypeError(f"context must be a string, a list of strings or a dict; got {type(context).__name__}.")
    if task_type == "Data2txt":
        stripped = context.strip()
        if stripped.startswith("{"):
            try:
                record = loads_bounded(stripped)
            except ValueError:  # not JSON, or nested too deeply: chunked as lines of text
                record = None
            if isinstance(record, dict):
                return render_structured(record)
        return context, _chunk_lines(context)
    passages = _chunk_passages(context)
    if passages is not None:
        return context, passages
    return context, _chunk_sentences(context)
