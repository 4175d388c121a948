"""Playing many games of a trainer in lockstep, each trajectory handed over the moment it ends."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

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
    ``driver``'s policies; ``on_done(i, trajectory, memories)`` as each episode ends."""
    memories: list[dict[str, Any]] = []
    for index, (game, (seed, options)) in enumerate(zip(games, starts)):
        game.start_source = Finished(index, lambda i, trajectory: on_done(i, trajectory, memories[i]))
        game.reset(seed=seed, options=dict(options))
    memories.extend(driver.start(game) for game in games)
    driver.advance(games, memories)
