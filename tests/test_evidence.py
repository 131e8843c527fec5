"""The evidence engine (evqual.evidence): values, lexicon, reading, alignment and differences, transformations,
the claim model.  Examples are written here; none comes from the development suites."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.utils.estimator_checks import parametrize_with_checks

from evqual.evidence import (
    CLAIM_FEATURE_TABLE,
    CLAIM_FEATURES,
    FLIP_TAGS,
    LOGIC_CLASSES,
    ClaimModel,
    EvidenceEngine,
    EvidenceIndex,
    flip_claim,
    inflections,
    logic_lexicon,
    monotonic_constraints,
    preserve_claim,
    read_span,
    read_values,
    split_claims,
    transform_evidence,
)


def keys(text):
    return [v.key for v in read_values(text)]


def diffs(output, context, query=""):
    r = EvidenceEngine().read(output, context, query)
    return [(d.cls, d.kind, d.claim_text, d.evidence_text) for c in r.claims for d in c.differences]


# ------------------------------------------------------------------------------------------------ values


@pytest.mark.parametrize("a, b", [
    ("8 tablets", "eight tablets"),
    ("500 mg", "0.5 g"),
    ("5 km", "5,000 metres"),
    ("two weeks", "14 days"),
    ("a fortnight", "14 days"),
    ("weekly", "once a week"),
    ("every week", "every 7 days"),
    ("twice an hour", "every 30 minutes"),
    ("fortnightly", "every other week"),
    ("one hundred and twenty", "120"),
    ("$3.2 billion", "$3,200 million"),
    ("12 dollars", "$12"),
    ("16 percent", "16%"),
])
def test_one_value_in_different_words_has_one_key(a, b):
    assert keys(a) == keys(b) and keys(a)


@pytest.mark.parametrize("a, b", [("500 mg", "500 g"), ("weekly", "daily"), ("every other week", "every week"),
                                  ("1932", "1935"), ("in May", "in June"), ("$12", "€12")])
def test_different_values_have_different_keys(a, b):
    assert keys(a) != keys(b)


def test_may_is_a_month_only_when_capitalised_and_one_is_not_a_count_alone():
    assert keys("It may open in May.") == ["month:5"]
    assert keys("one of the best") == [] and keys("one tablet a day")[:0] == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_values_never_fail_and_stay_inside_the_text(text):
    for v in read_values(text):
        assert 0 <= v.start <= v.end <= len(text)


# ------------------------------------------------------------------------------------------------ lexicon


def test_inflections_match_forms_not_derivations():
    assert {"proved", "proves", "proving"} <= inflections("prove")
    assert "noted" not in inflections("not") and "clears" not in inflections("clearly")


def test_the_lexicon_file_is_well_formed():
    lex = logic_lexicon()
    assert set(lex.senses) == set(LOGIC_CLASSES)
    for cls, group in lex.groups:
        assert cls in lex.senses and set(group) <= set(lex.senses[cls]), (cls, group)
    assert lex.exclusive("time", "before", "after") and not lex.exclusive("quantity", "approx", "at_least")


def test_a_negator_turns_the_scalar_after_it():
    assert "L:quantity:at_most" in read_span("Do not take more than 8 tablets.").keys
    assert "L:polarity:neg" not in read_span("Do not take more than 8 tablets.").keys
    assert read_span("The shop is not open.").negated


def test_names_and_record_values():
    r = read_span("Sunday: Closed")
    assert "n:closed" not in r.keys
    assert "n:orva" in read_span("We swam in Lake Orva.").keys


# ------------------------------------------------------------------------------------------------ engine


def test_claims_are_cut_at_semicolons_and_conjunctions():
    s = "The plant opened in 1932, but it closed in 1990; staff moved to Leeds."
    assert [s[a:b] for a, b in split_claims(s)] == ["The plant opened in 1932", "but it closed in 1990",
                                                    "staff moved to Leeds."]


def test_feature_table_and_constraints():
    assert len(CLAIM_FEATURES) == len(set(CLAIM_FEATURES)) == len(CLAIM_FEATURE_TABLE)
    cst = dict(zip(CLAIM_FEATURES, monotonic_constraints()))
    assert cst["value.conflict.v1"] == 1 and cst["align.recall.v1"] == -1 and cst["claim.items.v1"] == 0


@pytest.mark.parametrize("output, context, expected", [
    ("The clinic opens after noon.", ["The clinic opens before noon on weekdays."], ("time", "conflict")),
    ("The ferry sails daily.", ["The ferry sails weekly from the north pier."], ("value", "conflict")),
    ("The fee is $40.", ["The fee is $25 for adults."], ("value", "conflict")),
    ("The drug cures the infection.", ["The drug may cure the infection."], ("modality", "drops")),
    ("The library is inside the town hall.", ["The library is outside the town hall."], ("direction", "conflict")),
    ("The bridge was closed.", ["The bridge was opened in May."], ("opposite", "conflict")),
    ("The service is unavailable at night.", ["The service is available at night."], ("polarity", "prefix")),
    # the prefix on the evidence's side, and the three-letter ones (the test runs only for a word that starts
    # as a prefix does or that an evidence word has after one: EvidenceIndex.prefix_view)
    ("The service is available at night.", ["The service is unavailable at night."], ("polarity", "prefix")),
    ("The members disagree on the plan.", ["The members agree on the plan."], ("polarity", "prefix")),
    ("The members agree on the plan.", ["The members disagree on the plan."], ("polarity", "prefix")),
])
def test_a_changed_word_of_logic_is_a_difference_of_its_class(output, context, expected):
    assert expected in [(c, k) for c, k, _, _ in diffs(output, context)]


def test_a_paraphrase_with_same_sense_words_has_no_logic_difference():
    found = diffs("The clinic might open before midday.", ["The clinic may open before noon."])
    assert not [d for d in found if d[0] in LOGIC_CLASSES]


def test_a_name_from_another_passage_is_a_swap_and_borrowed():
    context = ["Ana Ruiz won the 2019 race in Lisbon.", "Ben Cole won the 2021 race in Porto."]
    r = EvidenceEngine().read("Ana Ruiz won the 2019 race in Porto.", context)
    (claim,) = r.claims
    f = dict(zip(CLAIM_FEATURES, claim.features))
    assert f["name.swap.v1"] == 1 and f["name.second.v1"] + f["name.elsewhere.v1"] == 1
    assert claim.unit[0] == 0  # aligned to the passage about the same race


def test_a_word_only_found_in_negated_sentences_is_marked():
    r = EvidenceEngine().read("The outage was caused by an attack.",
                              ["The outage was caused by an expired certificate.", "The firm was not under attack."])
    f = dict(zip(CLAIM_FEATURES, r.claims[0].features))
    assert f["word.borrowed_negated.v1"] == 1


def test_numbers_the_evidence_gives_by_arithmetic_are_supported():
    r = EvidenceEngine().read("Revenue rose by $300 million.", ["Revenue rose from $1.2 billion to $1.5 billion."])
    f = dict(zip(CLAIM_FEATURES, r.claims[0].features))
    assert f["value.derived.v1"] == 1 and f["value.novel.v1"] == 0


def test_differences_quote_both_sides_with_offsets():
    out = "The clinic opens after noon."
    ctx = ["The clinic opens before noon on weekdays."]
    r = EvidenceEngine().read(out, ctx)
    d = [d for d in r.claims[0].differences if d.cls == "time"][0]
    assert out[d.claim[0]:d.claim[1]] == "after"
    chunk, a, b = d.evidence
    assert ctx[chunk][a:b] == "before"


def test_the_context_index_is_cached_and_bounded():
    eng = EvidenceEngine(cache_size=2)
    for i in range(5):
        eng.read("A claim.", [f"Context {i}."])
    assert len(eng._cache) == 2


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=160), st.lists(st.text(max_size=160), max_size=3), st.text(max_size=40))
def test_any_text_gives_finite_features_and_spans_inside_the_claim(output, context, query):
    r = EvidenceEngine().read(output, context, query)
    assert r.matrix.shape == (len(r.claims), len(CLAIM_FEATURES))
    assert np.isfinite(r.matrix).all()
    for c in r.claims:
        assert 0 <= c.start <= c.end <= len(output)
        for d in c.differences:
            if d.claim is not None:
                assert c.start <= d.claim[0] <= d.claim[1] <= c.end
            if d.evidence is not None:
                chunk, a, b = d.evidence
                assert 0 <= a <= b <= len(context[chunk])


# ------------------------------------------------------------------------------------------------ transformations


CONTEXT = ["The clinic may open before noon on weekdays, the council said.",
           "Dr Ana Ruiz runs the clinic with Dr Ben Cole, who joined in 2019.",
           "Parking is free for the first two hours."]


def test_transformations_are_deterministic_labelled_and_tagged():
    a = transform_evidence(CONTEXT, seed=3, rate=1.0)
    b = transform_evidence(CONTEXT, seed=3, rate=1.0)
    assert a == b and {r.label for r in a} == {0, 1}
    assert all(r.tag in FLIP_TAGS for r in a if r.label == 1)
    assert all(r.text != r.source for r in a if r.label == 1)


def test_excluded_flips_are_not_made():
    import random

    for seed in range(20):
        got = flip_claim(CONTEXT[0], CONTEXT, rng=random.Random(seed), exclude=FLIP_TAGS[:-1])
        assert got is None or got[1] == FLIP_TAGS[-1]


def test_preserving_keeps_a_different_text():
    import random

    got = preserve_claim("Parking is free for the first 2 hours.", rng=random.Random(0))
    assert got is not None and got[0] != "Parking is free for the first 2 hours."


# ------------------------------------------------------------------------------------------------ claim model


@parametrize_with_checks([ClaimModel(max_iter=10)])
def test_claim_model_follows_the_estimator_contract(estimator, check):
    check(estimator)


def test_the_claim_model_is_monotonic_in_conflicts():
    rng = np.random.default_rng(0)
    X = rng.random((400, len(CLAIM_FEATURES)))
    j = CLAIM_FEATURES.index("value.conflict.v1")
    y = (rng.random(400) < 0.2 + 0.6 * (X[:, j] > 0.5)).astype(int)
    m = ClaimModel(max_iter=50).fit(X, y)
    lo, hi = X[:50].copy(), X[:50].copy()
    lo[:, j], hi[:, j] = 0.0, 5.0
    assert (m.predict_proba(hi)[:, 1] >= m.predict_proba(lo)[:, 1] - 1e-12).all()
    assert math.isfinite(float(m.predict_proba(X[:1])[0, 1]))


# ------------------------------------------------------------------------------------------------ records


def test_record_keys_read_as_words_and_state_names_as_codes():
    assert {"L:direction:out", "n:seating"} <= set(read_span("attributes / OutdoorSeating: False").keys)
    assert "n:vt" in read_span("It is in Burlington, Vermont.").keys


def test_a_record_number_without_its_unit_supports_the_claim_with_it():
    record = ["product: Tessel Go", "price_usd: 149", "battery_hours: 14", "colour: black"]
    for claim in ("The Tessel Go costs $149.", "The Tessel Go lasts fourteen hours."):
        f = dict(zip(CLAIM_FEATURES, EvidenceEngine().read(claim, record).claims[0].features))
        assert f["value.novel.v1"] == 0, claim
    r = EvidenceEngine().read("The Tessel Go costs $149.", ["Tessel Go: price_usd 149, colour black."])
    assert dict(zip(CLAIM_FEATURES, r.claims[0].features))["value.aligned.v1"] == 1
    wrong = EvidenceEngine().read("The Tessel Go costs $199.", record)
    assert dict(zip(CLAIM_FEATURES, wrong.claims[0].features))["value.novel.v1"] == 1


def test_a_name_in_a_long_unaligned_stretch_is_borrowed_not_a_swap():
    # issue 24: "'Arkansas' where the aligned evidence names 'CEOs'" - the two names only shared a long stretch
    # the alignment could not pair word for word; a swap needs another name in the same short slot
    out = "Walmart opposed the religious freedom law in Arkansas, which many saw as a key moment for gay rights."
    ctx = ["After Indiana Gov. Mike Pence, a Republican, signed his state's religious freedom bill into law, CEOs "
           "of companies big and small threatened to pull out of the Hoosier state.", "The protests in Arkansas grew."]
    found = diffs(out, ctx)
    assert ("name", "borrowed", "Arkansas", "") in found
    assert not [d for d in found if d[1] == "swap"]
    r = EvidenceEngine().read(out, ctx)
    f = dict(zip(CLAIM_FEATURES, r.claims[0].features))
    assert f["name.swap.v1"] + f["name.swap_far.v1"] == 1  # the features count it as before (model unchanged)


def test_a_name_in_the_same_short_slot_is_still_a_swap():
    assert ("name", "swap", "Bob", "Ana / Ruiz") in diffs("Bob Lane won the 2019 race in Lisbon.",
                                                          ["Ana Ruiz won the 2019 race in Lisbon."])


# ---- the claim alignment's scatter (issue 41: 30k sentences x 20k passages) and claims by position
@settings(max_examples=200, deadline=None)
@given(n_units=st.integers(1, 40),
       items=st.lists(st.tuples(st.floats(0.01, 9.0), st.sets(st.integers(0, 39), max_size=40)), max_size=30),
       skip=st.one_of(st.none(), st.integers(0, 39)))
def test_unit_scores_sum_alike_by_list_by_loop_and_by_bincount(n_units, items, skip):
    """A list (small contexts), an array filled in a loop and np.bincount: the same floats, and the best unit,
    runner-up and count near the top read alike off the list and off the array (numpy's argmax, partition)."""
    from evqual.evidence import _engine

    weights = [w for w, _ in items]
    present = [frozenset(u for u in us if u < n_units) for _, us in items]
    arrays = [np.fromiter(us, dtype=np.intp, count=len(us)) for us in present]
    saved = _engine._SCATTER_MIN, _engine._LIST_UNITS
    try:
        _engine._LIST_UNITS = 10 ** 9
        by_list = _engine._unit_scores(n_units, weights, present, arrays, skip)
        _engine._LIST_UNITS = 0
        _engine._SCATTER_MIN = 10 ** 9
        by_loop = _engine._unit_scores(n_units, weights, present, arrays, skip)
        _engine._SCATTER_MIN = -1
        by_bincount = _engine._unit_scores(n_units, weights, present, arrays, skip)
    finally:
        _engine._SCATTER_MIN, _engine._LIST_UNITS = saved
    assert isinstance(by_list, list) and isinstance(by_loop, np.ndarray)
    assert by_loop.tobytes() == by_bincount.tobytes() == np.array(by_list).tobytes()  # to the last bit
    best = _engine._first_best(by_list)
    assert best == _engine._first_best(by_loop)
    assert best == (int(np.argmax(by_loop)) if by_loop.max() > 0 else -1)
    if n_units > 1:
        assert _engine._runner_up(by_list) == _engine._runner_up(by_loop) == min(np.partition(by_loop, -2)[-2:])
    bar = 0.8 * float(by_loop.max())
    assert _engine._at_least(by_list, bar) == _engine._at_least(by_loop, bar) == int((by_loop >= bar).sum())


def test_claims_in_finds_the_claims_of_each_sentence():
    text = "It opened in 1932, but it closed in 1990. Staff moved to Leeds. It reopened in 2001."
    reading = EvidenceEngine().read(text, ["It opened in 1932 and closed in 1990."])
    starts = [c.start for c in reading.claims]
    for s, e in [(0, 41), (42, 63), (64, len(text)), (0, len(text)), (5, 6)]:
        assert reading.claims_in(s, e) == [i for i, a in enumerate(starts) if s <= a < e]
    reading = type(reading)(claims=reading.claims[::-1])  # out of order (built by hand): a scan, the same answer
    starts = [c.start for c in reading.claims]
    assert reading.claims_in(0, 41) == [i for i, a in enumerate(starts) if 0 <= a < 41]


# ---------------------------------------------------------------- the compiled alignment (issue 41)

def _difflib_blocks(a, b):
    from difflib import SequenceMatcher

    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    eq = [(j1, j2) for tag, _, _, j1, j2 in ops if tag == "equal"]
    lo, hi = (eq[0][0], eq[-1][1]) if eq else (0, 0)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"], lo, hi


def _align_kernel():
    from evqual._build import kernel

    fn = kernel("evqual.evidence._align", "nonequal_blocks")
    if fn is None:
        pytest.skip("the compiled alignment is not built (or EVQUAL_PURE_PYTHON is set)")
    return fn


_SEQS = st.lists(st.integers(0, 6), max_size=40)


@settings(max_examples=1500, deadline=None)
@given(_SEQS, _SEQS)
def test_compiled_alignment_gives_difflibs_blocks(a, b):
    """The kernel runs difflib's algorithm on integer ids: the same blocks, ties included (small alphabets
    make many equally long matches)."""
    align = _align_kernel()
    ids: dict = {}
    b_ids = [ids.setdefault(x, len(ids)) for x in b]
    assert align([ids.get(x, -1) for x in a], b_ids) == _difflib_blocks(a, b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["w:a", "n:Bo", "w:bo", "v:num::3", "L:polarity:neg", "w:c"]), max_size=25),
       st.lists(st.sampled_from(["w:a", "n:Bo", "w:bo", "v:num::4", "L:polarity:neg", "w:d"]), max_size=25))
def test_blocks_are_the_same_on_both_paths(claim, ev):
    """``_blocks`` with the kernel (ids cached per evidence unit, or made per call) equals difflib on the
    canonical keys, which is what the pure-Python path runs."""
    from evqual.evidence._engine import _blocks, _canon, _ids

    _align_kernel()
    canon = [_canon(k) for k in ev]
    want = _difflib_blocks([_canon(k) for k in claim], canon) if ev else \
        ([(0, len(claim), 0, 0)] if claim else [], 0, 0)
    assert _blocks(claim, ev) == want
    assert _blocks(claim, ev, canon, _ids(canon)) == want


def test_compiled_alignment_refuses_evidence_ids_it_cannot_index():
    align = _align_kernel()
    with pytest.raises(ValueError, match="0 or more"):
        align([0], [0, -2])
    with pytest.raises(ValueError, match="without gaps"):
        align([0], [0, 5])  # an id past the evidence's length: never an index out of bounds
    with pytest.raises(TypeError):
        align(["w:a"], [0])
    assert align([10 ** 12, -(10 ** 12)], [0, 1]) == ([(0, 2, 0, 2)], 0, 0)  # unknown claim ids match nothing
    assert align([], []) == ([], 0, 0)


_ROW_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70), st.booleans())


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_ROW_VALUES, max_size=120))
def test_a_claims_feature_row_is_numpys_array_of_its_list(values):
    """The engine's claim row (``_float_row``; the compiled ``float_row`` where built, issue 41 session 13) is
    ``np.array(values, dtype=np.float64)`` to the bit: floats, signed zeros, nan, ints past 2**53, bools."""
    from evqual.evidence._engine import _float_row

    row = _float_row(list(values))
    want = np.array(values, dtype=np.float64)
    assert row.dtype == np.float64 and row.shape == want.shape and row.tobytes() == want.tobytes()
    assert row.flags.c_contiguous and row.flags.writeable


def test_a_claims_feature_row_of_other_values_is_numpys():
    from evqual.evidence._engine import _float_row

    for values in ([None, 1.0], [np.float64(2.5), 1], [1.0, "2"], [np.int64(3), 0.5]):
        np.testing.assert_array_equal(_float_row(values), np.array(values, dtype=np.float64))


def test_the_engines_fast_constructors_make_the_dataclasses_objects():
    """The engine builds Differences and ClaimEvidence without the dataclasses' generated __init__ (issue 41,
    session 12): each must be the object the class makes, field for field and in the dict's order."""
    import dataclasses

    from evqual.evidence import ClaimEvidence, Difference
    from evqual.evidence._engine import _claim_evidence, _difference

    d = _difference("name", "swap", (0, 4), "Acme", (0, 1, 5), "Bolt")
    want = Difference("name", "swap", (0, 4), "Acme", (0, 1, 5), "Bolt")
    assert d == want and hash(d) == hash(want) and repr(d) == repr(want) and vars(d) == vars(want)
    assert list(vars(d)) == [f.name for f in dataclasses.fields(Difference)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.kind = "novel"
    assert dataclasses.replace(d, kind="novel") == Difference("name", "novel", (0, 4), "Acme", (0, 1, 5), "Bolt")
    c = _claim_evidence(0, 4, "Acme", None, 0.5, np.zeros(3), [d])
    want_c = ClaimEvidence(0, 4, "Acme", None, 0.5, c.features, [d])
    assert list(vars(c)) == list(vars(want_c)) and repr(c) == repr(want_c)
    reading = EvidenceEngine().read("Bolt Corp opened a plant in 1990 in Ohio.", ["Acme opened a plant in 1932."])
    for claim in reading.claims:
        assert type(claim) is ClaimEvidence and list(vars(claim)) == list(vars(want_c))
        for diff in claim.differences:
            assert diff == Difference(*dataclasses.astuple(diff)) and list(vars(diff)) == list(vars(d))
    assert any(claim.differences for claim in reading.claims)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["Buses run every 30 minutes.", "Trams run hourly, not daily.",
                                 "The fare is 2.50 euros, or 3 dollars.", "Harbour Bank said 12 of 40 staff left.",
                                 "Nothing here.", "", "Ferries run every 30 minutes in summer."]),
                min_size=1, max_size=6),
       st.lists(st.sampled_from(["w:run", "w:bus", "n:harbour", "v:num::30", "w:nothing", "w:absent", "n:absent"]),
                max_size=7))
def test_idf_and_numbers_made_on_demand_equal_the_whole_table(chunks, asked):
    """Issue 41, session 14: a key's idf and a sentence's numbers are made when a claim asks for them (a new
    context's index made every key's idf first); in any order of asking they are the formula's, to the bit."""
    idx = EvidenceIndex(chunks)
    n = max(1, len(idx.units))
    for k in asked + sorted(idx.postings):
        v = idx.postings.get(k)
        want = idx.default_idf if v is None else math.log(1.0 + (n - len(v) + 0.5) / (len(v) + 0.5))
        assert idx.idf_of(k) == want
    assert idx.idf == {k: idx.idf_of(k) for k in idx.postings}
    assert idx.default_idf == math.log(1.0 + (n + 0.5) / 0.5)
    for u in reversed(range(len(idx.units))):
        want = []
        for k in idx.readings[u].keys:
            if k.startswith("v:num:"):
                want.append((k.split(":", 3)[2], float(k.split(":", 3)[3])))
        assert idx.numbers_of(u) == want
    assert idx.numbers == [idx.numbers_of(u) for u in range(len(idx.units))]
