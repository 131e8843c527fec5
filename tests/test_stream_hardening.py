"""No input line can stop a stream (issue 8, section 2): regression tests and a fuzz test.

Each case below ended `evqual score` (and `explain`, `featurize`, `predict`)
with a traceback and lost lines before the fix. Every line now gets exactly
one output line, in order: the scored answer or an error record naming the
line, field and reason.
"""

from __future__ import annotations

import io
import json
import math
import os
import warnings

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evqual.cli import main
from evqual.data import Limits, iter_records, load_data, load_jsonl
from evqual.scoring import Scorer
from evqual.scoring._stream import StreamAborted, score_file

GOOD = {"query": "When did the bridge open?", "context": ["The bridge opened in 1932 after six years of work."],
        "output": "The bridge opened in 1932."}


@pytest.fixture(scope="module")
def det():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Scorer.load()


def good(i, **kw):
    return json.dumps({"id": f"g{i}", **GOOD, **kw})


def run_score(det, path, **kw):
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n_ok, n_bad = score_file(path, buf, det, **kw)
    records = [json.loads(line) for line in buf.getvalue().split("\n") if line]
    return records, n_ok, n_bad


def check_one_per_line(records, n_lines):
    assert [r["line"] for r in records] == list(range(1, n_lines + 1))
    for r in records:
        if "error" in r:
            assert r["issues"] and all(i["code"].startswith("E1") for i in r["issues"])
        else:
            assert math.isfinite(r["risk"]) and 0.0 <= r["risk"] <= 1.0


def record_lines(lines) -> int:
    """Lines that get an output line: all but the blank ones at the end of the file."""
    n = len(lines)
    while n and not lines[n - 1].strip():
        n -= 1
    return n


def write_raw(path, lines):
    path.write_bytes(b"".join((ln if isinstance(ln, bytes) else ln.encode("utf-8")) + b"\n" for ln in lines))
    return path


# ---------------------------------------------------------------- each reported case
BAD_LINES = {
    # a lone surrogate escape in any string field (UnicodeEncodeError at write, in the audit hash)
    "surrogate_output": good(0, output="a\ud800b"),
    "surrogate_query": good(0, query="x\udfffy"),
    "surrogate_context": good(0, context=["ok", "bad \ud800"]),
    "surrogate_context_str": good(0, context="bad \udbff"),
    "surrogate_id": json.dumps({"id": "a\ud800", **GOOD}),
    "surrogate_record_key": json.dumps({"id": "k", "query": "q", "context": {"na\ud800me": "x"}, "output": "o"}),
    # an integer literal over 4,300 digits (json.loads ValueError)
    "bigint_label": '{"id": "b", "query": "q", "context": ["c"], "output": "o", "label": ' + "1" * 5000 + "}",
    "bigint_temperature": '{"id": "b", "query": "q", "context": ["c"], "output": "o", "temperature": '
                          + "9" * 5000 + "}",
    "bigint_in_list_context": '{"id": "b", "query": "q", "context": [' + "7" * 5000 + '], "output": "o"}',
    # nesting about 1,000 deep (RecursionError)
    "deep_extra_field": '{"id": "d", "query": "q", "context": ["c"], "output": "o", "x": ' + "[" * 1000
                        + "]" * 1000 + "}",
    "deep_context_record": '{"id": "d", "query": "q", "context": ' + '{"k": ' * 1000 + "1" + "}" * 1000
                           + ', "output": "o"}',
    "deep_moderate_context_record": '{"id": "d", "query": "q", "context": ' + '{"k": ' * 100 + "1" + "}" * 100
                                    + ', "output": "o"}',
}

SCORED_LINES = {
    # these are fine answers: they must be scored, not refused
    "bigint_extra_field": '{"id": "b", "query": "q", "context": ["c"], "output": "o", "x": ' + "1" * 5000 + "}",
    "digit_run_in_output": good(0, output="The code is " + "7" * 5000 + "."),
    "digit_run_in_context": good(0, context=["Serial " + "3" * 6000 + " opened in 1932."]),
    "data2txt_string_deep_json": good(0, task_type="Data2txt", context='{"a": ' + "[" * 1000 + "]" * 1000 + "}"),
    "data2txt_string_bigint": good(0, task_type="Data2txt", context='{"a": ' + "4" * 5000 + "}"),
    "line_separators": good(0, output="The bridge\u2028opened\u2029in\x851932.", context=["It opened\u2028in 1932."]),
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_line_gets_an_error_record_and_its_batch_is_kept(det, tmp_path, name):
    path = write_raw(tmp_path / "in.jsonl", [good(1), good(2), BAD_LINES[name], good(4), good(5)])
    records, n_ok, n_bad = run_score(det, path, batch_size=16)
    check_one_per_line(records, 5)
    assert (n_ok, n_bad) == (4, 1)
    assert "error" in records[2] and all("error" not in records[i] for i in (0, 1, 3, 4))
    assert records[0]["id"] == "g1" and records[4]["id"] == "g5"


@pytest.mark.parametrize("name", sorted(SCORED_LINES))
def test_odd_but_valid_line_is_scored(det, tmp_path, name):
    path = write_raw(tmp_path / "in.jsonl", [good(1), SCORED_LINES[name], good(3)])
    records, n_ok, n_bad = run_score(det, path)
    check_one_per_line(records, 3)
    assert (n_ok, n_bad) == (3, 0), records[1]


def test_error_records_name_field_and_reason(det, tmp_path):
    path = write_raw(tmp_path / "in.jsonl", [BAD_LINES["surrogate_context"], BAD_LINES["bigint_label"],
                                             BAD_LINES["deep_moderate_context_record"]])
    records, _, _ = run_score(det, path)
    fields = [r["issues"][0]["field"] for r in records]
    assert fields == ["context[1]", "label", "context"]
    assert "surrogate" in records[0]["error"] and "5000 digits" in records[1]["error"]
    assert "nested deeper than 64" in records[2]["error"]


def test_surrogates_never_reach_the_output_or_audit(det, tmp_path):
    from evqual.scoring import Scorer, AuditLog, read_audit_log

    path = write_raw(tmp_path / "in.jsonl", [BAD_LINES["surrogate_output"], good(2)])
    out = tmp_path / "out.jsonl"
    with open(out, "w", encoding="utf-8") as fh, AuditLog(tmp_path / "audit.jsonl", fsync=False) as audit:
        score_file(path, fh, det, audit=audit)
    out.read_bytes().decode("utf-8")  # strict UTF-8 throughout
    assert [("error" in r) for r in map(json.loads, out.read_text().splitlines())] == [True, False]
    assert [("error" in r) for r in read_audit_log(tmp_path / "audit.jsonl")] == [True, False]


def test_line_over_the_byte_cap_is_skipped_unread(det, tmp_path):
    path = write_raw(tmp_path / "in.jsonl", [good(1), good(2, output="x " * 5000), good(3)])
    records, n_ok, n_bad = run_score(det, path, limits=Limits(max_line_bytes=2000))
    check_one_per_line(records, 3)
    assert "longer than 2,000 bytes" in records[1]["error"]


def test_size_caps_give_an_error_record(det, tmp_path):
    path = write_raw(tmp_path / "in.jsonl", [good(1, output="A sentence. " * 50), good(2),
                                             good(3, context=["x" * 500])])
    records, n_ok, n_bad = run_score(det, path, limits=Limits(max_output_chars=100, max_context_chars=400))
    assert [r["issues"][0]["field"] if "error" in r else None for r in records] == ["output", None, "context"]
    assert "more than the limit of 100" in records[0]["error"]
    # no limit
    records, n_ok, n_bad = run_score(det, path, limits=Limits(max_output_chars=None, max_context_chars=None))
    assert n_bad == 0


def test_cli_size_cap_options(tmp_path, capsys):
    src = write_raw(tmp_path / "in.jsonl", [good(1, output="word " * 300), good(2)])
    out = tmp_path / "out.jsonl"
    assert main(["score", str(src), "--out", str(out), "--no-progress", "--max-output-chars", "1000"]) == 1
    assert main(["score", str(src), "--out", str(out), "--no-progress", "--max-output-chars", "0"]) == 0
    assert main(["score", str(src), "--out", str(out), "--max-output-chars", "-1"]) == 2


def _ragtruth(tmp_path, passages):
    folder = tmp_path / "rt"
    folder.mkdir()
    sources = [{"source_id": "s1", "task_type": "QA", "source_info": {"question": "q?", "passages": passages}},
               {"source_id": "s2", "task_type": "QA",
                "source_info": {"question": "When?", "passages": "passage 1: It opened in 1932."}}]
    responses = [{"id": f"r{i}", "source_id": sid, "model": "m", "temperature": 0.7, "labels": [], "split": "test",
                  "quality": "good", "response": "It opened in 1932."} for i, sid in enumerate(["s2", "s1", "s2"])]
    write_raw(folder / "source_info.jsonl", [json.dumps(s) for s in sources])
    write_raw(folder / "response.jsonl", [json.dumps(r) for r in responses])
    return folder


def test_ragtruth_non_string_passages(det, tmp_path, capsys):
    folder = _ragtruth(tmp_path, [1, 2, 3])
    records, n_ok, n_bad = run_score(det, folder / "response.jsonl")
    check_one_per_line(records, 3)
    assert (n_ok, n_bad) == (2, 1)
    assert records[1]["issues"][0]["code"] == "E106"
    assert "source_info.passages[0]" in records[1]["error"] and "line 1" in records[1]["error"]
    # featurize: the data error names file, line and field; the good rows are written; exit 1
    out = tmp_path / "f.csv"
    assert main(["featurize", "--data", str(folder), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "[E103]" in err and "source_info.jsonl, line 1, field 'source_info.passages[0]'" in err
    assert len(pd.read_csv(out)) == 2
    # predict too
    out = tmp_path / "p.csv"
    assert main(["predict", "--data", str(folder), "--out", str(out)]) == 1
    assert len(pd.read_csv(out)) == 2


def test_loaders_keep_every_good_row_around_hostile_ones(tmp_path):
    lines = [good(1)] + [BAD_LINES[k] for k in sorted(BAD_LINES)] + [good(99)]
    path = write_raw(tmp_path / "in.jsonl", lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_jsonl(path)
    assert [ex.id for ex in data] == ["g1", "g99"]
    assert sorted({i.line for i in data.issues}) == list(range(2, len(lines)))


def test_explain_raw_jsonl_with_unicode_line_separators(tmp_path, capsys):
    src = write_raw(tmp_path / "in.jsonl", [good(1, output="One\u2028two."), good(2, output="Three\u2029four."),
                                            good(3, output="Five\x85six.")])
    md = tmp_path / "r.md"
    assert main(["explain", str(src), "--markdown", str(md)]) == 0
    assert "3 answers" in capsys.readouterr().err
    assert md.read_text(encoding="utf-8").count("\n## g") == 3


# ---------------------------------------------------------------- I/O: one clear message, documented status
def _sample_in(tmp_path):
    return write_raw(tmp_path / "in.jsonl", [good(1), good(2), good(3)])


def test_audit_log_in_a_missing_folder_leaves_out_untouched(tmp_path, capsys):
    src, out = _sample_in(tmp_path), tmp_path / "out.jsonl"
    out.write_text("previous results\n")
    assert main(["score", str(src), "--out", str(out), "--audit-log", str(tmp_path / "no" / "a.jsonl"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot open the audit log" in err and "its folder must exist" in err and "Traceback" not in err
    assert out.read_text() == "previous results\n"  # not truncated before every output was opened


def test_audit_log_on_a_folder(tmp_path, capsys):
    src, out = _sample_in(tmp_path), tmp_path / "out.jsonl"
    assert main(["score", str(src), "--out", str(out), "--audit-log", str(tmp_path), "--no-progress"]) == 2
    assert "cannot open the audit log" in capsys.readouterr().err


def test_audit_log_read_only(tmp_path, capsys, monkeypatch):
    src, out = _sample_in(tmp_path), tmp_path / "out.jsonl"
    real_open = os.open

    def refuse(path, *a, **k):
        if str(path).endswith("ro.jsonl"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", refuse)
    assert main(["score", str(src), "--out", str(out), "--audit-log", str(tmp_path / "ro.jsonl"),
                 "--no-progress"]) == 2
    assert "Permission denied" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_audit_log_on_a_full_disk_stops_before_its_line_is_written(tmp_path, capsys):
    src, out = _sample_in(tmp_path), tmp_path / "out.jsonl"
    assert main(["score", str(src), "--out", str(out), "--audit-log", "/dev/full", "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "cannot write the audit log" in err and "No space left" in err and "Traceback" not in err
    assert not out.exists()  # no scored line without its audit record (and --out is written whole or not at all)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl")] == []


def test_out_on_a_folder(tmp_path, capsys):
    assert main(["score", str(_sample_in(tmp_path)), "--out", str(tmp_path), "--no-progress"]) == 2
    assert "cannot write" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_out_on_a_full_disk(tmp_path, capsys):
    assert main(["score", str(_sample_in(tmp_path)), "--out", "/dev/full", "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err


def test_out_stream_failing_mid_run(det, tmp_path):
    class Full(io.StringIO):
        def write(self, s):
            if self.tell() > 0:
                raise OSError(28, "No space left on device")
            return super().write(s)

    with pytest.raises(StreamAborted, match="No space left"):
        score_file(_sample_in(tmp_path), Full(), det, batch_size=1)


def test_unreadable_input(tmp_path, capsys, monkeypatch):
    import builtins

    src = _sample_in(tmp_path)
    real_open = builtins.open

    def refuse(path, *a, **k):
        if str(path) == str(src):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", refuse)
    assert main(["score", str(src), "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 2
    assert "cannot read" in capsys.readouterr().err and not (tmp_path / "o.jsonl").exists()


def test_input_failing_mid_read_stops_with_a_clear_error(tmp_path, capsys, monkeypatch):
    from evqual.data import _loaders

    src = _sample_in(tmp_path)
    real = _loaders._raw_lines

    def failing(fh, max_bytes):
        for n, item in enumerate(real(fh, max_bytes)):
            if n == 1:
                raise OSError(5, "Input/output error")
            yield item

    monkeypatch.setattr(_loaders, "_raw_lines", failing)
    out = tmp_path / "o.jsonl"
    assert main(["score", str(src), "--out", str(out), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "E109" in err and "line 2" in err and "Input/output error" in err
    assert len(out.read_text().splitlines()) == 1  # the line read before the failure


def test_explain_into_a_missing_folder_and_onto_a_folder(tmp_path, capsys):
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(_sample_in(tmp_path)), "--out", str(scored), "--no-progress"]) == 0
    assert main(["explain", str(scored), "--html", str(tmp_path / "new" / "sub" / "r.html")]) == 0
    assert (tmp_path / "new" / "sub" / "r.html").is_file()
    assert main(["explain", str(scored), "--html", str(tmp_path)]) == 2
    assert "cannot write" in capsys.readouterr().err


# ---------------------------------------------------------------- fuzzing
_TEXT = st.text(st.characters(codec="utf-16", exclude_categories=()), max_size=40) | st.sampled_from(
    ["\ud800", "a\udfffb", "\u2028\u2029\x85", "7" * 4400, "", " ", "passage 1: x", "{\"a\": 1}"])
_BIGINT = "@@bigint@@"
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT
    | st.just(_BIGINT),  # an integer literal of 4,500 digits (put in after json.dumps, which cannot write it)
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=12,
)
_FIELDS = ["id", "query", "context", "output", "label", "spans", "task_type", "model", "split", "temperature",
           "quality", "source_id", "extra"]


@st.composite
def fuzzed_line(draw) -> bytes:
    kind = draw(st.sampled_from(["good", "mutated", "mutated", "deep", "raw", "bytes"]))
    rec = {"id": draw(st.text(max_size=5)), **GOOD}
    if kind == "good":
        return json.dumps(rec).encode()
    if kind == "mutated":
        for _ in range(draw(st.integers(1, 3))):
            key = draw(st.sampled_from(_FIELDS))
            if draw(st.booleans()) and key in rec:
                del rec[key]
            else:
                rec[key] = draw(_JSON)
        text = json.dumps(rec, ensure_ascii=draw(st.booleans()))
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # an unpaired surrogate: written as an escape
            data = json.dumps(rec).encode()
        return data.replace(f'"{_BIGINT}"'.encode(), b"-" + b"9" * 4500)
    if kind == "deep":
        depth = draw(st.sampled_from([63, 65, 200, 999, 3000]))
        field = draw(st.sampled_from(["context", "extra", "spans", "output"]))
        nested = "[" * depth + "]" * depth
        return json.dumps(rec)[:-1].encode() + f', "{field}": {nested}}}'.encode()
    if kind == "raw":
        return draw(st.sampled_from([b"", b"   ", b"{", b"[1, 2]", b"null", b"\"x\"", b"{\"output\": }",
                                     b"\xef\xbb\xbf{}", b"1" * 5000]))
    data = bytearray(json.dumps(rec).encode())
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data) - 1))
        data[pos] = draw(st.integers(0, 255))
    return bytes(data).replace(b"\n", b" ").replace(b"\r", b" ")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.function_scoped_fixture])
@given(lines=st.lists(fuzzed_line(), min_size=1, max_size=8), batch=st.sampled_from([1, 3, 16]))
def test_fuzzed_lines_never_stop_the_stream(det, tmp_path_factory, lines, batch):
    path = tmp_path_factory.mktemp("fuzz") / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    records, n_ok, n_bad = run_score(det, path, batch_size=batch)
    check_one_per_line(records, record_lines(lines))
    assert n_ok + n_bad == record_lines(lines)
    # the loaders agree with the stream on which lines are good (a repeated id is bad, E108)
    seen, good_lines = set(), []
    for n, ex, _ in iter_records(path):
        if ex is not None and (ex.id is None or ex.id not in seen):
            good_lines.append(n)
        if ex is not None and ex.id is not None:
            seen.add(ex.id)
    assert good_lines == [r["line"] for r in records if "error" not in r]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(lines=st.lists(fuzzed_line(), min_size=1, max_size=5))
@example(lines=[b""])  # a file of blank lines only: nothing to read, no error (found by this test, issue 41)
def test_fuzzed_lines_through_the_cli(tmp_path_factory, lines, capsys):
    folder = tmp_path_factory.mktemp("cli")
    src = folder / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = folder / "out.jsonl"
    status = main(["score", str(src), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert status in (0, 1) and "Traceback" not in err
    records = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    check_one_per_line(records, record_lines(lines))
    assert status == (1 if any("error" in r for r in records) else 0)
    # featurize keeps every good line too
    csv = folder / "f.csv"
    fstatus = main(["featurize", "--data", str(src), "--out", str(csv), "--no-progress"])
    n_good = sum("error" not in r for r in records)
    if n_good:
        assert fstatus in (0, 1) and len(pd.read_csv(csv)) == n_good
    elif records:
        assert fstatus == 1  # no good row at all: a data error, nothing written
    else:
        assert fstatus == 0  # blank lines only: no row and no error, as `score` says
    capsys.readouterr()


def test_data_layer_loads_every_good_line_of_a_fuzzed_file(tmp_path):
    lines = [good(1), BAD_LINES["deep_extra_field"], b"\xff\xfe", good(4)]
    path = write_raw(tmp_path / "in.jsonl", lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_data(path)
    assert [ex.id for ex in data] == ["g1", "g4"]


def test_scoring_api_applies_the_size_caps(det):
    with pytest.raises(ValueError, match="output has 2,000,001 characters"):
        det.score(context=["c"], output="x" * 2_000_001)
    with pytest.raises(ValueError, match="context has 30 characters, more than the limit of 20"):
        det.score(context=["y" * 30], output="o", limits=Limits(max_context_chars=20))
    r = det.score(context=["c"], output="x" * 200, limits=Limits(max_output_chars=None))
    assert 0.0 <= r.risk <= 1.0


def test_score_rejects_a_duplicate_id_as_the_loaders_do(tmp_path, capsys):
    # `evqual score` kept both lines while `featurize` and the loaders reject the second (E108):
    # the two disagreed on which lines are good (found by the fuzz test above)
    line = json.dumps({"id": "a", "query": "When?", "context": ["It opened in 1932."], "output": "It opened in 1932."})
    src = tmp_path / "in.jsonl"
    src.write_text(line + "\n" + line + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(src), "--out", str(out)]) == 1
    records = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in records] == [1, 2] and "error" not in records[0]
    assert records[1]["id"] == "a" and records[1]["issues"][0]["code"] == "E108"
    assert "line 1" in records[1]["error"]


@pytest.mark.parametrize("bad_id", ["0\r", "a\nb", 'q"uote'])
def test_featurize_csv_keeps_one_row_per_answer_whatever_the_id(tmp_path, bad_id, capsys):
    # an id with a carriage return was written unquoted and split its row for CSV readers (found by fuzzing)
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": bad_id, "query": "When?", "context": ["It opened in 1932."],
                               "output": "It opened in 1932."}) + "\n", encoding="utf-8")
    csv_path = tmp_path / "f.csv"
    assert main(["featurize", "--data", str(src), "--out", str(csv_path), "--no-progress"]) == 0
    back = pd.read_csv(csv_path, dtype={"id": str}, keep_default_na=False)
    assert len(back) == 1 and back["id"].tolist() == [bad_id]


# ---------------------------------------------------------------- friction a new user hit (issue 10, section 3)
def test_a_utf8_byte_order_mark_before_the_first_line_is_not_data(det, tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + good(1).encode("utf-8") + b"\n" + good(2).encode("utf-8") + b"\n")
    records, n_ok, n_bad = run_score(det, path)
    assert (n_ok, n_bad) == (2, 0) and [r["id"] for r in records] == ["g1", "g2"]
    assert [ex.id for ex in load_jsonl(path).examples] == ["g1", "g2"]


def test_blank_lines_at_the_end_are_no_records_but_a_blank_line_before_a_record_is_reported(det, tmp_path):
    path = write_raw(tmp_path / "blanks.jsonl", [good(1), "", good(3), "", "  "])
    records, n_ok, n_bad = run_score(det, path)
    assert (n_ok, n_bad) == (2, 1)
    assert [(r["line"], "error" in r) for r in records] == [(1, False), (2, True), (3, False)]
    assert records[1]["issues"][0]["code"] == "E101"


def test_error_records_keep_the_id_of_their_line(det, tmp_path):
    path = write_raw(tmp_path / "ids.jsonl", [good(1), json.dumps({"id": "no-context", "output": "x"}),
                                              json.dumps({"id": 7, "context": "c"}), "{broken"])
    records, n_ok, n_bad = run_score(det, path)
    assert (n_ok, n_bad) == (1, 3)
    assert [r.get("id") for r in records] == ["g1", "no-context", "7", None]
    assert [[n, i] for n, _, _, i in iter_records(path, with_ids=True)] == [[1, "g1"], [2, "no-context"],
                                                                            [3, "7"], [4, None]]


def test_the_cli_exits_0_on_a_file_ending_in_blank_lines(tmp_path, capsys):
    path = write_raw(tmp_path / "in.jsonl", [good(1), "", ""])
    out = tmp_path / "out.jsonl"
    assert main(["score", str(path), "--out", str(out), "--no-progress"]) == 0
    assert len(out.read_text().splitlines()) == 1


def test_an_extra_field_no_output_can_hold_is_named_in_a_warning_not_lost_silently(det, tmp_path):
    # issue 10: extra fields pass through; one that JSON cannot hold (an over-long integer) must not fail its line
    path = write_raw(tmp_path / "in.jsonl", [SCORED_LINES["bigint_extra_field"].replace('"x"', '"y": [1, "a"], "x"')])
    records, n_ok, n_bad = run_score(det, path)
    assert (n_ok, n_bad) == (1, 0)
    assert records[0]["extra"] == {"y": [1, "a"]}
    assert [(w["code"], w["details"]["field"]) for w in records[0]["warnings"] if w["code"] != "W004"] == [("W002", "x")]
