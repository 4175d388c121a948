"""The OpenAI-compatible backend waits at least what a 429's ``Retry-After`` asks (capped by
``backoff_max``), and retries 3 times by default. The backoff cap here is far above the header, so
a client ignoring the header (it would wait ~10 ms) fails: the earlier test capped the backoff below
the header's value, so it passed either way."""

from __future__ import annotations

import time
import types

from dialogue_gym.backends import GenerationRequest, OpenAIBackend, SamplingParams
from dialogue_gym.backends import openai_compat


def chat(text):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams())


def test_a_429_with_retry_after_is_waited_out(chat_server):
    server = chat_server(["fine"])
    server.script = [("retry_after", 1)]
    client = OpenAIBackend(server.model, server.base_url, api_key_env=None, backoff_base=0.01, backoff_max=30.0, timeout=5.0)
    start = time.monotonic()
    out = client.generate([chat("hi")])[0]
    waited = time.monotonic() - start
    assert out.text == "fine" and out.meta["attempts"] == 2
    assert waited >= 1.0, f"Retry-After: 1 must be honoured (waited {waited:.3f}s)"
    assert waited < 10.0


def test_the_wait_is_the_header_capped_by_backoff_max(chat_server, monkeypatch):
    waits = []
    # the backend's own clock only (the test server sleeps too): real monotonic time, recorded sleeps
    monkeypatch.setattr(openai_compat, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=waits.append))
    server = chat_server(["fine"])
    server.script = [("retry_after", 7), ("retry_after", 60)]
    client = OpenAIBackend(server.model, server.base_url, api_key_env=None, backoff_base=0.01, backoff_max=30.0, timeout=5.0)
    out = client.generate([chat("hi")])[0]
    assert out.text == "fine" and out.meta["attempts"] == 3
    # retry 1: jittered base 0.01 * [0.5, 1] < 7 -> the header's 7; retry 2: 60 capped at backoff_max 30
    assert waits == [7.0, 30.0]


def test_three_retries_by_default(chat_server):
    server = chat_server(["fine"], fail_rate=1.0, stall_share=0.0, fail_statuses=(503,))
    client = OpenAIBackend(server.model, server.base_url, api_key_env=None, backoff_base=0.0, timeout=5.0)
    out = client.generate([chat("hi")])[0]
    assert out.error is not None and out.meta["attempts"] == 4, "default max_retries = 3: 1 attempt + 3 retries"
    assert len(server.requests) == 4 and client.usage.retries == 3
