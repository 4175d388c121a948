"""What a trainable policy offers the GRPO loops (duck-typed, TRL style)."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.rewards.advantages import (
    batch_mean_advantages,
    group_standardized_advantages,
)

ADVANTAGES = ("batch_mean", "group_standardized")


class TrainablePolicy(Protocol):
    """A role policy (``start`` / ``act_batch``) that learns from its own episodes.

    ``record(memory)`` returns the JSON-serializable part of an episode's memory (what the policy
    needs to learn from it: chosen moves, or token ids and logprobs); trainers store it with the
    trajectory, so a resumed run can still learn from episodes played before a crash.
    """

    def start(self, profile: dict[str, Any], seed: int) -> Any: ...

    def act_batch(self, observations: Sequence[dict], infos: Sequence[dict], memories: Sequence[Any]) -> list[str]: ...

    def record(self, memory: Any) -> Any: ...

    def update(self, records: Sequence[Any], advantages: Sequence[float]) -> dict[str, float]: ...

    def save(self, directory: str) -> None: ...


def advantages_for(rewards: Sequence[float], kind: str, groups: Sequence[object] | None = None) -> np.ndarray:
    """SEAD's batch-mean baseline (``batch_mean``) or GRPO group standardisation (``group_standardized``)."""
    if kind == "batch_mean":
        return batch_mean_advantages(rewards)
    if kind == "group_standardized":
        return group_standardized_advantages(rewards, groups)
    raise ConfigError(f"advantage={kind!r} is not supported; use one of {ADVANTAGES}.")
