"""An OpenAI-compatible chat-completions client for the ``llm`` verification backend.

:class:`LLMClient` sends ``POST {base_url}/chat/completions`` to any server that
speaks the OpenAI chat-completions protocol (OpenAI, Azure OpenAI behind a
compatible gateway, vLLM, llama.cpp's server, Ollama, LM Studio, ...), with

* **deadlines**, each a total, not per read (a server that sends one byte
  every few seconds cannot hold a run): ``timeout`` for one attempt (connect,
  headers and body), ``request_timeout`` for one call with all its retries and
  waits, ``answer_timeout`` for every call made for one answer (the verifiers
  open a :meth:`LLMClient.usage_scope` per answer);
* **retries** with exponential backoff and (seedable) jitter on 429, 5xx,
  timeouts and connection errors, honouring a ``Retry-After`` header (capped
  at ``max_backoff`` and at the deadlines); other 4xx fail at once;
* **size caps**: at most ``max_reply_bytes`` are read from a reply (a larger
  one is an error, never held in memory), and text quoted from a reply into a
  result is cut to :data:`MAX_QUOTED_CHARS` characters;
* a **concurrency limit**: at most ``concurrency`` requests in flight across all
  threads that share the client;
* no redirects: a 3xx is an error (following it would send the ``Authorization`` header to its target);
* a **cache** keyed by the SHA-256 of (model, messages, temperature,
  max_tokens), in memory and optionally in an append-only JSONL file that a
  new client (or a re-run) reads back; a corrupt line of that file is skipped;
* **accounting**: every :class:`LLMReply` carries its tokens and latency, and
  :meth:`LLMClient.usage_scope` collects a fresh :class:`~evqual.verify.Usage`
  per answer (thread-safe, also across worker threads started with
  :func:`contextvars.copy_context`).

HTTP goes through the standard library (:mod:`http.client`, with the proxies the
environment names as :mod:`urllib.request` reads them, :mod:`json`, :mod:`threading`): the protocol is one JSON POST, so a dependency such as
``openai`` or ``httpx`` would add install weight and version churn for no
feature evqual needs, and the test suite can run the client against a local
stub server with nothing extra installed.

The API key is sent only in the ``Authorization`` header: it never appears in
``repr``, error messages (which name the URL without credentials or query
string) or the cache file, and it is scrubbed (with any prefix of it of
:data:`KEY_PREFIX_CHARS` characters or more) from everything derived from a
server reply: error bodies, parse errors and the reply text itself, so a
server that echoes the ``Authorization`` header cannot put the key into the
results.
"""

from __future__ import annotations

import contextlib
import contextvars
import email.utils
import hashlib
import http.client
import json
import math
import os
import random
import socket
import threading
import time
import urllib.parse
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

from ._types import Usage

__all__ = ["LLMClient", "LLMError", "LLMReply", "ENV_VARS", "MAX_QUOTED_CHARS", "KEY_PREFIX_CHARS"]

MAX_QUOTED_CHARS = 2_000
"""Longest text taken from a server reply into a result (a reason, a variant, a factoid)."""
KEY_PREFIX_CHARS = 8
"""Prefixes of the API key this long or longer are scrubbed from everything derived from a reply."""

#: Environment variables read when an option is not given: first the evqual one, then the OpenAI one.
ENV_VARS = {
    "base_url": ("EVQUAL_LLM_BASE_URL", "OPENAI_BASE_URL"),
    "model": ("EVQUAL_LLM_MODEL",),
    "api_key": ("EVQUAL_LLM_API_KEY", "OPENAI_API_KEY"),
}

_RETRY_STATUS = frozenset({429}) | frozenset(range(500, 600))
_ERROR_BODY_CHARS = 300

# the Usage objects collecting the calls of the current context (innermost last)
_SCOPES: contextvars.ContextVar[tuple] = contextvars.ContextVar("evqual_llm_usage_scopes", default=())
# the monotonic time by which the current answer's calls must be done (None: no answer scope)
_DEADLINE: contextvars.ContextVar = contextvars.ContextVar("evqual_llm_answer_deadline", default=None)


def quoted(text, limit: int = MAX_QUOTED_CHARS):
    """``text`` cut to ``limit`` characters (with an ellipsis), for text copied from a server reply."""
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return text[:limit - 1] + "\u2026"


class LLMError(RuntimeError):
    """A chat-completions request failed (after its retries) or its answer was unusable.

    Attributes
    ----------
    status : int or None
        The last HTTP status, ``None`` for timeouts, connection errors and
        unusable bodies.
    url : str
        The endpoint, without credentials or query string.
    attempts : int
        Requests made (1 + retries used).
    """

    def __init__(self, message: str, *, status: int | None = None, url: str = "", attempts: int = 0):
        self.status, self.url, self.attempts = status, url, attempts
        super().__init__(message)


@dataclass(frozen=True)
class LLMReply:
    """One chat completion: the text and what it cost.

    ``prompt_tokens``/``completion_tokens`` are the server's ``usage`` counts
    (``None`` when the server sent none); ``latency_ms`` is the wall time of
    the request including retries (about 0 for a cache hit); ``cached`` says the
    reply came from the cache; ``attempts`` the requests made (0 when cached).
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    cached: bool = False
    attempts: int = 0


class _TooLarge(Exception):
    """A reply over ``max_reply_bytes`` (not retried: the server would send it again)."""


def _oneline(text, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _key_pattern(key):
    """A regex of the key and of every prefix of it of :data:`KEY_PREFIX_CHARS` or more characters
    (longest first), or ``None`` without a key."""
    import re

    if not key:
        return None
    key = str(key)
    n = min(len(key), KEY_PREFIX_CHARS)
    return re.compile("|".join(re.escape(key[:i]) for i in range(len(key), n - 1, -1)))



def _env(name: str) -> str | None:
    for var in ENV_VARS[name]:
        value = os.environ.get(var)
        if value:
            return value
    return None


def _public_url(url: str) -> str:
    """``url`` without user info, query string or fragment (where keys hide)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _token_count(usage, key):
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return int(value)


class LLMClient:
    """A small, thread-safe OpenAI-compatible chat-completions client.

    Parameters
    ----------
    base_url : str, optional
        The API root, e.g. ``https://api.openai.com/v1`` or
        ``http://localhost:8000/v1``; ``/chat/completions`` is appended.
        Default: ``$EVQUAL_LLM_BASE_URL``, then ``$OPENAI_BASE_URL``.  Only
        ``http`` and ``https`` URLs are accepted.
    model : str, optional
        Model name sent with each request.  Default: ``$EVQUAL_LLM_MODEL``.
    api_key : str, optional
        Sent as ``Authorization: Bearer ...``; none is sent when there is no
        key (local servers).  Default: ``$EVQUAL_LLM_API_KEY``, then
        ``$OPENAI_API_KEY``.
    timeout : float, default=30.0
        Seconds one attempt may take in all: connecting, sending, and reading
        the headers and the whole body (a watchdog closes the connection at the
        deadline, whatever the server trickles).
    request_timeout : float, default=60.0
        Seconds one call may take with all its attempts and the waits between
        them.
    answer_timeout : float, default=180.0
        Seconds all the calls made for one answer may take together (inside a
        :meth:`usage_scope`, which the verifiers open per answer); a call made
        after it has passed fails at once.
    max_reply_bytes : int, default=1048576
        Largest reply body read (a chat completion of ``max_tokens`` tokens is
        a few kilobytes); a larger one is an error.
    max_retries : int, default=3
        Retries after a 429, a 5xx, a timeout or a connection error (so at
        most ``max_retries + 1`` requests per call).  Other 4xx are not retried.
    backoff, max_backoff : float, default=0.5, 8.0
        The wait before retry ``r`` (0-based) is ``min(max_backoff, backoff * 2**r)``
        times a jitter factor in [0.5, 1]; a ``Retry-After`` header replaces
        it, capped at ``max_backoff``.
    concurrency : int, default=4
        Requests in flight at once across all threads using this client.
    cache : bool, str or path-like, default=True
        ``True``: an in-memory cache; a path: the same plus an append-only JSONL
        file read at start (corrupt lines are skipped with a warning);
        ``False``/``None``: no cache.  Replies are cached by the SHA-256 of
        (model, messages, temperature, max_tokens), so a cached call at
        ``temperature > 0`` returns the first sample again.
    temperature : float, default=0.0
        Seed 000 ran its verifiers at T = 0 "to ensure determinism".
    max_tokens : int, default=512
    random_state : int, optional
        Seed of the backoff jitter.

    Attributes
    ----------
    usage : Usage
        Everything this client did since it was made (or since :meth:`take_usage`).

    Examples
    --------
    >>> client = LLMClient(base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-secret")
    >>> client
    LLMClient(base_url='http://127.0.0.1:9/v1', model='m', api_key=***)
    >>> LLMClient(base_url="file:///etc/passwd", model="m")
    Traceback (most recent call last):
    ...
    ValueError: LLMClient: base_url must be an http:// or https:// URL; got scheme 'file'
    """

    def __init__(self, *, base_url=None, model=None, api_key=None, timeout: float = 30.0, max_retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 8.0, concurrency: int = 4, cache=True,
                 temperature: float = 0.0, max_tokens: int = 512, random_state=None, request_timeout: float = 60.0,
                 answer_timeout: float = 180.0, max_reply_bytes: int = 2**20):
        base_url = base_url or _env("base_url")
        model = model or _env("model")
        api_key = api_key or _env("api_key")
        if not base_url:
            raise ValueError("LLMClient: no base_url; pass base_url=... or set EVQUAL_LLM_BASE_URL "
                             "(e.g. https://api.openai.com/v1 or http://localhost:8000/v1)")
        if not model:
            raise ValueError("LLMClient: no model; pass model=... or set EVQUAL_LLM_MODEL")
        parts = urllib.parse.urlsplit(str(base_url))
        if parts.scheme.lower() not in ("http", "https"):
            raise ValueError(f"LLMClient: base_url must be an http:// or https:// URL; got scheme {parts.scheme!r}")
        if not parts.hostname:
            raise ValueError(f"LLMClient: base_url has no host: {_public_url(str(base_url))!r}")
        if parts.username is not None or parts.password is not None:
            raise ValueError("LLMClient: base_url must not hold credentials (user:password@); "
                             "pass the key as api_key or set EVQUAL_LLM_API_KEY")
        positive = ("timeout", "request_timeout", "answer_timeout")
        for name, value, low in (("timeout", timeout, 0.0), ("backoff", backoff, 0.0),
                                 ("max_backoff", max_backoff, 0.0), ("temperature", temperature, 0.0),
                                 ("request_timeout", request_timeout, 0.0), ("answer_timeout", answer_timeout, 0.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < low or (name in positive and value == 0):
                raise ValueError(f"LLMClient: {name} must be a finite number "
                                 f"{'> 0' if name in positive else '>= 0'}; got {value!r}")
        for name, value, low in (("max_retries", max_retries, 0), ("concurrency", concurrency, 1),
                                 ("max_tokens", max_tokens, 1), ("max_reply_bytes", max_reply_bytes, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"LLMClient: {name} must be an int >= {low}; got {value!r}")
        self.base_url = urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/")))
        self.model = str(model)
        self._api_key = api_key or None
        self.timeout = float(timeout)
        self.request_timeout = float(request_timeout)
        self.answer_timeout = float(answer_timeout)
        self.max_reply_bytes = max_reply_bytes
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = concurrency
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        # the path gets /chat/completions; a query string (e.g. Azure's api-version=...) is kept
        self.url = urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))
        self.endpoint = _public_url(self.url)
        self._key_re = _key_pattern(self._api_key)
        self._semaphore = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._rng = random.Random(random_state)
        self._sleep = time.sleep
        self.usage = Usage()
        self._cache: dict | None = None
        self.cache_path: Path | None = None
        self._newline_first = False
        if cache is True:
            self._cache = {}
        elif cache not in (None, False):
            self._cache = {}
            self.cache_path = Path(cache)
            self._load_cache()

    def __repr__(self) -> str:
        key = "***" if self._api_key else "None"
        return f"LLMClient(base_url={_public_url(self.base_url)!r}, model={self.model!r}, api_key={key})"

    # -- cache --------------------------------------------------------------------------------------------
    def cache_key(self, messages) -> str:
        """SHA-256 hex digest of (model, messages, temperature, max_tokens)."""
        blob = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _load_cache(self):
        path = self.cache_path
        if not path.exists():
            return
        with open(path, "rb") as fh:  # a line cut short (a crash while writing) must not swallow the next one
            fh.seek(0, 2)
            if fh.tell():
                fh.seek(-1, 2)
                self._newline_first = fh.read(1) != b"\n"
        bad = []
        with open(path, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    key, text = row["key"], row["text"]
                    if not isinstance(key, str) or not isinstance(text, str):
                        raise TypeError("key and text must be strings")
                except (ValueError, KeyError, TypeError):
                    bad.append(lineno)
                    continue
                self._cache[key] = (text, row.get("prompt_tokens"), row.get("completion_tokens"))
        if bad:
            shown = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
            warnings.warn(f"LLM cache {path}: skipped {len(bad)} corrupt line(s) (line {shown})", stacklevel=3)

    def _store(self, key, reply: LLMReply):
        if self._cache is None:
            return
        with self._lock:
            self._cache[key] = (reply.text, reply.prompt_tokens, reply.completion_tokens)
            if self.cache_path is not None:
                row = {"key": key, "model": self.model, "text": reply.text,
                       "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.cache_path, "a", encoding="utf-8") as fh:
                    fh.write(("\n" if self._newline_first else "") + json.dumps(row, ensure_ascii=False) + "\n")
                self._newline_first = False

    # -- accounting ---------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def usage_scope(self):
        """Collect the calls made in this context into a fresh :class:`Usage`, within one answer's deadline.

        The calls made inside share ``answer_timeout`` seconds (the verifiers
        open one scope per answer); the innermost scope's deadline never
        extends an outer one.

        Scopes are per context (:mod:`contextvars`), so threads verifying
        different answers do not mix; worker threads that run with a copy of
        the context (as the LLM judge, mutator and extractor do) record into
        the scope of the thread that started them.  Scopes nest.

        >>> client = LLMClient(base_url="http://127.0.0.1:9/v1", model="m")
        >>> with client.usage_scope() as usage:
        ...     pass
        >>> usage.calls
        0
        """
        usage = Usage()
        token = _SCOPES.set(_SCOPES.get() + (usage,))
        outer = _DEADLINE.get()
        deadline = time.monotonic() + self.answer_timeout
        deadline_token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
        try:
            yield usage
        finally:
            _DEADLINE.reset(deadline_token)
            _SCOPES.reset(token)

    def take_usage(self) -> Usage:
        """Return the client's usage so far and start a fresh one (thread-safe)."""
        with self._lock:
            usage, self.usage = self.usage, Usage()
        return usage

    def _record(self, reply: LLMReply | None, latency_ms: float):
        step = Usage(latency_ms=latency_ms)
        if reply is not None and reply.cached:
            step.cache_hits = 1
        elif reply is not None:
            step.calls = 1
            step.prompt_tokens = reply.prompt_tokens or 0
            step.completion_tokens = reply.completion_tokens or 0
        with self._lock:
            self.usage.add(step)
            for scope in _SCOPES.get():
                scope.add(step)

    # -- requests -----------------------------------------------------------------------------------------
    def complete(self, prompt: str, *, system: str | None = None) -> LLMReply:
        """:meth:`chat` with one user message (and an optional system message)."""
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        return self.chat(messages)

    def chat(self, messages) -> LLMReply:
        """Send ``messages`` (a list of ``{"role", "content"}`` dicts) and return the reply.

        Raises
        ------
        LLMError
            When the request still fails after the retries, fails with a
            non-retryable status, or the body is not a chat completion.
        """
        t0 = time.perf_counter()
        key = self.cache_key(messages) if self._cache is not None else None
        if key is not None:
            with self._lock:
                hit = self._cache.get(key)
            if hit is not None:
                reply = LLMReply(hit[0], hit[1], hit[2], (time.perf_counter() - t0) * 1000.0, True, 0)
                self._record(reply, reply.latency_ms)
                return reply
        try:
            text, usage, attempts = self._post(messages)
        except LLMError:
            self._record(None, (time.perf_counter() - t0) * 1000.0)
            raise
        text = self._scrub(text)  # a server that echoes the Authorization header
        latency = (time.perf_counter() - t0) * 1000.0
        reply = LLMReply(text, _token_count(usage, "prompt_tokens"), _token_count(usage, "completion_tokens"),
                         latency, False, attempts)
        self._record(reply, latency)
        if key is not None:
            self._store(key, reply)
        return reply

    def _request(self, body: bytes, deadline: float):
        """One attempt: ``(status, body bytes, headers)``; a watchdog closes the connection at ``deadline``
        (whatever the server sends, or trickles), and at most ``max_reply_bytes`` of a body are read."""
        headers = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "close"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the deadline passed")
        with self._semaphore:
            conn, path = self._connection(min(self.timeout, remaining))
            expired = threading.Event()

            def abort():
                expired.set()
                sock = conn.sock
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

            watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), abort)
            watchdog.daemon = True
            watchdog.start()
            try:
                conn.request("POST", path, body=body, headers=headers)
                resp = conn.getresponse()
                length = resp.getheader("Content-Length")
                cap = self.max_reply_bytes if resp.status < 300 else _ERROR_BODY_CHARS
                if resp.status < 300 and length and length.strip().isdigit() and int(length) > cap:
                    raise _TooLarge(f"the reply declares {int(length)} bytes (at most {cap} are read)")
                chunks, size = [], 0
                while size <= cap:
                    chunk = resp.read1(min(65536, cap + 1 - size)) if hasattr(resp, "read1") else resp.read(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                if expired.is_set():  # the watchdog cut the body short
                    raise TimeoutError("the deadline passed while the reply was being read")
                if size > cap and resp.status < 300:
                    raise _TooLarge(f"the reply is larger than {cap} bytes")
                return resp.status, b"".join(chunks)[:cap], resp.headers
            except (OSError, http.client.HTTPException) as exc:
                if expired.is_set():
                    raise TimeoutError("the deadline passed while waiting for the server") from None
                raise exc
            finally:
                watchdog.cancel()
                conn.close()

    def _connection(self, timeout: float):
        """An HTTP(S) connection to the endpoint, or through the proxy the environment names for it."""
        parts = urllib.parse.urlsplit(self.url)
        https = parts.scheme.lower() == "https"
        host, port = parts.hostname, parts.port
        path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        proxy = None
        if not urllib.request.proxy_bypass(host or ""):
            proxy = urllib.request.getproxies().get(parts.scheme.lower())
        if proxy:
            p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            if https:
                conn = http.client.HTTPSConnection(p.hostname, p.port or 8080, timeout=timeout)
                conn.set_tunnel(host, port or 443)
            else:
                conn = http.client.HTTPConnection(p.hostname, p.port or 8080, timeout=timeout)
                path = self.url
            return conn, path
        cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
        return cls(host, port, timeout=timeout), path

    def _scrub(self, text: str) -> str:
        """``text`` without the API key or any prefix of it of :data:`KEY_PREFIX_CHARS` or more characters."""
        if self._key_re is not None and isinstance(text, str):
            text = self._key_re.sub("***", text)
        return text

    def _wait(self, retry: int, retry_after: str | None) -> float:
        delay = None
        if retry_after:
            try:
                delay = float(retry_after)
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(retry_after).timestamp()
                    delay = when - time.time()
                except (TypeError, ValueError, IndexError, OverflowError):
                    delay = None
            if delay is not None and not math.isfinite(delay):
                delay = None
        if delay is None:
            with self._lock:
                jitter = 0.5 + 0.5 * self._rng.random()
            delay = min(self.max_backoff, self.backoff * 2.0 ** retry) * jitter
        return max(0.0, min(self.max_backoff, delay))

    def _post(self, messages):
        body = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}).encode("utf-8")
        start = time.monotonic()
        deadline = start + self.request_timeout
        answer = _DEADLINE.get()
        which = f"the call's deadline ({self.request_timeout:g} s)"
        if answer is not None and answer < deadline:
            deadline, which = answer, f"the answer's deadline ({self.answer_timeout:g} s)"
        attempts = 0
        while True:
            if time.monotonic() >= deadline:
                raise LLMError(f"LLM request to {self.endpoint} stopped: {which} passed after {attempts} attempt(s)",
                               status=None, url=self.endpoint, attempts=attempts)
            attempts += 1
            retry_after = None
            limit = min(self.timeout, deadline - time.monotonic())
            try:
                status, raw, headers = self._request(body, time.monotonic() + limit)
            except _TooLarge as exc:
                raise LLMError(f"LLM reply from {self.endpoint} refused: {exc}", status=None, url=self.endpoint,
                               attempts=attempts) from None
            except (TimeoutError, socket.timeout) as exc:
                status, problem = None, f"timed out after {limit:.3g} s ({_oneline(exc) or type(exc).__name__})"
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                status, problem = None, f"connection error: {type(exc).__name__}: {_oneline(exc)}"
            else:
                if 200 <= status < 300:
                    return self._parse(status, raw, attempts) + (attempts,)
                detail = raw[:_ERROR_BODY_CHARS].decode("utf-8", "replace")
                retry_after = headers.get("Retry-After") if headers else None
                problem = f"HTTP {status}" + (f": {' '.join(detail.split())}" if detail.strip() else "")
                if status not in _RETRY_STATUS:
                    moved = " (redirects are not followed)" if 300 <= status < 400 else ""
                    raise LLMError(self._scrub(f"LLM request to {self.endpoint} failed with {problem}{moved} "
                                               f"(not retried; attempt {attempts})"),
                                   status=status, url=self.endpoint, attempts=attempts) from None
            if attempts > self.max_retries:
                raise LLMError(self._scrub(f"LLM request to {self.endpoint} failed after {attempts} attempt(s): "
                                           f"{problem}"), status=status, url=self.endpoint, attempts=attempts)
            wait = self._wait(attempts - 1, retry_after)
            if time.monotonic() + wait >= deadline:
                raise LLMError(self._scrub(f"LLM request to {self.endpoint} failed after {attempts} attempt(s): "
                                           f"{problem}; no time left for a retry within {which}"),
                               status=status, url=self.endpoint, attempts=attempts)
            self._sleep(wait)

    def _parse(self, status, raw: bytes, attempts: int):
        def fail(what):
            snippet = " ".join(raw[:_ERROR_BODY_CHARS].decode("utf-8", "replace").split())
            return LLMError(self._scrub(f"LLM reply from {self.endpoint} (HTTP {status}, attempt {attempts}) "
                                        f"is not a chat completion: {what}; body starts {snippet!r}"),
                            status=status, url=self.endpoint, attempts=attempts)

        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise fail("the body is not valid JSON") from None
        if not isinstance(data, dict):
            raise fail("the body is not a JSON object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise fail("no 'choices' list")
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if content is None and isinstance(choices[0].get("text"), str):
            content = choices[0]["text"]  # completions-style servers
        if not isinstance(content, str):
            raise fail("'choices[0].message.content' is not a string")
        return content, data.get("usage")
