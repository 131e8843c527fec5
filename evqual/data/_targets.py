"""Targets at the three granularities of seed 004.

* **response**: 1 when the output has at least one (kept) span;
* **sentence**: 1 when the sentence's character range overlaps a kept span;
* **character**: the union of the kept spans' character ranges.

By default every span is kept, as RAGTruth's official evaluation code does;
``exclude_implicit_true=True`` drops spans flagged ``implicit_true`` (true
content absent from the source), which some papers do.
"""

from __future__ import annotations

from ..text import split_sentences
from ._records import Example, Span

__all__ = ["kept_spans", "response_label", "sentence_targets", "char_spans", "merge_intervals"]


def kept_spans(example: Example, *, exclude_implicit_true: bool = False) -> tuple[Span, ...] | None:
    """The spans that count as hallucinated, or ``None`` if spans are unknown."""
    if example.spans is None:
        return None
    if not exclude_implicit_true:
        return example.spans
    return tuple(s for s in example.spans if not s.implicit_true)


def response_label(example: Example, *, exclude_implicit_true: bool = False) -> int | None:
    """Response-level target: 1 hallucinated, 0 not, ``None`` unknown.

    With span annotations the label is derived from the (kept) spans;
    without them the example's own ``label`` is used.

    Examples
    --------
    >>> from evqual.data import make_example, Span
    >>> ex = make_example(query="q", context="c", output="abc", spans=[Span(0, 1)])
    >>> response_label(ex)
    1
    """
    spans = kept_spans(example, exclude_implicit_true=exclude_implicit_true)
    if spans is None:
        return example.label
    if spans:
        return 1
    # spans known and empty; an explicit positive label without spans wins
    if example.label == 1 and not example.spans:
        return 1
    return 0


def merge_intervals(intervals) -> list[tuple[int, int]]:
    """Sorted union of ``(start, end)`` intervals; empty ones are dropped.

    >>> merge_intervals([(5, 8), (0, 2), (1, 3), (8, 9)])
    [(0, 3), (5, 9)]
    """
    out: list[list[int]] = []
    for s, e in sorted((s, e) for s, e in intervals if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def char_spans(example: Example, *, exclude_implicit_true: bool = False) -> list[tuple[int, int]] | None:
    """Character-level target: merged hallucinated ranges of the output."""
    spans = kept_spans(example, exclude_implicit_true=exclude_implicit_true)
    if spans is None:
        return None
    return merge_intervals((s.start, s.end) for s in spans)


def sentence_targets(example: Example, *, exclude_implicit_true: bool = False):
    """Sentence-level targets.

    Returns
    -------
    list of dict
        One dict per sentence of the output, in order, with keys
        ``index, start, end, label`` (``None`` when spans are unknown) and
        ``label_types`` (sorted types of the overlapping spans).

    Examples
    --------
    >>> from evqual.data import make_example, Span
    >>> ex = make_example(query="q", context="c", output="One. Two.", spans=[Span(5, 8)])
    >>> [(t["start"], t["end"], t["label"]) for t in sentence_targets(ex)]
    [(0, 4, 0), (5, 9, 1)]
    """
    spans = kept_spans(example, exclude_implicit_true=exclude_implicit_true)
    out = []
    for i, (s, e) in enumerate(split_sentences(example.output)):
        if spans is None:
            label, types = None, []
        else:
            hits = [sp for sp in spans if sp.start < e and s < sp.end]
            label = int(bool(hits))
            types = sorted({sp.label_type for sp in hits if sp.label_type})
        out.append({"index": i, "start": s, "end": e, "label": label, "label_types": types})
    return out
