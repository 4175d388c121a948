"""OpenAIBackend against a real chat-completions server on 127.0.0.1 (tests/backends/chat_server.py)."""

import json
import logging
import socket
import time

import pytest

from dialogue_gym.backends import (
    GenerationRequest,
    OpenAIBackend,
    SamplingParams,
    make_backend,
)
from dialogue_gym.errors import BackendError, ConfigError


def chat(text, **sampling):
    return GenerationRequest(({"role": "system", "content": "Be brief."}, {"role": "user", "content": text}), SamplingParams(**sampling))


def backend(server, **kwargs):
    kwargs = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 2.0, "api_key_env": None, **kwargs}
    return OpenAIBackend(server.model, server.base_url, **kwargs)


def echo(body):
    return "echo: " + body["messages"][-1]["content"]


def test_batch_in_order_with_sampling_usage_and_cost(chat_server):
    server = chat_server(echo, delay_s=0.03)
    client = backend(server, max_concurrency=3, max_new_tokens=40, temperature=0.5, seed=7,
                     price_per_million_prompt_tokens=2.0, price_per_million_completion_tokens=10.0)
    texts = [f"message number {i}" for i in range(12)]
    outputs = client.generate([chat(t) for t in texts[:-1]] + [chat(texts[-1], temperature=0.0, seed=3, max_new_tokens=5, stop=("</reply>",))])
    assert [o.text for o in outputs] == [f"echo: {t}" for t in texts]
    assert all(o.error is None and o.finish_reason == "stop" and o.meta["attempts"] == 1 for o in outputs)
    assert 2 <= server.max_in_flight <= 3  # concurrency is used, and limited
    first, last = server.requests[0], next(r for r in server.requests if r["messages"][-1]["content"] == texts[-1])
    assert first["stream"] is False and first["n"] == 1 and first["model"] == "test-model"
    assert (first["max_tokens"], first["temperature"], first["top_p"], first["seed"]) == (40, 0.5, 1.0, 7)
    assert "stop" not in first and "logprobs" not in first
    assert (last["max_tokens"], last["temperature"], last["seed"], last["stop"]) == (5, 0.0, 3, ["</reply>"])
    usage = client.usage
    prompt = sum(2 + len(t.split()) for t in texts)  # "Be brief." + the message, counted in words by the server
    completion = sum(1 + len(t.split()) for t in texts)
    assert (usage.requests, usage.succeeded, usage.failed, usage.attempts, usage.retries) == (12, 12, 0, 12, 0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (prompt, completion)
    assert usage.cost == pytest.approx((2.0 * prompt + 10.0 * completion) / 1e6)
    assert outputs[0].meta["usage"]["prompt_tokens"] == 2 + 3
    assert client.generate([]) == []
    client.close()


def test_logprobs_and_token_ids(chat_server):
    server = chat_server(["one two three"])
    out = backend(server, logprobs=True).generate([chat("hi")])[0]
    assert out.logprobs == [-0.25, -0.5, -0.75] and out.token_ids is None and out.prompt_token_ids is None
    out = backend(server, logprobs=True, extra_body={"return_tokens_as_token_ids": True}).generate([chat("hi")])[0]
    assert out.token_ids == [100, 101, 102] and out.logprobs == [-0.25, -0.5, -0.75]
    out = backend(server, return_token_ids=True).generate([chat("hi there")])[0]
    assert out.token_ids == [100, 101, 102] and out.prompt_token_ids == list(range(4)) and out.logprobs is None


def test_5xx_429_timeouts_and_bad_json_are_retried_then_succeed(chat_server):
    server = chat_server(["fine"], stall_s=0.6)
    server.script = [("status", 500), ("retry_after", 0.2), ("stall", None), ("raw", b"<html>oops</html>"), ("status", 503)]
    client = backend(server, timeout=0.25, max_retries=5)
    start = time.perf_counter()
    out = client.generate([chat("hi")])[0]
    elapsed = time.perf_counter() - start
    assert out.text == "fine" and out.error is None and out.meta["attempts"] == 6
    assert elapsed >= 0.2 + 0.25  # waited for Retry-After and for the timeout
    assert (client.usage.attempts, client.usage.retries, client.usage.succeeded) == (6, 5, 1)


def test_retries_are_bounded_and_the_failure_is_reported_per_request(chat_server):
    server = chat_server(["fine"], fail_rate=1.0, stall_share=0.0, fail_statuses=(502,))
    client = backend(server, max_retries=2)
    outputs = client.generate([chat("a"), chat("b")])
    assert len(server.requests) == 6  # 2 requests x (1 + 2 retries), no more
    for out in outputs:
        assert out.text == "" and out.meta["attempts"] == 3
        assert out.error.startswith("HTTP 502") and "after 3 attempts" in out.error and server.base_url in out.error
    assert (client.usage.failed, client.usage.succeeded) == (2, 0)
    with pytest.raises(BackendError, match=r"2 of 2 requests .* failed after up to 3 attempts .*on_failure='report'"):
        backend(server, max_retries=2, on_failure="raise").generate([chat("a"), chat("b")])


def test_one_failing_request_does_not_sink_the_batch(chat_server):
    server = chat_server(echo)
    server.script = [("status", 400)]  # not retryable: reported after one attempt
    outputs = backend(server, max_concurrency=1).generate([chat("bad"), chat("good")])
    assert outputs[0].error.startswith("HTTP 400") and "after 1 attempt " in outputs[0].error
    assert outputs[1].text == "echo: good" and outputs[1].error is None


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIBackend("m", f"http://127.0.0.1:{port}/v1", api_key_env=None, max_retries=1, backoff_base=0.01)
    out = client.generate([chat("hi")])[0]
    assert "connection failed (ConnectionRefusedError" in out.error and "after 2 attempts" in out.error


def test_wrong_model_or_url_raises_with_the_fix(chat_server):
    server = chat_server()
    with pytest.raises(BackendError, match=r"HTTP 404 .*model='other-model'"):
        OpenAIBackend("other-model", server.base_url, api_key_env=None).generate([chat("hi")])
    with pytest.raises(BackendError, match=r"HTTP 404 .*Check base_url .*/v2/chat/completions"):
        OpenAIBackend("test-model", server.base_url.replace("/v1", "/v2"), api_key_env=None).generate([chat("hi")])


SECRET = "sk-test-DO-NOT-LEAK-3f9a1c"


def test_api_key_comes_from_the_environment_and_never_leaks(chat_server, monkeypatch, caplog):
    server = chat_server(["ok"], required_key=SECRET)
    monkeypatch.setenv("DG_TEST_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    client = backend(server, api_key_env="DG_TEST_KEY", max_retries=1)
    assert client.generate([chat("hi")])[0].text == "ok"
    assert server.headers[-1]["Authorization"] == f"Bearer {SECRET}"
    server.script = [("status", 500), ("status", 500)]
    failed = client.generate([chat("hi")])[0]
    assert failed.error is not None and "retrying" in caplog.text  # the retries were logged...
    for text in (repr(client), str(client), json.dumps(client.spec), failed.error, caplog.text, repr(client.usage)):
        assert SECRET not in text  # ...but never the key
    assert make_backend(client.spec).generate([chat("hi")])[0].text == "ok"  # the spec rebuilds it from the env

    monkeypatch.setenv("DG_TEST_KEY", "sk-wrong")
    with pytest.raises(BackendError, match=r"HTTP 401 .*environment variable DG_TEST_KEY \(it is set but was rejected\)") as info:
        backend(server, api_key_env="DG_TEST_KEY").generate([chat("hi")])
    assert "sk-wrong" not in str(info.value)
    monkeypatch.delenv("DG_TEST_KEY")
    with pytest.raises(BackendError, match=r"DG_TEST_KEY \(it is unset or empty\)"):
        backend(server, api_key_env="DG_TEST_KEY").generate([chat("hi")])
    with pytest.raises(ConfigError, match="never passed as an argument") as info:
        make_backend({"name": "openai", "model": "m", "api_key": SECRET})
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"base_url": "localhost:8000"}, r"base_url must be an http\(s\) URL .*'localhost:8000'"),
        ({"max_concurrency": 0}, r"max_concurrency must be an int >= 1, got 0"),
        ({"max_retries": -1}, r"max_retries must be an int >= 0, got -1"),
        ({"timeout": 0}, r"timeout must be a number > 0.0, got 0"),
        ({"timeout": float("inf")}, r"timeout must be a finite number of seconds, got inf; pass e.g. timeout=60"),
        ({"max_response_bytes": 0}, r"max_response_bytes must be an int >= 1, got 0"),
        ({"on_failure": "ignore"}, r"on_failure must be one of \['report', 'raise'\], got 'ignore'"),
        ({"temperature": -1}, r"temperature must be a number >= 0"),
        ({"model": ""}, r"model must be the served model's name"),
        ({"extra_body": "x"}, r"extra_body must be a dict"),
    ],
)
def test_config_errors_name_the_value(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        make_backend({"name": "openai", "model": "m", **kwargs})


def test_bad_requests_are_config_errors(chat_server):
    client = backend(chat_server())
    with pytest.raises(ConfigError, match=r"request 0 must be a GenerationRequest"):
        client.generate(["hello"])
    with pytest.raises(ConfigError, match=r"request 0: top_p must be a number in \(0, 1\], got 2"):
        client.generate([chat("hi", top_p=2)])
