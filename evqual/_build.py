"""Which reading path runs: the modules compiled by Cython at install time, or their pure-Python sources.

``pip install`` compiles the reading path (the modules ``setup.py`` lists) from its own ``.py`` files.  The
compiled module and the source compute the same results; where no compiler was available the package is pure
Python.  ``EVQUAL_PURE_PYTHON=1`` in the environment makes a compiled install load the sources instead (the
fallback, tested against the compiled path).  :func:`build_info` says which path runs.

>>> info = build_info()
>>> info["path"] in ("compiled", "pure Python")
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from pathlib import Path

__all__ = ["PURE_PYTHON_ENV", "build_info", "kernel", "pure_python_requested"]

PURE_PYTHON_ENV = "EVQUAL_PURE_PYTHON"
_PACKAGE = Path(__file__).resolve().parent


def pure_python_requested(environ=None) -> bool:
    """True when ``EVQUAL_PURE_PYTHON`` asks for the sources (any value but empty or ``0``)."""
    value = (os.environ if environ is None else environ).get(PURE_PYTHON_ENV, "")
    return value.strip() not in ("", "0")


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Finds evqual's submodules among ``.py`` sources only, never an extension module beside them."""

    _loaders = ((importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),)

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("evqual.") or not path:
            return None
        for entry in path:
            spec = importlib.machinery.FileFinder(str(entry), *self._loaders).find_spec(fullname, target)
            if spec is not None:
                return spec
        return None


def _install_source_finder() -> None:
    if not any(isinstance(f, _SourcesFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourcesFirst())


def _compiled_files() -> list[str]:
    """Module names (``evqual.text._tokens``) with an extension module built for this interpreter."""
    suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)
    out = set()
    for f in _PACKAGE.rglob("*"):
        suffix = next((s for s in suffixes if f.name.endswith(s)), None)
        if suffix is not None and f.is_file():
            rel = f.relative_to(_PACKAGE.parent)
            out.add(".".join(rel.parts[:-1] + (f.name[: -len(suffix)],)))
    return sorted(out)


def build_info() -> dict:
    """Which reading path this process runs.

    Returns
    -------
    dict
        ``path``: ``"compiled"`` or ``"pure Python"``; ``built``: the compiled modules installed for this
        interpreter; ``loaded``: those of them imported so far as compiled modules; ``reason``: why the pure
        path runs (empty on the compiled path).
    """
    built = _compiled_files()
    loaded = sorted(name for name in built
                    if getattr(sys.modules.get(name), "__file__", "").endswith(
                        tuple(importlib.machinery.EXTENSION_SUFFIXES)))
    if pure_python_requested():
        path, reason = "pure Python", f"{PURE_PYTHON_ENV} is set"
    elif not built:
        path, reason = "pure Python", "no compiled module is installed: built without a C compiler or Cython"
    else:
        path, reason = "compiled", ""
    return {"path": path, "built": built, "loaded": loaded, "reason": reason}


_KERNELS: dict = {}


def kernel(module: str, name: str):
    """Function ``name`` of the typed kernel ``module`` (setup.py's ``KERNELS``), or ``None`` where it runs its
    fallback: the kernel is not built, or ``EVQUAL_PURE_PYTHON`` is set (looked up once per process).

    >>> kernel("evqual.no_such_kernel", "f") is None
    True
    """
    key = (module, name)
    if key not in _KERNELS:
        fn = None
        if not pure_python_requested():
            try:
                fn = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                fn = None
        _KERNELS[key] = fn
    return _KERNELS[key]


def describe() -> str:
    """One line for ``evqual --version``."""
    info = build_info()
    if info["path"] == "compiled":
        return f"reading path: compiled (Cython, {len(info['built'])} modules)"
    return f"reading path: pure Python ({info['reason']})"


if pure_python_requested():
    _install_source_finder()
