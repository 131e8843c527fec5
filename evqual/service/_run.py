"""Starting the service: :func:`serve` (what ``evqual serve`` runs)."""

from __future__ import annotations

import dataclasses
import sys

from ._app import _load_scorer, _require, create_app
from ._config import ServeConfig, load_tokens

__all__ = ["serve", "guarded_protocol", "uvicorn_options"]


def guarded_protocol(base, *, header_timeout: float, max_connections: int):
    """uvicorn's HTTP protocol class ``base`` with two limits uvicorn lacks (issue 39, slowloris):

    * a connection that has not sent a complete request head ``header_timeout`` seconds after it opened,
      or after data of a new request began to arrive, is closed (uvicorn waits for ever: its keep-alive
      timer stops at the first byte);
    * a connection opened while ``max_connections`` are open is closed at once (uvicorn's
      ``limit_concurrency`` answers 503 only once a head is complete).

    Works on both of uvicorn's HTTP/1.1 implementations (httptools and h11): it reads only ``connections``,
    ``cycle``, ``loop`` and ``transport``, which both have.
    """

    class GuardedProtocol(base):
        _evq_timer = None
        _evq_armed_cycle = None

        def connection_made(self, transport):
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()
                return
            self._evq_arm()

        def data_received(self, data):
            if self._evq_timer is None and self._evq_idle():
                self._evq_arm()
            super().data_received(data)

        def connection_lost(self, exc):
            if self._evq_timer is not None:
                self._evq_timer.cancel()
                self._evq_timer = None
            super().connection_lost(exc)

        def _evq_idle(self) -> bool:
            cycle = getattr(self, "cycle", None)
            return cycle is None or cycle.response_complete

        def _evq_arm(self):
            self._evq_armed_cycle = getattr(self, "cycle", None)
            self._evq_timer = self.loop.call_later(header_timeout, self._evq_expire)

        def _evq_expire(self):
            self._evq_timer = None
            if self.transport.is_closing():
                return
            if getattr(self, "cycle", None) is self._evq_armed_cycle and self._evq_idle():
                self.transport.close()  # no request head completed since the timer was armed
            elif self._evq_idle():
                self._evq_arm()  # a request came and went: time the next head from now

    GuardedProtocol.__name__ = GuardedProtocol.__qualname__ = f"Guarded{base.__name__}"
    return GuardedProtocol


def uvicorn_options(config: ServeConfig) -> dict:
    """The keyword arguments of ``uvicorn.run`` that set the service's connection limits."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return {"http": guarded_protocol(AutoHTTPProtocol, header_timeout=config.header_timeout,
                                     max_connections=config.max_connections),
            "timeout_keep_alive": config.keep_alive_timeout, "limit_concurrency": config.max_connections,
            "h11_max_incomplete_event_size": 16 * 1024}


def serve(config: ServeConfig, *, tokens_file=None, log_level: str = "info") -> None:
    """Run the service until SIGINT or SIGTERM (graceful: requests in flight finish and their audit
    records are written before the process exits).

    One uvicorn process serves HTTP; with ``config.workers`` > 1 it scores in that many scoring processes,
    each loading and auditing the model once; a request goes to the one its context hashes to, or to the
    least busy, whichever connection it came on.  ``tokens_file`` adds its tokens to ``config.tokens``.

    The model is loaded and audited in this process first, so a bad model, SHA-256 or policy stops here
    with an error before the server starts.
    """
    uvicorn = _require("uvicorn", "uvicorn")
    if tokens_file is not None:
        extra = load_tokens(tokens_file=tokens_file)
        config = dataclasses.replace(config, tokens=tuple(dict.fromkeys((*config.tokens, *extra))))
    scorer = _load_scorer(config)  # fail fast, once
    if config.audit_log:  # an unwritable log is an error here, not a traceback of the server's startup
        from ..scoring import AuditLog

        try:
            AuditLog(config.audit_log).close()
        except OSError as exc:
            raise ValueError(f"--audit-log {config.audit_log}: {exc.strerror or exc}") from None
    uvicorn.run(create_app(config, scorer=scorer), host=config.host, port=config.port,
                log_level=log_level, timeout_graceful_shutdown=None, **uvicorn_options(config))
    sys.stdout.flush()
