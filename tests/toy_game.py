"""A two-role toy game for lifecycle tests, independent of every scenario's rules.

The ``counterpart`` opens; saying ``"bye"`` ends the episode at once (outcome ``hangup``), so a
counterpart policy decides whether ``reset`` would hand the learner an episode that already ended.
The ``learner`` earns ``config.reward`` per move; the episode times out after its second move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymnasium import spaces

from dialogue_gym.game import Game, StepResult
from dialogue_gym.simulators.base import ScriptedPolicy
from dialogue_gym.spaces import Utterance
from dialogue_gym.types import Outcome, Trajectory, Turn

ROLES = ("learner", "counterpart")


@dataclass(frozen=True)
class ToyConfig:
    reward: float = 1.0
    invalid_action: str = "penalize"
    invalid_action_penalty: float = 0.0


class ToyGame(Game):
    id = "Toy-v0"
    roles = ROLES
    config_class = ToyConfig
    reset_options = ("opening",)

    def __init__(self, config: ToyConfig | None = None):
        super().__init__()
        self.config = config or ToyConfig()

    def _reset(self, options: dict[str, Any]) -> None:
        opening = options.get("opening", "counterpart")
        if opening not in ROLES:
            raise ValueError(f"opening must be one of {ROLES}, got {opening!r}")
        self.turns: list[Turn] = []
        self.outcome: Outcome | None = None
        self.failure: str | None = None
        self.begin_accounting()
        self._role = opening

    def _step(self, role: str, text: str, token_ids: Any, logprobs: Any) -> StepResult:
        self.turns.append(Turn(role, text, text))
        rewards: dict[str, float] = {}
        if role == "counterpart":
            if text == "bye":
                self.outcome, self._role = Outcome.HANGUP, None
            else:
                self._role = "learner"
        else:
            self.add_reward(rewards, "learner", "move", self.config.reward)
            if len(self.turns_of("learner")) >= 2:
                self.outcome, self._role = Outcome.TIMEOUT, None
            else:
                self._role = "counterpart"
        return StepResult(role, rewards, terminated=self._role is None, truncated=False, info=self.info(role))

    def _abort(self, role: str, cause: str) -> None:
        self.outcome, self.failure, self._role = Outcome.BACKEND_FAILURE, cause, None

    def turns_of(self, role: str) -> list[Turn]:
        return [turn for turn in self.turns if turn.role == role]

    def observe(self, role: str) -> dict[str, Any]:
        return {"turn": min(len(self.turns), 9)}

    def info(self, role: str) -> dict[str, Any]:
        return {"outcome": self.outcome.value if self.outcome is not None else None}

    def observation_space(self, role: str) -> spaces.Space:
        return spaces.Dict({"turn": spaces.Discrete(10)})

    def action_space(self, role: str) -> spaces.Space:
        return Utterance()

    def trajectory(self) -> Trajectory:
        return Trajectory(
            self.id, self.seed, self.episode_profile(), list(self.turns), self.outcome,
            dict(self.returns), dict(self.reward_terms), meta={"failure": self.failure} if self.failure else {},
        )

    def episode_profile(self) -> dict[str, Any]:
        return {"seed": self.seed}

    def role_profile(self, role: str) -> dict[str, Any]:
        """Nothing is hidden in the toy game: every role knows the whole profile."""
        return self.episode_profile()


class Counterpart(ScriptedPolicy):
    """Says ``"bye"`` on its opening move in the episodes whose seed ``hangs_up(seed)``, else ``"hello"``;
    with ``fails=True`` it reports a backend failure instead of saying ``"bye"``."""

    def __init__(self, hangs_up=lambda seed: False, fails: bool = False):
        self.hangs_up, self.fails = hangs_up, fails
        self.moves = 0

    def _ends(self, memory: dict[str, Any]) -> bool:
        return not memory.setdefault("moved", False) and self.hangs_up(memory["profile"]["seed"])

    def act_batch_with_errors(self, observations, infos, memories):
        self.moves += len(observations)
        texts, errors = [], []
        for memory in memories:
            ends = self._ends(memory)
            memory["moved"] = True
            failed = ends and self.fails
            texts.append("" if failed else "bye" if ends else "hello")
            errors.append(f"HTTP 503: injected for episode seed {memory['profile']['seed']}" if failed else None)
        return texts, errors

    def act_batch(self, observations, infos, memories):
        return self.act_batch_with_errors(observations, infos, memories)[0]
