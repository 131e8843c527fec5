"""Building :class:`~evqual.data.Example` objects from plain values."""

from __future__ import annotations

from ._chunking import chunk_context, derive_query
from ._records import Chunk, Example, Span

__all__ = ["make_example"]


def make_example(
    *,
    query: str | None = None,
    context,
    output: str,
    task_type: str | None = None,
    id: str | None = None,
    spans=None,
    label: int | None = None,
    chunks=None,
    source_id: str | None = None,
    split: str | None = None,
    model: str | None = None,
    temperature: float | None = None,
    quality: str | None = None,
    origin: str | None = None,
) -> Example:
    """Make an :class:`Example`, chunking the context.

    Parameters
    ----------
    query : str or None
        The request; ``None`` derives it from ``task_type``
        (:func:`derive_query`).
    context : str, list of str or dict
        The evidence (see :func:`evqual.data.chunk_context`).
    output : str
        The answer under audit.
    task_type : str or None
        ``"QA"``, ``"Summary"``, ``"Data2txt"`` or any string.
    id : str or None
        Defaults to ``"example"``.
    spans : iterable of Span, (start, end) pairs or dicts, or None
        Gold hallucination spans; ``None`` when unknown.
    label : int or None
        Response label when no spans are given.
    chunks : iterable of Chunk or (id, start, end), optional
        Pre-computed chunks for a string context (for instance from
        :func:`to_frame`); they are used as given.
    source_id, split, model, temperature, quality, origin
        Metadata, stored as given.

    Examples
    --------
    >>> ex = make_example(query="Where is Paris?", context=["Paris is in France."],
    ...                   output="Paris is in France.", task_type="QA")
    >>> ex.chunks
    (Chunk(id='chunk 1', start=0, end=19),)
    """
    if chunks is not None and isinstance(context, str):
        text = context
        chunk_tuple = tuple(c if isinstance(c, Chunk) else Chunk(str(c[0]), int(c[1]), int(c[2]))
                            for c in chunks)
    else:
        text, chunk_tuple = chunk_context(context, task_type)
    if spans is not None:
        spans = tuple(_as_span(s) for s in spans)
    return Example(
        id="example" if id is None else str(id),
        query=derive_query(task_type, None) if query is None else query,
        context=text,
        output=output,
        chunks=chunk_tuple,
        task_type=task_type,
        source_id=source_id,
        split=split,
        model=model,
        temperature=temperature,
        quality=quality,
        spans=spans,
        label=label,
        origin=origin,
    )


def _as_span(s) -> Span:
    if isinstance(s, Span):
        return s
    if isinstance(s, dict):
        return Span(
            start=int(s["start"]),
            end=int(s["end"]),
            text=s.get("text"),
            label_type=s.get("label_type", s.get("label")),
            implicit_true=bool(s.get("implicit_true", False)),
            due_to_null=bool(s.get("due_to_null", False)),
            meta=s.get("meta"),
        )
    start, end = s
    return Span(int(start), int(end))
