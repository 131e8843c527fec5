"""Topic tagging, the decision policy and policy files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evqual.scoring
from evqual.scoring import BUILTIN_TOPICS, DECISIONS, Decision, Policy, Topic, TopicTagger, load_policy

EXAMPLE = Path(evqual.scoring.__file__).with_name("policy_example.toml")
SEVERITY = {"show": 0, "warn": 1, "escalate": 1, "regenerate": 2, "abstain": 3}


# --- topics ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Can I take ibuprofen during pregnancy?", ("healthcare",)),
        ("Is ibuprofen contraindicated in the third trimester?", ("healthcare",)),
        ("What protections exist for LGBTQ+ refugees?", ("migration",)),
        ("How do LGBTQ+ refugees apply for asylum in Germany?", ("migration",)),
        ("What is the minimum wage for part-time workers?", ("labour",)),
        ("Am I eligible for a work permit as an asylum seeker?", ("migration", "labour")),
    ],
)
def test_builtin_topics_of_example_queries(query, expected):
    assert TopicTagger().tag(query, "") == expected


def test_neutral_text_has_no_topic():
    tagger = TopicTagger()
    context = "The Eiffel Tower is 330 metres tall. It was completed in 1889 for the World's Fair."
    assert tagger.tag("How tall is the Eiffel Tower?", context) == ()
    assert not tagger.is_sensitive(())


def test_builtin_topics_are_sensitive_and_sizeable():
    assert list(BUILTIN_TOPICS) == ["healthcare", "migration", "labour"]
    assert all(t.sensitive for t in BUILTIN_TOPICS.values())
    assert len(BUILTIN_TOPICS["healthcare"].terms) >= 25
    with pytest.raises(TypeError):
        BUILTIN_TOPICS["x"] = Topic("x", ("y",))  # read-only


def test_terms_are_case_insensitive_whole_words():
    tagger = TopicTagger({"t": Topic("t", ("visa", "sick leave"))})
    assert tagger.tag("VISA rules", "") == ("t",)
    assert tagger.tag("Is  Sick\nLeave paid?", "") == ("t",)  # any whitespace inside a phrase
    assert tagger.tag("visas and visages", "") == ()  # no prefix without *
    assert tagger.tag("sick leaves", "") == ()


def test_prefix_terms():
    tagger = TopicTagger({"t": Topic("t", ("diagnos*",))})
    for word in ("diagnosis", "Diagnosed", "diagnostic", "diagnose"):
        assert tagger.tag(word, "") == ("t",), word
    assert tagger.tag("prediagnosis", "") == ()  # the start is still a word boundary


def test_term_ending_in_symbol_and_phrase_counted_once():
    tagger = TopicTagger()
    assert tagger.counts("LGBTQ+ refugees")["migration"] == 1
    assert tagger.counts("LGBTQ+refugees")["migration"] == 1  # only "refugees" matches
    assert tagger.counts("refugee refugee asylum")["migration"] == 3  # occurrences, not terms


def test_min_hits():
    tagger = TopicTagger()
    one = "Asylum applications are handled by the federal office."
    two = "Asylum applications rose; most asylum seekers came by sea."
    assert tagger.tag("What does the text say?", one) == ()  # 1 < min_context_hits=2
    assert tagger.tag("What does the text say?", two) == ("migration",)
    assert tagger.tag("What does the text say?", [one, one]) == ("migration",)  # passages joined
    strict = TopicTagger(min_query_hits=2, min_context_hits=3)
    assert strict.tag("Is asylum possible?", two) == ()
    assert strict.tag("Asylum or refugee status?", "") == ("migration",)


def test_tags_follow_tagger_order():
    topics = {"b": Topic("b", ("beta",)), "a": Topic("a", ("alpha",), sensitive=False)}
    tagger = TopicTagger(topics)
    assert tagger.tag("alpha beta", "") == ("b", "a")
    assert tagger.is_sensitive(("a",)) is False
    assert tagger.is_sensitive(("a", "b")) is True
    with pytest.raises(ValueError, match="unknown topic 'zzz'"):
        tagger.is_sensitive(("zzz",))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_query_hits": 0}, "min_query_hits must be an int >= 1; got 0"),
        ({"min_context_hits": 1.5}, "min_context_hits must be an int >= 1; got 1.5"),
        ({"topics": {"a": Topic("b", ("x",))}}, "the key must equal the name"),
        ({"topics": {"a": ("x",)}}, r"topics\['a'\] must be a Topic"),
    ],
)
def test_tagger_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TopicTagger(**kwargs)


@pytest.mark.parametrize("terms", [(), ("",), ("*",), "visa"])
def test_topic_rejects_bad_terms(terms):
    with pytest.raises(ValueError, match="terms of topic 'x'"):
        Topic("x", terms)


# --- the policy ------------------------------------------------------------


def test_threshold_for():
    policy = Policy()
    assert policy.threshold_for(()) == 0.5  # follows the model; 0.5 without a model threshold
    assert policy.threshold_for((), 0.53) == 0.53 and policy.threshold_for(("labour",), 0.53) == 0.3
    assert policy.threshold_for(("labour",), 0.2) == 0.2  # sensitive is never looser than general
    assert policy.threshold_for(("labour",)) == 0.3
    assert Policy(general_threshold=0.6, sensitive_threshold=0.2).threshold_for(("healthcare",)) == 0.2


def test_sensitive_threshold_flags_lower_risk():
    policy = Policy(escalate_band=None)
    general = policy.decide(0.4)
    sensitive = policy.decide(0.4, ("healthcare",))
    assert general == Decision("show", flagged=False, threshold=0.5, verify=False, sensitive=False,
                               rule="below_threshold")
    assert sensitive == Decision("escalate", flagged=True, threshold=0.3, verify=True, sensitive=True,
                                 rule="sensitive_topic")
    no_escalation = Policy(escalate_band=None, escalate_sensitive=False)
    assert no_escalation.decide(0.4, ("healthcare",)).decision == "warn"
    assert Policy(escalate_band=None).decide(0.4).flagged is False
    assert Policy().decide(0.4).flagged is True  # escalated: flagged means "not shown"
    assert Policy().decide(0.3).flagged is False
    assert Policy().decide(0.4, ("migration",)).flagged is True


@pytest.mark.parametrize(
    ("risk", "decision", "flagged"),
    [
        (0.0, "show", False),
        (0.4999, "show", False),
        (0.5, "warn", True),  # exactly at the threshold: flagged
        (0.7499, "warn", True),
        (0.75, "regenerate", True),  # exactly at regenerate_at
        (0.8699, "regenerate", True),
        (0.87, "abstain", True),  # exactly at abstain_at
        (1.0, "abstain", True),
    ],
)
def test_band_boundaries_without_escalation(risk, decision, flagged):
    d = Policy(escalate_band=None).decide(risk)
    assert (d.decision, d.flagged, d.verify, d.threshold) == (decision, flagged, False, 0.5)


@pytest.mark.parametrize(
    ("risk", "decision"),
    [(0.2999, "show"), (0.3, "escalate"), (0.7499, "escalate"), (0.75, "regenerate"), (0.9, "abstain")],
)
def test_band_boundaries_sensitive(risk, decision):
    d = Policy(escalate_band=None).decide(risk, ("healthcare",))
    assert d.decision == decision
    assert d.flagged is (risk >= 0.3)
    assert d.verify is (decision == "escalate")


@pytest.mark.parametrize(
    ("risk", "decision", "flagged"),
    [
        (0.3499, "show", False),
        (0.35, "escalate", True),  # low end of the band is inside; escalated answers are flagged
        (0.5, "escalate", True),
        (0.6499, "escalate", True),
        (0.65, "warn", True),  # high end is outside
        (0.8, "regenerate", True),
    ],
)
def test_escalate_band(risk, decision, flagged):
    d = Policy().decide(risk)
    assert (d.decision, d.flagged, d.verify) == (decision, flagged, decision == "escalate")


def test_escalate_band_takes_precedence_even_over_abstain():
    policy = Policy(escalate_band=(0.8, 0.95))
    assert policy.decide(0.92).decision == "escalate"
    assert policy.decide(0.95).decision == "abstain"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"general_threshold": 1.5}, "general_threshold must be in [0, 1] or None; got 1.5"),
        ({"general_threshold": "model"}, "general_threshold must be in [0, 1] or None; got 'model'"),
        ({"sensitive_threshold": -0.1}, "sensitive_threshold must be in [0, 1]; got -0.1"),
        ({"regenerate_at": "high"}, "regenerate_at must be in [0, 1]; got 'high'"),
        ({"abstain_at": True}, "abstain_at must be in [0, 1]; got True"),
        ({"general_threshold": 0.5, "sensitive_threshold": 0.6}, "sensitive_threshold must be <= general_threshold"),
        ({"regenerate_at": 0.95}, "regenerate_at must be <= abstain_at; got 0.95 > 0.87"),
        ({"escalate_reasons": "NUMBER_CONFLICT"}, "escalate_reasons must be a sequence of reason codes"),
        ({"escalate_reasons": (1,)}, "escalate_reasons must be a sequence of reason codes"),
        ({"escalate_band": (0.6, 0.4)}, "escalate_band must be (low, high) with 0 <= low < high <= 1"),
        ({"escalate_band": (0.4, 0.4)}, "escalate_band must be"),
        ({"escalate_band": (0.4,)}, "escalate_band must be"),
        ({"escalate_band": (0.4, 1.2)}, "escalate_band must be"),
        ({"escalate_sensitive": 1}, "escalate_sensitive must be a bool; got 1"),
        ({"topics": {"a": 1}}, "topics must be a TopicTagger or None; got dict"),
    ],
)
def test_policy_parameter_errors(kwargs, message):
    policy = Policy(**kwargs)  # stored as given
    for name, value in kwargs.items():
        assert getattr(policy, name) is value
    with pytest.raises(ValueError, match=re.escape(message)):
        policy.decide(0.5)


@pytest.mark.parametrize("risk", [-0.01, 1.01, float("nan"), "0.5", None])
def test_invalid_risk(risk):
    with pytest.raises(ValueError, match="risk must be in"):
        Policy().decide(risk)


def test_policy_uses_its_tagger():
    tagger = TopicTagger({"tax": Topic("tax", ("tax*",), sensitive=True)})
    policy = Policy(topics=tagger, escalate_band=None)
    assert policy.tag("When are taxes due?") == ("tax",)
    assert policy.decide(0.4, ("tax",)).threshold == 0.3
    with pytest.raises(ValueError, match="unknown topic 'healthcare'"):
        policy.decide(0.4, ("healthcare",))


def test_to_dict_and_repr():
    d = Policy(escalate_band=None).to_dict()
    assert d["escalate_band"] is None
    assert set(d) == {"general_threshold", "sensitive_threshold", "regenerate_at", "abstain_at",
                      "escalate_band", "escalate_sensitive", "escalate_reasons", "ood_escalate_margin", "flag_rate",
                      "topics"}
    assert d["general_threshold"] == "model" and Policy(general_threshold=0.4).to_dict()["general_threshold"] == 0.4
    assert len(d["topics"]["topics"]["labour"]["terms_sha256"]) == 64
    full = Policy().to_dict(terms=True)
    assert full["topics"]["topics"]["healthcare"]["terms"][0] == BUILTIN_TOPICS["healthcare"].terms[0]
    assert repr(Policy()) == "Policy()"
    assert repr(Policy(abstain_at=0.95)) == "Policy(abstain_at=0.95)"


# --- properties ------------------------------------------------------------

unit = st.floats(0, 1, allow_nan=False)


@st.composite
def policies(draw, band=False):
    g, s = sorted(draw(st.tuples(unit, unit)), reverse=True)
    r, a = sorted(draw(st.tuples(unit, unit)))
    escalate_band = None
    if band:
        lo, hi = sorted(draw(st.tuples(unit, unit)))
        escalate_band = (lo, hi) if lo < hi else None
    return Policy(general_threshold=g, sensitive_threshold=s, regenerate_at=r, abstain_at=a,
                  escalate_band=escalate_band, escalate_sensitive=draw(st.booleans()))


topic_sets = st.sampled_from([(), ("healthcare",), ("migration", "labour")])


@settings(max_examples=200, deadline=None)
@given(policies(), topic_sets, unit, unit)
def test_decisions_monotone_in_risk(policy, topics, r1, r2):
    lo, hi = sorted((r1, r2))
    d_lo, d_hi = policy.decide(lo, topics), policy.decide(hi, topics)
    assert SEVERITY[d_lo.decision] <= SEVERITY[d_hi.decision]
    if not policy.tagger.is_sensitive(topics) or not policy.escalate_sensitive:
        assert d_lo.decision != "escalate" and d_hi.decision != "escalate"


@settings(max_examples=200, deadline=None)
@given(policies(band=True), topic_sets, unit)
def test_flagged_iff_not_shown(policy, topics, risk):
    d = policy.decide(risk, topics)
    assert d.threshold == policy.threshold_for(topics)
    assert d.flagged is (d.decision != "show")
    in_band = policy.escalate_band is not None and policy.escalate_band[0] <= risk < policy.escalate_band[1]
    if not in_band:
        assert d.flagged is (risk >= d.threshold)
    assert d.decision in DECISIONS
    assert d.verify is (d.decision == "escalate")
    assert d.sensitive is bool(topics)
    if d.decision == "show":
        assert not d.flagged
    if d.decision in ("warn", "regenerate", "abstain"):
        assert d.flagged


# --- policy files ----------------------------------------------------------


def write(tmp_path, text, name="policy.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_example_file_loads_with_every_key():
    policy = load_policy(EXAMPLE)
    assert (policy.general_threshold, policy.sensitive_threshold) == (None, 0.3)  # "model"
    assert (policy.regenerate_at, policy.abstain_at) == (0.75, 0.87)
    assert policy.escalate_reasons == Policy().escalate_reasons
    assert policy.escalate_band == (0.35, 0.65)
    assert policy.escalate_sensitive is True
    assert list(policy.tagger.topics_) == ["healthcare", "migration", "labour", "housing"]
    assert policy.tag("Can my landlord evict me?") == ("housing",)
    assert policy.decide(0.32, ("housing",)).decision == "escalate"
    text = EXAMPLE.read_text(encoding="utf-8")
    for key in ("general", "sensitive", "regenerate", "abstain", "escalate", "escalate_sensitive", "escalate_reasons",
                "builtin", "min_query_hits", "min_context_hits", "terms"):
        assert re.search(rf"^{key} = ", text, re.M), key


def test_empty_file_gives_defaults(tmp_path):
    policy = load_policy(write(tmp_path, ""))
    assert policy.get_params() == Policy().get_params()


def test_values_and_escalate_false(tmp_path):
    path = write(tmp_path, """
[thresholds]
general = 0.6
sensitive = 0.25
[bands]
regenerate = 0.8
abstain = 0.95
escalate = false
escalate_sensitive = false
[topics]
min_query_hits = 2
min_context_hits = 4
""")
    policy = load_policy(str(path))
    assert policy.to_dict()["escalate_band"] is None
    assert (policy.general_threshold, policy.sensitive_threshold, policy.regenerate_at, policy.abstain_at) == (
        0.6, 0.25, 0.8, 0.95)
    assert policy.escalate_sensitive is False
    assert (policy.tagger.min_query_hits, policy.tagger.min_context_hits) == (2, 4)
    assert list(policy.tagger.topics_) == list(BUILTIN_TOPICS)


def test_user_topic_added_and_builtin_replaced(tmp_path):
    path = write(tmp_path, """
[topics.tax]
terms = ["tax return*", "VAT"]
sensitive = false
[topics.labour]
terms = ["strike*"]
""")
    tagger = load_policy(path).tagger
    assert list(tagger.topics_) == ["healthcare", "migration", "labour", "tax"]
    assert tagger.topics_["tax"].sensitive is False
    assert tagger.topics_["labour"] == Topic("labour", ("strike*",), sensitive=True)  # sensitive by default
    assert tagger.tag("When is my tax return due?", "") == ("tax",)
    assert tagger.tag("What is the minimum wage?", "") == ()  # built-in labour replaced


def test_builtin_false(tmp_path):
    path = write(tmp_path, """
[topics]
builtin = false
[topics.tax]
terms = ["tax*"]
""")
    tagger = load_policy(path).tagger
    assert list(tagger.topics_) == ["tax"]
    assert tagger.tag("Can I take ibuprofen during pregnancy?", "") == ()
    none = load_policy(write(tmp_path, "[topics]\nbuiltin = false\n", "none.toml"))
    assert none.tag("Can I take ibuprofen during pregnancy?") == ()


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[thresholds]\nfoo = 1\n", "thresholds.foo"),
        ("[bands]\nwarn = 0.6\n", "bands.warn"),
        ("[extras]\nx = 1\n", "extras"),
        ("threshold = 0.5\n", "threshold"),
        ("[topics.tax]\nterms = ['tax']\nweight = 2\n", "topics.tax.weight"),
        ("[topics]\nmin_hits = 2\n", "topics.min_hits"),
    ],
)
def test_unknown_key_names_file_and_key(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: unknown key '{key}'")):
        load_policy(path)


def test_syntax_error_names_file_and_position(tmp_path):
    path = write(tmp_path, "[thresholds]\ngeneral = 0.5\nsensitive = = 0.3\n")
    with pytest.raises(ValueError) as info:
        load_policy(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid TOML")
    assert "line 3" in message and "column" in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[thresholds]\ngeneral = 1.5\n", "general_threshold must be in [0, 1] or None; got 1.5"),
        ("[thresholds]\ngeneral = 0.5\nsensitive = 0.7\n", "sensitive_threshold must be <= general_threshold"),
        ("[bands]\nregenerate = 0.95\n", "regenerate_at must be <= abstain_at; got 0.95 > 0.87"),
        ("[thresholds]\ngeneral = \"auto\"\n", "'thresholds.general' must be a number in [0, 1] or \"model\""),
        ("[bands]\nescalate_reasons = \"NUMBER_CONFLICT\"\n", "'bands.escalate_reasons' must be a list"),
        ("[bands]\nescalate_reasons = [\"NUMBER_CONFLICTS\"]\n", "unknown reason code 'NUMBER_CONFLICTS'"),
        ("[bands]\nescalate = [0.7, 0.2]\n", "escalate_band must be (low, high)"),
        ("[bands]\nescalate = true\n", "'bands.escalate' must be [low, high] or false; got True"),
        ("[bands]\nescalate_sensitive = 'yes'\n", "escalate_sensitive must be a bool; got 'yes'"),
        ("[topics]\nbuiltin = 'no'\n", "'topics.builtin' must be true or false"),
        ("[topics]\nmin_context_hits = 0\n", "min_context_hits must be an int >= 1; got 0"),
        ("[topics.tax]\nsensitive = true\n", "'topics.tax' needs 'terms'"),
        ("[topics.tax]\nterms = []\n", "terms of topic 'tax' must not be empty"),
        ("[topics.tax]\nterms = ['vat']\nsensitive = 1\n", "sensitive of topic 'tax' must be a bool"),
        ("thresholds = 0.5\n", "'thresholds' must be a table"),
    ],
)
def test_invalid_values_name_file(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        load_policy(path)
    assert str(info.value).startswith(f"{path}: ")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_policy(tmp_path / "absent.toml")


@pytest.mark.parametrize("depth", [10, 2000])
def test_deeply_nested_policy_arrays_give_a_clear_error(tmp_path, depth):
    # a 1,000-deep TOML array raised RecursionError out of load_policy
    path = tmp_path / "deep.toml"
    path.write_text("[thresholds]\ngeneral = " + "[" * depth + "]" * depth + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="nested"):
        load_policy(path)


def test_oversized_policy_file_is_refused(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text("# " + "x" * (2 << 20) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="larger than"):
        load_policy(path)


# --- high-precision conflicts force escalation (issue 10) ---------------------


@pytest.mark.parametrize(("risk", "expected"), [(0.1, "escalate"), (0.7, "escalate"), (0.8, "regenerate"),
                                                (0.9, "abstain")])
def test_a_high_precision_conflict_forces_at_least_escalate(risk, expected):
    d = Policy().decide(risk, reasons=["NOVEL_WORDS", "NUMBER_CONFLICT"])
    assert d.decision == expected and d.flagged
    if risk < 0.35:
        assert d.rule == "reason:NUMBER_CONFLICT" and d.verify


def test_escalate_reasons_are_configurable():
    assert Policy().decide(0.1, reasons=["NOVEL_PHRASE"]).decision == "show"
    assert Policy(escalate_reasons=()).decide(0.1, reasons=["NUMBER_CONFLICT"]).decision == "show"
    assert Policy(escalate_reasons=("NOVEL_PHRASE",)).decide(0.1, reasons=["NOVEL_PHRASE"]).decision == "escalate"


@settings(max_examples=200, deadline=None)
@given(policies(band=True), topic_sets, unit, st.lists(st.sampled_from(["NUMBER_CONFLICT", "NOVEL_WORDS",
                                                                         "FIELD_CONFLICT", "LOW_SUPPORT"])))
def test_reasons_never_make_a_decision_milder(policy, topics, risk, reasons):
    severity = {"show": 0, "warn": 1, "escalate": 2, "regenerate": 3, "abstain": 4}
    plain, with_reasons = policy.decide(risk, topics), policy.decide(risk, topics, reasons=reasons)
    assert severity[with_reasons.decision] >= severity[plain.decision]
    assert with_reasons.flagged is (with_reasons.decision != "show")


def test_the_policy_follows_the_model_threshold():
    policy = Policy(escalate_band=None)
    assert policy.decide(0.52, model_threshold=0.53).decision == "show"
    assert policy.decide(0.53, model_threshold=0.53).decision == "warn"
    assert Policy(general_threshold=0.5, escalate_band=None).decide(0.52, model_threshold=0.53).decision == "warn"
    with pytest.raises(ValueError, match="model_threshold must be in"):
        policy.decide(0.5, model_threshold=1.5)
