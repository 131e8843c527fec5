"""The HTTP service: a FastAPI app over :mod:`evqual.scoring` and :mod:`evqual.verify`.

Nothing here scores: a request's items are written as the lines of a generic
JSONL and go through :func:`evqual.scoring.score_file` (or
:func:`evqual.verify.verify_file`), so a result, an error record and an audit
record are exactly what ``evqual score`` (``evqual verify``) writes for the
same line, with the item's position as its ``line``.

Scoring is CPU-bound: it runs on one thread per worker process, off the event
loop, so ``/healthz`` and ``/readyz`` answer while a batch is scored; at most
``max_queue`` requests wait for that thread (more get 503 at once), and a
request past ``request_timeout`` gets 503 (the blocks scored before are in
the audit log, and the rest are not scored).
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
from ._config import TOKENS_ENV, ServeConfig, load_tokens

__all__ = ["create_app", "app_from_env", "SERVICE_ENDPOINTS"]

SERVICE_ENDPOINTS = ("/v1/score", "/v1/verify", "/v1/model", "/healthz", "/readyz", "/metrics", "/openapi.json")
"""Every path the service answers."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_BATCH_SIZE = 16  # answers featurized together, as `evqual score`'s default


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
    """Prometheus metrics of one app (its own registry; the multiprocess collector with several workers)."""

    def __init__(self, model_info):
        pc = _require("prometheus_client", "prometheus-client")
        self.pc = pc
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = pc.CollectorRegistry()
        kw = {"registry": None if self.multiprocess else self.registry}
        self.requests = pc.Counter("evqual_requests", "HTTP requests by endpoint and status",
                                   ["endpoint", "status"], **kw)
        self.latency = pc.Histogram("evqual_request_seconds", "Request latency by endpoint", ["endpoint"],
                                    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
                                    **kw)
        self.decisions = pc.Counter("evqual_decisions", "Scored answers by decision", ["decision"], **kw)
        self.errors = pc.Counter("evqual_item_errors", "Items refused or failed, by error code", ["code"], **kw)
        self.answers = pc.Counter("evqual_answers", "Answers scored or verified", ["endpoint"], **kw)
        info_kw = dict(kw, multiprocess_mode="max") if self.multiprocess else kw
        self.model = pc.Gauge("evqual_model_info", "The loaded model (value 1)",
                              ["name", "method", "version", "sha256"], **info_kw)
        self.model.labels(model_info.name, model_info.method, model_info.version, model_info.sha256).set(1)
        self.queue = pc.Gauge("evqual_queue_depth", "Requests waiting for or holding the scoring thread",
                              **(dict(kw, multiprocess_mode="livesum") if self.multiprocess else kw))

    def render(self) -> tuple:
        pc = self.pc
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = pc.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        else:
            registry = self.registry
        return pc.generate_latest(registry), pc.CONTENT_TYPE_LATEST


class _Service:
    """The state of one worker: the scorer, the verifiers, the audit log, the scoring thread, metrics."""

    def __init__(self, config: ServeConfig, scorer=None):
        self.config = config
        self.scorer = scorer
        self.audit = None
        self.metrics = None
        self.ready = False
        self.tokens = tuple(t.encode("utf-8") for t in config.tokens)
        self._verifiers: dict = {}
        self._verifier_lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="evqual-score")
        self._waiting = 0
        self._waiting_lock = threading.Lock()

    # ------------------------------------------------------------------ life
    def start(self):
        from ..scoring import AuditLog, Policy, Scorer, load_policy

        if self.scorer is None:
            from ..models import load_detector, default_model_path

            policy = load_policy(self.config.policy) if self.config.policy else Policy()
            det = load_detector(self.config.model or default_model_path(), sha256=self.config.model_sha256)
            self.scorer = Scorer(det, policy=policy)
        if self.scorer.policy is None:
            self.scorer.policy = Policy()
        if self.config.audit_log:
            self.audit = AuditLog(self.config.audit_log)
        self.metrics = _Metrics(self.scorer.model_info)
        self.ready = True

    def stop(self):
        self.ready = False
        self._pool.shutdown(wait=True)  # a request still being scored finishes, and its audit records with it
        if self.audit is not None:
            self.audit.close()

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
    def verifier(self, method: str):
        from ..verify import make_verifier

        with self._verifier_lock:
            v = self._verifiers.get(method)
            if v is None:
                v = self._verifiers[method] = make_verifier(method, self.config.verify_backend)
            return v

    async def run(self, fn, *args, state=None):
        """``fn(deadline, *args)`` on the scoring thread; 503 when the queue is full or time runs out.

        ``state`` (a request's ``state``) gets ``score_s``: the seconds ``fn`` ran on the scoring thread."""
        with self._waiting_lock:
            if self._waiting >= self.config.max_queue:
                raise _Refused(503, f"busy: {self._waiting} requests are waiting (max_queue)",
                               {"Retry-After": "1"})
            self._waiting += 1
        self.metrics.queue.inc()
        deadline = time.monotonic() + self.config.request_timeout
        try:
            future = self._pool.submit(_timed, state, fn, deadline, *args)
            try:
                return await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.config.request_timeout)
            except (asyncio.TimeoutError, _Timeout):
                future.cancel()  # not started yet: never runs; started: stops at its next block
                raise _Refused(503, f"the request took longer than {self.config.request_timeout:g} s "
                                    "(request_timeout); answers scored before the limit are in the audit log",
                               {"Retry-After": "1"}) from None
        finally:
            with self._waiting_lock:
                self._waiting -= 1
            self.metrics.queue.dec()


def _timed(state, fn, *args):
    start = time.perf_counter()
    try:
        return fn(*args)
    finally:
        if state is not None:
            state.score_s = time.perf_counter() - start


def _server_timing(total_s: float, score_s) -> str:
    """The ``Server-Timing`` header (W3C): the whole request in the app, and the scoring job alone, ms."""
    parts = [f"app;dur={total_s * 1000:.3f}"]
    if score_s is not None:
        parts.append(f"score;dur={score_s * 1000:.3f}")
    return ", ".join(parts)


def _items_jsonl(items) -> bytes:
    """The items as the lines of a generic JSONL (any JSON value: a line that is not an object gets the
    error record `evqual score` gives it)."""
    from ..scoring import dumps_line

    return "".join(dumps_line(it) if isinstance(it, dict) else json.dumps(it) + "\n" for it in items).encode("utf-8")


def _stream(data: bytes, request_id: str):
    s = io.BytesIO(data)
    s.name = f"<request {request_id}>"
    return s


def _score_job(service: _Service, deadline: float, items, policy, verify, request_id):
    from ..scoring import Scorer, score_file

    scorer = service.scorer
    if verify is not None:
        scorer = Scorer(scorer.detector, policy=scorer.policy, verifier=service.verifier(verify))
    out = io.StringIO()
    audit = _RequestAudit(service.audit, request_id) if service.audit is not None else None

    def progress(_done):
        if time.monotonic() > deadline:
            raise _Timeout()

    score_file(_stream(_items_jsonl(items), request_id), out, scorer, policy=policy, audit=audit,
               progress=progress, batch_size=_BATCH_SIZE, include_context=service.config.include_context)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _verify_job(service: _Service, deadline: float, items, method, request_id):
    from ..verify import verify_file

    out = io.StringIO()

    def progress(_done):
        if time.monotonic() > deadline:
            raise _Timeout()

    verify_file(_stream(_items_jsonl(items), request_id), out, service.verifier(method), progress=progress)
    return [json.loads(line) for line in out.getvalue().splitlines()]


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
    >>> app = create_app(ServeConfig(max_batch=8))  # doctest: +SKIP
    >>> import uvicorn; uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
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

    async def score_handler(request, rid):
        body = _parse_body(await read_body(request))
        items, single, opts = _split_request(body, config, ("policy", "verify"))
        policy = None
        if opts.get("policy") is not None:
            try:
                policy = service.scorer.policy.with_overrides(opts["policy"])
            except ValueError as exc:
                raise _Refused(422, f"policy: {exc}") from None
        verify = opts.get("verify")
        if verify is not None and verify not in ("claims", "metarag"):
            raise _Refused(422, f"verify must be 'claims', 'metarag' or null; got {verify!r}")
        records = await service.run(lambda d: _score_job(service, d, items, policy, verify, rid),
                                    state=request.state)
        count(records, "score")
        if single:
            rec = records[0]
            if "risk" not in rec:
                raise _Refused(422, rec.get("error") or "the item could not be scored")
            return {"request_id": rid, "result": rec}
        return {"request_id": rid, "results": records}

    async def verify_handler(request, rid):
        body = _parse_body(await read_body(request))
        items, single, opts = _split_request(body, config, ("method",))
        method = opts.get("method", "claims")
        if method not in ("claims", "metarag"):
            raise _Refused(422, f"method must be 'claims' or 'metarag'; got {method!r}")
        records = await service.run(lambda d: _verify_job(service, d, items, method, rid), state=request.state)
        count(records, "verify")
        if single:
            return {"request_id": rid, "result": records[0]}
        return {"request_id": rid, "results": records}

    async def model_handler(request, rid):
        info = service.scorer.model_info
        det = service.scorer.detector
        return {"request_id": rid, "name": info.name, "method": info.method, "version": info.version,
                "sha256": info.sha256, "entity_backend": info.entity_backend,
                "threshold": float(getattr(det, "threshold_", 0.5)),
                "policy": service.scorer.policy.to_dict(),
                "limits": {"max_body_bytes": config.max_body_bytes, "max_batch": config.max_batch,
                           "request_timeout": config.request_timeout, "max_queue": config.max_queue},
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


def app_from_env():
    """The app of a worker process of ``evqual serve --workers N``: its configuration from
    ``$EVQUAL_SERVE_CONFIG``, its tokens from ``$EVQUAL_API_TOKENS`` and the configured tokens file."""
    from ._config import CONFIG_ENV

    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise RuntimeError(f"${CONFIG_ENV} is not set: start the service with `evqual serve`")
    d = json.loads(text)
    tokens = load_tokens(env=os.environ.get(TOKENS_ENV), tokens_file=d.pop("tokens_file", None))
    return create_app(ServeConfig(**{**d, "cors_origins": tuple(d.get("cors_origins", ()))}, tokens=tokens))
