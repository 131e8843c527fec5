"""Issue 41, session 5: how often the reading path calls a regular expression, and for how long.

    EVQUAL_PURE_PYTHON=1 python experiments/issue41_regex_calls.py ../shared/data/ragtruth

Replaces every compiled pattern held by a module of ``evqual.features``, ``evqual.evidence`` and ``evqual.text``
with a proxy that counts and times its calls (``finditer`` is consumed into a list), then featurizes answers
100-700 of the data set and prints the transform's time, the time inside patterns and the 30 costliest
patterns (seconds, calls, name).  It needs the pure-Python path: a compiled module's globals are read from C.
The proxies' own overhead (about a microsecond a call) is in the times.  It reaches into private module
globals, which is why it lives here and not in ``scripts/``.  Result: ``docs/RESULTS.md``, issue 41 session 5,
"Where the per-answer time goes now".
"""

from __future__ import annotations

import collections
import importlib
import pkgutil
import re
import sys
import time
import warnings

import evqual
from evqual.data import load_data
from evqual.features import EvidenceFeaturizer


class _Timed:
    def __init__(self, pattern, name, spent, calls):
        self._pattern, self._name, self._spent, self._calls = pattern, name, spent, calls

    def __getattr__(self, attr):
        return getattr(self._pattern, attr)


def _method(name):
    def call(self, *args, **kwargs):
        start = time.perf_counter()
        out = getattr(self._pattern, name)(*args, **kwargs)
        if name == "finditer":
            out = list(out)
        self._spent[self._name] += time.perf_counter() - start
        self._calls[self._name] += 1
        return iter(out) if name == "finditer" else out
    return call


for _name in ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"):
    setattr(_Timed, _name, _method(_name))


def main(data: str) -> None:
    warnings.simplefilter("ignore")
    examples = load_data(data).examples[:700]
    featurizer = EvidenceFeaturizer().fit(examples[:20])
    featurizer.transform(examples[20:60])
    spent, calls = collections.Counter(), collections.Counter()
    for info in pkgutil.walk_packages(evqual.__path__, "evqual."):
        if not info.name.startswith(("evqual.features", "evqual.evidence", "evqual.text")) or \
                info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for key, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                setattr(module, key, _Timed(value, f"{info.name}.{key}", spent, calls))
    start = time.perf_counter()
    featurizer.transform(examples[100:700])
    total = time.perf_counter() - start
    print(f"transform {total:.2f} s; inside patterns {sum(spent.values()):.2f} s, {sum(calls.values())} calls")
    for key, seconds in spent.most_common(30):
        print(f"{seconds:7.3f} {calls[key]:8d} {key}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ragtruth")
