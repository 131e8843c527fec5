"""Claim-aligned contradiction checks (family ``check``) and the risk floor they drive (issue 9)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.features import EvidenceFeaturizer, list_features
from evqual.features._checks import CHECKS, EvidenceUnits, claim_checks, split_claims
from evqual.models._detector import FLOOR_CHECKS, Detector, evidence_floors
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


def test_featurizer_has_the_check_family():
    names = list_features(families=["check"])
    assert "check.date.v1" in names and "check.any.v1" in names
    X = [{"query": "When did the bridge open?", "context": ["The bridge opened in 1932 after six years of work."],
          "output": "The bridge opened in 1935.", "task_type": "QA"}]
    fz = EvidenceFeaturizer(families=["check"]).fit(X)
    row = dict(zip(fz.get_feature_names_out(), fz.transform(X)[0].tolist()))
    assert row["check.date.v1"] == 1.0 and row["check.any.v1"] == 1.0 and row["check.sentences.v1"] == 1.0


# ---------------------------------------------------------------- the evidence floor
def test_evidence_floors_are_smoothed_precisions_kept_only_where_precise():
    n = 12
    train = pd.DataFrame({"label": [1] * 10 + [0] * 2 + [1] * 6 + [0] * 6,
                          "task_type": ["QA"] * n + ["Summary"] * n,
                          "check.number.v1": [1.0] * 24})
    val = pd.DataFrame({"label": [1, 0], "task_type": ["QA", "QA"], "check.number.v1": [1.0, 0.0]})
    floors = evidence_floors(train, val)
    # QA: 11 hallucinated of 13 fired; Summary: 6 of 12 (below 0.6, no floor); all tasks: 17 of 25
    assert floors == {"QA:check.number.v1": pytest.approx(12 / 15), "*:check.number.v1": pytest.approx(18 / 27)}
    assert evidence_floors(train, min_fired=100) == {}


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


def test_all_checks_can_floor():
    assert set(FLOOR_CHECKS) == {f"check.{c}.v1" for c in CHECKS}


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
    from evqual.models import Detector

    r = Detector.load().score(query="What is the capital of France?",
                              context=["Paris is the capital and largest city of France."],
                              output="Paris is the capital of Spain.", task_type="QA")
    codes = [x.code for s in r.sentences for x in s.reasons]
    assert codes.count("ENTITY_CONFLICT") == 1 and "ENTITY_UNSUPPORTED" not in codes


def test_a_flagged_answer_flags_the_sentence_that_contradicts_the_evidence():
    # regression: the answer was flagged by DATE_CONFLICT but only another sentence was flagged
    from evqual.models import Detector

    r = Detector.load().score(query="When did the bridge open?",
                              context=["The bridge opened in 1932 after six years of work."],
                              output="The bridge opened in 1935. It was designed by Joseph Strauss.", task_type="QA")
    assert r.flagged
    first = r.sentences[0]
    assert first.flagged and first.reasons[0].code == "DATE_CONFLICT"
    assert first.explanation.startswith("Flagged")
