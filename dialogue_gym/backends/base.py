"""The batched text-generation protocol every backend speaks.

A backend turns a list of chat requests into a list of outputs, in order. One request is a batch
of one. Backends are duck-typed (TRL style): anything with ``generate(requests) -> outputs`` works.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings; ``None`` fields fall back to the backend's defaults."""

    max_new_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class GenerationRequest:
    """One chat to continue: ``messages`` as ``[{"role": ..., "content": ...}, ...]``.

    ``prompt_ids``, where given, is the exact tokenised prompt (token-in generation for multi-turn
    training: earlier turns keep the ids they were generated with); backends that work on token
    ids use it instead of rendering ``messages``."""

    messages: tuple[dict[str, str], ...]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    prompt_ids: tuple[int, ...] | None = None


@dataclass
class GenerationOutput:
    """What a backend produced for one request.

    ``token_ids`` / ``logprobs`` cover the generated tokens only and are ``None`` where the
    backend cannot provide them; ``prompt_token_ids`` is the tokenised prompt where known.

    ``error`` is ``None`` for a real output. A backend that gives up on one request (after its
    bounded retries) reports the cause there instead of raising for the whole batch; ``text`` is
    then ``""`` and must not be used as the role's move (the driver aborts that episode instead).
    """

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None
    finish_reason: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@runtime_checkable
class Backend(Protocol):
    """Anything that can generate a batch of chat continuations."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]: ...
