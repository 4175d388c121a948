"""The Game base's reset and bookkeeping rules that the lifecycle tests leave open: where a reset's
options come from, what an unknown option's warning names, seed 0, and how reward terms add up."""

import warnings

import pytest
from toy_game import ToyConfig, ToyGame


class _Starts:
    """A start source that hands out ``opening`` options and records what it was asked."""

    def __init__(self):
        self.asked = 0

    def next_options(self):
        self.asked += 1
        return {"opening": "learner"}

    def episode_finished(self, trajectory):
        pass


def test_a_start_source_supplies_the_options_only_when_reset_gets_none():
    game = ToyGame()
    game.start_source = _Starts()
    game.reset(seed=1)
    assert game.start_source.asked == 1 and game.current_role == "learner"
    game.reset(seed=1, options={})
    assert game.start_source.asked == 2 and game.current_role == "learner"
    game.reset(seed=1, options={"opening": "counterpart"})
    assert game.start_source.asked == 2 and game.current_role == "counterpart"


@pytest.mark.parametrize("view_id", [None, "Toy-View-v0"])
def test_the_unknown_option_warning_names_the_view_the_user_made(view_id):
    game = ToyGame()
    game.view_id = view_id
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        game.reset(seed=0, options={"colour": "red"})
    [warning] = [w for w in caught if "Ignoring unknown reset options" in str(w.message)]
    named = view_id or "Toy-v0"
    assert f"['colour']; {named} reads ['opening']" in str(warning.message)


def test_seed_zero_is_a_seed_not_a_request_for_a_random_one():
    game = ToyGame()
    game.reset(seed=0)
    assert game.seed == 0
    first = game.rng.random()
    game.reset(seed=0)
    assert game.seed == 0 and game.rng.random() == first


def test_two_reward_terms_of_one_step_add_up_in_the_step_the_return_and_each_term():
    game = ToyGame()
    game.reset(seed=0)
    rewards = {}
    game.add_reward(rewards, "learner", "progress", 0.5)
    game.add_reward(rewards, "learner", "bonus", 0.25)
    game.add_reward(rewards, "learner", "progress", 1.0)
    assert rewards == {"learner": 1.75}
    assert game.returns == {"learner": 1.75, "counterpart": 0.0}
    assert game.reward_terms == {"learner/progress": 1.5, "learner/bonus": 0.25}


def test_an_invalid_output_under_penalize_costs_the_penalty_and_does_not_end_the_episode():
    game = ToyGame(ToyConfig(invalid_action="penalize", invalid_action_penalty=0.3))
    game.reset(seed=0)
    rewards = {}
    assert game.flag_invalid("learner", "no tags", rewards) is False
    assert rewards == {"learner": -0.3} and game.reward_terms == {"learner/invalid_action": -0.3}
    assert game.flag_invalid("learner", None, rewards) is False and rewards == {"learner": -0.3}


def test_an_invalid_output_under_end_ends_the_episode():
    game = ToyGame(ToyConfig(invalid_action="end"))
    game.reset(seed=0)
    rewards = {}
    assert game.flag_invalid("learner", "no tags", rewards) is True
    assert rewards == {}
