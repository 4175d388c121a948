"""Play whole episodes with every role played by a policy: the engine of ``dialogue-gym eval``.

Episodes run in lockstep batches through :class:`~dialogue_gym.envs.driver.CounterpartDriver`,
so LLM-played roles get batched generation. Trajectories are appended to a JSONL file and flushed
as each batch finishes, so an interrupted run keeps what it completed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game
from dialogue_gym.types import Trajectory


def _make_env(env_id: str, learner: str, env_kwargs: dict[str, Any]) -> DialogueEnv:
    try:
        environment = gym.make(env_id, learner=learner, disable_env_checker=True, **env_kwargs).unwrapped
    except gym.error.Error as exc:
        raise ConfigError(f"Cannot make {env_id!r}: {exc}. `dialogue-gym list` shows the registered ids.") from exc
    if not isinstance(environment, DialogueEnv):
        raise ConfigError(f"{env_id!r} is not a dialogue_gym environment.")
    return environment


def evaluate(
    env_id: str,
    agent: Any,
    episodes: int,
    seed: int = 0,
    *,
    learner: str = "agent",
    env_kwargs: dict[str, Any] | None = None,
    agent_backend: Any = None,
    batch_size: int = 32,
    out: str | Path | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Play ``episodes`` episodes of ``env_id`` with ``agent`` in the ``learner`` role.

    Episode ``i`` uses seed ``seed + i`` and the game's fixed evaluation options (for SEAD: every
    initial state equally often), so runs with the same arguments give the same trajectories.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ConfigError(f"episodes must be a positive int, got {episodes!r}.")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size!r}.")
    environment = _make_env(env_id, learner, dict(env_kwargs or {}))
    policies = {**environment.driver.policies, learner: environment.make_role_policy(learner, agent, agent_backend)}
    driver = CounterpartDriver(policies, learner=None)
    agent_name = agent if isinstance(agent, str) else type(agent).__name__
    trajectories: list[Trajectory] = []
    sink = open(out, "a", encoding="utf-8") if out is not None else None
    pool: list[Game] = [environment.game.spawn() for _ in range(min(batch_size, episodes))]
    try:
        for start in range(0, episodes, batch_size):
            indices = range(start, min(episodes, start + batch_size))
            games = pool[: len(indices)]
            for game, episode in zip(games, indices):
                game.reset(seed=seed + episode, options=game.evaluation_options(episode, seed))
            memories = [driver.start(game) for game in games]
            driver.advance(games, memories)
            for game in games:
                trajectory = game.trajectory()
                trajectory.learner = learner
                trajectory.meta = {"agent": agent_name, "env_id": env_id}
                trajectories.append(trajectory)
                if sink is not None:
                    sink.write(json.dumps(trajectory.to_dict()) + "\n")
                if on_episode is not None:
                    on_episode(trajectory)
            if sink is not None:
                sink.flush()
    finally:
        if sink is not None:
            sink.close()
    return trajectories


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Read a JSONL file written by :func:`evaluate` (or any view's ``trajectory().to_dict()``)."""
    trajectories = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                trajectories.append(Trajectory.from_dict(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"{path}: line {number}: not a trajectory record ({exc}).") from exc
    return trajectories


