"""Hardening, third round (issue 39), part 2: wrong results from the framework components.

Each case failed before the fix: a string context read as one passage per character, ``None`` scored as
the text "None", a dict context scored against its keys, and the README's guard passing an escalated,
wrong answer on unchecked.
"""

from __future__ import annotations

import pytest

from evqual.errors import EvqualDataError

CTX = "The bridge opened in 1932."
WRONG = "The bridge opened in 1935."


# ------------------------------------------------------------------ LlamaIndex

def _evaluator():
    pytest.importorskip("llama_index.core")
    from evqual.integrations import EvqualEvaluator

    return EvqualEvaluator()


def test_llamaindex_string_context_is_one_passage():
    ev = _evaluator()
    as_string = ev.evaluate(query="q", response=WRONG, contexts=CTX)
    as_list = ev.evaluate(query="q", response=WRONG, contexts=[CTX])
    assert as_string.passing is False  # before: passing=True, score 0.83 (one passage per character)
    assert as_string.score == pytest.approx(as_list.score)
    assert ev.score("q", WRONG, CTX) == ev.score("q", WRONG, [CTX])


@pytest.mark.parametrize("response, contexts, field", [
    (None, [CTX], "response"),
    (12, [CTX], "response"),
    (WRONG, [None], "contexts[0]"),
    (WRONG, [CTX, 3.5], "contexts[1]"),
    (WRONG, None, "contexts"),
])
def test_llamaindex_score_refuses_what_is_not_text(response, contexts, field):
    ev = _evaluator()
    with pytest.raises(EvqualDataError) as info:
        ev.score("q", response, contexts)
    (issue,) = info.value.issues
    assert issue.code in ("E102", "E103") and issue.field == field
    assert "None" not in str(info.value).split(":")[-1] or issue.code == "E102"


def test_llamaindex_evaluate_marks_a_non_text_passage_invalid():
    r = _evaluator().evaluate(query="q", response=WRONG, contexts=[CTX, None])
    assert r.invalid_result and "E102" in r.invalid_reason


# ------------------------------------------------------------------ LangChain

def _lc():
    pytest.importorskip("langchain_core")
    from evqual.integrations import EvqualRunnable, evqual_guard

    return EvqualRunnable, evqual_guard


@pytest.mark.parametrize("value, field, code", [
    ({"question": "q", "context": [CTX], "answer": None}, "answer", "E102"),
    ({"question": "q", "context": [None], "answer": WRONG}, "context[0]", "E102"),
    ({"question": "q", "context": [CTX, 7], "answer": WRONG}, "context[1]", "E103"),
    ({"question": "q", "context": 7, "answer": WRONG}, "context", "E103"),
    ({"question": 3, "context": [CTX], "answer": WRONG}, "question", "E103"),
])
def test_runnable_refuses_what_is_not_text(value, field, code):
    EvqualRunnable, _ = _lc()
    with pytest.raises(EvqualDataError) as info:
        EvqualRunnable().invoke(value)
    (issue,) = info.value.issues
    assert (issue.code, issue.field, issue.line) == (code, field, 1)


def test_runnable_reads_a_dict_context_as_a_record_not_its_keys():
    """Before: list(dict) gave the keys: the answer was scored against the word 'opened'."""
    EvqualRunnable, _ = _lc()
    from evqual.scoring import Scorer

    record = {"opened": 1932, "name": "the bridge"}
    got = EvqualRunnable().invoke({"question": "q", "context": record, "answer": WRONG})["evqual"]
    direct = Scorer.load().score_batch([{"query": "q", "context": record, "output": WRONG}])[0].to_dict()
    assert got["risk"] == pytest.approx(direct["risk"]) and got["context"] == direct["context"]
    assert "1932" in got["context"]


def test_runnable_batch_names_every_bad_input_or_returns_its_error():
    EvqualRunnable, _ = _lc()
    good = {"question": "q", "context": [CTX], "answer": CTX}
    bad = {"question": "q", "context": [CTX], "answer": None}
    with pytest.raises(EvqualDataError) as info:
        EvqualRunnable().batch([good, bad, bad])
    assert [i.line for i in info.value.issues] == [2, 3]
    out = EvqualRunnable().batch([good, bad, good], return_exceptions=True)
    assert isinstance(out[1], EvqualDataError)
    assert [out[0]["evqual"]["id"], out[2]["evqual"]["id"]] == ["0", "2"]  # positions kept


def test_guard_without_verify_never_passes_an_escalated_answer():
    """The README's example: before, decision escalate with no verify= returned the wrong answer as it was."""
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from evqual.integrations import REFUSAL, EvqualRunnable, evqual_guard

    docs = [Document(page_content="Joseph Strauss designed the Golden Gate Bridge, which opened in 1937.")]
    rag = RunnableLambda(lambda q: {"question": q, "context": docs, "answer": "The bridge opened in 1952."})
    assert (rag | EvqualRunnable()).invoke("When did it open?")["evqual"]["decision"] == "escalate"
    assert (rag | evqual_guard()).invoke("When did it open?") == REFUSAL
    fallback = (rag | evqual_guard(fallback=lambda x: "checking again")).invoke("When did it open?")
    assert fallback == "checking again"
    verified = (rag | evqual_guard(verify=lambda x: "verified: " + x["answer"])).invoke("When did it open?")
    assert verified == "verified: The bridge opened in 1952."
