"""The append-only audit log: complete records, append mode, crash safety."""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from evqual.scoring import (
    AuditLog,
    Citation,
    ModelInfo,
    Policy,
    Reason,
    ScoreResult,
    SentenceResult,
    SpanResult,
    input_sha256,
    read_audit_log,
)

RECORD_KEYS = {"time", "id", "model", "threshold", "topics", "sensitive", "risk", "flagged", "decision",
               "verify", "spans", "reason_codes", "flagged_sentences", "input_sha256", "policy", "rule",
               "note_codes", "notes", "label", "warnings", "verification", "final_flagged"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def make_result(id="r1", risk=0.82):
    output = "Take 800 mg of ibuprofen. It is safe in pregnancy."
    evidence = Citation(chunk_id="c2", chunk_index=2, start=10, end=60, text="Ibuprofen ...", support=0.4)
    sentences = (
        SentenceResult(index=0, start=0, end=25, text="Take 800 mg of ibuprofen.", risk=0.3, flagged=False),
        SentenceResult(index=1, start=26, end=51, text="It is safe in pregnancy.", risk=0.82, flagged=True,
                       evidence=evidence,
                       reasons=(Reason("unsupported_claim", "safe in pregnancy", {"support": 0.1}),
                                Reason("contradiction", "safe", {}))),
    )
    return ScoreResult(
        id=id, risk=risk, flagged=True, decision="regenerate", threshold=0.3, output=output,
        query="Can I take ibuprofen while pregnant?", verify=False, topics=("healthcare",), sensitive=True,
        sentences=sentences, spans=(SpanResult(start=32, end=50, text="safe in pregnancy", risk=0.8, sentence=1),),
        model=ModelInfo(name="lr-evidence", method="logistic", version="1.2.0", sha256="ab" * 32,
                        entity_backend="regex"),
    )


def test_record_contains_every_field(tmp_path):
    path = tmp_path / "audit.jsonl"
    h = input_sha256("Can I take ibuprofen while pregnant?", ["Ibuprofen ..."], "Take 800 mg ...")
    with AuditLog(path, fsync=False) as log:
        rec = log.write(make_result(), policy=Policy().to_dict(), input_sha256=h)
    assert set(rec) == RECORD_KEYS
    assert TIME.match(rec["time"])
    assert rec["id"] == "r1"
    assert rec["model"] == {"name": "lr-evidence", "method": "logistic", "version": "1.2.0", "sha256": "ab" * 32}
    assert (rec["threshold"], rec["topics"], rec["sensitive"]) == (0.3, ["healthcare"], True)
    assert (rec["risk"], rec["flagged"], rec["decision"], rec["verify"]) == (0.82, True, "regenerate", False)
    assert (rec["verification"], rec["final_flagged"]) == (None, True)  # not verified: the pre-filter decides
    assert rec["spans"] == [{"start": 32, "end": 50, "risk": 0.8}]  # offsets: the span text is not kept
    assert rec["reason_codes"] == ["unsupported_claim", "contradiction"]
    assert rec["flagged_sentences"] == [{"index": 1, "start": 26, "end": 51, "risk": 0.82,
                                         "reasons": ["unsupported_claim", "contradiction"],
                                         "evidence_chunk_id": "c2"}]
    assert rec["input_sha256"] == h
    assert rec["policy"]["general_threshold"] == "model"
    # the scored texts themselves are not stored, not even the span's
    assert "pregnant?" not in path.read_text(encoding="utf-8")
    assert "safe in pregnancy" not in path.read_text(encoding="utf-8")


def test_records_round_trip(tmp_path):
    path = tmp_path / "audit.jsonl"
    minimal = ScoreResult(id="m", risk=0.1, flagged=False, decision="show", threshold=0.5)
    with AuditLog(path) as log:
        written = [log.write(make_result("a")), log.write(minimal), log.write_error(7, "missing 'output'", id="x"),
                   log.write_error(8, ValueError("bad JSON"))]
    assert read_audit_log(path) == written
    assert written[1]["spans"] == [] and written[1]["flagged_sentences"] == [] and written[1]["policy"] is None
    assert written[1]["model"] == {"name": "", "method": "", "version": "", "sha256": ""}
    assert set(written[2]) == {"time", "id", "line", "error"}
    assert written[2]["line"] == 7 and written[2]["id"] == "x"
    assert written[3] == {**written[3], "id": None, "error": "bad JSON"}
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 5  # one line per record, each ends with a newline


def test_unicode_is_kept(tmp_path):
    path = tmp_path / "audit.jsonl"
    result = ScoreResult(id="Müller-ü-1", risk=0.6, flagged=True, decision="warn", threshold=0.5,
                         spans=(SpanResult(0, 5, "Müller", 0.6),))
    with AuditLog(path) as log:
        log.write(result)
    assert "Müller-ü-1" in path.read_text(encoding="utf-8")  # written as UTF-8, not \u escapes
    assert read_audit_log(path)[0]["id"] == "Müller-ü-1"


def test_append_mode_keeps_earlier_lines(tmp_path):
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(make_result("first"))
    before = path.read_bytes()
    with AuditLog(path) as log:
        log.write(make_result("second"))
    assert path.read_bytes().startswith(before)
    assert [r["id"] for r in read_audit_log(path)] == ["first", "second"]


def test_one_write_call_then_fsync(tmp_path, monkeypatch):
    calls = []
    real_write = os.write
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(("fsync",)))
    log = AuditLog(tmp_path / "audit.jsonl")
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append(("write", bytes(data))) or real_write(fd, data))
    log.write(make_result())
    log.write_error(2, "bad")
    assert [c[0] for c in calls] == ["write", "fsync", "write", "fsync"]
    assert all(c[1].count(b"\n") == 1 and c[1].endswith(b"\n") for c in calls if c[0] == "write")
    log.close()

    calls.clear()
    with AuditLog(tmp_path / "nosync.jsonl", fsync=False) as log:
        log.write(make_result())
    assert [c[0] for c in calls] == ["write"]


def test_failed_write_leaves_nothing_buffered(tmp_path, monkeypatch):
    """A record whose write fails (a full disk) is not written later, out of order, by a buffer."""
    path = tmp_path / "audit.jsonl"
    real_write = os.write
    log = AuditLog(path, fsync=False)

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space"):
        log.write(make_result("lost"))
    monkeypatch.setattr(os, "write", real_write)
    log.write(make_result("next"))
    log.close()
    assert [r["id"] for r in read_audit_log(path)] == ["next"]


def test_audit_log_on_a_full_disk_raises(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with AuditLog("/dev/full", fsync=False) as log:
        with pytest.raises(OSError):
            log.write(make_result())


def test_nan_risk_refused_before_writing(tmp_path):
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        with pytest.raises(ValueError):
            log.write(ScoreResult(id="n", risk=float("nan"), flagged=False, decision="show", threshold=0.5))
        with pytest.raises(TypeError, match="result must be a ScoreResult"):
            log.write({"id": "x"})
    assert path.read_bytes() == b""


def test_closed_log_refuses_writes(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    with log:
        assert not log.closed
    assert log.closed
    with pytest.raises(ValueError):
        log.write(make_result())


def test_torn_last_line_is_isolated(tmp_path):
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(make_result("whole"))
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"time": "2024-01-01T00:00:00.000Z", "id": "torn", "ri')  # a crash mid-line
    with AuditLog(path) as log:
        log.write(make_result("after"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["id"] == "whole"
    assert json.loads(lines[2])["id"] == "after"  # not glued to the fragment
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2, column ")):
        read_audit_log(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id": 1}\n{"id": \n', "line 2, column 8: not valid JSON"),
        (b'{"id": 1}\n\n', "line 2, column 1: not valid JSON"),
        (b'[1, 2]\n', "line 1: not a JSON object; got list"),
        (b'{"id": "\xff"}\n', "line 1: not UTF-8"),
    ],
)
def test_read_reports_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=re.escape(f"{path}, {message}")):
        read_audit_log(path)


def test_read_empty_log(tmp_path):
    path = tmp_path / "audit.jsonl"
    AuditLog(path).close()
    assert read_audit_log(path) == []


def test_input_sha256():
    h = input_sha256("q", "c", "o")
    canonical = json.dumps({"context": "c", "output": "o", "query": "q"}, separators=(",", ":"))
    assert h == hashlib.sha256(canonical.encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", h)
    assert input_sha256("q", "c", "o ") != h
    assert input_sha256("q", ["a", "b"], "o") == input_sha256("q", ("a", "b"), "o")
    assert input_sha256("q", ["a", "b"], "o") != input_sha256("q", "a\n\nb", "o")
    assert input_sha256("ü", "c", "o") == input_sha256("ü", "c", "o")


CRASH_SCRIPT = textwrap.dedent("""
    import sys, time
    from evqual.scoring import AuditLog, ModelInfo, ScoreResult, SpanResult

    with AuditLog(sys.argv[1]) as log:
        i = 0
        while True:
            result = ScoreResult(
                id=str(i), risk=0.61, flagged=True, decision="warn", threshold=0.5,
                spans=tuple(SpanResult(k, k + 40, "x" * 40, 0.6) for k in range(20)),
                model=ModelInfo(name="fake", method="lr", version="0", sha256="0" * 64))
            log.write(result, input_sha256="f" * 64)
            i += 1
            print(i, flush=True)
            time.sleep(0.005)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_crash_mid_batch_loses_at_most_the_record_in_flight(tmp_path):
    path = tmp_path / "audit.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the writer printed nothing within 60 s"
        first = proc.stdout.readline()
        assert first.strip() == "1", proc.stderr.read()
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        reported = [first] + proc.stdout.read().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    finished = int(reported[-1])
    assert finished >= 2

    data = path.read_text(encoding="utf-8")
    lines = data.split("\n")
    assert lines[-1] == "", "the last record does not end with a newline"
    lines = lines[:-1]
    records = [json.loads(line) for line in lines]  # every line is whole JSON
    assert len(records) in (finished, finished + 1)
    assert [r["id"] for r in records] == [str(i) for i in range(len(records))]
    assert all(len(r["spans"]) == 20 for r in records)
    assert read_audit_log(path) == records


def test_reasons_of_unflagged_sentences_are_logged(tmp_path):
    # issue 10: a detected wrong dose in a shown answer had `reason_codes: []` and nothing else in the log
    from evqual.results import Reason, SentenceResult

    dose = Reason("NUMBER_CONFLICT", "'2' where the evidence says '4'", {"check": "number"})
    r = ScoreResult(id="d1", risk=0.2, flagged=False, decision="show", threshold=0.5, rule="below_threshold",
                    sentences=(SentenceResult(0, 0, 20, "Take it every 2 hours.", 0.4, False, None, (dose,),
                                              note=True),
                               SentenceResult(1, 21, 30, "Rest well.", 0.0, False)), label=1)
    with AuditLog(tmp_path / "a.jsonl", fsync=False) as log:
        rec = log.write(r)
    assert rec["reason_codes"] == [] and rec["flagged_sentences"] == []
    assert rec["note_codes"] == ["NUMBER_CONFLICT"] and rec["label"] == 1 and rec["rule"] == "below_threshold"
    assert [(n["index"], n["note"], n["reasons"]) for n in rec["notes"]] == [(0, True, ["NUMBER_CONFLICT"])]
