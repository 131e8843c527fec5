"""The held-out-types development suite (tests/data/heldout_types) is frozen: report-only.

Its pairs were written before the evidence engine of issue 22 and must not change
afterwards; an edit makes ``test_suite_is_frozen`` fail.
"""

import hashlib
from pathlib import Path

from evqual.evaluation import load_pairs

ROOT = Path(__file__).resolve().parent / "data"
HELDOUT = ROOT / "heldout_types" / "pairs_c.jsonl"
OLD = ROOT / "contrastive"
FROZEN_SHA256 = "bd029201dfbdbaf2745100c49b86ea7bdf7c260f35cd7054019169a43cd421de"


def test_suite_is_frozen():
    assert hashlib.sha256(HELDOUT.read_bytes()).hexdigest() == FROZEN_SHA256


def test_suite_size_and_types_are_new():
    pairs = load_pairs(HELDOUT)
    types = {p["type"] for p in pairs}
    assert len(pairs) >= 120 and len(types) >= 10
    assert all(sum(p["type"] == t for p in pairs) >= 10 for t in types)
    old = load_pairs(OLD)
    assert types.isdisjoint({p["type"] for p in old})
    assert {p["pair"] for p in pairs}.isdisjoint({p["pair"] for p in old})
    assert sum(p["paraphrase"] for p in pairs) >= 0.8 * len(pairs)
