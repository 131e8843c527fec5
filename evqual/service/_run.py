"""Starting the service: :func:`serve` (what ``evqual serve`` runs)."""

from __future__ import annotations

import json
import os
import sys
import tempfile

from ._app import _require, create_app
from ._config import CONFIG_ENV, ServeConfig

__all__ = ["serve"]


def serve(config: ServeConfig, *, tokens_file=None, log_level: str = "info") -> None:
    """Run the service until SIGINT or SIGTERM (graceful: requests in flight finish and their audit
    records are written before the process exits).

    With ``config.workers == 1`` the app runs in this process.  With more, uvicorn starts that many
    worker processes; each builds the app from ``$EVQUAL_SERVE_CONFIG`` (set here, without tokens: the
    workers read ``$EVQUAL_API_TOKENS`` and ``tokens_file`` themselves) and loads and audits the model
    once, and Prometheus metrics are gathered across them in a private temporary folder.

    The model is loaded and audited in this process first, so a bad model, SHA-256 or policy stops here
    with an error instead of in every worker.
    """
    uvicorn = _require("uvicorn", "uvicorn")
    from ..models import default_model_path, load_detector
    from ..scoring import Policy, Scorer, load_policy

    policy = load_policy(config.policy) if config.policy else Policy()
    detector = load_detector(config.model or default_model_path(), sha256=config.model_sha256)  # fail fast, once
    if config.workers == 1:
        uvicorn.run(create_app(config, scorer=Scorer(detector, policy=policy)), host=config.host, port=config.port,
                    log_level=log_level, timeout_graceful_shutdown=None)
        return
    del detector  # each worker loads and audits its own
    env = json.loads(config.to_env())
    env["tokens_file"] = os.fspath(tokens_file) if tokens_file is not None else None
    with tempfile.TemporaryDirectory(prefix="evqual-metrics-") as metrics_dir:
        os.environ[CONFIG_ENV] = json.dumps(env)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        try:
            uvicorn.run("evqual.service._app:app_from_env", factory=True, host=config.host, port=config.port,
                        workers=config.workers, log_level=log_level, timeout_graceful_shutdown=None)
        finally:
            os.environ.pop(CONFIG_ENV, None)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    sys.stdout.flush()
