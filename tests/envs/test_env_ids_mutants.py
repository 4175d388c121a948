"""Each registered id's single-agent and vector views play the documented default learner against
the documented default counterparts (the same in both views), a learner switch hands the other role
its default policy, and each module's PettingZoo views carry its own name and game."""

import warnings

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import (
    dmbench_assistant_v0,
    rlada_banking_v0,
    rlada_banking_v1,
    rlada_customer_v0,
    sead_outbound_v0,
    tracer_usersim_v0,
)

DEFAULTS = [
    ("SEAD-Outbound-v0", "agent", {"user": "ScriptedUser"}, None),
    ("TRACER-UserSim-v0", "user", {"assistant": "SopAssistant"}, None),
    ("DMBench-Assistant-v0", "assistant", {"user": "IntentDynamicsUser"}, None),
    ("RLADA-Banking-v0", "agent", {"customer": "ScriptedCustomer"}, None),
    ("RLADA-Banking-v1", "agent", {"customer": "WithholdingCustomer"}, "RLADA-Banking-v1"),
    ("RLADA-Customer-v0", "customer", {"agent": "KeywordRouterAgent"}, "RLADA-Customer-v0"),
]


def _players(env):
    return env.learner, {role: type(policy).__name__ for role, policy in env.driver.policies.items()}


@pytest.mark.parametrize("env_id, learner, counterparts, view_id", DEFAULTS)
def test_both_views_play_the_documented_defaults(env_id, learner, counterparts, view_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # RLADA-Banking-v0 points to v1
        single = gym.make(env_id).unwrapped
        vector = gym.make_vec(env_id, num_envs=1, vectorization_mode="vector_entry_point").unwrapped
    assert _players(single) == _players(vector) == (learner, counterparts)
    assert single.game.view_id == vector.game.view_id == view_id


@pytest.mark.parametrize(
    "env_id, learner, counterparts",
    [
        ("SEAD-Outbound-v0", "user", {"agent": "SopAgent"}),
        ("TRACER-UserSim-v0", "assistant", {"user": "IntentDynamicsUser"}),
        ("RLADA-Banking-v1", "customer", {"agent": "KeywordRouterAgent"}),
    ],
)
def test_a_learner_switch_hands_the_other_role_its_default(env_id, learner, counterparts):
    assert _players(gym.make(env_id, learner=learner).unwrapped) == (learner, counterparts)


@pytest.mark.parametrize(
    "module, name, game",
    [
        (sead_outbound_v0, "sead_outbound_v0", "SeadGame"),
        (tracer_usersim_v0, "tracer_usersim_v0", "TracerGame"),
        (dmbench_assistant_v0, "dmbench_assistant_v0", "DMBenchGame"),
        (rlada_banking_v0, "rlada_banking_v0", "RladaGame"),
        (rlada_banking_v1, "rlada_banking_v1", "RladaGame"),
        (rlada_customer_v0, "rlada_banking_v0", "RladaGame"),  # the customer view re-exports v0's PettingZoo views
    ],
)
def test_pettingzoo_views_carry_the_modules_name_and_game(module, name, game):
    aec, parallel = module.env(), module.parallel_env()
    assert aec.unwrapped.metadata["name"] == parallel.metadata["name"] == name
    assert type(aec.unwrapped.game).__name__ == type(parallel.game).__name__ == game
