"""What a policy receives holds only what its role can know; hidden state lives in one privileged
channel that only policies declaring ``privileged = True`` get (issue 9, item 3)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.evaluation import evaluate
from dialogue_gym.game import PRIVILEGED_INFO_KEY, is_privileged
from dialogue_gym.simulators.base import ScriptedPolicy
from envs_registry import REGISTRY

HIDDEN_KEYS = frozenset(
    {
        "user_state", "intent", "target_tool", "scenario", "concealment", "session_id", "group_id",
        "reference_intents", "deviations", "deviation_suffix", "dtw_cost", "intent_level", "intent_trajectory",
        PRIVILEGED_INFO_KEY,
    }
)
"""Keys that name hidden state, a reference or a reference-derived number in any scenario."""

OWN_STATE = {
    ("SEAD-Outbound-v0", "user"): {"user_state"},
    ("RLADA-Banking-v0", "customer"): {"intent", "concealment"},
    ("RLADA-Customer-v0", "customer"): {"intent", "concealment"},
    ("RLADA-Banking-v1", "customer"): {"intent", "concealment"},
    ("TRACER-UserSim-v0", "user"): {"intent_level", "intent_trajectory"},
    ("DMBench-Assistant-v0", "user"): {"intent_level", "intent_trajectory"},
}
"""The hidden keys a role may see because they are its own state (the owner's mood, the caller's problem)."""

KNOWN_PROFILE = {
    ("SEAD-Outbound-v0", "agent"): set(),
    ("RLADA-Banking-v0", "agent"): set(),
    ("RLADA-Customer-v0", "agent"): set(),
    ("RLADA-Banking-v1", "agent"): set(),
    ("TRACER-UserSim-v0", "assistant"): {"merchant"},
    ("TRACER-UserSim-v0", "user"): {"user", "merchant", "opening"},
    ("DMBench-Assistant-v0", "assistant"): {"merchant"},
    ("DMBench-Assistant-v0", "user"): {"user", "merchant", "opening"},
}
"""The ``start`` profile keys a role's policy gets; a role not listed (the SEAD owner, the RL-ADA
customer) knows its whole profile: its own persona, state and problem, but for :data:`UNKNOWN_TO`."""

UNKNOWN_TO = {("RLADA-Banking-v0", "customer"): {"bank_seed"}, ("RLADA-Customer-v0", "customer"): {"bank_seed"}, ("RLADA-Banking-v1", "customer"): {"bank_seed"}}
"""Keys of its own profile a role is not handed: the RL-ADA customer would replay its episode from the bank's seed."""

CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]


class Spy(ScriptedPolicy):
    """Records every ``start`` profile and ``info`` it is handed; says one plain sentence."""

    def __init__(self) -> None:
        self.profiles: list[dict] = []
        self.infos: list[dict] = []

    def start(self, profile, seed):
        self.profiles.append(profile)
        return super().start(profile, seed)

    def act(self, observation, info, memory):
        self.infos.append(info)
        return "Could you tell me a little more about that?"


class PrivilegedSpy(Spy):
    privileged = True


@pytest.mark.parametrize("env_id, role", CASES)
def test_a_fair_policy_gets_only_what_its_role_knows(env_id, role):
    spy = Spy()
    trajectories = evaluate(env_id, spy, 6, seed=3, learner=role)
    assert spy.infos and len(spy.profiles) == 6
    allowed = OWN_STATE.get((env_id, role), set())
    for info in spy.infos:
        assert not (HIDDEN_KEYS - allowed) & set(info), f"{env_id}/{role} info leaks {sorted((HIDDEN_KEYS - allowed) & set(info))}"
    expected = KNOWN_PROFILE.get((env_id, role))
    for profile, trajectory in zip(spy.profiles, trajectories):
        if expected is None:
            unknown = UNKNOWN_TO.get((env_id, role), set())
            assert unknown <= set(trajectory.profile), f"{env_id}/{role}: the profile has no {sorted(unknown - set(trajectory.profile))} to withhold"
            assert profile == {key: value for key, value in trajectory.profile.items() if key not in unknown}
        else:
            assert set(profile) == expected, f"{env_id}/{role} start profile has {sorted(profile)}"
        assert "session_id" not in json.dumps(profile) and "group_id" not in json.dumps(profile)
    assert not any(t.meta.get("privileged") for t in trajectories)


@pytest.mark.parametrize("env_id, role", CASES)
def test_a_policy_that_declares_privileged_gets_the_channel_and_its_rows_are_marked(env_id, role):
    spy = PrivilegedSpy()
    assert is_privileged(spy) and not is_privileged(Spy())
    trajectories = evaluate(env_id, spy, 2, seed=3, learner=role)
    assert spy.profiles == [t.profile for t in trajectories]
    assert all(info[PRIVILEGED_INFO_KEY]["profile"] in spy.profiles for info in spy.infos)
    assert all(t.meta["privileged"] is True for t in trajectories)


@pytest.mark.parametrize("env_id, role", CASES)
def test_the_gymnasium_view_hands_the_learner_no_hidden_keys(env_id, role):
    env = gym.make(env_id, learner=role)
    allowed = OWN_STATE.get((env_id, role), set())
    _, info = env.reset(seed=5)
    infos = [info]
    for _ in range(3):
        _, _, terminated, truncated, info = env.step("Could you tell me a little more about that?")
        infos.append(info)
        if terminated or truncated:
            break
    for info in infos:
        assert not (HIDDEN_KEYS - allowed) & set(info), sorted((HIDDEN_KEYS - allowed) & set(info))
    hidden = env.unwrapped.game.privileged()
    assert hidden["profile"] == env.unwrapped.game.episode_profile()


def test_tracer_reference_copying_has_nothing_to_copy():
    """The review's attack: read ``session_id`` at reset and replay the reference, or read the
    reference length off ``dtw_cost / deviations[0]`` after one turn. Neither number reaches the user."""
    env = gym.make("TRACER-UserSim-v0")
    _, info = env.reset(seed=0)
    _, _, _, _, after_one = env.step("<think>t</think><intent_level>3</intent_level><reply>How much is it?</reply>")
    visible = json.dumps([info, after_one])
    session = env.unwrapped.game.privileged()["session_id"]
    assert session not in visible and "dtw_cost" not in visible and "deviations" not in visible


def test_the_privileged_channel_names_each_scenarios_hidden_state():
    sead = gym.make("SEAD-Outbound-v0").unwrapped
    sead.reset(seed=0, options={"profile": {"state": [3, 2, 3], "behaviors": ["IV1"]}})
    assert sead.game.privileged()["user_state"] == (3, 2, 3)
    bank = gym.make("RLADA-Banking-v0").unwrapped
    bank.reset(seed=0, options={"scenario": "dispute_duplicate"})
    assert bank.game.privileged()["target_tool"] == "dispute_charge"
    tracer = gym.make("TRACER-UserSim-v0").unwrapped
    tracer.reset(seed=0, options={"session_id": "syn-g00-s00"})
    hidden = tracer.game.privileged()
    assert hidden["session_id"] == "syn-g00-s00" and hidden["dtw_cost"] is None and hidden["deviations"] == []
