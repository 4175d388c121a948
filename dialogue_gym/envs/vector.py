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


def batch_infos(infos: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The vector ``info`` of sub-env infos ``infos[i]``, exactly as ``len(infos)`` calls of Gymnasium's
    ``VectorEnv._add_info`` build it (``key`` -> array of the values, ``_key`` -> mask of the sub-envs
    that have it, nested dicts recursively, ``final_obs`` as an object array), built once per step
    column by column instead of merged one sub-env at a time.

    Measured reason: ``_add_info`` re-reads and re-assigns every key's array and mask per sub-env, 1.9 us
    per sub-env for the scenarios' three keys (``turn``, ``invalid_action``, ``outcome``) against 0.65 us
    here, out of a K = 64 step of ``benchmarks/vector_overhead.py``'s null game of about 8 us per
    sub-env (CPU time, load 4 on 2 cores). Infos this function cannot batch column-wise with certainty
    (a key that starts with ``_``, which could collide with a mask, or a key holding a dict in some
    sub-envs and not in others) go through ``_add_info`` itself."""
    size = len(infos)
    try:
        uniform = size > 0 and all(map(infos[0].keys().__eq__, map(dict.keys, infos)))
    except TypeError:  # not dicts: compared key by key below
        uniform = False
    if uniform:
        present = list(range(size))
        columns = {key: (present, [info[key] for info in infos]) for key in infos[0]}
    else:
        columns = {}
        for index, info in enumerate(infos):
            for key, value in info.items():
                column = columns.setdefault(key, ([], []))
                column[0].append(index)
                column[1].append(value)
    batched = _batch_columns(columns, size)
    if batched is None:
        return _add_infos(infos)
    return batched


def _batch_columns(columns: dict[str, tuple[list[int], list[Any]]], size: int) -> dict[str, Any] | None:
    """:func:`batch_infos` of the columns ``key -> (indices, values)``; ``None`` where it must defer to Gymnasium."""
    batched: dict[str, Any] = {}
    for key, (present, values) in columns.items():
        if not isinstance(key, str) or key.startswith("_"):
            return None
        first = values[0]
        if key == "final_obs":
            array = np.full(size, fill_value=None, dtype=object)
            for index, value in zip(present, values):
                array[index] = value
        elif isinstance(first, dict):
            if not all(isinstance(value, dict) for value in values):
                return None
            inner: dict[str, tuple[list[int], list[Any]]] = {}
            for index, value in zip(present, values):
                for inner_key, inner_value in value.items():
                    column = inner.setdefault(inner_key, ([], []))
                    column[0].append(index)
                    column[1].append(inner_value)
            array = _batch_columns(inner, size)
            if array is None:
                return None
        elif any(isinstance(value, dict) for value in values):
            return None
        else:
            kind = type(first)
            if kind in (int, float, bool) or issubclass(kind, np.number):
                array = np.zeros(size, dtype=kind)
                if set(map(type, values)) == {kind}:
                    array[present] = values
                else:
                    for index, value in zip(present, values):
                        array[index] = value
            elif isinstance(first, np.ndarray):
                array = np.zeros((size, *first.shape), dtype=first.dtype)
                for index, value in zip(present, values):
                    array[index] = value
            elif len(values) == size and _FROMITER_OBJECTS:
                array = np.fromiter(values, dtype=object, count=size)  # each value one element, as assigned one by one
            else:
                array = np.full(size, fill_value=None, dtype=object)
                for index, value in zip(present, values):
                    array[index] = value
        mask = np.zeros(size, dtype=np.bool_)
        mask[present] = True
        batched[key] = array
        batched[f"_{key}"] = mask
    return batched


_FROMITER_OBJECTS = np.lib.NumpyVersion(np.__version__) >= "1.23.0"
"""Whether ``np.fromiter`` builds object arrays (NumPy 1.23 and later)."""


class _InfoMerger(VectorEnv):
    """Gymnasium's own ``_add_info``, for the infos :func:`batch_infos` defers."""

    def __init__(self, num_envs: int):
        self.num_envs = num_envs


def _add_infos(infos: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    merger = _InfoMerger(len(infos))
    merged: dict[str, Any] = {}
    for index, info in enumerate(infos):
        merged = merger._add_info(merged, dict(info), index)
    return merged


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
        self._batchers = {num_envs: observation_batcher(self.single_observation_space, num_envs)}
        """Observation batchers by the number of sub-envs batched (all of them, or a :meth:`step_subset` group)."""
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

    def _check_actions(self, actions: Any, size: int) -> list[str]:
        """The batch as a list of ``size`` str, or InvalidAction/ConfigError naming what is wrong."""
        how = f"pass a list of {size} strings, one action per sub-env"
        if isinstance(actions, np.ndarray) and actions.ndim != 1:
            raise InvalidAction(f"step() got a NumPy array of shape {actions.shape} as the batch of actions; {how}.")
        if isinstance(actions, (str, bytes, bytearray)) or not isinstance(actions, (SequenceABC, np.ndarray)):
            raise InvalidAction(f"step() got {type(actions).__name__} {actions!r:.80} as the batch of actions; {how}.")
        if len(actions) != size:
            raise ConfigError(f"step() needs one action per sub-env ({size}), got {len(actions)}; {how}.")
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
        batch = self._check_actions(actions, self.num_envs)
        try:
            return self._step(list(range(self.num_envs)), batch)
        except BaseException as exc:
            self._interrupt("step", exc)
            raise

    def step_subset(self, indices: Sequence[int], actions: Sequence[str]):
        """Step only the sub-envs ``indices`` (ascending, no repeats) with ``actions[k]`` for ``indices[k]``;
        returns ``(observations, rewards, terminations, truncations, infos)`` of those sub-envs only,
        batched in that order. The other sub-envs do not move.

        This is what lets a rollout loop step one group of sub-envs while the learner's model generates
        for another (:mod:`dialogue_gym.envs.pipeline`). Stepping contiguous groups that cover the sub-envs,
        first group to last, is exactly one :meth:`step` of them all: the same games, the same counterpart
        moves and the same autoreset seeds (drawn from the env's generator in sub-env order either way),
        so the same episodes. Groups taken in another order draw the autoreset seeds in another order."""
        self.games[0].check_started("step_subset")
        indices = self._check_indices(indices)
        batch = self._check_actions(actions, len(indices))
        try:
            return self._step(indices, batch)
        except BaseException as exc:
            self._interrupt("step_subset", exc)
            raise

    def _check_indices(self, indices: Any) -> list[int]:
        """``indices`` as a list of ascending sub-env indices, or ConfigError naming the fix."""
        try:
            checked = [int(index) for index in indices]
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"step_subset() needs a list of sub-env indices, got {indices!r:.80}.") from exc
        if not checked or any(b <= a for a, b in zip(checked, checked[1:])) or checked[0] < 0 or checked[-1] >= self.num_envs:
            raise ConfigError(
                f"step_subset() needs ascending, distinct sub-env indices from 0 to {self.num_envs - 1}, got {indices!r:.80}."
            )
        return checked

    def _step(self, indices: list[int], actions: list[str]):
        size = len(indices)
        rewards = np.zeros(size, dtype=np.float64)
        needs_reset = self._needs_reset
        to_reset = [index for index in indices if needs_reset[index]]
        active = [k for k, index in enumerate(indices) if not needs_reset[index]]
        games = [self.games[indices[k]] for k in active]
        learner = self.learner
        for k, game in zip(active, games):
            rewards[k] += game.step(actions[k]).rewards.get(learner, 0.0)
        moved = rewards[active]
        self.driver.advance(games, [self._memories[indices[k]] for k in active], moved)
        rewards[active] = moved
        finished = [game.trajectory() for game in games if game.done]
        for trajectory in finished:
            trajectory.learner = learner
        self._retain(finished)
        if to_reset:
            self._begin(to_reset, [self._episode_seed() for _ in to_reset], None)
        stepped = [self.games[index] for index in indices]
        terminations = np.array([game.done for game in stepped], dtype=bool)
        needs_reset[indices] = terminations
        return self._observations(stepped), rewards, terminations, np.zeros(size, dtype=bool), self._infos(stepped)

    def observe_subset(self, indices: Sequence[int]):
        """The learner's batched observations of the sub-envs ``indices`` (ascending), as :meth:`step_subset`
        returns them; after ``reset``, what a pipelined rollout's first groups are asked to act on."""
        self.games[0].check_started("observe_subset")
        return self._observations([self.games[index] for index in self._check_indices(indices)])

    def _observations(self, games: Sequence[Game] | None = None):
        games = self.games if games is None else games
        learner = self.learner
        items = [game.observe(learner) for game in games]
        if len(items) not in self._batchers:
            self._batchers[len(items)] = observation_batcher(self.single_observation_space, len(items))
        return self._batchers[len(items)](items)

    def _infos(self, games: Sequence[Game] | None = None) -> dict[str, Any]:
        games = self.games if games is None else games
        learner = self.learner
        return batch_infos([game.info(learner) for game in games])

    def pop_trajectories(self) -> list[Trajectory]:
        """Return and forget the retained trajectories of the episodes finished so far, oldest first
        (at most ``keep_trajectories``; :attr:`dropped_trajectories` counts those the cap dropped)."""
        finished = list(self.finished_trajectories)
        self.finished_trajectories.clear()
        return finished
