"""The single-agent, vector and PettingZoo views pinned where mutation testing found them loose (issue
43 item 6): each test names the bug it catches."""

from __future__ import annotations

import dataclasses
import gc

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.utils.conversions import aec_to_parallel
from toy_game import Counterpart, ToyConfig, ToyGame

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.multiagent import DialogueAECEnv, DialogueParallelEnv
from dialogue_gym.envs.pipeline import frozen_heap
from dialogue_gym.envs.scenario import RolePlayers
from dialogue_gym.envs.sead_outbound_v0 import SeadOutboundVectorEnv
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.envs.vector import batch_infos
from dialogue_gym.scenarios.sead.game import SeadGame
from dialogue_gym.scenarios.sead.parsing import render_agent_output, render_user_output
from dialogue_gym.scenarios.sead.scripted_user import ScriptedUser
from dialogue_gym.simulators.base import ScriptedPolicy


def test_each_sub_env_of_a_seeded_reset_plays_its_own_seed():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=3, vectorization_mode="vector_entry_point")
    envs.reset(seed=10)
    # sub-env i is reset with seed + i: the same episodes as single envs reset with 10, 11 and 12
    profiles = [game.episode_profile() for game in envs.unwrapped.games]
    single = gym.make("SEAD-Outbound-v0")
    expected = []
    for seed in (10, 11, 12):
        single.reset(seed=seed)
        expected.append(single.unwrapped.game.episode_profile())
    assert profiles == expected


def test_an_unseeded_reset_plays_a_seed_drawn_from_the_envs_generator():
    env = gym.make("SEAD-Outbound-v0")
    env.reset(seed=3)
    env.reset()
    # the env's generator after reset(seed=3) is Gymnasium's np_random(3), i.e. default_rng(3); the
    # first reset played seed 3 itself, so the second draws the generator's first integer below 2**62
    assert env.unwrapped.trajectory().seed == int(np.random.default_rng(3).integers(2**62))


def test_the_learner_is_paid_for_its_own_move():
    env = gym.make("SEAD-Outbound-v0")
    env.reset(seed=0)
    # an empty turn is flagged and costs invalid_action_penalty = 0.1 on the learner's own move
    _, reward, terminated, _, info = env.step("")
    assert info["invalid_action"] and not terminated and reward == -0.1


class Watched(ScriptedPolicy):
    """A policy that records each episode it is started for."""

    def __init__(self):
        self.starts = 0

    def start(self, profile, seed):
        self.starts += 1
        return {}

    def act(self, observation, info, memory):
        return "Hello."


def test_a_policy_given_for_the_learners_role_is_not_played():
    game = SeadGame()
    watched = Watched()
    env = DialogueEnv(game, "agent", {"agent": watched, "user": ScriptedUser(game.library)})
    env.reset(seed=0)
    assert watched.starts == 0 and set(env.driver.policies) == {"user"}


def test_infos_present_in_some_sub_envs_are_masked_where_they_are():
    batched = batch_infos([{"a": 1}, {"b": 2}, {"a": 3}])
    assert batched["a"].tolist() == [1, 0, 3] and batched["_a"].tolist() == [True, False, True]
    assert batched["b"].tolist() == [0, 2, 0] and batched["_b"].tolist() == [False, True, False]


# -- the PettingZoo views -------------------------------------------------------------------------

PROFILE = {"state": [3, 2, 3], "behaviors": ["CC1"]}


def test_after_the_last_move_the_aec_view_selects_the_next_agent():
    env = DialogueAECEnv(SeadGame())
    env.reset(seed=0, options={"profile": PROFILE})
    env.step(render_agent_output("Hello"))
    assert env.agent_selection == "user"
    env.step(render_user_output("Bye.", (1, 1, 1), -1))
    assert all(env.terminations.values()) and env.agent_selection == "agent"


def test_the_aec_view_pays_each_agent_what_came_since_its_last_move():
    env = DialogueAECEnv(SeadGame())
    env.reset(seed=0, options={"profile": PROFILE})
    for _ in range(2):
        env.step("")  # flagged: -0.1 for the agent
        env.step(render_user_output("Hm.", (3, 2, 3), 0))
        assert env.agent_selection == "agent" and env.last()[1] == -0.1


def test_each_parallel_agent_observes_its_own_view():
    env = DialogueParallelEnv(SeadGame())
    env.reset(seed=0, options={"profile": PROFILE})
    observations, *_ = env.step({"agent": render_agent_output("Hello"), "user": ""})
    assert "state" in observations["user"] and "state" not in observations["agent"]


class Unpaid(ToyGame):
    """The toy game, except that its learner's moves credit the learner nothing (no reward key at all)."""

    def _step(self, role, text, token_ids, logprobs):
        result = super()._step(role, text, token_ids, logprobs)
        result.rewards.pop("learner", None)
        return result


def test_a_move_that_credits_the_learner_nothing_pays_zero():
    env = DialogueEnv(Unpaid(ToyConfig(reward=0.0)), "learner", {"counterpart": Counterpart()})
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step("hello")
    assert reward == 0.0 and not terminated


def test_the_aec_view_declares_itself_not_parallelizable():
    """Its moves are not simultaneous (one role speaks at a time): PettingZoo's converter refuses it,
    and the parallel view (DialogueParallelEnv) is the way to a ParallelEnv."""
    with pytest.raises(AssertionError, match="is not generally safe"):
        aec_to_parallel(DialogueAECEnv(SeadGame()))


def test_the_aec_view_starts_and_steps_with_zero_rewards_where_nothing_was_credited():
    env = DialogueAECEnv(ToyGame())
    env.reset(seed=0)
    assert env.rewards == {"learner": 0.0, "counterpart": 0.0}
    env.step("hello")  # the counterpart's move credits no one
    assert env.rewards == {"learner": 0.0, "counterpart": 0.0}


def test_the_parallel_view_pays_zero_where_nothing_was_credited():
    env = DialogueParallelEnv(ToyGame())
    env.reset(seed=0)
    _, rewards, *_ = env.step({"counterpart": "hello", "learner": ""})  # the counterpart's move credits no one
    assert rewards == {"learner": 0.0, "counterpart": 0.0}


def test_role_players_are_frozen():
    players = RolePlayers("agent", {"user": ("scripted", None, None)})
    with pytest.raises(dataclasses.FrozenInstanceError):
        players.learner = "user"


def test_a_scenario_vector_env_has_one_sub_env_by_default():
    assert SeadOutboundVectorEnv().num_envs == 1


def test_the_heap_is_frozen_by_default_inside_and_unfrozen_after():
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_human_rendering_prints_each_line_once_and_a_new_episode_from_its_start(capsys):
    env = DialogueEnv(ToyGame(), "learner", {"counterpart": Counterpart()}, render_mode="human")
    env.reset(seed=0)
    env.render()
    first = capsys.readouterr().out.splitlines()
    assert len(first) == 2 and first[0].startswith("[Toy-v0 seed=0") and first[1] == "counterpart: hello"
    env.render()  # nothing new: an empty print
    assert capsys.readouterr().out == "\n"
    env.step("hi")  # printed as it happens: the learner's move and the counterpart's answer
    assert capsys.readouterr().out.splitlines() == ["learner: hi", "counterpart: hello"]
    env.reset(seed=1)
    env.render()  # a shorter transcript than printed: a new episode, printed from its header
    again = capsys.readouterr().out.splitlines()
    assert len(again) == 2 and again[0].startswith("[Toy-v0 seed=1") and again[1] == "counterpart: hello"


def test_without_a_render_mode_nothing_is_printed(capsys):
    env = DialogueEnv(ToyGame(), "learner", {"counterpart": Counterpart()})
    env.reset(seed=0)
    assert env.render() is None
    env.step("hi")
    assert capsys.readouterr().out == ""
