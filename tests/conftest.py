"""Shared fixtures.

Tests that need the shared RAGTruth copy use the ``ragtruth_path`` fixture,
which skips with a clear reason when the copy is absent (a user's fresh
clone). Its location is ``$EVQUAL_RAGTRUTH`` or ``../shared/data/ragtruth``
relative to the repository root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _ragtruth_dir() -> Path:
    env = os.environ.get("EVQUAL_RAGTRUTH")
    return Path(env) if env else ROOT.parent / "shared" / "data" / "ragtruth"


@pytest.fixture(scope="session")
def ragtruth_path() -> Path:
    path = _ragtruth_dir()
    if not (path / "response.jsonl").is_file() or not (path / "source_info.jsonl").is_file():
        pytest.skip(f"shared RAGTruth copy not found at {path} (set EVQUAL_RAGTRUTH to its folder)")
    return path


@pytest.fixture(scope="session")
def small_dir() -> Path:
    return FIXTURES / "ragtruth_small"


@pytest.fixture(scope="session")
def sample():
    from evqual.data import load_sample

    return load_sample()


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def evqual_sample_detector():
    """``Detector("evqual")`` fitted on the embedded sample, once per session (about 20 s a fit).

    Shared: tests read it and may save it, never refit or change it.
    """
    import warnings

    from evqual.data import load_sample
    from evqual.models import Detector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Detector("evqual").fit(load_sample())
