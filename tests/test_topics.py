"""The topic tagger: weak and exclude terms, the reported false tags, the labelled dev set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evqual.scoring
from evqual.scoring import BUILTIN_TOPICS, Topic, TopicTagger, load_policy

DATA = Path(__file__).parent / "data" / "topics"
EXAMPLE = Path(evqual.scoring.__file__).with_name("policy_example.toml")
TAGGER = TopicTagger()

# Per-topic F1 of the built-in tagger on the whole dev set, measured when the rules were written
# (scripts/topic_eval.py: healthcare 0.886, migration 0.954, labour 0.919) minus 0.05.
F1_FLOOR = {"healthcare": 0.836, "migration": 0.904, "labour": 0.869}


# --- the reported cases (issue 10) ----------------------------------------------


@pytest.mark.parametrize(
    ("query", "context"),
    [
        ("Is this restaurant good for people with food allergies?",
         "Reviewers praise the allergy-friendly menu: every dish lists its allergens. One diner with a "
         "nut allergy had an allergic reaction once, but the staff were careful after that."),
        ("Write an objective overview of the following local business.",
         "name: Rosa's Cafe categories: Restaurants, Breakfast & Brunch. Near the hospital and the clinic. "
         "review text: 'I have a gluten allergy and the menu marks every allergen.'"),
        ("What do customers say about the bakery?", "Healthy options, allergen labels, friendly staff."),
    ],
)
def test_restaurant_reviews_mentioning_allergies_are_not_healthcare(query, context):
    assert "healthcare" not in TAGGER.tag(query, context)


@pytest.mark.parametrize(
    ("query", "context"),
    [
        ("Am I eligible for the loyalty discount?",
         "Members with three purchases a year are eligible for 10% off; eligibility is checked at checkout."),
        ("Who is eligible to play in the under-21 league?", "Players born after 2004 are eligible."),
        ("How does overtime work in the NBA?", "A tied game goes to a five-minute overtime, then double overtime."),
        ("What are the modes of dismissal in cricket?", "Caught is the most common dismissal; a dismissal ..."),
    ],
)
def test_eligible_and_other_ambiguous_words_alone_are_not_labour(query, context):
    assert "labour" not in TAGGER.tag(query, context)


@pytest.mark.parametrize(
    ("query", "context"),
    [
        ("Does Visa charge foreign transaction fees?", "Visa charges a cross-border fee; many Visa cards ..."),
        ("How do I migrate my database?", "Plan the migration; test the migration on a copy."),
        ("What are Border Collies like?", "Border Collies are herding dogs."),
        ("What size is a passport photo?", "Passport photos are 2 x 2 inches."),
    ],
)
def test_visa_card_database_migration_and_passport_photos_are_not_migration(query, context):
    assert "migration" not in TAGGER.tag(query, context)


@pytest.mark.parametrize(
    ("query", "context", "expected"),
    [
        ("Can I take ibuprofen during pregnancy?", "", ("healthcare",)),
        ("What does a peanut allergy reaction look like?",
         "Symptoms range from hives to anaphylaxis, which needs an epinephrine injection.", ("healthcare",)),
        ("what are the stages of labour", "The cervix dilates, the baby is born, then the placenta.",
         ("healthcare",)),
        ("How do I apply for asylum?", "", ("migration",)),
        ("Do I need a visa to study in Japan?", "", ("migration",)),
        ("What is the minimum wage?", "", ("labour",)),
        ("Am I eligible for sick pay as a part-time worker?", "", ("labour",)),
        ("Am I eligible for a work permit as an asylum seeker?", "", ("migration", "labour")),
        ("What is the H-1B visa cap?", "", ("migration", "labour")),
        ("Summarize the article.", "Dock workers ended a three-day strike; the union won a raise.", ("labour",)),
        ("Summarize the article.", "Workers at the plant went on strike; the union said wages fell.", ("labour",)),
    ],
)
def test_real_topics_still_tagged(query, context, expected):
    assert TAGGER.tag(query, context) == expected


# --- weak and exclude terms ---------------------------------------------------


def tax_tagger(**kwargs):
    topic = Topic("tax", ("tax return*", "VAT"), weak=("refund*", "return"), exclude=("tax-free shop*",))
    return TopicTagger({"tax": topic}, **kwargs)


def test_weak_terms_count_only_next_to_a_term_in_the_same_text():
    tagger = tax_tagger()
    assert tagger.counts("refund refund refunds") == {"tax": 0}
    assert tagger.counts("VAT refund, and a refund") == {"tax": 3}
    assert tagger.tag("When is my refund due?", "VAT is charged at 20%.") == ()  # query and context apart
    assert tagger.tag("When is my refund due?", "A refund follows your VAT return.") == ("tax",)


def test_phrase_with_a_weak_sub_term_counts_once():
    assert tax_tagger().counts("my tax return") == {"tax": 1}  # not also the weak "return"
    assert tax_tagger().counts("my tax return and its return") == {"tax": 2}


def test_exclude_terms_cancel_hits_down_to_zero_and_silence_weak_terms():
    tagger = tax_tagger()
    assert tagger.counts("VAT and VAT at the tax-free shop") == {"tax": 1}
    assert tagger.counts("VAT, refund, refund") == {"tax": 3}
    assert tagger.counts("VAT, refund, refund at the tax-free shop") == {"tax": 0}  # weak terms silenced
    assert tagger.counts("VAT at tax-free shops, tax-free shopping, tax-free shop") == {"tax": 0}
    assert tagger.counts("tax-free shop") == {"tax": 0}


def test_lower_casing_that_changes_length_still_counts():
    # "İ".lower() has two characters: offsets of the lower-cased text no longer match the text.
    text = "İİ asylum seekers and refugees"
    assert len(text.lower()) != len(text)
    assert TAGGER.counts(text)["migration"] == 2
    assert TAGGER.tag("İ What rights do refugees have?") == ("migration",)


def test_terms_with_inner_punctuation_match():
    assert TAGGER.tag("What is the H-1B cap?") == ("migration", "labour")
    tagger = TopicTagger({"t": Topic("t", ("non-compete*", "visa-free"))})
    assert tagger.tag("Is my non-competes clause valid?") == ("t",)
    assert tagger.tag("visa-free travel") == ("t",)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weak": "refund"}, "weak of topic 'x' must be a sequence of str; got 'refund'"),
        ({"exclude": 3}, "exclude of topic 'x' must be a sequence of str; got 3"),
        ({"weak": ("ok", "")}, "weak of topic 'x' must be non-empty str; got ''"),
        ({"exclude": (None,)}, "exclude of topic 'x' must be non-empty str; got None"),
        ({"weak": ("VAT",)}, "term 'VAT' of topic 'x' is in both terms and weak"),
        ({"weak": ("a b",), "exclude": ("A  B",)}, "term 'A  B' of topic 'x' is in both weak and exclude"),
    ],
)
def test_topic_rejects_bad_weak_and_exclude(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Topic("x", ("VAT",), **kwargs)


def test_weak_and_exclude_default_empty_and_lists_become_tuples():
    t = Topic("x", ["a"], weak=["b"], exclude=["c"])
    assert (t.terms, t.weak, t.exclude) == (("a",), ("b",), ("c",))
    assert Topic("x", ("a",)) == Topic("x", ("a",), True, (), ())


def test_to_dict_describes_weak_and_exclude_only_when_present():
    plain = TopicTagger({"t": Topic("t", ("a",))}).to_dict()
    assert plain["topics"]["t"].keys() == {"sensitive", "terms_sha256"}  # as before weak/exclude
    d = tax_tagger().to_dict()
    assert d["topics"]["tax"].keys() == {"sensitive", "terms_sha256", "weak_sha256", "exclude_sha256"}
    full = tax_tagger().to_dict(terms=True)["topics"]["tax"]
    assert (full["weak"], full["exclude"]) == (["refund*", "return"], ["tax-free shop*"])
    assert TopicTagger().to_dict()["topics"]["labour"]["weak_sha256"] != d["topics"]["tax"]["weak_sha256"]


# --- policy files -------------------------------------------------------------


def write(tmp_path, text):
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_policy_file_weak_and_exclude(tmp_path):
    path = write(tmp_path, """
[topics.tax]
terms = ["tax return*"]
weak = ["refund*"]
exclude = ["tax-free shop*"]
sensitive = false
""")
    tagger = load_policy(path).tagger
    assert tagger.topics_["tax"] == Topic("tax", ("tax return*",), False, ("refund*",), ("tax-free shop*",))
    assert tagger.tag("Where is my refund?") == ()
    assert tagger.tag("Where is my tax return refund?") == ("tax",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[topics.tax]\nterms = ['vat']\nweak = 'refund'\n",
         "'topics.tax': weak of topic 'tax' must be a sequence of str; got 'refund'"),
        ("[topics.tax]\nterms = ['vat']\nexclude = [1]\n",
         "'topics.tax': exclude of topic 'tax' must be non-empty str; got 1"),
        ("[topics.tax]\nterms = ['vat']\nweak = ['VAT']\n",
         "'topics.tax': term 'VAT' of topic 'tax' is in both terms and weak"),
        ("[topics.tax]\nterms = ['vat']\nexcludes = ['x']\n", "unknown key 'topics.tax.excludes'"),
    ],
)
def test_policy_file_bad_weak_or_exclude_names_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        load_policy(path)
    assert str(info.value).startswith(f"{path}: ")


def test_example_policy_documents_weak_and_exclude():
    text = EXAMPLE.read_text(encoding="utf-8")
    assert re.search(r"^weak = ", text, re.M) and re.search(r"^exclude = ", text, re.M)
    policy = load_policy(EXAMPLE)
    assert policy.tag("What rent increase is allowed?") == ("housing",)
    assert policy.tag("How much is the rent on a car rental?") == ()  # weak "rent" alone


# --- the labelled dev set -----------------------------------------------------


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_dev_set_is_well_formed():
    rows = read_jsonl(DATA / "topics_dev.jsonl")
    assert len(rows) >= 150
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r.keys() == {"id", "query", "context", "topics", "note"}, r["id"]
        assert set(r["topics"]) <= set(BUILTIN_TOPICS), r["id"]
    for topic in BUILTIN_TOPICS:
        assert sum(topic in r["topics"] for r in rows) >= 25, topic
    assert sum(not r["topics"] for r in rows) >= 50


def test_ragtruth_sample_stores_ids_and_labels_only():
    rows = read_jsonl(DATA / "topics_ragtruth_sample.jsonl")
    assert len(rows) >= 60
    for r in rows:
        assert r.keys() == {"id", "source_id", "stratum", "topics", "note"}, r
        assert set(r["topics"]) <= set(BUILTIN_TOPICS)
        assert len(r["note"]) < 80  # a label note, not copied text


def f1(rows, tagger, topic):
    tp = fp = fn = 0
    for r in rows:
        gold, pred = topic in r["topics"], topic in tagger.tag(r["query"], r["context"])
        tp, fp, fn = tp + (gold and pred), fp + (pred and not gold), fn + (gold and not pred)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


@pytest.mark.parametrize("topic", list(BUILTIN_TOPICS))
def test_dev_set_f1_stays_above_the_measured_floor(topic):
    rows = read_jsonl(DATA / "topics_dev.jsonl")
    assert f1(rows, TAGGER, topic) >= F1_FLOOR[topic]


# --- properties ----------------------------------------------------------------

WORDS = ["asylum", "visa", "Visa", "eligible", "minimum wage", "restaurant", "allergy", "allergic reaction",
         "doctor", "symptoms", "overtime", "employer", "H-1B", "tax", "the", "and", "İ", "ß", "-", "'", "\n"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_tag_never_raises_and_is_deterministic(query, context):
    tags = TAGGER.tag(query, context)
    assert tags == TopicTagger().tag(query, context)
    assert set(tags) <= set(BUILTIN_TOPICS)
    assert TAGGER.tag(query, [context, context]) == TAGGER.tag(query, context + "\n\n" + context)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join), st.booleans())
def test_tag_independent_of_case(text, upper):
    ascii_text = text.replace("İ", "I").replace("ß", "ss")
    changed = ascii_text.upper() if upper else ascii_text.lower()
    assert TAGGER.tag(changed, changed) == TAGGER.tag(ascii_text, ascii_text)
    assert TAGGER.counts(changed) == TAGGER.counts(ascii_text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join))
def test_more_exclude_words_never_add_hits(text):
    before = TAGGER.counts(text)["healthcare"]
    assert TAGGER.counts(text + " restaurant menu")["healthcare"] <= before


def _reference_counts(tagger, text):
    """Hits by one plain regex over the whole text per lexicon (what the fast path must equal)."""
    from evqual.scoring._topics import _term_pattern

    def full(terms, weak=()):
        tagged = sorted([(t, False) for t in terms] + [(t, True) for t in weak],
                        key=lambda tw: len(tw[0].rstrip("*")), reverse=True)
        pattern = re.compile("|".join("(" + _term_pattern(t) + ")" for t, _ in tagged), re.IGNORECASE)
        strong = weak_hits = 0
        for m in pattern.finditer(text):
            if tagged[m.lastindex - 1][1]:
                weak_hits += 1
            else:
                strong += 1
        return strong, weak_hits

    out = {}
    for name, topic in tagger.topics_.items():
        strong = full(topic.terms)[0]
        excluded = full(topic.exclude)[0] if strong and topic.exclude else 0
        hits = strong
        if strong and not excluded and topic.weak:
            hits = sum(full(topic.terms, topic.weak))
        out[name] = max(0, hits - excluded)
    return out


LEXICON_WORDS = sorted({t.rstrip("*") + suffix for topic in BUILTIN_TOPICS.values()
                        for t in topic.terms + topic.weak + topic.exclude
                        for suffix in (("", "s", "ed") if t.endswith("*") else ("",))})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LEXICON_WORDS), st.sampled_from(WORDS), st.text(max_size=3)),
                max_size=30).map(" ".join))
def test_fast_counts_equal_a_plain_regex_over_the_text(text):
    assert TAGGER.counts(text) == _reference_counts(TAGGER, text)


# ---------------------------------------------------------------------------------------------- context cache
def test_tagging_through_the_context_cache_gives_what_a_fresh_tagger_gives():
    """tag() keeps each context's counts; any order of queries and contexts tags as a fresh tagger would."""
    from evqual.scoring._topics import CONTEXT_COUNTS_CACHED

    contexts = ["Refugees and asylum seekers; refugee status.", "The hospital treated patients with insulin.",
                "Workers joined the union after wage cuts.", "", "The bridge opened in 1937."] + \
               [f"Context {i} about asylum and the hospital." for i in range(CONTEXT_COUNTS_CACHED + 3)]
    warm = TopicTagger(min_context_hits=1)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["", "Is it a refugee?", "Which vaccine?"]),
                              st.sampled_from(contexts)), max_size=25))
    def check(pairs):
        for q, c in pairs:
            assert warm.tag(q, c) == TopicTagger(min_context_hits=1).tag(q, c)
            assert warm.tag(q, [c, c]) == TopicTagger(min_context_hits=1).tag(q, [c, c])

    check()
    assert len(warm._context_cache[1]) <= CONTEXT_COUNTS_CACHED


def test_the_context_cache_is_not_pickled_or_shared_by_reference():
    import copy
    import pickle

    tagger = TopicTagger()
    assert tagger.tag("", "Refugees and asylum seekers; refugee status.") == ("migration",)
    assert "_context_cache" in vars(tagger)
    for other in (pickle.loads(pickle.dumps(tagger)), copy.deepcopy(tagger)):
        assert "_context_cache" not in vars(other)
        assert other.tag("", "Refugees and asylum seekers; refugee status.") == ("migration",)
    got = tagger._context_counts("Refugees and asylum seekers; refugee status.")
    got["migration"] = 0
    assert tagger._context_counts("Refugees and asylum seekers; refugee status.")["migration"] == 3
