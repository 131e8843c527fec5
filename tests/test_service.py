"""evqual serve: a real uvicorn server on 127.0.0.1, talked to with a real HTTP client (httpx).

Every endpoint, every error status, auth, limits, the audit log's request ids, a malformed-request fuzz,
and SIGTERM during load losing no audit record.  Every wait is bounded in time.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")
httpx = pytest.importorskip("httpx")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from evqual.scoring import Policy, Scorer, read_audit_log, score_file  # noqa: E402
from evqual.service import SERVICE_ENDPOINTS, ServeConfig, create_app, load_tokens  # noqa: E402

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ITEM = {"id": "a1", "query": "Who designed the bridge?", "context": ["Joseph Strauss designed the Golden Gate Bridge, "
                                                                    "which opened in 1937."],
        "output": "Joseph Strauss designed it, and it opened in 1932."}


class _Server:
    """A uvicorn server running ``app`` in a thread on 127.0.0.1 (port chosen by the OS)."""

    def __init__(self, app):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start within 30 s"
            assert self.thread.is_alive(), "the server thread died"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def scorer():
    return Scorer.load(policy=Policy())


@pytest.fixture(scope="module")
def served(scorer, tmp_path_factory):
    audit = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    cfg = ServeConfig(audit_log=str(audit), tokens=(TOKEN,), max_batch=8, max_body_bytes=200_000,
                      policy_overrides="any")
    with _Server(create_app(cfg, scorer=scorer)) as srv:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            yield client, audit


def _cli_line(scorer, item):
    """What `evqual score` writes for ``item`` as line 1 of a file."""
    out = io.StringIO()
    stream = io.BytesIO((json.dumps(item) + "\n").encode())
    stream.name = "<stdin>"
    score_file(stream, out, scorer)
    return json.loads(out.getvalue())


# ------------------------------------------------------------------------------------------------ endpoints

def test_health_ready_openapi_need_no_token(served):
    client, _ = served
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and re.fullmatch(r"[0-9a-f]{64}", ready["model_sha256"])
    spec = client.get("/openapi.json").json()
    for path in SERVICE_ENDPOINTS:
        if path != "/openapi.json":
            assert path in spec["paths"], path
    assert client.get("/docs").status_code == 404  # no UI pulling scripts from a CDN


def test_score_one_item_is_the_line_evqual_score_writes(served, scorer):
    client, _ = served
    r = client.post("/v1/score", json=ITEM, headers=AUTH)
    assert r.status_code == 200
    body = r.json()
    assert body["request_id"] == r.headers["x-request-id"]
    assert body["result"] == _cli_line(scorer, ITEM)


def test_score_batch_keeps_order_and_gives_each_bad_item_its_error_record(served, scorer):
    client, _ = served
    items = [ITEM, {"id": "b", "context": "c"}, 5, {**ITEM, "id": "c", "extra_field": [1, 2]}]
    r = client.post("/v1/score", json={"items": items}, headers=AUTH)
    assert r.status_code == 200
    res = r.json()["results"]
    assert [x["line"] for x in res] == [1, 2, 3, 4]
    assert res[0] == _cli_line(scorer, ITEM)
    assert res[1]["issues"][0]["code"] == "E102" and res[1]["id"] == "b"
    assert res[2]["issues"][0]["code"] == "E101"
    assert res[3]["extra"] == {"extra_field": [1, 2]}


def test_server_timing_header_times_the_app_and_the_scoring_job(served):
    client, _ = served
    r = client.post("/v1/score", json=ITEM, headers=AUTH)
    m = re.fullmatch(r"app;dur=([0-9.]+), score;dur=([0-9.]+)", r.headers["server-timing"])
    assert m, r.headers["server-timing"]
    app_ms, score_ms = float(m.group(1)), float(m.group(2))
    assert 0 < score_ms <= app_ms
    r = client.get("/v1/model", headers=AUTH)  # no scoring job: the app alone
    assert re.fullmatch(r"app;dur=[0-9.]+", r.headers["server-timing"])


def test_a_single_bad_item_is_422_with_its_error(served):
    client, _ = served
    r = client.post("/v1/score", json={"query": "q", "context": "c"}, headers=AUTH)
    assert r.status_code == 422 and "E102 output" in r.json()["error"]


def test_request_id_header_is_kept_when_valid_and_replaced_when_not(served):
    client, _ = served
    r = client.post("/v1/score", json=ITEM, headers={**AUTH, "X-Request-ID": "abc-123"})
    assert r.headers["x-request-id"] == "abc-123" == r.json()["request_id"]
    r = client.post("/v1/score", json=ITEM, headers={**AUTH, "X-Request-ID": "bad id;" + "x" * 200})
    assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])


def test_policy_overrides_apply_to_the_request_only(served):
    client, _ = served
    strict = client.post("/v1/score", json={**ITEM, "policy": {"general_threshold": 0.0, "escalate_band": None,
                                                               "sensitive_threshold": 0.0}}, headers=AUTH).json()
    assert strict["result"]["threshold"] == 0.0 and strict["result"]["decision"] != "show"
    plain = client.post("/v1/score", json=ITEM, headers=AUTH).json()
    assert plain["result"]["threshold"] != 0.0
    for bad in ({"topics": {}}, {"regenerate_at": 2}, {"general_threshold": "x"}, "strict"):
        r = client.post("/v1/score", json={"items": [ITEM], "policy": bad}, headers=AUTH)
        assert r.status_code == 422 and r.json()["error"].startswith("policy"), bad


def test_score_with_verify_records_both_stages(served):
    client, _ = served
    r = client.post("/v1/score", json={"items": [ITEM], "verify": "claims",
                                       "policy": {"escalate_band": [0.0, 1.0]}}, headers=AUTH)
    assert r.status_code == 200
    rec = r.json()["results"][0]
    assert rec["decision"] == "escalate" and rec["verification"] is not None
    assert client.post("/v1/score", json={**ITEM, "verify": "llm-judge"}, headers=AUTH).status_code == 422


def test_verify_endpoint(served):
    client, _ = served
    r = client.post("/v1/verify", json=ITEM, headers=AUTH)
    assert r.status_code == 200 and r.json()["result"]["tier"] in ("accept", "revise", "reject")
    r = client.post("/v1/verify", json={"items": [ITEM, {"id": "x"}], "method": "metarag"}, headers=AUTH)
    res = r.json()["results"]
    assert r.status_code == 200 and res[0]["line"] == 1 and res[1]["error"]
    assert client.post("/v1/verify", json={**ITEM, "method": "vibes"}, headers=AUTH).status_code == 422


def test_model_endpoint(served, scorer):
    client, _ = served
    m = client.get("/v1/model", headers=AUTH).json()
    info = scorer.model_info
    assert (m["method"], m["sha256"], m["version"]) == (info.method, info.sha256, info.version)
    assert 0 <= m["threshold"] <= 1 and m["policy"]["general_threshold"] == "model"
    assert m["limits"]["max_batch"] == 8


# ------------------------------------------------------------------------------------------------ auth, limits

def test_auth(served):
    client, _ = served
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN},
                    {"Authorization": f"Basic {TOKEN}"}):
        for method, path in (("POST", "/v1/score"), ("POST", "/v1/verify"), ("GET", "/v1/model"),
                             ("GET", "/metrics")):
            r = client.request(method, path, json=ITEM, headers=headers)
            assert r.status_code == 401, (headers, path)
            assert r.headers["www-authenticate"] == "Bearer"
            if path != "/metrics":
                assert r.json()["error"] == "unauthorized"  # no detail


def test_limits(served):
    client, _ = served
    big = {**ITEM, "context": "x" * 300_000}
    r = client.post("/v1/score", json=big, headers=AUTH)
    assert r.status_code == 413 and "max_body_bytes" in r.json()["error"]

    def chunks():  # no Content-Length: the body is counted as it arrives
        for _ in range(40):
            yield b" " * 10_000

    r = client.post("/v1/score", content=chunks(), headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code == 413
    r = client.post("/v1/score", json={"items": [ITEM] * 9}, headers=AUTH)
    assert r.status_code == 422 and "max_batch" in r.json()["error"]
    assert client.post("/v1/score", json={"items": []}, headers=AUTH).status_code == 422
    assert client.post("/v1/score", json={"items": {"a": 1}}, headers=AUTH).status_code == 422
    assert client.post("/v1/score", json={"items": [ITEM], "extra": 1}, headers=AUTH).status_code == 422
    assert client.post("/v1/score", json=[ITEM], headers=AUTH).status_code == 422
    for raw in (b"{bad", b'{"output": NaN}', b"\xff\xfe", b"[" * 100_000):
        r = client.post("/v1/score", content=raw, headers={**AUTH, "Content-Type": "application/json"})
        assert r.status_code == 400, raw[:10]


class _SlowScorer(Scorer):
    """A scorer that takes ``delay`` seconds per call (to hold the scoring thread)."""

    delay = 0.0

    def score_examples(self, examples, **kwargs):
        time.sleep(self.delay)
        return super().score_examples(examples, **kwargs)


def test_busy_and_timeout_are_503_and_the_service_stays_up(scorer, tmp_path):
    slow = _SlowScorer(scorer.detector, policy=Policy())
    slow.delay = 1.5
    audit = tmp_path / "audit.jsonl"
    with _Server(create_app(ServeConfig(max_queue=1, request_timeout=0.5, audit_log=str(audit)), scorer=slow)) as srv:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            got = {}

            def first():
                got["first"] = client.post("/v1/score", json=ITEM)

            t = threading.Thread(target=first)
            t.start()
            time.sleep(0.3)
            busy = client.post("/v1/score", json=ITEM)
            assert busy.status_code == 503 and "max_queue" in busy.json()["error"]
            assert busy.headers["retry-after"] == "1"
            assert client.get("/healthz").status_code == 200  # the event loop is free while scoring runs
            t.join(timeout=30)
            assert got["first"].status_code == 503 and "request_timeout" in got["first"].json()["error"]
            slow.delay = 0.0
            time.sleep(1.5)  # the timed-out request's block finishes on the scoring thread
            assert client.post("/v1/score", json=ITEM).status_code == 200


# ------------------------------------------------------------------------------------------------ audit, metrics

def test_audit_log_has_every_answer_with_its_request_id(served):
    client, audit = served
    r = client.post("/v1/score", json={"items": [ITEM, {"id": "bad"}, {**ITEM, "id": "a2"}]}, headers=AUTH)
    rid = r.json()["request_id"]
    mine = [rec for rec in read_audit_log(audit) if rec.get("request_id") == rid]
    assert [rec["id"] for rec in mine] == ["a1", "bad", "a2"]
    assert "error" in mine[1] and mine[0]["input_sha256"]


def test_metrics_count_requests_decisions_and_errors(served):
    client, _ = served
    before = client.get("/metrics", headers=AUTH).text
    client.post("/v1/score", json={"items": [ITEM, {"id": "x", "context": "c"}]}, headers=AUTH)  # one E102
    after = client.get("/metrics", headers=AUTH).text

    def value(text, name, **labels):
        lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        m = re.search(rf"^{name}\{{{lab}\}} ([0-9.e+]+)$", text, re.M)
        return float(m.group(1)) if m else 0.0

    assert value(after, "evqual_requests_total", endpoint="score", status="200") == \
        value(before, "evqual_requests_total", endpoint="score", status="200") + 1
    assert value(after, "evqual_item_errors_total", code="E102") == value(before, "evqual_item_errors_total",
                                                                           code="E102") + 1
    assert sum(value(after, "evqual_decisions_total", decision=d) for d in ("show", "warn", "regenerate", "abstain",
                                                                             "escalate")) >= 1
    assert "evqual_model_info{" in after and "evqual_request_seconds_bucket" in after


# ------------------------------------------------------------------------------------------------ fuzz

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=12)
_bodies = st.one_of(
    _json.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"items": st.lists(_json, max_size=4)}).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({}, optional={"query": _json, "context": _json, "output": _json, "id": _json,
                                        "policy": _json, "verify": _json}).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
)


@given(body=_bodies, path=st.sampled_from(["/v1/score", "/v1/verify"]))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_malformed_requests_never_fail_the_service(served, body, path):
    client, _ = served
    r = client.post(path, content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code in (200, 400, 413, 422), (r.status_code, r.text[:300])
    assert isinstance(r.json(), dict)


def test_service_is_healthy_after_the_fuzz(served):
    client, _ = served
    assert client.get("/readyz").status_code == 200
    assert client.post("/v1/score", json=ITEM, headers=AUTH).status_code == 200


# ------------------------------------------------------------------------------------------------ shutdown

def _children(pid: int) -> set:
    """Child processes of ``pid``, started by any of its threads (Linux /proc)."""
    out = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.update(int(x) for x in fh.read().split())
        except OSError:
            pass
    return out


@pytest.mark.parametrize("workers,group", [(1, False), (2, False), (2, True)])
def test_sigterm_during_load_loses_no_audit_record(tmp_path, workers, group):
    """`evqual serve` in its own process; SIGTERM while clients post (to the server, or to its whole process
    group as a supervisor may send it); every answer a client got is in the audit log, every audit line is
    whole; with two workers, the scoring processes are gone after."""
    if workers > 1 and not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    from evqual.scoring import usable_cores

    effective = min(workers, usable_cores())  # what evqual serve runs: --workers is capped at the usable cores
    audit = tmp_path / "audit.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "evqual", "serve", "--port", "0", "--audit-log", str(audit),
                             "--workers", str(workers)], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "EVQUAL_API_TOKENS": ""})
    try:
        url, lines = None, []
        deadline = time.monotonic() + 60
        while url is None:
            assert time.monotonic() < deadline, "no start-up line:\n" + "".join(lines)
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "".join(lines)
            lines.append(line)
            m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
            url = m.group(1) if m else None
        ok: list = []
        stop = threading.Event()

        def client():
            with httpx.Client(base_url=url, timeout=60) as c:
                for n in range(40):
                    if stop.is_set():
                        return
                    try:
                        r = c.post("/v1/score", json={"items": [{**ITEM, "id": f"{threading.get_ident()}-{n}-{k}"}
                                                                for k in range(4)]})
                    except httpx.HTTPError:
                        return
                    if r.status_code == 200:
                        ok.append(r.json())

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        while len(ok) < 3 and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        scoring = _children(proc.pid)
        if group:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGTERM)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        # uvicorn shuts down gracefully, then re-raises the signal (so the exit status is -SIGTERM)
        assert proc.wait(timeout=60) in (0, -signal.SIGTERM)
        rest = proc.stdout.read()
        assert "Finished server process" in rest, rest
        if effective > 1:  # (with one usable core --workers 2 is capped to 1: no scoring process; issue 39)
            assert len(scoring) >= effective
            deadline = time.monotonic() + 30
            while any(os.path.exists(f"/proc/{p}") for p in scoring) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not any(os.path.exists(f"/proc/{p}") for p in scoring), "a scoring process outlived the server"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert ok, "no request succeeded before the signal"
    records = read_audit_log(audit)  # raises on a torn line
    logged = {(r["request_id"], r["id"]) for r in records}
    for body in ok:
        for res in body["results"]:
            assert (body["request_id"], res["id"]) in logged


def test_a_killed_scoring_process_costs_one_503_and_the_pool_is_restarted(scorer):
    """workers=2: the scoring processes are shared by every connection; SIGKILL one of them (as the OOM
    killer would), and requests after the 503 are scored again."""
    cfg = ServeConfig(workers=2, request_timeout=120)
    with _Server(create_app(cfg, scorer=scorer)) as srv, httpx.Client(base_url=srv.url, timeout=120) as client:
        assert client.post("/v1/score", json=ITEM).status_code == 200
        service = srv.server.config.app.state.service

        def scoring_pids():
            return {p for lane in service._lanes for p in lane._processes}

        pids = _children(os.getpid()) & scoring_pids()
        assert len(pids) == 2
        (victim,) = service._lanes[service._lane_for([ITEM])]._processes  # the process ITEM's context goes to
        os.kill(victim, signal.SIGKILL)
        statuses = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(statuses) < 20:
            r = client.post("/v1/score", json=ITEM)
            statuses.append(r.status_code)
            if r.status_code == 200:
                break
            assert r.status_code == 503 and "restarted" in r.json()["error"], r.text
        assert statuses[-1] == 200, statuses
        assert len(scoring_pids()) == 2 and scoring_pids() & pids == pids - {victim}  # the dead one replaced
        assert client.get("/readyz").status_code == 200


def test_a_context_goes_to_one_scoring_process_unless_it_is_busier(scorer):
    """workers=2: answers to one context are scored where that context is indexed already; a lane with two
    requests more in hand than another gives the next request away."""
    cfg = ServeConfig(workers=2, request_timeout=120)
    app = create_app(cfg, scorer=scorer)
    with _Server(app) as srv:
        service = app.state.service
        items = [{"context": [f"Passage {k} about the bridge, which opened in 193{k}."], "output": "It opened."}
                 for k in range(12)]
        lanes = [service._lane_for([it]) for it in items]
        assert set(lanes) == {0, 1}  # twelve contexts spread over both
        assert all(service._lane_for([it]) == lane for it, lane in zip(items, lanes))  # and stay there
        preferred = lanes[0]
        service._in_flight[preferred] = 2
        assert service._lane_for([items[0]]) == 1 - preferred
        service._in_flight[preferred] = 1
        assert service._lane_for([items[0]]) == preferred
        service._in_flight[preferred] = 0
        with httpx.Client(base_url=srv.url, timeout=120) as client:
            assert all(client.post("/v1/score", json=it).status_code == 200 for it in items[:4])
        assert service._in_flight == [0, 0]


# ------------------------------------------------------------------------------------------------ config, CLI

def test_config_and_tokens(tmp_path):
    with pytest.raises(ValueError, match="workers"):
        ServeConfig(workers=0)
    with pytest.raises(ValueError, match="port"):
        ServeConfig(port=70000)
    with pytest.raises(ValueError, match="request_timeout"):
        ServeConfig(request_timeout=float("nan"))
    cfg = ServeConfig(cors_origins=["https://a.example"], tokens=("x" * 16,))
    back = ServeConfig.from_env(cfg.to_env(), tokens=cfg.tokens)
    assert back == cfg and "x" * 16 not in cfg.to_env() and "x" * 16 not in repr(cfg)
    f = tmp_path / "tokens.txt"
    f.write_text("# ops\nabcdefghijklmnop0\n\nabcdefghijklmnop0\n")
    assert load_tokens(env="qrstuvwxyz0123456", tokens_file=f) == ("qrstuvwxyz0123456", "abcdefghijklmnop0")
    f.write_text("short\n")
    with pytest.raises(ValueError, match=str(f)):
        load_tokens(tokens_file=f)


def test_cli_usage_errors(tmp_path, monkeypatch, capsys):
    from evqual.cli import main

    monkeypatch.setenv("EVQUAL_API_TOKENS", "tiny")
    assert main(["serve"]) == 2
    assert "at least 16" in capsys.readouterr().err
    monkeypatch.delenv("EVQUAL_API_TOKENS")
    assert main(["serve", "--model", str(tmp_path / "none")]) == 2
    assert "cannot load model" in capsys.readouterr().err
    assert main(["serve", "--max-batch", "0"]) == 2
    assert "max_batch" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "fastapi", None)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert 'evqual[server]' in err and "fastapi" in err


def test_readme_curl_example_runs(scorer):
    """The README's curl example, run as written against a server without auth (its port swapped in)."""
    import shutil
    from pathlib import Path

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    m = re.search(r"```bash\n(curl -s http://127\.0\.0\.1:8000/v1/score.*?)\n```", readme, re.S)
    assert m, "the README's curl example is missing"
    with _Server(create_app(ServeConfig(), scorer=scorer)) as srv:
        cmd = m.group(1).replace("http://127.0.0.1:8000", srv.url)
        done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["decision"] in ("show", "warn", "regenerate", "abstain", "escalate") and 0 <= result["risk"] <= 1
