"""Seeds and settings of role policies: an LLM role's sampling seed moves with the turn unless the user
fixed one, an 'llm' role keeps its sampling settings, and a scripted policy's stream is the episode
seed's, made once per episode."""

import random

import pytest
from test_llm_stop import Recording

from dialogue_gym.backends import CannedBackend
from dialogue_gym.errors import ConfigError
from dialogue_gym.simulators.base import ScriptedPolicy
from dialogue_gym.simulators.llm import LLMPolicy
from dialogue_gym.simulators.named import named_policy


def _observation(turn):
    return {"turn": turn, "messages": [{"role": "user", "content": f"turn {turn}"}]}


def test_an_llm_roles_seed_is_the_episode_seed_plus_the_turn():
    backend = Recording(["ok"])
    policy = LLMPolicy(backend)
    memories = [policy.start({}, 10), policy.start({}, 20)]
    policy.act_batch([_observation(0), _observation(3)], [{}, {}], memories)
    policy.act_batch([_observation(1)], [{}], memories[:1])
    assert [s.seed for s in backend.sampling] == [10, 23, 11]


def test_a_seed_the_user_fixed_in_sampling_is_kept_on_every_turn():
    backend = Recording(["ok"])
    policy = LLMPolicy(backend, {"seed": 5, "max_new_tokens": 9})
    policy.act_batch([_observation(0), _observation(4)], [{}, {}], [policy.start({}, 10), policy.start({}, 20)])
    assert [(s.seed, s.max_new_tokens) for s in backend.sampling] == [(5, 9), (5, 9)]


def test_an_llm_role_made_by_name_keeps_its_sampling_settings():
    policy = named_policy("user", "llm", {}, backend={"name": "canned", "replies": ["x"]}, sampling={"max_new_tokens": 7, "stop": ["</s>"]})
    assert policy.sampling.max_new_tokens == 7 and policy.sampling.stop == ("</s>",)


def test_a_scripted_policys_stream_is_made_once_from_the_episode_seed():
    memory = ScriptedPolicy().start({}, 42)
    stream = ScriptedPolicy.rng(memory)
    draws = [stream.random(), ScriptedPolicy.rng(memory).random()]
    expected = random.Random(42)
    assert ScriptedPolicy.rng(memory) is stream
    assert draws == [expected.random(), expected.random()]


@pytest.mark.parametrize("stop", ["</status>", 5, None, ["</a>", ""], ["</a>", 3]])
def test_a_stop_that_is_not_a_list_of_non_empty_strings_is_a_config_error(stop):
    with pytest.raises(ConfigError, match=r"sampling\['stop'\] must be a list of non-empty strings, got "):
        LLMPolicy(CannedBackend(["ok"]), {"stop": stop})


class _ActsOnly:
    """Has act_batch but no start: not a policy."""

    def act_batch(self, observations, infos, memories):
        return ["hi" for _ in observations]


def test_a_policy_object_needs_both_start_and_act_batch():
    policy = ScriptedPolicy()
    assert named_policy("user", policy, {}) is policy
    with pytest.raises(ConfigError, match=r"user=<.*_ActsOnly object at .*> is not a known user policy; use one of \['scripted', 'llm'\]"):
        named_policy("user", _ActsOnly(), {"scripted": ScriptedPolicy})


def test_a_misspelt_policy_name_gets_the_closest_name_as_a_hint():
    with pytest.raises(ConfigError, match=r"user='scriptd' is not a known user policy \(did you mean 'scripted'\?\); use one of"):
        named_policy("user", "scriptd", {"scripted": ScriptedPolicy, "random": ScriptedPolicy})
