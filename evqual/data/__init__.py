"""Data layer: loaders, validation, record types, chunking and targets.

>>> from evqual.data import load_data, sample_path
>>> data = load_data(sample_path())
>>> ex = data[0]
>>> ex.task_type in ("QA", "Summary", "Data2txt"), len(ex.chunks) > 0
(True, True)
"""

from ._augment import AUGMENT_VERSIONS, EDIT_TYPES, augment_contrastive
from ._chunking import TASK_QUERIES, chunk_context, derive_query, render_structured
from ._frame import FRAME_COLUMNS, to_frame
from ._json import DepthError, check_value, find_surrogate, loads_bounded
from ._limits import DEFAULT_LIMITS, Limits
from ._loaders import (
    EvqualDataWarning,
    LoadResult,
    default_ragtruth_path,
    detect_layout,
    load_data,
    iter_records,
    load_jsonl,
    load_ragtruth,
    load_table,
)
from ._make import make_example
from ._records import Chunk, Example, Span
from ._sample import load_sample, sample_path
from ._sources import (SourceSpec, group_copies, load_sources, parse_source, plain_path, source_info,
                       trainable_rows, weigh_sources)
from ._targets import char_spans, kept_spans, merge_intervals, response_label, sentence_targets

__all__ = [
    "DepthError",
    "check_value",
    "find_surrogate",
    "loads_bounded",
    "AUGMENT_VERSIONS",
    "EDIT_TYPES",
    "augment_contrastive",
    "DEFAULT_LIMITS",
    "FRAME_COLUMNS",
    "TASK_QUERIES",
    "Chunk",
    "EvqualDataWarning",
    "Example",
    "Limits",
    "LoadResult",
    "Span",
    "SourceSpec",
    "load_sources",
    "parse_source",
    "plain_path",
    "source_info",
    "trainable_rows",
    "group_copies",
    "weigh_sources",
    "char_spans",
    "chunk_context",
    "default_ragtruth_path",
    "derive_query",
    "detect_layout",
    "kept_spans",
    "load_data",
    "iter_records",
    "load_jsonl",
    "load_ragtruth",
    "load_sample",
    "load_table",
    "make_example",
    "merge_intervals",
    "render_structured",
    "response_label",
    "sample_path",
    "sentence_targets",
    "to_frame",
]
