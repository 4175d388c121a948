"""Building and resetting the vector view: a bad ``num_envs`` or learner is refused with the fix, one
sub-env is a batch like any other, unseeded resets spread their seeds over 62 bits, and a list of
seeds resets like its first seed."""

import re

import gymnasium as gym
import pytest
from toy_game import Counterpart, ToyGame

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.vector import DialogueVectorEnv
from dialogue_gym.errors import ConfigError, EpisodeStateError


@pytest.mark.parametrize("num_envs", [0, -1, True, 2.0, "2"])
def test_num_envs_must_be_a_positive_int(num_envs):
    with pytest.raises(ConfigError, match=rf"num_envs must be a positive int, got {re.escape(repr(num_envs))}\."):
        gym.make_vec("SEAD-Outbound-v0", num_envs=num_envs)


def test_one_sub_env_is_a_batch_of_one():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=1)
    single = gym.make("SEAD-Outbound-v0")
    with pytest.raises(EpisodeStateError, match=r"step\(\) called before reset\(\); call reset\(seed=\.\.\.\) first\."):
        envs.step(["Hello, is this the owner?"])
    assert envs.single_observation_space == single.observation_space and envs.single_action_space == single.action_space
    observations, _ = envs.reset(seed=3)
    assert envs.observation_space.contains(observations)
    observations, rewards, terminated, truncated, _ = envs.step(["Hello, is this the owner?"])
    assert rewards.shape == terminated.shape == truncated.shape == (1,) and envs.observation_space.contains(observations)


def test_an_unknown_learner_is_refused_with_the_roles():
    with pytest.raises(ConfigError, match=r"learner='nobody' is not a role; choose one of \['agent', 'user'\]\."):
        gym.make_vec("SEAD-Outbound-v0", num_envs=1, learner="nobody")


def test_unseeded_resets_draw_distinct_seeds_from_62_bits():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=64)
    envs.reset()
    seeds = [game.seed for game in envs.unwrapped.games]
    # 64 draws below 2**56 would happen with probability 2**-384.
    assert len(set(seeds)) == 64 and all(0 <= seed < 2**62 for seed in seeds) and max(seeds) >= 2**56


def test_a_list_of_seeds_seeds_the_batch_like_its_first_seed():
    """reset(seed=5) gives sub-env seeds 5, 6 and seeds the batch's generator (later autoresets) with 5;
    reset(seed=[5, 6]) is the same reset, and reset(seed=[5, 7]) differs only in the second sub-env."""
    plain, listed, other = (gym.make_vec("SEAD-Outbound-v0", num_envs=2) for _ in range(3))
    plain.reset(seed=5)
    listed.reset(seed=[5, 6])
    other.reset(seed=[5, 7])
    assert [game.seed for game in listed.unwrapped.games] == [game.seed for game in plain.unwrapped.games] == [5, 6]
    assert [game.seed for game in other.unwrapped.games] == [5, 7]
    draws = {tuple(envs.unwrapped.np_random.integers(2**62, size=4).tolist()) for envs in (plain, listed, other)}
    assert len(draws) == 1


class Unrewarded(ToyGame):
    """A game whose steps credit nothing: no role appears in a step's rewards."""

    def add_reward(self, rewards, role, term, value):
        pass


def test_a_step_that_credits_the_learner_nothing_rewards_it_zero():
    envs = DialogueVectorEnv(Unrewarded, 2, "learner", {"counterpart": Counterpart()})
    envs.reset(seed=0)
    for _ in range(3):
        assert envs.step(["move", "move"])[1].tolist() == [0.0, 0.0]
