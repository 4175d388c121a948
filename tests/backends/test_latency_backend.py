"""LatencyBackend: a prompt's reply does not depend on the call it comes in; calls cost a fixed latency
per ``max_batch`` requests, counted in ``busy_seconds``."""

import time

import pytest

from dialogue_gym.backends import GenerationRequest, make_backend
from dialogue_gym.backends.canned import LatencyBackend
from dialogue_gym.errors import ConfigError


def request(text, system="You are a caller."):
    return GenerationRequest(messages=({"role": "system", "content": system}, {"role": "user", "content": text}))


def test_a_prompt_gets_the_same_reply_in_any_batch():
    backend = LatencyBackend([f"reply {i}" for i in range(7)], latency=0.0)
    prompts = [request(f"hello {i}") for i in range(20)]
    alone = [backend.generate([p])[0].text for p in prompts]
    together = [o.text for o in backend.generate(prompts)]
    backwards = [o.text for o in backend.generate(prompts[::-1])][::-1]
    assert alone == together == backwards
    assert len(set(alone)) > 1
    assert backend.generate([request("hello 0", system="You are an owner.")])[0].meta["backend"] == "latency"


def test_calls_cost_the_latency_per_batch_served():
    backend = LatencyBackend(["ok"], latency=0.02, max_batch=4)
    start = time.perf_counter()
    backend.generate([request(str(i)) for i in range(4)])
    backend.generate([request(str(i)) for i in range(5)])  # two batches' worth
    assert time.perf_counter() - start >= 0.06
    assert backend.busy_seconds == pytest.approx(0.06)
    assert (backend.calls, backend.requests) == (2, 9)


def test_spec_round_trips_and_settings_are_checked():
    backend = LatencyBackend(["a", "b"], latency=0.01, max_batch=8)
    again = make_backend(backend.spec)
    assert isinstance(again, LatencyBackend) and again.spec == backend.spec
    for kwargs, match in [({"latency": -1}, "latency"), ({"latency": float("nan")}, "latency"),
                          ({"max_batch": 0}, "max_batch"), ({"max_batch": True}, "max_batch")]:
        with pytest.raises(ConfigError, match=match):
            LatencyBackend(["a"], **kwargs)
    with pytest.raises(ConfigError, match="replies"):
        LatencyBackend([])
