"""The HTTP service: a FastAPI app over :mod:`evqual.scoring` and :mod:`evqual.verify`.

Nothing here scores: a request's items are written as the lines of a generic
JSONL and go through :func:`evqual.scoring.score_file` (or
:func:`evqual.verify.verify_file`), so a result, an error record and an audit
record are exactly what ``evqual score`` (``evqual verify``) writes for the
same line, with the item's position as its ``line``.

Scoring is CPU-bound: it runs off the event loop, on one scoring thread with
one worker, in that many scoring processes with several (each loads and
audits the model once; a request goes to the one its context hashes to, or
to the least busy), so ``/healthz`` and ``/readyz`` answer while a batch is
scored.  At most ``max_queue`` requests are read, wait or are being scored
(more get 503 at once, before their body is read); a body must arrive within
``body_timeout`` (408).  A request past ``request_timeout`` gets 503 and its
job stops at its next check (:mod:`evqual._deadline`: between claims,
sentences and items), so the worker is free again within milliseconds; a
scoring process whose job has not stopped ``_KILL_GRACE`` seconds later is
killed and replaced.  The request keeps its queue place, and its scoring
process its in-flight count, until the job has really ended.
"""


import asyncio
import concurrent.futures
import contextlib
import hmac
import io
import json
import os
import re
import threading
import time
import uuid

from ..errors import MissingDependencyError
from ._config import ServeConfig

__all__ = ["create_app", "SERVICE_ENDPOINTS"]

SERVICE_ENDPOINTS = ("/v1/score", "/v1/verify", "/v1/model", "/healthz", "/readyz", "/metrics", "/openapi.json")
"""Every path the service answers."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_BATCH_SIZE = 16  # answers featurized together, as `evqual score`'s default
_KILL_GRACE = 5.0  # seconds past its deadline a scoring process's job may run before the process is replaced


def _require(module: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError("evqual serve", "server", package) from exc


class _Timeout(Exception):
    """The request's time is up (raised between blocks of a batch)."""


class _Refused(Exception):
    """A request refused as a whole: HTTP ``status`` with a JSON ``{"error": message}``."""

    def __init__(self, status: int, message: str, headers=None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


class _RequestAudit:
    """The audit log as :func:`evqual.scoring.score_file` calls it, each record tagged with the request id."""

    def __init__(self, log, request_id: str):
        self.log, self.request_id = log, request_id

    def write(self, result, **kwargs):
        return self.log.write(result, request_id=self.request_id, **kwargs)

    def write_error(self, line_no, message, id=None):
        return self.log.write_error(line_no, message, id=id, request_id=self.request_id)


class _Metrics:
    """Prometheus metrics of one app, in its own registry (every request passes through the one server
    process, so its counters cover every scoring worker)."""

    def __init__(self, model_info):
        pc = _require("prometheus_client", "prometheus-client")
        self.pc = pc
        self.registry = pc.CollectorRegistry()
        kw = {"registry": self.registry}
        self.requests = pc.Counter("evqual_requests", "HTTP requests by endpoint and status",
                                   ["endpoint", "status"], **kw)
        self.latency = pc.Histogram("evqual_request_seconds", "Request latency by endpoint", ["endpoint"],
                                    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
                                    **kw)
        self.decisions = pc.Counter("evqual_decisions", "Scored answers by decision", ["decision"], **kw)
        self.errors = pc.Counter("evqual_item_errors", "Items refused or failed, by error code", ["code"], **kw)
        self.answers = pc.Counter("evqual_answers", "Answers scored or verified", ["endpoint"], **kw)
        self.model = pc.Gauge("evqual_model_info", "The loaded model (value 1)",
                              ["name", "method", "version", "sha256"], **kw)
        self.model.labels(model_info.name, model_info.method, model_info.version, model_info.sha256).set(1)
        self.queue = pc.Gauge("evqual_queue_depth", "Requests waiting for or holding a scoring worker", **kw)

    def render(self) -> tuple:
        return self.pc.generate_latest(self.registry), self.pc.CONTENT_TYPE_LATEST


def _load_scorer(config: ServeConfig, scorer=None):
    """``scorer``, or the scorer of ``config``'s model (loaded and audited, pinned by its SHA-256) and
    policy; either way with a policy (the built-in one when it has none)."""
    from ..scoring import Policy, Scorer, load_policy

    if scorer is None:
        from ..models import default_model_path, load_detector

        policy = load_policy(config.policy) if config.policy else Policy()
        if policy.flag_rate is not None:
            raise ValueError(f"{config.policy}: a flag-rate budget ([budget] flag_rate) is fitted on a file's answers, "
                             "which a service does not have: fit it with `evqual score IN.jsonl --flag-rate R` and "
                             "write the thresholds it prints into [thresholds] general and [bands] escalate")
        det = load_detector(config.model or default_model_path(), sha256=config.model_sha256, lean=True)
        scorer = Scorer(det, policy=policy)
    if scorer.policy is None:
        scorer.policy = Policy()
    return scorer


def _ood_info(det) -> dict | None:
    """What ``/v1/model`` says of the model's out-of-distribution map (None: the model has none)."""
    state = getattr(det, "ood_", None)
    if state is None:
        return None
    return {"warning": "W004", "quantile": state["quantile"], "features": len(state["names"]),
            "groups": {k: {"rows": g["n_fit"], "threshold": g["threshold"]} for k, g in state["groups"].items()}}


def _adaptation_info(det) -> dict | None:
    """What ``/v1/model`` says of the model's adaptation (None: not adapted)."""
    meta = getattr(det, "meta_", None) or {}
    adaptation = meta.get("adaptation")
    if not adaptation:
        return None
    return {"parent_sha256": adaptation["parent"]["model_sha256"], "rows": adaptation["data"].get("rows"),
            "data_sha256": adaptation["data"]["sha256"], "kind": adaptation.get("kind")}


class _Worker:
    """What scores: the scorer, the verifiers (made on first use), the audit log.  One in the service's
    process with one worker; one in each scoring process with several."""

    def __init__(self, config: ServeConfig, scorer=None):
        from ..scoring import AuditLog

        self.config = config
        self.scorer = _load_scorer(config, scorer)
        self.audit = AuditLog(config.audit_log) if config.audit_log else None
        self._verifiers: dict = {}
        self._verifier_lock = threading.Lock()

    def verifier(self, method: str):
        from ..verify import make_verifier

        with self._verifier_lock:
            v = self._verifiers.get(method)
            if v is None:
                v = self._verifiers[method] = make_verifier(method, self.config.verify_backend)
            return v

    def close(self):
        if self.audit is not None:
            self.audit.close()


def _run_job(worker: _Worker, kind: str, deadline: float, data: bytes, opts: dict, request_id: str):
    """``(output lines, seconds)`` of one request's items (``data``: their JSONL); ``kind`` ``"score"`` or
    ``"verify"``.  Raises :class:`_Timeout` once ``deadline`` (``time.monotonic()``) has passed: the work
    stops at its next check (:func:`evqual._deadline.check_deadline`), not at the end of its block."""
    from .._deadline import DeadlineExceeded, deadline as time_limit

    start = time.perf_counter()
    if time.monotonic() > deadline:  # waited in the queue past its time: never started
        raise _Timeout()
    try:
        with time_limit(deadline):
            if kind == "score":
                lines = _score_job(worker, deadline, data, opts.get("policy"), opts.get("verify"), request_id)
            else:
                lines = _verify_job(worker, deadline, data, opts.get("method", "claims"), request_id)
    except DeadlineExceeded:
        raise _Timeout() from None
    return lines, time.perf_counter() - start


_CHILD: _Worker | None = None  # the worker of a scoring process
_CHILD_STATE = {"busy": False, "stop": False}


def _exit_soon(delay: float = 0.5) -> None:
    def later():
        time.sleep(delay)  # the job's result is on its way to the service by then
        os._exit(0)

    threading.Thread(target=later, daemon=True).start()


def _child_sigterm(signum, frame) -> None:
    """SIGTERM in a scoring process: exit now when idle, after the job in hand (its audit records written and
    its result sent) when busy.  (The service stops its pool without signals; a SIGTERM comes from a
    supervisor signalling the whole process group, or from the pool ending a broken pool's processes.)"""
    if _CHILD_STATE["busy"]:
        _CHILD_STATE["stop"] = True
    else:
        os._exit(0)


def _child_init(config_json: str) -> None:
    """Initializer of a scoring process: load and audit the model once; leave SIGINT to the service's
    process (it finishes the requests in flight, then shuts the pool down); exit if that process is gone."""
    import signal

    global _CHILD
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _child_sigterm)
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True, name="evqual-parent-watch").start()
    _CHILD = _Worker(ServeConfig.from_env(config_json))


def _child_job(kind, deadline, data, opts, request_id):
    _CHILD_STATE["busy"] = True
    try:
        return _run_job(_CHILD, kind, deadline, data, opts, request_id)
    finally:
        _CHILD_STATE["busy"] = False
        if _CHILD_STATE["stop"]:
            _exit_soon()


def _child_ping(delay: float) -> int:
    time.sleep(delay)
    return os.getpid()


class _Service:
    """The state of the service: its worker(s), the queue of requests, metrics, auth.

    With ``workers == 1`` scoring runs on one thread of this process; with more, in that many scoring
    processes, each loading and auditing the model once.  Every request passes through this process, which
    picks its scoring process: the one its context hashes to (where that context is indexed already when
    another answer to it came before), or the least busy one when that one has two requests more in hand.
    (uvicorn's own worker processes would each keep the keep-alive connections they accepted: a burst of
    new connections can all land on one, and a context's answers on all of them.)"""

    def __init__(self, config: ServeConfig, scorer=None):
        self.config = config
        self.scorer = scorer
        self.worker = None
        self.metrics = None
        self.ready = False
        self.tokens = tuple(t.encode("utf-8") for t in config.tokens)
        self._lanes: list = []  # one single-process pool per scoring process (workers > 1)
        self._in_flight: list = []  # requests submitted to each lane and not yet answered
        self._pool_lock = threading.Lock()
        self._thread = (concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="evqual-score")
                        if config.workers == 1 else None)  # the scoring thread (workers == 1)
        self._waiting = 0
        self._waiting_lock = threading.Lock()

    @property
    def audit(self):
        return self.worker.audit if self.worker is not None else None

    # ------------------------------------------------------------------ life
    def start(self):
        if self.config.workers == 1:
            self.worker = _Worker(self.config, self.scorer)
            self.scorer = self.worker.scorer
        else:
            self.scorer = _load_scorer(self.config, self.scorer)  # for /v1/model and policy overrides
            self._lanes = self._new_lanes(self.config.workers)
            self._in_flight = [0] * len(self._lanes)
        self.metrics = _Metrics(self.scorer.model_info)
        self.ready = True

    def _new_lanes(self, n: int) -> list:
        """``n`` scoring processes, each a pool of one (its own queue: requests for one context go to the
        process whose caches hold that context), every one up (model loaded and audited) on return."""
        import multiprocessing

        lanes = [concurrent.futures.ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_child_init,
            initargs=(self.config.to_env(),)) for _ in range(n)]
        try:
            for f in [lane.submit(_child_ping, 0.0) for lane in lanes]:
                f.result(timeout=300)
        except BaseException:
            for lane in lanes:
                lane.shutdown(wait=False, cancel_futures=True)
            raise
        return lanes

    def _lane_for(self, items) -> int:
        """The lane of a request: the one its first item's context hashes to (the context is indexed there
        already when another answer to it came before), unless that lane has two requests more in hand than
        the least busy one, which then takes it."""
        first = items[0] if items else None
        ctx = first.get("context") if isinstance(first, dict) else None
        try:
            key = ctx if isinstance(ctx, str) else json.dumps(ctx, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            key = ""
        preferred = hash(key) % len(self._lanes)
        least = min(range(len(self._lanes)), key=self._in_flight.__getitem__)
        return least if self._in_flight[preferred] >= self._in_flight[least] + 2 else preferred

    def stop(self):
        self.ready = False
        for pool in (self._thread, *self._lanes):
            if pool is not None:
                pool.shutdown(wait=True)  # requests being scored finish, and their audit records with them
        if self.worker is not None:
            self.worker.close()

    # ------------------------------------------------------------------ auth
    def authorised(self, header: str | None) -> bool:
        if not self.tokens:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        given = header[len("Bearer "):].strip().encode("utf-8", "replace")
        ok = False
        for tok in self.tokens:  # every token compared, in constant time each
            ok |= hmac.compare_digest(given, tok)
        return ok

    # ------------------------------------------------------------------ work
    def reserve(self) -> "_Slot":
        """A place in the queue (``max_queue``), taken before the request's body is read; 503 when full."""
        with self._waiting_lock:
            if self._waiting >= self.config.max_queue:
                raise _Refused(503, f"busy: {self._waiting} requests are being read, waiting or scored (max_queue)",
                               {"Retry-After": "1"})
            self._waiting += 1
        self.metrics.queue.inc()
        return _Slot(self)

    def _release(self):
        with self._waiting_lock:
            self._waiting -= 1
        self.metrics.queue.dec()

    def _submit(self, lane, kind, deadline, data, opts, request_id) -> concurrent.futures.Future:
        if lane is None:
            return self._thread.submit(_run_job, self.worker, kind, deadline, data, opts, request_id)
        with self._pool_lock:
            pool = self._lanes[lane]
        return pool.submit(_child_job, kind, deadline, data, opts, request_id)

    def _renew_lane(self, lane: int, broken):
        """Replace a lane whose scoring process died (by the OOM killer, a signal) or was killed: later
        requests go on."""
        with self._pool_lock:
            if self._lanes[lane] is broken:
                broken.shutdown(wait=False, cancel_futures=True)
                self._lanes[lane] = self._new_lanes(1)[0]

    def _kill_if_running(self, lane: int, pool, future) -> None:
        """The watchdog of a job past its deadline: when it has still not stopped, kill its scoring process
        (its lane is replaced; requests queued on that lane get 503 and may retry)."""
        if future.done():
            return
        for proc in list(getattr(pool, "_processes", {}).values()):  # the pool's one process
            with contextlib.suppress(Exception):
                proc.kill()
        with contextlib.suppress(Exception):
            self._renew_lane(lane, pool)

    async def run(self, kind: str, items, opts: dict, request_id: str, *, slot: "_Slot", state=None):
        """The output lines of a request's items, scored or verified by a worker; 503 when time runs out or
        a scoring process died.  ``slot`` (:meth:`reserve`) is released when the job has really ended (a
        timed-out job still holds it, and its scoring process's in-flight count, until it stops).
        ``state`` (a request's ``state``) gets ``score_s``: the seconds the job ran in the worker."""
        deadline = slot.deadline
        lane = self._lane_for(items) if self._lanes else None
        data = _items_jsonl(items)
        pool = self._lanes[lane] if lane is not None else None
        loop = asyncio.get_running_loop()
        async def renewed(when: str) -> _Refused:
            """The lane's scoring process died (``when``): replace it; the request gets 503."""
            await loop.run_in_executor(None, self._renew_lane, lane, pool)
            return _Refused(503, f"a scoring process died {when}; it was restarted: retry", {"Retry-After": "1"})

        try:
            future = self._submit(lane, kind, deadline, data, opts, request_id)
        except concurrent.futures.BrokenExecutor:
            if lane is None:
                raise
            raise await renewed("before this request came") from None
        if lane is not None:
            self._in_flight[lane] += 1

        def ended(_f, lane=lane):
            if lane is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: the service is stopping
                    loop.call_soon_threadsafe(self._lane_done, lane)
            slot.release()

        slot.handed_off = True
        future.add_done_callback(ended)
        waited = asyncio.wrap_future(future)
        waited.add_done_callback(_consume)  # a timed-out job's late _Timeout is nobody's error
        remaining = max(0.0, deadline - time.monotonic())
        try:
            lines, seconds = await asyncio.wait_for(asyncio.shield(waited), timeout=remaining)
        except (asyncio.TimeoutError, _Timeout):
            future.cancel()  # never runs if not started; a started job stops at its next deadline check
            if lane is not None:
                loop.call_later(_KILL_GRACE, lambda: loop.run_in_executor(
                    None, self._kill_if_running, lane, pool, future))
            raise _Refused(503, f"the request took longer than {self.config.request_timeout:g} s "
                                "(request_timeout); answers scored before the limit are in the audit log",
                           {"Retry-After": "1"}) from None
        except concurrent.futures.BrokenExecutor:
            if lane is None:
                raise
            raise await renewed("while this request waited or ran") from None
        if state is not None:
            state.score_s = seconds
        return lines

    def _lane_done(self, lane: int) -> None:
        self._in_flight[lane] -= 1


def _consume(future) -> None:
    if not future.cancelled():
        future.exception()


class _Slot:
    """A request's place in the queue: taken before its body is read, given back once (when the request
    fails before its job starts, or when the job has ended)."""

    def __init__(self, service: _Service):
        self.service = service
        self.deadline = time.monotonic() + service.config.request_timeout
        self.handed_off = False  # the job's end releases it
        self._lock = threading.Lock()
        self._released = False

    def release(self):
        with self._lock:
            if self._released:
                return
            self._released = True
        self.service._release()


def _server_timing(total_s: float, score_s) -> str:
    """The ``Server-Timing`` header (W3C): the whole request in the app, and the scoring job alone, ms."""
    parts = [f"app;dur={total_s * 1000:.3f}"]
    if score_s is not None:
        parts.append(f"score;dur={score_s * 1000:.3f}")
    return ", ".join(parts)


def _item_line(item) -> str:
    """One item as a line of generic JSONL, read by `evqual score` as the same line of a file would be: a
    number JSON cannot hold (``1e999`` in the body) is written as ``Infinity``, which the reader takes as
    `evqual score` takes it (a pass-through field dropped with W002, a required field an E103 record);
    a value that cannot be written at all is an E101 line of its own, never an error of the whole batch."""
    from ..scoring import dumps_line

    try:
        return dumps_line(item) if isinstance(item, dict) else json.dumps(item) + "\n"
    except ValueError:
        pass
    try:
        return json.dumps(item, ensure_ascii=True, allow_nan=True) + "\n"
    except (ValueError, TypeError, RecursionError):
        return '"this item cannot be written as JSON"\n'


def _items_jsonl(items) -> bytes:
    """The items as the lines of a generic JSONL (any JSON value: a line that is not an object gets the
    error record `evqual score` gives it)."""
    return "".join(_item_line(it) for it in items).encode("utf-8")


def _stream(data: bytes, request_id: str):
    s = io.BytesIO(data)
    s.name = f"<request {request_id}>"
    return s


def _score_job(worker: _Worker, deadline: float, data: bytes, policy, verify, request_id) -> list:
    """The lines ``evqual score`` writes for the JSONL ``data`` (``policy``: validated overrides, or None)."""
    from ..scoring import Scorer, score_file

    scorer = worker.scorer
    policy = scorer.policy.with_overrides(policy) if policy is not None else None
    if verify is not None:
        scorer = Scorer(scorer.detector, policy=scorer.policy, verifier=worker.verifier(verify))
    out = io.StringIO()
    audit = _RequestAudit(worker.audit, request_id) if worker.audit is not None else None

    def progress(_done):
        if time.monotonic() > deadline:
            raise _Timeout()

    score_file(_stream(data, request_id), out, scorer, policy=policy, audit=audit,
               progress=progress, batch_size=_BATCH_SIZE, include_context=worker.config.include_context)
    return out.getvalue().splitlines()


def _verify_job(worker: _Worker, deadline: float, data: bytes, method, request_id) -> list:
    """The lines ``evqual verify`` writes for the JSONL ``data``."""
    from ..verify import verify_file

    out = io.StringIO()

    def progress(_done):
        if time.monotonic() > deadline:
            raise _Timeout()

    verify_file(_stream(data, request_id), out, worker.verifier(method), progress=progress)
    return out.getvalue().splitlines()


def _envelope(request_id: str, lines: list, single: bool) -> bytes:
    """``{"request_id": ..., "result": line}`` (or ``"results": [lines]``) as JSON bytes, each line (strict
    JSON, as :func:`evqual.scoring.dumps_line` writes it) put in as it is."""
    head = '{"request_id": ' + json.dumps(request_id)
    if single:
        return (head + ', "result": ' + lines[0] + "}").encode("utf-8")
    return (head + ', "results": [' + ", ".join(lines) + "]}").encode("utf-8")


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _parse_body(data: bytes):
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _Refused(400, f"the body is not valid UTF-8 JSON: {str(exc)[:200]}") from None


def _split_request(body, config: ServeConfig, options: tuple):
    """``(items, single, {option: value})`` of a request body: ``{"items": [...], options...}`` or one item
    whose option keys are taken out."""
    if not isinstance(body, dict):
        raise _Refused(422, f"the body must be a JSON object (one item, or {{\"items\": [...]}}); "
                            f"got {type(body).__name__}")
    if "items" in body:
        unknown = sorted(set(body) - {"items", *options})
        if unknown:
            raise _Refused(422, f"unknown key(s) {unknown} beside 'items' (allowed: {list(options)})")
        items = body["items"]
        if not isinstance(items, list):
            raise _Refused(422, f"'items' must be a list; got {type(items).__name__}")
        if not items:
            raise _Refused(422, "'items' is empty")
        if len(items) > config.max_batch:
            raise _Refused(422, f"{len(items)} items in one request; at most {config.max_batch} (max_batch)")
        return items, False, {k: body[k] for k in options if k in body}
    item = dict(body)
    opts = {k: item.pop(k) for k in options if k in item}
    return [item], True, opts


def create_app(config: ServeConfig | None = None, *, scorer=None):
    """The FastAPI application of ``evqual serve``.

    Parameters
    ----------
    config : ServeConfig, optional
        Defaults: :class:`ServeConfig`'s.
    scorer : evqual.scoring.Scorer, optional
        Serve this scorer instead of loading ``config.model`` (its policy is the service's base policy).

    Returns
    -------
    fastapi.FastAPI
        The model is loaded and audited when the app starts (its lifespan), not here.

    Examples
    --------
    Serving it yourself, pass :func:`evqual.service.uvicorn_options` too: the header timeout, the
    connection cap and the keep-alive timeout live in uvicorn's protocol, not in the app.

    >>> config = ServeConfig(max_batch=8)  # doctest: +SKIP
    >>> import uvicorn  # doctest: +SKIP
    >>> uvicorn.run(create_app(config), host="127.0.0.1", port=8000, **uvicorn_options(config))  # doctest: +SKIP
    """
    fastapi = _require("fastapi", "fastapi")
    responses = _require("fastapi.responses", "fastapi")
    JSONResponse, Response = responses.JSONResponse, responses.Response
    config = ServeConfig() if config is None else config
    service = _Service(config, scorer)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await asyncio.get_running_loop().run_in_executor(None, service.start)
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, service.stop)

    from .._version import __version__

    app = fastapi.FastAPI(title="evqual", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                          openapi_url="/openapi.json",
                          description="Whether a RAG answer is supported by its evidence: risk, decision, "
                                      "sentences, spans and reasons, as `evqual score` writes them.")
    app.state.service = service
    if config.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type", "X-Request-ID"])

    def error(status, message, request_id, headers=None):
        return JSONResponse({"error": message, "request_id": request_id}, status_code=status,
                            headers={"X-Request-ID": request_id, **(headers or {})})

    def request_id_of(request) -> str:
        given = request.headers.get("x-request-id")
        return given if given and _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex

    async def read_body(request) -> bytes:
        """The body, within ``body_timeout`` (408 and the connection closed past it)."""
        try:
            return await asyncio.wait_for(read_body_now(request), timeout=config.body_timeout)
        except asyncio.TimeoutError:
            raise _Refused(408, f"the body did not arrive within {config.body_timeout:g} s (body_timeout)",
                           {"Connection": "close"}) from None

    async def read_body_now(request) -> bytes:
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise _Refused(400, "invalid Content-Length")
            if int(length) > config.max_body_bytes:
                raise _Refused(413, f"the body is {int(length)} bytes; at most {config.max_body_bytes} "
                                    "(max_body_bytes)")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > config.max_body_bytes:
                raise _Refused(413, f"the body is over {config.max_body_bytes} bytes (max_body_bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    async def guarded(request, endpoint: str, handler):
        """Auth, limits, metrics and the JSON error of every /v1 endpoint."""
        rid = request_id_of(request)
        start = time.perf_counter()
        status = 500
        try:
            if not service.authorised(request.headers.get("authorization")):
                status = 401
                return error(401, "unauthorized", rid, {"WWW-Authenticate": "Bearer"})
            if not service.ready:
                status = 503
                return error(503, "the model is not loaded yet", rid, {"Retry-After": "1"})
            request.state.score_s = None
            payload = await handler(request, rid)
            status = 200
            if isinstance(payload, bytes):  # the result lines as written, not parsed and encoded again
                response = Response(payload, media_type="application/json", headers={"X-Request-ID": rid})
            else:
                response = JSONResponse(payload, headers={"X-Request-ID": rid})
            response.headers["Server-Timing"] = _server_timing(time.perf_counter() - start, request.state.score_s)
            return response
        except _Refused as exc:
            status = exc.status
            return error(exc.status, exc.message, rid, exc.headers)
        except Exception as exc:  # noqa: BLE001 - a request never takes the service down
            status = 500
            return error(500, f"internal error: {type(exc).__name__}", rid)
        finally:
            if service.metrics is not None:
                service.metrics.requests.labels(endpoint, str(status)).inc()
                service.metrics.latency.labels(endpoint).observe(time.perf_counter() - start)

    def count(records, endpoint):
        m = service.metrics
        for r in records:
            if r.get("error") is not None and "risk" not in r:
                for issue in r.get("issues") or [{"code": "E110"}]:
                    m.errors.labels(str(issue.get("code"))).inc()
            else:
                m.answers.labels(endpoint).inc()
                if r.get("decision"):
                    m.decisions.labels(str(r["decision"])).inc()

    def check_policy(policy) -> None:
        """A request's policy overrides, as ``policy_overrides`` allows them (403 when it does not)."""
        if config.policy_overrides == "off":
            raise _Refused(403, "policy overrides are switched off on this service (evqual serve "
                                "--policy-overrides stricter|any turns them on)")
        try:
            merged = service.scorer.policy.with_overrides(policy)  # checked here: a bad override is a 422
        except ValueError as exc:
            raise _Refused(422, f"policy: {exc}") from None
        if config.policy_overrides == "stricter":
            looser = merged.looser_than(service.scorer.policy,
                                        float(getattr(service.scorer.detector, "threshold_", 0.5)))
            if looser:
                raise _Refused(403, f"policy: overrides may only make decisions stricter on this service "
                                    f"(policy_overrides 'stricter'); looser: {', '.join(looser)}")

    async def with_slot(request, handle):
        """``handle(body)`` holding a queue place from before the body is read until the job has ended."""
        slot = service.reserve()
        try:
            return await handle(_parse_body(await read_body(request)), slot)
        finally:
            if not slot.handed_off:
                slot.release()

    async def score_handler(request, rid):
        return await with_slot(request, lambda body, slot: score_body(body, slot, request, rid))

    async def score_body(body, slot, request, rid):
        items, single, opts = _split_request(body, config, ("policy", "verify"))
        policy = opts.get("policy")
        if policy is not None:
            check_policy(policy)
        verify = opts.get("verify")
        if verify is not None and verify not in ("claims", "metarag"):
            raise _Refused(422, f"verify must be 'claims', 'metarag' or null; got {verify!r}")
        lines = await service.run("score", items, {"policy": policy, "verify": verify}, rid, slot=slot,
                                  state=request.state)
        records = [json.loads(line) for line in lines]
        count(records, "score")
        if single and "risk" not in records[0]:
            raise _Refused(422, records[0].get("error") or "the item could not be scored")
        return _envelope(rid, lines, single)

    async def verify_handler(request, rid):
        return await with_slot(request, lambda body, slot: verify_body(body, slot, request, rid))

    async def verify_body(body, slot, request, rid):
        items, single, opts = _split_request(body, config, ("method",))
        method = opts.get("method", "claims")
        if method not in ("claims", "metarag"):
            raise _Refused(422, f"method must be 'claims' or 'metarag'; got {method!r}")
        lines = await service.run("verify", items, {"method": method}, rid, slot=slot, state=request.state)
        records = [json.loads(line) for line in lines]
        count(records, "verify")
        return _envelope(rid, lines, single)

    async def model_handler(request, rid):
        info = service.scorer.model_info
        det = service.scorer.detector
        return {"request_id": rid, "name": info.name, "method": info.method, "version": info.version,
                "sha256": info.sha256, "entity_backend": info.entity_backend,
                "threshold": float(getattr(det, "threshold_", 0.5)),
                "policy": service.scorer.policy.to_dict(),
                "limits": {"max_body_bytes": config.max_body_bytes, "max_batch": config.max_batch,
                           "request_timeout": config.request_timeout, "max_queue": config.max_queue,
                           "body_timeout": config.body_timeout, "header_timeout": config.header_timeout,
                           "keep_alive_timeout": config.keep_alive_timeout,
                           "max_connections": config.max_connections},
                "policy_overrides": config.policy_overrides,
                "out_of_distribution": _ood_info(det),
                "adaptation": _adaptation_info(det),
                "evqual_version": __version__}

    @app.post("/v1/score", summary="Score one answer, or a batch of them",
              description="One item `{query, context, output, id?, ...}` (optionally with `policy` overrides and "
                          "`verify`) or `{\"items\": [...], \"policy\"?: {...}, \"verify\"?: ...}`. Each result is "
                          "the JSON line `evqual score` writes for that item; a bad item gets its error record.")
    async def score(request: fastapi.Request):
        return await guarded(request, "score", score_handler)

    @app.post("/v1/verify", summary="Verify one answer, or a batch, claim by claim or by MetaRAG")
    async def verify(request: fastapi.Request):
        return await guarded(request, "verify", verify_handler)

    @app.get("/v1/model", summary="The model served: method, version, SHA-256, threshold, policy, limits")
    async def model(request: fastapi.Request):
        return await guarded(request, "model", model_handler)

    from starlette.exceptions import HTTPException as _HTTPException

    @app.exception_handler(_HTTPException)
    async def http_error(request, exc):
        """Starlette's own errors (an unknown path, a method not allowed) in the service's error shape."""
        message = {404: "not found", 405: "method not allowed"}.get(exc.status_code, str(exc.detail))
        return error(exc.status_code, f"{message}: {request.method} {request.url.path[:200]}"
                     if exc.status_code in (404, 405) else message, request_id_of(request),
                     dict(exc.headers or {}))

    @app.get("/healthz", summary="The process is up")
    async def healthz():
        return {"status": "ok"}

    @app.get("/readyz", summary="The model is loaded and audited")
    async def readyz():
        if not service.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return {"status": "ready", "model_sha256": service.scorer.model_info.sha256}

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics(request: fastapi.Request):
        if not service.authorised(request.headers.get("authorization")):
            return error(401, "unauthorized", request_id_of(request), {"WWW-Authenticate": "Bearer"})
        if service.metrics is None:
            return error(503, "the model is not loaded yet", request_id_of(request))
        data, ctype = service.metrics.render()
        return Response(data, media_type=ctype)

    return app
