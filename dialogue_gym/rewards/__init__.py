"""Reward terms and advantage estimators as pure functions (usable as TRL reward functions)."""

from dialogue_gym.rewards.advantages import batch_mean_advantages, group_standardized_advantages

__all__ = ["batch_mean_advantages", "group_standardized_advantages"]
