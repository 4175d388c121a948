import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dialogue_gym.errors import ConfigError
from dialogue_gym.rewards import batch_mean_advantages, group_standardized_advantages
from dialogue_gym.rewards.sead import outcome_reward
from trainers.grpo import advantages_for


def test_batch_mean_baseline_by_hand():
    assert batch_mean_advantages([1, 0, 0, 1]).tolist() == [0.5, -0.5, -0.5, 0.5]
    assert batch_mean_advantages([1, 1, 1]).tolist() == [0, 0, 0]


def test_group_standardisation_by_hand():
    advantages = group_standardized_advantages([1, 0, 3, 3, 5], groups=["a", "a", "b", "b", "b"], eps=0.0)
    assert advantages[:2].tolist() == [1.0, -1.0]
    b = np.array([3, 3, 5.0])
    assert np.allclose(advantages[2:], (b - b.mean()) / b.std())
    assert group_standardized_advantages([2, 2, 2]).tolist() == [0, 0, 0]


@given(st.lists(st.floats(-10, 10), min_size=1, max_size=30))
def test_advantages_are_centred(rewards):
    assert abs(batch_mean_advantages(rewards).sum()) < 1e-6 * len(rewards) * 10
    assert abs(group_standardized_advantages(rewards).sum()) < 1e-3 * len(rewards)


def test_errors_name_the_problem():
    with pytest.raises(ConfigError, match="1-D sequence"):
        batch_mean_advantages([[1, 2]])
    with pytest.raises(ConfigError, match="must be finite"):
        batch_mean_advantages([1, float("nan")])
    with pytest.raises(ConfigError, match="groups has 1 entries but rewards has 2"):
        group_standardized_advantages([1, 2], groups=["a"])
    with pytest.raises(ConfigError, match="advantage='ppo' is not supported"):
        advantages_for([1.0], "ppo")


def test_outcome_reward_is_a_trl_reward_function():
    assert outcome_reward(completions=["x", "y"], outcome=["success", "hangup"]) == [1.0, 0.0]
    with pytest.raises(TypeError, match="needs the dialogues' outcomes"):
        outcome_reward(completions=["x"])
