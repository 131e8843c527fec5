"""Build evqual's compiled reading path (Cython), or install pure Python where it cannot be built.

Everything else about the package is in ``pyproject.toml``; this file only lists the extension modules.

The modules of :data:`COMPILED` are compiled by Cython from their own ``.py`` sources: the same file is the
compiled module and, where no C compiler is available, the pure-Python one.  A failed build (no compiler, no
Python headers) warns and installs the pure-Python package, which gives identical results, only slower.
A ``.pxd`` beside a listed module (an "augmenting" declaration file, as ``evqual/features/_checks.pxd``) gives the
compiled module C types where they cannot change what the source computes; the pure-Python path never reads it.
``EVQUAL_PURE_PYTHON=1`` at build time skips the compilation; at run time it makes an installed package load
the ``.py`` sources instead of the compiled modules (``evqual --version`` says which path runs).
"""

from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

# The reading path (tokens, sentences, values, names, the evidence engine, the checks and every feature family)
# and the scoring after it (below).
COMPILED = [
    "evqual/text/_claims.py",
    "evqual/text/_entities.py",
    "evqual/text/_language.py",
    "evqual/text/_lexicon.py",
    "evqual/text/_numbers.py",
    "evqual/text/_sentences.py",
    "evqual/text/_stem.py",
    "evqual/text/_tokens.py",
    "evqual/text/_words.py",
    "evqual/evidence/_engine.py",
    "evqual/evidence/_lexicon.py",
    "evqual/evidence/_reading.py",
    "evqual/evidence/_values.py",
    "evqual/features/_analysis.py",
    "evqual/features/_checks.py",
    "evqual/features/_drift.py",
    "evqual/features/_featurizer.py",
    "evqual/features/_lexical.py",
    "evqual/features/_novelty.py",
    "evqual/features/_similarity.py",
    "evqual/features/_structure.py",
    "evqual/features/_surface.py",
    "evqual/features/_token_features.py",
    # the scoring path after the reading: the shipped model's trees, text model and calibration, the answer's
    # result, its reasons and the policy (issue 41, session 11)
    "evqual/models/_detector.py",
    "evqual/models/_estimators.py",
    "evqual/models/_fasttrees.py",
    "evqual/models/_frame.py",
    "evqual/models/_lean.py",
    "evqual/models/_ood.py",
    "evqual/models/_spans.py",
    "evqual/scoring/_policy.py",
    "evqual/scoring/_scorer.py",
    "evqual/scoring/_topics.py",
    "evqual/explain/_reasons.py",
]

# Python semantics throughout (no C integer or float types from annotations): the compiled module computes
# exactly what its source computes interpreted.
KERNELS = [
    "evqual/_untrack.pyx",
    "evqual/evidence/_align.pyx",
    "evqual/models/_textdot.pyx",
    "evqual/models/_treewalk.pyx",
    "evqual/text/_scan.pyx",
]
"""Typed kernels written for Cython (``.pyx``): each has a Python fallback in the module that calls it."""

DIRECTIVES = {
    "language_level": 3,
    "binding": True,  # functions keep their signatures, docstrings and doctests
    "annotation_typing": False,
    "autotestdict": False,  # doctests are collected from the source, once
    "embedsignature": True,
}


class OptionalBuildExt(build_ext):
    """``build_ext`` that warns and carries on without the compiled modules when they cannot be built."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # compile the modules on every core (setuptools' default is one)
            self.parallel = os.cpu_count() or 1

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any build failure falls back to pure Python
            _warn(f"the compiled modules could not be built ({exc}); evqual is installed as pure Python")

    def build_extension(self, ext):
        if self.compiler.compiler_type == "unix":  # gcc and clang
            # Cython 3.0-3.3 miscompiles an `and`/`or` of a Python object and C booleans into a cast of the
            # boolean to a pointer (a crash at run time); the C compiler sees the cast: make it an error, so
            # that such a module is never installed compiled
            ext.extra_compile_args = list(ext.extra_compile_args or []) + ["-Werror=int-to-pointer-cast"]
        elif self.compiler.compiler_type == "msvc":  # the same cast is MSVC's warning C4312
            ext.extra_compile_args = list(ext.extra_compile_args or []) + ["/we4312"]
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            _warn(f"{ext.name} could not be compiled ({exc}); it runs as pure Python")


def _warn(message: str) -> None:
    print(f"evqual: WARNING: {message}", file=sys.stderr)


def _extensions():
    if os.environ.get("EVQUAL_PURE_PYTHON", "").strip() not in ("", "0"):
        _warn("EVQUAL_PURE_PYTHON is set: the compiled modules are not built")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        _warn("Cython is not installed: evqual is installed as pure Python")
        return []
    jobs = min(len(COMPILED), os.cpu_count() or 1)
    return cythonize(COMPILED + KERNELS, compiler_directives=DIRECTIVES, build_dir="build/cython", quiet=True,
                     nthreads=jobs if jobs > 1 else 0)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
