"""MetaRAG (seed 000, Algorithm 1, Table 1) with LLM-free mutations (issue 11, section 4)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evqual.text import NUMBER_WORDS, antonyms_of, extract_numbers
from evqual.verify import (
    ANTONYM_SETS,
    DEFAULT_TAU,
    MUTATION_SETS,
    PENALTIES,
    SYNONYM_SETS,
    Judgement,
    MetaRAG,
    RulesMutator,
    extract_factoids,
    load_synonyms,
    metarag_answer,
    penalty,
)

# ------------------------------------------------------------------------------------------------ fakes


class ScriptedMutator:
    """Two synonyms and two antonyms per factoid, tagged so the scripted judge can answer them."""

    name = "scripted"

    def __init__(self, n_syn=2, n_ant=2):
        self.n_syn, self.n_ant = n_syn, n_ant

    def mutate(self, factoid, kind, n):
        count = self.n_syn if kind == "synonym" else self.n_ant
        return [f"{factoid} <{kind}{j}>" for j in range(min(n, count))]


class ScriptedJudge:
    """Answers from a table keyed by (factoid prefix, tag); NOT SURE otherwise. Records the calls."""

    name = "scripted"

    def __init__(self, table):
        self.table = table
        self.calls = []

    def judge(self, statements, evidence, *, query="", chunks=()):
        self.calls.append(list(statements))
        out = []
        for s in statements:
            m = re.match(r"(.*) <(\w+)>$", s)
            key = (m.group(1), m.group(2)) if m else (s, "self")
            out.append(Judgement("NO_EVIDENCE", 0.5, answer=self.table.get(key, "NOT SURE")))
        return out


_TOKEN = re.compile(r"[a-z]+|\d+(?:[.,]\d+)*")
_NEG = frozenset({"not", "never", "no", "didn", "isn", "wasn", "doesn", "cannot"})


def _words(text):
    words = _TOKEN.findall(text.lower().replace("n't", " not"))
    return [str(NUMBER_WORDS[w]) if w in NUMBER_WORDS and w not in ("one", "half") else w for w in words]


class OverlapJudge:
    """A small deterministic judge for end-to-end tests: a number absent from the context or a word whose
    antonym the context has refutes; a negation on one side only refutes; otherwise the probability is the
    share of the statement's words found in the context."""

    name = "overlap"

    def judge(self, statements, evidence, *, query="", chunks=()):
        ctx_words = set(_words(" ".join(chunks)))
        out = []
        for s in statements:
            words = _words(s)
            if not words:
                out.append(Judgement("NO_EVIDENCE", 0.0, error="empty statement"))
                continue
            nums = {w for w in words if w[0].isdigit()}
            ctx_nums = {w for w in ctx_words if w[0].isdigit()}
            refuted = (nums and ctx_nums and not nums <= ctx_nums) \
                or any(antonyms_of(w) & ctx_words and w not in ctx_words for w in words) \
                or (bool(_NEG & set(words)) != bool(_NEG & ctx_words))
            share = sum(w in ctx_words for w in words) / len(words)
            out.append(Judgement("REFUTED" if refuted else ("SUPPORTED" if share >= 0.75 else "NO_EVIDENCE"),
                                 0.0 if refuted else share))
        return out


def _values(text):
    """The number values of a text, digits and number words, in order."""
    vals = [(m.start, m.value) for m in extract_numbers(text)]
    vals += [(m.start(), str(NUMBER_WORDS[m.group().lower()])) for m in re.finditer(r"[A-Za-z]+", text)
             if m.group().lower() in NUMBER_WORDS and m.group().lower() not in ("one", "half")]
    return [v for _, v in sorted(vals)]


def _calendar(text):
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    from evqual.text import MONTHS, WEEKDAYS

    return [w for w in words if w in MONTHS or w in WEEKDAYS]


# ------------------------------------------------------------------------------------------------ Table 1


def test_table_1_penalties():
    assert PENALTIES == {"synonym": {"YES": 0.0, "NOT SURE": 0.5, "NO": 1.0},
                         "antonym": {"YES": 1.0, "NOT SURE": 0.5, "NO": 0.0}}
    assert [penalty("synonym", a) for a in ("YES", "NOT SURE", "NO")] == [0.0, 0.5, 1.0]
    assert [penalty("antonym", a) for a in ("YES", "NOT SURE", "NO")] == [1.0, 0.5, 0.0]
    with pytest.raises(ValueError, match="kind must be one of"):
        penalty("identity", "YES")


@pytest.mark.parametrize("verdict, prob, answer, expected", [
    ("SUPPORTED", 0.75, None, "YES"),        # yes_at is inclusive
    ("SUPPORTED", 0.74, None, "NOT SURE"),
    ("NO_EVIDENCE", 0.4, None, "NOT SURE"),  # no_at is exclusive
    ("NO_EVIDENCE", 0.39, None, "NO"),
    ("REFUTED", 0.99, None, "NO"),           # a check that fired wins over the probability
    ("REFUTED", 0.99, "YES", "YES"),         # the judge's own answer wins
    ("NO_EVIDENCE", float("nan"), None, "NOT SURE"),
])
def test_answers_from_judgements(verdict, prob, answer, expected):
    assert metarag_answer(Judgement(verdict, prob, answer=answer)) == expected


def test_an_errored_judgement_is_not_sure_and_a_bad_answer_is_an_error():
    assert metarag_answer(Judgement("NO_EVIDENCE", 0.0, error="timeout")) == "NOT SURE"
    with pytest.raises(ValueError, match="answer must be one of"):
        metarag_answer(Judgement("SUPPORTED", 1.0, answer="MAYBE"))


# ------------------------------------------------------------------------------------------------ S_i and H

OUTPUT = "The bridge opened in 1932. The tolls were abolished in 1950."
F1, F2 = "The bridge opened in 1932.", "The tolls were abolished in 1950."


def test_s_i_is_the_mean_penalty_and_h_the_max():
    judge = ScriptedJudge({(F1, "synonym0"): "YES", (F1, "synonym1"): "NOT SURE",
                           (F1, "antonym0"): "NO", (F1, "antonym1"): "NO",
                           (F2, "synonym0"): "NO", (F2, "synonym1"): "NO",
                           (F2, "antonym0"): "YES", (F2, "antonym1"): "NOT SURE"})
    r = MetaRAG(judge=judge, mutator=ScriptedMutator(), n=2).verify(context="Irrelevant.", output=OUTPUT)
    assert r.error is None and r.method == "metarag" and r.backend == "scripted"
    s = [f.score for f in r.factoids]
    assert s == [(0 + 0.5 + 0 + 0) / 4, (1 + 1 + 1 + 0.5) / 4]  # 0.125, 0.875
    assert r.score == max(s) == 0.875
    assert r.flagged and r.tier == "reject" and r.tau == 0.5
    assert [f.flagged for f in r.factoids] == [False, True]
    assert [len(f.variants) for f in r.factoids] == [4, 4] and all(f.missing == 0 for f in r.factoids)
    assert len(judge.calls) == 1 and len(judge.calls[0]) == 8  # one judge call per answer


def test_n_caps_the_variants_and_a_short_mutator_is_recorded():
    judge = ScriptedJudge({(F1, "synonym0"): "NO"})
    r = MetaRAG(judge=judge, mutator=ScriptedMutator(n_syn=1, n_ant=3), n=2).verify(context="x", output=F1)
    f = r.factoids[0]
    assert [v.kind for v in f.variants] == ["synonym", "antonym", "antonym"]
    assert f.missing == 1
    assert f.score == pytest.approx((1.0 + 0.5 + 0.5) / 3)  # the mean over the variants made, not over 2N


def test_a_factoid_without_variants_is_checked_itself():
    judge = ScriptedJudge({(F1, "self"): "NO"})
    r = MetaRAG(judge=judge, mutator=ScriptedMutator(0, 0), n=3).verify(context="x", output=F1)
    f = r.factoids[0]
    assert [(v.kind, v.text) for v in f.variants] == [("synonym", F1)]
    assert f.missing == 6 and f.score == 1.0 and r.score == 1.0


def test_no_factoid_scores_zero_and_accepts():
    judge = ScriptedJudge({})
    r = MetaRAG(judge=judge, n=2).verify(context="The bridge opened in 1932.",
                                         output="Did it open? I think it is lovely.")
    assert (r.score, r.flagged, r.tier, r.factoids, r.error) == (0.0, False, "accept", [], None)
    assert judge.calls == []


def test_tiers_follow_the_flag():
    m = MetaRAG(judge=None)
    for h in (0.0, 0.29, 0.3, 0.49, 0.5, 0.74, 0.75, 1.0):
        for tau in (0.3, 0.5):
            assert (m.tier(h, tau) != "accept") == (h >= tau)
    assert m.tier(0.75, 0.5) == "reject" and m.tier(0.7, 0.5) == "revise"
    assert MetaRAG(judge=None, reject_at=0.9).tier(0.8, 0.5) == "revise"


# ------------------------------------------------------------------------------------------------ tau


def _half_judge():
    # S = (NOT SURE, NOT SURE, NO, NOT SURE) = (0.5 + 0.5 + 0 + 0.5) / 4 = 0.375: between 0.3 and 0.5
    return ScriptedJudge({("Ibuprofen is safe in the third trimester.", "antonym0"): "NO"})


def test_tau_is_topic_aware():
    m = MetaRAG(judge=_half_judge(), mutator=ScriptedMutator(), n=2)
    out = "Ibuprofen is safe in the third trimester."
    ctx = "Back pain is common."
    general = m.verify(query="Is it safe?", context=ctx, output=out)
    sensitive = m.verify(query="Can pregnant women take ibuprofen?", context=ctx, output=out)
    assert general.score == sensitive.score == 0.375
    assert (general.tau, general.flagged, general.tier) == (DEFAULT_TAU["general"], False, "accept")
    assert (sensitive.tau, sensitive.flagged, sensitive.tier) == (DEFAULT_TAU["sensitive"], True, "revise")
    assert sensitive.factoids[0].flagged and not general.factoids[0].flagged
    # topics given by the caller, and a fixed tau
    assert m.verify(query="Is it safe?", context=ctx, output=out, topics=("healthcare",)).tau == 0.3
    assert m.verify(query="Is it?", context=ctx, output=out, topics=()).tau == 0.5
    fixed = MetaRAG(judge=_half_judge(), mutator=ScriptedMutator(), n=2, tau=0.4)
    assert fixed.verify(query="Can pregnant women take ibuprofen?", context=ctx, output=out).tau == 0.4


def test_an_unknown_topic_is_the_callers_error():
    with pytest.raises(ValueError, match="unknown topic"):
        MetaRAG(judge=ScriptedJudge({}), n=2).verify(context="x", output=F1, topics=("astrology",))


# ------------------------------------------------------------------------------------------------ spans and evidence

CONTEXT = ["The Golden Gate Bridge opened in 1937 after four years of work.",
           "Tolls on the bridge were raised to 8 dollars in 2019.",
           "The bridge is painted International Orange."]


def test_spans_of_factoids_lie_in_the_output_and_flagged_ones_carry_evidence():
    out = ("The Golden Gate Bridge opened in 1935 after four years of work. Tolls were raised to 8 dollars in 2019; "
           "the bridge is painted International Orange.")
    r = MetaRAG(judge=OverlapJudge(), n=3, aggregate="balanced").verify(query="When did the bridge open?",
                                                                        context=CONTEXT, output=out)
    assert r.error is None and r.factoids
    for f in r.factoids:
        assert out[f.start:f.end] == f.text
        assert f.evidence and all(e["text"] in " ".join(CONTEXT) for e in f.evidence)
    flagged = [f for f in r.factoids if f.flagged]
    assert [f.text for f in flagged] == ["The Golden Gate Bridge opened in 1935 after four years of work."]
    json.loads(json.dumps(r.to_dict()))  # JSON values only


def test_a_wrong_answer_scores_higher_than_the_right_one_end_to_end():
    scores = {}
    for aggregate in ("mean", "balanced"):
        m = MetaRAG(judge=OverlapJudge(), n=5, aggregate=aggregate)
        right = m.verify(query="When did it open?", context=CONTEXT,
                         output="The Golden Gate Bridge opened in 1937 after four years of work.")
        wrong = m.verify(query="When did it open?", context=CONTEXT,
                         output="The Golden Gate Bridge opened in 1932 after four years of work.")
        assert right.score < wrong.score and not right.flagged
        scores[aggregate] = wrong
    # this judge refutes every variant that carries the wrong year, antonyms included, and the factoid has
    # fewer synonyms than antonyms: the plain mean lets the antonyms outvote the synonyms, the balanced one not
    f = scores["mean"].factoids[0]
    syn = [v.penalty for v in f.variants if v.kind == "synonym"]
    ant = [v.penalty for v in f.variants if v.kind == "antonym"]
    assert len(syn) < len(ant)
    assert scores["mean"].score == pytest.approx(round((sum(syn) + sum(ant)) / (len(syn) + len(ant)), 6))
    assert scores["balanced"].score == pytest.approx(round((sum(syn) / len(syn) + sum(ant) / len(ant)) / 2, 6))
    assert scores["balanced"].flagged and not scores["mean"].flagged


def test_balanced_equals_the_mean_when_both_relations_have_n_variants():
    judge = ScriptedJudge({(F1, "synonym0"): "NO", (F1, "antonym1"): "YES"})
    a = MetaRAG(judge=judge, mutator=ScriptedMutator(), n=2).verify(context="x", output=F1)
    b = MetaRAG(judge=judge, mutator=ScriptedMutator(), n=2, aggregate="balanced").verify(context="x", output=F1)
    assert a.score == b.score == (1 + 0.5 + 0.5 + 1) / 4
    c = MetaRAG(judge=judge, mutator=ScriptedMutator(2, 0), n=2, aggregate="balanced").verify(context="x", output=F1)
    assert c.score == (1 + 0.5) / 2  # a relation without variants does not count


def test_factoids_drop_questions_opinions_and_lead_ins_and_keep_spans():
    out = ("Here is a summary of the article in 200 words or less:\nParis is the capital of France; it has 2 million "
           "people. Is it big? In my opinion it is lovely.")
    spans = extract_factoids(out)
    assert [out[a:b] for a, b in spans] == ["Paris is the capital of France", "it has 2 million people."]


def test_the_statement_judged_drops_a_leading_coordinator_but_the_span_keeps_it():
    judge = ScriptedJudge({})
    r = MetaRAG(judge=judge, mutator=ScriptedMutator(1, 0), n=1).verify(
        context="x", output="The plant opened in 1932, but it closed in 1990.")
    assert [f.text for f in r.factoids] == ["The plant opened in 1932", "but it closed in 1990."]
    assert judge.calls[0][1] == "it closed in 1990. <synonym0>"


def test_a_custom_extractor():
    class Whole:
        def extract(self, output):
            from types import SimpleNamespace

            return [SimpleNamespace(start=0, end=len(output))]

    r = MetaRAG(judge=ScriptedJudge({}), mutator=ScriptedMutator(), n=2, extractor=Whole()).verify(
        context="x", output="One. Two.")
    assert [f.text for f in r.factoids] == ["One. Two."]
    bad = MetaRAG(judge=ScriptedJudge({}), n=2, extractor=lambda o: [(0, 999)]).verify(context="x", output="Hi.")
    assert bad.score is None and "not inside the answer" in bad.error


# ------------------------------------------------------------------------------------------------ errors


def test_bad_content_is_an_error_result_not_an_exception():
    m = MetaRAG(judge=ScriptedJudge({}), n=2)
    r = m.verify(context="x", output=None)
    assert r.score is None and r.flagged is None and r.tier is None and r.error.startswith("TypeError")

    class Boom:
        name = "boom"

        def judge(self, statements, evidence, *, query="", chunks=()):
            raise RuntimeError("backend down")

    r = MetaRAG(judge=Boom(), n=2).verify(context="x", output=F1)
    assert r.error == "RuntimeError: backend down" and r.backend == "boom"

    class Short:
        name = "short"

        def judge(self, statements, evidence, *, query="", chunks=()):
            return []

    assert "judgements for" in MetaRAG(judge=Short(), n=2).verify(context="x", output=F1).error

    class AllFail:
        name = "fail"

        def judge(self, statements, evidence, *, query="", chunks=()):
            return [Judgement("NO_EVIDENCE", 0.0, error="parse error") for _ in statements]

    assert "every variant failed" in MetaRAG(judge=AllFail(), n=2).verify(context="x", output=F1).error


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 0}, "n must be"), ({"tau": 1.5}, "tau must be"), ({"yes_at": 0.3, "no_at": 0.5}, "no_at must be"),
    ({"policy": "strict"}, "policy must be"), ({"aggregate": "median"}, "aggregate must be"), ({"k": 0}, "k must be"), ({"mutator": object()}, "mutator must"),
])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MetaRAG(judge=ScriptedJudge({}), **kwargs).verify(context="x", output=F1)


def test_a_judge_without_judge_method_raises():
    with pytest.raises(ValueError, match="judge must have"):
        MetaRAG(judge=object()).verify(context="x", output=F1)


def test_usage_comes_from_the_judges_client_scope():
    from contextlib import contextmanager

    from evqual.verify import Usage

    class Client:
        @contextmanager
        def usage_scope(self):
            u = Usage()
            yield u
            u.calls, u.prompt_tokens = 3, 120

    judge = ScriptedJudge({})
    judge.client = Client()
    r = MetaRAG(judge=judge, mutator=ScriptedMutator(), n=2).verify(context="x", output=F1)
    assert (r.usage.calls, r.usage.prompt_tokens) == (3, 120)


def test_verify_many_takes_dicts_and_examples():
    from evqual.data import load_sample

    m = MetaRAG(judge=OverlapJudge(), n=2)
    exs = list(load_sample())[:2]
    rs = m.verify_many([{"context": CONTEXT, "output": "The bridge opened in 1937."}] + exs)
    assert len(rs) == 3 and all(r.error is None and 0 <= r.score <= 1 for r in rs)


# ------------------------------------------------------------------------------------------------ mutations

FACTOIDS = [
    "The bridge opened in 1932.",
    "Sales rose 12% to 1,200 units in March 2020.",
    "The museum is open on Monday and costs 15 dollars.",
    "Some patients may need a higher dose of 400 mg.",
    "He did not attend the meeting with three advisers.",
    "In 2015, the council approved an increase of 3.5 percent.",
    "Walmart employs over 50,000 people in Arkansas.",
    "The drug was approved in the 1990s for adults.",
]


@pytest.mark.parametrize("factoid", FACTOIDS)
def test_antonym_mutations_differ_and_number_date_edits_change_one_value(factoid):
    m = RulesMutator()
    cands = m.candidates(factoid, "antonym")
    assert set(cands) == set(ANTONYM_SETS)
    assert any(cands.values())
    for name, variants in cands.items():
        for v in variants:
            assert v != factoid
    before = _values(factoid)
    for v in cands["number"]:
        after = _values(v)
        assert len(after) == len(before) and sum(x != y for x, y in zip(before, after)) == 1, v
        assert _calendar(v) == _calendar(factoid)
    for v in cands["date"]:
        after, cal = _values(v), _calendar(v)
        changed = sum(x != y for x, y in zip(before, after)) + sum(x != y for x, y in zip(_calendar(factoid), cal))
        assert len(after) == len(before) and len(cal) == len(_calendar(factoid)) and changed == 1, v


@pytest.mark.parametrize("factoid", FACTOIDS)
def test_synonym_mutations_preserve_numbers(factoid):
    cands = RulesMutator().candidates(factoid, "synonym")
    assert set(cands) == set(SYNONYM_SETS)
    for variants in cands.values():
        for v in variants:
            assert v != factoid
            assert Counter(_values(v)) == Counter(_values(factoid)), v


def test_examples_of_each_mutation_set():
    m = RulesMutator()
    ant = m.candidates("The bridge opened in 1932.", "antonym")
    assert "The bridge did not open in 1932." in ant["negation"]
    assert "The bridge never opened in 1932." in ant["negation"]
    assert "The bridge closed in 1932." in ant["antonym"]
    assert "The bridge opened in 1935." in ant["date"]
    assert m.candidates("Sales rose 12%.", "antonym")["number"][0] == "Sales rose 18%."
    assert "Sales rose five percent." in m.candidates("Sales rose three percent.", "antonym")["number"]
    assert m.candidates("It was not approved.", "antonym")["negation"] == ["It was approved."]
    assert m.candidates("It isn't open.", "antonym")["negation"] == ["It is open."]
    assert "Most patients must rest." in m.candidates("Most patients may rest.", "antonym")["quantifier"]
    assert "It closed on Tuesday." in m.candidates("It closed on Monday.", "antonym")["date"]
    assert "It opened a decrease." in m.candidates("It opened an increase.", "antonym")["antonym"]  # article
    syn = m.candidates("In 2015, the company bought 3 stores.", "synonym")
    assert "In 2015, the firm bought 3 stores." in syn["lexicon"]
    assert "In 2015, the company purchased 3 stores." in syn["lexicon"]
    assert "In 2015, the company bought three stores." in syn["number_format"]
    assert "The company bought 3 stores in 2015." in syn["paraphrase"]
    assert "Prices rose 5 percent." in m.candidates("Prices rose 5%.", "synonym")["number_format"]
    assert "It did not open." in m.candidates("It didn't open.", "synonym")["paraphrase"]


def test_mutation_is_deterministic_and_seeded():
    f = "The company said in February it would boost pay for about 500,000 workers in 2015."
    a = [RulesMutator(seed=0).mutate(f, k, 5) for k in ("synonym", "antonym")]
    b = [RulesMutator(seed=0).mutate(f, k, 5) for k in ("synonym", "antonym")]
    assert a == b
    seeds = {tuple(RulesMutator(seed=s).mutate(f, "antonym", 5)) for s in range(8)}
    assert len(seeds) > 1


def test_mutation_sets_can_be_switched():
    f = "The bridge opened in 1932."
    only = RulesMutator(antonym_sets=["date"], synonym_sets=[])
    assert all(re.search(r"19\d\d", v) and "1932" not in v for v in only.mutate(f, "antonym", 5))
    assert only.mutate(f, "synonym", 5) == []
    assert set(MUTATION_SETS) == {"synonym", "antonym"}
    with pytest.raises(ValueError, match="unknown mutation set"):
        RulesMutator(antonym_sets=["lexicon"])
    with pytest.raises(ValueError, match="kind must be one of"):
        RulesMutator().mutate(f, "identity", 2)
    with pytest.raises(ValueError, match="n must be"):
        RulesMutator().mutate(f, "synonym", -1)


# ------------------------------------------------------------------------------------------------ lexicon


def test_shipped_lexicon_has_no_opposites_and_no_numbers():
    syn = load_synonyms()
    assert len(syn) > 500
    for term, others in syn.items():
        assert term not in others
        for o in others:
            assert o not in antonyms_of(term), (term, o)
        assert not any(w in NUMBER_WORDS for w in term.split()), term


def test_the_lexicon_leaves_verb_noun_homographs_alone():
    # swapped with a synonym of the other part of speech they break the sentence ("cost 35 million" ->
    # "expense 35 million"); each was in an early draft of the lexicon
    syn = load_synonyms()
    for word in ("cost", "costs", "use", "uses", "need", "needs", "report", "show", "change", "help", "support",
                 "state", "claim", "plan", "record", "return", "leave", "pay", "about", "since", "like"):
        assert word not in syn, word


def test_the_lexicon_ships_with_the_package():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["evqual.evidence"]
    shipped = [p for pat in patterns for p in (root / "evqual" / "evidence").glob(pat)]
    assert (root / "evqual" / "evidence" / "synonyms.tsv") in shipped
    assert (root / "evqual" / "evidence" / "logic.tsv") in shipped


@pytest.mark.parametrize("line, match", [
    ("big\tLarge", r"line 2, field 2"),
    ("big", r"line 2: a group needs at least two"),
    ("big\tlarge\tbig", r"line 2: a term is repeated"),
    ("big\t3", r"line 2, field 2"),
])
def test_a_bad_lexicon_line_names_file_line_and_field(tmp_path, line, match):
    p = tmp_path / "syn.tsv"
    p.write_text("# comment\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        load_synonyms(p)
    assert str(p) in str(info.value)


def test_a_custom_lexicon(tmp_path):
    p = tmp_path / "syn.tsv"
    p.write_text("bridge\tviaduct\n", encoding="utf-8")
    assert RulesMutator(synonyms=p, synonym_sets=["lexicon"]).mutate("The bridge opened.", "synonym", 3) == \
        ["The viaduct opened."]


# ------------------------------------------------------------------------------------------------ fuzzing

_TEXT = st.text(st.characters(codec="utf-8"), max_size=120) | st.lists(
    st.sampled_from(["The", "bridge", "opened", "in", "1932", "12%", "1,200", "not", "never", "is", "was", "May",
                     "March", "Monday", "three", "some", "all", "may", "an", "a", "increase", ",", ".", "didn't",
                     "In", "bought", "company", "0", "007", "1990s", "$5", "5 percent", "-", "free"]),
    max_size=20).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, kind=st.sampled_from(["synonym", "antonym"]), n=st.integers(0, 6), seed=st.integers(0, 3))
def test_fuzz_the_mutator(text, kind, n, seed):
    out = RulesMutator(seed=seed).mutate(text, kind, n)
    assert len(out) <= n
    assert all(isinstance(v, str) and v != text for v in out)
    assert len({" ".join(v.split()).lower() for v in out}) == len(out)
    assert out == RulesMutator(seed=seed).mutate(text, kind, n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=_TEXT, context=_TEXT | st.lists(_TEXT, max_size=3), output=_TEXT)
def test_fuzz_verify(query, context, output):
    r = MetaRAG(judge=OverlapJudge(), n=2).verify(query=query, context=context, output=output)
    if r.error is None:
        assert 0.0 <= r.score <= 1.0 and r.tier in ("accept", "revise", "reject")
        assert r.flagged == (r.score >= r.tau)
        for f in r.factoids:
            assert output[f.start:f.end] == f.text and 0.0 <= f.score <= 1.0
    else:
        assert r.score is None


# ------------------------------------------------------------------------------------------------ ablation script


def _ablation():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "metarag_ablation.py"
    spec = importlib.util.spec_from_file_location("metarag_ablation", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_ablation_script_runs_on_the_sample(tmp_path, capsys):
    from evqual.data import sample_path

    mod = _ablation()
    out_json, out_png = tmp_path / "a.json", tmp_path / "a.png"
    rc = mod.main(["--data", str(sample_path()), "--judge", "lexical", "--limit", "6", "--n", "2",
                   "--antonym-sets", "all", "values", "--synonym-sets", "all", "--json", str(out_json),
                   "--plot", str(out_png)])
    assert rc == 0
    report = json.loads(out_json.read_text())
    assert report["answers"] == 6 and [c["name"] for c in report["configs"]] == ["N2/ant:all/syn:all/mean",
                                                                               "N2/ant:values/syn:all/mean"]
    for c in report["configs"]:
        assert 0 <= c["f1"] <= 1 and c["variants_per_answer"] > 0 and c["errors"] == 0
    assert report["pareto"]["variants_per_answer"] and out_png.stat().st_size > 0
    assert mod.main(["--judge", "no_such_module:Judge"]) == 2
    assert "cannot build the judge" in capsys.readouterr().err


# ------------------------------------------------------------------------------ issue 24: dates, W003

@pytest.mark.parametrize("text", ["The ceasefire began on September 30, 2021.", "It closed on 30 Sept. 2019.",
                                  "Payments are due by February 28 each year.", "The 31 of December party."])
def test_number_mutations_never_make_an_impossible_date(text):
    import re

    from evqual.verify import RulesMutator

    days = {"september": 30, "sept": 30, "february": 29, "december": 31}
    for v in RulesMutator().mutate(text, "antonym", 10):
        for month, day in re.findall(r"\b(September|Sept|February|December)\.? (\d{1,2})\b", v):
            assert 1 <= int(day) <= days[month.lower()], v
        for day, month in re.findall(r"\b(\d{1,2}) (?:of )?(Sept|December)\b", v):
            assert 1 <= int(day) <= days[month.lower()], v
    assert "September 45" not in " ".join(RulesMutator().mutate("It began on September 30, 2021.", "antonym", 10))


@settings(max_examples=60, deadline=None)
@given(month=st.sampled_from(["January", "February", "April", "June", "September", "November", "December"]),
       day=st.integers(1, 28))
def test_a_day_of_month_moves_within_its_month(month, day):
    from evqual.verify import RulesMutator

    limit = {"February": 29, "April": 30, "June": 30, "September": 30, "November": 30}.get(month, 31)
    for v in RulesMutator().mutate(f"The museum reopened on {month} {day}, 2020.", "antonym", 10):
        m = re.search(rf"{month} (\d+),", v)
        if m:
            assert 1 <= int(m.group(1)) <= limit, v


def test_fewer_variants_than_asked_is_a_w003_warning_in_the_result_and_the_verify_line(tmp_path):
    import io
    import json

    from evqual.verify import MetaRAG, RulesJudge, verify_file

    class Few:
        name = "few"

        def mutate(self, factoid, kind, n):
            return [factoid.replace(".", " indeed.")] if kind == "synonym" else []

    v = MetaRAG(judge=RulesJudge(), mutator=Few(), n=5)
    r = v.verify(context=["Paris is the capital of France."], output="Paris is the capital of France.")
    (w,) = r.warnings
    assert w["code"] == "W003" and w["details"] == {"asked": 10, "made": 1, "missing": 9, "factoids_short": 1}
    assert r.factoids[0].missing == 9
    full = MetaRAG(judge=RulesJudge(), mutator=type("All", (), {"name": "all", "mutate": lambda self, f, k, n: [
        f"{f} ({k} {i})" for i in range(n)]})(), n=2)
    assert full.verify(context=["Paris is the capital of France."], output="Paris is the capital of France."
                       ).warnings == []
    src = io.BytesIO(json.dumps({"query": "q", "context": ["Paris is the capital of France."],
                                 "output": "Paris is the capital of France."}).encode() + b"\n")
    src.name = "<mem>"
    out = io.StringIO()
    verify_file(src, out, v)
    line = json.loads(out.getvalue())
    assert [x["code"] for x in line["warnings"]] == ["W003"]


def test_a_clear_wrong_date_is_flagged_above_the_boundary():
    """issue 24: "opened on May 27, 1932" against "May 27, 1937" scored H = 0.5 = tau: the rules judge answered
    NO to every antonym, its true negations included.  Now the negations are YES (penalty 1)."""
    from evqual.verify import make_verifier

    ctx = "The Golden Gate Bridge opened to traffic on May 27, 1937, after four years of construction."
    m = make_verifier("metarag")
    wrong = m.verify(context=ctx, output="The Golden Gate Bridge opened on May 27, 1932.")
    right = m.verify(context=ctx, output="The Golden Gate Bridge opened on May 27, 1937.")
    assert wrong.score > wrong.tau and wrong.flagged
    negations = [v for v in wrong.factoids[0].variants if v.kind == "antonym" and re.search(r"\bnot\b|never", v.text)]
    assert negations and all(v.answer == "YES" for v in negations)
    assert right.score < right.tau and not right.flagged
