"""Play whole episodes with every role played by a policy: the engine of ``dialogue-gym eval``.

Episodes run in lockstep batches through :class:`~dialogue_gym.envs.driver.CounterpartDriver`,
so LLM-played roles get batched generation. Trajectories are appended to a JSONL file (strict JSON,
:meth:`~dialogue_gym.types.Trajectory.to_json`) and flushed as each batch finishes, so an
interrupted run keeps what it completed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game, is_privileged
from dialogue_gym.types import Trajectory


def _make_env(env_id: str, learner: str, env_kwargs: dict[str, Any]) -> DialogueEnv:
    try:
        environment = gym.make(env_id, learner=learner, disable_env_checker=True, **env_kwargs).unwrapped
    except gym.error.Error as exc:
        raise ConfigError(f"Cannot make {env_id!r}: {exc}. `dialogue-gym list` shows the registered ids.") from exc
    if not isinstance(environment, DialogueEnv):
        raise ConfigError(f"{env_id!r} is not a dialogue_gym environment.")
    return environment


def _check_count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return value


class Evaluator:
    """Plays episodes of one env's fixed evaluation sequence with every role played by a policy.

    Builds the env and the policies (an LLM backend, say) once, so many :meth:`run` calls, e.g. the
    chunks a Ray rollout worker is handed, share them. :func:`evaluate` is one run of a fresh one.
    """

    def __init__(
        self,
        env_id: str,
        agent: Any,
        *,
        learner: str = "agent",
        env_kwargs: dict[str, Any] | None = None,
        agent_backend: Any = None,
        batch_size: int = 32,
    ):
        self.batch_size = _check_count(batch_size, "batch_size", 1)
        self.env_id = env_id
        self.learner = learner
        self.environment = _make_env(env_id, learner, dict(env_kwargs or {}))
        policies = {
            **self.environment.driver.policies,
            learner: self.environment.make_role_policy(learner, agent, agent_backend),
        }
        self.driver = CounterpartDriver(policies, learner=None)
        self.agent_name = agent if isinstance(agent, str) else type(agent).__name__
        self.privileged = is_privileged(policies[learner])
        """Whether the evaluated policy reads the privileged channel (its trajectories say so in
        ``meta["privileged"]`` and result tables mark its row): an upper bound, not a fair entry."""
        self._pool: list[Game] = []

    def run(
        self,
        episodes: int,
        seed: int = 0,
        *,
        first_episode: int = 0,
        out: str | Path | None = None,
        on_episode: Callable[[Trajectory], None] | None = None,
    ) -> list[Trajectory]:
        """Episodes ``first_episode .. first_episode + episodes - 1`` (see :func:`evaluate`)."""
        _check_count(episodes, "episodes", 1)
        _check_count(first_episode, "first_episode", 0)
        while len(self._pool) < min(self.batch_size, episodes):
            self._pool.append(self.environment.game.spawn())
        trajectories: list[Trajectory] = []
        sink = open(out, "a", encoding="utf-8") if out is not None else None
        try:
            stop = first_episode + episodes
            for start in range(first_episode, stop, self.batch_size):
                indices = range(start, min(stop, start + self.batch_size))
                games = self._pool[: len(indices)]
                for game, episode in zip(games, indices):
                    game.reset(seed=seed + episode, options=game.evaluation_options(episode, seed))
                memories = [self.driver.start(game) for game in games]
                self.driver.advance(games, memories)
                batch = []
                for game in games:
                    trajectory = game.trajectory()
                    trajectory.learner = self.learner
                    trajectory.meta = {**trajectory.meta, "agent": self.agent_name, "env_id": self.env_id}
                    if self.privileged:
                        trajectory.meta["privileged"] = True
                    batch.append(trajectory)
                if sink is not None:
                    # Serialised before writing, so a trajectory that is not strict JSON leaves no partial batch.
                    sink.writelines([trajectory.to_json() + "\n" for trajectory in batch])
                    sink.flush()
                for trajectory in batch:
                    trajectories.append(trajectory)
                    if on_episode is not None:
                        on_episode(trajectory)
        finally:
            if sink is not None:
                sink.close()
        return trajectories


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
    first_episode: int = 0,
) -> list[Trajectory]:
    """Play ``episodes`` episodes of ``env_id`` with ``agent`` in the ``learner`` role.

    Episode ``i`` uses seed ``seed + i`` and the game's fixed evaluation options (for SEAD: every
    initial state equally often), so runs with the same arguments give the same trajectories.
    ``first_episode`` plays episodes ``first_episode .. first_episode + episodes - 1`` of that same
    fixed sequence, so shards of a run (e.g. on several Ray workers) add up to the whole run.

    Every episode is returned: one whose LLM-played role failed after the backend's bounded retries
    ends with outcome ``backend_failure`` and the cause in ``meta["failure"]`` (the metrics'
    ``summary`` counts those apart from the completed ones).
    """
    _check_count(episodes, "episodes", 1)
    _check_count(first_episode, "first_episode", 0)
    evaluator = Evaluator(
        env_id, agent, learner=learner, env_kwargs=env_kwargs, agent_backend=agent_backend, batch_size=batch_size
    )
    return evaluator.run(episodes, seed, first_episode=first_episode, out=out, on_episode=on_episode)


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


