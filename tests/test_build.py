"""The compiled reading path and its pure-Python fallback (issue 41).

``pip install -e .`` compiles the modules ``setup.py`` lists (Cython, from their own sources);
``EVQUAL_PURE_PYTHON=1`` makes a process load the sources instead.  Both paths must give the same
numbers: the features of the embedded sample, the evidence engine's reading and the shipped model's risks
are computed in a child process on the pure path and compared, exactly, with this process's.
"""

from __future__ import annotations

import ast
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evqual
from evqual._build import PURE_PYTHON_ENV, build_info, pure_python_requested
from evqual.cli import main

REPO = Path(__file__).resolve().parents[1]
_EXT = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _setup_list(name: str = "COMPILED") -> list[str]:
    """A list of setup.py (``COMPILED``: the modules compiled from their ``.py``; ``KERNELS``: the ``.pyx``
    kernels), read without running it."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"setup.py has no {name} list")


def _module_names() -> list[str]:
    """Every module setup.py builds, by name."""
    return sorted([p[:-3].replace("/", ".") for p in _setup_list()]
                  + [p[:-4].replace("/", ".") for p in _setup_list("KERNELS")])


def _child(code: str, *, pure: bool) -> str:
    env = dict(os.environ)
    env.pop(PURE_PYTHON_ENV, None)
    if pure:
        env[PURE_PYTHON_ENV] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_every_listed_module_exists_and_is_a_reading_module():
    listed = _setup_list()
    assert listed == sorted(set(listed), key=listed.index), "a module is listed twice"
    for path in listed:
        assert (REPO / path).is_file(), path
        # the reading path, and the scoring after it (the shipped model, the result, its reasons and the policy)
        assert path.startswith(("evqual/text/", "evqual/evidence/", "evqual/features/", "evqual/models/",
                                "evqual/scoring/", "evqual/explain/")), path
        assert not path.endswith("__init__.py"), "a package's __init__ stays pure Python (it installs the switch)"


def test_every_kernel_exists_and_has_no_python_module_of_its_name():
    """A kernel's fallback lives in the module that calls it: a ``.py`` of its name would shadow it."""
    for path in _setup_list("KERNELS"):
        assert path.endswith(".pyx") and (REPO / path).is_file(), path
        assert not (REPO / (path[:-4] + ".py")).exists(), path


def test_every_declaration_file_types_a_listed_module():
    """A ``.pxd`` beside a module's ``.py`` types the compiled module (an augmenting declaration file): one beside a
    module that is not listed would be silently ignored, and one beside a kernel would shadow its declarations."""
    listed = set(_setup_list())
    pxds = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "evqual").rglob("*.pxd"))
    assert pxds, "no declaration file: the checks' types are in evqual/features/_checks.pxd"
    for path in pxds:
        assert path[:-4] + ".py" in listed, path


def test_every_listed_module_is_built_when_any_is():
    """A module the C compiler refused (setup.py's -Werror=int-to-pointer-cast) installs as pure Python with a
    warning only; here it fails."""
    built = build_info()["built"]
    if not built:
        pytest.skip("pure-Python install: nothing is compiled")
    assert built == _module_names()


def test_the_switch_reads_the_environment():
    assert not pure_python_requested({})
    assert not pure_python_requested({PURE_PYTHON_ENV: ""})
    assert not pure_python_requested({PURE_PYTHON_ENV: "0"})
    assert pure_python_requested({PURE_PYTHON_ENV: "1"})
    assert pure_python_requested({PURE_PYTHON_ENV: "yes"})


def test_build_info_names_what_is_built_and_loaded():
    import evqual.features  # noqa: F401 - loads the reading path

    info = build_info()
    assert set(info) == {"path", "built", "loaded", "reason"}
    assert set(info["loaded"]) <= set(info["built"])
    assert set(info["built"]) <= set(_module_names())
    if pure_python_requested():
        assert info["path"] == "pure Python" and info["loaded"] == [] and PURE_PYTHON_ENV in info["reason"]
    elif info["built"]:
        assert info["path"] == "compiled" and info["reason"] == ""
        assert info["loaded"], "compiled modules are built but none was imported as one"
    else:
        assert info["path"] == "pure Python" and info["reason"]


def test_version_says_which_path_runs(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"evqual {evqual.__version__}"
    assert out[1].startswith("reading path: ") and build_info()["path"] in out[1]


def test_the_pure_path_loads_no_compiled_module():
    out = _child("import json, evqual.features, evqual.evidence, evqual.scoring, evqual._build as b\n"
                 "import sys, importlib.machinery as m\n"
                 "ext = tuple(m.EXTENSION_SUFFIXES)\n"
                 "print(json.dumps([n for n, mod in sys.modules.items() if n.startswith('evqual') and "
                 "str(getattr(mod, '__file__', '')).endswith(ext)]))\n"
                 "print(json.dumps(b.build_info()))", pure=True)
    loaded, info = (json.loads(line) for line in out.strip().splitlines()[-2:])
    assert loaded == []
    assert info["path"] == "pure Python" and info["loaded"] == []


_SAME = """
import json, sys
import numpy as np
from evqual.data import load_sample
from evqual.evidence import EvidenceEngine
from evqual.features import EvidenceFeaturizer
from evqual.models import Detector

examples = list(load_sample())
out = {}
for level in ("response", "sentence"):
    X = EvidenceFeaturizer(level=level).fit(examples).transform(examples)
    out[level] = np.asarray(X, dtype=np.float64).tolist()
engine = EvidenceEngine()
readings = []
for ex in examples:
    r = engine.read(ex.output, [ex.context[c.start:c.end] for c in ex.chunks] or [ex.context], ex.query or "")
    readings.append([[c.start, c.end, c.unit, c.features.tolist(),
                      [[d.cls, d.kind, d.claim, d.claim_text, d.evidence, d.evidence_text, d.sense]
                       for d in c.differences]] for c in r.claims])
out["readings"] = readings
found = Detector.load().detect(examples)
out["risk"] = found.risk.tolist()
out["sentence_risks"] = [np.asarray(s).tolist() for s in found.sentence_risk]
out["spans"] = [[list(map(float, s)) for s in spans] for spans in found.spans]
sys.stdout.write(json.dumps(out, sort_keys=True))
"""


def _same(a, b) -> bool:
    """Equality of nested JSON values, a NaN equal to a NaN."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_same_treats_nan_as_equal_and_nothing_else():
    assert _same([1.0, float("nan"), [2, "x"]], [1.0, float("nan"), [2, "x"]])
    assert not _same([1.0], [1.0000000000000002])
    assert not _same([1], [1.0])
    assert not _same([[1, 2]], [[1, 2, 3]])


def test_the_compiled_and_the_pure_path_compute_the_same_numbers():
    """Features at both levels, the engine's claims and differences, risks, sentence risks and spans:
    equal to the last bit (JSON's float repr round-trips exactly) on both paths."""
    if not build_info()["built"]:
        pytest.skip("no compiled module is installed here (pure Python only): nothing to compare")
    compiled = json.loads(_child(_SAME, pure=False).strip().splitlines()[-1])
    pure = json.loads(_child(_SAME, pure=True).strip().splitlines()[-1])
    assert set(compiled) == set(pure)
    for key in sorted(compiled):
        assert _same(compiled[key], pure[key]), f"{key} differs between the compiled and the pure path"
    assert np.isfinite(np.asarray(compiled["risk"])).all()
