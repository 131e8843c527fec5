"""evqual inside RAG frameworks: LangChain (the ``langchain`` extra) and LlamaIndex (the ``llamaindex`` extra).

Nothing is imported until a name is used, so ``import evqual.integrations`` needs neither framework; a
name whose framework is missing raises :class:`evqual.errors.MissingDependencyError` with the install
command.

* LangChain: :class:`EvqualRunnable`, :func:`evqual_guard`.
* LlamaIndex: :class:`EvqualEvaluator`, :func:`attach_evqual`, :func:`feedback_of`.
"""

import importlib

__all__ = ["EvqualRunnable", "evqual_guard", "REFUSAL", "EvqualEvaluator", "attach_evqual", "feedback_of"]

_WHERE = {"EvqualRunnable": "_langchain", "evqual_guard": "_langchain", "REFUSAL": "_langchain",
          "EvqualEvaluator": "_llamaindex", "attach_evqual": "_llamaindex",
          "feedback_of": "_llamaindex"}


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__():
    return sorted(list(globals()) + __all__)
