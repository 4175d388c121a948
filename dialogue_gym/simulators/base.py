"""Policies that play a role in a game.

A policy is batched by contract: ``act_batch(observations, infos, memories) -> texts``. Per-episode
state lives in the *memory* that ``start`` returns, so one policy object can serve many envs at
once (the vector view sends all its LLM generations of a step as one batch).

A policy is handed only what its role can know: ``start`` gets the role's profile
(:meth:`~dialogue_gym.game.Game.role_profile`) and ``info`` the role's own. A policy that needs hidden
state (an oracle, an analysis probe) declares ``privileged = True``; it then gets the whole profile and
the privileged channel in ``info["privileged"]``, and result tables mark its rows.
"""

from __future__ import annotations

import random
from typing import Any, Protocol, Sequence, runtime_checkable


@runtime_checkable
class RolePolicy(Protocol):
    def start(self, profile: dict[str, Any], seed: int) -> Any:
        """Begin an episode; return this episode's memory (``None`` for stateless policies)."""

    def act_batch(
        self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]
    ) -> list[str]:
        """Raw text for each observation, in order."""


class ScriptedPolicy:
    """Base of weight-free policies: implement ``act`` for one observation. The memory is a dict with
    the episode's ``profile`` and ``seed``; :meth:`rng` gives a seeded ``random.Random``, made on first use
    (cheaper than a NumPy generator for the few scalar draws a turn needs)."""

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        return {"seed": seed, "profile": profile}

    @staticmethod
    def rng(memory: dict[str, Any]) -> random.Random:
        if "rng" not in memory:
            memory["rng"] = random.Random(memory["seed"])
        return memory["rng"]

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: Any) -> str:
        raise NotImplementedError

    def act_batch(
        self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]
    ) -> list[str]:
        return [self.act(o, i, m) for o, i, m in zip(observations, infos, memories)]
