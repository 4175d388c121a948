"""Gymnasium vector view: N games in lockstep, counterpart moves of a step sent as one batch."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable
from collections.abc import Sequence as SequenceABC
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np
from gymnasium import logger
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.spaces import Dict, Discrete, Space
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from dialogue_gym.envs.driver import MAX_DRAWS, CounterpartDriver
from dialogue_gym.errors import ConfigError, InvalidAction
from dialogue_gym.game import Game, check_seed
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.types import Trajectory

DEFAULT_KEEP_TRAJECTORIES = 1024
"""The least ``keep_trajectories="auto"`` keeps: about 16 MiB of SEAD trajectories (~16 KiB each, measured)."""


def observation_batcher(space: Space, num_envs: int) -> Callable[[list[Any]], Any]:
    """A function that batches ``num_envs`` observations of ``space`` exactly as Gymnasium's
    ``concatenate`` into a fresh ``create_empty_array`` does, resolved once instead of per step.

    A ``Dict`` batches key by key; a ``Discrete`` becomes an array of its dtype; a space Gymnasium
    batches as a tuple (text, chat messages, any custom space) becomes that tuple. Any other space
    goes through ``concatenate`` itself. Resolving Gymnasium's per-space dispatch on every step was
    a sixth of a scripted vector step."""
    if isinstance(space, Dict):
        parts = [(key, observation_batcher(subspace, num_envs)) for key, subspace in space.spaces.items()]
        return lambda items: {key: batch([item[key] for item in items]) for key, batch in parts}
    if type(space) is Discrete:
        return lambda items: np.array(items, dtype=space.dtype)
    if concatenate.dispatch(type(space)) is concatenate.dispatch(Space):
        return tuple
    return lambda items: concatenate(space, items, create_empty_array(space, num_envs))


def check_keep_trajectories(value: Any, num_envs: int) -> int | None:
    """The retention cap ``keep_trajectories`` asks for (``None``: unbounded), or ConfigError naming the fix."""
    if isinstance(value, str) and value == "auto":
        # MAX_DRAWS a sub-env: one step (or reset) ends at most that many episodes in each (those that end
        # before the learner's first move, and the one that ended), so a loop that pops after every step
        # never loses one
        return max(DEFAULT_KEEP_TRAJECTORIES, MAX_DRAWS * num_envs)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= sys.maxsize):
        return value
    raise ConfigError(
        f"keep_trajectories must be 'auto', an int from 0 to {sys.maxsize} or None, got {value!r:.40}. It caps how many finished "
        "trajectories the vector env keeps for pop_trajectories(): pass 0 to keep none (a Gymnasium training "
        "loop that never pops), None to keep every one (pop them regularly), or a cap such as 4096."
    )


class DialogueVectorEnv(VectorEnv):
    """Steps ``num_envs`` games of one scenario; autoreset is ``NEXT_STEP`` (Gymnasium's default).

    Every counterpart policy is shared by all sub-envs, so an LLM-played role issues one backend
    batch per step for all games waiting on it. Finished episodes are kept in
    :attr:`finished_trajectories` until :meth:`pop_trajectories` reads them.

    ``keep_trajectories`` bounds that retention, so a Gymnasium training loop that never pops stays
    flat in memory (and Python's cyclic GC does not slow down over a run): ``"auto"`` (default) keeps
    the last ``max(1024, 8 * num_envs)`` finished trajectories (a step ends at most 8 episodes in a
    sub-env: those that end before the learner's first move are set aside), so popping after every
    step loses none; an int ``n`` keeps the last ``n`` (0 keeps none); ``None`` keeps all until
    popped. Beyond the cap the oldest one is dropped and counted in :attr:`dropped_trajectories`, with a warning the
    first time (none for ``keep_trajectories=0``, which asks for exactly that).

    ``step`` takes one ``str`` per sub-env (a list, tuple or 1-D NumPy array of str) and checks the
    whole batch before moving any sub-env: a bad batch raises and changes nothing. Actions of sub-envs
    being autoreset are ignored but must be strings too.

    ``reset`` and every autoreset hand back episodes in which it is the learner's turn: a sub-env's
    episode that ends before the learner's first move (a counterpart's backend failed on its opening
    move, or the counterpart ended the dialogue at once) is set aside, listed in
    :attr:`finished_trajectories` (its outcome says why; the learner has no turn in it) and re-drawn
    from a seed that is a pure function of the requested one, exactly as the single-agent view does
    (:meth:`~dialogue_gym.envs.driver.CounterpartDriver.begin`). After a few such draws in a row the call
    raises :class:`~dialogue_gym.errors.BackendError` naming the backend's failure.

    If ``reset`` or ``step`` raises for any other reason (bad seed or options, a policy or backend
    error), sub-envs may be half-stepped, so no episode is considered running: ``step`` raises
    :class:`~dialogue_gym.errors.EpisodeStateError` until the next successful ``reset``.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        make_game: Callable[[], Game],
        num_envs: int,
        learner: str,
        policies: Mapping[str, RolePolicy],
        keep_trajectories: int | Literal["auto"] | None = "auto",
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive int, got {num_envs!r}.")
        self.keep_trajectories = check_keep_trajectories(keep_trajectories, num_envs)
        """The most finished trajectories kept for :meth:`pop_trajectories` (``None``: no limit)."""
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
        self._batch_observations = observation_batcher(self.single_observation_space, num_envs)
        self._memories: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self._needs_reset = np.zeros(num_envs, dtype=bool)
        self.finished_trajectories: deque[Trajectory] = deque(maxlen=self.keep_trajectories)
        self.dropped_trajectories = 0
        """How many finished trajectories the ``keep_trajectories`` cap has dropped since construction."""

    def _episode_seed(self) -> int:
        return int(self.np_random.integers(2**62))

    def _begin(self, indices: Sequence[int], seeds: Sequence[int], options: dict[str, Any] | None) -> None:
        games = [self.games[i] for i in indices]
        memories, set_aside = self.driver.begin(games, seeds, options)
        for index, memory in zip(indices, memories):
            self._memories[index] = memory
        self._retain(set_aside)

    def _retain(self, trajectories: Iterable[Trajectory]) -> None:
        """Keep ``trajectories`` for :meth:`pop_trajectories`; past the cap, drop the oldest and count them."""
        for trajectory in trajectories:
            if len(self.finished_trajectories) == self.keep_trajectories:
                self.dropped_trajectories += 1
                if self.dropped_trajectories == 1 and self.keep_trajectories:
                    logger.warn(
                        f"the vector env keeps the last keep_trajectories={self.keep_trajectories} finished "
                        "trajectories and has begun dropping the oldest (counted in dropped_trajectories); call "
                        "pop_trajectories() more often, pass keep_trajectories=None to keep all, or 0 to keep none."
                    )
            self.finished_trajectories.append(trajectory)

    def _reset_seeds(self, seed: Any) -> list[int]:
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ConfigError(f"reset(seed=[...]) needs {self.num_envs} seeds, one per sub-env, got {len(seed)}.")
            seeds = [check_seed(s) for s in seed]
            if None in seeds:
                raise ConfigError(f"reset(seed=[...]) needs {self.num_envs} non-negative ints, got {list(seed)!r:.200}.")
            super().reset(seed=seeds[0])
            return seeds
        seed = check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            return [seed + i for i in range(self.num_envs)]
        return [self._episode_seed() for _ in range(self.num_envs)]

    def _interrupt(self, method: str, exc: BaseException) -> None:
        """A ``reset`` or ``step`` raised, so sub-envs may be half-stepped: end every sub-env's episode."""
        for game in self.games:
            game.interrupt(method, exc)

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None):
        try:
            self._begin(range(self.num_envs), self._reset_seeds(seed), options)
        except BaseException as exc:
            self._interrupt("reset", exc)
            raise
        self._needs_reset[:] = False
        return self._observations(), self._infos()

    def _check_actions(self, actions: Any) -> list[str]:
        """The batch as a list of ``num_envs`` str, or InvalidAction/ConfigError naming what is wrong."""
        how = f"pass a list of {self.num_envs} strings, one action per sub-env"
        if isinstance(actions, np.ndarray) and actions.ndim != 1:
            raise InvalidAction(f"step() got a NumPy array of shape {actions.shape} as the batch of actions; {how}.")
        if isinstance(actions, (str, bytes, bytearray)) or not isinstance(actions, (SequenceABC, np.ndarray)):
            raise InvalidAction(f"step() got {type(actions).__name__} {actions!r:.80} as the batch of actions; {how}.")
        if len(actions) != self.num_envs:
            raise ConfigError(f"step() needs one action per sub-env ({self.num_envs}), got {len(actions)}; {how}.")
        for index, action in enumerate(actions):
            if not isinstance(action, str):
                raise InvalidAction(
                    f"step() actions[{index}] must be a str (the learner's raw text), got "
                    f"{type(action).__name__}: {action!r:.80}; {how}. Decode model output to text first."
                )
        return [str(action) for action in actions]

    def step(self, actions: Sequence[str]):
        # every sub-env's game is started together and interrupted together, so the first speaks for all
        self.games[0].check_started("step")
        batch = self._check_actions(actions)
        try:
            return self._step(batch)
        except BaseException as exc:
            self._interrupt("step", exc)
            raise

    def _step(self, actions: list[str]):
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        to_reset = [i for i in range(self.num_envs) if self._needs_reset[i]]
        active = [i for i in range(self.num_envs) if not self._needs_reset[i]]
        for index in active:
            rewards[index] += self.games[index].step(actions[index]).rewards.get(self.learner, 0.0)
        moved = rewards[active]
        self.driver.advance([self.games[i] for i in active], [self._memories[i] for i in active], moved)
        rewards[active] = moved
        finished = [self.games[index].trajectory() for index in active if self.games[index].done]
        for trajectory in finished:
            trajectory.learner = self.learner
        self._retain(finished)
        if to_reset:
            self._begin(to_reset, [self._episode_seed() for _ in to_reset], None)
        terminations = np.array([game.done for game in self.games])
        self._needs_reset = terminations.copy()
        return self._observations(), rewards, terminations, np.zeros(self.num_envs, dtype=bool), self._infos()

    def _observations(self):
        return self._batch_observations([game.observe(self.learner) for game in self.games])

    def _infos(self) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        for index, game in enumerate(self.games):
            infos = self._add_info(infos, game.info(self.learner), index)
        return infos

    def pop_trajectories(self) -> list[Trajectory]:
        """Return and forget the retained trajectories of the episodes finished so far, oldest first
        (at most ``keep_trajectories``; :attr:`dropped_trajectories` counts those the cap dropped)."""
        finished = list(self.finished_trajectories)
        self.finished_trajectories.clear()
        return finished
