"""Named role policies of SEAD-Outbound, so envs take them by JSON-serializable kwargs."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from dialogue_gym.scenarios.sead.agents import (
    AdaptiveAgent,
    InformedAgent,
    OracleAgent,
    RandomAgent,
    SopAgent,
)
from dialogue_gym.scenarios.sead.data import BehaviorLibrary
from dialogue_gym.scenarios.sead.prompts import LLM_STOPS
from dialogue_gym.scenarios.sead.scripted_user import ScriptedUser
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.simulators.named import named_policy

SCRIPTED: dict[str, dict[str, Callable[[BehaviorLibrary], RolePolicy]]] = {
    "agent": {
        "random": lambda library: RandomAgent(),
        "sop": lambda library: SopAgent(),
        "adaptive": lambda library: AdaptiveAgent(),
        "oracle": OracleAgent,
        "informed": InformedAgent,
    },
    "user": {"scripted": ScriptedUser},
}



def make_policy(
    role: str,
    spec: Any,
    library: BehaviorLibrary,
    backend: Any = None,
    sampling: dict[str, Any] | None = None,
) -> RolePolicy:
    """Build the policy that plays ``role`` from its kwarg: a name, ``"llm"`` (+ backend spec), or a policy
    object. An LLM stops at the closing tag of its record unless ``sampling`` sets ``stop``."""
    scripted = {name: partial(factory, library) for name, factory in SCRIPTED[role].items()}
    if spec == "llm":
        sampling = {"stop": list(LLM_STOPS[role]), **(sampling or {})}
    return named_policy(role, spec, scripted, backend, sampling)
