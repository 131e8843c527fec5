"""Claim-aligned contradiction checks (family ``check``) and the risk floor they drive (issue 9)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evqual.scoring import Scorer
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.features import EvidenceFeaturizer, list_features
from evqual.features._checks import CHECKS, EvidenceUnits, claim_checks, split_claims
from evqual.models import FLOOR_CHECKS, Detector, evidence_floors
from evqual.text import split_sentences


def findings(context, output, query=""):
    ev = EvidenceUnits(context if isinstance(context, list) else [context])
    _, found = claim_checks(output, split_sentences(output), ev, query)
    return [f for s in found for f in s]


def checks_of(context, output, query=""):
    return sorted({f.check for f in findings(context, output, query)})


# ---------------------------------------------------------------- each check fires on its edit
@pytest.mark.parametrize("context, output, check", [
    (["The bridge opened in 1932 after six years of work."], "The bridge opened in 1935.", "date"),
    (["Do not take more than 8 tablets in 24 hours."], "Take no more than twelve tablets in 24 hours.", "number"),
    (["The usual adult dose is 500 mg every six hours."], "The usual adult dose is 500 g every six hours.", "unit"),
    (["The council approved the new budget on Monday after a long debate."],
     "The council did not approve the new budget on Monday.", "negation"),
    (["Quarterly revenue rose sharply in the northern region last year."],
     "Quarterly revenue fell sharply in the northern region last year.", "antonym"),
    (["The committee said residents must register their bicycles with the city office."],
     "The committee said residents may register their bicycles with the city office.", "quantifier"),
    (["The museum is open every Tuesday from ten until five."],
     "The museum is open every Thursday from ten until five.", "date"),
])
def test_check_fires_on_the_edit(context, output, check):
    assert check in checks_of(context, output)


@pytest.mark.parametrize("context, output", [
    (["The bridge opened in 1932 after six years of work."], "The bridge opened in 1932."),
    (["Take one or two tablets every 4 to 6 hours; do not take more than 8 tablets in 24 hours."],
     "Take one or two tablets every four to six hours, and no more than eight tablets in 24 hours."),
    (["Do not exceed 1,200 mg in 24 hours unless a doctor says so."],
     "Do not exceed 1.2 g in 24 hours unless a doctor says so."),
    (["Quarterly revenue rose sharply in the northern region last year."],
     "In the northern region, quarterly revenue rose sharply last year."),
    (["The council approved the new budget on Monday after a long debate."],
     "On Monday the council approved the new budget."),
])
def test_faithful_paraphrase_is_not_flagged(context, output):
    assert findings(context, output) == []


# ---------------------------------------------------------------- noise seen on RAGTruth's grounded answers
@pytest.mark.parametrize("context, output", [
    # a capitalised word that starts a list item, a line or a label is not a name
    (["How to clean an artichoke: 1  Lay the artichoke on its side. 2  Using a knife, cut off the stem."],
     "To clean an artichoke:\n1. Place the artichoke on its side.\n2. Cut off the stem with a knife."),
    (["Step 1: Shutoff the water supply valve to the toilet. Step 2: Remove the old flapper."],
     "First shut off the water supply. 5. Turn the water valve back on and test the toilet."),
    # "Passage 2" is a reference, not an entity
    (["Petechia refers to a minor bleed from broken capillary blood vessels."],
     "Petechiae are caused by minor bleeding from broken capillary blood vessels (Passage 2)."),
    # a common word the context writes in lower case is not a name when capitalised
    (["Go to your profile, click on photos and then on albums to find the picture."],
     "Go to your profile and click on Photos, then Albums, to find the picture."),
    # money is not compared with a plain number, nor a fraction with a count
    (["The vinyl chain link fence roll is 3 feet high."], "The vinyl chain link fence roll costs $400."),
    (["Athens contained approximately 100,000 slaves and this constituted from 1/3 to \u00bd of the total population."],
     "About 100,000 slaves existed in Athens, which constituted 1/3 to 1/2 of the total population."),
    # degrees are a unit; Celsius and Fahrenheit are not converted, so not compared
    (["Roast in the preheated oven for 30 to 45 minutes, shaking the pan every 5 to 7 minutes."],
     "Preheat the oven to 400\u00b0F (205\u00b0C) and roast in the oven for 30 to 45 minutes."),
    # negation said in other words: "requires no effort" is "does not require any effort"
    (["Breathing out requires no effort from your body unless you have a lung disease."],
     "Breathing out does not require any effort from your body unless you have a lung disease."),
    (["However, do not use a high pressure hose to clean off the affected area."],
     "Avoid using a high pressure hose to clean off the affected area."),
    # a quantifier is compared only next to the same word
    (["You can contact the court clerk. If a warrant has been issued, you must resolve the matter with the court."],
     "You can contact the court where the summons was issued to resolve the matter."),
])
def test_natural_paraphrases_seen_on_ragtruth_do_not_fire(context, output):
    assert findings(context, output) == []


@pytest.mark.parametrize("context, output, check", [
    (["The last ferry goes at 5:15 in the afternoon."], "The last ferry goes at 5:15 in the morning.", "number"),
    (["Beetles survive temperatures as low as minus 20 degrees Celsius."],
     "Beetles survive temperatures as low as -20\u00b0F.", "unit"),
    (["The town of Selo began in the 1100s as a trading post."], "The town of Selo began in the 1400s as a trading post.",
     "date"),
    (["The bakery is open daily and closed on Mondays for cleaning."],
     "The bakery is open daily and closed on Sundays for cleaning.", "date"),
    (["attributes / Outdoor Seating: true", "attributes / Wi Fi: no"],
     "It offers takeout, and there is no outdoor seating.", "field"),
    (["attributes / Outdoor Seating: true", "attributes / Wi Fi: no"], "Guests get free WiFi.", "field"),
    (["pets allowed: false", "refundable: false"], "The fare is fully refundable.", "field"),
])
def test_check_fires_on_more_edits(context, output, check):
    assert check in checks_of(context, output)


@pytest.mark.parametrize("context, output", [
    (["attributes / Wi Fi: no", "attributes / Outdoor Seating: false", "attributes / Alcohol: none",
      "attributes / Restaurants Take Out: true"], "It offers takeout but has no WiFi, outdoor seating or alcohol."),
    (["pets allowed: false", "breakfast included: false"], "Pets are not allowed, and breakfast is not included."),
    (["hours / Monday: Closed", "hours / Sunday: 7:00-15:00"], "It opens Tuesday through Sunday and is closed on Mondays."),
    (["Preheat the oven to 400\u00b0F."], "Preheat the oven to 400 degrees."),
])
def test_record_and_time_paraphrases_do_not_fire(context, output):
    assert findings(context, output) == []


def test_a_name_after_a_record_label_is_still_a_name():
    ev = EvidenceUnits(["name: Little Fig Bistro", "Note: Keep the receipt."])
    assert [it.text for it in ev.name_items("little")] == ["Little"]
    assert ev.name_items("keep") == []


def test_a_hyphenated_name_keeps_its_second_part():
    ctx = ["The Valmoria-Dresthen war ended in 1712 with the Treaty of Orsk."]
    assert checks_of(ctx, "The Valmoria-Kessel war ended in 1712 with the Treaty of Orsk.") == ["entity"]


def test_a_wrong_number_does_not_pass_because_another_passage_holds_it():
    context = ["The battery lasts 24 hours on a single charge in normal use.",
               "The charging case weighs 32 grams and is made of recycled plastic."]
    assert "number" in checks_of(context, "The battery lasts 32 hours on a single charge.")
    assert checks_of(context, "The battery lasts 24 hours on a single charge.") == []


def test_a_distractor_year_in_the_same_sentence_is_caught_by_its_slot():
    context = ["The theatre, which opened in 1911, staged the musical Starfall, which ran from 1986 to 2004."]
    assert "date" in checks_of(context, "The theatre opened in 1986.")
    assert checks_of(context, "The theatre opened in 1911.") == []


def test_numbers_of_the_query_are_not_checked():
    context = ["The clinic is open until 6 pm on weekdays."]
    out = "The clinic is open until 9 pm on weekdays."
    assert "number" in checks_of(context, out)
    assert "number" not in checks_of(context, out, query="Is the clinic open until 9 pm on weekdays?")


def test_entity_substitution_in_the_same_slot():
    context = ["The app was founded in 2016 by Hannah Ortiz and Samir Qureshi, two former teachers."]
    assert "entity" in checks_of(context, "The app was founded in 2016 by Hannah Ortiz and Greg Amundsen.")
    assert checks_of(context, "The app was founded in 2016 by Hannah Ortiz and Samir Qureshi.") == []


def test_a_name_the_query_also_holds_can_be_the_one_substituted():
    # regression: "France" is in the query, and "Spain" replaced it; the query must not hide the swap
    found = findings(["Paris is the capital and largest city of France."], "Paris is the capital of Spain.",
                     query="What is the capital of France?")
    assert [(f.check, f.mention, f.evidence) for f in found] == [("entity", "Spain", "France")]


def test_finding_points_at_the_claim_and_the_evidence():
    context = "The bridge opened in 1932 after six years of work."
    out = "The bridge opened in 1935."
    (f,) = findings(context, out)
    assert out[f.start:f.end] == "1935"
    assert context[f.ev_start:f.ev_end] == "1932"
    assert f.chunk == 0


def test_split_claims_cuts_clauses_not_lists():
    s = "Apples, pears and plums grow here, but the soil is poor; farmers irrigate."
    parts = [s[a:b] for a, b in split_claims(s, 0, len(s))]
    assert parts == ["Apples, pears and plums grow here", "but the soil is poor", "farmers irrigate."]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300), st.text(max_size=80))
def test_claim_checks_never_raise_and_counts_match_findings(context, output, query):
    ev = EvidenceUnits([context])
    sents = split_sentences(output)
    sent, found = claim_checks(output, sents, ev, query)
    assert len(found) == len(sents)
    for c in CHECKS:
        assert sent[f"sent.check.{c}.v1"].shape == (len(sents),)
    total = sum(sent[f"sent.check.{c}.v1"] for c in CHECKS) if sents else np.zeros(0)
    assert [len(f) for f in found] == [int(x) for x in total]
    for per in found:
        for f in per:
            assert 0 <= f.start < f.end <= len(output)
            assert f.check in CHECKS


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_split_claims_offsets_are_ordered_and_inside(text):
    for s, e in split_sentences(text):
        prev = s
        for a, b in split_claims(text, s, e):
            assert prev <= a < b <= e
            prev = b


def test_one_set_of_claim_rules():
    """The check family and the evidence engine cut claims with one implementation (issue 41: each had a
    copy of the rules, and an answer was cut twice)."""
    import evqual.evidence
    import evqual.features
    import evqual.text

    assert evqual.features.split_claims is evqual.text.sentence_claims
    assert evqual.evidence.split_claims is evqual.text.split_claims


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_claim_checks_with_units_cut_before_equal_cutting_itself(context, output):
    """What analyze passes (each sentence's units, cut once) gives what claim_checks cuts by itself."""
    ev = EvidenceUnits([context])
    sents = split_sentences(output)
    units = [split_claims(output, s, e) for s, e in sents]
    a_sent, a_found = claim_checks(output, sents, ev, "", units=units)
    b_sent, b_found = claim_checks(output, sents, ev, "")
    assert a_sent.keys() == b_sent.keys() and all(np.array_equal(a_sent[k], b_sent[k]) for k in a_sent)
    assert [[repr(f) for f in fs] for fs in a_found] == [[repr(f) for f in fs] for fs in b_found]


def test_featurizer_has_the_check_family():
    names = list_features(families=["check"])
    assert "check.date.v1" in names and "check.any.v1" in names
    X = [{"query": "When did the bridge open?", "context": ["The bridge opened in 1932 after six years of work."],
          "output": "The bridge opened in 1935.", "task_type": "QA"}]
    fz = EvidenceFeaturizer(families=["check"]).fit(X)
    row = dict(zip(fz.get_feature_names_out(), fz.transform(X)[0].tolist()))
    assert row["check.date.v1"] == 1.0 and row["check.any.v1"] == 1.0 and row["check.sentences.v1"] == 1.0


# ---------------------------------------------------------------- the evidence floor
def test_evidence_floors_are_posterior_precisions_kept_only_where_precise():
    n = 12
    train = pd.DataFrame({"label": [1] * 10 + [0] * 2 + [1] * 2 + [0] * 10,
                          "task_type": ["QA"] * n + ["Summary"] * n,
                          "check.number.v1": [1.0] * 24, "check.unit.v1": [0.0] * 24})
    val = pd.DataFrame({"label": [1, 0], "task_type": ["QA", "QA"], "check.number.v1": [1.0, 0.0],
                        "check.unit.v1": [0.0, 0.0]})
    floors = evidence_floors(train, val, prior=(0.8, 10), min_precision=0.5)
    # QA: 11 hallucinated of 13 fired; Summary: 2 of 12, below 0.5: an explicit 0 so that "*" does not
    # stand in; all tasks: 13 of 25; unit never fired: its prior, for every task
    assert floors == {"QA:check.number.v1": pytest.approx((11 + 8) / 23),
                      "Summary:check.number.v1": 0.0,
                      "*:check.number.v1": pytest.approx((13 + 8) / 35),
                      "*:check.unit.v1": pytest.approx(0.8)}
    # the default minimum is the start of the escalate band, 0.35: Summary's (2 + 8) / 22 = 0.45 is kept
    assert evidence_floors(train, val, prior=(0.8, 10))["Summary:check.number.v1"] == pytest.approx(10 / 22)
    # without a prior, only the data speaks
    assert evidence_floors(train, val, prior=(0.0, 0.0), min_precision=0.5) == {
        "QA:check.number.v1": pytest.approx(11 / 13), "Summary:check.number.v1": 0.0,
        "*:check.number.v1": pytest.approx(13 / 25)}
    with pytest.raises(ValueError, match="prior"):
        evidence_floors(train, prior=(1.5, 10))


def test_binding_floors_are_the_precision_of_the_rows_they_lift():
    # regression (issue 22, session 4): a floor estimated over every fired row lifted the low-risk ones,
    # which were far less often hallucinated, to the precision of the high-risk ones (a calibration dip:
    # Data2txt's field floor 0.63 lifted answers 30% hallucinated)
    y = [1] * 8 + [0] * 2 + [0] * 7 + [1] * 3  # 8 of 10 right where the model says 0.9; 3 of 10 below
    risk = [0.9] * 10 + [0.1] * 10
    rows = pd.DataFrame({"label": y, "task_type": ["Data2txt"] * 20, "check.field.v1": [1.0] * 20})
    fired = evidence_floors(rows, prior=(0.0, 0.0), min_precision=0.0)
    assert fired["Data2txt:check.field.v1"] == pytest.approx(0.55)
    binding = evidence_floors(rows, prior=(0.0, 0.0), min_precision=0.0, risks=risk)
    # lifting the ten rows at 0.1 to f is calibrated at f = 0.3 (3 of them hallucinated); any higher f
    # up to 0.9 lifts the same ten rows
    assert binding["Data2txt:check.field.v1"] == pytest.approx(0.3)
    # kept only where at least min_precision, as before
    assert evidence_floors(rows, prior=(0.0, 0.0), risks=risk)["Data2txt:check.field.v1"] == 0.0
    with pytest.raises(ValueError, match="risks holds 3"):
        evidence_floors(rows, risks=[0.1, 0.2, 0.3])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0.0, 1.0)), min_size=1, max_size=40),
       st.sampled_from([(0.0, 0.0), (0.8, 10.0), (0.5, 2.0)]))
def test_a_binding_floor_is_calibrated_on_what_it_lifts(rows, prior):
    from evqual.models import FLOOR_GRID
    from evqual.models._detector import _binding_floor

    y = np.array([a for a, _ in rows])
    r = np.array([b for _, b in rows])
    p0, m = prior
    f = _binding_floor(y, r, p0, m)

    def precision_below(v):
        sel = r < v
        n = sel.sum() + m
        return (y[sel].sum() + p0 * m) / n if n else 0.0

    if f > 0:
        assert precision_below(f) >= f - 1e-12
    for g in FLOOR_GRID[FLOOR_GRID > f + 1e-9]:
        assert precision_below(g) < g


def test_evidence_floor_values_are_checked():
    with pytest.raises(ValueError, match="evidence_floor must be"):
        Detector("evqual", evidence_floor="always")._check()
    for ok in (True, False, "binding", "fired"):
        Detector("evqual", evidence_floor=ok)._check()


def test_a_task_where_a_check_is_imprecise_does_not_take_the_all_task_floor():
    det = Detector("evqual")
    det.evidence_floor_ = {"*:check.number.v1": 0.7, "Summary:check.number.v1": 0.0}
    frame = pd.DataFrame({"task_type": ["QA", "Summary", "Mine"], "check.number.v1": [1.0, 1.0, 1.0]})
    assert det._floor(frame, np.array([0.1, 0.1, 0.1])).tolist() == [0.7, 0.1, 0.7]


def test_floor_raises_only_rows_where_a_check_fired_with_the_task_floor_first():
    det = Detector("evqual")
    det.evidence_floor_ = {"QA:check.number.v1": 0.8, "*:check.number.v1": 0.65, "*:check.date.v1": 0.6}
    frame = pd.DataFrame({"task_type": ["QA", "QA", "Summary", "QA"],
                          "check.number.v1": [0.0, 1.0, 2.0, 0.0], "check.date.v1": [0.0, 0.0, 0.0, 1.0]})
    out = det._floor(frame, np.array([0.1, 0.1, 0.1, 0.9]))
    assert out.tolist() == [0.1, 0.8, 0.65, 0.9]


def test_floor_is_off_when_asked():
    det = Detector("evqual", evidence_floor=False)
    det.evidence_floor_ = {}
    frame = pd.DataFrame({"task_type": ["QA"], "check.number.v1": [1.0]})
    assert det._floor(frame, np.array([0.2])).tolist() == [0.2]


def test_all_checks_but_unsupported_claims_can_floor():
    # an unsupported claim unit is a feature and a reason only (floored, it cost RAGTruth cv5 F1, issue 9)
    assert set(FLOOR_CHECKS) == {f"check.{c}.v1" for c in CHECKS if c != "unsupported"}


def test_check_precision_script_runs_on_the_fixture(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "p.json"
    proc = subprocess.run([sys.executable, str(root / "scripts" / "check_precision.py"), "--pairs",
                           str(root / "tests" / "fixtures" / "contrastive_small.jsonl"), "--data",
                           str(tmp_path / "absent"), "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| number |" in proc.stdout
    got = json.loads(out.read_text())
    assert got["ragtruth"] is None and set(got["suite"]) == set(CHECKS)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pair": "x"}\n')
    proc = subprocess.run([sys.executable, str(root / "scripts" / "check_precision.py"), "--pairs", str(bad),
                           "--data", str(tmp_path / "absent")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "bad.jsonl" in proc.stderr


def test_a_name_is_explained_once_per_sentence():
    # regression: 'Spain' got both ENTITY_CONFLICT and ENTITY_UNSUPPORTED
    r = Scorer.load().score(query="What is the capital of France?",
                              context=["Paris is the capital and largest city of France."],
                              output="Paris is the capital of Spain.", task_type="QA")
    codes = [x.code for s in r.sentences for x in s.reasons]
    assert codes.count("ENTITY_CONFLICT") == 1 and "ENTITY_UNSUPPORTED" not in codes


def test_a_flagged_answer_flags_the_sentence_that_contradicts_the_evidence():
    # regression: the answer was flagged by DATE_CONFLICT but only another sentence was flagged
    r = Scorer.load().score(query="When did the bridge open?",
                              context=["The bridge opened in 1932 after six years of work."],
                              output="The bridge opened in 1935. It was designed by Joseph Strauss.", task_type="QA")
    assert r.flagged
    first = r.sentences[0]
    assert first.flagged and first.reasons[0].code == "DATE_CONFLICT"
    assert first.explanation.startswith("Flagged")


def test_findings_do_not_depend_on_the_string_hash_seed():
    # two evidence numbers aligned equally well: the first in the context is shown, in every process
    import subprocess
    import sys

    code = (
        "from evqual.features._checks import EvidenceUnits, claim_checks\n"
        "from evqual.text import split_sentences\n"
        "ctx = ['In ounces, 1 cup of butter weighs 227 grams, while 1 cup of granulated white sugar weighs "
        "201 grams. Recipes call for cups.']\n"
        "out = 'Granulated sugar: 1 cup of granulated sugar weighs 200 grams. Brown sugar: 1 cup of brown sugar "
        "weighs 220 grams.'\n"
        "_, f = claim_checks(out, split_sentences(out), EvidenceUnits(ctx))\n"
        "print([(x.mention, x.evidence, x.ev_start) for s in f for x in s])\n")
    seen = set()
    for seed in ("1", "2", "3", "4", "5", "6"):
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert res.returncode == 0, res.stderr
        seen.add(res.stdout)
    assert len(seen) == 1, seen


@pytest.mark.parametrize("level", ["response", "sentence"])
def test_a_featurizer_fitted_before_a_feature_existed_keeps_its_columns(level):
    # a model saved before "check.field.v1" was registered: its fitted names lack it, and transform
    # must give exactly those columns (it used to take today's registry and fail to broadcast)
    from evqual.data import load_data, sample_path

    examples = load_data(sample_path()).examples[:5]
    fz = EvidenceFeaturizer(level=level, include_metadata=True).fit(examples)
    full = pd.DataFrame(fz.transform(examples), columns=fz.get_feature_names_out())
    dropped = "sent.check.field.v1" if level == "sentence" else "check.field.v1"
    fz.feature_names_out_ = np.asarray([n for n in fz.feature_names_out_ if n != dropped], dtype=object)
    fz.n_features_out_ = len(fz.feature_names_out_)
    got = fz.transform(examples)
    assert got.shape[1] == fz.n_features_out_
    np.testing.assert_array_equal(got, full.drop(columns=[dropped]).to_numpy())


def test_only_evquals_own_methods_are_floored(evqual_sample_detector):
    # the seeds' baselines are reproduced as described; session 1 floored them too (a bug)
    from evqual.data import load_sample

    assert Detector("metadata-lr").fit(load_sample()).evidence_floor_ == {}
    assert evqual_sample_detector.evidence_floor_  # the prior floors every check at least


def test_record_keys_keep_short_camelcase_words_and_match_them_written_apart():
    from evqual.data import render_structured

    text, _ = render_structured({"attributes": {"WiFi": "no", "OutdoorSeating": True, "HasTV": False},
                                 "product": "iPhone case"})
    assert text.splitlines() == ["attributes / WiFi: no", "attributes / Outdoor Seating: true",
                                 "attributes / Has TV: false", "product: iPhone case"]
    got = findings(text.splitlines(), "Guests get free Wi-Fi.")
    assert [(f.check, f.mention, f.evidence) for f in got] == [("field", "Wi-Fi", "attributes / WiFi: no")]


def test_noise_a_user_saw_is_gone_from_the_reasons():
    # issue 9 section 2: "passage 2" is not a claim (no number, entity or novel-phrase reason), inflections
    # match ("sources"/"source", "opens"/"open"), "Mayor A and Governor B" are two supported names
    det = Scorer.load()
    ctx = ["Mayor Alice Brown and Governor Tom Reyes opened the new library on Monday.",
           "The library sources books from local donors and opens at nine."]
    out = ("According to Passage 2, the library opened by Mayor Alice Brown and Governor Tom Reyes source books "
           "from local donor. The library open at nine.")
    r = det.score(query="Who opened the library?", context=ctx, output=out, task_type="QA")
    codes = [x.code for s in r.sentences for x in s.reasons]
    assert not {"NUMBER_UNSUPPORTED", "ENTITY_UNSUPPORTED", "NOVEL_PHRASE", "NOVEL_WORDS"} & set(codes), codes


def test_spacy_claim_units_cut_coordinated_predicates():
    from evqual.text import SpacyClaimSplitter, spacy_available

    if not spacy_available():
        pytest.skip("the ner extra is not installed")
    text = "The council approved the budget and rejected the stadium plan. The plant opened in 1932, but it " \
           "closed in 1990."
    units = SpacyClaimSplitter().split(text, split_sentences(text))
    assert [text[a:b] for a, b in units] == ["The council approved the budget", "and rejected the stadium plan.",
                                             "The plant opened in 1932,", "but it closed in 1990."]


def test_the_spacy_backend_cuts_claims_with_the_parser_and_says_so():
    from evqual.data import load_sample
    from evqual.text import spacy_available

    if not spacy_available():
        pytest.skip("the ner extra is not installed")
    examples = load_sample().examples[:8]
    fz = EvidenceFeaturizer(entity_backend="spacy").fit(examples)
    assert fz.claim_backend_ == "spacy"
    assert EvidenceFeaturizer().fit(examples).claim_backend_ == "rules"
    X = fz.transform(examples)
    assert X.shape == (8, fz.n_features_out_) and np.isfinite(X).all()


def test_claim_checks_use_the_claim_units_given():
    ev = EvidenceUnits(["The plant opened in 1932 and closed in 1990."])
    out = "The plant opened in 1932 and closed in 1995."
    # one unit or two: the wrong year is found either way, and the units bound the slots
    for spans in (None, [(0, 24), (25, len(out))], [(0, len(out))]):
        _, found = claim_checks(out, split_sentences(out), ev, "", spans)
        assert [f.mention for f in found[0]] == ["1995"]


def test_a_name_at_the_sentence_start_counts_where_the_context_shows_it_is_a_name():
    ctx = ["Talvo Foods agreed to acquire snack maker Brightmere for $1.2 billion in cash."]
    got = findings(ctx, "Brightmere agreed to buy Talvo Foods for $1.2 billion in cash.")
    assert [(f.check, f.mention) for f in got] == [("role", "Brightmere ... Talvo")]
    # a sentence-initial word the context writes in lower case is still not a name
    assert findings(["Turn the valve and open the tap slowly."], "Open the tap slowly, then turn the valve.") == []


# ---------------------------------------------------------------- session 3: noise seen on RAGTruth's natural text
@pytest.mark.parametrize("context, output", [
    # a double dash before a number is punctuation, not a minus sign
    (["The WHO has put a higher figure on both tolls -- 648 killed and 2,191 wounded -- in its count."],
     "The WHO figures are higher at 648 killed and 2,191 wounded."),
    # "F-16" and "A-10" are designations, not counts
    (["The fleet includes three squadrons of F-16 fighter jets and two squadrons of A-10 aircraft."],
     "The fleet includes F-16 and A-10 planes."),
    # "steps 4 and 5" are references to steps
    (["Now just repeat the last two steps for the remainder of the twist braid."],
     "Repeat steps 4 and 5 for the remainder of the twist braid."),
    # a clause after a semicolon is not compared through the words before it (a guard: the degree-adverb
    # change of session 3 made this faithful summary fire until the slots stopped at the semicolon)
    ([("Officials confirmed 64 cases between January and March, compared with 9 in the same period last year. "
       "Of those infected, 41 were children under 10 and 11 required hospital treatment.")],
     ("Officials recorded 64 cases from January to March, up from 9 in the same months last year; 41 of the "
      "patients were children under 10 and 11 needed hospital care.")),
    # "free" negates only as "X-free"
    (["Tuck the edge of the swaddle under the body, keeping the right arm under the fabric and the left arm free."],
     "Tuck the edge under the body, keeping the right arm under the fabric and leaving the left arm free."),
    # "No." ends its own sentence: it negates nothing after the full stop
    ([("There are many differences between method overloading and method overriding in java. No. Method "
       "overloading is used to increase the readability of the program.")],
     "Additionally, method overloading is used to increase the readability of the program."),
    # "cannot X without Y" is a double negation: X happens only with Y
    (["With AF-S mode, you cannot take a shot without focus being locked by the camera first."],
     "In AF-S mode the camera will only take a shot when focus is locked by the camera first."),
    # a condition is not an assertion, on either side
    ([("Bring the water to a rolling boil, add seaweed to keep the lobsters out of the water, and put in lobsters, "
       "one at a time. I prefer to use seaweed to a steam rack, (Feel free to use a steaming rack to place the "
       "lobsters on.)")],
     ("Bring the water to a rolling boil and add seaweed to keep the lobsters out of the water. If you don't have "
      "seaweed, you can use a steaming rack to place the lobsters on.")),
    # "failing" and "avoidance" negate like "failed" and "avoid"
    (["They complained that the new system threatened liberties and failed to protect individual rights."],
     "They complained about the new system threatening liberties and failing to protect individual rights."),
    (["Alkaline diet: the avoidance of relatively acidic foods such as grains, dairy, meat and sugar."],
     "The Alkaline diet involves avoiding acidic foods such as grains, dairy, meat and sugar."),
    # a headline in title case: its capitals are not names standing in for the answer's
    (["Governor Abbott Gets a Win as Judge Halts Border Agents Removing Wire",
      "Governor Greg Abbott scored a victory in his effort to stop the removal of concertina wire."],
     "Governor Greg Abbott scored a victory in his effort to stop the removal of wire along the Texas border."),
    # an acronym and a spelled-out name are not compared; a one-letter misspelling is the same name
    (["The Federal Aviation Administration on Wednesday initially reported a pressurization problem."],
     "The FAA on Wednesday initially reported a pressurization problem."),
    (["Gunmen abducted Weinstein in 2011 from his home in Lahore, Parkistan, officials said."],
     "Weinstein was kidnapped in 2011 from his home in Lahore, Pakistan, officials said."),
])
def test_natural_text_noise_does_not_fire(context, output):
    assert findings(context, output) == []


@pytest.mark.parametrize("context, output, check", [
    # the fixes above keep the real errors they resemble
    (["Temperatures fell to -20 degrees overnight in the valley."], "Temperatures fell to 20 degrees overnight.",
     "number"),
    (["Since March 4, federal prosecutors have called 92 witnesses, and the defense just four."],
     "Prosecutors have called 92 witnesses, while the defense has called only six.", "number"),
    (["The drug is approved for adults and it does not cause drowsiness in most patients."],
     "The drug is approved for adults and it causes drowsiness in most patients.", "negation"),
    (["The NYPD detective apologized on Friday for the exchange with the driver, the NYPD said."],
     "The FBI detective apologized on Friday for the exchange with the driver.", "entity"),
])
def test_the_noise_fixes_keep_real_conflicts(context, output, check):
    assert check in checks_of(context, output)


def test_number_mentions_start_at_their_digits():
    from evqual.text import extract_numbers

    got = extract_numbers("tolls -- 648 killed, $ 5 and 7 percent")
    assert [(m.start, m.text) for m in got] == [(9, "648"), (21, "$ 5"), (29, "7 percent")]


def _items(text):
    from evqual.features._checks import _segment_items

    return _segment_items(text, 0, len(text), first=True)[0]


@pytest.mark.parametrize("text, numbers", [
    ("Ask the Holy Spirit to reveal more of God to you (John 16:13).", []),  # a chapter and verse
    ("Monday: 11:0-21:0", ["t11:00", "t21:00"]),  # record hours stay times
    ("date: 2019-05-22 14:03:00", []),  # a timestamp's parts are not counts
    ("The meeting ran from 18-22 minutes past the hour.", ["18", "22"]),  # a range stays two numbers
    ("1 Four steps to a water balloon: 2  Fill the balloon and loop over the top.", ["4"]),  # list markers
])
def test_number_items_leave_out_references_and_timestamps(text, numbers):
    assert [it.key for it in _items(text) if it.cls == "number"] == numbers


def test_degree_adverbs_are_not_slot_words():
    from evqual.features._checks import _content_stem

    assert _content_stem("just") is None and _content_stem("roughly") is None
    assert _content_stem("defense") is not None


@pytest.mark.parametrize("context, output, expected", [
    # "serious" is on scikit-learn's stop list; the checks keep it (it was the negated word here)
    (["The drug was generally well tolerated, and no serious safety concerns were identified."],
     "The drug raised serious safety concerns.", ["negation"]),
    # a time without a.m./p.m. may be either half of the day; one that says which half is compared
    (["The evening show at the old theatre starts at 5:15 PM every Friday."],
     "The evening show at the old theatre starts at 5:15 every Friday.", []),
    (["The evening show at the old theatre starts at 5:15 PM every Friday."],
     "The evening show at the old theatre starts at 5:15 in the morning every Friday.", ["number"]),
    (["The evening show at the old theatre starts at 5:15 PM every Friday."],
     "The evening show at the old theatre starts at 6:15 every Friday.", ["number"]),
    # a record's hours: "noon on Sunday" is the Sunday line's 12:00, not Saturday's closing time
    (["hours / Saturday: 11:00-23:00", "hours / Sunday: 12:00-21:00"],
     "It is open from 11 a.m. on Saturday and from noon on Sunday.", []),
])
def test_stop_list_content_words_and_clock_times(context, output, expected):
    assert checks_of(context, output) == expected


def test_the_floor_minimum_is_where_the_default_policy_starts_to_escalate():
    # a check kept as a floor lifts the risk into the default policy's escalate band (issue 9: the default
    # policy flags answers that carry a contradiction the checks see); the two constants move together
    from evqual.models import FLOOR_MIN_PRECISION
    from evqual.scoring import Policy

    assert FLOOR_MIN_PRECISION == Policy().escalate_band[0]


def test_per_task_threshold_script_tunes_out_of_fold_and_reports_bad_input(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "per_task_thresholds", Path(__file__).resolve().parent.parent / "scripts" / "per_task_thresholds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(0)
    n = 400
    task = np.where(np.arange(n) % 2, "QA", "Summary")
    label = rng.integers(0, 2, n)
    # Summary's risks sit lower than QA's: a shared threshold of 0.5 misses Summary's positives
    risk = np.clip(0.45 * label + np.where(task == "QA", 0.3, 0.05) + rng.normal(0, 0.08, n), 0, 1)
    frame = pd.DataFrame({"task_type": task, "label": label, "fold": np.arange(n) % 5, "risk": risk,
                          "pred": (risk >= 0.5).astype(int)})
    path = tmp_path / "predictions.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "pt.json"
    assert mod.main([str(path), "--json", str(out)]) == 0
    import json

    got = json.loads(out.read_text())
    rules = got["rules"]
    assert rules["per task, tuned out of fold"]["per_task_f1"]["Summary"] > rules["shared"]["per_task_f1"]["Summary"]
    assert rules["per task, best on the same rows"]["pooled_f1"] >= rules["per task, tuned out of fold"]["pooled_f1"]
    frame.drop(columns=["fold"]).to_csv(path, index=False)
    assert mod.main([str(path)]) == 2
    assert "missing columns ['fold']" in capsys.readouterr().err
    assert mod.main([str(tmp_path / "nope.csv")]) == 2


# ---------------------------------------------------------------- session 4: periods, conversions, anchors, displaced names
@pytest.mark.parametrize("context, output, check", [
    # one value given per another period
    (["Do not exceed 1,200 mg in 24 hours unless directed by a doctor."],
     "Unless a doctor directs otherwise, the most an adult should take is 1.2 g of ibuprofen per week.", "unit"),
    (["The plant can produce up to 4,000 cubic metres of fresh water per day."],
     "The plant can make up to 4,000 cubic metres of drinking water a year.", "unit"),
    # one value in two temperature scales, aligned by the value alone
    (["The beetle can survive temperatures as low as minus 20 degrees Celsius by producing antifreeze proteins."],
     "Antifreeze proteins let the beetle survive cold down to -20\u00b0F.", "unit"),
    # a record label's unit ("rated power w")
    (["model: SV-420M", "rated power w: 420"], "The SV-420M panel is rated at 420 kilowatts.", "unit"),
    # percent against percentage points, aligned by the other values the claim states
    (["Turnout in the 2024 election reached 48%, up from 36% in 2020, a rise of 12 percentage points."],
     "Turnout went up by 12%, from 36% in 2020 to 48% in 2024.", "unit"),
    # an ordinal century against a decade-style century
    (["Veliko Selo was founded in the 12th century as a trading post at the river crossing.",
      "Its fortress walls were added in the 15th century to defend against raids."],
     "Veliko Selo began in the 1400s as a trading post where the river was crossed.", "date"),
    # durations convert: three and a half years are not 30 months
    (["Construction is scheduled to begin in spring 2026 and take about 30 months."],
     "Construction should start in spring 2026 and last roughly three and a half years.", "number"),
    # "twelve tablets" is about "8 tablets", not about the "12" of an age in another sentence
    (["Adults and children over 12: take one or two tablets every 4 to 6 hours as needed. "
      "Do not take more than 8 tablets in 24 hours."],
     "Adults can take one or two tablets every four to six hours, but no more than twelve tablets in any "
     "24-hour period.", "number"),
])
def test_periods_conversions_and_anchors_catch_the_edit(context, output, check):
    assert check in checks_of(context, output)


@pytest.mark.parametrize("context, output", [
    (["Do not exceed 1,200 mg in 24 hours unless directed by a doctor."],
     "Unless a doctor directs otherwise, the most an adult should take is 1.2 g of ibuprofen per day."),
    (["The plant can produce up to 4,000 cubic metres of fresh water per day."],
     "The plant can make up to 4,000 cubic metres of drinking water a day."),
    (["Construction is scheduled to begin in spring 2026 and take about 30 months."],
     "Construction should start in spring 2026 and last roughly two and a half years."),
    (["Veliko Selo was founded in the 12th century as a trading post at the river crossing."],
     "Veliko Selo began in the 1100s as a trading post where the river was crossed."),
    (["Turnout in the 2024 election reached 48%, up from 36% in 2020, a rise of 12 percentage points."],
     "Turnout went up by 12 percentage points, from 36% in 2020 to 48% in 2024."),
    (["Adults and children over 12: take one or two tablets every 4 to 6 hours as needed. "
      "Do not take more than 8 tablets in 24 hours."],
     "Adults can take one or two tablets every four to six hours, but no more than eight tablets in any "
     "24-hour period."),
    # a point in time is not a rate; a rate per the same period agrees
    (["The fund returned 7% a year on average. A year ago it held 300 assets."],
     "It returned 7% per year on average."),
    (["The beetle survives minus 20 degrees Celsius; beetles cooled to minus 25 did not survive."],
     "The beetle survives cold down to -20\u00b0C, although beetles chilled to -25\u00b0C died."),
])
def test_periods_conversions_and_anchors_leave_faithful_answers_alone(context, output):
    assert findings(context, output) == []


@pytest.mark.parametrize("context, output, evidence", [
    (["The Royal Exhibition Building in Melbourne was designed by architect Joseph Reed and completed in 1880.",
      "Reed's firm also designed the State Library of Victoria.",
      "The building was constructed by the builder David Mitchell, father of the opera singer Nellie Melba."],
     "The architect David Mitchell designed the Royal Exhibition Building.", "Joseph Reed"),
    (["In the crime series The Salt Road, Irish actor Niamh Casey plays Detective Inspector Ruth Kell.",
      "Welsh actor Owen Prys co-stars as the island's ferryman, Tom Dyer."],
     "Owen Prys plays the lead detective, Detective Inspector Ruth Kell.", "Niamh Casey"),
])
def test_a_name_moved_from_another_passage_is_displaced(context, output, evidence):
    # the word-level entity check may catch the name too: then its finding keeps the check's name (and
    # floor) and shows the evidence of the displaced-name rule
    found = [f for f in findings(context, output) if f.check in ("displaced", "entity")]
    assert len(found) == 1 and found[0].evidence == evidence


@pytest.mark.parametrize("context, output", [
    (["The Royal Exhibition Building in Melbourne was designed by architect Joseph Reed and completed in 1880.",
      "The building was constructed by the builder David Mitchell, father of the opera singer Nellie Melba."],
     "The architect Joseph Reed designed the Royal Exhibition Building, and David Mitchell built it."),
    # the name's own passage carries the claim's words
    (["Irish actor Niamh Casey plays Detective Inspector Ruth Kell.",
      "Welsh actor Owen Prys co-stars as the island's ferryman, Tom Dyer."],
     "Owen Prys co-stars as the ferryman Tom Dyer."),
    # a name of the query is not checked
    (["Irish actor Niamh Casey plays Detective Inspector Ruth Kell.",
      "Welsh actor Owen Prys co-stars as the island's ferryman, Tom Dyer."],
     "Owen Prys plays the lead detective, Detective Inspector Ruth Kell."),
])
def test_names_in_their_own_passage_or_from_the_query_are_not_displaced(context, output):
    query = "Who does Owen Prys play?" if output.startswith("Owen Prys plays the lead") else ""
    assert [f for f in findings(context, output, query) if f.check == "displaced"] == []


def test_displaced_names_are_their_own_check_reported_as_entity_conflicts():
    from evqual.explain import REASONS

    assert "displaced" in CHECKS and "check.displaced.v1" in FLOOR_CHECKS
    assert "ENTITY_CONFLICT" in REASONS


def test_a_range_is_two_bounds_and_over_a_number_is_one():
    context = ["Ashgrove Academy keeps its seminar groups small: most have between 12 and 18 students."]
    assert checks_of(context, "Most seminar groups at Ashgrove Academy have over 18 students.") == ["quantifier"]
    assert findings(context, "Most seminar groups at Ashgrove Academy have between 12 and 18 students.") == []
    assert findings(context, "Seminar groups at Ashgrove Academy have stayed small over the years.") == []


@pytest.mark.parametrize("context, output", [
    (["Harwick City beat Dunmore Athletic 3-1 in the county cup final at Elm Park on Sunday.",
      "Dunmore had beaten Harwick 2-0 in the league in March."],
     "Dunmore Athletic won the county cup final, beating Harwick City 3-1 at Elm Park on Sunday."),
    (["Orbis Devices filed a patent infringement lawsuit against Pixelgate Labs in March, alleging that "
      "Pixelgate's camera module copies its sensor design."],
     "Pixelgate Labs sued Orbis Devices in March, claiming the camera module copied the sensor design."),
    (["Shipping group Maravel Lines has agreed to sell its port terminals business to infrastructure investor "
      "Cobalt Harbour Partners for 2.1 billion euros."],
     "Cobalt Harbour Partners is selling its port terminals unit to Maravel Lines for 2.1 billion euros."),
])
def test_names_in_the_other_order_around_a_paraphrased_predicate_are_a_role_swap(context, output):
    assert checks_of(context, output) == ["role"]


@pytest.mark.parametrize("context, output", [
    # the same order, a paraphrased predicate
    (["Orbis Devices filed a patent infringement lawsuit against Pixelgate Labs in March."],
     "Orbis Devices sued Pixelgate Labs in March."),
    # an apposition, another clause, a coordination: not a role
    (["Well, Aaron Hernandez, the former New England Patriots tight end, made none of those excuses."],
     "Former New England Patriots tight end Aaron Hernandez made no excuses."),
    (["Redgate missed two instalments in 2023, prompting Castlemoor to issue a formal demand."],
     "Castlemoor issued a formal demand after Redgate missed two instalments in 2023."),
    (["The arm of Gulf Oil was sold to Olympia and York in 1985."],
     "The arm was sold to Olympia and York in 1985 and became Gulf Canada Resources."),
])
def test_name_order_leaves_paraphrases_appositions_and_clauses_alone(context, output):
    assert "role" not in checks_of(context, output)


@pytest.mark.parametrize("context, output, expected", [
    (["Corvane Retail said same-store sales rose 4.2% in the third quarter, driven by demand for home goods."],
     "Corvane's like-for-like store sales dropped 4.2% in the third quarter, helped by demand for home goods.",
     ("dropped", "rose")),
    (["Firmware 3.2 makes file transfers over SMB roughly 10% slower because every transfer is encrypted."],
     "Firmware 3.2 makes SMB file transfers about 10% faster, a trade-off for encrypting every transfer.",
     ("faster", "slower")),
    (["Hartwell College's autumn enrolment fell to 6,240 students, down 7% on last year."],
     "Hartwell's overall autumn enrolment grew 7% to 6,240 students.", ("grew", "down")),
])
def test_a_quantity_turned_the_other_way_is_an_antonym(context, output, expected):
    got = [(f.mention, f.evidence) for f in findings(context, output) if f.check == "antonym"]
    assert got == [expected]


@pytest.mark.parametrize("context, output", [
    (["Corvane Retail said same-store sales rose 4.2% in the third quarter."],
     "Like-for-like store sales grew 4.2% in the third quarter."),
    (["Do not take more than 8 tablets in 24 hours."], "Take no more than 8 tablets in 24 hours."),
    (["Hartwell College's autumn enrolment fell to 6,240 students, down 7% on last year."],
     "Autumn enrolment at Hartwell dropped 7% to 6,240 students."),
])
def test_a_quantity_turned_the_same_way_is_not_an_antonym(context, output):
    assert findings(context, output) == []


@pytest.mark.parametrize("context, output", [
    (["Swallow the capsules whole with a glass of water; do not crush or chew them."],
     "The capsules should be swallowed whole rather than crushed or chewed."),
    (["The outage was caused by a faulty configuration update, not a cyberattack."],
     "The firm blamed the outage on a faulty configuration update instead of a cyberattack."),
])
def test_rather_than_and_instead_of_negate(context, output):
    assert findings(context, output) == []




def test_a_scope_word_in_a_shared_slot_is_compared_without_the_same_neighbour():
    context = ["Roadworks on the ring road frequently cause long delays for commuters at the northern junction."]
    assert checks_of(context, "Roadworks on the ring road always cause long delays for commuters at the "
                              "northern junction.") == ["quantifier"]
    assert findings(context, "Roadworks on the ring road often cause long delays for commuters at the "
                             "northern junction.") == []


_NAMES = ["Talvo Foods", "Brightmere", "Harwick City", "Dunmore Athletic", "Orla Keane", "Joseph Reed"]
_VERBS = ["beat", "acquired", "sued", "hired", "paid", "rose", "fell", "dropped", "grew"]
_QUANTS = ["12 tablets", "1,200 mg in 24 hours", "4,000 cubic metres per day", "7%", "12 percentage points",
           "between 12 and 18 students", "over 18 students", "the 12th century", "30 months", "-20\u00b0C",
           "two and a half years", "420 watts"]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.sampled_from(_VERBS), st.sampled_from(_NAMES),
                          st.sampled_from(_QUANTS)), min_size=1, max_size=4), st.data())
def test_an_answer_copying_an_evidence_sentence_never_fires(parts, data):
    sentences = [f"{a} {v} {b} by {q} in 2021." for a, v, b, q in parts]
    context = [" ".join(sentences)]
    output = data.draw(st.sampled_from(sentences))
    assert findings(context, output) == []


def test_a_negated_list_ends_at_its_clause():
    context = ["attributes / WiFi: no", "attributes / Outdoor Seating: false", "attributes / Good For Kids: true"]
    assert findings(context, "There is no WiFi or outdoor seating, and it is good for kids.") == []
    assert checks_of(context, "There is no WiFi, outdoor seating or good for kids area.") == ["field"]


def test_an_added_claim_the_context_does_not_support_is_unsupported():
    context = ["Halden Motors shares slid 9% on Tuesday after the company lowered its annual delivery goal from "
               "450,000 to 410,000 vehicles."]
    output = ("Halden shares slid 9% on Tuesday after it cut its delivery goal to 410,000 vehicles. Investors were "
              "also unsettled by the surprise resignation of its chief financial officer.")
    found = [f for f in findings(context, output) if f.check == "unsupported"]
    assert len(found) == 1 and found[0].mention.startswith("Investors were also unsettled")
    assert "resignation" in found[0].evidence and found[0].chunk == -1
    # the faithful part alone, and words the query brings, are not unsupported
    assert findings(context, output.split(". ")[0] + ".") == []
    query = "Why were investors unsettled: the surprise resignation of its chief financial officer?"
    assert [f for f in findings(context, output, query) if f.check == "unsupported"] == []


def test_a_role_swap_needs_two_parties_not_two_words_of_one_name():
    context = ["Talvo Foods beat Talvo Foods Holdings in the final."]
    assert "role" not in checks_of(context, "Talvo Foods beat Talvo Foods in the final.")


def test_a_name_the_context_has_in_a_slot_of_the_claims_words_is_not_a_substitute():
    """issue 24: "religious freedom laws in Arkansas" against "Indiana ... signed his state's religious freedom
    bill into law, CEOs of companies ..." was an entity conflict ('Arkansas' vs 'CEOs') although the context
    has "religious freedom measures in Indiana and Arkansas".  A name the context has beside the claim's words
    may be what the claim is about; a name it has only elsewhere still fires against a close substitute."""
    from evqual.features._checks import EvidenceUnits, claim_checks

    ev = EvidenceUnits(["The backlash over the religious freedom measures in Indiana and Arkansas this week is "
                        "loud. After Indiana Gov. Mike Pence signed his state's religious freedom bill into law, "
                        "CEOs of companies big and small threatened to pull out."])
    out = "Walmart's opposition to religious freedom laws in Arkansas is seen as a significant moment."
    _, found = claim_checks(out, [(0, len(out))], ev)
    assert not [f for f in found[0] if f.check == "entity"]
    ev = EvidenceUnits(["Acme Corp hired Jane Smith as chief executive in 2019.", "Jane Smith studied in Ohio."])
    out = "Acme Corp hired Ohio as chief executive in 2019."
    _, found = claim_checks(out, [(0, len(out))], ev)
    assert [f.check for f in found[0]] == ["entity"]


_FINDINGS_SCRIPT = """
import hashlib, json
from evqual.bench import synthetic_sentences
from evqual.data import make_example
from evqual.features import EvidenceFeaturizer
ex = make_example(query="What did the council report about the bridge?", context=synthetic_sentences(1000, seed=1),
                  output=" ".join(synthetic_sentences(3000, seed=0)), task_type="QA", id="x")
_, (an,) = EvidenceFeaturizer(level="sentence").fit([ex]).analyze([ex])
found = [[(f.check, f.start, f.end, f.mention, f.evidence) for f in fs] for fs in an.findings]
print(hashlib.sha256(json.dumps(found).encode()).hexdigest(), sum(map(len, found)))
"""


def test_findings_do_not_depend_on_the_process_hash_seed():
    """Issue 41: in a large context (over 512 evidence sentences) the checks took the rarest stems and their
    candidates in a set's order, which follows the process's string hash seed: the same answer could get
    another finding (and span) in another process.  Ties are now broken by the stems themselves."""
    import os
    import subprocess
    import sys

    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", _FINDINGS_SCRIPT], capture_output=True, text=True, env=env,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.add(proc.stdout.strip())
    assert len(outs) == 1, outs
    assert int(next(iter(outs)).split()[1]) > 0  # the answer has findings to compare
