"""The shape of the code base: data flows one way, packages talk through their ``__init__``.

Two rules, checked on the source (no import is executed):

1. **No reaching into another package's private modules.**  A module
   ``evqual/<pkg>/_x.py`` is private to ``evqual.<pkg>`` (and its
   sub-packages); anything else imports what it needs from
   ``evqual.<pkg>`` itself, whose ``__init__`` exports it.  Root-level
   helpers (``evqual/_markdown.py``, ...) are private to ``evqual`` and so
   usable everywhere inside it.  Scripts in ``scripts/`` use only the
   public API.
2. **Layers.**  The pipeline is load -> chunk -> featurize -> model ->
   calibrate/threshold -> explain -> policy -> verify; a package may import
   only packages of lower layers (:data:`LAYERS`).  In particular
   ``evqual.models`` (estimators: features in, risks out) knows nothing of
   scoring, explanations or policy, and :mod:`evqual.results` (the result
   and reason types) imports nothing from evqual.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evqual"

# lowest first; a package may import those of strictly lower layers (modules of the first and of the last
# layer may also import each other: root helpers, and the command line's entry points)
LAYERS = [
    {"errors", "results", "_version", "_build", "_markdown", "_progress", "_files", "_deadline", "_estimator",
     "_gcpause"},
    {"text"},
    {"data"},
    {"evidence"},
    {"features"},
    {"models"},
    {"explain"},
    {"scoring"},
    {"engines"},
    {"verify"},
    {"evaluation"},
    {"service", "integrations"},
    {"bench", "cli", "__main__"},
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
# (module, package it may import although higher): each with its reason
ALLOWED_UPWARD = {
    ("evqual/models/_detector.py", "scoring"): "the deprecated Detector.score/score_batch shims (removed in 0.3)",
}


def _module_name(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, root: Path):
    """``(line, target module parts)`` of every import of ``path`` that names an evqual module."""
    me = _module_name(path, root)
    package = me if path.name == "__init__.py" else me[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "evqual":
                    yield node.lineno, alias.name.split(".")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if not target or target[0] != "evqual":
                continue
            yield node.lineno, target
            for alias in node.names:  # `from evqual.features import _checks` names a module too
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    candidate = root.joinpath(*target, alias.name)
                    if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
                        yield node.lineno, target + [alias.name]


def _private_owner(target: list[str]):
    """The package a private module of ``target`` belongs to (``None`` when every part is public)."""
    for i, part in enumerate(target):
        if i > 0 and part.startswith("_") and not part.startswith("__"):
            return target[:i]
    return None


def _sources():
    return sorted(PACKAGE.rglob("*.py"))


def private_import_violations(files, root: Path = ROOT) -> list[str]:
    out = []
    for path in files:
        me = _module_name(path, root)
        for line, target in _imports(path, root):
            owner = _private_owner(target)
            if owner is not None and me[: len(owner)] != owner:
                out.append(f"{path.relative_to(root)}:{line} imports {'.'.join(target)} "
                           f"(private to {'.'.join(owner)}; import it from {'.'.join(owner)})")
    return out


def layer_violations(files, root: Path = ROOT) -> list[str]:
    out = []
    for path in files:
        me = _module_name(path, root)
        mine = me[1] if len(me) > 1 else None
        if mine is None:
            continue
        for line, target in _imports(path, root):
            theirs = target[1] if len(target) > 1 else None
            if theirs is None or theirs == mine:
                continue
            if theirs not in LAYER_OF or mine not in LAYER_OF:
                out.append(f"{path.relative_to(root)}:{line}: {mine} or {theirs} has no layer in LAYERS")
            elif (str(path.relative_to(root)), theirs) in ALLOWED_UPWARD:
                continue
            elif LAYER_OF[theirs] > LAYER_OF[mine] or (
                    LAYER_OF[theirs] == LAYER_OF[mine] and LAYER_OF[mine] not in (0, len(LAYERS) - 1)):
                out.append(f"{path.relative_to(root)}:{line}: {mine} (layer {LAYER_OF[mine]}) imports {theirs} "
                           f"(layer {LAYER_OF[theirs]}): data must flow one way")
    return out


def test_no_module_reaches_into_another_packages_private_modules():
    assert private_import_violations(_sources()) == []


def test_scripts_use_the_public_api_only():
    scripts = sorted((ROOT / "scripts").glob("*.py"))
    assert scripts
    assert private_import_violations(scripts) == []


def test_packages_import_only_lower_layers():
    assert layer_violations(_sources()) == []


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert packages | modules <= set(LAYER_OF), sorted((packages | modules) - set(LAYER_OF))


def test_results_is_a_leaf():
    targets = [t for _, t in _imports(PACKAGE / "results.py", ROOT)]
    assert targets == []


@pytest.mark.parametrize("package", ["text", "data", "features", "models", "explain", "scoring", "evaluation"])
def test_every_package_declares_its_exports(package):
    init = PACKAGE / package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    names = [n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert names, f"evqual/{package}/__init__.py has no __all__"


def test_the_checker_catches_what_it_is_for(tmp_path):
    # the rules must be able to fail: a module reaching into a private module, and a model importing scoring
    pkg = tmp_path / "evqual"
    (pkg / "models").mkdir(parents=True)
    (pkg / "scoring").mkdir()
    for d in (pkg, pkg / "models", pkg / "scoring"):
        (d / "__init__.py").write_text("")
    (pkg / "scoring" / "_policy.py").write_text("X = 1\n")
    bad = pkg / "models" / "_planted.py"
    bad.write_text("from ..scoring._policy import X\nfrom evqual.scoring import _policy\nimport evqual.scoring\n")
    found = private_import_violations([bad], root=tmp_path)
    assert len(found) == 2 and all("evqual.scoring._policy" in v for v in found)
    layered = layer_violations([bad], root=tmp_path)
    assert len(layered) == 4 and all("data must flow one way" in v for v in layered)
    ok = pkg / "scoring" / "_scorer.py"
    ok.write_text("from ._policy import X\nfrom ..models import Detector\n")
    assert private_import_violations([ok], root=tmp_path) == [] and layer_violations([ok], root=tmp_path) == []


def test_the_one_upward_import_is_the_deprecated_shim_only():
    # the allowed upward import must stay inside Detector's deprecated score shims
    src = (PACKAGE / "models" / "_detector.py").read_text(encoding="utf-8")
    tree = ast.parse(src)
    owners = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and (sub.module or "").startswith("scoring"):
                    owners.append(node.name)
    assert owners == ["_scorer"]


def test_the_deprecated_detector_score_warns_and_matches_the_scorer():
    import warnings

    from evqual.models import Detector
    from evqual.scoring import Scorer

    det = Detector.load()
    args = dict(query="When did the bridge open?", context=["The bridge opened in 1932."],
                output="The bridge opened in 1935.", task_type="QA")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = det.score(**args)
    assert any(issubclass(w.category, FutureWarning) and "Scorer" in str(w.message) for w in caught)
    assert old == Scorer(det).score(**args)
