"""Named role policies of TRACER / DM-Bench, so envs take them by JSON-serializable kwargs."""

from __future__ import annotations

from typing import Any, Callable

from dialogue_gym.scenarios.tracer.assistants import (
    ConsultativeAssistant,
    EmpatheticAssistant,
    PlannerAssistant,
    PushyAssistant,
    RandomAssistant,
    SopAssistant,
)
from dialogue_gym.scenarios.tracer.prompts import LLM_STOPS
from dialogue_gym.scenarios.tracer.users import (
    FlatUser,
    IntentDynamicsUser,
    RandomUser,
    eager_user,
    reluctant_user,
)
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.simulators.named import named_policy

SCRIPTED: dict[str, dict[str, Callable[[], RolePolicy]]] = {
    "assistant": {
        "sop": SopAssistant,
        "consultative": ConsultativeAssistant,
        "empathetic": EmpatheticAssistant,
        "pushy": PushyAssistant,
        "random": RandomAssistant,
        "planner": PlannerAssistant,
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
    """The policy that plays ``role`` from its kwarg: a name, ``"llm"`` (+ backend spec), or a policy object.
    An LLM gets the role's stop strings unless ``sampling`` sets ``stop``."""
    if spec == "llm":
        sampling = {"stop": list(LLM_STOPS[role]), **(sampling or {})}
    return named_policy(role, spec, SCRIPTED[role], backend, sampling)
