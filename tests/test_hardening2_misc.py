"""Hardening, second round (issue 21), sections 0, 5 and 6: cost that grew with sentences x passages, worker
counts, one rule for a missing query.  Time itself is measured by ``scripts/bench.py sizes`` (docs/RESULTS.md),
not here: these tests check the bounds that make the cost near-linear."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from evqual.cli import main


# ---------------------------------------------------------------------------------------------- cost: sentences x passages
def _large_context(n_passages=800, seed=0):
    rng = np.random.default_rng(seed)
    passages = [f"Alice met w{rng.integers(5000)} and w{rng.integers(5000)} with {rng.integers(1000)} items."
                for _ in range(n_passages)]
    passages[min(400, n_passages - 1)] = "The Golden Gate Bridge opened in 1937 after four years of construction."
    return passages


def test_a_claim_is_compared_with_a_bounded_number_of_evidence_sentences():
    from evqual.features._checks import LARGE_CONTEXT, MAX_CANDIDATES, EvidenceUnits

    ev = EvidenceUnits(_large_context())
    assert len(ev.spans) > LARGE_CONTEXT
    # the stems every distractor holds ("Alice", "met", "with", "items"): every one of them shares them
    stems = set.intersection(*(set(ev.seg_stems(g)) for g in range(10)))
    assert len(stems) >= 2
    assert len(ev.sentences_for(stems)) == MAX_CANDIDATES
    small = EvidenceUnits(_large_context(100))
    assert len(small.sentences_for(stems)) == len(small.spans) - 1  # small contexts: every sentence sharing two,
    # as before (all but the bridge sentence)


def test_a_conflict_is_still_found_in_a_large_context():
    from evqual.features._checks import EvidenceUnits, claim_checks

    output = "The Golden Gate Bridge opened in 1932 after four years of construction."
    _, findings = claim_checks(output, [(0, len(output))], EvidenceUnits(_large_context()))
    assert any(f.check in ("date", "number") and "1937" in f.evidence for f in findings[0]), findings


def test_sentence_match_beyond_the_exact_pair_budget_keeps_the_best_passage(monkeypatch):
    """Above EXACT_PAIRS the pairs come from rarer terms; a sentence's nearest passage (sharing rare words)
    and its measures are those of the exact computation."""
    import evqual.features._similarity as sim

    passages = _large_context(600)
    index = sim.ContextIndex(passages)
    sentences = [["golden", "gate", "bridge", "open", "1937", "construct"], ["alice", "met", "item"]]
    exact = index.match(sentences)
    monkeypatch.setattr(sim, "EXACT_PAIRS", 10)
    monkeypatch.setattr(sim, "DENSE_CELLS", 1)  # the sparse path
    approx = index.match(sentences)
    assert approx.nearest[0] == exact.nearest[0] == 400
    for name in ("tfidf", "bm25", "recall", "precision", "jaccard"):
        assert getattr(approx, name)[0] == pytest.approx(getattr(exact, name)[0])


def test_claim_units_no_longer_copy_the_answer_vocabulary():
    """Each claim unit once copied the whole answer's word set (quadratic in the answer's length).

    The spy replaces the module's ``_check_item``, which the compiled module calls directly (a typed C
    function since issue 41's session 10): the check runs the Python sources, from which that module is built,
    in a child process (``EVQUAL_PURE_PYTHON=1``)."""
    import os
    import subprocess
    import sys

    code = """
import evqual.features._checks as checks
assert checks.__file__.endswith(".py"), checks.__file__
calls = []
real = checks._check_item
def spy(item, ev, claim_words, *a, **k):
    calls.append(id(claim_words))
    return real(item, ev, claim_words, *a, **k)
checks._check_item = spy
output = " ".join(f"Alice opened it in {1900 + i} with {i} items." for i in range(40))
sentences = []
pos = 0
for part in output.split(". "):
    end = output.index(part, pos) + len(part) + 1
    sentences.append((pos, min(end, len(output))))
    pos = end + 1
checks.claim_checks(output, sentences, checks.EvidenceUnits(["Alice opened it in 1950 with 3 items."]))
print(len(calls), len(set(calls)))
"""
    env = dict(os.environ, EVQUAL_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    n_calls, n_sets = map(int, out.stdout.split())
    assert n_calls > 40 and n_sets == 1  # one shared set, not a copy per unit


# ---------------------------------------------------------------------------------------------- workers
def test_jobs_are_capped_at_cores_and_blocks(tmp_path, monkeypatch):
    import concurrent.futures

    import evqual.scoring._parallel as par

    seen = []
    real = concurrent.futures.ProcessPoolExecutor  # imported by score_file_parallel when it runs

    class Spy(real):
        def __init__(self, *a, max_workers=None, **k):
            seen.append(max_workers)
            super().__init__(*a, max_workers=max_workers, **k)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Spy)
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"id": str(i), "context": ["The bridge opened in 1932."],
                                         "output": f"It opened in {1930 + i}."}) for i in range(10)) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["score", str(src), "--out", str(tmp_path / "a.jsonl"), "--jobs", "64", "--no-progress",
                     "--batch-size", "8"]) == 0
        assert main(["score", str(src), "--out", str(tmp_path / "b.jsonl"), "--no-progress"]) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert all(w <= min(par.usable_cores(), 2) for w in seen)  # 10 lines in blocks of 8: 2 blocks


# ---------------------------------------------------------------------------------------------- one rule for a missing query
def test_the_readme_item_without_a_query_scores_alike_in_the_api_and_the_cli(tmp_path):
    from evqual.scoring import Scorer

    item = {"id": "nq", "context": ["The bridge opened in 1932 after six years of work."],
            "output": "The bridge opened in 1935.", "task_type": "QA"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = Scorer.load().score_batch([item])[0]
        src = tmp_path / "in.jsonl"
        src.write_text(json.dumps(item) + "\n")
        assert main(["score", str(src), "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 0
    rec = json.loads((tmp_path / "o.jsonl").read_text())
    assert "error" not in rec
    assert rec["risk"] == api.risk and rec["decision"] == api.decision
