"""``python -m evqual.features``: print the feature table."""

from ._registry import describe_features

print(describe_features())
