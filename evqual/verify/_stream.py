"""Verifying a JSONL stream, and building a verifier by name (``evqual verify``, ``evqual score --verify``).

:func:`verify_file` writes exactly one JSON line per input line, in order:
the answer's :class:`~evqual.verify.VerificationResult` (with ``line``, ``id``,
``label`` and the extra fields of the input), or an error record naming the
line, field and reason (:func:`evqual.scoring.error_record`).  No input line,
and no failure of a backend on one answer, stops the stream; only a failed
write does (:class:`evqual.scoring.StreamAborted`).
"""

from __future__ import annotations

from ..data import iter_records, response_label
from ..scoring import StreamAborted, dumps_line, error_record, input_warnings

__all__ = ["METHODS", "make_verifier", "verify_file"]

METHODS = ("claims", "metarag")


def make_verifier(method: str = "claims", backend: str = "rules", *, tau: float | None = None, mutations: int = 5,
                  retriever: str = "sparse", k: int = 3, llm_base_url: str | None = None,
                  llm_model: str | None = None, llm_api_key: str | None = None, llm_timeout: float = 30.0,
                  llm_concurrency: int = 4, llm_cache=None):
    """The verifier of ``method`` (``claims`` or ``metarag``) on ``backend`` (``rules`` or ``llm``).

    ``tau`` is the claim threshold (default 0.75) for ``claims`` and the
    flagging threshold of ``H`` for ``metarag`` (default: topic-aware, 0.5
    general and 0.3 sensitive); ``mutations`` is MetaRAG's N.  The ``llm``
    options build one :class:`~evqual.verify.LLMClient` (unset ones come from
    ``$EVQUAL_LLM_BASE_URL``, ``$EVQUAL_LLM_MODEL``, ``$EVQUAL_LLM_API_KEY``).

    >>> make_verifier("claims").method
    'claims'
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if backend not in ("rules", "llm"):
        raise ValueError(f"backend must be 'rules' or 'llm'; got {backend!r}")
    if tau is not None and (isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 <= tau <= 1):
        raise ValueError(f"tau must be a number in [0, 1]; got {tau!r}")
    if isinstance(mutations, bool) or not isinstance(mutations, int) or mutations < 1:
        raise ValueError(f"mutations must be an integer >= 1; got {mutations!r}")
    client = None
    if backend == "llm":
        from ._llm import LLMClient

        client = LLMClient(base_url=llm_base_url, model=llm_model, api_key=llm_api_key, timeout=llm_timeout,
                           concurrency=llm_concurrency, cache=llm_cache)
    from ._pipeline import ClaimVerifier, make_judge

    judge = make_judge(backend, mode="claim" if method == "claims" else "factoid", client=client)
    if method == "claims":
        return ClaimVerifier(judge=judge, retriever=retriever, k=k, tau=0.75 if tau is None else tau)
    from ._metarag import MetaRAG

    if backend == "llm":
        from ._llm_backend import LLMFactoidExtractor, LLMMutator

        return MetaRAG(judge=judge, mutator=LLMMutator(client), extractor=LLMFactoidExtractor(client),
                       n=mutations, tau=tau, k=k, retriever=retriever)
    from ._mutations import RulesMutator

    # balanced S_i: the rule-based mutator often makes fewer synonyms than antonyms, and the plain mean then lets
    # the antonyms outvote them (chosen on the development suite, docs/RESULTS.md "MetaRAG ablation")
    return MetaRAG(judge=judge, mutator=RulesMutator(), n=mutations, tau=tau, k=k, aggregate="balanced",
                   retriever=retriever)


def verify_file(path, out, verifier, *, limits=None, progress=None) -> tuple:
    """Verify every line of ``path`` (generic JSONL or RAGTruth ``response.jsonl``) into the text stream ``out``.

    Returns
    -------
    (n_verified, n_failed) : tuple of int
        ``n_failed`` counts input lines that could not be read and answers the
        verifier could not verify (their result carries ``error``).

    Raises
    ------
    evqual.scoring.StreamAborted
        When ``out`` cannot be written.

    Examples
    --------
    >>> import io, json, tempfile, os
    >>> from evqual.verify import ClaimVerifier
    >>> path = os.path.join(tempfile.mkdtemp(), "in.jsonl")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write(json.dumps({"id": "a", "query": "q", "context": ["It opened in 1937."],
    ...                              "output": "It opened in 1932."}) + "\\n" + "{bad\\n")
    >>> out = io.StringIO()
    >>> verify_file(path, out, ClaimVerifier())
    (1, 1)
    >>> [(r["line"], r.get("tier"), "error" in r and r["error"] is not None) for r in map(json.loads, out.getvalue().splitlines())]
    [(1, 'reject', False), (2, None, True)]
    """
    n_ok = n_bad = n = 0
    for line, ex, issues, record_id, extra in iter_records(path, limits=limits, with_extra=True):
        n += 1
        if ex is None:
            record = error_record(line, issues, record_id)
            n_bad += 1
        else:
            try:
                result = verifier.verify(query=ex.query, context=ex.context, output=ex.output,
                                         task_type=ex.task_type).to_dict()
            except Exception as exc:  # noqa: BLE001 - one answer's failure is its line, never a lost line
                result = {"method": getattr(verifier, "method", None), "score": None, "flagged": None,
                          "tier": None, "error": f"{type(exc).__name__}: {exc}"}
            label = response_label(ex)
            own = result.pop("warnings", None) or []
            record = {"line": line, "id": ex.id, **result, "label": label, "warnings": input_warnings(ex) + own}
            if extra:
                record["extra"] = extra
            if result.get("error") is None:
                n_ok += 1
            else:
                n_bad += 1
        try:
            out.write(dumps_line(record))
            out.flush()
        except (OSError, ValueError) as exc:
            raise StreamAborted("output", line, n - 1, exc) from exc
        if progress is not None:
            progress(n)
    return n_ok, n_bad
