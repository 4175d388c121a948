"""Every environment ID, in one table: Gymnasium entry points, vector entry points, PettingZoo modules.

``import dialogue_gym`` calls :func:`register_all`; ``gym.make("dialogue_gym:ID")`` works in a
fresh interpreter because Gymnasium imports ``dialogue_gym`` first.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym


@dataclass(frozen=True)
class Entry:
    id: str
    entry_point: str
    vector_entry_point: str
    pettingzoo_module: str
    roles: tuple[str, ...]
    default_learner: str
    kwargs: dict[str, Any] = field(default_factory=dict)


REGISTRY: tuple[Entry, ...] = (
    Entry(
        id="SEAD-Outbound-v0",
        entry_point="dialogue_gym.envs.sead_outbound_v0:SeadOutboundEnv",
        vector_entry_point="dialogue_gym.envs.sead_outbound_v0:SeadOutboundVectorEnv",
        pettingzoo_module="dialogue_gym.envs.sead_outbound_v0",
        roles=("agent", "user"),
        default_learner="agent",
    ),
)


def register_all() -> None:
    for entry in REGISTRY:
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=entry.entry_point,
                vector_entry_point=entry.vector_entry_point,
                kwargs=dict(entry.kwargs),
                disable_env_checker=False,
            )


def get(env_id: str) -> Entry:
    for entry in REGISTRY:
        if entry.id == env_id:
            return entry
    from dialogue_gym.errors import ConfigError

    raise ConfigError(f"Unknown environment id {env_id!r}; registered ids: {[e.id for e in REGISTRY]}.")


def make(env_id: str, view: str = "aec", **kwargs: Any):
    """PettingZoo-style constructor: ``view="aec"`` (``env()``) or ``"parallel"`` (``parallel_env()``)."""
    module = importlib.import_module(get(env_id).pettingzoo_module)
    if view == "aec":
        return module.env(**kwargs)
    if view == "parallel":
        return module.parallel_env(**kwargs)
    from dialogue_gym.errors import ConfigError

    raise ConfigError(f"view={view!r} is not supported; use 'aec' or 'parallel'.")
