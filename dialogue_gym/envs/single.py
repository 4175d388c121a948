"""Gymnasium single-agent view: one learner role; every other role is played by a policy."""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.envs.rendering import RENDER_MODES, TranscriptRendering
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game, check_seed
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.types import Trajectory


class DialogueEnv(TranscriptRendering, gym.Env):
    """Generic single-agent view over a :class:`~dialogue_gym.game.Game`.

    ``reset`` always returns an episode in which it is the learner's turn: one that ends before the
    learner's first move (a counterpart's backend failed on its opening move, or the counterpart ended
    the dialogue at once) is set aside with a warning and another drawn, from a seed that is a pure
    function of the requested one (:meth:`~dialogue_gym.envs.driver.CounterpartDriver.begin`; the
    trajectory records the seed played). After a few such draws in a row ``reset`` raises
    :class:`~dialogue_gym.errors.BackendError` naming the backend's failure.

    If ``reset`` or ``step`` raises (bad seed or options, a policy or backend error), no episode is
    running afterwards: ``step`` raises :class:`~dialogue_gym.errors.EpisodeStateError` until the next
    successful ``reset``, so an error never leaves a half-played turn behind.
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": 1}

    def __init__(self, game: Game, learner: str, policies: Mapping[str, RolePolicy], render_mode: str | None = None):
        if learner not in game.roles:
            raise ConfigError(f"learner={learner!r} is not a role of {game.id}; choose one of {list(game.roles)}.")
        self.game = game
        self.learner = learner
        self.render_mode = self.check_render_mode(render_mode)
        self.driver = CounterpartDriver({r: p for r, p in policies.items() if r != learner}, learner)
        self.observation_space = game.observation_space(learner)
        self.action_space = game.action_space(learner)
        self._memories: dict[str, Any] = {}

    def make_role_policy(self, role: str, spec: Any, backend: Any = None, sampling: dict[str, Any] | None = None) -> RolePolicy:
        """Build a policy for ``role`` from its name (scenario envs override this)."""
        raise ConfigError(f"{type(self).__name__} has no named policies; pass a policy object instead of {spec!r}.")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        try:
            seed = check_seed(seed)
            super().reset(seed=seed)
            episode_seed = seed if seed is not None else int(self.np_random.integers(2**62))
            (self._memories,), _ = self.driver.begin([self.game], [episode_seed], options)
        except BaseException as exc:
            self.game.interrupt("reset", exc)
            raise
        return self.game.observe(self.learner), self.game.info(self.learner)

    def step(self, action: Any):
        result = self.game.step(action)
        reward = np.zeros(1)
        reward[0] = result.rewards.get(self.learner, 0.0)
        try:
            self.driver.advance([self.game], [self._memories], reward)
        except BaseException as exc:
            self.game.interrupt("step", exc)
            raise
        self._after_step()
        terminated = self.game.done
        return self.game.observe(self.learner), float(reward[0]), terminated, False, self.game.info(self.learner)

    def trajectory(self) -> Trajectory:
        """The episode so far (complete once terminated), with the learner role recorded."""
        trajectory = super().trajectory()
        trajectory.learner = self.learner
        return trajectory
