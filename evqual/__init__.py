"""evqual: evidence-quality features and classical hallucination detectors for RAG.

Sub-packages: :mod:`evqual.data` (loading, validation, targets),
:mod:`evqual.text` (tokens, sentences, numbers, entities) and
:mod:`evqual.features` (the :class:`~evqual.features.EvidenceFeaturizer`).
"""

from ._version import __version__

__all__ = ["__version__"]
