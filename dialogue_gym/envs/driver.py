"""Plays the non-learner roles of many games at once; shared by the single-agent and vector views.

All pending moves of one role across games go to that role's policy as ONE ``act_batch`` call,
which an LLM policy turns into one backend batch. A policy that can report per-request failures
(``act_batch_with_errors``, e.g. an LLM policy whose backend gave up after its retries) gets those
games aborted with the cause (outcome ``backend_failure``) instead of stepped with an empty move.

:meth:`CounterpartDriver.begin` starts episodes for the views that have a learner and never hands
back one that ended before the learner's first move (see there).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import logger

from dialogue_gym.errors import BackendError, ConfigError, ScenarioError
from dialogue_gym.game import PRIVILEGED_INFO_KEY, Game, StepResult, is_privileged
from dialogue_gym.sealing import Seal
from dialogue_gym.seeding import mix_seed
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.types import Outcome, Trajectory

MAX_DRAWS = 8
"""How many episodes :meth:`CounterpartDriver.begin` draws for one reset before giving up."""


def role_seed(episode_seed: int, role: str, roles: Sequence[str]) -> int:
    """The seed a role's policy uses in an episode: a pure function of the episode seed and the role."""
    return mix_seed(episode_seed, roles.index(role))


def redraw_seed(seed: int, draw: int) -> int:
    """The seed of the ``draw``-th episode drawn for a reset with ``seed`` (draw 0 is ``seed`` itself)."""
    return seed if draw == 0 else mix_seed(seed, draw)


def act_with_errors(
    policy: RolePolicy, observations: list[dict[str, Any]], infos: list[dict[str, Any]], memories: list[Any]
) -> tuple[list[str], list[str | None]]:
    """``(texts, errors)`` from ``policy``: its ``act_batch_with_errors`` where it has one, else
    ``act_batch`` with no errors. A policy that does not return one text (and one error) per
    observation raises :class:`ConfigError`: zipped with the games, a short list would leave a game
    waiting forever, and a ``str`` would be played one character a game."""
    with_errors = getattr(policy, "act_batch_with_errors", None)
    if with_errors is not None:
        texts, errors = with_errors(observations, infos, memories)
    else:
        texts, errors = policy.act_batch(observations, infos, memories), [None] * len(observations)
    for name, returned in (("texts", texts), ("errors", errors)):
        sized = hasattr(returned, "__len__") and not isinstance(returned, (str, bytes))
        if not sized or len(returned) != len(observations):
            shown = f"{len(returned)} {name}" if sized else f"a {type(returned).__name__}"
            raise ConfigError(
                f"The policy {type(policy).__name__} returned {shown} for {len(observations)} observations; "
                "act_batch must return a list of one str per observation (act_batch_with_errors: one text and one error or None per observation)."
            )
    return list(texts), list(errors)


def role_info(game: Game, role: str, policy: RolePolicy) -> dict[str, Any]:
    """The ``info`` ``policy`` gets for ``role``: the role's own, plus the privileged channel under
    :data:`~dialogue_gym.game.PRIVILEGED_INFO_KEY` if the policy declares it needs it."""
    info = game.info(role)
    if is_privileged(policy):
        return {**info, PRIVILEGED_INFO_KEY: game.privileged()}
    return info


class CounterpartDriver:
    """Owns the policies of every role except the learner, and their per-episode memories.

    With a ``seal`` (a sealed run, :mod:`dialogue_gym.sealing`), the seed each policy's ``start`` gets
    is keyed by the run's secret, so no policy can invert it to the episode seed."""

    def __init__(self, policies: Mapping[str, RolePolicy], learner: str | None, seal: Seal | None = None):
        self.policies = dict(policies)
        self.learner = learner
        self.seal = seal

    def role_seed(self, game: Game, role: str) -> int:
        if self.seal is not None:
            return self.seal.role_seed(game.seed, game.roles.index(role))
        return role_seed(game.seed, role, game.roles)

    def start(self, game: Game) -> dict[str, Any]:
        """Each policy's memory for ``game``'s episode: ``start`` with what its role knows
        (:meth:`Game.role_profile`), or the whole profile for a privileged policy."""
        return {
            role: policy.start(
                game.episode_profile() if is_privileged(policy) else game.role_profile(role),
                self.role_seed(game, role),
            )
            for role, policy in self.policies.items()
        }

    def begin(
        self, games: Sequence[Game], seeds: Sequence[int], options: dict[str, Any] | None
    ) -> tuple[list[dict[str, Any]], list[Trajectory]]:
        """Reset ``games[i]`` with ``seeds[i]`` and ``options`` and play the counterparts up to the
        learner's first turn; returns each game's policy memories and the episodes set aside.

        An episode that ends before the learner's first move (a counterpart's backend failed on the
        opening move, or the counterpart ended the dialogue at once) gives the learner nothing to do, so
        it is set aside (returned, with a warning) and the game re-drawn with seed
        ``redraw_seed(seeds[i], draw)``: a pure function of the seed, so every view re-draws alike.
        After :data:`MAX_DRAWS` such episodes in a row this raises :class:`BackendError` (the backend
        is down) or :class:`ScenarioError` (these options never give the learner a turn).
        """
        memories: list[dict[str, Any]] = [{} for _ in games]
        set_aside: list[Trajectory] = []
        drawing = list(range(len(games)))
        for draw in range(MAX_DRAWS):
            for index in drawing:
                games[index].reset(seed=redraw_seed(seeds[index], draw), options=options)
                memories[index] = self.start(games[index])
            self.advance([games[i] for i in drawing], [memories[i] for i in drawing])
            drawing = [index for index in drawing if games[index].done]
            for index in drawing:
                trajectory = games[index].trajectory()
                trajectory.learner = self.learner
                set_aside.append(trajectory)
                logger.warn(
                    f"{games[index].view_id or games[index].id} episode seed {games[index].seed} ended ({_why_ended(trajectory)}) before the "
                    f"{self.learner!r} role's first move; drawing another episode for this reset."
                )
            if not drawing:
                return memories, set_aside
        raise _no_learner_turn(games[drawing[0]].trajectory(), seeds[drawing[0]], options, self.learner)

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
                    [role_info(games[i], role, self.policies[role]) for i in indices],
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


def _why_ended(trajectory: Trajectory) -> str:
    outcome = trajectory.outcome.value if trajectory.outcome is not None else "no outcome"
    failure = trajectory.meta.get("failure")
    return f"{outcome}: {failure}" if failure else outcome


def _no_learner_turn(last: Trajectory, seed: int, options: dict[str, Any] | None, learner: str | None) -> Exception:
    """The error :meth:`CounterpartDriver.begin` raises when every draw ended before the learner moved."""
    drawn = f"{MAX_DRAWS} episodes drawn for reset(seed={seed}) in a row ended before the {learner!r} role's first move"
    if last.outcome is Outcome.BACKEND_FAILURE:
        return BackendError(
            f"{drawn}: a counterpart's backend failed each time (last: {last.meta.get('failure')}). "
            "Check that the backend is reachable and serving the model, then call reset() again."
        )
    return ScenarioError(
        f"{drawn} (last outcome: {_why_ended(last)}, options {options!r:.200}), so the learner never gets a turn. "
        "Pass reset options or counterpart settings under which the counterpart's opening move continues the dialogue."
    )
