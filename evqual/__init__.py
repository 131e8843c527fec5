"""evqual: evidence-quality features and classical hallucination detectors for RAG.

Sub-packages: :mod:`evqual.data` (loading, validation, targets),
:mod:`evqual.text` (tokens, sentences, numbers, entities) and
:mod:`evqual.features` (the :class:`~evqual.features.EvidenceFeaturizer`).
"""

from ._build import build_info  # first: EVQUAL_PURE_PYTHON=1 must act before any compiled module loads
from ._version import __version__

__all__ = ["__version__", "build_info"]
