"""The OpenAI-compatible backend's wait before a retry (a Retry-After shorter than the backoff does not
shorten it: the header is a floor, never a replacement) and its default seed's bound."""

from __future__ import annotations

import json
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


class _Jitter:
    """A jitter source that always draws 0.5: the wait is the exponential backoff times 0.75."""

    def random(self):
        return 0.5


@pytest.mark.parametrize("backoff_max, expected", [(100.0, [0.75, 1.5, 3.0]), (2.0, [0.75, 1.5, 1.5])])
def test_the_backoff_doubles_per_retry_times_the_jitter_and_is_capped(chat_server, monkeypatch, backoff_max, expected):
    waits = []
    monkeypatch.setattr(openai_compat, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=waits.append))
    server = chat_server(["fine"])
    server.script = [("status", 503)] * 3
    client = OpenAIBackend(server.model, server.base_url, api_key_env=None, backoff_base=1.0, backoff_max=backoff_max, timeout=5.0)
    client._jitter = _Jitter()
    assert client.generate([chat("hi")])[0].meta["attempts"] == 4
    # retry k waits min(backoff_max, 1.0 * 2**(k-1)) * (0.5 + 0.5 * 0.5)
    assert waits == pytest.approx(expected)


def test_a_key_with_characters_json_escapes_is_redacted_whole_from_its_json_form(monkeypatch):
    key = 'Zq"9\\w7!x'  # a quote and a backslash: JSON writes them escaped
    monkeypatch.setenv("DIALOGUE_GYM_TEST_ODD_KEY", key)
    client = OpenAIBackend("m", "http://127.0.0.1:9/v1", api_key_env="DIALOGUE_GYM_TEST_ODD_KEY")
    echoed = json.dumps({"error": f"bad key {key}"})
    assert client.redact(echoed) == json.dumps({"error": "bad key [redacted]"})
