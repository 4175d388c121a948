"""The GRPO core shared by the SEAD, TRACER and RL-ADA trainers.

Two policy kinds behind one interface (:class:`TrainablePolicy`): a causal-LM policy
(:mod:`trainers.grpo.lm`) and a CPU strategy policy over dialogue acts (:mod:`trainers.grpo.strategy`).
Advantages come from :mod:`dialogue_gym.rewards.advantages`.
"""

from trainers.grpo.policy import TrainablePolicy, advantages_for

__all__ = ["TrainablePolicy", "advantages_for"]
