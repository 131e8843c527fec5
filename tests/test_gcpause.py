"""The collector paused over a batch of analyses (evqual/_gcpause.py, issue 41 session 5).

Featurising spent about 10% of its time in collections that found nothing; the analysis makes no reference
cycles, so the featurizer pauses automatic collection over each chunk.  These tests hold the two halves of that
bargain: the pause happens and is undone, and the analysis leaves no cyclic garbage behind (if a change made
cycles, paused chunks would hold them until the next collection).
"""

from __future__ import annotations

import gc
import threading
import warnings

import pytest

from evqual._gcpause import gc_paused


@pytest.fixture
def gc_state():
    was = gc.isenabled()
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.enable() if was else gc.disable()


def test_paused_inside_restored_after(gc_state):
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nests
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_after_an_exception(gc_state):
    gc.enable()
    with pytest.raises(KeyError):
        with gc_paused():
            raise KeyError("x")
    assert gc.isenabled()


def test_a_caller_who_turned_it_off_keeps_it_off(gc_state):
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_threads_overlapping_leave_it_on(gc_state):
    """Two threads' blocks overlap; whichever closes last turns the collector back on, never the first."""
    gc.enable()
    inside = threading.Barrier(2, timeout=10)
    first_out = threading.Event()
    seen = {}

    def worker(name, wait_for_other):
        with gc_paused():
            inside.wait()
            if wait_for_other:
                assert first_out.wait(timeout=10)
                seen["after_other_left"] = gc.isenabled()
        if not wait_for_other:
            first_out.set()

    a = threading.Thread(target=worker, args=("a", False))
    b = threading.Thread(target=worker, args=("b", True))
    a.start(), b.start()
    a.join(timeout=20), b.join(timeout=20)
    assert not a.is_alive() and not b.is_alive()
    assert seen["after_other_left"] is False  # b still inside: still paused
    assert gc.isenabled()


def _featurizer(sample):
    from evqual.features import EvidenceFeaturizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return EvidenceFeaturizer().fit(sample.examples[:10])


def _collections_during(fn):
    """``(fn(), collections started while it ran)`` with a collection due at every allocation."""
    counts = []
    callback = lambda phase, info: counts.append(info["generation"]) if phase == "start" else None
    gc.enable()
    gc.set_threshold(1, 1, 1)
    gc.callbacks.append(callback)
    try:
        return fn(), len(counts)
    finally:
        gc.callbacks.remove(callback)


def test_transform_collects_nothing_while_it_analyses(sample, gc_state):
    """With a collection due at every allocation, a transform sees a handful of collections (after its
    chunk's block), not one per allocation; it fails when the featurizer does not pause."""
    f = _featurizer(sample)
    examples = sample.examples[:12]
    f.transform(examples)  # warm: lazy imports and caches
    f._contexts = None  # fresh context caches: the run reads the contexts again
    X, n = _collections_during(lambda: f.transform(examples))
    assert X.shape[0] == 12
    assert gc.isenabled()
    assert n < 50, f"{n} collections during a paused transform"


def test_analysing_makes_no_cyclic_garbage(sample, gc_state):
    """What the pause relies on: analysing the sample leaves nothing for the collector to find."""
    from evqual.features import EvidenceFeaturizer

    f = _featurizer(sample)
    f.transform(sample.examples[:5])  # warm
    f2 = EvidenceFeaturizer(level="sentence").fit(sample.examples[:10])
    f2.transform(sample.examples[:5])
    gc.collect()
    gc.disable()
    try:
        f.transform(sample.examples)
        f2.transform(sample.examples)
        _, analyses = f.analyze(sample.examples[:20])
        [an.sentences for an in analyses], [an.reading for an in analyses]
        del analyses
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0, f"the analysis left {found} objects in reference cycles"


def test_scoring_collects_nothing_while_it_scores(sample, gc_state):
    """The scorer pauses the collector over a batch (reading, the model, the results): a handful of
    collections with one due at every allocation; it fails when score_examples does not pause."""
    from evqual.scoring import Scorer

    scorer = Scorer.load()
    examples = sample.examples[:8]
    scorer.score_examples(examples)  # warm
    results, n = _collections_during(lambda: scorer.score_examples(examples))
    assert len(results) == 8 and gc.isenabled()
    assert n < 50, f"{n} collections during paused scoring"


def test_scoring_makes_no_cyclic_garbage(sample, gc_state):
    """What the scorer's pause relies on: scoring the sample (results and their JSON) leaves nothing for the
    collector to find."""
    from evqual.scoring import Scorer

    scorer = Scorer.load()
    scorer.score_examples(sample.examples[:3])  # warm
    gc.collect()
    gc.disable()
    try:
        results = scorer.score_examples(sample.examples)
        [r.to_dict() for r in results]
        del results
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0, f"scoring left {found} objects in reference cycles"


# ---------------------------------------------------------------- untracked cache containers (issue 41, session 12)


def _untrack_kernel():
    from evqual._gcpause import _UNTRACK

    if _UNTRACK is None:
        pytest.skip("the compiled kernel is not built (or EVQUAL_PURE_PYTHON is set)")


def test_containers_of_strings_and_numbers_are_untracked_and_no_others():
    _untrack_kernel()
    from evqual._gcpause import untrack_atomic

    atomic = (1, "a", 2.5, None, (3, ("b",)), frozenset({"c"}))
    holds_list = (1, [2])
    a_set = frozenset({"x", 4})
    a_dict = {"k": (1, 2), "j": "v"}
    a_list = [1, 2]
    untrack_atomic([atomic, holds_list, a_set, a_dict, a_list])
    assert not gc.is_tracked(atomic) and not gc.is_tracked(atomic[4]) and not gc.is_tracked(atomic[4][1])
    assert gc.is_tracked(holds_list)  # a list can change: it could make a cycle
    assert not gc.is_tracked(a_set) and not gc.is_tracked(a_dict)
    assert gc.is_tracked(a_list)
    a_dict["l"] = [a_dict]  # a dict tracks itself again when a tracked object goes in (CPython's own rule)
    assert gc.is_tracked(a_dict)
    a_dict.clear()


def test_an_object_is_untracked_only_when_nothing_it_holds_is_tracked():
    _untrack_kernel()
    from evqual._gcpause import untrack_atomic, untrack_settled
    from evqual.features._checks import _item

    plain = _item("name", "acme", None, (frozenset({"acm"}), frozenset()), 0, 4, "Acme", 0, False, 0, 0)
    untrack_atomic((plain.slot, plain.near))
    holding = _item("name", "acme", [1], (frozenset({"acm"}), frozenset()), 0, 4, "Acme", 0, False, 0, 0)
    untrack_atomic((holding.slot, holding.near))

    class Node:
        pass

    cycle = Node()
    cycle.me = cycle
    untrack_settled([plain, holding, cycle])
    assert not gc.is_tracked(plain)
    assert gc.is_tracked(holding) and gc.is_tracked(cycle)


def test_a_cached_contexts_containers_are_untracked(sample):
    """The wiring: after a transform, the cached context's postings, unit keys, items and token rows are not
    tracked.  (A collection may untrack some of the tuples and dicts itself; never the frozensets or the
    items, whose assertions fail when their calls are removed.)"""
    _untrack_kernel()
    f = _featurizer(sample)
    f.transform(sample.examples[:6])
    idx = f._contexts[1].get(sample.examples[0])
    ev, units = idx.evidence_index, idx.evidence_units
    assert not gc.is_tracked(ev.postings) and not any(map(gc.is_tracked, ev.unit_keys))
    assert not any(gc.is_tracked((r.keys, r.spans, r.raws)[i]) for r in ev.readings for i in range(3))
    assert not gc.is_tracked(units.postings) and not gc.is_tracked(units.words)
    segs = list(units._seg_items)
    assert segs, "the checks read no evidence sentence"
    for seg in segs:
        got = units.segment_items(seg)
        items, index = got
        assert not gc.is_tracked(got) and not gc.is_tracked(items) and not gc.is_tracked(index)
        assert not any(map(gc.is_tracked, items)) and not any(map(gc.is_tracked, index.values()))
    assert not any(gc.is_tracked(t) for toks in units._toks.values() for t in toks)
    assert not gc.is_tracked(idx.bigrams) and not any(map(gc.is_tracked, idx.bigrams))


def test_untracked_context_data_is_freed_with_its_cache(sample, gc_state):
    """An untracked container in a cycle would never be freed; featurizing with a fresh cache again and
    again must not grow the memory Python has allocated."""
    import tracemalloc

    def once():
        f = _featurizer(sample)
        f.transform(sample.examples)

    once()  # warm: imports, memos of words
    gc.collect()
    tracemalloc.start()
    try:
        once()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            once()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 300_000, f"{grown} bytes more after three more featurizations"
