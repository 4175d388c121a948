"""Reward terms and advantage estimators as pure functions (usable as TRL reward functions)."""

from dialogue_gym.rewards.advantages import (
    batch_mean_advantages,
    group_standardized_advantages,
)
from dialogue_gym.rewards.tracer import (
    TracerReward,
    final_reward,
    flatness,
    format_reward,
    modulate_advantage,
    tracer_reward,
    trajectory_reward,
    trl_format_reward,
    trl_intent_reward,
    turn_advantages,
)

__all__ = [
    "TracerReward",
    "batch_mean_advantages",
    "final_reward",
    "flatness",
    "format_reward",
    "group_standardized_advantages",
    "modulate_advantage",
    "tracer_reward",
    "trajectory_reward",
    "trl_format_reward",
    "trl_intent_reward",
    "turn_advantages",
]

from dialogue_gym.rewards.rlada import agent_reward as rlada_agent_reward  # noqa: E402
from dialogue_gym.rewards.rlada import customer_reward as rlada_customer_reward  # noqa: E402
from dialogue_gym.rewards.rlada import strict_pass as rlada_strict_pass  # noqa: E402

__all__ += ["rlada_agent_reward", "rlada_customer_reward", "rlada_strict_pass"]
