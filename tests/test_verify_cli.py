"""`evqual verify`, `evqual score --verify`, and the verification stage inside the scoring pipeline (issue 11, section 5)."""

import io
import json

import pytest

from evqual.cli import main
from evqual.scoring import AuditLog, Scorer, ScoreResult, read_audit_log
from evqual.verify import ClaimVerifier, make_verifier, verify_file

CTX = ["The bridge opened in 1932 after six years of work."]


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [{"id": "ok", "query": "When did it open?", "context": CTX, "output": "The bridge opened in 1932.",
         "label": 0, "user": "u1"},
        "{not json",
        {"id": "bad", "query": "When did it open?", "context": CTX, "output": "The bridge opened in 1935."},
        {"id": "nooutput", "query": "q", "context": CTX},
        {"id": "q", "query": "q", "context": CTX, "output": "Did it open in 1932?"}]


def test_verify_cli_one_line_per_input_line(tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    status = main(["verify", str(src), "--out", str(out), "--no-progress"])
    assert status == 1  # two lines failed
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0]["tier"] == "accept" and rows[0]["score"] == 0.0 and rows[0]["label"] == 0
    assert rows[0]["extra"] == {"user": "u1"}
    assert rows[1]["error"] and rows[1]["issues"][0]["code"]
    assert rows[2]["flagged"] is True and rows[2]["claims"][0]["verdict"] == "REFUTED"
    assert rows[2]["claims"][0]["evidence"][0]["text"] == CTX[0]
    assert "output" in rows[3]["error"]
    assert rows[4]["claims"] == [] and rows[4]["tier"] == "accept"
    assert "3 answers verified, 2 lines failed" in capsys.readouterr().err


def test_verify_cli_tau_and_usage_errors(tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", ROWS[:1])
    assert main(["verify", str(src), "--tau", "1.5", "--no-progress"]) == 2
    assert "tau must be a number in [0, 1]" in capsys.readouterr().err
    assert main(["verify", str(src), "--mutations", "0", "--method", "metarag", "--no-progress"]) == 2
    assert "mutations must be an integer >= 1" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "missing.jsonl")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["verify", str(src), "--out", str(tmp_path / "f" / "x")]) in (0, 2)


def test_verify_cli_on_the_embedded_sample(tmp_path):
    out = tmp_path / "v.jsonl"
    assert main(["verify", "--out", str(out), "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 72 and all(r["error"] is None and 0 <= r["score"] <= 1 for r in rows)
    for r in rows:
        for c in r["claims"]:
            assert c["verdict"] in ("SUPPORTED", "REFUTED", "NO_EVIDENCE")


class _Broken:
    method = "claims"

    def verify(self, **kw):
        if "1935" in kw["output"]:
            raise RuntimeError("backend down")
        return ClaimVerifier().verify(**kw)


def test_verify_file_never_loses_a_line_when_the_backend_fails(tmp_path):
    src = _write(tmp_path / "in.jsonl", [ROWS[0], ROWS[2], ROWS[0] | {"id": "ok2"}])
    out = io.StringIO()
    assert verify_file(src, out, _Broken()) == (2, 1)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [r["id"] for r in rows] == ["ok", "bad", "ok2"]
    assert rows[1]["error"] == "RuntimeError: backend down"


def test_score_verifies_only_escalated_answers(tmp_path):
    src = _write(tmp_path / "in.jsonl", [ROWS[0], ROWS[2]])
    out, audit = tmp_path / "s.jsonl", tmp_path / "audit.jsonl"
    assert main(["score", str(src), "--out", str(out), "--audit-log", str(audit), "--verify", "claims",
                 "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for r in rows:
        assert (r["verification"] is not None) == r["verify"]
    bad = rows[1]
    assert bad["decision"] == "escalate" and bad["verification"]["tier"] == "reject"
    recs = read_audit_log(audit)
    assert recs[1]["verification"]["tier"] == "reject" and recs[1]["final_flagged"] is True
    assert recs[1]["verification"]["items"][0]["verdict"] == "REFUTED"
    from evqual.scoring import parse_results

    assert parse_results(out.read_text().splitlines())[1].verification == bad["verification"]


def test_scorer_without_verifier_records_nothing():
    r = Scorer.load().score(query="q", context=CTX, output="The bridge opened in 1935.")
    assert r.verify and r.verification is None and r.final_flagged == r.flagged


def test_scorer_verifier_failure_is_recorded(tmp_path):
    class Fails:
        method = "claims"

        def verify(self, **kw):
            raise ValueError("nope")

    r = Scorer.load(verifier=Fails()).score(query="q", context=CTX, output="The bridge opened in 1935.")
    assert r.verification["error"] == "ValueError: nope" and r.final_flagged == r.flagged
    with AuditLog(tmp_path / "a.jsonl") as log:
        rec = log.write(r)
    assert rec["verification"]["error"] == "ValueError: nope"


def test_final_flagged_follows_the_verifier():
    r = ScoreResult(id="a", risk=0.5, flagged=True, decision="escalate", threshold=0.5, verify=True,
                    verification={"flagged": False, "error": None})
    assert r.final_flagged is False
    assert ScoreResult(id="a", risk=0.5, flagged=True, decision="escalate", threshold=0.5).final_flagged is True


def test_make_verifier_rejects_unknown_names():
    with pytest.raises(ValueError, match="method must be one of"):
        make_verifier("nli")
    with pytest.raises(ValueError, match="backend must be"):
        make_verifier("claims", "gpt")


# ------------------------------------------------------------------------------- llm backend end to end
@pytest.fixture
def stub(monkeypatch):
    from llm_stub import StubLLM

    for var in ("EVQUAL_LLM_BASE_URL", "EVQUAL_LLM_MODEL", "EVQUAL_LLM_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    s = StubLLM().start()
    try:
        yield s
    finally:
        s.stop()


def test_verify_cli_llm_backend_against_the_stub(tmp_path, stub, capsys):
    src = _write(tmp_path / "in.jsonl", [ROWS[0], ROWS[1], ROWS[2] | {"output": "The bridge did not open in 1932."}])
    out = tmp_path / "out.jsonl"
    status = main(["verify", str(src), "--out", str(out), "--backend", "llm", "--llm-base-url", stub.base_url,
                   "--llm-model", "stub-model", "--no-progress"])
    assert status == 1  # the bad JSON line
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3]
    assert rows[0]["backend"] == "llm" and rows[0]["usage"]["calls"] >= 1
    assert rows[2]["claims"][0]["verdict"] == "REFUTED" and rows[2]["flagged"] is True
    assert stub.requests and stub.requests[0]["body"]["model"] == "stub-model"


def test_llm_faults_are_per_answer_errors(tmp_path, stub):
    from evqual.verify import ClaimVerifier, LLMClient, LLMJudge

    client = LLMClient(base_url=stub.base_url, model="m", timeout=0.2, max_retries=1, backoff=0.01,
                       max_backoff=0.05, cache=None)
    verifier = ClaimVerifier(judge=LLMJudge(client, mode="claim"))
    src = _write(tmp_path / "in.jsonl", [ROWS[0], ROWS[0] | {"id": "ok2"}])
    stub.always = ("status", 500, {})
    out = io.StringIO()
    assert verify_file(src, out, verifier) == (0, 2)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [r["id"] for r in rows] == ["ok", "ok2"]
    assert all("500" in r["error"] and r["score"] is None for r in rows)
    stub.always = None
    stub.fault(("text", "MAYBE, who knows"))
    out = io.StringIO()
    verify_file(src, out, verifier)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert len(rows) == 2 and rows[1]["error"] is None


def test_verify_cli_metarag_llm_backend_against_the_stub(tmp_path, stub):
    src = _write(tmp_path / "in.jsonl", [ROWS[0], ROWS[1]])
    out = tmp_path / "out.jsonl"
    status = main(["verify", str(src), "--out", str(out), "--method", "metarag", "--backend", "llm",
                   "--llm-base-url", stub.base_url, "--llm-model", "stub-model", "--mutations", "2", "--no-progress"])
    assert status == 1  # the bad JSON line
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2]
    r = rows[0]
    assert r["method"] == "metarag" and r["backend"] == "llm" and r["error"] is None
    assert r["factoids"] and all(v["answer"] in ("YES", "NO", "NOT SURE") for f in r["factoids"] for v in f["variants"])
    assert 0.0 <= r["score"] <= 1.0 and r["usage"]["calls"] >= 2


def test_verify_cli_metarag_rules_flags_a_wrong_year(tmp_path):
    src = _write(tmp_path / "in.jsonl", [ROWS[2]])
    out = tmp_path / "out.jsonl"
    assert main(["verify", str(src), "--out", str(out), "--method", "metarag", "--mutations", "2",
                 "--no-progress"]) == 0
    r = json.loads(out.read_text())
    f = r["factoids"][0]
    assert ROWS[2]["output"][f["start"]:f["end"]] == f["text"] and f["variants"]
    assert {v["kind"] for v in f["variants"]} <= {"synonym", "antonym"}


@pytest.mark.parametrize("method", ["claims", "metarag"])
def test_make_verifier_passes_the_retriever_on(method):
    """issue 11: `evqual verify --method metarag --retriever hybrid` used BM25 (the option was dropped)."""
    v = make_verifier(method, retriever="hybrid", k=2)
    assert (v.retriever, v.k) == ("hybrid", 2)


def test_verify_lines_carry_the_input_warnings(tmp_path):
    """issue 24: `evqual verify` gave no W001 for a German answer (`evqual score` did)."""
    import json as _json

    from evqual.cli import main as _main

    src = tmp_path / "in.jsonl"
    src.write_text(_json.dumps({"id": "de", "query": "Wann?", "context": ["Die Brücke wurde 1937 eröffnet."],
                                "output": "Die Brücke wurde im Jahr 1952 eröffnet, und sie ist blau gestrichen "
                                          "worden."}) + "\n" + _json.dumps({"id": "en", "query": "When?",
                                "context": ["It opened in 1937."], "output": "It opened in 1937."}) + "\n",
                   encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert _main(["verify", str(src), "--out", str(out), "--no-progress"]) in (0, 1)
    de, en = [_json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [w["code"] for w in de["warnings"]] == ["W001"] and de["warnings"][0]["details"]["field"] == "output"
    assert en["warnings"] == []


def test_without_input_the_embedded_sample_is_announced(tmp_path, capsys):
    """issue 24: `evqual verify` without input verified the embedded sample without saying so."""
    from evqual.cli import main as _main

    assert _main(["verify", "--out", str(tmp_path / "v.jsonl"), "--no-progress"]) in (0, 1)
    assert "no input given: using the RAGTruth sample embedded in the package" in capsys.readouterr().err
