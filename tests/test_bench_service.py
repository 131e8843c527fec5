"""scripts/bench_service.py on the embedded sample: a real server, a few answers, both modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_service.py"


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


def test_load_runs_against_in_process(tmp_path):
    out = tmp_path / "svc.json"
    r = _run("--answers", "4", "--workers", "1", "--concurrency", "1,2", "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["in_process"]["answers"] == 4
    assert [(x["workers"], x["concurrency"]) for x in res["runs"]] == [(1, 1), (1, 2)]
    assert all(x["errors"] == 0 and x["requests"] == 4 and x["p50_ms"] > 0 for x in res["runs"])
    assert res["overhead_p50_ms"] is not None
    assert res["client"] == "raw" and res["httpx_client_c1"]["errors"] == 0
    paired = res["paired_c1"]  # in-process and service, answer by answer
    assert paired["pairs"] == 8 and paired["overhead_p50_ms"] == res["overhead_p50_ms"]
    parts = paired["parts_p50_ms"]  # from the Server-Timing header of every answer
    assert set(parts) == {"scoring_job_over_in_process", "app_around_job", "uvicorn_socket_client"}
    assert all(x["server_score_p50_ms"] <= x["server_app_p50_ms"] for x in res["runs"])
    floor = res["floor_c1_p50_ms"]  # servers that score nothing, paired the same way
    assert set(floor) == {"asgi", "fastapi", "fastapi_thread", "fastapi_thread_job", "job_ms"}
    assert floor["job_ms"] == paired["in_process_p50_ms"]
    assert all(floor[k] > 0 for k in ("asgi", "fastapi", "fastapi_thread"))
    assert floor["fastapi_thread_job"] > -1  # less the busy job's length: it ran (else about -job_ms)


def test_no_floor_skips_the_floor_servers(tmp_path):
    out = tmp_path / "svc.json"
    r = _run("--answers", "2", "--workers", "1", "--concurrency", "1", "--no-floor", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "floor_c1_p50_ms" not in json.loads(out.read_text())


def test_floor_servers_answer_the_body_back():
    import importlib.util

    pytest.importorskip("httpx")
    spec = importlib.util.spec_from_file_location("bench_service", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from starlette.testclient import TestClient

    for kind in mod.FLOOR_KINDS:
        with TestClient(mod._floor_app(kind, job_ms=1.0)) as client:
            r = client.post("/v1/score", content=b'{"a": 1}')
            assert r.status_code == 200 and r.json() == {"a": 1}, kind


def test_raw_client_reads_status_and_headers_and_recovers_from_a_dead_peer():
    import asyncio
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_service", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    async def main():
        replies = [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nServer-Timing: app;dur=1.5, score;dur=1.0\r\n\r\n{}",
                   b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n"]

        async def handle(reader, writer):
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
            writer.write(replies.pop(0))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = mod._RawConnection("127.0.0.1", port)
        first = await asyncio.wait_for(conn.post("/v1/score", b"{}"), 10)
        second = await asyncio.wait_for(conn.post("/v1/score", b"{}"), 10)  # the peer closed: an error
        third = await asyncio.wait_for(conn.post("/v1/score", b"{}"), 10)  # a new connection
        await conn.close()
        server.close()
        return first, second, third

    (status, headers), (status2, _), (status3, headers3) = asyncio.run(main())
    assert status == 200 and mod._server_ms(headers) == (1.5, 1.0)
    assert status2 == -1
    assert status3 == 503 and mod._server_ms(headers3) == (None, None)


def test_soak_samples_rss(tmp_path):
    out = tmp_path / "soak.json"
    r = _run("--answers", "3", "--workers", "1", "--concurrency", "2", "--soak", "3", "--sample", "1",
             "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["errors"] == 0 and res["requests"] >= 3 and len(res["samples"]) >= 3
    assert res["rss_mb_first"] > 10


def test_usage_errors():
    assert _run("--workers", "a").returncode == 2
    assert _run("--answers", "0").returncode == 2
