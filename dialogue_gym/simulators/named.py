"""Role policies chosen by JSON-serializable kwargs: a scenario's named scripted policies, ``"llm"``
(with a backend spec), or a policy object passed through."""

from __future__ import annotations

from typing import Any, Callable

from dialogue_gym.errors import ConfigError
from dialogue_gym.simulators.base import RolePolicy


def named_policy(
    role: str,
    spec: Any,
    scripted: dict[str, Callable[[], RolePolicy]],
    backend: Any = None,
    sampling: dict[str, Any] | None = None,
) -> RolePolicy:
    """The policy that plays ``role``: ``spec`` is a policy object (returned as is), ``"llm"`` (an
    :class:`~dialogue_gym.simulators.llm.LLMPolicy` over ``backend``), or a key of ``scripted``
    (name -> factory)."""
    if callable(getattr(spec, "act_batch", None)) and callable(getattr(spec, "start", None)):
        return spec
    if spec == "llm":
        if backend is None:
            raise ConfigError(
                f"{role}='llm' needs {role}_backend=..., e.g. {role}_backend={{'name': 'transformers', 'model': 'smollm2'}}."
            )
        from dialogue_gym.simulators.llm import LLMPolicy

        return LLMPolicy(backend, sampling)
    if isinstance(spec, str) and spec in scripted:
        return scripted[spec]()
    raise ConfigError(
        f"{role}={spec!r} is not a known {role} policy; use one of {[*scripted, 'llm']} "
        "or pass an object with start() and act_batch()."
    )
