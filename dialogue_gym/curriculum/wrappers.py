"""Plug a ProfileController into any SEAD view (single-agent, vector, AEC, parallel).

The controller is attached to the view's game(s) as their start source: a ``reset`` without
options draws the next profile of the current batch, and finished episodes are handed back; when
a batch is used up, its finished trajectories update the controller (one Mistake Analysis per batch).
"""

from __future__ import annotations

from typing import Any

from dialogue_gym.curriculum.profile_controller import ProfileController
from dialogue_gym.errors import ConfigError
from dialogue_gym.types import Trajectory


class CurriculumSource:
    def __init__(self, controller: ProfileController):
        self.controller = controller
        self._queue: list[dict[str, Any]] = []
        self._finished: list[Trajectory] = []

    def next_options(self) -> dict[str, Any]:
        if not self._queue:
            if self._finished:
                self.controller.update(self._finished)
                self._finished = []
            self._queue = self.controller.sample()
        return {"profile": self._queue.pop(0)}

    def episode_finished(self, trajectory: Trajectory) -> None:
        self._finished.append(trajectory)


def _games(env: Any) -> list[Any]:
    for candidate in (env, getattr(env, "unwrapped", None), getattr(env, "env", None)):
        if candidate is None:
            continue
        if hasattr(candidate, "games"):
            return list(candidate.games)
        if hasattr(candidate, "game"):
            return [candidate.game]
    raise ConfigError(f"with_curriculum: {type(env).__name__} is not a dialogue_gym view (no game inside).")


def with_curriculum(env: Any, controller: ProfileController) -> Any:
    """Make ``env`` (any view of SEAD-Outbound) start its episodes from ``controller``; returns ``env``."""
    source = CurriculumSource(controller)
    for game in _games(env):
        if game.id != "SEAD-Outbound-v0":
            raise ConfigError(f"with_curriculum: the ProfileController drives SEAD-Outbound-v0, not {game.id!r}.")
        game.start_source = source
    return env
