"""Text-generation backends and the ``make_backend`` registry.

A backend is anything with ``generate(requests) -> outputs`` (see :mod:`.base`). Backends are
named in :data:`BACKENDS` and built from JSON specs by :func:`make_backend`; concrete backends are
imported only when used, so ``import dialogue_gym.backends`` needs neither torch nor transformers.
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import Backend, GenerationOutput, GenerationRequest, SamplingParams

if TYPE_CHECKING:  # pragma: no cover
    from .cache import CachedBackend
    from .canned import CannedBackend
    from .openai_compat import OpenAIBackend
    from .tiny import build_tiny_chat_model
    from .transformers_backend import TransformersBackend
    from .vllm_backend import VLLMBackend

BACKENDS: dict[str, str] = {
    "transformers": "dialogue_gym.backends.transformers_backend:TransformersBackend",
    "canned": "dialogue_gym.backends.canned:CannedBackend",
    "latency": "dialogue_gym.backends.canned:LatencyBackend",
    "openai": "dialogue_gym.backends.openai_compat:OpenAIBackend",
    "vllm": "dialogue_gym.backends.vllm_backend:VLLMBackend",
    "cached": "dialogue_gym.backends.cache:CachedBackend",
}
"""Backend name -> ``"module:attribute"`` of the class (or factory) that ``make_backend`` calls."""

_LAZY = {
    "TransformersBackend": "dialogue_gym.backends.transformers_backend",
    "CannedBackend": "dialogue_gym.backends.canned",
    "LatencyBackend": "dialogue_gym.backends.canned",
    "build_tiny_chat_model": "dialogue_gym.backends.tiny",
    "OpenAIBackend": "dialogue_gym.backends.openai_compat",
    "VLLMBackend": "dialogue_gym.backends.vllm_backend",
    "CachedBackend": "dialogue_gym.backends.cache",
}

__all__ = [
    "BACKENDS",
    "Backend",
    "CachedBackend",
    "CannedBackend",
    "GenerationOutput",
    "GenerationRequest",
    "LatencyBackend",
    "OpenAIBackend",
    "SamplingParams",
    "TransformersBackend",
    "VLLMBackend",
    "build_tiny_chat_model",
    "make_backend",
    "register_backend",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_backend(name: str, target: str) -> None:
    """Add (or replace) a backend name; ``target`` is ``"module:attribute"``, imported on first use."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"register_backend: name must be a non-empty str, got {name!r}.")
    if not isinstance(target, str) or target.count(":") != 1:
        raise ConfigError(f"register_backend: target must look like 'package.module:ClassName', got {target!r}.")
    BACKENDS[name] = target


def make_backend(spec: Any) -> Backend:
    """Build a backend from ``spec``.

    ``spec`` is either a backend object (anything with a callable ``generate``; returned as is) or
    a JSON dict ``{"name": <one of BACKENDS>, **kwargs}``, e.g.
    ``{"name": "transformers", "model": "smollm2", "temperature": 0.7}``.
    """
    if not isinstance(spec, dict) and callable(getattr(spec, "generate", None)):
        return spec
    if not isinstance(spec, dict):
        raise ConfigError(
            f"make_backend: spec must be a backend object (with a generate method) or a dict like "
            f"{{'name': 'transformers', ...}}, got {type(spec).__name__} {spec!r}."
        )
    kwargs = dict(spec)
    name = kwargs.pop("name", None)
    known = sorted(BACKENDS)
    if name is None:
        raise ConfigError(f"make_backend: spec {spec!r} has no 'name'; add one of {known}.")
    if not isinstance(name, str) or name not in BACKENDS:
        raise ConfigError(f"make_backend: unknown backend name {name!r}; known names: {known}.")
    module_name, _, attr = BACKENDS[name].partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError as exc:
        raise ConfigError(
            f"make_backend: bad arguments {sorted(kwargs)} for backend {name!r} ({exc}); "
            f"its signature is {attr}{inspect.signature(factory)}."
        ) from exc
    return factory(**kwargs)
