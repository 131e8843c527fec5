"""What a running service needs to know: :class:`ServeConfig`, validated when made, and its API tokens."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

__all__ = ["ServeConfig", "TOKENS_ENV", "load_tokens"]

TOKENS_ENV = "EVQUAL_API_TOKENS"
"""Comma-separated bearer tokens; when set (or ``--tokens-file`` is given), every ``/v1`` endpoint needs one."""

_MIN_TOKEN = 16

POLICY_OVERRIDES = ("off", "stricter", "any")
"""The values of :attr:`ServeConfig.policy_overrides`."""


def load_tokens(*, env: str | None = None, tokens_file=None) -> tuple:
    """The API tokens of ``$EVQUAL_API_TOKENS`` (comma-separated) and of ``tokens_file`` (one per line,
    ``#`` comments), de-duplicated.  Raises ValueError naming the source of a token shorter than 16
    characters or holding whitespace, and OSError when the file cannot be read.

    >>> load_tokens(env="0123456789abcdef, fedcba9876543210")
    ('0123456789abcdef', 'fedcba9876543210')
    """
    found: list = []
    sources = []
    if env:
        sources.append((f"${TOKENS_ENV}", [t.strip() for t in env.split(",")]))
    if tokens_file is not None:
        text = Path(tokens_file).read_text(encoding="utf-8")
        sources.append((str(tokens_file), [ln.strip() for ln in text.splitlines()
                                           if ln.strip() and not ln.strip().startswith("#")]))
    for where, tokens in sources:
        for i, tok in enumerate(tokens, 1):
            if not tok:
                continue
            if len(tok) < _MIN_TOKEN or any(c.isspace() for c in tok) or not tok.isprintable():
                raise ValueError(f"{where}: token {i} must be at least {_MIN_TOKEN} printable characters without "
                                 f"spaces (got {len(tok)} characters)")
            if tok not in found:
                found.append(tok)
    return tuple(found)


def _positive(name, value, kind=int, *, zero=False):
    ok = isinstance(value, kind) and not isinstance(value, bool) if kind is int else \
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be a {'positive ' if not zero else ''}"
                         f"{'integer' if kind is int else 'number'}{' or 0' if zero else ''}; got {value!r}")


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    """The configuration of ``evqual serve`` (every field checked when the object is made).

    Parameters
    ----------
    host : str, default="127.0.0.1"
        Interface to listen on; the default takes no connection from other machines.
    port : int, default=8000
    workers : int, default=1
        Scoring workers: 1 scores on a thread of the server's process; more score in that many
        processes, each loading and auditing the model once (a request goes to the one its context
        hashes to, or to the least busy).
    model : str or None
        Model folder (default: the shipped ``models/default``).
    model_sha256 : str or None
        Refuse to start unless the model file has this SHA-256 (as ``evqual score --model-sha256``).
    policy : str or None
        Decision policy TOML (as ``evqual score --policy``).
    audit_log : str or None
        Append one audit record per scored answer (and per refused item), each with its request id.
    max_body_bytes : int, default=8_000_000
        A larger request body is refused with 413 before it is parsed.
    max_batch : int, default=64
        Items in one request, at most (more: 422).
    request_timeout : float, default=30.0
        Seconds a request may wait and run; past it the service answers 503 (items scored before the
        limit are in the audit log).
    max_queue : int, default=64
        Requests being read, waiting for or holding a scoring worker, at most (more: 503 at once, before
        the body is read).  A request keeps its place until its job has really ended: a job past
        ``request_timeout`` still counts until it has stopped.
    body_timeout : float, default=30.0
        Seconds to receive a request's whole body; a client that sends it slower gets 408 and its
        connection is closed (a stalled upload holds no memory and no queue place for longer).
    header_timeout : float, default=10.0
        Seconds a connection has to send a complete request head (request line and headers), on a new
        connection and after each response; then it is closed (slowloris).
    keep_alive_timeout : float, default=5.0
        Seconds an idle keep-alive connection is kept open (uvicorn's ``timeout_keep_alive``).
    max_connections : int, default=256
        Open connections, at most: a connection past it is closed at once, and uvicorn answers 503 to
        requests past it (its ``limit_concurrency``).
    policy_overrides : {"off", "stricter", "any"}, default="off"
        What a request's ``policy`` key may do: ``"off"`` refuses it (403), ``"stricter"`` accepts only
        overrides that flag at least what the service's policy flags (lower thresholds, a wider
        escalation band, more escalation reasons; :meth:`evqual.scoring.Policy.looser_than`), ``"any"``
        accepts every valid override (a client may then switch flagging off).
    cors_origins : tuple of str, default=()
        Origins allowed by CORS; none by default (no CORS headers at all).
    verify_backend : {"rules", "llm"}, default="rules"
        The backend of ``verify`` requests (the ``llm`` one reads ``$EVQUAL_LLM_*``).
    include_context : bool, default=True
        Echo each answer's context in its result, as ``evqual score`` does.
    tokens : tuple of str
        Bearer tokens; empty means no authentication.  Never handed to the scoring processes.

    Examples
    --------
    >>> ServeConfig(port=8080).port
    8080
    >>> ServeConfig(max_batch=0)
    Traceback (most recent call last):
    ...
    ValueError: max_batch must be a positive integer; got 0
    """

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    model: str | None = None
    model_sha256: str | None = None
    policy: str | None = None
    audit_log: str | None = None
    max_body_bytes: int = 8_000_000
    max_batch: int = 64
    request_timeout: float = 30.0
    max_queue: int = 64
    body_timeout: float = 30.0
    header_timeout: float = 10.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 256
    policy_overrides: str = "off"
    cors_origins: tuple = ()
    verify_backend: str = "rules"
    include_context: bool = True
    tokens: tuple = dataclasses.field(default=(), repr=False)

    def __post_init__(self):
        if not isinstance(self.host, str) or not self.host:
            raise ValueError(f"host must be a non-empty string; got {self.host!r}")
        _positive("port", self.port, zero=True)
        if self.port > 65535:
            raise ValueError(f"port must be in [0, 65535]; got {self.port!r}")
        for name in ("workers", "max_body_bytes", "max_batch", "max_queue", "max_connections"):
            _positive(name, getattr(self, name))
        for name in ("request_timeout", "body_timeout", "header_timeout", "keep_alive_timeout"):
            _positive(name, getattr(self, name), float)
        if self.policy_overrides not in POLICY_OVERRIDES:
            raise ValueError(f"policy_overrides must be one of {', '.join(POLICY_OVERRIDES)}; "
                             f"got {self.policy_overrides!r}")
        if self.verify_backend not in ("rules", "llm"):
            raise ValueError(f"verify_backend must be 'rules' or 'llm'; got {self.verify_backend!r}")
        if not isinstance(self.include_context, bool):
            raise ValueError(f"include_context must be a bool; got {self.include_context!r}")
        for name in ("cors_origins", "tokens"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"{name} must be a sequence of non-empty strings; got {value!r}")
            object.__setattr__(self, name, tuple(value))
        for name in ("model", "model_sha256", "policy", "audit_log"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"{name} must be a path or None; got {value!r}")
            if value is not None:
                object.__setattr__(self, name, os.fspath(value))

    def to_env(self) -> str:
        """This configuration as JSON, without the tokens: what a scoring process is started with."""
        d = dataclasses.asdict(self)
        d.pop("tokens")
        return json.dumps(d)

    @classmethod
    def from_env(cls, text: str, tokens=()) -> "ServeConfig":
        """The inverse of :meth:`to_env` (``tokens`` added back)."""
        d = json.loads(text)
        d["cors_origins"] = tuple(d.get("cors_origins", ()))
        return cls(**d, tokens=tuple(tokens))
