"""vLLM backend details the other vLLM tests leave open: a backend seed gives request i of call k the
same derived seed the transformers backend gives it (``derive_seed("backend", seed, k, i)``, calls
counted from 0), max_model_len reaches the engine (1 included), and gpu_memory_utilization must be
above 0."""

import sys
import types

import pytest
from test_vllm_backend import FakeLLM, FakeSamplingParams

from dialogue_gym.backends import GenerationRequest, SamplingParams, make_backend
from dialogue_gym.backends.transformers_backend import derive_seed
from dialogue_gym.errors import ConfigError


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, FakeSamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.instances.clear()
    return module


def _request(text):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams())


def test_request_i_of_call_k_is_seeded_like_the_transformers_backend_seeds_it(fake_vllm):
    backend = make_backend({"name": "vllm", "model": "m", "seed": 5})
    backend.generate([_request("a"), _request("b")])
    backend.generate([_request("c")])
    seeds = [[params.kwargs["seed"] for params in call[1]] for call in FakeLLM.instances[0].calls]
    assert seeds == [[derive_seed("backend", 5, 0, 0), derive_seed("backend", 5, 0, 1)], [derive_seed("backend", 5, 1, 0)]]


@pytest.mark.parametrize("length", [1, 4096])
def test_max_model_len_reaches_the_engine(fake_vllm, length):
    make_backend({"name": "vllm", "model": "m", "max_model_len": length})
    assert FakeLLM.instances[0].kwargs["max_model_len"] == length


def test_gpu_memory_utilization_must_be_above_zero():
    with pytest.raises(ConfigError, match=r"VLLMBackend: gpu_memory_utilization must be a number > 0.0, got 0"):
        make_backend({"name": "vllm", "model": "m", "gpu_memory_utilization": 0})
