"""The in-memory record types: :class:`Span`, :class:`Chunk`, :class:`Example`."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Span", "Chunk", "Example"]


@dataclass(frozen=True)
class Span:
    """A gold hallucination span in an output, by character offsets.

    Attributes
    ----------
    start, end : int
        ``output[start:end]`` is the span.
    text : str or None
        The span text as annotated (checked against the output on load).
    label_type : str or None
        RAGTruth type: ``"Evident Conflict"``, ``"Subtle Conflict"``,
        ``"Evident Baseless Info"`` or ``"Subtle Baseless Info"``.
    implicit_true : bool
        RAGTruth's flag for content that is true but not in the source.
    due_to_null : bool
        RAGTruth's flag for hallucinations caused by null values in Data2txt.
    meta : str or None
        The annotator's note.
    """

    start: int
    end: int
    text: str | None = None
    label_type: str | None = None
    implicit_true: bool = False
    due_to_null: bool = False
    meta: str | None = None


@dataclass(frozen=True)
class Chunk:
    """An evidence chunk: an id and its character offsets in the context.

    ``context[start:end]`` is the chunk text; ``id`` is stable and readable
    (``"passage 2"``, ``"sentence 4"``, ``"hours.Monday"``, ``"review_info[0]"``,
    ``"chunk 1"``).
    """

    id: str
    start: int
    end: int


@dataclass(frozen=True)
class Example:
    """One (query, context, output) triple with its metadata and labels.

    Build examples with :func:`evqual.data.make_example` (which chunks the
    context) or get them from a loader.

    Attributes
    ----------
    id : str
        Response id.
    query : str
        The user's request (see :func:`evqual.data.derive_query`).
    context : str
        The evidence as one string; chunks index into it.
    output : str
        The generated answer under audit.
    chunks : tuple of Chunk
        Evidence chunks, in context order.
    task_type : str or None
        ``"QA"``, ``"Summary"``, ``"Data2txt"`` or any user string.
    source_id, split, model, quality : str or None
        Metadata; ``None`` when unknown (never imputed).
    temperature : float or None
        Generation temperature; ``None`` when unknown.
    spans : tuple of Span or None
        Gold hallucination spans; ``None`` when the example has no span
        annotation (unlabelled, or labelled at response level only).
    label : int or None
        Response-level gold label (1 = hallucinated); ``None`` if unknown.
    dataset : str or None
        The source the example comes from (``"ragtruth"``, ``"halueval_dialogue"``, a user's own name):
        set by :func:`evqual.data.load_sources` from the source's name, or read from a generic row's
        ``dataset`` field.  Per-source tables and the ``transfer`` protocol group by it.
    origin : str or None
        ``"file:line"`` the example was read from.
    """

    id: str
    query: str
    context: str
    output: str
    chunks: tuple[Chunk, ...]
    task_type: str | None = None
    source_id: str | None = None
    split: str | None = None
    model: str | None = None
    temperature: float | None = None
    quality: str | None = None
    spans: tuple[Span, ...] | None = None
    label: int | None = None
    dataset: str | None = None
    origin: str | None = field(default=None, compare=False)

    def chunk_text(self, i: int) -> str:
        """Text of chunk ``i``."""
        c = self.chunks[i]
        return self.context[c.start:c.end]

    @property
    def chunk_texts(self) -> list[str]:
        """Texts of all chunks, in order."""
        ctx = self.context
        return [ctx[c.start:c.end] for c in self.chunks]
