"""Hardening, second round (issue 21), section 4: the LLM backend under a hostile or broken server.

Every server here is :class:`llm_stub.StubLLM` on 127.0.0.1 with a fault queued;
every loop is bounded (the stub stops sending when the test ends, and each
case has a deadline of a few seconds at most)."""

from __future__ import annotations

import json
import resource
import time

import pytest

from evqual.verify import ClaimVerifier, LLMClient, LLMError
from evqual.verify._llm_backend import LLMJudge
from llm_stub import StubLLM

KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture()
def stub():
    s = StubLLM().start()
    try:
        yield s
    finally:
        s.stop()


def client_for(stub, **kw):
    opts = dict(base_url=stub.base_url, model="stub-model", api_key=KEY, timeout=1.0, max_retries=1, backoff=0.01,
                max_backoff=0.05, random_state=0, cache=False)
    opts.update(kw)
    return LLMClient(**opts)


# ---------------------------------------------------------------------------------------------- attack: slow servers
def test_a_server_trickling_one_byte_at_a_time_cannot_hold_a_request(stub):
    """One byte every 0.3 s used to reset the per-read timeout forever; now one attempt has one deadline."""
    client = client_for(stub, timeout=1.0, max_retries=0, request_timeout=5.0)
    stub.fault(("trickle", 0.3, 1000))
    t0 = time.monotonic()
    with pytest.raises(LLMError, match="timed out after 1 s"):
        client.complete("hello")
    assert time.monotonic() - t0 < 3.0


def test_a_silent_server_costs_one_call_deadline_not_attempts_times_timeout(stub):
    client = client_for(stub, timeout=1.0, max_retries=3, request_timeout=1.5)
    stub.always = ("sleep", 5.0)
    t0 = time.monotonic()
    with pytest.raises(LLMError, match="deadline|no time left"):
        client.complete("hello")
    assert time.monotonic() - t0 < 2.5  # 4 attempts x 1 s would be 4 s


def test_every_call_of_one_answer_shares_the_answer_deadline(stub):
    client = client_for(stub, timeout=0.5, max_retries=0, request_timeout=10.0, answer_timeout=1.2)
    stub.always = ("sleep", 5.0)
    t0 = time.monotonic()
    errors = []
    with client.usage_scope():
        for _ in range(6):  # six calls of 0.5 s would be 3 s
            with pytest.raises(LLMError) as info:
                client.complete("hello")
            errors.append(str(info.value))
    assert time.monotonic() - t0 < 2.2
    assert any("the answer's deadline (1.2 s) passed" in e for e in errors)


def test_verifier_answer_deadline_makes_an_error_result_not_a_hang(stub):
    client = client_for(stub, timeout=0.4, max_retries=0, request_timeout=10.0, answer_timeout=1.0, concurrency=1)
    stub.always = ("sleep", 5.0)
    verifier = ClaimVerifier(judge=LLMJudge(client))
    t0 = time.monotonic()
    out = "The bridge opened in 1937. It is long. It is red. It is old. It is in a city."
    result = verifier.verify(query="q", context=["The bridge opened in 1937."], output=out)
    assert time.monotonic() - t0 < 3.0
    assert all(c.verdict == "NO_EVIDENCE" for c in result.claims)


# ---------------------------------------------------------------------------------------------- attack: big replies
def test_a_huge_reply_is_refused_without_being_held_in_memory(stub):
    client = client_for(stub, max_retries=0, timeout=30.0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    stub.fault(("huge", 400 * 2**20))
    with pytest.raises(LLMError, match=r"declares 419430400 bytes"):
        client.complete("hello")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KB: far below 400 MB


def test_a_huge_reply_without_a_length_is_cut_off(stub, monkeypatch):
    client = client_for(stub, max_retries=0, timeout=30.0, max_reply_bytes=10_000)
    stub.fault(("raw", b'{"choices": [{"message": {"content": "' + b"x" * 50_000 + b'"}}]}'))
    with pytest.raises(LLMError, match="refused"):
        client.complete("hello")


def test_a_long_reason_is_cut_before_it_reaches_the_result(stub):
    from evqual.verify import MAX_QUOTED_CHARS

    client = client_for(stub)
    stub.always = ("text", json.dumps({"label": "SUPPORTED", "probability": 0.9, "reason": "r" * 200_000}))
    [j] = LLMJudge(client).judge(["The bridge opened in 1937."], [[]], chunks=["The bridge opened in 1937."])
    assert len(j.reason) <= MAX_QUOTED_CHARS


# ---------------------------------------------------------------------------------------------- attack: echoing the key
@pytest.mark.parametrize("fault", [("echo", 400), ("echo", 500), ("echo", 200), ("echo-reason",),
                                   ("echo-prefix", 401, 13), ("echo-prefix", 401, 8)])
def test_the_api_key_never_reaches_a_result_or_an_error(stub, fault):
    client = client_for(stub, max_retries=0)
    stub.always = fault
    verifier = ClaimVerifier(judge=LLMJudge(client))
    result = verifier.verify(query="q", context=["The bridge opened in 1937."], output="The bridge opened in 1937.")
    text = json.dumps(result.to_dict())
    assert stub.requests and stub.requests[0]["authorization"] == f"Bearer {KEY}"  # the server did see it
    for n in range(8, len(KEY) + 1):
        assert KEY[:n] not in text
    try:
        client.complete("direct")
    except LLMError as exc:
        assert KEY[:8] not in str(exc)
    else:
        assert fault[0] in ("echo", "echo-reason")


def test_scrubbing_keeps_short_accidental_matches(stub):
    """Only prefixes of 8+ characters are scrubbed: 'sk-test' (7) in a reply is ordinary text, 'sk-test-' is not."""
    client = client_for(stub)
    stub.always = ("text", "keys look like sk-... and sk-test, or sk-test-0")
    assert client.complete("x").text == "keys look like sk-... and sk-test, or ***"
