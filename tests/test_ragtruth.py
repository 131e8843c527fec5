"""Tests on the shared RAGTruth copy (skipped when it is absent)."""

import collections
import warnings

import numpy as np
import pytest

from evqual.bench import bench_featurize
from evqual.data import load_ragtruth, sentence_targets
from evqual.features import EvidenceFeaturizer

pytestmark = pytest.mark.ragtruth


@pytest.fixture(scope="module")
def rt(ragtruth_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the shared copy must load without a single issue
        return load_ragtruth(ragtruth_path)


def test_loads_every_row_without_issue(rt):
    assert len(rt) == 6027 and rt.issues == []


def test_counts_match_the_data_readme(rt):
    """Coverage table of ../shared/data/ragtruth/README.md."""
    counts = collections.Counter((ex.split, ex.task_type) for ex in rt)
    positives = collections.Counter((ex.split, ex.task_type) for ex in rt if ex.label == 1)
    assert counts[("test", "QA")] == 783 and positives[("test", "QA")] == 160
    assert counts[("test", "Summary")] == 774 and positives[("test", "Summary")] == 198
    assert counts[("test", "Data2txt")] == 900 and positives[("test", "Data2txt")] == 579
    assert counts[("train", "QA")] == 3444 and positives[("train", "QA")] == 1460
    assert counts[("train", "Summary")] == 126 and positives[("train", "Summary")] == 43


def test_every_span_lies_in_a_sentence(rt):
    for ex in rt:
        if not ex.spans:
            continue
        targets = sentence_targets(ex)
        assert any(t["label"] for t in targets), ex.id


def test_chunks_cover_expected_structure(rt):
    qa = next(ex for ex in rt if ex.task_type == "QA")
    assert all(c.id.startswith("passage ") for c in qa.chunks)
    d2t = next(ex for ex in rt if ex.task_type == "Data2txt")
    assert any(c.id.startswith("review_info[") for c in d2t.chunks)
    summ = next(ex for ex in rt if ex.task_type == "Summary")
    assert all(c.id.startswith("sentence ") for c in summ.chunks)


def test_featurize_subset_finite_and_informative(rt):
    test = [ex for ex in rt if ex.split == "test"]
    fz = EvidenceFeaturizer().fit(test)
    X = fz.transform(test)
    assert np.isfinite(X).all()
    y = np.array([ex.label for ex in test])
    from sklearn.metrics import roc_auc_score

    support = X[:, list(fz.get_feature_names_out()).index("coverage.output_context.v1")]
    # lower coverage of the output by the context means more hallucination
    assert roc_auc_score(y, -support) > 0.7


@pytest.mark.slow
def test_benchmark_on_shared_copy(ragtruth_path):
    result = bench_featurize(ragtruth_path, repeat=1)
    assert result["responses"] == 6027 and result["seconds"] > 0


def test_shipped_default_model_meta_matches_the_shared_copy(ragtruth_path):
    import json
    from pathlib import Path

    meta = json.loads((Path(__file__).resolve().parents[1] / "models" / "default" / "meta.json").read_text())
    assert meta["method"] == "evqual" and meta["uses_metadata"] is False
    assert meta["training_data"]["rows"] == 6027


@pytest.mark.slow
def test_cv5_evqual_on_shared_copy(rt):
    from evqual.evaluation import evaluate

    result = evaluate(rt, method="evqual", protocol="cv5")
    assert result.metrics["n"] == 2457 and result.metrics["response"]["auroc"] > 0.75
