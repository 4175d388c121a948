"""Plain data types shared by scenarios, views, metrics and trainers.

A :class:`Trajectory` is the currency of the library: every view can emit one, and metrics,
trainers and datasets read it. All types are JSON-round-trippable via ``to_dict`` / ``from_dict``;
:meth:`Trajectory.to_json` is the one way to write a trajectory as text: strict JSON, never a bare
``NaN`` or ``Infinity``.
"""

from __future__ import annotations

import enum
import json
import math
import sys
from dataclasses import dataclass, field
from typing import Any

from dialogue_gym.errors import ScenarioError


class Outcome(str, enum.Enum):
    """How an episode ended."""

    SUCCESS = "success"
    HANGUP = "hangup"
    TIMEOUT = "timeout"
    INVALID = "invalid"
    """Ended because a role's output could not be used and the env was configured to end on it."""
    BACKEND_FAILURE = "backend_failure"
    """Cut short because a text-generation backend failed a role's request after its bounded retries;
    the cause is in ``Trajectory.meta["failure"]``. Not a game outcome: metrics report these apart."""


@dataclass(frozen=True)
class Message:
    """One chat message, shaped for ``tokenizer.apply_chat_template``."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class Turn:
    """One move of one role.

    ``raw`` is exactly what the role emitted; ``text`` is what the other roles hear.
    ``parsed`` holds the scenario-specific fields read from ``raw`` (estimates, status, ...),
    ``state`` the hidden user state after the move, ``invalid`` the reason the move was flagged.
    """

    role: str
    raw: str
    text: str
    parsed: dict[str, Any] = field(default_factory=dict)
    state: tuple[int, ...] | None = None
    invalid: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        # Built by hand: dataclasses.asdict deep-copies and dominated trajectory serialisation.
        return {
            "role": self.role,
            "raw": self.raw,
            "text": self.text,
            "parsed": dict(self.parsed),
            "state": list(self.state) if self.state is not None else None,
            "invalid": self.invalid,
            "token_ids": list(self.token_ids) if self.token_ids is not None else None,
            "logprobs": list(self.logprobs) if self.logprobs is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        data = dict(data)
        if data.get("state") is not None:
            data["state"] = tuple(data["state"])
        return cls(**data)


@dataclass
class Trajectory:
    """A whole episode: who said what, hidden states, rewards per role, outcome.

    ``profile`` is the scenario's starting description (for SEAD: initial state and behaviors),
    ``rewards`` maps role -> total reward, ``reward_terms`` maps ``"<role>/<term>"`` -> value.
    """

    scenario: str
    seed: int | None
    profile: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    outcome: Outcome | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    reward_terms: dict[str, float] = field(default_factory=dict)
    learner: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form provenance: which policies played, backend, run id."""

    def turns_of(self, role: str) -> list[Turn]:
        return [turn for turn in self.turns if turn.role == role]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "profile": self.profile,
            "turns": [turn.to_dict() for turn in self.turns],
            "outcome": self.outcome.value if self.outcome is not None else None,
            "rewards": dict(self.rewards),
            "reward_terms": dict(self.reward_terms),
            "learner": self.learner,
            "meta": dict(self.meta),
        }

    def to_json(self) -> str:
        """One line of strict JSON (``allow_nan=False``). A non-finite number anywhere raises
        :class:`~dialogue_gym.errors.ScenarioError` naming where it is: no scenario may record one."""
        data = self.to_dict()
        try:
            return json.dumps(data, allow_nan=False)
        except ValueError as exc:
            found = first_non_finite(data)
            if found is None:
                raise
            where = "trajectory" + "".join(f"[{key!r}]" for key in found[0]) + f" = {found[1]!r}"
            raise ScenarioError(
                f"{where} of the {self.scenario} trajectory (seed {self.seed}) is not a finite number, "
                "which strict JSON cannot hold; the scenario that recorded it has a bug (every number a "
                "trajectory records must be finite)."
            ) from exc

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            scenario=data["scenario"],
            seed=data.get("seed"),
            profile=data["profile"],
            turns=[Turn.from_dict(turn) for turn in data.get("turns", [])],
            outcome=Outcome(data["outcome"]) if data.get("outcome") is not None else None,
            rewards=dict(data.get("rewards", {})),
            reward_terms=dict(data.get("reward_terms", {})),
            learner=data.get("learner"),
            meta=dict(data.get("meta", {})),
        )


def finite_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (not a bool) that is finite as a float: NaN, infinities and
    ints beyond the float range (where ``math.isfinite`` itself raises ``OverflowError``) are not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -sys.float_info.max <= value <= sys.float_info.max


def first_non_finite(value: Any) -> tuple[tuple[Any, ...], float] | None:
    """``(keys, number)``: the keys leading to the first non-finite float inside nested dicts, lists
    and tuples (``(("rewards", "agent"), nan)``), or ``None`` when every number is finite."""
    if isinstance(value, float):
        return None if math.isfinite(value) else ((), value)
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = first_non_finite(item)
        if found is not None:
            return (key, *found[0]), found[1]
    return None
