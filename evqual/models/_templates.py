"""What each method's factory builds, as data: the parameter templates of a lean load.

A full load compares every estimator of a saved model with the one its
method's factory builds now (:func:`evqual.models.templates_for`): the same
classes at the same places, the same parameters (a swapped token pattern or
rule is refused).  Building the factory's estimators imports scikit-learn, so
a lean load (:mod:`evqual.models._lean`) compares the model with
``method_templates.json`` instead: each method's estimators as
``{"type": saved type name, "params": {name: value}}`` nodes, written by
:func:`write_method_templates` from the factories and kept equal to them by
``tests/test_lean.py`` (regenerate after changing a factory or scikit-learn's
version: ``python -m evqual.models._templates``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["TEMPLATES_FILE", "method_templates", "build_method_templates", "write_method_templates",
           "check_against_template"]

TEMPLATES_FILE = Path(__file__).with_name("method_templates.json")


def _type_name(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _encode(value, where: str):
    if hasattr(value, "get_params") and not isinstance(value, type):
        return {"$est": _node(value, where)}
    if value is None or isinstance(value, (bool, int, str)) and type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, type):
        return {"$type": _type_name(value)}
    if type(value) is tuple:
        return {"$tuple": [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if type(value) is list:
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if type(value) is dict and all(type(k) is str for k in value):
        return {"$dict": {k: _encode(v, f"{where}[{k!r}]") for k, v in value.items()}}
    raise TypeError(f"{where}: cannot write a template value of type {type(value).__name__}")


def _node(est, where: str) -> dict:
    return {"type": _type_name(type(est)),
            "params": {k: _encode(v, f"{where}.{k}") for k, v in sorted(est.get_params(deep=False).items())}}


def build_method_templates() -> dict:
    """``{"sklearn_version", "methods": {method: node}}`` from the factories (imports scikit-learn)."""
    import sklearn

    from ._methods import METHODS, RESPONSE_VARIANTS, get_method

    return {"sklearn_version": sklearn.__version__,
            "methods": {name: _node(get_method(name).make(), name)
                        for name in list(METHODS) + list(RESPONSE_VARIANTS)}}


def write_method_templates(path=TEMPLATES_FILE) -> Path:
    """Write :func:`build_method_templates` to ``path`` (default: the packaged ``method_templates.json``)."""
    path = Path(path)
    path.write_text(json.dumps(build_method_templates(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


_CACHE: dict = {}


def method_templates() -> dict:
    """The packaged templates (read once)."""
    got = _CACHE.get("templates")
    if got is None:
        got = _CACHE["templates"] = json.loads(TEMPLATES_FILE.read_text(encoding="utf-8"))
    return got


def _decode(value):
    import importlib

    if type(value) is list:
        return [_decode(v) for v in value]
    if type(value) is not dict:
        return value
    (tag, body), = value.items()
    if tag == "$tuple":
        return tuple(_decode(v) for v in body)
    if tag == "$float":
        return float(body)
    if tag == "$dict":
        return {k: _decode(v) for k, v in body.items()}
    if tag == "$type":
        module, _, name = body.rpartition(".")
        if module != "numpy":
            raise ValueError(f"a template names the type {body!r}; only numpy's are read")
        return getattr(importlib.import_module(module), name)
    return value  # {"$est": node}: compared on its own


def _saved_name(obj) -> str:
    from ._lean import lean_name

    return lean_name(obj) or _type_name(type(obj))


def check_against_template(model, node: dict, where: str, fail) -> None:
    """``model`` must have the classes and parameters of the template ``node`` (a lean load's
    :func:`~evqual.models.templates_for` and :func:`~evqual.models._audit._check_params` in one walk).

    Raises ``fail(where, problem)`` at the first difference: another class, a
    missing parameter, another value, or sub-estimators that do not pair up.
    """
    from ._audit import _equal, _oneline
    from ._lean import LeanObject

    stack = [(model, node, where)]
    while stack:
        obj, want, at = stack.pop()
        name = _saved_name(obj)
        if name != want["type"]:
            raise fail(at, f"must be a {want['type'].rpartition('.')[2]} (what its method builds); got "
                           f"{type(obj).__name__}")
        attrs = vars(obj)
        if not isinstance(obj, LeanObject):
            try:
                got_names = set(obj.get_params(deep=False))
            except Exception as exc:  # noqa: BLE001 - a malformed estimator
                raise fail(at, f"has malformed parameters ({type(exc).__name__}: {_oneline(exc, 120)})") from None
            if got_names != set(want["params"]):
                raise fail(at, "has other parameters than its class")
        for key, value in want["params"].items():
            if key not in attrs:
                raise fail(f"{at}.{key}", "is missing")
            got = attrs[key]
            if type(value) is dict and "$est" in value:
                stack.append((got, value["$est"], f"{at}.{key}"))
                continue
            pairs = _estimator_pairs(value)
            if pairs is not None:  # steps or named estimators: the estimators pair up, compared on their own
                if not isinstance(got, (list, tuple)) or len(got) != len(pairs):
                    raise fail(f"{at}.{key}", f"must hold {len(pairs)} estimators")
                for i, (g, w) in enumerate(zip(got, pairs)):
                    if w is None:
                        continue
                    if isinstance(g, tuple) and w[0] == "pair":
                        g = g[-1] if g else None
                    stack.append((g, w[1], f"{at}.{key}[{i}]"))
                continue
            expected = _decode(value)
            if not _equal(got, expected):
                raise fail(f"{at}.{key}", f"is {_oneline(repr(got), 80)}; evqual builds {_oneline(repr(expected), 80)}")


def _estimator_pairs(value):
    """For a list or tuple holding estimators (``[(name, est), ...]`` or ``[est, ...]``), one entry per item:
    ``("pair", node)``, ``("est", node)`` or ``None`` (an item without one); ``None`` for any other value."""
    items = value if type(value) is list else value.get("$tuple") if type(value) is dict and "$tuple" in value \
        else None
    if items is None:
        return None
    out, found = [], False
    for item in items:
        if type(item) is dict and "$est" in item:
            out.append(("est", item["$est"]))
            found = True
            continue
        inner = item if type(item) is list else item.get("$tuple") if type(item) is dict and "$tuple" in item \
            else None
        if inner and type(inner[-1]) is dict and "$est" in inner[-1]:
            out.append(("pair", inner[-1]["$est"]))
            found = True
        else:
            out.append(None)
    return out if found else None


if __name__ == "__main__":  # pragma: no cover - the regeneration command of the module docstring
    print(write_method_templates())
