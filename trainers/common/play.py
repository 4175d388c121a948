"""Playing many games of a trainer in lockstep, each trajectory handed over the moment it ends."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from dialogue_gym.agents import AgentProcess
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.game import Game
from dialogue_gym.types import Trajectory


class Finished:
    """Start source of one game: hands its trajectory over the moment the episode ends."""

    def __init__(self, index: int, on_done: Callable[[int, Trajectory], None]):
        self.index, self.on_done = index, on_done

    def next_options(self) -> dict[str, Any]:
        return {}

    def episode_finished(self, trajectory: Trajectory) -> None:
        self.on_done(self.index, trajectory)


def play_games(
    games: Sequence[Game], driver: CounterpartDriver, starts: Sequence[tuple[int, Mapping[str, Any]]],
    on_done: Callable[[int, Trajectory, dict[str, Any]], None],
) -> None:
    """Play ``games[i]`` from ``starts[i]`` = (seed, reset options) in lockstep, every role played by
    ``driver``'s policies; ``on_done(i, trajectory, memories)`` as each episode ends.

    A role may opt in to the agent boundary: its policy an :class:`~dialogue_gym.agents.AgentProcess`
    (a scripted counterpart, or your ``module:Class``, played over JSON lines in a process or a sandbox
    of its own). Its episodes are then ended in that process as they end here, and the moves its
    boundary refused (played as invalid moves) are listed in the trajectory's ``meta["agent_problems"]``
    with their role; the transcripts are those of the same policy played in this process."""
    isolated = {role: policy for role, policy in driver.policies.items() if isinstance(policy, AgentProcess)}
    memories: list[dict[str, Any]] = []

    def finished(index: int, trajectory: Trajectory) -> None:
        for role, policy in isolated.items():
            problems = [{"role": role, **problem} for problem in policy.problems(memories[index][role])]
            if problems:
                trajectory.meta = {**trajectory.meta, "agent_problems": [*trajectory.meta.get("agent_problems", []), *problems]}
            policy.end(memories[index][role])
        on_done(index, trajectory, memories[index])

    for index, (game, (seed, options)) in enumerate(zip(games, starts)):
        game.start_source = Finished(index, finished)
        game.reset(seed=seed, options=dict(options))
    memories.extend(driver.start(game) for game in games)
    driver.advance(games, memories)
