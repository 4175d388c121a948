"""Named role policies of TRACER / DM-Bench, so envs take them by JSON-serializable kwargs."""

from __future__ import annotations

from typing import Any, Callable

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.tracer.assistants import (
    ConsultativeAssistant,
    EmpatheticAssistant,
    PushyAssistant,
    RandomAssistant,
    SopAssistant,
)
from dialogue_gym.scenarios.tracer.users import FlatUser, IntentDynamicsUser, RandomUser, eager_user, reluctant_user
from dialogue_gym.simulators.base import RolePolicy

SCRIPTED: dict[str, dict[str, Callable[[], RolePolicy]]] = {
    "assistant": {
        "sop": SopAssistant,
        "consultative": ConsultativeAssistant,
        "empathetic": EmpatheticAssistant,
        "pushy": PushyAssistant,
        "random": RandomAssistant,
    },
    "user": {
        "scripted": IntentDynamicsUser,
        "random": RandomUser,
        "flat": FlatUser,
        "eager": eager_user,
        "reluctant": reluctant_user,
    },
}


def policy_names(role: str) -> list[str]:
    return [*SCRIPTED[role], "llm"]


def make_policy(role: str, spec: Any, backend: Any = None, sampling: dict[str, Any] | None = None) -> RolePolicy:
    """The policy that plays ``role`` from its kwarg: a name, ``"llm"`` (+ backend spec), or a policy object."""
    if callable(getattr(spec, "act_batch", None)) and callable(getattr(spec, "start", None)):
        return spec
    if spec == "llm":
        if backend is None:
            raise ConfigError(
                f"{role}='llm' needs {role}_backend=..., e.g. {role}_backend={{'name': 'transformers', 'model': 'smollm2'}}."
            )
        from dialogue_gym.simulators.llm import LLMPolicy

        return LLMPolicy(backend, sampling)
    if isinstance(spec, str) and spec in SCRIPTED[role]:
        return SCRIPTED[role][spec]()
    raise ConfigError(
        f"{role}={spec!r} is not a known {role} policy; use one of {policy_names(role)} "
        "or pass an object with start() and act_batch()."
    )
