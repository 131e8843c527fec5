"""Evidence retrieval of the verification stage (issue 11, section 2): BM25, fusion, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.verify import (
    SparseRetriever,
    minmax_fusion,
    ndcg_at_k,
    rank_order,
    recall_at_k,
    reciprocal_rank,
    retrieval_metrics,
    rrf_fusion,
)

PASSAGES = ["The Golden Gate Bridge opened in 1937 after four years of work.",
            "Paris is the capital and largest city of France.",
            "Suspension bridges need steel cables and deep anchorages.",
            "The museum opens at 9 am every day except Monday."]


def test_bm25_matches_rank_bm25_with_the_seed_parameters():
    from rank_bm25 import BM25Okapi

    from evqual.text import content_tokens

    r = SparseRetriever(stem=False).fit(PASSAGES)
    ref = BM25Okapi([content_tokens(p) for p in PASSAGES], k1=1.5, b=0.75)
    q = "When did the bridge open?"
    np.testing.assert_allclose(r.scores(q), ref.get_scores(content_tokens(q)))


def test_bm25_ranks_the_passage_holding_the_answer_first_and_stems_help():
    r = SparseRetriever().fit(PASSAGES)
    assert r.search("When did the Golden Gate Bridge open?", k=1).tolist() == [0]
    assert r.search("What does a suspension bridge need?", k=1).tolist() == [2]
    few = ["Suspension bridges need steel cables.", "Paris is in France.", "The museum opens at 9 am."]
    assert SparseRetriever().fit(few).scores("bridge")[0] > 0
    assert SparseRetriever(stem=False).fit(few).scores("bridge")[0] == 0


def test_bm25_on_nothing_to_match():
    r = SparseRetriever().fit(["", "   "])
    assert r.scores("anything").tolist() == [0.0, 0.0] and r.search("x").tolist() == [0, 1]
    assert SparseRetriever().fit(PASSAGES).scores("the of and").tolist() == [0.0] * 4


@pytest.mark.parametrize(("kwargs", "match"), [({"k1": -1}, "k1 must be"), ({"b": 1.5}, "b must be"),
                                               ({"stem": "yes"}, "stem must be a bool")])
def test_bm25_parameter_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SparseRetriever(**kwargs).fit(PASSAGES)


def test_bm25_input_errors():
    with pytest.raises(TypeError, match=r"passages\[1\] must be a string"):
        SparseRetriever().fit(["a", 3])
    with pytest.raises(ValueError, match="not fitted"):
        SparseRetriever().scores("q")
    with pytest.raises(TypeError, match="query must be a string"):
        SparseRetriever().fit(PASSAGES).scores(None)


def test_fusion_follows_seed_003_and_rrf():
    fused = minmax_fusion([0.9, 0.1, 0.5], [0.0, 10.0, 5.0], alpha=0.6)
    np.testing.assert_allclose(fused, [0.6, 0.4, 0.5])
    assert minmax_fusion([1, 1], [2, 2]).tolist() == [0.0, 0.0]
    rrf = rrf_fusion([2, 0], [0, 1], k=60, n=4)
    np.testing.assert_allclose(rrf, [1 / 62 + 1 / 61, 1 / 62, 1 / 61, 0.0])
    with pytest.raises(ValueError, match="alpha"):
        minmax_fusion([1], [1], alpha=1.5)
    with pytest.raises(ValueError, match="one length"):
        minmax_fusion([1, 2], [1])
    with pytest.raises(ValueError, match="twice"):
        rrf_fusion([1, 1])
    with pytest.raises(ValueError, match="n=1"):
        rrf_fusion([0, 3], n=1)


def test_metrics_by_hand():
    assert recall_at_k([4, 2, 7], {2, 9}, 1) == 0.0 and recall_at_k([4, 2, 7], {2, 9}, 2) == 0.5
    assert reciprocal_rank([4, 2, 7], {7}) == pytest.approx(1 / 3) and reciprocal_rank([4], {1}) == 0.0
    assert ndcg_at_k([4, 2, 7], {2, 7}, 10) == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    m = retrieval_metrics([[1, 0], [0, 1], [0]], [{0}, {0}, set()], ks=(1, 5))
    assert (m["n_queries"], m["n_without_relevant"], m["recall@1"], m["recall@5"], m["mrr"]) == (2, 1, 0.5, 1.0, 0.75)
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k([1], {1}, 0)
    with pytest.raises(ValueError, match="3 rankings for 2"):
        retrieval_metrics([[0], [0], [0]], [{0}, {0}])


rankings = st.lists(st.integers(0, 30), unique=True, max_size=25)
relevant = st.sets(st.integers(0, 30), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(rankings, relevant, st.integers(1, 30))
def test_metric_ranges_and_monotonicity(ranking, rel, k):
    r, n, rr = recall_at_k(ranking, rel, k), ndcg_at_k(ranking, rel, k), reciprocal_rank(ranking, rel)
    assert 0.0 <= r <= 1.0 and 0.0 <= n <= 1.0 + 1e-12 and 0.0 <= rr <= 1.0
    assert recall_at_k(ranking, rel, k + 1) >= r
    # a perfect ranking scores 1
    perfect = sorted(rel) + [p for p in ranking if p not in rel]
    assert ndcg_at_k(perfect, rel, k) == pytest.approx(1.0) and reciprocal_rank(perfect, rel) == 1.0


scores = st.lists(st.integers(-10**6, 10**6).map(lambda v: v / 64), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(scores, st.floats(0, 1))
def test_fusion_properties(dense, alpha):
    sparse = list(reversed(dense))
    fused = minmax_fusion(dense, sparse, alpha=alpha)
    assert ((fused >= -1e-12) & (fused <= 1 + 1e-12)).all()
    # invariant to a positive affine change of either ranker's scores
    np.testing.assert_allclose(minmax_fusion(np.asarray(dense) * 3 + 7, sparse, alpha=alpha), fused, atol=1e-6)
    order = rank_order(dense)
    assert sorted(order.tolist()) == list(range(len(dense)))
    assert all(dense[a] >= dense[b] for a, b in zip(order, order[1:]))
    rrf = rrf_fusion(order)
    assert rank_order(rrf).tolist() == order.tolist()  # one ranking fused is that ranking


def test_the_retrieval_benchmark_builds_relevance_from_each_source(tmp_path):
    import json
    import runpy
    from pathlib import Path

    rows = [{"source_id": "1", "task_type": "QA", "source_info": {"question": "When did the bridge open?",
             "passages": "passage 1:The bridge opened in 1932.\n\npassage 2:It is painted orange."}},
            {"source_id": "2", "task_type": "QA", "source_info": {"question": "Where is Paris?",
             "passages": "passage 1:Paris is in France.\n\npassage 2:It is painted orange."}},
            {"source_id": "3", "task_type": "Summary", "source_info": "An article."}]
    (tmp_path / "source_info.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    script = runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "retrieval_bench.py"))
    passages, queries, relevant = script["build"](str(tmp_path))
    assert queries == ["When did the bridge open?", "Where is Paris?"]
    assert len(passages) == 3  # the shared passage is kept once, relevant to both sources
    shared = passages.index("It is painted orange.")
    assert shared in relevant[0] and shared in relevant[1] and len(relevant[0] | relevant[1]) == 3
    assert script["main"](["--data", str(tmp_path), "--json", str(tmp_path / "m.json")]) == 0
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["query_sets"] == {"questions": 2} and m["metrics"]["questions"]["sparse"]["mrr"] == 1.0
