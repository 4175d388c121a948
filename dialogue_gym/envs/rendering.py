"""Text rendering shared by every view: the transcript as ``ansi`` text, or printed (``human``)."""

from __future__ import annotations

from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game
from dialogue_gym.reporting import terminal_safe
from dialogue_gym.types import Trajectory

RENDER_MODES = ["ansi", "human"]


def render_transcript(game: Game) -> str:
    trajectory = game.trajectory()
    lines = [f"[{game.id} seed={game.seed} profile={game.episode_profile()}]"]
    lines += [f"{t.role}: {t.text}" + (f"  [invalid: {t.invalid}]" if t.invalid else "") for t in trajectory.turns]
    if game.done:
        lines.append(f"-- outcome: {trajectory.outcome.value}")
    return "\n".join(lines)


class TranscriptRendering:
    """Mixin for views holding ``self.game``: ``render()`` and live printing in ``human`` mode."""

    game: Game
    render_mode: str | None
    _printed_lines = 0

    @staticmethod
    def check_render_mode(render_mode: str | None) -> str | None:
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ConfigError(f"render_mode={render_mode!r} is not supported; use one of {RENDER_MODES} or None.")
        return render_mode

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return render_transcript(self.game)
        if self.render_mode == "human":
            self._print_new_lines()
        return None

    def _print_new_lines(self) -> None:
        lines = render_transcript(self.game).splitlines()
        if len(lines) < self._printed_lines:
            self._printed_lines = 0
        print("\n".join(map(terminal_safe, lines[self._printed_lines :])))
        self._printed_lines = len(lines)

    def trajectory(self) -> Trajectory:
        """The episode so far (complete once it has ended)."""
        return self.game.trajectory()

    def close(self) -> None:
        """Nothing to release: games hold no external resources."""

    def _after_step(self) -> None:
        if self.render_mode == "human":
            self._print_new_lines()
