"""A local OpenAI-compatible chat-completions stub for the LLM backend's tests.

:class:`StubLLM` serves ``POST /v1/chat/completions`` on 127.0.0.1 (a free
port) from a :class:`http.server.ThreadingHTTPServer`.  The reply text comes
from ``responder(prompt) -> str`` (by default :func:`default_responder`,
which answers by the prompt's content); faults are queued per test with
:meth:`StubLLM.fault`: each request takes the next queued fault, if any.

Faults: ``("sleep", seconds)`` (then answer normally), ``("status", code,
headers)`` (an error reply), ``("raw", bytes)`` (a 200 with that body),
``("text", str)`` (a 200 chat completion with that text), ``("nousage",)``
(a normal answer without a ``usage`` field).  Hostile servers (issue 21):
``("trickle", seconds, n)`` (a 200 whose body comes one byte every ``seconds``,
``n`` bytes in all), ``("huge", n)`` (a 200 whose body of ``n`` bytes is
streamed in chunks), ``("echo", status)`` (the request's ``Authorization``
header echoed back: in an error body for a status >= 400, else as the reply
text), ``("echo-reason",)`` (a valid claim verdict whose ``reason`` holds the
header) and ``("echo-prefix", status, n)`` (the first ``n`` characters of the
key in an error body).  :attr:`StubLLM.always` is a
fault applied to every request once the queue is empty.

The stub records every request (``requests``: the parsed JSON bodies and the
``Authorization`` header) and the largest number of requests in flight at
once (``max_inflight``).  ``hold`` makes each request wait (at most that many
seconds) until ``hold_until`` requests are in flight, so that a broken
concurrency limit shows up without relying on timing luck.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _last_user(body) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return m.get("content", "")
    return ""


def default_responder(prompt: str) -> str:
    """Deterministic answers chosen by the prompt's content."""
    if "fact extraction assistant" in prompt:
        text = prompt.rsplit("Input:\n", 1)[-1].strip()
        facts = [s.strip() + "." for s in re.split(r"[.!?]\s*", text) if s.strip()]
        return json.dumps(facts)
    if "*synonyms*" in prompt or "*negations*" in prompt:
        factoid = prompt.rsplit("Factoid: ", 1)[-1].strip()
        n = int(re.search(r"generate (\d+)", prompt).group(1))
        word = "not " if "*negations*" in prompt else "indeed "
        lines = [factoid] + [f"{i + 1}. Variant {i} : it is {word}so that {factoid}" for i in range(n)]
        return "\n".join(lines + [lines[1]])  # the factoid itself and a repeat: the mutator drops both
    if "Passages (Ground Truth):" in prompt:
        statement = prompt.rsplit("Statement: ", 1)[-1].split("\n")[0].lower()
        passages = prompt.rsplit("Passages (Ground Truth): ", 1)[-1].split("\nStatement: ")[0].lower()
        if "not" in statement.split():
            return "NO. The passages say otherwise."
        if statement.split()[0] in passages:
            return "YES. The passages state it."
        return "NOT SURE. Nothing about it."
    if "Claim: " in prompt:
        claim = prompt.rsplit("Claim: ", 1)[-1].split("\n")[0].lower()
        if "not" in claim.split():
            return '{"label": "REFUTED", "probability": 0.05, "evidence": [1], "reason": "contradicted"}'
        if "moon" in claim:
            return 'Sure! ```json\n{"label": "NO_EVIDENCE", "probability": 0.4, "evidence": []}\n```'
        return '{"label": "SUPPORTED", "probability": 0.9, "evidence": [2], "reason": "stated"}'
    return "OK"


class StubLLM:
    def __init__(self, responder=default_responder):
        self.responder = responder
        self.faults: list = []
        self.always = None
        self.requests: list = []
        self.inflight = 0
        self.max_inflight = 0
        self.hold = 0.0
        self.hold_until = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stop = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                stub._handle(self)

            def do_GET(self):  # only a followed redirect would GET
                with stub._lock:
                    stub.requests.append({"body": None, "authorization": self.headers.get("Authorization"),
                                          "path": self.path})
                stub._send(self, 404, b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def fault(self, *faults):
        with self._lock:
            self.faults.extend(faults)

    @property
    def n_requests(self) -> int:
        return len(self.requests)

    def _send(self, h, status, body: bytes, headers=None):
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        # the request stops counting as in flight before its last bytes go out: once the client has them it
        # may send its next request, which must not find this one still counted (a race that made
        # max_inflight exceed the client's limit on a busy machine)
        self._leave(h)
        try:
            h.wfile.write(body)
        except OSError:  # the client gave up (timeout test)
            pass

    def _leave(self, h):
        with self._cond:
            if getattr(h, "_evqual_inflight", False):
                h._evqual_inflight = False
                self.inflight -= 1
                self._cond.notify_all()

    def _handle(self, h):
        length = int(h.headers.get("Content-Length", 0))
        body = json.loads(h.rfile.read(length) or b"{}")
        with self._cond:
            self.requests.append({"body": body, "authorization": h.headers.get("Authorization"), "path": h.path})
            fault = self.faults.pop(0) if self.faults else self.always
            self.inflight += 1
            h._evqual_inflight = True
            self.max_inflight = max(self.max_inflight, self.inflight)
            self._cond.notify_all()
            if self.hold:
                self._cond.wait_for(lambda: self.inflight >= self.hold_until or self._stop.is_set(), timeout=self.hold)
        try:
            self._reply(h, body, fault)
        finally:
            self._leave(h)

    def _reply(self, h, body, fault):
        kind = fault[0] if fault else None
        auth = h.headers.get("Authorization") or ""
        if kind == "trickle":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(fault[2]))
            h.end_headers()
            for _ in range(fault[2]):
                if self._stop.wait(fault[1]):
                    return
                try:
                    h.wfile.write(b" ")
                    h.wfile.flush()
                except OSError:  # the client gave up: the test's point
                    return
            return
        if kind == "huge":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(fault[1]))
            h.end_headers()
            chunk = b" " * 65536
            sent = 0
            try:
                while sent < fault[1] and not self._stop.is_set():
                    piece = chunk[:fault[1] - sent]
                    h.wfile.write(piece)
                    sent += len(piece)
            except OSError:
                pass
            return
        if kind == "echo" and fault[1] >= 400:
            self._send(h, fault[1], json.dumps({"error": {"message": f"bad header {auth}"}}).encode())
            return
        if kind == "echo-prefix":
            key = auth.removeprefix("Bearer ")
            self._send(h, fault[1], f"invalid key {key[:fault[2]]}...".encode())
            return
        if kind == "echo":
            fault = ("text", f"I received {auth}")
            kind = "text"
        if kind == "echo-reason":
            fault = ("text", json.dumps({"label": "SUPPORTED", "probability": 0.9, "evidence": [],
                                         "reason": f"your header was {auth}"}))
            kind = "text"
        if kind == "sleep":
            self._stop.wait(fault[1])
            kind = None
        if kind == "status":
            headers = fault[2] if len(fault) > 2 else {}
            self._send(h, fault[1], json.dumps({"error": {"message": f"stub error {fault[1]}"}}).encode(), headers)
            return
        if kind == "raw":
            self._send(h, 200, fault[1])
            return
        text = fault[1] if kind == "text" else self.responder(_last_user(body))
        reply = {"id": "stub", "object": "chat.completion", "model": body.get("model"),
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                              "finish_reason": "stop"}]}
        if kind != "nousage":
            reply["usage"] = {"prompt_tokens": len(_last_user(body).split()), "completion_tokens": len(text.split())}
        self._send(h, 200, json.dumps(reply).encode())
