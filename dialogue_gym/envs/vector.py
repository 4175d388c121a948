"""Gymnasium vector view: N games in lockstep, counterpart moves of a step sent as one batch."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.types import Trajectory


class DialogueVectorEnv(VectorEnv):
    """Steps ``num_envs`` games of one scenario; autoreset is ``NEXT_STEP`` (Gymnasium's default).

    Every counterpart policy is shared by all sub-envs, so an LLM-played role issues one backend
    batch per step for all games waiting on it. Finished episodes are kept in
    :attr:`finished_trajectories` until read.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        make_game: Callable[[], Game],
        num_envs: int,
        learner: str,
        policies: Mapping[str, RolePolicy],
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive int, got {num_envs!r}.")
        self.games = [make_game() for _ in range(num_envs)]
        if learner not in self.games[0].roles:
            raise ConfigError(f"learner={learner!r} is not a role; choose one of {list(self.games[0].roles)}.")
        self.num_envs = num_envs
        self.learner = learner
        self.driver = CounterpartDriver({r: p for r, p in policies.items() if r != learner}, learner)
        self.single_observation_space = self.games[0].observation_space(learner)
        self.single_action_space = self.games[0].action_space(learner)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._memories: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self._needs_reset = np.zeros(num_envs, dtype=bool)
        self.finished_trajectories: list[Trajectory] = []

    def _episode_seed(self) -> int:
        return int(self.np_random.integers(2**62))

    def _reset_games(self, indices: Sequence[int], seeds: Sequence[int], options: dict[str, Any] | None) -> None:
        for index, seed in zip(indices, seeds):
            self.games[index].reset(seed=seed, options=options)
            self._memories[index] = self.driver.start(self.games[index])
        self.driver.advance([self.games[i] for i in indices], [self._memories[i] for i in indices])

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None):
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ConfigError(f"reset(seed=[...]) needs {self.num_envs} seeds, got {len(seed)}.")
            seeds = [int(s) for s in seed]
            super().reset(seed=seeds[0])
        else:
            super().reset(seed=seed)
            seeds = [seed + i for i in range(self.num_envs)] if seed is not None else [self._episode_seed() for _ in range(self.num_envs)]
        self._reset_games(range(self.num_envs), seeds, options)
        self._needs_reset[:] = False
        return self._observations(), self._infos()

    def step(self, actions: Sequence[Any]):
        if len(actions) != self.num_envs:
            raise ConfigError(f"step() needs one action per sub-env ({self.num_envs}), got {len(actions)}.")
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        to_reset = [i for i in range(self.num_envs) if self._needs_reset[i]]
        active = [i for i in range(self.num_envs) if not self._needs_reset[i]]
        for index in active:
            rewards[index] += self.games[index].step(actions[index]).rewards.get(self.learner, 0.0)
        moved = rewards[active]
        self.driver.advance([self.games[i] for i in active], [self._memories[i] for i in active], moved)
        rewards[active] = moved
        if to_reset:
            self._reset_games(to_reset, [self._episode_seed() for _ in to_reset], None)
        terminations = np.array([game.done for game in self.games])
        for index in active:
            if terminations[index]:
                trajectory = self.games[index].trajectory()
                trajectory.learner = self.learner
                self.finished_trajectories.append(trajectory)
        self._needs_reset = terminations.copy()
        return self._observations(), rewards, terminations, np.zeros(self.num_envs, dtype=bool), self._infos()

    def _observations(self):
        out = create_empty_array(self.single_observation_space, self.num_envs)
        return concatenate(self.single_observation_space, [g.observe(self.learner) for g in self.games], out)

    def _infos(self) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        for index, game in enumerate(self.games):
            infos = self._add_info(infos, game.info(self.learner), index)
        return infos

    def pop_trajectories(self) -> list[Trajectory]:
        """Return and forget the trajectories of the episodes finished so far."""
        finished, self.finished_trajectories = self.finished_trajectories, []
        return finished
