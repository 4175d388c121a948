"""Role policies chosen by JSON-serializable kwargs: a scenario's named scripted policies, ``"llm"``
(with a backend spec), or a policy object passed through."""

from __future__ import annotations

import difflib
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
    known = [*scripted, "llm"]
    close = difflib.get_close_matches(spec, known, n=1) if isinstance(spec, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"{role}={spec!r} is not a known {role} policy{hint}; use one of {known} "
        "or pass an object with start() and act_batch()."
    )
