"""GRPO advantage estimators against hand-computed numbers where the right and the plausible wrong
formulas differ: batch mean vs standardisation, population vs sample std, and the ``eps`` that keeps a
near-constant group's advantages bounded (it is added to the std, never subtracted)."""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.rewards import group_standardized_advantages
from trainers.grpo import policy as grpo_policy


def test_batch_mean_is_reward_minus_the_mean_unscaled():
    # R = (1, 0, 0, 0): mean 0.25 -> A = (0.75, -0.25, -0.25, -0.25). Standardised (std = sqrt(3)/4)
    # it would be (1.732, -0.577, -0.577, -0.577).
    advantages = grpo_policy.advantages_for([1.0, 0.0, 0.0, 0.0], "batch_mean")
    assert advantages.tolist() == [0.75, -0.25, -0.25, -0.25]
    # groups are ignored: the SEAD baseline is over the whole batch (mean 1 -> (0, -1, 2, -1))
    assert grpo_policy.advantages_for([1.0, 0.0, 3.0, 0.0], "batch_mean", groups=[0, 0, 1, 1]).tolist() == [0.0, -1.0, 2.0, -1.0]


def test_group_standardized_uses_the_population_std():
    # R = (1, 0, 0, 0): mean 0.25, population std sqrt(3/16) = sqrt(3)/4 -> A = (sqrt(3), -1/sqrt(3) x 3).
    # (The sample std sqrt(1/4) = 0.5 would give (1.5, -0.5, -0.5, -0.5).)
    advantages = grpo_policy.advantages_for([1.0, 0.0, 0.0, 0.0], "group_standardized")
    assert advantages == pytest.approx([np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3)], rel=1e-5)


def test_eps_is_added_to_the_std():
    # R = (0, 1e-6): mean 5e-7, std 5e-7; with eps = 1e-6 the denominator is 1.5e-6 -> A = (-1/3, 1/3).
    # Subtracting eps (denominator -5e-7) would flip the signs to (1, -1).
    advantages = group_standardized_advantages([0.0, 1e-6])
    assert advantages == pytest.approx([-1 / 3, 1 / 3], rel=1e-9)
    assert group_standardized_advantages([0.0, 1e-6], eps=0.0) == pytest.approx([-1.0, 1.0])
