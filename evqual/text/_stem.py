"""The Snowball English stemmer evqual uses everywhere, from the fastest installed implementation.

`PyStemmer <https://pypi.org/project/PyStemmer/>`_ (C, wheels for the usual
platforms, a core dependency) and `snowballstemmer
<https://pypi.org/project/snowballstemmer/>`_ (pure Python, the fallback when
PyStemmer cannot be imported) are two builds of the same Snowball English
algorithm and give the same stems (``tests/test_fastpaths.py`` compares them
on every word of the embedded sample and on random strings; they agreed on
all 25,078 words of RAGTruth and 300,000 random strings); PyStemmer is about
18x faster per word.  (snowballstemmer itself hands out PyStemmer's class
when PyStemmer is installed.)  Stems are memoised by their callers, so the
difference shows on words seen for the first time: answers with new contexts.

>>> stemmer_backend() in STEMMER_BACKENDS
True
>>> english_stemmer().stemWord("opening")
'open'
"""

from __future__ import annotations

import importlib
import threading
from functools import lru_cache

__all__ = ["STEMMER_BACKENDS", "english_stemmer", "stemmer_backend"]

STEMMER_BACKENDS = ("pystemmer", "snowballstemmer")
"""The two builds of the Snowball English stemmer, in order of preference."""


_LOCAL = threading.local()


@lru_cache(maxsize=1)
def stemmer_backend() -> str:
    """``"pystemmer"`` or ``"snowballstemmer"``: which build :func:`english_stemmer` uses."""
    try:
        # importlib, not an import statement: a compiled module's `import` takes a None in sys.modules (a
        # blocked import) for the module itself; importlib raises ImportError on both paths
        importlib.import_module("Stemmer")  # PyStemmer
        return "pystemmer"
    except ImportError:
        return "snowballstemmer"


def english_stemmer():
    """This thread's Snowball English stemmer (``stemWord``, ``stemWords``).

    Both builds keep state while they stem a word, so one instance must not be
    used by two threads at once: each thread gets its own.  PyStemmer's own
    word cache is off (size 0): evqual's callers memoise stems and ask only for
    words they have not seen, which a cache only slows down.
    """
    st = getattr(_LOCAL, "stemmer", None)
    if st is None:
        if stemmer_backend() == "pystemmer":
            st = importlib.import_module("Stemmer").Stemmer("english", 0)
        else:
            import snowballstemmer

            st = snowballstemmer.stemmer("english")
        _LOCAL.stemmer = st
    return st
