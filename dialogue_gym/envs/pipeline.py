"""Rollouts that hide the env's work behind generation: the vector env's sub-envs in groups, one group
stepped while the learner's model generates for another.

At GPU speed a learner batch of 64 comes back in about 50 ms, and the scripted counterparts, judges
and rewards of a step take 6-36 ms more when run in turn with it (issue 45). :func:`pipelined_steps`
splits the sub-envs into ``groups`` groups: the learner's ``act`` runs on one worker thread (a GPU
engine, or any backend that releases the GIL while it waits) while this thread steps the group whose
actions just came back, so the backend is kept busy.

Both loops here yield the same :class:`GroupStep` records, and :func:`pipelined_steps` plays exactly
the episodes :func:`sequential_steps` plays (same seeds, same transcripts): each round steps the
groups in ascending order with :meth:`~dialogue_gym.envs.vector.DialogueVectorEnv.step_subset`, which
for a partition of the sub-envs is one ``step`` of them all. ``act`` must answer from the observations
alone (as a model does) for that to hold; it is called from the worker thread.

Both loops freeze the objects alive when they start (``gc.freeze()``, undone when the loop ends;
``freeze_gc=False`` leaves the collector alone) so that Python's cyclic collector stops walking the
envs, scenario banks and policies on every older-generation pass: those passes run on the stepping
thread, hold the GIL and stall the learner's thread too, and on RL-ADA they were a quarter to a third
of the stepping thread's CPU (15-18 ms of a K = 64 round, 12.8-13.5 frozen, 11.8 with no collection at
all; issue 45). Freezing changes no transcript: the collector frees the same garbage, later.

``python benchmarks/gpu_speed_rollouts.py`` measures both against a backend with a fixed latency per
call. With a fixed cost per call, a group of K/2 requests costs the backend as much as K, so two groups
of a K = 64 env keep the backend busy but half full: for the most learner turns per second, give each
group a full batch (K = 128 for batches of 64).
"""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError

Act = Callable[[Any], Sequence[str]]
"""The learner: a batched observation (of a group, or of every sub-env) -> one action per sub-env in it."""


@dataclass
class GroupStep:
    """One step of the sub-envs ``indices``: the actions played and what ``step`` returned for them."""

    round: int
    indices: list[int]
    actions: list[str]
    observations: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]


def split_groups(num_envs: int, groups: int) -> list[list[int]]:
    """``groups`` contiguous groups of sub-env indices, as equal as they can be, in ascending order."""
    if isinstance(groups, bool) or not isinstance(groups, int) or not 1 <= groups <= num_envs:
        raise ConfigError(f"groups must be an int from 1 to num_envs={num_envs}, got {groups!r}.")
    return [part.tolist() for part in np.array_split(np.arange(num_envs), groups)]


@contextmanager
def frozen_heap(enabled: bool = True) -> Iterator[None]:
    """Move every object alive now to the collector's permanent generation (``gc.freeze()``) and back
    (``gc.unfreeze()``) on exit. A caller that froze objects itself (``gc.get_freeze_count() > 0``)
    keeps its own freezing: nothing is done then, nor when ``enabled`` is false."""
    if not enabled or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def sequential_steps(
    envs: Any, act: Act, rounds: int, *, seed: Any = None, options: dict[str, Any] | None = None, freeze_gc: bool = True
) -> Iterator[GroupStep]:
    """The plain loop: ``act`` on every sub-env's observation, then one ``step`` of them all, ``rounds`` times."""
    envs = envs.unwrapped
    observations, _ = envs.reset(seed=seed, options=options)
    everyone = list(range(envs.num_envs))
    with frozen_heap(freeze_gc):
        for round_ in range(rounds):
            actions = list(act(observations))
            observations, rewards, terminations, truncations, infos = envs.step(actions)
            yield GroupStep(round_, everyone, actions, observations, rewards, terminations, truncations, infos)


def pipelined_steps(
    envs: Any,
    act: Act,
    rounds: int,
    *,
    groups: int = 2,
    seed: Any = None,
    options: dict[str, Any] | None = None,
    freeze_gc: bool = True,
) -> Iterator[GroupStep]:
    """The episodes of :func:`sequential_steps`, with ``act`` for one group generating (on a worker
    thread) while the previous group is stepped here; yields one :class:`GroupStep` per group and round.

    ``act`` of a group is submitted as soon as that group's observations exist, and the calls run one at
    a time in submission order, as on one GPU. Closing the generator early waits for the call in flight."""
    envs = envs.unwrapped
    parts = split_groups(envs.num_envs, groups)
    envs.reset(seed=seed, options=options)
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dialogue_gym-act")
    with frozen_heap(freeze_gc):
        try:
            pending = [worker.submit(act, envs.observe_subset(part)) for part in parts]
            for round_ in range(rounds):
                for group, part in enumerate(parts):
                    actions = list(pending[group].result())
                    observations, rewards, terminations, truncations, infos = envs.step_subset(part, actions)
                    if round_ + 1 < rounds:
                        pending[group] = worker.submit(act, observations)
                    yield GroupStep(round_, part, actions, observations, rewards, terminations, truncations, infos)
        finally:
            worker.shutdown(wait=True, cancel_futures=True)
