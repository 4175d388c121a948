"""Plays the non-learner roles of many games at once; shared by the single-agent and vector views.

All pending moves of one role across games go to that role's policy as ONE ``act_batch`` call,
which an LLM policy turns into one backend batch. A policy that can report per-request failures
(``act_batch_with_errors``, e.g. an LLM policy whose backend gave up after its retries) gets those
games aborted with the cause (outcome ``backend_failure``) instead of stepped with an empty move.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from dialogue_gym.game import Game, StepResult
from dialogue_gym.seeding import mix_seed
from dialogue_gym.simulators.base import RolePolicy


def role_seed(episode_seed: int, role: str, roles: Sequence[str]) -> int:
    """The seed a role's policy uses in an episode: a pure function of the episode seed and the role."""
    return mix_seed(episode_seed, roles.index(role))


def act_with_errors(
    policy: RolePolicy, observations: list[dict[str, Any]], infos: list[dict[str, Any]], memories: list[Any]
) -> tuple[list[str], list[str | None]]:
    """``(texts, errors)`` from ``policy``: its ``act_batch_with_errors`` where it has one, else
    ``act_batch`` with no errors."""
    with_errors = getattr(policy, "act_batch_with_errors", None)
    if with_errors is not None:
        return with_errors(observations, infos, memories)
    return policy.act_batch(observations, infos, memories), [None] * len(observations)


class CounterpartDriver:
    """Owns the policies of every role except the learner, and their per-episode memories."""

    def __init__(self, policies: Mapping[str, RolePolicy], learner: str | None):
        self.policies = dict(policies)
        self.learner = learner

    def start(self, game: Game) -> dict[str, Any]:
        profile = game.episode_profile()
        return {
            role: policy.start(profile, role_seed(game.seed, role, game.roles)) for role, policy in self.policies.items()
        }

    def advance(
        self, games: Sequence[Game], memories: Sequence[dict[str, Any]], learner_rewards: np.ndarray | None = None
    ) -> list[list[StepResult]]:
        """Step every game until it is the learner's turn or the game is over.

        Returns the results of the counterpart moves per game; adds the learner's reward
        increments from those moves into ``learner_rewards`` when given. A move the policy reports
        as failed aborts its game (see :meth:`dialogue_gym.game.Game.abort`).
        """
        results: list[list[StepResult]] = [[] for _ in games]
        while True:
            pending: dict[str, list[int]] = {}
            for index, game in enumerate(games):
                role = game.current_role
                if role is not None and role != self.learner:
                    pending.setdefault(role, []).append(index)
            if not pending:
                return results
            for role, indices in pending.items():
                texts, errors = act_with_errors(
                    self.policies[role],
                    [games[i].observe(role) for i in indices],
                    [games[i].info(role) for i in indices],
                    [memories[i][role] for i in indices],
                )
                for index, text, error in zip(indices, texts, errors):
                    if error is not None:
                        results[index].append(games[index].abort(f"{role} policy failed: {error}"))
                        continue
                    result = games[index].step(text)
                    results[index].append(result)
                    if learner_rewards is not None and self.learner is not None:
                        learner_rewards[index] += result.rewards.get(self.learner, 0.0)
