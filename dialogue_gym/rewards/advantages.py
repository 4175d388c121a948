"""GRPO advantage estimators over episode returns (pure NumPy; trainers add token accounting)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dialogue_gym.errors import ConfigError


def _returns(rewards: Sequence[float]) -> np.ndarray:
    array = np.asarray(rewards, dtype=np.float64)
    if array.ndim != 1:
        raise ConfigError(f"rewards must be a 1-D sequence of episode returns, got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"rewards must be finite, got {array[~np.isfinite(array)][:3].tolist()}.")
    return array


def batch_mean_advantages(rewards: Sequence[float]) -> np.ndarray:
    """SEAD's baseline: A_i = R_i - mean_j R_j over the whole batch."""
    array = _returns(rewards)
    return array - array.mean() if array.size else array


def group_standardized_advantages(
    rewards: Sequence[float],
    groups: Sequence[object] | None = None,
    eps: float = 1e-6,
) -> np.ndarray:
    """GRPO: A_i = (R_i - mean_g R) / (std_g R + eps) within each group ``g`` (the whole batch when
    ``groups`` is None). Population std (ddof=0), as in GRPO implementations; a group whose rewards
    are all equal gets advantages 0."""
    array = _returns(rewards)
    labels = np.zeros(array.size, dtype=np.int64) if groups is None else np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)[1]
    if labels.size != array.size:
        raise ConfigError(f"groups has {labels.size} entries but rewards has {array.size}; give one group id per reward.")
    advantages = np.zeros_like(array)
    for label in np.unique(labels):
        members = labels == label
        values = array[members]
        advantages[members] = (values - values.mean()) / (values.std() + eps)
    return advantages
