"""Named role policies of SEAD-Outbound, so envs take them by JSON-serializable kwargs."""

from __future__ import annotations

from typing import Any, Callable

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.sead.agents import AdaptiveAgent, OracleAgent, RandomAgent, SopAgent
from dialogue_gym.scenarios.sead.data import BehaviorLibrary
from dialogue_gym.scenarios.sead.scripted_user import ScriptedUser
from dialogue_gym.simulators.base import RolePolicy

SCRIPTED: dict[str, dict[str, Callable[[BehaviorLibrary], RolePolicy]]] = {
    "agent": {
        "random": lambda library: RandomAgent(),
        "sop": lambda library: SopAgent(),
        "adaptive": lambda library: AdaptiveAgent(),
        "oracle": OracleAgent,
    },
    "user": {"scripted": ScriptedUser},
}


def policy_names(role: str) -> list[str]:
    return [*SCRIPTED[role], "llm"]


def make_policy(
    role: str,
    spec: Any,
    library: BehaviorLibrary,
    backend: Any = None,
    sampling: dict[str, Any] | None = None,
) -> RolePolicy:
    """Build the policy that plays ``role`` from its kwarg: a name, ``"llm"`` (+ backend spec), or a policy object."""
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
        return SCRIPTED[role][spec](library)
    raise ConfigError(
        f"{role}={spec!r} is not a known {role} policy; use one of {policy_names(role)} "
        "or pass an object with start() and act_batch()."
    )
