"""Size caps on what one input row may hold (defence in depth).

evqual's featurizer and scorer run in time and memory linear in the input,
but a single hostile or broken row (a whole log file pasted into one answer, a
context of a gigabyte) can still take a worker's memory or minutes of CPU.
Loaders and the scoring API therefore refuse, with a row-level error naming
the field and the limit, rows larger than these caps; every other row is still
read.  The defaults are far above any RAG answer and context seen in practice
(RAGTruth's largest context is about 17,000 characters) and can be raised or
switched off (``None``) per call, or on the command line with
``--max-output-chars`` and ``--max-context-chars`` (``0`` = no limit).

Examples
--------
>>> from evqual.data import Limits
>>> Limits().max_output_chars
1000000
>>> Limits(max_output_chars=None).check_sizes(output="x" * 2_000_000, context="c", query="q") is None
True
>>> Limits(max_output_chars=10).check_sizes(output="x" * 11, context="c", query="q")
('output', 'has 11 characters, more than the limit of 10 (raise it with --max-output-chars, or Limits(max_output_chars=...))')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits", "DEFAULT_LIMITS"]


@dataclass(frozen=True)
class Limits:
    """Caps on one input row; ``None`` switches a cap off.

    Parameters
    ----------
    max_output_chars : int or None, default=1_000_000
        Characters of the answer under audit (about 20,000 sentences of
        ordinary prose fit in 2 MB; scoring one takes a few seconds).
    max_context_chars : int or None, default=10_000_000
        Characters of the evidence after a list or record is rendered as text.
    max_query_chars : int or None, default=1_000_000
        Characters of the query.
    max_line_bytes : int or None, default=256 MiB
        Bytes of one JSONL line; a longer line is skipped without being read
        into memory whole, and reported.
    """

    max_output_chars: int | None = 1_000_000
    max_context_chars: int | None = 10_000_000
    max_query_chars: int | None = 1_000_000
    max_line_bytes: int | None = 256 * 1024 * 1024

    def __post_init__(self):
        for name in ("max_output_chars", "max_context_chars", "max_query_chars", "max_line_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"The '{name}' parameter of Limits must be a positive int or None; got {value!r}.")

    def check_sizes(self, *, output: str, context: str, query: str | None) -> tuple[str, str] | None:
        """``(field, message)`` of the first text over its cap, or ``None``."""
        for field, text, cap, flag in (("output", output, self.max_output_chars, "max-output-chars"),
                                       ("context", context, self.max_context_chars, "max-context-chars"),
                                       ("query", query, self.max_query_chars, None)):
            if cap is not None and text is not None and len(text) > cap:
                how = f"--{flag}, or " if flag else ""
                attr = flag.replace("-", "_") if flag else "max_query_chars"
                return field, (f"has {len(text):,} characters, more than the limit of {cap:,} "
                               f"(raise it with {how}Limits({attr}=...))")
        return None


DEFAULT_LIMITS = Limits()
"""The caps loaders and the scoring API apply unless given others."""
