"""Nothing a policy is handed can change the game (issue 32, item 1): observations, ``info``, ``start``
profiles are the policy's own copies, and cached reference data is read-only."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.evaluation import evaluate, make_learner_env
from dialogue_gym.probes import VANDAL, DataMutator, vandalise
from dialogue_gym.readonly import ReadOnlyDict, frozen, thawed
from dialogue_gym.scenarios.tracer.data import DEFAULT_SESSIONS_FILE, load_sessions
from envs_registry import REGISTRY

CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]
EPISODES = 12


def fair_policy(env_id: str, role: str):
    """The scenario's default scripted player of ``role``."""
    environment = make_learner_env(env_id, role, {})
    return environment.make_role_policy(role, environment.default_players[role])


def played(env_id: str, role: str, agent) -> list[str]:
    """The run's trajectories as strict JSON, without the agent's name."""
    trajectories = evaluate(env_id, agent, EPISODES, 5, learner=role, batch_size=4)
    for trajectory in trajectories:
        trajectory.meta.pop("agent")
    return [trajectory.to_json() for trajectory in trajectories]


@pytest.mark.parametrize("env_id, role", CASES)
def test_a_policy_that_vandalises_what_it_is_handed_changes_no_episode(env_id, role):
    before = played(env_id, role, fair_policy(env_id, role))
    assert played(env_id, role, DataMutator(fair_policy(env_id, role))) == before
    assert played(env_id, role, fair_policy(env_id, role)) == before


GAME_VIEWS = (("observe", True), ("info", True), ("role_profile", True), ("episode_profile", False), ("privileged", False))
"""What a game hands out: each method's name and whether it takes the role."""


@pytest.mark.parametrize("env_id, role", CASES)
def test_the_gym_view_and_the_game_hand_out_copies(env_id, role):
    environment = gym.make(env_id, learner=role, disable_env_checker=True).unwrapped
    observation, info = environment.reset(seed=3)
    game = environment.game

    def handed_out() -> list:
        return [getattr(game, name)(*([role] if takes_role else [])) for name, takes_role in GAME_VIEWS]

    kept = repr(handed_out())
    for handed in (observation, info, *handed_out()):
        vandalise(handed)
    assert repr(handed_out()) == kept


def test_cached_reference_sessions_are_read_only():
    session = load_sessions(DEFAULT_SESSIONS_FILE).sessions[0]
    with pytest.raises(TypeError, match="read-only"):
        session.merchant["name"] = VANDAL
    assert isinstance(session.merchant.get("facts", ()), tuple)
    assert session.to_dict()["merchant"] == thawed(session.merchant)


def test_frozen_data_stays_json_and_pickles_and_thaws_to_plain_containers():
    data = {"a": [1, {"b": [2, 3]}], "c": "text"}
    cold = frozen(data)
    assert isinstance(cold, ReadOnlyDict) and cold["a"] == (1, {"b": (2, 3)})
    for mutate in (lambda: cold.update(x=1), lambda: cold.pop("a"), lambda: cold["a"][1].clear(), lambda: cold.setdefault("x", 1)):
        with pytest.raises(TypeError, match="thawed"):
            mutate()
    assert pickle.loads(pickle.dumps(cold)) == cold
    assert thawed(cold) == data and type(thawed(cold)["a"]) is list
