"""The small RAGTruth sample shipped inside the package."""

from __future__ import annotations

from pathlib import Path

__all__ = ["sample_path", "load_sample"]


def sample_path() -> Path:
    """Folder of the embedded sample (RAGTruth original schema, MIT licence).

    It holds a few sources of each task with all their responses from the
    shared RAGTruth copy, so that the CLI, the notebook and the tests run on
    a fresh clone with nothing else.  See ``sample/LICENSE`` for RAGTruth's
    MIT notice.

    Examples
    --------
    >>> sorted(p.name for p in sample_path().iterdir())
    ['LICENSE', 'README.md', 'response.jsonl', 'source_info.jsonl']
    """
    return Path(__file__).resolve().parent / "sample"


def load_sample(**kwargs):
    """Load the embedded sample with :func:`evqual.data.load_ragtruth`."""
    from ._loaders import load_ragtruth

    return load_ragtruth(sample_path(), **kwargs)
