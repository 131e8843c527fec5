"""The notebook runs (so it cannot rot)."""

import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_evaluate.ipynb"
SCORE_NOTEBOOK = NOTEBOOK.with_name("02_score.ipynb")


def _run(data: str, notebook: Path = NOTEBOOK):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(notebook, as_version=4)
    env = dict(os.environ, EVQUAL_NOTEBOOK_DATA=data)
    old = os.environ.copy()
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                         resources={"metadata": {"path": str(notebook.parent)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


@pytest.mark.slow  # about 90 s; the scoring notebook below runs by default
def test_notebook_runs_on_the_embedded_sample():
    nb = _run("sample")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.slow
def test_notebook_runs_on_the_shared_copy(ragtruth_path):
    _run(str(ragtruth_path))


def test_scoring_notebook_runs():
    nb = _run("sample", SCORE_NOTEBOOK)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "NUMBER_CONFLICT" in text and "housing" in text and "audit records" in text
