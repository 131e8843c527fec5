"""Batch scoring on every core (issue 10, section 4): ``evqual score --jobs N`` and ``score_frame``.

``--jobs N`` must write byte for byte what ``--jobs 1`` writes (same order,
same error records), lose no line when a worker process dies, and
``score_frame`` must give per row exactly the result of local scoring.
"""

from __future__ import annotations

import io
import json
import math
import multiprocessing
import os
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import pandas as pd
import pytest

from evqual.cli import main
from evqual.data import Limits, iter_records, sample_path
from evqual.scoring import (
    FRAME_COLUMNS,
    FRAME_SCHEMA,
    AuditLog,
    ScoreResult,
    Scorer,
    read_audit_log,
    resolve_jobs,
    score_file_parallel,
    score_frame,
    usable_cores,
)
from evqual.scoring import _parallel
from evqual.scoring._stream import score_file

GOOD = {"query": "When did the bridge open?", "context": ["The bridge opened in 1932 after six years of work."],
        "output": "The bridge opened in 1932."}


def good(i, **kw):
    return json.dumps({"id": f"g{i}", **GOOD, **kw})


# every kind of bad line, between good ones, so that blocks and error records interleave
MIXED_LINES = [
    good(1),
    "{not json",
    good(2, output="The bridge opened in 1931. It was built in six years."),
    json.dumps({"id": "m1", "query": "q", "context": ["c"]}),  # missing output
    good(3),
    "",  # a blank line before a record (E101)
    good(1),  # duplicate id (E108)
    json.dumps({"id": "t1", "query": "q", "context": ["c"], "output": 5}),  # wrong type
    good(4, output="a\ud800b"),  # a lone surrogate
    "[1, 2]",  # not an object
    good(5, output="word " * 400),  # over the output cap below
    json.dumps({"id": 17, **GOOD}),  # an integer id
    good(6, context="The bridge opened in 1932."),
    good(7, task_type="Summary"),
    good(8, metadata={"model": "m"}),
    json.dumps({"id": "u1", **GOOD, "metadata": {"other": 1}}),  # fine: unknown metadata is not read
    good(9, output="The bridge opened in 1932. " * 3),
    "",  # blank lines at the end are no records
    "",
]
LIMITS = Limits(max_output_chars=1000)


@pytest.fixture(scope="module")
def scorer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Scorer.load()


@pytest.fixture(scope="module")
def mixed_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("batch") / "mixed.jsonl"
    path.write_bytes(b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in MIXED_LINES))
    return path


def run(fn, path, scorer, **kw):
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = fn(path, buf, scorer, **kw)
    return buf.getvalue(), counts


# ------------------------------------------------------------------ --jobs: the same bytes as --jobs 1
def test_cli_jobs_2_writes_the_bytes_of_jobs_1_on_the_sample(tmp_path, capsys):
    out1, out2 = tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"
    assert main(["score", "--out", str(out1), "--no-progress", "--jobs", "1"]) == 0
    err1 = capsys.readouterr().err
    assert main(["score", "--out", str(out2), "--no-progress", "--jobs", "2", "--batch-size", "5"]) == 0
    err2 = capsys.readouterr().err
    assert out1.read_bytes() == out2.read_bytes()
    assert len(out1.read_bytes().splitlines()) == 72
    assert err1.replace("j1.jsonl", "") == err2.replace("j2.jsonl", "")


def test_cli_jobs_0_on_bad_lines_same_bytes_and_exit_status(tmp_path, mixed_path, capsys):
    outs = []
    for jobs in ("1", "0"):  # 0: every core
        out = tmp_path / f"j{jobs}.jsonl"
        assert main(["score", str(mixed_path), "--out", str(out), "--no-progress", "--jobs", jobs,
                     "--batch-size", "2", "--max-output-chars", "1000"]) == 1
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    records = [json.loads(line) for line in outs[0].decode("utf-8").splitlines()]
    assert [r["line"] for r in records] == list(range(1, len(MIXED_LINES) - 1))
    codes = {r["line"]: r["issues"][0]["code"] for r in records if "error" in r}
    assert codes == {2: "E101", 4: "E102", 6: "E101", 7: "E108", 8: "E103", 9: "E103", 10: "E101", 11: "E103"}


@pytest.mark.parametrize("jobs, batch_size, include_context", [(2, 1, True), (3, 4, False)])
def test_parallel_equals_serial_whatever_the_blocks(scorer, mixed_path, jobs, batch_size, include_context):
    serial, counts = run(score_file, mixed_path, scorer, batch_size=16, limits=LIMITS,
                         include_context=include_context)
    parallel, pcounts = run(score_file_parallel, mixed_path, scorer, jobs=jobs, batch_size=batch_size, limits=LIMITS,
                            include_context=include_context)
    assert parallel == serial
    assert pcounts == counts == (9, 8)


def test_parallel_on_a_ragtruth_file_with_a_bad_source(scorer, tmp_path):
    folder = tmp_path / "rt"
    folder.mkdir()
    sources = [{"source_id": "s1", "task_type": "QA", "source_info": {"question": "q?", "passages": [1, 2]}},
               {"source_id": "s2", "task_type": "QA",
                "source_info": {"question": "When?", "passages": "passage 1: It opened in 1932."}}]
    responses = [{"id": f"r{i}", "source_id": sid, "model": "m", "temperature": 0.7, "labels": [], "split": "test",
                  "quality": "good", "response": "It opened in 1932."} for i, sid in enumerate(["s2", "s1", "s2"])]
    (folder / "source_info.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sources))
    (folder / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses))
    serial, counts = run(score_file, folder / "response.jsonl", scorer)
    parallel, pcounts = run(score_file_parallel, folder / "response.jsonl", scorer, jobs=2, batch_size=1)
    assert parallel == serial and pcounts == counts == (2, 1)
    assert '"E106"' in parallel.splitlines()[1]


def test_parallel_audit_log_matches_serial(scorer, mixed_path, tmp_path):
    logs = []
    for name, fn, kw in (("serial", score_file, {}), ("parallel", score_file_parallel, {"jobs": 2})):
        with AuditLog(tmp_path / f"{name}.jsonl", fsync=False) as audit:
            run(fn, mixed_path, scorer, audit=audit, batch_size=3, limits=LIMITS, **kw)
        logs.append([{k: v for k, v in r.items() if k != "time"} for r in read_audit_log(tmp_path / f"{name}.jsonl")])
    assert logs[0] == logs[1]
    assert len(logs[0]) == len(MIXED_LINES) - 2


class CrashingScorer:
    """Scores like the detector, but its worker process dies on an answer that says CRASH."""

    def __init__(self, scorer):
        self.scorer = scorer

    score_batch = None  # not used by the file path

    def score_examples(self, examples, *, policy=None, extras=None):
        if any("CRASH" in ex.output for ex in examples):
            os._exit(3)
        return self.scorer.score_examples(examples, policy=policy, extras=extras)


@pytest.mark.parametrize("n_lines, crash_line, batch_size", [(11, 6, 2), (40, 2, 1)])
def test_a_dying_worker_costs_only_its_block(scorer, tmp_path, n_lines, crash_line, batch_size, monkeypatch):
    """The block whose worker dies gets error records; every other line is scored as in the serial path.

    With 40 one-answer blocks, blocks are still being sent when the pool breaks (the second case).  Two
    worker processes are used whatever the usable cores (issue 39: with one, ``--jobs 2`` was capped to 1,
    the serial path ran ``CrashingScorer`` inside pytest, and its ``os._exit`` ended the whole run).
    """
    monkeypatch.setattr(_parallel, "usable_cores", lambda: 2)
    assert resolve_jobs(2) == 2
    lines = [good(i, output="CRASH here.") if i == crash_line else good(i) for i in range(1, n_lines + 1)]
    path = tmp_path / "crash.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    serial, _ = run(score_file, path, scorer)
    parallel, (n_ok, n_bad) = run(score_file_parallel, path, CrashingScorer(scorer), jobs=2, batch_size=batch_size)
    out_s, out_p = serial.splitlines(), parallel.splitlines()
    first = (crash_line - 1) // batch_size * batch_size + 1
    crashed = set(range(first, first + batch_size))
    assert len(out_p) == n_lines and (n_ok, n_bad) == (n_lines - batch_size, batch_size)
    for n, (s, p) in enumerate(zip(out_s, out_p), start=1):
        if n in crashed:
            rec = json.loads(p)
            assert rec["line"] == n and rec["issues"][0]["code"] == "E110" and "worker process died" in rec["error"]
            assert rec["id"] == f"g{n}"
        else:
            assert p == s


def test_jobs_validation(tmp_path, capsys):
    assert main(["score", "--jobs", "-1", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--jobs must be >= 1, or 0 for every core; got -1" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
    # the usable cores (affinity and CPU quota), not the machine's: under `taskset -c 0` they differ (issue 39)
    assert resolve_jobs(0) == resolve_jobs(None) == usable_cores()
    with pytest.raises(TypeError):
        resolve_jobs(1.5)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        score_file_parallel(sample_path() / "response.jsonl", io.StringIO(), None, jobs=2, batch_size=0)


# ------------------------------------------------------------------ score_frame
def sample_frame():
    rows = []
    for _, ex, _ in iter_records(sample_path() / "response.jsonl"):
        rows.append({"id": ex.id, "query": ex.query, "context": ex.context, "output": ex.output,
                     "task_type": ex.task_type, "label": ex.label})
    return pd.DataFrame(rows)


def local_results(scorer, df):
    items = [{k: row[k] for k in ("id", "query", "context", "output", "task_type", "label")} for row in df.to_dict("records")]
    return {r.id: r.to_json() for r in scorer.score_batch(items)}


def test_score_frame_equals_local_scoring(scorer):
    df = sample_frame()
    out = score_frame(df, scorer, batch_size=7)
    assert list(out.columns) == list(FRAME_COLUMNS)
    assert {c: str(t) for c, t in out.dtypes.items()} == {name: dtype for name, dtype, _ in FRAME_SCHEMA}
    assert out.index.equals(df.index) and list(out["id"]) == list(df["id"])
    assert dict(zip(out["id"], out["result"])) == local_results(scorer, df)
    assert out["error"].isna().all()
    for row in out.itertuples():
        res = ScoreResult.from_json(row.result)
        assert (row.risk, row.flagged, row.decision, row.threshold) == (res.risk, res.flagged, res.decision,
                                                                         res.threshold)
        assert row.topics == list(res.topics) and row.reason_codes == res.reason_codes
        assert row.spans == [{"start": s.start, "end": s.end, "text": s.text, "risk": s.risk} for s in res.spans]


def test_score_frame_bad_rows_get_an_error_and_keep_the_others(scorer):
    df = pd.DataFrame({"id": ["a", "b", "c", "d", "e"],
                       "query": ["When did the bridge open?", None, "q", "q", float("nan")],
                       "context": [GOOD["context"], "The bridge opened in 1932.", ["c"], "ctx", ("one", "two")],
                       "output": ["The bridge opened in 1932.", "It opened in 1932.", None, 5, "One and two."],
                       "extra": [1, 2, 3, 4, 5]},
                      index=[10, 11, 12, 13, 14])
    out = score_frame(df, scorer)
    assert list(out.index) == [10, 11, 12, 13, 14]
    assert out["error"].isna().tolist() == [True, True, False, False, True]
    assert out.loc[12, "error"] == "ValueError: missing required field 'output'"
    assert out.loc[13, "error"] == "TypeError: output must be a string; got int"
    assert math.isnan(out.loc[12, "risk"]) and pd.isna(out.loc[12, "flagged"]) and out.loc[12, "result"] is None
    good_rows = df.drop(index=[12, 13])
    expect = scorer.score_batch([{"id": "a", "query": "When did the bridge open?", "context": GOOD["context"],
                               "output": "The bridge opened in 1932."},
                              {"id": "b", "context": "The bridge opened in 1932.", "output": "It opened in 1932."},
                              {"id": "e", "context": ["one", "two"], "output": "One and two."}])
    assert out.loc[good_rows.index, "result"].tolist() == [r.to_json() for r in expect]


def test_score_frame_ids_from_the_index_and_limits(scorer):
    df = pd.DataFrame({"context": ["The bridge opened in 1932."] * 2, "output": ["It opened in 1932.", "x " * 60]},
                      index=["first", "second"])
    out = score_frame(df, scorer, limits=Limits(max_output_chars=100))
    assert out["id"].tolist() == ["first", "second"]
    assert out["error"].isna().tolist() == [True, False] and "limit of 100" in out.loc["second", "error"]


def test_score_frame_empty_frame_has_the_schema(scorer):
    out = score_frame(pd.DataFrame({"context": [], "output": []}), scorer)
    assert list(out.columns) == list(FRAME_COLUMNS) and len(out) == 0
    assert str(out.dtypes["flagged"]) == "boolean"


def test_score_frame_rejects_bad_arguments(scorer):
    with pytest.raises(TypeError, match="pandas DataFrame"):
        score_frame([{"context": "c", "output": "o"}], scorer)
    with pytest.raises(TypeError, match="model must be"):
        score_frame(pd.DataFrame({"context": ["c"], "output": ["o"]}), model=3)


def test_score_frame_in_worker_processes_equals_local(scorer):
    """A picklable entry point: two worker processes, the model loaded by path in each, once."""
    df = sample_frame().iloc[:4]
    parts = [df.iloc[:2], df.iloc[2:]]
    fn = partial(score_frame, model=None, policy=None)
    pickle.loads(pickle.dumps(fn))
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        out = pd.concat(list(pool.map(fn, parts)))
    pd.testing.assert_frame_equal(out, score_frame(df, scorer))


def test_model_by_path_is_loaded_once_per_process(tmp_path):
    from evqual.models import default_model_path
    from evqual.scoring._frame import _scorer

    a, b, c = _scorer(None), _scorer(None), _scorer(str(default_model_path()))
    assert a.detector is b.detector is c.detector


def test_score_frame_policy_from_a_toml(scorer, tmp_path):
    strict = tmp_path / "strict.toml"
    strict.write_text("[thresholds]\ngeneral = 0.01\nsensitive = 0.01\n")
    df = pd.DataFrame({"id": ["a"], "context": [GOOD["context"]], "output": ["It opened in 1931."]})
    out = score_frame(df, scorer, policy=strict)
    assert out.loc[0, "threshold"] == pytest.approx(0.01) and bool(out.loc[0, "flagged"])


def test_cli_jobs_2_reads_standard_input(tmp_path, mixed_path, monkeypatch):
    outs = []
    for jobs in ("1", "2"):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(mixed_path.read_bytes())))
        out = tmp_path / f"stdin{jobs}.jsonl"
        assert main(["score", "-", "--out", str(out), "--no-progress", "--jobs", jobs, "--no-context"]) == 1
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == len(MIXED_LINES) - 2
