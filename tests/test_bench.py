from evqual.bench import bench_featurize, peak_rss_mb, tokenize_floor
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
