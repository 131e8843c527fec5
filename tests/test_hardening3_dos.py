"""Hardening, third round (issue 39), part 1: denial of service.

Grouped by attack, as in issue 21.  Each test fails on the code before the fix (named in its docstring).
No test here times scoring against a target: speed and memory targets are met in ``bench.py sizes``; the
tests count work (what the engine reads, what a deadline stops) or check a limit's effect with bounds far
from the values measured.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import socket
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.data import make_example
from evqual.evidence import EvidenceEngine
from evqual.scoring import Policy, Scorer
from evqual.text import MAX_SENTENCE_CHARS, split_sentences


def number_dense(n_context: int, n_answer: int, seed: int = 0):
    """The issue's request: a context of short clauses with no sentence end ("it was 12.5 km ...") and an
    answer of short sentences ("It was 12 m.")."""
    rng = random.Random(seed)
    context = " ".join(f"it was {rng.randint(1, 999)}.{rng.randint(0, 9)} km" for _ in range(n_context))
    output = " ".join(f"It was {rng.randint(1, 999)} m." for _ in range(n_answer))
    return make_example(query="q?", context=context, output=output, task_type="QA")


# ------------------------------------------------------------------ 1a. a run-on text is read in bounded pieces

def test_a_run_on_sentence_is_cut_at_the_cap():
    """Before: a 95 KB context without a sentence end was one 'sentence', compared whole with every claim
    (44 s for the issue's 122 KB request, values x tokens in read_span)."""
    text = " ".join(f"it was {k}.5 km" for k in range(8000))
    spans = split_sentences(text)
    assert len(spans) > 1 and all(e - s <= MAX_SENTENCE_CHARS for s, e in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    # nothing is lost: every word of the text is in a piece, and no piece cuts a word (white space exists)
    assert " ".join(text[s:e] for s, e in spans).split() == text.split()
    # a run with no white space at all is cut too
    assert all(e - s <= MAX_SENTENCE_CHARS for s, e in split_sentences("x" * 50_000))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["it", "was", "12.5", "km", "The", "bridge", ".", "x" * 300, "\n", "  "]),
                max_size=400))
def test_sentences_are_ordered_stripped_and_capped_for_any_text(words):
    text = " ".join(words)
    spans = split_sentences(text)
    for s, e in spans:
        piece = text[s:e]
        assert 0 < e - s <= MAX_SENTENCE_CHARS and piece == piece.strip()
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


def test_the_engine_never_reads_a_span_longer_than_the_cap(monkeypatch):
    """Count, not time: every span the evidence engine reads (context sentences and claims) is at most the
    cap, whatever the input's shape.  Before, the engine read the issue's context as one 95 KB span."""
    from evqual.evidence import _engine

    longest = []
    real = _engine.read_span

    def spy(text, start=0, end=None, **kwargs):
        end = len(text) if end is None else end
        longest.append(end - start)
        return real(text, start, end, **kwargs)

    monkeypatch.setattr(_engine, "read_span", spy)
    ex = number_dense(6000, 300)
    EvidenceEngine().read(ex.output, [ex.context], ex.query)
    assert longest and max(longest) <= MAX_SENTENCE_CHARS


# ------------------------------------------------------------------ 1b. a deadline stops the job

def test_a_passed_deadline_stops_scoring_before_the_first_claim(monkeypatch):
    """Before: the only check was between blocks of 16 answers, so a timed-out job ran to its end."""
    from evqual._deadline import DeadlineExceeded, deadline
    from evqual.evidence import _engine

    claims = []
    real = _engine.EvidenceEngine._claim

    def counting(self, *args, **kwargs):
        claims.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_engine.EvidenceEngine, "_claim", counting)
    scorer = Scorer.load(policy=Policy())
    with pytest.raises(DeadlineExceeded):
        with deadline(time.monotonic() - 0.001):
            scorer.score_examples([number_dense(2000, 400)])
    assert claims == []
    # and without a deadline the same scorer goes on scoring (the limit was the block's only)
    assert scorer.score_examples([number_dense(20, 4)])[0].risk >= 0


def test_a_deadline_is_not_an_error_record_of_the_line(tmp_path):
    """DeadlineExceeded passes score_file's per-answer isolation (an Exception there is an E110 record):
    the run stops, it is not written as failed lines."""
    import io
    import json

    from evqual._deadline import DeadlineExceeded, deadline
    from evqual.scoring import score_file

    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"query": "q", "context": ["The bridge opened in 1932."],
                                        "output": f"It opened in 19{k:02d}."}) + "\n" for k in range(40)))
    out = io.StringIO()
    with pytest.raises(DeadlineExceeded):
        with deadline(time.monotonic() - 1):
            score_file(path, out, Scorer.load(policy=Policy()))
    assert "E110" not in out.getvalue()


def test_the_free_check_without_a_deadline_still_sees_every_open_deadline():
    """check_deadline returns at once while no deadline block is open in any thread (issue 41: it is called
    per claim); a block open in another thread, a nested or a failed block, still count."""
    import threading

    from evqual import _deadline
    from evqual._deadline import DeadlineExceeded, check_deadline, deadline

    assert _deadline._OPEN[0] == 0
    with pytest.raises(RuntimeError):
        with deadline(time.monotonic() - 1):
            with deadline(None):
                with pytest.raises(DeadlineExceeded):
                    check_deadline()
            raise RuntimeError("the block fails")
    assert _deadline._OPEN[0] == 0
    check_deadline()
    inside, leave, seen = threading.Event(), threading.Event(), []

    def other():
        with deadline(time.monotonic() - 1):
            inside.set()
            leave.wait(10)
            try:
                check_deadline()
            except DeadlineExceeded:
                seen.append("stopped")

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    check_deadline()  # this thread has no deadline: the other thread's does not stop it
    leave.set()
    t.join(10)
    assert seen == ["stopped"] and _deadline._OPEN[0] == 0


# ------------------------------------------------------------------ 1c. the service frees its worker

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from evqual.service import ServeConfig, create_app  # noqa: E402
from evqual.service._app import _Refused, _Service  # noqa: E402

ITEM = {"query": "When did it open?", "context": ["The bridge opened in 1932."], "output": "It opened in 1932."}


class _Server:
    """A uvicorn server on 127.0.0.1 (OS-chosen port) in a thread, with the service's connection limits."""

    def __init__(self, app, config: ServeConfig):
        import uvicorn

        from evqual.service import uvicorn_options

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                    **uvicorn_options(config)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


class _StubbornScorer(Scorer):
    """Scores normally, but an answer saying SLOW holds the worker: ``checks`` True loops on the deadline
    check (as the engine's loops do), False sleeps in one piece (a stage without a check)."""

    checks = True
    seconds = 20.0

    def score_examples(self, examples, **kwargs):
        if any("SLOW" in ex.output for ex in examples):
            from evqual._deadline import check_deadline

            end = time.monotonic() + self.seconds
            while time.monotonic() < end:
                if self.checks:
                    check_deadline()
                time.sleep(0.02)
        return super().score_examples(examples, **kwargs)


@pytest.fixture(scope="module")
def scorer():
    return Scorer.load(policy=Policy())


def test_a_timed_out_request_frees_the_scoring_thread(scorer):
    """Before: the 503 came at request_timeout, then the job kept the one scoring thread for its whole
    length (the issue: 198 s), and every request in that time timed out too."""
    slow = _StubbornScorer(scorer.detector, policy=Policy())
    slow.checks, slow.seconds = True, 20.0
    cfg = ServeConfig(request_timeout=1.0, max_queue=4)
    with _Server(create_app(cfg, scorer=slow), cfg) as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
        t0 = time.monotonic()
        r = client.post("/v1/score", json={**ITEM, "output": "SLOW it opened."})
        assert r.status_code == 503 and "request_timeout" in r.json()["error"]
        ok = client.post("/v1/score", json=ITEM)
        assert ok.status_code == 200, ok.text
        assert time.monotonic() - t0 < 10  # far below the 20 s the job would have held the thread


def test_a_job_that_cannot_stop_keeps_its_queue_place_until_it_ends(scorer):
    """max_queue counts a timed-out job that still holds the worker: the next request is told the service
    is busy at once, instead of queueing behind it to time out as well.  Before: the place was given back
    at the 503, so max_queue hid the busy worker."""
    slow = _StubbornScorer(scorer.detector, policy=Policy())
    slow.checks, slow.seconds = False, 3.0
    cfg = ServeConfig(request_timeout=0.5, max_queue=1)
    with _Server(create_app(cfg, scorer=slow), cfg) as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
        r = client.post("/v1/score", json={**ITEM, "output": "SLOW it opened."})
        assert r.status_code == 503 and "request_timeout" in r.json()["error"]
        busy = client.post("/v1/score", json=ITEM)
        assert busy.status_code == 503 and "max_queue" in busy.json()["error"], busy.text
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = client.post("/v1/score", json=ITEM)
            if r.status_code == 200:
                break
            time.sleep(0.2)
        assert r.status_code == 200


class _Metrics:
    class queue:  # noqa: N801 - a stand-in for a prometheus gauge
        inc = dec = staticmethod(lambda: None)


def test_the_router_counts_a_timed_out_job_until_it_ends_and_kills_a_stuck_process(monkeypatch):
    """workers > 1: a lane's in-flight count holds a timed-out job until its future is done (before: it
    dropped at the 503, and new requests went on to the busy process); a job still running _KILL_GRACE
    after its deadline has its process killed."""
    from evqual.service import _app

    monkeypatch.setattr(_app, "_KILL_GRACE", 0.05)
    service = _Service(ServeConfig(workers=2, request_timeout=0.2, max_queue=4))
    service.metrics = _Metrics()
    service._lanes = ["lane0", "lane1"]
    service._in_flight = [0, 0]
    job = concurrent.futures.Future()
    job.set_running_or_notify_cancel()  # started: cancel() cannot stop it
    monkeypatch.setattr(service, "_submit", lambda *a: job)
    killed = []
    monkeypatch.setattr(service, "_kill_if_running", lambda lane, pool, future: killed.append(lane))

    async def scenario():
        slot = service.reserve()
        with pytest.raises(_Refused) as info:
            await service.run("score", [ITEM], {}, "rid", slot=slot)
        assert info.value.status == 503
        lane = next(i for i, n in enumerate(service._in_flight) if n)
        assert service._in_flight[lane] == 1 and service._waiting == 1  # still held: the job runs
        await asyncio.sleep(0.3)
        assert killed == [lane]  # the watchdog ran
        job.set_result(([], 0.0))
        await asyncio.sleep(0.05)
        assert service._in_flight == [0, 0] and service._waiting == 0

    asyncio.run(scenario())


# ------------------------------------------------------------------ 1d. stalled uploads and slowloris

def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    return s


def _closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closes ``sock`` within ``seconds`` (reading what it sends before)."""
    sock.settimeout(0.2)
    got = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return True, got
        if not chunk:
            return True, got
        got += chunk
    return False, got


def test_stalled_uploads_get_408_and_hold_no_queue_place(scorer):
    """Connections that send part of a large body and stall: the first max_queue get 408 after
    body_timeout and are closed; the others get 503 at once, before their body is read.  Before: every one
    stayed open with its bytes in memory, and max_queue was checked only after the whole body."""
    cfg = ServeConfig(max_queue=2, body_timeout=1.0, max_body_bytes=8_000_000)
    with _Server(create_app(cfg, scorer=scorer), cfg) as srv:
        socks = []
        for _ in range(6):
            s = _connect(srv.port)
            s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 7000000\r\n\r\n" + b"{" + b" " * 100_000)
            socks.append(s)
            time.sleep(0.05)
        results = [_closed_within(s, 8.0) for s in socks]
        statuses = [got.split(b" ", 2)[1] if got.startswith(b"HTTP/1.1 ") else b"" for _, got in results]
        assert statuses.count(b"408") == 2 and statuses.count(b"503") == 4, statuses
        for s, (closed, got) in zip(socks, results):
            if b" 408 " in got[:20]:
                assert closed and b"body_timeout" in got
            s.close()
        with httpx.Client(base_url=srv.url, timeout=30) as client:  # the service goes on
            assert client.post("/v1/score", json=ITEM).status_code == 200


def test_slowloris_connections_are_closed_after_the_header_timeout(scorer):
    """Connections with an unfinished header line are closed after header_timeout, including one that
    trickles a byte at a time; before, 300 such connections stayed open indefinitely."""
    cfg = ServeConfig(header_timeout=1.0)
    with _Server(create_app(cfg, scorer=scorer), cfg) as srv:
        socks = [_connect(srv.port) for _ in range(20)]
        for s in socks:
            s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-a: ")
        trickle = _connect(srv.port)
        closed_trickle = False
        end = time.monotonic() + 6
        while time.monotonic() < end:  # one byte every 0.3 s: the timer is not reset by data
            try:
                trickle.sendall(b"a")
            except OSError:
                closed_trickle = True
                break
            time.sleep(0.3)
        assert closed_trickle or _closed_within(trickle, 1.0)[0]
        assert all(_closed_within(s, 3.0)[0] for s in socks)
        for s in (*socks, trickle):
            s.close()
        with httpx.Client(base_url=srv.url, timeout=30) as client:  # a keep-alive client is unaffected
            for _ in range(3):
                assert client.post("/v1/score", json=ITEM).status_code == 200
                time.sleep(0.4)


def test_connections_past_max_connections_are_closed_at_once(scorer):
    cfg = ServeConfig(max_connections=5, header_timeout=30.0)
    with _Server(create_app(cfg, scorer=scorer), cfg) as srv:
        held = [_connect(srv.port) for _ in range(5)]
        time.sleep(0.2)
        extra = [_connect(srv.port) for _ in range(5)]
        assert all(_closed_within(s, 3.0)[0] for s in extra)
        for s in held:
            s.close()
        time.sleep(0.3)
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            assert client.post("/v1/score", json=ITEM).status_code == 200
        for s in extra:
            s.close()
