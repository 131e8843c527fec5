"""scripts/peer_ragcheck.py: the driver of the ragcheck peer's speed benchmark (issue 23)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from evqual.data import sample_path

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("peer_ragcheck", REPO / "scripts" / "peer_ragcheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_folder_without_ragcheck_exits_2_naming_it(tmp_path, capsys):
    assert _script().main(["--src", str(tmp_path), "--data", str(sample_path())]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "ragcheck/features.py" in err


def test_a_bad_limit_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as info:
        _script().main(["--src", str(tmp_path), "--limit", "0"])
    assert info.value.code == 2


def test_the_driver_runs_the_peers_own_functions(tmp_path, monkeypatch):
    """A stand-in ragcheck (same module names and functions) is featurized, fitted and timed."""
    pytest.importorskip("xgboost")
    pkg = tmp_path / "src" / "ragcheck"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("XGBOOST_PARAMS = {'n_estimators': 5, 'max_depth': 2}\n")
    (pkg / "features.py").write_text(
        "import pandas as pd\nCALLS = []\n"
        "def extract_features(df):\n"
        "    CALLS.append(len(df))\n"
        "    return pd.DataFrame({'len': df['output'].str.len(), 'ctx': df['context'].str.len()}, index=df.index)\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    out = tmp_path / "r.json"
    assert _script().main(["--src", str(tmp_path / "src"), "--data", str(sample_path()), "--limit", "7",
                           "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["answers"] == 72 and res["score_answers"] == 7
    assert res["ms_p50"] > 0 and res["featurize_answers_per_s"] > 0 and res["xgboost_params"]["n_jobs"] == 1
    from ragcheck import features

    # one call over all answers, the warm-up, 7 single answers, one batch of 7
    assert features.CALLS == [72, 1] + [1] * 7 + [7]
    for name in [n for n in sys.modules if n == "ragcheck" or n.startswith("ragcheck.")]:
        monkeypatch.delitem(sys.modules, name)
