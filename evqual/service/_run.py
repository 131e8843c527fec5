"""Starting the service: :func:`serve` (what ``evqual serve`` runs)."""

from __future__ import annotations

import dataclasses
import sys

from ._app import _load_scorer, _require, create_app
from ._config import ServeConfig, load_tokens

__all__ = ["serve"]


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
    uvicorn.run(create_app(config, scorer=scorer), host=config.host, port=config.port,
                log_level=log_level, timeout_graceful_shutdown=None)
    sys.stdout.flush()
