"""Load benchmark of `evqual serve`: throughput and latency against in-process scoring of the same answers.

    python scripts/bench_service.py --data ../shared/data/ragtruth --answers 400 --json docs/bench/service.json
    python scripts/bench_service.py --data ../shared/data/ragtruth --soak 600 --workers 2 --concurrency 8 \\
        --json docs/bench/service_soak.json            # a 10-minute soak with the server's RSS sampled

For each ``--workers`` count a real ``evqual serve`` process is started on 127.0.0.1 (a free port) and,
for each ``--concurrency`` C, C clients post the first ``--answers`` answers one per request
(``POST /v1/score``, a single item each) as fast as the service answers; then it is stopped with SIGTERM.
Reported per run: answers/s, p50 and p99 latency (client side, request sent to response read), non-200
answers, and the server's own p50s from its ``Server-Timing`` header (the whole request in the app, and
the scoring job).  In-process scoring (``Scorer.score_batch([item])`` per answer, the Python API) of the
same answers in this process is the throughput baseline.  ``overhead_p50_ms`` is measured in pairs at one
worker and one client (:func:`paired_overhead`): each answer scored in-process and sent to the service
alternately, the median of the differences, split into the scoring job's extra cost (the request's
JSONL validated and its lines written, as ``evqual score`` does), the app around the job, and the rest
(uvicorn, the socket, the client).  ``floor_c1_p50_ms`` measures, paired the same way, servers that score
nothing (they parse the body and send it back): a bare ASGI app on the same uvicorn, a FastAPI route like
the service's, that route with the service's hop to one scoring thread and back, and that hop to a thread
kept busy as long as in-process scoring takes (p50), so that the event loop and the client wait as long as
they wait for the service: the least overhead this HTTP stack and client can have on this machine
(``--no-floor`` skips them).

The default load generator (``--client raw``) is an asyncio driver of its own: one HTTP/1.1 keep-alive
connection per client on asyncio streams, the bodies encoded once.  It runs on the same 2-core machine
as the service, so its own cost per request is charged to the service's latency; ``httpx.AsyncClient``
cost 0.4-0.9 ms more per 8 KB answer than this driver in our runs (every run reports an httpx client at
one worker and one client, ``httpx_client_c1``, for comparison), and locust, a Python client too, more.  ``--client httpx``
drives every run with httpx.  The soak mode keeps C clients posting for ``--soak`` seconds and samples
the resident memory of the server and its scoring processes every ``--sample`` seconds.

Each answer is warmed once before its timed pass (server and in-process alike), so contexts are
indexed as in a service that has seen them, as ``bench.py score`` does.  Exit status 2 on usage errors
or when the server cannot start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings

import numpy as np


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _items(data, n):
    from evqual.data import load_data, sample_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples[:n]
    return [{"id": str(e.id), "query": e.query, "context": e.context, "output": e.output} for e in examples]


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children, MB (Linux /proc)."""
    total = 0
    pids = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tasks = []
    for task in tasks:  # children started by any thread (the scoring processes are started by one)
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                pids += [int(x) for x in fh.read().split()]
        except OSError:
            pass
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


class _Service:
    def __init__(self, workers: int, model=None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "evqual", "serve", "--port", str(self.port), "--workers", str(workers),
               "--log-level", "warning", "--no-context", "--max-queue", "1024"]
        if model:
            cmd += ["--model", str(model)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "EVQUAL_API_TOKENS": ""})

    def wait_ready(self, timeout: float = 120.0):
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"evqual serve exited: {self.proc.stderr.read()[-2000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"evqual serve not ready after {timeout:g} s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class _RawConnection:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams, for the ``raw`` load generator.

    It sends a POST with a pre-encoded JSON body and reads the status line, the headers and a
    ``Content-Length`` body (what uvicorn answers with); anything else is an error of that request.
    """

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes):
        """``(status, headers)`` of one request; the connection is reopened after an error."""
        try:
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.writer.write(b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n%s" % (path.encode(), self.host.encode(), self.port,
                                                                      len(body), body))
            await self.writer.drain()
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if "content-length" not in headers:
                raise ValueError("no Content-Length in the response")
            await self.reader.readexactly(int(headers["content-length"]))
            if headers.get("connection", "").lower() == "close":
                await self.close()
            return status, headers
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await self.close()
            return -1, {}

    async def close(self):
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except OSError:
                pass
        self.reader = self.writer = None


def _server_ms(headers) -> tuple:
    """``(app_ms, score_ms)`` from a ``Server-Timing`` header (``None`` where absent)."""
    app = score = None
    for part in headers.get("server-timing", "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        try:
            if name == "app":
                app = float(dur)
            elif name == "score":
                score = float(dur)
        except ValueError:
            pass
    return app, score


async def _drive(url, items, concurrency, *, duration=None, on_tick=None, tick=5.0, client="raw"):
    """Post ``items`` (one per request) with ``concurrency`` clients; with ``duration``, cycle through them
    until it has passed.  Returns ``(latencies_s, statuses, wall_s, server)``: ``server`` the
    ``(app_ms, score_ms)`` of each answered request from its ``Server-Timing`` header."""
    import httpx

    latencies, statuses, server = [], [], []
    nxt = 0
    bodies = [json.dumps(it).encode("utf-8") for it in items]  # encoded once: the client's cost stays small
    host, port = url.rsplit("/", 1)[1].rsplit(":", 1)
    t0 = time.perf_counter()
    stop_at = None if duration is None else t0 + duration
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def one(post):
        nonlocal nxt
        while True:
            if stop_at is None:
                if nxt >= len(items):
                    return
                body = bodies[nxt]
            else:
                if time.perf_counter() >= stop_at:
                    return
                body = bodies[nxt % len(items)]
            nxt += 1
            start = time.perf_counter()
            status, headers = await post(body)
            latencies.append(time.perf_counter() - start)
            statuses.append(status)
            if status == 200:
                server.append(_server_ms(headers))

    async def ticker():
        while stop_at is not None and time.perf_counter() < stop_at:
            await asyncio.sleep(tick)
            on_tick(time.perf_counter() - t0)

    extra = [ticker()] if on_tick is not None and duration is not None else []
    if client == "raw":
        conns = [_RawConnection(host, int(port)) for _ in range(concurrency)]
        try:
            await asyncio.gather(*(one(lambda b, c=c: c.post("/v1/score", b)) for c in conns), *extra)
        finally:
            for c in conns:
                await c.close()
    else:
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as hc:
            async def post(body):
                try:
                    r = await hc.post("/v1/score", content=body, headers={"Content-Type": "application/json"})
                    return r.status_code, r.headers
                except httpx.HTTPError:
                    return -1, {}
            await asyncio.gather(*(one(post) for _ in range(concurrency)), *extra)
    return latencies, statuses, time.perf_counter() - t0, server


def _summary(latencies, statuses, wall, server=()):
    ms = np.array(latencies) * 1000.0
    ok = sum(1 for s in statuses if s == 200)
    out = {"requests": len(statuses), "errors": len(statuses) - ok, "answers_per_s": round(ok / wall, 1),
           "p50_ms": round(float(np.percentile(ms, 50)), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2)}
    app = [a for a, _ in server if a is not None]
    score = [s for _, s in server if s is not None]
    if app and score:
        out["server_app_p50_ms"] = round(float(np.percentile(app, 50)), 2)
        out["server_score_p50_ms"] = round(float(np.percentile(score, 50)), 2)
    return out


def in_process(items, model=None) -> dict:
    """Scoring each item alone in this process (``Scorer.score_batch([item])``), warmed once."""
    scorer = _scorer(model)
    for it in items:
        scorer.score_batch([it])
    times = []
    for it in items:
        t = time.perf_counter()
        scorer.score_batch([it])
        times.append(time.perf_counter() - t)
    ms = np.array(times) * 1000.0
    return {"answers": len(items), "answers_per_s": round(len(items) / float(np.sum(times)), 1),
            "p50_ms": round(float(np.percentile(ms, 50)), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2)}


def _paired(url, items, scorer, rounds: int):
    """Per answer (``rounds`` passes after a warm-up of both sides): in-process ``score_batch([item])`` and
    one request to ``url``, in alternating order; arrays of local ms, remote ms, and the ``Server-Timing``
    app and score ms (NaN where absent)."""
    bodies = [json.dumps(it).encode("utf-8") for it in items]
    host, port = url.rsplit("/", 1)[1].rsplit(":", 1)

    async def run():
        conn = _RawConnection(host, int(port))
        local, remote, app, score = [], [], [], []
        try:
            for it, body in zip(items, bodies):  # warm both
                scorer.score_batch([it])
                await conn.post("/v1/score", body)
            for r in range(rounds):
                for i, (it, body) in enumerate(zip(items, bodies)):
                    pair = {}
                    for side in (("local", "remote") if (i + r) % 2 else ("remote", "local")):
                        t = time.perf_counter()
                        if side == "local":
                            scorer.score_batch([it])
                        else:
                            status, headers = await conn.post("/v1/score", body)
                            if status != 200:
                                raise RuntimeError(f"the service answered {status}")
                            a, s = _server_ms(headers)
                        pair[side] = time.perf_counter() - t
                    local.append(pair["local"] * 1000)
                    remote.append(pair["remote"] * 1000)
                    app.append(np.nan if a is None else a)
                    score.append(np.nan if s is None else s)
        finally:
            await conn.close()
        return np.array(local), np.array(remote), np.array(app, dtype=float), np.array(score, dtype=float)

    return asyncio.run(run())


def _med(x) -> float:
    return round(float(np.median(x)), 2)


_SCORERS: dict = {}


def _scorer(model=None):
    """The in-process scorer of ``model``, loaded once per run (the baseline, the pairs and the floors)."""
    if model not in _SCORERS:
        from evqual.scoring import Scorer

        _SCORERS[model] = Scorer.load(model)
    return _SCORERS[model]


def paired_overhead(url, items, model=None, *, rounds: int = 2) -> dict:
    """The service's per-request overhead at one client, measured in pairs: for each answer (``rounds``
    passes, both sides warmed), in-process scoring (``Scorer.score_batch([item])``) and one request to the
    service, in alternating order, so both see the same moment of a shared machine.  ``overhead_p50_ms``
    is the median of the per-answer differences; its parts come from the ``Server-Timing`` header."""
    local, remote, app, score = _paired(url, items, _scorer(model), rounds)
    return {"pairs": len(local), "in_process_p50_ms": _med(local), "service_p50_ms": _med(remote),
            "overhead_p50_ms": _med(remote - local),
            "parts_p50_ms": {"scoring_job_over_in_process": _med(score - local),
                             "app_around_job": _med(app - score),
                             "uvicorn_socket_client": _med(remote - app)}}


# ------------------------------------------------------------------ the HTTP floor
FLOOR_KINDS = ("asgi", "fastapi", "fastapi_thread", "fastapi_thread_job")


def _busy(seconds: float, body: bytes):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    return json.loads(body)


def _floor_app(kind: str, job_ms: float = 0.0):
    """A server that scores nothing, for the floor of the overhead: it reads the request's body, parses
    it as JSON and answers the body back, as a bare ASGI app (``asgi``), as a FastAPI route like the
    service's (``fastapi``), as that route with the service's hop to a scoring thread and back
    (``fastapi_thread``, the parse done there), or with that thread busy for ``job_ms`` first
    (``fastapi_thread_job``: a job as long as scoring, so the event loop and the client sleep as long as
    they do for the service).  Same uvicorn, same client, same bodies as the service."""
    if kind == "asgi":
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                while True:
                    msg = await receive()
                    if msg["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    else:
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            if scope["type"] != "http":
                return
            chunks, more = [], True
            while more:
                msg = await receive()
                chunks.append(msg.get("body", b""))
                more = msg.get("more_body", False)
            body = b"".join(chunks)
            json.loads(body)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
        return app

    import concurrent.futures

    import fastapi
    from fastapi.responses import Response

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1) if kind.startswith("fastapi_thread") else None
    app = fastapi.FastAPI(docs_url=None, redoc_url=None)

    async def score(request):
        body = await request.body()
        if pool is None:
            json.loads(body)
        else:
            await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(pool, _busy, job_ms / 1000, body), 60)
        return Response(body, media_type="application/json")

    score.__annotations__ = {"request": fastapi.Request}  # not a string (this module's annotations are)
    app.post("/v1/score")(score)
    return app


def _serve_floor(kind: str, port: int, job_ms: float) -> None:
    import uvicorn

    uvicorn.run(_floor_app(kind, job_ms), host="127.0.0.1", port=port, log_level="warning",
                timeout_graceful_shutdown=None)


class _FloorService(_Service):
    def __init__(self, kind: str, job_ms: float = 0.0):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--floor-server", kind,
                                      str(self.port), str(job_ms)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait_ready(self, timeout: float = 60.0):
        if self.proc.poll() is None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return
                except OSError:
                    if self.proc.poll() is not None:
                        break
                    time.sleep(0.1)
        raise RuntimeError(f"the floor server did not start: {self.proc.stderr.read()[-2000:]}")


def paired_floor(items, model=None, *, rounds: int = 2, kinds=FLOOR_KINDS, job_ms: float = 0.0) -> dict:
    """The overhead's floor on this machine: p50 ms of a request to each :func:`_floor_app` (nothing
    scored), paired with in-process scoring exactly as :func:`paired_overhead` pairs the service; for
    ``fastapi_thread_job`` the p50 of the request's time less its ``job_ms`` busy job."""
    scorer = _scorer(model)
    out = {}
    for kind in kinds:
        busy = job_ms if kind == "fastapi_thread_job" else 0.0
        svc = _FloorService(kind, busy)
        try:
            svc.wait_ready()
            _, remote, _, _ = _paired(svc.url, items, scorer, rounds)
        finally:
            svc.stop()
        out[kind] = _med(remote - busy)
    out["job_ms"] = job_ms
    return out


def bench(data=None, *, answers=400, workers=(1, 2), concurrency=(1, 8, 32), model=None, client="raw",
          floor=True) -> dict:
    items = _items(data, answers)
    out = {"answers": len(items), "cpu_count": os.cpu_count(), "client": client,
           "in_process": in_process(items, model), "runs": []}
    for w in workers:
        svc = _Service(w, model)
        try:
            svc.wait_ready()
            asyncio.run(_drive(svc.url, items, max(concurrency), client=client))  # warm every worker on every answer
            for c in concurrency:
                lat, st, wall, server = asyncio.run(_drive(svc.url, items, c, client=client))
                out["runs"].append({"workers": w, "concurrency": c, **_summary(lat, st, wall, server)})
            if w == 1:
                out["paired_c1"] = paired_overhead(svc.url, items, model)
                if floor:
                    out["floor_c1_p50_ms"] = paired_floor(items, model,
                                                          job_ms=out["paired_c1"]["in_process_p50_ms"])
            if w == workers[0] and client == "raw":  # what a Python caller on httpx sees, for comparison
                lat, st, wall, server = asyncio.run(_drive(svc.url, items, 1, client="httpx"))
                out["httpx_client_c1"] = {"workers": w, "concurrency": 1, **_summary(lat, st, wall, server)}
        finally:
            svc.stop()
    paired = out.get("paired_c1")
    out["overhead_p50_ms"] = paired["overhead_p50_ms"] if paired else None
    ratios = {}
    for c in concurrency:
        r1 = next((r for r in out["runs"] if r["workers"] == 1 and r["concurrency"] == c), None)
        r2 = next((r for r in out["runs"] if r["workers"] == 2 and r["concurrency"] == c), None)
        if r1 and r2 and r1["answers_per_s"]:
            ratios[str(c)] = round(r2["answers_per_s"] / r1["answers_per_s"], 2)
    out["throughput_2_over_1"] = ratios
    return out


def soak(data=None, *, answers=400, workers=2, concurrency=8, seconds=600.0, sample=10.0, model=None,
         client="raw") -> dict:
    items = _items(data, answers)
    svc = _Service(workers, model)
    samples = []
    try:
        svc.wait_ready()
        asyncio.run(_drive(svc.url, items, concurrency, client=client))  # warm
        samples.append((0.0, _rss_mb(svc.proc.pid)))
        lat, st, wall, server = asyncio.run(_drive(
            svc.url, items, concurrency, duration=seconds, client=client, tick=sample,
            on_tick=lambda t: samples.append((round(t, 1), _rss_mb(svc.proc.pid)))))
        samples.append((round(wall, 1), _rss_mb(svc.proc.pid)))
    finally:
        svc.stop()
    rss = [r for _, r in samples]
    half = len(rss) // 2
    return {"workers": workers, "concurrency": concurrency, "seconds": round(wall, 1),
            **_summary(lat, st, wall, server),
            "rss_mb_first": round(rss[0], 1), "rss_mb_last": round(rss[-1], 1), "rss_mb_max": round(max(rss), 1),
            "rss_mb_second_half_growth": round(rss[-1] - rss[half], 1) if rss else None,
            "samples": [[t, round(r, 1)] for t, r in samples]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="load benchmark of evqual serve (see the module docstring); a full "
                                             "run takes about 2-4 minutes, --soak S adds S seconds")
    ap.add_argument("--data", default=None, help="dataset (default: the embedded sample)")
    ap.add_argument("--answers", type=int, default=400, help="answers posted per run (default 400)")
    ap.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    ap.add_argument("--concurrency", default="1,8,32", help="client counts (default 1,8,32)")
    ap.add_argument("--model", default=None, help="model folder (default: the shipped model)")
    ap.add_argument("--soak", type=float, default=None, metavar="S",
                    help="instead: a soak of S seconds at the first --workers and --concurrency values")
    ap.add_argument("--sample", type=float, default=10.0, help="soak: seconds between RSS samples (default 10)")
    ap.add_argument("--client", choices=("raw", "httpx"), default="raw",
                    help="load generator: raw (asyncio streams, HTTP/1.1 keep-alive; default) or httpx")
    ap.add_argument("--json", default=None, help="also write the result here")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the floor runs (servers that score nothing: a bare ASGI app, a FastAPI route, "
                         "that route with the hop to a thread, and that thread busy as long as scoring)")
    ap.add_argument("--floor-server", nargs=3, metavar=("KIND", "PORT", "JOB_MS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.floor_server:
        _serve_floor(args.floor_server[0], int(args.floor_server[1]), float(args.floor_server[2]))
        return 0
    try:
        workers = tuple(int(x) for x in args.workers.split(","))
        conc = tuple(int(x) for x in args.concurrency.split(","))
    except ValueError:
        ap.error("--workers and --concurrency take comma-separated integers")
    if args.answers < 1 or min(workers) < 1 or min(conc) < 1 or (args.soak is not None and args.soak <= 0):
        ap.error("--answers, --workers, --concurrency and --soak must be positive")
    try:
        import httpx  # noqa: F401
    except ImportError:
        print("bench_service: needs httpx and the server extra: pip install -e \".[server,dev]\"", file=sys.stderr)
        return 2
    try:
        if args.soak is not None:
            res = soak(args.data, answers=args.answers, workers=workers[0], concurrency=conc[0], seconds=args.soak,
                       sample=args.sample, model=args.model, client=args.client)
        else:
            res = bench(args.data, answers=args.answers, workers=workers, concurrency=conc, model=args.model,
                        client=args.client, floor=not args.no_floor)
    except (RuntimeError, OSError, ValueError) as exc:
        print(f"bench_service: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(res, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
