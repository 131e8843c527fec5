"""The notebook runs (so it cannot rot)."""

import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_evaluate.ipynb"


def _run(data: str):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = dict(os.environ, EVQUAL_NOTEBOOK_DATA=data)
    old = os.environ.copy()
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


def test_notebook_runs_on_the_embedded_sample():
    nb = _run("sample")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.slow
def test_notebook_runs_on_the_shared_copy(ragtruth_path):
    _run(str(ragtruth_path))
