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
    first, path = capsys.readouterr().out.strip().splitlines()
    assert first == f"evqual {__version__}"
    assert path in ("reading path: pure Python (EVQUAL_PURE_PYTHON is set)",
                    "reading path: pure Python (no compiled module is installed: built without a C compiler or "
                    "Cython)") or path.startswith("reading path: compiled (Cython, ")


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


def test_predict_with_the_shipped_default_model(tmp_path, capsys):
    """The README's main command: score the embedded sample with models/default."""
    out = tmp_path / "p.csv"
    assert main(["predict", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert len(df) == 72 and list(df.columns) == ["id", "task_type", "risk", "threshold", "predicted", "label"]
    assert df["risk"].between(0, 1).all()
    assert (df["predicted"] == (df["risk"] >= df["threshold"])).all()
    assert "predicted hallucinated by evqual" in capsys.readouterr().err


def test_predict_and_score_apply_one_threshold(tmp_path, capsys):
    # issue 10: predict flagged at the model threshold, score at the policy's; answers between were flagged by one
    import json

    assert main(["predict", "--out", str(tmp_path / "p.jsonl")]) == 0
    assert main(["score", "--out", str(tmp_path / "s.jsonl"), "--no-progress"]) == 0
    pred = {r["id"]: r for r in map(json.loads, (tmp_path / "p.jsonl").read_text().splitlines())}
    scored = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    for r in scored:
        p = pred[r["id"]]
        assert r["risk"] == pytest.approx(p["risk"], abs=1e-9)  # pandas writes 10 digits
        if not r["sensitive"]:
            assert r["threshold"] == p["threshold"]  # one source of truth: the model's tuned threshold
            assert (r["decision"] in ("warn", "regenerate", "abstain")) <= p["predicted"]
        else:
            assert r["threshold"] == min(0.3, p["threshold"])


def test_predict_jsonl_and_bad_model(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert main(["predict", "--out", str(out), "--data", str(FIXTURES / "generic.jsonl")]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["g1", "g2", "generic:3", "g4"]
    assert main(["predict", "--out", str(out), "--model", str(tmp_path / "nope")]) == 2
    assert "cannot load model" in capsys.readouterr().err
    assert main(["predict", "--out", str(tmp_path / "p.txt")]) == 2


def test_evaluate_and_train_commands(tmp_path):
    rep = tmp_path / "rep"
    assert main(["evaluate", "--method", "ecs-span", "--folds", "3", "--out", str(rep), "--no-importance"]) == 0
    assert json.loads((rep / "metrics.json").read_text())["method"] == "ecs-span"
    assert main(["evaluate", "--method", "nope", "--out", str(rep)]) == 2
    assert main(["evaluate", "--method", "evqual", "--folds", "1", "--out", str(rep)]) == 2
    model = tmp_path / "m"
    assert main(["train", "--method", "nli-proxy", "--out", str(model), "--metrics", str(rep / "metrics.json")]) == 0
    meta = json.loads((model / "meta.json").read_text())
    assert meta["method"] == "nli-proxy" and meta["metrics"]["method"] == "ecs-span"
    assert meta["training_data"]["rows"] == 72 and len(meta["training_data"]["sha256"]) == 64


def test_methods_command(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "semantic-eq-gb" in out and "ecs-span" in out and "evqual-meta" in out


def _readme_commands():
    """Flags per command of the README's command-line block."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text.split("## Command line", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    flags, current = {}, None
    for line in block.splitlines():
        m = re.match(r"evqual (\w+)", line)
        if m:
            current = m.group(1)
            flags.setdefault(current, set())
        if current:
            flags[current] |= set(re.findall(r"(--[a-z][a-z0-9-]*)", line.split("#")[0]))
    return flags


def test_readme_command_block_matches_every_help(capsys):
    """Every flag the README shows exists, and every flag of --help is in the README."""
    from evqual.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    readme = _readme_commands()
    assert set(readme) >= set(sub.choices), "commands missing from the README block"
    for name, sp in sub.choices.items():
        helped = {o for a in sp._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        assert readme[name] == helped, (name, sorted(readme[name] ^ helped))


@pytest.mark.parametrize("command", ["evaluate", "train", "reproduce"])
def test_readme_synopsis_marks_required_and_optional_options_as_help_does(command):
    """issue 10: `evqual train --data` is optional in --help, so it is in brackets in the README."""
    import re
    from pathlib import Path

    from evqual.cli import build_parser

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text.split("## Command line", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    lines, on = [], False
    for line in block.splitlines():
        if re.match(r"evqual \w+", line):
            on = line.startswith(f"evqual {command} ")
        if on:
            lines.append(line.split("#")[0])
    synopsis = " ".join(lines)
    optional = set(re.findall(r"\[(--[a-z][a-z0-9-]*)", synopsis))
    required = set(re.findall(r"(?<!\[)(--[a-z][a-z0-9-]*)", synopsis))
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    want_required = {o for a in sub._actions if a.required for o in a.option_strings}
    want_optional = {o for a in sub._actions if not a.required for o in a.option_strings
                     if o.startswith("--") and o != "--help"}
    assert (required, optional) == (want_required, want_optional)


def test_help_prints_single_percent_signs_and_counts_agree_in_number(tmp_path, capsys):
    # issue 10: "25%%" in `train --help`, "1 answers" in the summary line
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert "25% of the test split" in out and "%%" not in out
    src = tmp_path / "one.jsonl"
    src.write_text(json.dumps({"id": "a", "query": "q", "context": "The bridge opened in 1932.",
                               "output": "The bridge opened in 1932."}) + "\n")
    assert main(["score", str(src), "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 0
    assert "1 answer scored, 0 lines failed" in capsys.readouterr().err
