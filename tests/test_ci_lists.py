"""The CI's second and third passes run listed test modules only (.ci/extras_tests.txt, .ci/one_core_tests.txt):
these tests fail when a module that needs an extra, or depends on the number of cores, is missing from its list,
or when a listed path does not exist (issue 39's CI ran the whole suite three times and overran its 90 minutes)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXTRA_MARKERS = re.compile(r"importorskip\(|pytest\.mark\.(ner|dask|spark|embeddings)\b|_needs_extra|"
                           r"skipif\([^)]*(find_spec|_has_module)")
CORE_SENSITIVE = re.compile(r"usable_cores|sched_getaffinity|workers=|jobs=|n_jobs|SIGTERM|cpu_count|taskset")


def _listed(name: str) -> list[str]:
    lines = (REPO / ".ci" / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _modules(pattern) -> set[str]:
    return {f"tests/{p.name}" for p in sorted((REPO / "tests").glob("test_*.py"))
            if pattern.search(p.read_text(encoding="utf-8"))}


def test_every_listed_path_exists():
    for name in ("extras_tests.txt", "one_core_tests.txt", "pure_python_tests.txt"):
        for path in _listed(name):
            assert (REPO / path).exists(), f".ci/{name} lists {path}, which does not exist"


def test_every_module_that_needs_an_extra_runs_in_the_extras_pass():
    missing = sorted(_modules(EXTRA_MARKERS) - set(_listed("extras_tests.txt")) - {"tests/test_ci_lists.py"})
    assert not missing, f"add to .ci/extras_tests.txt: {missing}"


def test_every_module_that_depends_on_the_cores_runs_in_the_one_core_pass():
    missing = sorted(_modules(CORE_SENSITIVE) - set(_listed("one_core_tests.txt")) - {"tests/test_ci_lists.py"})
    assert not missing, f"add to .ci/one_core_tests.txt: {missing}"


def test_the_ci_script_reads_every_list():
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "extras_tests.txt" in script and "one_core_tests.txt" in script
    assert "EVQUAL_PURE_PYTHON=1 run_pytest $(listed .ci/pure_python_tests.txt)" in script


def test_the_pure_python_pass_covers_every_compiled_package_and_its_tests():
    """The fallback pass runs the doctests of every package setup.py compiles, and the tests named after it."""
    import ast

    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    def setup_list(name):
        return next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", "") == name for t in n.targets))

    compiled = setup_list("COMPILED")
    listed = set(_listed("pure_python_tests.txt"))
    packages = {"/".join(p.split("/")[:2]) for p in compiled}
    assert packages <= listed, f"add to .ci/pure_python_tests.txt: {sorted(packages - listed)}"
    for name in ("text", "features", "evidence", "checks", "build"):
        assert f"tests/test_{name}.py" in listed
    # the compiled tree walker's fallback (the numpy walker), and the lean load that uses it
    if "evqual/models/_treewalk.pyx" in setup_list("KERNELS"):
        assert {"tests/test_batch_independence.py", "tests/test_lean.py"} <= listed
    if "evqual/evidence/_align.pyx" in setup_list("KERNELS"):  # the alignment's fallback is difflib
        assert "tests/test_evidence.py" in listed
    if "evqual/text/_scan.pyx" in setup_list("KERNELS"):  # the word scanner's is re
        assert "tests/test_text.py" in listed
