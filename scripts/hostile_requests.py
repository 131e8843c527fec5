"""The denial-of-service attacks of issue 39 against a real `evqual serve`, measured (benchmark, not a test).

    python scripts/hostile_requests.py --json docs/bench/issue39_hostile.json

Starts ``evqual serve`` on 127.0.0.1 (an OS-chosen port, ``--request-timeout 5 --max-queue 2``) and runs, one
after the other, each bounded in count and time:

* **slow request**: the issue's 122 KB request (a context of 6,000 clauses "it was 12.5 km", an answer of
  1,500 sentences "It was 12 m."; :func:`evqual.bench.hostile_texts`), then one ordinary request every 0.5 s:
  the seconds to the slow request's answer (200 or 503) and until an ordinary request is answered 200 again;
  the same for the issue's 7.2 MB word salad (**slow salad**), which cannot be scored within the timeout;
* **stalled uploads**: 30 connections that each send 7.4 MB of a declared 7.5 MB body and stall: how each
  is answered (408, 503) and the server's resident memory before, at the peak and after;
* **slowloris**: 300 connections that send an unfinished header line: how many the server closed within
  ``--header-timeout`` + 5 s.

Every connection is to 127.0.0.1; the server is stopped at the end.  Exit status 2 when the server does not
start.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from evqual.bench import rss_mb


def start_server(extra: list) -> tuple:
    proc = subprocess.Popen([sys.executable, "-m", "evqual", "serve", "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "EVQUAL_API_TOKENS": ""})
    deadline = time.monotonic() + 120
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain the log
            return proc, int(m.group(1))
    proc.kill()
    raise SystemExit("evqual serve did not start:\n" + "".join(lines[-20:]))


def post(port: int, body: bytes, timeout: float = 120.0) -> tuple:
    """``(status, seconds)`` of one POST /v1/score on a new connection."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = b""
        while b"\r\n" not in head:
            chunk = s.recv(65536)
            if not chunk:
                break
            head += chunk
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return status, time.monotonic() - t0


def slow_request(port: int, shape=("numbers", 95_000, 20_800)) -> dict:
    from evqual.bench import hostile_texts

    context, output = hostile_texts(*shape)
    big = json.dumps({"query": "q?", "context": context, "output": output}).encode()
    small = json.dumps({"query": "When did it open?", "context": ["The bridge opened in 1932."],
                        "output": "It opened in 1932."}).encode()
    got = {}

    def first():
        got["status"], got["seconds"] = post(port, big)

    t0 = time.monotonic()
    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.5)
    free_after, refused = None, 0
    while time.monotonic() - t0 < 300:
        status, _ = post(port, small)
        if status == 200 and not t.is_alive():
            free_after = time.monotonic() - t0
            break
        if status == 200 and t.is_alive():
            free_after = time.monotonic() - t0  # answered while the slow one is still out
            break
        refused += 1
        time.sleep(0.5)
    t.join(timeout=300)
    return {"request_bytes": len(big), "slow_status": got.get("status"), "slow_seconds": round(got.get("seconds", -1), 2),
            "ordinary_answered_after_s": None if free_after is None else round(free_after, 2),
            "ordinary_refused_before": refused}


def stalled_uploads(port: int, pid: int, n: int = 30, sent: int = 7_400_000, declared: int = 7_500_000) -> dict:
    before = rss_mb(pid)
    socks, peak = [], before
    head = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode())
    payload = b"{" + b" " * (sent - 1)

    def one():
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        try:
            s.sendall(head)
            view, off = memoryview(payload), 0
            while off < len(payload):
                off += s.send(view[off:off + 262144])
        except OSError:
            pass
        socks.append(s)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    statuses = []
    end = time.monotonic() + 90
    for t in threads:
        t.join(timeout=max(0.0, end - time.monotonic()))
    while len(statuses) < len(socks) and time.monotonic() < end:
        peak = max(peak, rss_mb(pid))
        time.sleep(0.2)
        statuses = []
        for s in socks:
            s.settimeout(0.01)
            try:
                data = s.recv(256, socket.MSG_PEEK)
                statuses.append(int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0)
            except (socket.timeout, BlockingIOError):
                pass
            except OSError:
                statuses.append(0)
    for s in socks:
        s.close()
    time.sleep(1.0)
    return {"connections": n, "bytes_sent_each": sent, "answered": len(statuses),
            "statuses": {str(k): statuses.count(k) for k in sorted(set(statuses))},
            "rss_before_mb": round(before, 1), "rss_peak_mb": round(peak, 1), "rss_after_mb": round(rss_mb(pid), 1)}


def slowloris(port: int, n: int = 300, wait: float = 15.0) -> dict:
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-a: ")
            socks.append(s)
        except OSError:
            break
    t0 = time.monotonic()
    closed = set()
    while time.monotonic() - t0 < wait and len(closed) < len(socks):
        for i, s in enumerate(socks):
            if i in closed:
                continue
            s.settimeout(0.001)
            try:
                if s.recv(1) == b"":
                    closed.add(i)
            except (socket.timeout, BlockingIOError):
                pass
            except OSError:
                closed.add(i)
        time.sleep(0.2)
    seconds = time.monotonic() - t0
    for s in socks:
        s.close()
    return {"connections": len(socks), "closed_by_server": len(closed), "within_s": round(seconds, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", required=True, help="where to write the result JSON")
    ap.add_argument("--only", default="slow,salad,stalled,slowloris", help="comma-separated parts (default: all)")
    args = ap.parse_args(argv)
    proc, port = start_server(["--request-timeout", "5", "--max-queue", "2"])
    out = {"server": "evqual serve --request-timeout 5 --max-queue 2 (other limits at their defaults)"}
    try:
        parts = args.only.split(",")
        if "slow" in parts:
            out["slow_request"] = slow_request(port)
            print("slow request:", out["slow_request"], flush=True)
        if "salad" in parts:
            out["slow_salad"] = slow_request(port, ("salad", 6_200_000, 990_000))
            print("slow salad:", out["slow_salad"], flush=True)
        if "stalled" in parts:
            out["stalled_uploads"] = stalled_uploads(port, proc.pid)
            print("stalled uploads:", out["stalled_uploads"], flush=True)
        if "slowloris" in parts:
            out["slowloris"] = slowloris(port)
            print("slowloris:", out["slowloris"], flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
