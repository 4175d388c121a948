"""The scripted baselines a trained policy is reported beside: an id's named agents for its default
learner that do not read the privileged channel (an oracle is an upper bound, not a baseline)."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.game import is_privileged
from envs_registry import get


def fair_baselines(env_id: str) -> dict[str, Any]:
    """Name -> policy of every fair named baseline of ``env_id``'s default learner, in registry order."""
    entry = get(env_id)
    environment = gym.make(env_id, disable_env_checker=True).unwrapped
    policies = {name: environment.make_role_policy(entry.default_learner, name) for name in entry.agents}
    return {name: policy for name, policy in policies.items() if not is_privileged(policy)}


def best_baseline(scores: dict[str, float], better: Callable[[float], float]) -> tuple[str, float]:
    """``(name, score)`` of the baseline whose score minimises ``better`` (e.g. ``lambda s: -s`` for
    higher is better, ``abs(s - target)`` for closest to a target)."""
    name = min(scores, key=lambda candidate: better(scores[candidate]))
    return name, scores[name]
