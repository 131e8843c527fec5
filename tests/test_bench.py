from evqual.bench import bench_featurize, bench_score, peak_rss_mb, tokenize_floor
from evqual.data import load_sample


def test_bench_featurize_on_sample_reports_every_key():
    result = bench_featurize(None, repeat=1)
    for key in ("responses", "seconds", "responses_per_s", "peak_rss_mb", "tokenize_floor_s"):
        assert key in result
    assert result["responses"] == 72 and result["responses_per_s"] > 0
    assert result["tokenize_floor_s"] > 0 and result["peak_rss_mb"] > 0


def test_tokenize_floor_and_rss():
    assert tokenize_floor(load_sample().examples) > 0
    assert peak_rss_mb() > 10


def test_bench_batch_jobs_reports_startup_and_rate():
    from evqual.bench import bench_batch

    result = bench_batch(None, engines=("jobs",), workers=(2,), limit=3)  # two `evqual score` runs
    assert result["answers"] == 3
    row = result["results"]["jobs"]["2"]
    assert row["exit_status"] == 0 and row["startup_s"] > 0 and row["answers_per_s"] > 0
    assert len(result["loadavg_before"]) == 3


def test_bench_trees_times_both_paths_on_every_boosted_model_and_finds_them_identical():
    from evqual.bench import bench_trees

    r = bench_trees(rows=(1, 300), budget_s=0.0)
    assert set(r["models"]) == {"response", "sentence", "claim", "span"}  # the shipped model's four
    assert r["identical"] is True and r["small_batch"] > 0
    for m in r["models"].values():
        assert m["trees"] > 0 and [row["n"] for row in m["rows"]] == [1, 300]
        assert all(row["walker_ms"] > 0 and row["sklearn_ms"] > 0 for row in m["rows"])


def test_bench_trees_reports_a_difference(monkeypatch):
    """The exactness flag is computed, not assumed: a walker off by one ulp makes it false."""
    import numpy as np

    import evqual.models as models
    from evqual.bench import bench_trees

    real = models.hgb_proba
    monkeypatch.setattr(models, "hgb_proba", lambda est, X: np.nextafter(real(est, X), 2.0))
    assert bench_trees(rows=(2,), budget_s=0.0)["identical"] is False


def test_bench_score_new_contexts_keeps_one_answer_per_context():
    from evqual.data import load_data, sample_path

    examples = load_data(sample_path()).examples
    distinct = len({e.context for e in examples})
    assert distinct < len(examples)  # the sample repeats contexts, so the option has something to drop
    res = bench_score(new_contexts=True, batch_repeat=1)
    assert res["new_contexts"] is True and res["responses"] == distinct
    assert res["ms_p50"] > 0
    assert res["gc_ms_per_response"] >= 0 and res["gc_collections"] >= 0


def test_the_collections_timer_counts_collections_and_removes_its_callback():
    import gc

    from evqual.bench import _collections_timed

    before = list(gc.callbacks)
    with _collections_timed() as got:
        gc.collect()
        gc.collect()
    assert got["count"] == 2 and got["seconds"] > 0
    assert gc.callbacks == before


def test_bench_script_errors_are_one_line_not_tracebacks(tmp_path):
    """issue 24: `bench.py featurize --entity-backend spacy` without the extra ended in a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "bench.py"
    hide_spacy = ("import sys, runpy; sys.modules['spacy'] = None; sys.argv = sys.argv[1:]; "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = tmp_path / "b.json"
    r = subprocess.run([sys.executable, "-c", hide_spacy, str(script), "featurize", "--entity-backend", "spacy",
                        "--repeat", "1", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr and 'evqual[ner]' in r.stderr
    assert not out.exists()
    r = subprocess.run([sys.executable, str(script), "featurize", "--json", str(tmp_path / "no" / "b.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "does not exist" in r.stderr
