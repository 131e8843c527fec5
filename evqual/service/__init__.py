"""evqual as an HTTP service (``evqual serve``; the ``server`` extra: FastAPI, uvicorn, prometheus-client).

A thin layer over :mod:`evqual.scoring`: ``POST /v1/score`` and ``POST /v1/verify`` take one item or
``{"items": [...]}`` and return what ``evqual score`` / ``evqual verify`` write for the same lines;
``GET /v1/model``, ``/healthz``, ``/readyz``, ``/metrics`` (Prometheus) and ``/openapi.json``.

>>> ServeConfig().host
'127.0.0.1'
"""

from ._app import SERVICE_ENDPOINTS, create_app
from ._config import TOKENS_ENV, ServeConfig, load_tokens
from ._run import guarded_protocol, serve, uvicorn_options

__all__ = ["SERVICE_ENDPOINTS", "ServeConfig", "TOKENS_ENV", "create_app", "guarded_protocol", "load_tokens", "serve",
           "uvicorn_options"]
