"""evqual in LlamaIndex: its MockLLM and MockEmbedding over a real in-memory VectorStoreIndex (no mocks of
LlamaIndex itself), the evaluator alone and in BatchEvalRunner, and the response hook."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.base.response.schema import Response  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.evaluation import BatchEvalRunner  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.schema import NodeWithScore, TextNode  # noqa: E402

from evqual.integrations import EvqualEvaluator, attach_evqual, feedback_of  # noqa: E402
from evqual.scoring import Policy, Scorer  # noqa: E402

TEXTS = ["Joseph Strauss designed the Golden Gate Bridge, which opened in 1937.",
         "The bridge is painted International Orange."]
QUESTION = "When did the Golden Gate Bridge open?"


@pytest.fixture(scope="module")
def scorer():
    return Scorer.load(policy=Policy())


@pytest.fixture(scope="module")
def engine():
    index = VectorStoreIndex(nodes=[TextNode(text=t) for t in TEXTS], embed_model=MockEmbedding(embed_dim=8))
    return index.as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2)


def _response(text):
    return Response(response=text, source_nodes=[NodeWithScore(node=TextNode(text=t), score=1.0) for t in TEXTS])


def test_evaluator_agrees_with_the_python_api(scorer):
    ev = EvqualEvaluator(scorer)
    good = ev.evaluate(query=QUESTION, response="The Golden Gate Bridge opened in 1937.", contexts=TEXTS)
    direct = scorer.score_batch([{"query": QUESTION, "context": TEXTS,
                                  "output": "The Golden Gate Bridge opened in 1937."}])[0]
    assert good.passing is (not direct.flagged) and good.score == pytest.approx(1.0 - direct.risk)
    assert good.feedback == feedback_of(direct.to_dict())


def test_a_wrong_answer_fails_with_feedback_naming_the_evidence(scorer):
    ev = EvqualEvaluator(scorer, policy=Policy(escalate_band=None))
    bad = ev.evaluate(query=QUESTION, response="The Golden Gate Bridge opened in 1952.", contexts=TEXTS)
    assert bad.passing is False and bad.score < 0.8
    assert "DATE_CONFLICT" in bad.feedback and "1937" in bad.feedback


def test_invalid_inputs_are_invalid_results(scorer):
    ev = EvqualEvaluator(scorer)
    assert ev.evaluate(query=QUESTION, response="x", contexts=[]).invalid_result
    assert ev.evaluate(query=QUESTION, response=None, contexts=TEXTS).invalid_result


def test_in_batch_eval_runner_with_a_real_query_engine(scorer, engine):
    responses = [engine.query(QUESTION) for _ in range(2)]
    assert all(r.source_nodes for r in responses)
    runner = BatchEvalRunner({"evqual": EvqualEvaluator(scorer)}, workers=2)
    results = runner.evaluate_responses(queries=[QUESTION, QUESTION], responses=responses)
    got = results["evqual"]
    assert len(got) == 2 and all(0.0 <= r.score <= 1.0 and r.feedback.startswith("evqual:") for r in got)
    direct = EvqualEvaluator(scorer).evaluate_response(query=QUESTION, response=responses[0])
    assert got[0].score == direct.score and got[0].passing == direct.passing


def test_response_hook_attaches_the_result(scorer, engine):
    r = attach_evqual(engine.query(QUESTION), QUESTION, scorer=scorer)
    res = r.metadata["evqual"]
    assert set(res) >= {"risk", "flagged", "decision", "sentences"} and res["query"] == QUESTION
    made = attach_evqual(_response("It opened in 1952."), QUESTION, scorer=scorer, key="check")
    assert made.metadata["check"]["output"] == "It opened in 1952."
    with pytest.raises(ValueError, match="no source nodes"):
        attach_evqual(Response(response="x", source_nodes=[]), QUESTION, scorer=scorer)
