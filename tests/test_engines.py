"""Scoring on real engines (issue 10, section 4): Dask on a 2-worker LocalCluster, Spark in local[2].

Each engine scores the embedded sample (72 answers, plus a row that cannot
be scored) and must give, per id, exactly the result of local scoring (the
full JSON).  The tests skip when the engine's extra is not installed
(``pip install -e ".[dask,spark]"``; Spark also needs ``java``).  One cluster
and one Spark session serve the whole module and are closed at the end.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings

import pandas as pd
import pytest

from evqual.data import iter_records, sample_path
from evqual.errors import MissingDependencyError
from evqual.scoring import FRAME_COLUMNS, FRAME_SCHEMA, Scorer, ScoreResult


@pytest.fixture(scope="module")
def scorer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Scorer.load()


@pytest.fixture(scope="module")
def frame():
    """The embedded sample as a frame of score() arguments (list contexts), plus a row without an output."""
    rows = []
    for _, ex, _ in iter_records(sample_path() / "response.jsonl"):
        context = ([ex.context[c.start:c.end] for c in ex.chunks] if len(ex.chunks) > 1 else [ex.context])
        rows.append({"id": ex.id, "query": ex.query, "context": context, "output": ex.output,
                     "task_type": ex.task_type, "label": ex.label})
    rows.append({"id": "no-output", "query": "q", "context": ["c"], "output": None, "task_type": "QA", "label": 0})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def local(scorer, frame):
    """Local scoring: id -> the result's JSON (None for the row that cannot be scored)."""
    items = [{k: row[k] for k in ("id", "query", "context", "output", "task_type", "label")}
             for row in frame.to_dict("records") if isinstance(row["output"], str)]
    out = {r.id: r.to_json() for r in scorer.score_batch(items)}
    out["no-output"] = None
    return out


def check_against_local(out: pd.DataFrame, local: dict):
    assert list(out.columns) == list(FRAME_COLUMNS)
    assert sorted(out["id"]) == sorted(local)
    got = dict(zip(out["id"], (None if pd.isna(r) else r for r in out["result"])))
    assert got == local
    errors = dict(zip(out["id"], out["error"]))
    assert errors.pop("no-output") == "ValueError: missing required field 'output'"
    assert all(pd.isna(e) for e in errors.values())
    for row in out[out["id"] != "no-output"].itertuples():
        res = ScoreResult.from_json(row.result)
        assert (row.risk, bool(row.flagged), row.decision) == (res.risk, res.flagged, res.decision)
        assert list(row.reason_codes) == res.reason_codes and list(row.topics) == list(res.topics)
        assert [dict(s) for s in row.spans] == [{"start": s.start, "end": s.end, "text": s.text, "risk": s.risk}
                                                for s in res.spans]


# ------------------------------------------------------------------ missing extras
def test_missing_engines_name_the_extra(monkeypatch):
    from evqual.engines import score_dask, score_spark

    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "evqual\[dask\]"'):
        score_dask(None)
    with pytest.raises(MissingDependencyError, match=r'pip install "evqual\[spark\]"'):
        score_spark(None)


# ------------------------------------------------------------------ Dask
@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("dask.dataframe", reason="needs the dask extra")
    distributed = pytest.importorskip("distributed", reason="needs the dask extra")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.dask
def test_dask_on_a_two_worker_cluster_equals_local(dask_client, frame, local):
    import dask
    import dask.dataframe as dd

    from evqual.engines import score_dask

    # object columns of lists stay lists (Dask's default turns them into their repr strings)
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(frame, npartitions=4)
    lazy = score_dask(ddf, batch_size=16)
    assert list(lazy.columns) == list(FRAME_COLUMNS)
    out = lazy.compute()
    check_against_local(out, local)
    assert out.index.equals(frame.index)  # the input's index and order
    assert {c: str(t) for c, t in out.dtypes.items()} == {name: dtype for name, dtype, _ in FRAME_SCHEMA}
    assert len(dask_client.scheduler_info()["workers"]) == 2


@pytest.mark.dask
def test_dask_from_parquet_equals_local(dask_client, frame, local, tmp_path):
    """The usual way in: parquet list columns arrive as arrays, strings as Arrow strings with <NA>."""
    import dask.dataframe as dd

    from evqual.engines import score_dask

    frame.to_parquet(tmp_path / "answers.parquet")
    ddf = dd.read_parquet(tmp_path / "answers.parquet").repartition(npartitions=3)
    check_against_local(score_dask(ddf).compute(), local)


@pytest.mark.dask
def test_dask_with_hostile_rows_equals_local_with_string_conversion_off(dask_client, scorer):
    """A surrogate and a >4,300-digit integer (issue 21): with Dask's string conversion on, the whole job fails
    before evqual runs; with it off (the documented setting), every row is scored exactly as locally."""
    import dask
    import dask.dataframe as dd

    from evqual.engines import score_dask
    from evqual.scoring import score_frame

    rows = [{"id": "ok", "query": "q", "context": ["The bridge opened in 1932."], "output": "It opened in 1932."},
            {"id": "sur", "query": "q", "context": ["bad \ud800 text"], "output": "It opened in 1935."},
            {"id": "big", "query": "q", "context": ["c"], "output": "o", "note": 10 ** 4400}]
    df = pd.DataFrame(rows, dtype=object)
    with pytest.raises(Exception):  # the conversion fails the job: the reason the setting is documented
        dd.from_pandas(df, npartitions=1).compute()
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(df, npartitions=2)
        out = score_dask(ddf).compute()
    local = score_frame(df)
    assert list(out["id"]) == ["ok", "sur", "big"]
    assert list(out["result"].fillna("")) == list(local["result"].fillna(""))
    assert list(out["error"].fillna("")) == list(local["error"].fillna(""))


@pytest.mark.dask
def test_dask_rejects_a_frame_without_output(dask_client, frame):
    import dask.dataframe as dd

    from evqual.engines import score_dask

    with pytest.raises(ValueError, match="'output'"):
        score_dask(dd.from_pandas(frame.drop(columns="output"), npartitions=1))
    with pytest.raises(TypeError, match="dask DataFrame"):
        score_dask(frame)


# ------------------------------------------------------------------ Spark
@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark.sql", reason="needs the spark extra")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (apt-get install default-jre-headless)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (SparkSession.builder.master("local[2]").appName("evqual-tests")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")  # pyspark 4.x on pandas 3
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_spark_local_2_equals_local(spark, frame, local):
    from evqual.engines import score_spark

    sdf = spark.createDataFrame(frame).repartition(2)
    scored = score_spark(sdf, batch_size=16)
    assert scored.columns == list(FRAME_COLUMNS)
    fields = {f.name: f.dataType.simpleString() for f in scored.schema.fields}
    assert fields["spans"] == "array<struct<start:int,end:int,text:string,risk:double>>"
    check_against_local(scored.toPandas(), local)


@pytest.mark.spark
def test_spark_needs_an_id_column(spark, frame):
    from evqual.engines import score_spark

    with pytest.raises(ValueError, match="'id'"):
        score_spark(spark.createDataFrame(frame[["context", "output"]].iloc[:2]))
    with pytest.raises(TypeError, match="Spark DataFrame"):
        score_spark(frame)
