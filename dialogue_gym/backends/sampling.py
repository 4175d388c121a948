"""Request checks and sampling defaults shared by the remote-engine backends (OpenAI-compatible, vLLM)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError
from .base import GenerationRequest, SamplingParams
from .transformers_backend import (
    _check_max_new_tokens,
    _check_seed,
    _check_temperature,
    _check_top_p,
)


@dataclass(frozen=True)
class SamplingDefaults:
    """A backend's default sampling settings, which each request's :class:`SamplingParams` overrides
    field by field; checked on construction (``where`` names the backend in error messages)."""

    max_new_tokens: int
    temperature: float
    top_p: float
    where: str

    def __post_init__(self) -> None:
        _check_max_new_tokens(self.max_new_tokens, self.where)
        _check_temperature(self.temperature, self.where)
        _check_top_p(self.top_p, self.where)

    def resolve(self, request: Any, index: int) -> tuple[list[dict[str, str]], SamplingParams]:
        """The request's messages (checked) and its fully resolved sampling settings (``seed`` stays
        ``None`` unless the request sets one)."""
        where = f"{self.where}.generate: request {index}"
        messages = getattr(request, "messages", None)
        if (
            not isinstance(request, GenerationRequest)
            or isinstance(messages, (str, bytes))
            or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
        ):
            raise ConfigError(
                f"{where} must be a GenerationRequest whose messages are dicts with str 'role' and 'content', "
                f"got {request!r:.200}."
            )
        sampling = request.sampling
        if not isinstance(sampling, SamplingParams):
            raise ConfigError(f"{where}: sampling must be a SamplingParams, got {type(sampling).__name__}.")
        resolved = replace(
            sampling,
            max_new_tokens=self.max_new_tokens if sampling.max_new_tokens is None else sampling.max_new_tokens,
            temperature=float(self.temperature if sampling.temperature is None else sampling.temperature),
            top_p=float(self.top_p if sampling.top_p is None else sampling.top_p),
            stop=tuple(sampling.stop or ()),
        )
        _check_max_new_tokens(resolved.max_new_tokens, where)
        _check_temperature(resolved.temperature, where)
        _check_top_p(resolved.top_p, where)
        _check_seed(resolved.seed, where)
        if not all(isinstance(s, str) and s for s in resolved.stop):
            raise ConfigError(f"{where}: stop must be a tuple of non-empty strings, got {sampling.stop!r}.")
        return [{"role": m["role"], "content": m["content"]} for m in messages], resolved


def check_int(value: Any, name: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: {name} must be an int >= {minimum}, got {value!r}.")
    return value


def check_number(value: Any, name: str, where: str, minimum: float, strict: bool = False) -> float:
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or value != value
    if bad or value < minimum or (strict and value == minimum):
        relation = ">" if strict else ">="
        raise ConfigError(f"{where}: {name} must be a number {relation} {minimum}, got {value!r}.")
    return float(value)
