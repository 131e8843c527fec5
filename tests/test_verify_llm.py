"""The ``llm`` verification backend against a local stub server (tests/llm_stub.py).

No test reaches the network: the stub listens on 127.0.0.1 on a free port,
started and stopped by the ``stub`` fixture.  Timeouts are 0.2 s and the
backoff is recorded instead of slept, so the file runs in a few seconds.
"""

from __future__ import annotations

import json
import shutil
import threading
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.verify import (
    ANSWERS,
    PROMPTS,
    VERDICTS,
    Evidence,
    Judge,
    LLMClient,
    LLMError,
    LLMFactoidExtractor,
    LLMJudge,
    LLMMutator,
    Mutator,
    align_span,
    load_prompt,
)
from evqual.verify._llm_backend import parse_claim_reply, parse_factoid_reply, parse_factoids, parse_variants

from llm_stub import StubLLM

KEY = "sk-test-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for var in ("EVQUAL_LLM_BASE_URL", "EVQUAL_LLM_MODEL", "EVQUAL_LLM_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def stub():
    s = StubLLM().start()
    try:
        yield s
    finally:
        s.stop()


def make_client(stub, **kw):
    opts = dict(base_url=stub.base_url, model="stub-model", api_key=KEY, timeout=0.2, max_retries=2,
                backoff=0.01, max_backoff=8.0, random_state=0)
    opts.update(kw)
    client = LLMClient(**opts)
    client.sleeps = []
    client._sleep = client.sleeps.append  # record the backoff instead of sleeping
    return client


def ev(*texts):
    return [Evidence(i, 0, len(t), t, 1.0) for i, t in enumerate(texts)]


# -- client ---------------------------------------------------------------------------------------------------

def test_chat_reply_tokens_and_auth_header(stub):
    client = make_client(stub)
    reply = client.complete("hello there")
    assert reply.text == "OK" and not reply.cached and reply.attempts == 1
    assert (reply.prompt_tokens, reply.completion_tokens) == (2, 1)
    assert reply.latency_ms > 0
    req = stub.requests[0]
    assert req["authorization"] == f"Bearer {KEY}"
    assert req["body"]["model"] == "stub-model" and req["body"]["temperature"] == 0.0
    assert req["body"]["max_tokens"] == 512
    assert client.usage.calls == 1 and client.usage.prompt_tokens == 2


def test_no_key_no_authorization_header(stub):
    client = make_client(stub, api_key=None)
    client.complete("x")
    assert stub.requests[0]["authorization"] is None


def test_cache_in_memory_second_call_makes_no_request(stub):
    client = make_client(stub)
    a = client.complete("same prompt")
    b = client.complete("same prompt")
    assert stub.n_requests == 1
    assert b.cached and b.text == a.text and b.attempts == 0
    assert client.usage.calls == 1 and client.usage.cache_hits == 1
    client.complete("another prompt")
    assert stub.n_requests == 2


def test_no_cache_repeats_requests(stub):
    client = make_client(stub, cache=None)
    client.complete("same")
    client.complete("same")
    assert stub.n_requests == 2


def test_disk_cache_survives_new_client_and_skips_corrupt_line(stub, tmp_path):
    path = tmp_path / "cache" / "llm.jsonl"
    make_client(stub, cache=path).complete("remember me")
    assert stub.n_requests == 1
    assert KEY not in path.read_text()
    with open(path, "a") as fh:
        fh.write('{"key": "cut short by a crash')  # no newline
    with pytest.warns(UserWarning, match=r"skipped 1 corrupt line\(s\) \(line 2\)"):
        again = make_client(stub, cache=path)
    reply = again.complete("remember me")
    assert reply.cached and stub.n_requests == 1
    # a different model is a different key; its entry starts on a new line
    with pytest.warns(UserWarning, match=r"skipped 1 corrupt line"):
        make_client(stub, cache=path, model="other").complete("remember me")
    assert stub.n_requests == 2
    with pytest.warns(UserWarning, match=r"skipped 1 corrupt line"):
        third = make_client(stub, cache=path, model="other")
    assert third.complete("remember me").cached and stub.n_requests == 2


def test_timeout_is_retried_then_fails_with_clear_error(stub):
    client = make_client(stub, max_retries=1)
    stub.fault(("sleep", 1.0), ("sleep", 1.0))
    with pytest.raises(LLMError, match=r"failed after 2 attempt\(s\): timed out after 0.2 s") as info:
        client.complete("slow")
    assert info.value.attempts == 2 and info.value.status is None
    assert len(client.sleeps) == 1


def test_timeout_then_success(stub):
    client = make_client(stub)
    stub.fault(("sleep", 1.0))
    reply = client.complete("slow once")
    assert reply.text == "OK" and reply.attempts == 2


def test_429_retry_after_is_honoured_and_capped(stub):
    client = make_client(stub, max_backoff=5.0)
    stub.fault(("status", 429, {"Retry-After": "3"}), ("status", 429, {"Retry-After": "120"}))
    reply = client.complete("rate limited")
    assert reply.text == "OK" and reply.attempts == 3
    assert client.sleeps == [3.0, 5.0]


def test_500_then_success_uses_exponential_backoff(stub):
    client = make_client(stub, backoff=1.0, max_retries=3)
    stub.fault(("status", 500), ("status", 503), ("status", 502))
    assert client.complete("flaky").attempts == 4
    # waits 1, 2, 4 times a jitter factor in [0.5, 1]
    for wait, base in zip(client.sleeps, (1.0, 2.0, 4.0)):
        assert 0.5 * base <= wait <= base


def test_jitter_is_seedable(stub):
    waits = []
    for _ in range(2):
        client = make_client(stub, backoff=1.0, random_state=7)
        waits.append([client._wait(r, None) for r in range(3)])
    assert waits[0] == waits[1]


def test_always_500_gives_error_with_status_url_attempts_and_no_key(stub):
    client = make_client(stub, base_url=f"{stub.base_url}?key={KEY}")
    stub.always = ("status", 500)
    with pytest.raises(LLMError) as info:
        client.complete("doomed")
    msg = str(info.value)
    assert "HTTP 500" in msg and "after 3 attempt(s)" in msg
    assert f"http://127.0.0.1:{stub.server.server_address[1]}/v1/chat/completions" in msg
    assert KEY not in msg and KEY not in repr(client)
    assert all("key=" in r["path"] for r in stub.requests)  # the query string is kept in the request
    assert info.value.status == 500 and info.value.attempts == 3
    assert stub.n_requests == 3


def test_credentials_in_url_refused_without_echoing_them():
    with pytest.raises(ValueError, match="must not hold credentials") as info:
        LLMClient(base_url=f"https://user:{KEY}@api.example.org/v1", model="m")
    assert KEY not in str(info.value)


def test_400_is_not_retried(stub):
    client = make_client(stub)
    stub.fault(("status", 400))
    with pytest.raises(LLMError, match=r"HTTP 400.*not retried; attempt 1"):
        client.complete("bad request")
    assert stub.n_requests == 1 and client.sleeps == []


def test_redirects_are_not_followed(stub):
    client = make_client(stub)
    stub.fault(("status", 302, {"Location": stub.base_url + "/elsewhere"}))
    with pytest.raises(LLMError, match="HTTP 302"):
        client.complete("redirected")
    assert stub.n_requests == 1  # the key was not sent on to the Location


def test_server_echoing_the_key_is_scrubbed(stub):
    client = make_client(stub)
    stub.fault(("raw", f'{{"error": "bad key {KEY}"}}'.encode()))
    with pytest.raises(LLMError) as info:
        client.complete("echo")
    assert KEY not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize("body, what", [
    (b"<html>gateway</html>", "not valid JSON"),
    (b'{"choices": []}', "no 'choices' list"),
    (b'{"choices": [{"message": {"content": null}}]}', "is not a string"),
])
def test_malformed_body_gives_clear_error(stub, body, what):
    client = make_client(stub)
    stub.fault(("raw", body))
    with pytest.raises(LLMError, match=what):
        client.complete("x")


def test_missing_usage_fields(stub):
    client = make_client(stub)
    stub.fault(("nousage",))
    reply = client.complete("x")
    assert reply.prompt_tokens is None and reply.completion_tokens is None
    assert client.usage.calls == 1 and client.usage.prompt_tokens == 0


def test_connection_refused_is_an_llm_error():
    client = LLMClient(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.2, max_retries=1, backoff=0.0)
    client._sleep = lambda s: None
    with pytest.raises(LLMError, match=r"after 2 attempt\(s\): connection error"):
        client.complete("x")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/v1", "localhost:8000/v1", "http:///v1"])
def test_non_http_url_refused(url):
    with pytest.raises(ValueError, match="base_url"):
        LLMClient(base_url=url, model="m")


@pytest.mark.parametrize("kw, match", [
    ({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries"), ({"concurrency": 0}, "concurrency"),
    ({"max_tokens": 0}, "max_tokens"), ({"backoff": float("nan")}, "backoff"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        LLMClient(base_url="http://127.0.0.1:9/v1", model="m", **kw)


def test_env_fallbacks(monkeypatch, stub):
    with pytest.raises(ValueError, match="EVQUAL_LLM_BASE_URL"):
        LLMClient(model="m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    with pytest.raises(ValueError, match="EVQUAL_LLM_MODEL"):
        LLMClient()
    monkeypatch.setenv("EVQUAL_LLM_MODEL", "env-model")
    client = LLMClient()
    assert client.base_url == "http://127.0.0.1:1/v1" and client._api_key == "sk-openai"
    monkeypatch.setenv("EVQUAL_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("EVQUAL_LLM_API_KEY", KEY)
    client = LLMClient(timeout=0.5)
    client.complete("x")
    assert stub.requests[0]["authorization"] == f"Bearer {KEY}"
    assert stub.requests[0]["body"]["model"] == "env-model"
    assert LLMClient(model="explicit").model == "explicit"


@pytest.mark.parametrize("limit", [1, 2])
def test_concurrency_limit_across_threads(stub, limit):
    client = make_client(stub, concurrency=limit, timeout=2.0)
    stub.hold, stub.hold_until = 0.15, limit + 1  # each request waits (<= 0.15 s) for one more than allowed
    threads = [threading.Thread(target=client.complete, args=(f"prompt {i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert stub.n_requests == 4 and client.usage.calls == 4
    assert stub.max_inflight == limit


def test_judge_sends_statements_in_parallel(stub):
    client = make_client(stub, concurrency=3, timeout=2.0)
    stub.hold, stub.hold_until = 1.0, 3  # released as soon as three are in flight
    out = LLMJudge(client, mode="factoid").judge([f"Statement {i}." for i in range(3)], [ev("statement")] * 3)
    assert [j.answer for j in out] == ["YES"] * 3
    assert stub.max_inflight == 3


def test_usage_scope_per_answer_across_worker_threads(stub):
    client = make_client(stub, concurrency=3)
    judge = LLMJudge(client, mode="factoid")
    results = {}

    def one_answer(tag, n):
        with client.usage_scope() as usage:
            judge.judge([f"{tag} fact {i}." for i in range(n)], [ev(f"{tag} text")] * n)
        results[tag] = usage

    threads = [threading.Thread(target=one_answer, args=(t, n)) for t, n in (("alpha", 2), ("beta", 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results["alpha"].calls == 2 and results["beta"].calls == 5
    assert client.usage.calls == 7
    assert results["alpha"].prompt_tokens + results["beta"].prompt_tokens == client.usage.prompt_tokens
    with client.usage_scope() as outer:
        with client.usage_scope() as inner:
            client.complete("nested")
        client.complete("outer only")
    assert (outer.calls, inner.calls) == (2, 1)
    client.complete("nested")  # cache hit, outside any scope
    assert (outer.cache_hits, inner.cache_hits, client.usage.cache_hits) == (0, 0, 1)
    taken = client.take_usage()
    assert taken.calls == 9 and client.usage.calls == 0


# -- prompts --------------------------------------------------------------------------------------------------

def test_prompt_files_are_package_data():
    folder = resources.files("evqual.verify").joinpath("prompts")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".txt"))
    assert names == sorted(f"{n}.txt" for n in PROMPTS)
    for name, placeholders in PROMPTS.items():
        assert set(load_prompt(name).get_identifiers()) == set(placeholders)
    assert "YES, NO, or NOT SURE" in load_prompt("verify_factoid").template
    assert "*negations*" in load_prompt("antonym").template


def test_edited_prompt_directory_overrides(stub, tmp_path):
    (tmp_path / "verify_claim.txt").write_text("My prompt. Claim: ${claim}\nQ: ${question}\n${passages}\n")
    assert load_prompt("verify_claim", tmp_path).template.startswith("My prompt.")
    assert "*synonyms*" in load_prompt("synonym", tmp_path).template  # not in the copy: the shipped one
    client = make_client(stub)
    LLMJudge(client, prompts_dir=tmp_path).judge(["Paris is in France."], [ev("Paris is in France.")])
    assert stub.requests[0]["body"]["messages"][-1]["content"].startswith("My prompt. Claim: Paris is in France.")


def test_edited_prompt_with_bad_placeholders(tmp_path):
    (tmp_path / "verify_factoid.txt").write_text("Statement: ${statement}\n")
    with pytest.raises(ValueError, match=r"verify_factoid.txt: lacks placeholder\(s\) \$\{context\}"):
        load_prompt("verify_factoid", tmp_path)
    (tmp_path / "factoids.txt").write_text("${text} costs $5")
    with pytest.raises(ValueError, match="factoids.txt: invalid placeholder"):
        load_prompt("factoids", tmp_path)
    with pytest.raises(ValueError, match="unknown prompt"):
        load_prompt("nope")


def test_copy_of_shipped_prompts_loads(tmp_path):
    src = resources.files("evqual.verify").joinpath("prompts")
    for name in PROMPTS:
        shutil.copy(str(src.joinpath(f"{name}.txt")), tmp_path / f"{name}.txt")
        assert load_prompt(name, tmp_path).template == load_prompt(name).template


# -- judge ----------------------------------------------------------------------------------------------------

def test_protocols():
    client = LLMClient(base_url="http://127.0.0.1:9/v1", model="m")
    assert isinstance(LLMJudge(client), Judge) and isinstance(LLMMutator(client), Mutator)
    with pytest.raises(ValueError, match="mode"):
        LLMJudge(client, mode="nli")
    with pytest.raises(TypeError, match="LLMClient"):
        LLMJudge("http://x")


def test_claim_mode_verdicts_probability_and_cited_evidence(stub):
    judge = LLMJudge(make_client(stub), mode="claim")
    passages = ev("Paris is the capital of France.", "France is in Europe.")
    out = judge.judge(["France is in Europe.", "Paris is not in France.", "The moon is cheese."],
                      [passages] * 3, query="Where is France?")
    assert [j.verdict for j in out] == ["SUPPORTED", "REFUTED", "NO_EVIDENCE"]
    assert [j.probability for j in out] == [0.9, 0.05, 0.4]
    assert [e.text for e in out[0].evidence] == ["France is in Europe."]  # cited passage 2
    assert [e.text for e in out[2].evidence] == [e.text for e in passages]  # none cited: all shown
    assert out[0].reason == "stated" and all(j.error is None and j.answer is None for j in out)
    prompt = stub.requests[0]["body"]["messages"][-1]["content"]
    assert "Question: Where is France?" in prompt and "[2] France is in Europe." in prompt


def test_factoid_mode_answers(stub):
    judge = LLMJudge(make_client(stub), mode="factoid")
    out = judge.judge(["Paris is big.", "Paris is not big.", "Rome is big."], [ev("Paris is big.")] * 3)
    assert [(j.answer, j.verdict, j.probability) for j in out] == [
        ("YES", "SUPPORTED", 1.0), ("NO", "REFUTED", 0.0), ("NOT SURE", "NO_EVIDENCE", 0.5)]
    assert out[0].reason == "The passages state it."


def test_no_evidence_uses_chunks_then_skips_the_request(stub):
    judge = LLMJudge(make_client(stub), mode="factoid")
    out = judge.judge(["Paris is big."], [[]], chunks=["Paris is big and old."])
    assert out[0].answer == "YES" and out[0].evidence == [] and stub.n_requests == 1
    out = judge.judge(["Paris is big."], [[]])
    assert (out[0].verdict, out[0].answer, out[0].error) == ("NO_EVIDENCE", "NOT SURE", None)
    assert stub.n_requests == 1
    with pytest.raises(ValueError, match="2 statements but 1 evidence"):
        judge.judge(["a", "b"], [[]])


@pytest.mark.parametrize("mode, text, match", [
    ("claim", '{"label": "MAYBE", "probability": 0.5}',
     "label must be one of SUPPORTED, REFUTED, NO_EVIDENCE; got 'MAYBE'"),
    ("claim", "I think it is supported.", "not a JSON object"),
    ("claim", '{"label": "SUPPORTED", "probability": 1.7}', "probability must be a number in [0, 1]; got 1.7"),
    ("factoid", "MAYBE. Hard to say.", "must answer YES, NO or NOT SURE; got 'MAYBE. Hard to say.'"),
    ("factoid", "", "reply is empty"),
])
def test_wrong_label_or_malformed_reply_is_a_per_statement_error(stub, mode, text, match):
    judge = LLMJudge(make_client(stub), mode=mode)
    stub.fault(("text", text))
    out = judge.judge(["Paris is big.", "Paris is old."], [ev("Paris is big and old.")] * 2)
    assert len(out) == 2
    bad = [j for j in out if j.error]
    assert len(bad) == 1 and bad[0].verdict == "NO_EVIDENCE" and bad[0].probability == 0.5
    assert bad[0].answer is None
    assert match in bad[0].error
    good = [j for j in out if not j.error]
    assert good[0].verdict == "SUPPORTED"


def test_http_failure_after_retries_is_a_per_statement_error(stub):
    judge = LLMJudge(make_client(stub, max_retries=1), mode="claim")
    stub.always = ("status", 503)
    out = judge.judge(["a claim.", "another claim."], [ev("text")] * 2)
    assert len(out) == 2
    assert all(j.verdict == "NO_EVIDENCE" and "HTTP 503" in j.error and KEY not in j.error for j in out)


def test_malformed_body_is_a_per_statement_error(stub):
    judge = LLMJudge(make_client(stub), mode="factoid")
    stub.fault(("raw", b"{not json"))
    out = judge.judge(["x is y."], [ev("x is y.")])
    assert out[0].verdict == "NO_EVIDENCE" and "not valid JSON" in out[0].error


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(0, 5))
def test_reply_parsers_never_raise(text, n):
    answer, reason, error = parse_factoid_reply(text)
    assert (answer is None) != (error is None)
    assert answer is None or answer in ANSWERS
    verdict, p, cited, reason, error = parse_claim_reply(text, n)
    assert (verdict is None) != (error is None)
    if verdict is not None:
        assert verdict in VERDICTS and 0.0 <= p <= 1.0 and all(0 <= i < n for i in cited)


@pytest.mark.parametrize("text", ["[" * 50_000, "{" * 50_000, '{"a":' * 30_000, "x {" * 2_000])
def test_reply_parsers_survive_pathological_nesting(text):
    assert parse_claim_reply(text, 2)[4] is not None
    assert parse_factoid_reply(text)[2] is not None
    assert isinstance(parse_variants(text, "f", 2), list)
    assert parse_factoids(text) is None


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200), st.text(max_size=80), st.integers(0, 4))
def test_factoid_and_variant_parsers_and_alignment_never_raise(text, factoid, n):
    facts = parse_factoids(text)
    assert facts is None or all(isinstance(f, str) and f for f in facts)
    variants = parse_variants(text, factoid, n)
    assert len(variants) <= n and len({" ".join(v.lower().split()) for v in variants}) == len(variants)
    s, e = align_span(text, factoid)
    assert 0 <= s <= e <= len(text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(VERDICTS + ("no evidence", "Supported", "MAYBE", "")),
       st.one_of(st.none(), st.floats(allow_nan=True), st.text(max_size=5), st.booleans()),
       st.lists(st.one_of(st.integers(-3, 9), st.text(max_size=3)), max_size=4))
def test_claim_json_parser_properties(label, p, evidence):
    text = json.dumps({"label": label, "probability": p, "evidence": evidence})
    verdict, prob, cited, _, error = parse_claim_reply(text, 3)
    if error is None:
        assert verdict in VERDICTS and 0.0 <= prob <= 1.0 and all(0 <= i < 3 for i in cited)
    else:
        assert verdict is None and prob is None


# -- mutator and extractor ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["synonym", "antonym"])
def test_mutator_dedupes_and_drops_the_factoid(stub, kind):
    mutator = LLMMutator(make_client(stub))
    factoid = "The bridge opened in 1932."
    out = mutator.mutate(factoid, kind, 3, question="When did the bridge open?")
    assert len(out) == 3 and len(set(out)) == 3 and factoid not in out
    assert all(v.startswith("Variant") for v in out)  # numbers stripped
    prompt = stub.requests[0]["body"]["messages"][-1]["content"]
    assert "generate 3" in prompt and "Question: When did the bridge open?" in prompt
    assert mutator.mutate(factoid, kind, 0) == []
    with pytest.raises(ValueError, match="kind"):
        mutator.mutate(factoid, "paraphrase", 2)


def test_mutator_http_failure_raises_llm_error(stub):
    mutator = LLMMutator(make_client(stub, max_retries=0))
    stub.fault(("status", 500))
    with pytest.raises(LLMError, match="HTTP 500"):
        mutator.mutate("A is B.", "synonym", 2)


def test_parse_variants_json_array_and_labels():
    assert parse_variants('["A is B.", "A is B", "B is what A is."]', "a is b.", 5) == ["B is what A is."]
    assert parse_variants("Synonym 1: X is Y.\n\n* X equals Y.\nX is Y.", "Z.", 2) == ["X is Y.", "X equals Y."]


def test_extractor_spans(stub):
    extractor = LLMFactoidExtractor(make_client(stub))
    answer = "The bridge opened in 1932. It closed in 1990 for repairs."
    out = extractor.extract(answer)
    assert [f for _, _, f in out] == ["The bridge opened in 1932.", "It closed in 1990 for repairs."]
    assert [answer[s:e] for s, e, _ in out] == ["The bridge opened in 1932", "It closed in 1990 for repairs"]
    assert extractor.extract("   ") == [] and stub.n_requests == 1


def test_extractor_malformed_reply_raises_clear_error(stub):
    extractor = LLMFactoidExtractor(make_client(stub))
    stub.fault(("text", "Here are the facts: the bridge opened."))
    with pytest.raises(LLMError, match="not a JSON array of strings: 'Here are the facts"):
        extractor.extract("The bridge opened in 1932.")


def test_align_span_paraphrase_and_fallback():
    answer = "Walmart pays $15 an hour. Its stores are in Arkansas and Texas."
    s, e = align_span(answer, "Walmart stores are located in Texas.")
    assert answer[s:e] == "Its stores are in Arkansas and Texas."
    assert align_span(answer, "Completely unrelated words.") == (0, len(answer))
