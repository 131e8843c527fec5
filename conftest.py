"""Collection rules for the doctests of modules that need an optional extra.

A module that subclasses a framework's classes cannot be imported without that framework; its doctests
are left out of collection when the extra is not installed (the extras' CI pass runs them).
"""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("langchain_core") is None:
    collect_ignore.append("evqual/integrations/_langchain.py")
if importlib.util.find_spec("llama_index") is None or importlib.util.find_spec("llama_index.core") is None:
    collect_ignore.append("evqual/integrations/_llamaindex.py")

# The reading path's modules are compiled in place (setup.py): `evqual.text._tokens` is then loaded from
# `_tokens.cpython-*.so` beside `_tokens.py`.  Their doctests are collected from the compiled modules' docstrings
# (Cython keeps them); pytest would otherwise refuse the module as not the file it collects.
import os  # noqa: E402

os.environ.setdefault("PY_IGNORE_IMPORTMISMATCH", "1")
