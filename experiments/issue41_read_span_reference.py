"""Issue 41, session 7: the span reader against the reader it replaced, on every claim and context sentence of a
data set.

    python experiments/issue41_read_span_reference.py ../shared/data/ragtruth

Cuts every answer into claims (``evqual.text.split_claims``) and every distinct context's chunks into sentences,
reads each piece with ``evqual.evidence._reading.read_span`` and with ``reference_read_span`` of
``tests/_reference_reading.py`` (the reader before the session, kept for the tests), and prints how many pieces
were read and how many read differently (each difference's text too, the first three).  It imports a private
part and a test helper, which is why it lives here and not in ``scripts/``.  Result: ``docs/RESULTS.md``, issue
41 session 7.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _reference_reading import reference_read_span  # noqa: E402

from evqual.data import load_data  # noqa: E402
from evqual.evidence._reading import read_span  # noqa: E402
from evqual.text import split_claims, split_sentences  # noqa: E402


def main(data: str) -> int:
    warnings.simplefilter("ignore")
    pieces, seen = [], set()
    for ex in load_data(data).examples:
        pieces.extend((ex.output, s, e) for s, e in split_claims(ex.output))
        if ex.context not in seen:
            seen.add(ex.context)
            for text in ex.chunk_texts:
                pieces.extend((text, s, e) for s, e in split_sentences(text))
    differ = [(t, s, e) for t, s, e in pieces if read_span(t, s, e) != reference_read_span(t, s, e)]
    for t, s, e in differ[:3]:
        print("differs:", repr(t[s:e])[:200])
    print(f"{len(pieces)} claims and context sentences read; {len(differ)} read differently")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ragtruth"))
