"""A backend over vLLM's offline engine (``vllm.LLM``), for GPU rollouts and training.

:class:`VLLMBackend` renders every request with the model's chat template
(``add_generation_prompt=True``), tokenises it, and hands the WHOLE batch to one
``LLM.generate(prompts, sampling_params=[...])`` call (vLLM schedules and batches it internally),
with one ``vllm.SamplingParams`` per request so that each request's own seed holds. A request's
``prompt_ids``, where given, is sent as is instead of the rendered messages. Outputs carry
the text, the generated token ids, their log-probabilities (``SamplingParams(logprobs=0)``: the
sampled token's only), the prompt token ids and the finish reason.

vLLM is imported when the backend is built, never at ``import dialogue_gym``; without it the
constructor raises :class:`~dialogue_gym.errors.DependencyNotInstalled` naming the ``vllm`` extra.
To talk to a ``vllm serve`` process instead, use the ``openai`` backend.

Multi-turn prompts reuse their earlier turns through vLLM's automatic prefix caching (KV blocks keyed
by token ids; on by default in its V1 engine, ``engine_kwargs={"enable_prefix_caching": True}`` to make
it explicit; ``vllm serve --enable-prefix-caching`` for a server): the engine-side counterpart of the
``transformers`` backend's ``prefix_cache``.
"""

from __future__ import annotations

import importlib
from typing import Any, Sequence

from ..errors import BackendError, ConfigError, DependencyNotInstalled
from .base import GenerationOutput, GenerationRequest
from .sampling import SamplingDefaults, check_int, check_number
from .transformers_backend import derive_seed

_WHERE = "VLLMBackend"


class VLLMBackend:
    """Batched chat generation with ``vllm.LLM``.

    Args:
        model: a Hugging Face model id or local folder, as ``vllm.LLM(model=...)`` takes it.
        max_new_tokens, temperature, top_p: default sampling settings; each request's
            :class:`~dialogue_gym.backends.base.SamplingParams` overrides them field by field
            (``temperature == 0`` is greedy).
        seed: engine seed, and the base of per-request seeds for requests without their own
            (request ``i`` of call ``n`` gets a seed derived from ``(seed, n, i)``).
        logprobs: return the sampled tokens' log-probabilities.
        dtype, gpu_memory_utilization, tensor_parallel_size, max_model_len: passed to ``vllm.LLM``.
        engine_kwargs: any other ``vllm.LLM`` keyword arguments (JSON data), e.g.
            ``{"enforce_eager": true}``.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.9,
        top_p: float = 0.95,
        seed: int | None = None,
        logprobs: bool = True,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.9,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{_WHERE}: model must be a model id or local folder (non-empty str), got {model!r}.")
        self.defaults = SamplingDefaults(max_new_tokens, temperature, top_p, _WHERE)
        if seed is not None:
            check_int(seed, "seed", _WHERE, 0)
        if not isinstance(logprobs, bool):
            raise ConfigError(f"{_WHERE}: logprobs must be True or False, got {logprobs!r}.")
        check_number(gpu_memory_utilization, "gpu_memory_utilization", _WHERE, 0.0, strict=True)
        check_int(tensor_parallel_size, "tensor_parallel_size", _WHERE, 1)
        if max_model_len is not None:
            check_int(max_model_len, "max_model_len", _WHERE, 1)
        if engine_kwargs is not None and not isinstance(engine_kwargs, dict):
            raise ConfigError(f"{_WHERE}: engine_kwargs must be a dict of vllm.LLM arguments or None, got {engine_kwargs!r}.")
        try:
            self._vllm = importlib.import_module("vllm")
        except ImportError as exc:
            raise DependencyNotInstalled("vllm", "vllm", "The vLLM backend (name 'vllm')") from exc

        llm_kwargs: dict[str, Any] = {
            "model": model,
            "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
            "tensor_parallel_size": tensor_parallel_size,
            "seed": seed,
            **(engine_kwargs or {}),
        }
        if max_model_len is not None:
            llm_kwargs["max_model_len"] = max_model_len
        self.llm = self._vllm.LLM(**llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.model_name = model
        self.seed = seed
        self.logprobs = logprobs
        self._calls = 0
        self.spec: dict[str, Any] = {
            "name": self.name,
            "model": model,
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed,
            "logprobs": logprobs,
            "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
            "tensor_parallel_size": tensor_parallel_size,
            "max_model_len": max_model_len,
            "engine_kwargs": dict(engine_kwargs or {}),
        }
        """The JSON-serialisable constructor arguments, which ``make_backend`` accepts."""

    def _prompt_ids(self, messages: list[dict[str, str]], index: int) -> list[int]:
        try:
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception as exc:  # jinja2 errors raised by the template itself
            raise ConfigError(
                f"{_WHERE}.generate: the chat template of {self.model_name!r} rejected request {index} "
                f"(roles {[m['role'] for m in messages]}): {exc}"
            ) from exc
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]:
        """Continue each chat; the whole batch is ONE ``LLM.generate`` call. Outputs in request order."""
        call = self._calls
        self._calls += 1
        prompts, params = [], []
        for i, request in enumerate(requests):
            messages, sampling = self.defaults.resolve(request, i)
            seed = sampling.seed
            if seed is None and self.seed is not None:
                seed = derive_seed("backend", self.seed, call, i)
            given = getattr(request, "prompt_ids", None)  # token-in generation: the exact prompt ids
            ids = [int(t) for t in given] if given is not None else self._prompt_ids(messages, i)
            prompts.append({"prompt_token_ids": ids})
            params.append(
                self._vllm.SamplingParams(
                    n=1,
                    max_tokens=sampling.max_new_tokens,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    seed=seed,
                    stop=list(sampling.stop) or None,
                    logprobs=0 if self.logprobs else None,
                )
            )
        if not prompts:
            return []
        try:
            results = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"{_WHERE}: LLM.generate failed on a batch of {len(prompts)}: {exc}") from exc
        if len(results) != len(prompts):
            raise BackendError(f"{_WHERE}: LLM.generate returned {len(results)} outputs for {len(prompts)} prompts.")
        return [self._output(result, prompt["prompt_token_ids"]) for result, prompt in zip(results, prompts)]

    def _output(self, result: Any, prompt_ids: list[int]) -> GenerationOutput:
        completion = result.outputs[0]
        token_ids = [int(t) for t in completion.token_ids]
        logprobs = None
        if self.logprobs and completion.logprobs is not None:
            # one {token_id: Logprob} dict per generated token, holding (at least) the sampled token
            logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs, token_ids)]
        return GenerationOutput(
            text=completion.text,
            token_ids=token_ids,
            logprobs=logprobs,
            prompt_token_ids=list(getattr(result, "prompt_token_ids", None) or prompt_ids),
            finish_reason=completion.finish_reason,
            meta={"backend": self.name, "model": self.model_name},
        )

    def __repr__(self) -> str:
        return f"VLLMBackend(model={self.model_name!r}, seed={self.seed!r}, logprobs={self.logprobs})"
