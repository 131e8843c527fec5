import json
import subprocess
import sys

import pandas as pd
import pytest

from conftest import FIXTURES, write_lines
from evqual import __version__
from evqual.cli import main
from evqual.features import list_features


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"evqual {__version__}"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "featurize" in out and "features" in out


def test_featurize_help_is_accurate(capsys):
    assert main(["featurize", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--data", "--out", "--level", "--entity-backend", "--metadata", "--families", "--split",
                 "--exclude-implicit-true", "--strict", "--no-progress"):
        assert flag in out


def test_no_command_is_usage_error(capsys):
    assert main([]) == 2


@pytest.mark.parametrize("argv", [["featurize"], ["featurize", "--out", "x.txt"],
                                  ["featurize", "--out", "x.csv", "--level", "word"],
                                  ["featurize", "--out", "x.csv", "--families", "colour"],
                                  ["bogus"]])
def test_usage_errors_exit_2(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2


def test_featurize_embedded_sample_default(tmp_path, capsys):
    out = tmp_path / "f.csv"
    assert main(["featurize", "--out", str(out), "--no-progress"]) == 0
    df = pd.read_csv(out)
    assert len(df) == 72
    assert list(df.columns[:6]) == ["id", "source_id", "split", "task_type", "model", "label"]
    assert list(df.columns[6:]) == list_features("response")
    assert "embedded sample" in capsys.readouterr().err


def test_featurize_sentence_parquet(tmp_path, small_dir):
    out = tmp_path / "s.parquet"
    assert main(["featurize", "--data", str(small_dir), "--out", str(out), "--level", "sentence",
                 "--metadata", "--no-progress"]) == 0
    df = pd.read_parquet(out)
    assert list(df["id"]) == ["r1", "r2", "r3", "r3", "r4"]
    assert list(df["label"]) == [0, 1, 0, 1, 1]
    assert "sent.meta.model[gpt-4-0613].v1" in df.columns and "nearest_chunk" in df.columns


def test_featurize_generic_and_table(tmp_path):
    assert main(["featurize", "--data", str(FIXTURES / "generic.jsonl"), "--out", str(tmp_path / "g.csv"),
                 "--no-progress"]) == 0
    assert len(pd.read_csv(tmp_path / "g.csv")) == 4
    assert main(["featurize", "--data", str(FIXTURES / "processed.csv"), "--out", str(tmp_path / "t.csv"),
                 "--families", "chain,number", "--no-progress"]) == 0
    df = pd.read_csv(tmp_path / "t.csv")
    assert [c for c in df.columns if "." in c] == list_features(families=["chain", "number"])


def test_featurize_bad_rows_exit_1_but_write_good_rows(tmp_path, capsys):
    rows = [json.dumps({"id": "a", "query": "q", "context": "c", "output": "o"}), "{broken",
            json.dumps({"id": "b", "query": "q", "output": "o"}),
            json.dumps({"id": "c", "query": "q", "context": "c", "output": "o"})]
    data = write_lines(tmp_path / "logs.jsonl", rows)
    out = tmp_path / "f.csv"
    assert main(["featurize", "--data", str(data), "--out", str(out), "--no-progress"]) == 1
    assert list(pd.read_csv(out)["id"]) == ["a", "c"]
    err = capsys.readouterr().err
    assert "2 bad rows" in err and "line 2" in err and "line 3, field 'context'" in err


def test_featurize_strict_stops(tmp_path, capsys):
    data = write_lines(tmp_path / "logs.jsonl", ["{broken"])
    assert main(["featurize", "--data", str(data), "--out", str(tmp_path / "f.csv"), "--strict"]) == 1
    assert "E101" in capsys.readouterr().err
    assert not (tmp_path / "f.csv").exists()


def test_featurize_missing_data_path(tmp_path, capsys):
    assert main(["featurize", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "f.csv")]) == 1
    assert "E109" in capsys.readouterr().err


def test_features_command(capsys):
    assert main(["features", "--level", "sentence"]) == 0
    out = capsys.readouterr().out
    assert "sent.chain.ecs.v2" in out and "support.min.v1" not in out


def test_console_script_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "evqual", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("evqual ")
    proc = subprocess.run([sys.executable, "-m", "evqual", "featurize"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--out" in proc.stderr
