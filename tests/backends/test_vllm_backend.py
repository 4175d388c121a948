"""VLLMBackend: the missing-dependency error, and the request/response mapping against a fake ``vllm``
module (vLLM itself needs CUDA and is not installed in CI)."""

import sys
import types
from dataclasses import dataclass

import pytest

from dialogue_gym.backends import GenerationRequest, SamplingParams, make_backend
from dialogue_gym.errors import ConfigError, DependencyNotInstalled


def test_missing_vllm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(DependencyNotInstalled, match=r"The vLLM backend .* 'vllm', which is not installed.*pip install 'dialogue_gym\[vllm\]'") as info:
        make_backend({"name": "vllm", "model": "HuggingFaceTB/SmolLM2-135M-Instruct"})
    assert info.value.extra == "vllm" and isinstance(info.value, ImportError)


def test_config_errors_come_before_the_import(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ConfigError, match=r"VLLMBackend: top_p must be a number in \(0, 1\], got 0"):
        make_backend({"name": "vllm", "model": "m", "top_p": 0})
    with pytest.raises(ConfigError, match=r"tensor_parallel_size must be an int >= 1, got 0"):
        make_backend({"name": "vllm", "model": "m", "tensor_parallel_size": 0})


# -- a fake vllm, shaped like the real public API ------------------------------------------------
@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class FakeTokenizer:
    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def __call__(self, text, add_special_tokens):
        assert not add_special_tokens
        return {"input_ids": [ord(c) for c in text]}


class FakeLLM:
    instances = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = []
        FakeLLM.instances.append(self)

    def get_tokenizer(self):
        return FakeTokenizer()

    def generate(self, prompts, sampling_params, use_tqdm):
        self.calls.append((prompts, sampling_params))
        results = []
        for i, (prompt, params) in enumerate(zip(prompts, sampling_params)):
            tokens = [7, 8, 9][: params.kwargs["max_tokens"]]
            logprobs = [{t: Logprob(-0.5 * (k + 1)), 1: Logprob(-9.0)} for k, t in enumerate(tokens)] if params.kwargs["logprobs"] == 0 else None
            completion = types.SimpleNamespace(text=f"reply {i}", token_ids=tuple(tokens), logprobs=logprobs, finish_reason="length")
            results.append(types.SimpleNamespace(prompt_token_ids=prompt["prompt_token_ids"], outputs=[completion]))
        return results


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, FakeSamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.instances.clear()
    return module


def request(text, **sampling):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams(**sampling))


def test_one_engine_call_per_batch_with_per_request_params(fake_vllm):
    backend = make_backend({"name": "vllm", "model": "some/model", "max_new_tokens": 3, "temperature": 0.7, "seed": 5,
                            "engine_kwargs": {"enforce_eager": True}})
    llm = FakeLLM.instances[0]
    assert llm.kwargs == {"model": "some/model", "dtype": "auto", "gpu_memory_utilization": 0.9, "tensor_parallel_size": 1,
                          "seed": 5, "enforce_eager": True}
    outputs = backend.generate([request("hi"), request("yo", seed=11, temperature=0.0, max_new_tokens=2, stop=("</r>",))])
    assert len(llm.calls) == 1
    prompts, params = llm.calls[0]
    assert prompts[0] == {"prompt_token_ids": [ord(c) for c in "<user>hi<assistant>"]}
    first, second = params[0].kwargs, params[1].kwargs
    assert (first["max_tokens"], first["temperature"], first["top_p"], first["stop"], first["logprobs"], first["n"]) == (3, 0.7, 0.95, None, 0, 1)
    assert isinstance(first["seed"], int) and first["seed"] != 5  # derived per request from the backend seed
    assert (second["max_tokens"], second["temperature"], second["seed"], second["stop"]) == (2, 0.0, 11, ["</r>"])
    assert [o.text for o in outputs] == ["reply 0", "reply 1"]
    assert outputs[0].token_ids == [7, 8, 9] and outputs[0].logprobs == [-0.5, -1.0, -1.5]
    assert outputs[1].token_ids == [7, 8] and outputs[1].logprobs == [-0.5, -1.0]
    assert outputs[0].prompt_token_ids == prompts[0]["prompt_token_ids"] and outputs[0].finish_reason == "length"
    assert outputs[0].error is None and outputs[0].meta == {"backend": "vllm", "model": "some/model"}
    # the backend-derived seed changes from call to call; a request seed does not
    again = backend.generate([request("hi"), request("yo", seed=11)])
    assert llm.calls[1][1][0].kwargs["seed"] != first["seed"] and llm.calls[1][1][1].kwargs["seed"] == 11
    assert backend.generate([]) == [] and len(llm.calls) == 2
    assert make_backend(backend.spec).spec == backend.spec and len(again) == 2


def test_logprobs_off(fake_vllm):
    backend = make_backend({"name": "vllm", "model": "m", "logprobs": False})
    out = backend.generate([request("hi")])[0]
    assert FakeLLM.instances[0].calls[0][1][0].kwargs["logprobs"] is None
    assert out.logprobs is None and out.token_ids == [7, 8, 9]


def test_bad_request_is_a_config_error(fake_vllm):
    backend = make_backend({"name": "vllm", "model": "m"})
    with pytest.raises(ConfigError, match=r"VLLMBackend.generate: request 0 must be a GenerationRequest"):
        backend.generate([{"role": "user", "content": "hi"}])


def test_prompt_ids_are_sent_as_given(fake_vllm):
    backend = make_backend({"name": "vllm", "model": "m"})
    request = GenerationRequest(({"role": "user", "content": "hi"},), SamplingParams(), prompt_ids=(5, 6, 7))
    out = backend.generate([request])[0]
    assert FakeLLM.instances[0].calls[0][0] == [{"prompt_token_ids": [5, 6, 7]}] and out.prompt_token_ids == [5, 6, 7]
