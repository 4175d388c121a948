"""The Game base: rewards are finite or the step fails loudly, and nothing non-finite is ever credited."""

import math

import pytest
from toy_game import ToyConfig, ToyGame

from dialogue_gym.errors import EpisodeStateError, ScenarioError


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_reward_raises_before_anything_is_credited(value):
    game = ToyGame(ToyConfig(reward=value))
    game.reset(seed=0)
    game.step("hello")
    with pytest.raises(ScenarioError, match=rf"ToyGame computed a non-finite reward {value!r} for the term learner/move; "
                       r"rewards must be finite numbers\. Check the env's reward settings"):
        game.step("hi")
    assert game.returns == {"learner": 0.0, "counterpart": 0.0} and game.reward_terms == {}
    with pytest.raises(EpisodeStateError, match=r"the last step\(\) raised ScenarioError: ToyGame computed a non-finite"):
        game.step("again")


def test_finite_rewards_are_credited_to_the_step_the_return_and_the_term():
    game = ToyGame(ToyConfig(reward=0.5))
    game.reset(seed=0)
    game.step("hello")
    result = game.step("hi")
    assert result.rewards == {"learner": 0.5} and game.returns["learner"] == 0.5 and game.reward_terms == {"learner/move": 0.5}


def test_a_failure_message_quoted_by_episode_state_error_is_cut_to_a_readable_length():
    game = ToyGame()
    with pytest.raises(ValueError):
        game.reset(seed=0, options={"opening": "x" * 5000})
    with pytest.raises(EpisodeStateError) as raised:
        game.step("hi")
    assert len(str(raised.value)) < 600 and "..." in str(raised.value)
