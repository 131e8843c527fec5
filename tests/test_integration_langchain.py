"""evqual in a real LangChain chain: LangChain's fake chat model and an in-memory vector store (no mocks of
LangChain itself), the scorer and the guard, callbacks, batch."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings.fake import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from evqual.integrations import REFUSAL, EvqualRunnable, evqual_guard  # noqa: E402
from evqual.scoring import Policy, Scorer  # noqa: E402

DOCS = [Document(page_content="Joseph Strauss designed the Golden Gate Bridge, which opened in 1937."),
        Document(page_content="The bridge is painted International Orange."),
        Document(page_content="The Bay Bridge opened in 1936.")]
QUESTION = "When did the Golden Gate Bridge open?"


@pytest.fixture(scope="module")
def scorer():
    return Scorer.load(policy=Policy())


def _rag_chain(answers):
    store = InMemoryVectorStore.from_documents(DOCS, DeterministicFakeEmbedding(size=32))
    retriever = store.as_retriever(search_kwargs={"k": 3})
    prompt = ChatPromptTemplate.from_messages([("system", "Answer from the context:\n{context}"),
                                               ("human", "{question}")])
    llm = FakeListChatModel(responses=answers)
    answer = (RunnableLambda(lambda x: {"context": "\n".join(d.page_content for d in x["context"]),
                                        "question": x["question"]})
              | prompt | llm | StrOutputParser())
    return RunnableParallel(context=retriever, question=RunnablePassthrough()) | RunnablePassthrough.assign(
        answer=answer)


class _Runs(BaseCallbackHandler):
    def __init__(self):
        self.started, self.ended = [], []

    def on_chain_start(self, serialized, inputs, **kwargs):
        self.started.append(kwargs.get("name") or (serialized or {}).get("name"))

    def on_chain_end(self, outputs, **kwargs):
        self.ended.append(outputs)


def test_scorer_in_a_real_chain_matches_the_python_api(scorer):
    chain = _rag_chain(["The Golden Gate Bridge opened in 1937."]) | EvqualRunnable(scorer)
    runs = _Runs()
    out = chain.invoke(QUESTION, config={"callbacks": [runs]})
    assert out["answer"] == "The Golden Gate Bridge opened in 1937."
    direct = scorer.score_batch([{"query": QUESTION, "context": [d.page_content for d in out["context"]],
                                  "output": out["answer"]}])[0].to_dict()
    assert out["evqual"] == direct
    assert "EvqualRunnable" in runs.started  # the scorer is a run of its own in the trace


def test_a_wrong_answer_is_flagged_and_the_guard_routes_it(scorer):
    strict = Policy(escalate_band=None, escalate_reasons=())
    wrong = "The Golden Gate Bridge opened in 1952, designed by Gustave Eiffel."
    scored = (_rag_chain([wrong]) | EvqualRunnable(scorer, policy=strict)).invoke(QUESTION)
    assert scored["evqual"]["flagged"] and scored["evqual"]["decision"] in ("warn", "regenerate", "abstain")
    calls = []
    guard = evqual_guard(EvqualRunnable(scorer, policy=strict),
                         fallback=lambda v: calls.append(v["evqual"]["decision"]) or "FALLBACK",
                         refusal="REFUSED")
    routed = (_rag_chain([wrong]) | guard).invoke(QUESTION)
    decision = scored["evqual"]["decision"]
    expected = {"warn": wrong, "regenerate": "FALLBACK", "abstain": "REFUSED"}[decision]
    assert routed == expected
    assert calls == (["regenerate"] if decision == "regenerate" else [])


def test_guard_passes_a_supported_answer_and_refuses_by_default(scorer):
    good = "Joseph Strauss designed the Golden Gate Bridge."
    assert (_rag_chain([good]) | evqual_guard(EvqualRunnable(scorer))).invoke(QUESTION) == good
    always_abstain = Policy(general_threshold=0.0, sensitive_threshold=0.0, regenerate_at=0.0, abstain_at=0.0,
                            escalate_band=None, escalate_reasons=())
    guard = evqual_guard(EvqualRunnable(scorer, policy=always_abstain))
    assert (_rag_chain([good]) | guard).invoke(QUESTION) == REFUSAL


def test_escalate_goes_to_the_verification_step(scorer):
    escalate_all = Policy(escalate_band=(0.0, 1.0))
    seen = []
    guard = evqual_guard(EvqualRunnable(scorer, policy=escalate_all),
                         verify=RunnableLambda(lambda v: seen.append(v["evqual"]["decision"]) or "VERIFIED"))
    assert (_rag_chain(["It opened in 1937."]) | guard).invoke(QUESTION) == "VERIFIED"
    assert seen == ["escalate"]


def test_batch_scores_in_one_call_and_equals_invoke(scorer):
    r = EvqualRunnable(scorer)
    inputs = [{"question": QUESTION, "context": DOCS, "answer": a}
              for a in ("It opened in 1937.", "It opened in 1952.", "Strauss designed it.")]
    batched = r.batch(inputs)
    assert [b["evqual"]["id"] for b in batched] == ["0", "1", "2"]  # positions, as score_batch numbers them

    def no_id(d):
        return {k: v for k, v in d.items() if k != "id"}

    assert [no_id(b["evqual"]) for b in batched] == [no_id(r.invoke(i)["evqual"]) for i in inputs]
    with_ids = r.batch([{**i, "id": f"q{n}"} for n, i in enumerate(inputs)])
    assert [b["evqual"]["id"] for b in with_ids] == ["q0", "q1", "q2"]


def test_keys_messages_and_bad_input(scorer):
    from langchain_core.messages import AIMessage

    r = EvqualRunnable(scorer, question_key="q", context_key="docs", answer_key="msg", output_key="check")
    out = r.invoke({"q": QUESTION, "docs": "The bridge opened in 1937.",
                    "msg": AIMessage(content="It opened in 1937.")})
    assert 0 <= out["check"]["risk"] <= 1
    with pytest.raises(KeyError, match="'docs'"):
        r.invoke({"q": QUESTION, "msg": "x"})
    with pytest.raises(TypeError, match="takes a dict"):
        r.invoke("just a string")
