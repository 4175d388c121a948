"""The OpenAI-compatible backend's wait before a retry (a Retry-After shorter than the backoff does not
shorten it: the header is a floor, never a replacement) and its default seed's bound."""

from __future__ import annotations

import time
import types

import pytest

from dialogue_gym.backends import GenerationRequest, OpenAIBackend, SamplingParams
from dialogue_gym.backends import openai_compat
from dialogue_gym.errors import ConfigError


def chat(text):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams())


def test_a_retry_after_shorter_than_the_backoff_leaves_the_backoff(chat_server, monkeypatch):
    waits = []
    monkeypatch.setattr(openai_compat, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=waits.append))
    server = chat_server(["fine"])
    server.script = [("retry_after", 1)]
    client = OpenAIBackend(server.model, server.base_url, api_key_env=None, backoff_base=8.0, backoff_max=30.0, timeout=5.0)
    out = client.generate([chat("hi")])[0]
    assert out.text == "fine" and out.meta["attempts"] == 2
    # retry 1: backoff_base 8 times a jitter in [0.5, 1] is 4-8 s, longer than the header's 1 s
    [wait] = waits
    assert 4.0 <= wait <= 8.0


def test_seed_zero_is_a_valid_default_seed_and_a_negative_one_is_not():
    assert OpenAIBackend("m", "http://127.0.0.1:9/v1", api_key_env=None, seed=0).spec["seed"] == 0
    with pytest.raises(ConfigError, match=r"OpenAIBackend: seed must be an int >= 0, got -1"):
        OpenAIBackend("m", "http://127.0.0.1:9/v1", api_key_env=None, seed=-1)
