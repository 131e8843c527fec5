"""``models/default`` is rebuildable from the repository, and the rebuild check can fail (issue 8)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from evqual.data import sample_path
from evqual.models import (
    build_model,
    check_rebuild,
    default_model_path,
    load_detector,
    prediction_fingerprint,
    read_meta,
)

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_default_model.py"


@pytest.fixture(scope="module")
def sample_model(tmp_path_factory):
    """``evqual`` (the shipped method, with its span tagger) built on the embedded sample."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_model(sample_path(), tmp_path_factory.mktemp("build") / "model")


def test_shipped_model_records_versions_and_a_fingerprint_it_reproduces():
    """The fingerprint in models/default/meta.json is what the shipped file predicts with this code."""
    meta = read_meta(default_model_path())
    for key in ("numpy_version", "scipy_version", "sklearn_version", "python_version"):
        assert isinstance(meta.get(key), str) and meta[key], key
    fp = meta["prediction_fingerprint"]
    assert fp["rows"] == 72 and fp["data"] == "evqual.data.load_sample()"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = prediction_fingerprint(load_detector(default_model_path()))
    assert got["sha256"] == fp["sha256"]


def test_shipped_model_records_how_it_was_built():
    meta = read_meta(default_model_path())
    assert meta["method"] == "evqual" and meta["calibration"] == "sigmoid" and meta["threshold_rule"] == "f1"
    assert meta["training_data"]["validation_split"] == "test"
    assert meta["training_data"]["rows"] == 6027
    # issue 24, session 5: cross-fitted over the whole test split (2,457 rows), the model on every row
    assert meta["crossfit"] == 4 and meta["rows"] == {"train": 6027, "validation": 2457}


def test_build_is_deterministic_bit_for_bit(sample_model, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = build_model(sample_path(), tmp_path / "again")
    a, b = read_meta(sample_model), read_meta(again)
    assert a["prediction_fingerprint"] == b["prediction_fingerprint"]
    assert a["threshold"] == b["threshold"] and a["model_sha256"] == b["model_sha256"]
    assert (sample_model / "model.evqpack").read_bytes() == (again / "model.evqpack").read_bytes()
    assert a["span_tagger"] is not None


@pytest.mark.slow  # a model build of about 30 s
def test_saved_bytes_do_not_depend_on_the_process_or_thread_count(sample_model, tmp_path):
    """Another process with one OpenMP thread writes the same model file bytes (no thread count, no id())."""
    import os

    code = ("import sys, warnings; warnings.simplefilter('ignore')\n"
            "from evqual.data import sample_path\nfrom evqual.models import build_model\n"
            "build_model(sample_path(), sys.argv[1])\n")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="123")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "other")], check=True, timeout=600, env=env)
    assert (tmp_path / "other" / "model.evqpack").read_bytes() == (sample_model / "model.evqpack").read_bytes()


def test_a_rebuild_estimates_floors_the_way_the_model_did(sample_model):
    # regression (issue 22, session 4): binding floors became the default; a model saved before them
    # (no evidence_floor_mode) must be rebuilt with floors over every fired row, or its check fails
    from evqual.models._io import _rebuild_settings

    meta = read_meta(sample_model)
    assert meta["evidence_floor_mode"] == "fired"
    # "fired" is rebuilt as True, the spelling the model was built with (issue 24: "fired" saved other bytes)
    assert _rebuild_settings(meta)["evidence_floor"] is True
    assert _rebuild_settings(dict(meta, evidence_floor_mode="binding"))["evidence_floor"] == "binding"
    old = {k: v for k, v in meta.items() if k != "evidence_floor_mode"}
    assert _rebuild_settings(dict(old, evidence_floor={"*:check.unit.v1": 0.7}))["evidence_floor"] is True
    assert _rebuild_settings(dict(old, evidence_floor={}))["evidence_floor"] is False


def test_check_rebuild_passes_on_the_same_data(sample_model):
    result = check_rebuild(sample_model, sample_path())
    assert result["ok"] and result["recorded"] and result["expected"] == result["rebuilt"]
    assert result["same_file"] and result["model_sha256"] == result["rebuilt_model_sha256"]
    assert result["versions"] == {}  # built here: every recorded version is this environment's
    import pandas

    assert read_meta(sample_model)["pandas_version"] == pandas.__version__


@pytest.mark.slow  # a model build of about 30 s
def test_check_rebuild_fails_on_other_data(sample_model, tmp_path):
    """Trained on a subset, the rebuild predicts other floats: the check says so."""
    subset = tmp_path / "subset"
    shutil.copytree(sample_path(), subset)
    lines = (subset / "response.jsonl").read_text(encoding="utf-8").splitlines()
    (subset / "response.jsonl").write_text("\n".join(lines[:60]) + "\n", encoding="utf-8")
    result = check_rebuild(sample_model, subset)
    assert not result["ok"] and result["expected"] != result["rebuilt"]


@pytest.mark.slow  # a model build of about 30 s
def test_check_rebuild_fails_when_the_recorded_fingerprint_is_not_the_model(sample_model, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(sample_model, folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["prediction_fingerprint"]["sha256"] = "0" * 64
    del meta["pandas_version"]  # a model from before it was recorded
    (folder / "meta.json").write_text(json.dumps(meta))
    result = check_rebuild(folder, sample_path())
    assert not result["ok"]
    assert list(result["versions"]) == ["pandas_version"] and result["versions"]["pandas_version"][0] is None


def test_fingerprint_changes_when_one_prediction_changes(sample_model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = load_detector(sample_model)
        before = prediction_fingerprint(det)["sha256"]
        det.calibrator_.b_ += 1e-12  # the last bits of every risk
        assert prediction_fingerprint(det)["sha256"] != before


@pytest.mark.slow  # a model build of about 30 s
def test_script_check_exit_status(sample_model, tmp_path):
    run = [sys.executable, str(SCRIPT), "--data", str(sample_path()), "--check", str(sample_model)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert "rebuilds: the same predictions on the embedded sample" in proc.stderr
    assert "model file: the same bytes" in proc.stderr
    folder = tmp_path / "model"
    shutil.copytree(sample_model, folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["prediction_fingerprint"]["sha256"] = "f" * 64
    (folder / "meta.json").write_text(json.dumps(meta))
    proc = subprocess.run(run[:-1] + [str(folder)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "does NOT rebuild" in proc.stderr
    proc = subprocess.run([sys.executable, str(SCRIPT), "--data", str(tmp_path / "none"), "--check", str(folder)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "no data" in proc.stderr


@pytest.mark.slow
@pytest.mark.ragtruth
def test_shipped_model_rebuilds_from_the_shared_copy(ragtruth_path):
    """The documented command rebuilds models/default with the same predictions (several minutes)."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--data", str(ragtruth_path), "--check",
                           str(default_model_path())], capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] and result["threshold"] == result["rebuilt_threshold"]
    # issue 24: the shipped file is what this code writes, not only a file that predicts the same
    assert result["same_file"], proc.stderr


@pytest.mark.slow  # three cross-fitted builds of the sample, about 40 s
def test_a_crossfitted_model_rebuilds_cross_fitted(tmp_path):
    """check_rebuild reads crossfit from meta.json: without it the rebuild would fit one validation part and
    predict otherwise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = build_model(sample_path(), tmp_path / "cf", crossfit=3)
        assert read_meta(folder)["crossfit"] == 3
        result = check_rebuild(folder, sample_path())
    assert result["ok"] and result["same_file"]
    plain = read_meta(build_model(sample_path(), tmp_path / "plain"))
    assert plain["prediction_fingerprint"]["sha256"] != result["expected"]  # the check could fail


def test_script_refuses_a_crossfit_below_two(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--data", str(sample_path()), "--out", str(tmp_path / "m"),
                           "--crossfit", "1"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "--crossfit must be at least 2" in proc.stderr
    assert not (tmp_path / "m").exists()
