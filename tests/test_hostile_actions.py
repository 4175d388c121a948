"""Fuzz every registered ID and role with hostile model output, in the single-agent, AEC and vector
views, and with LLM-played counterparts and judges that emit it: no exception, finite rewards,
observations inside their spaces, and every trajectory strict JSON.

Together the seeded loops below send over 10,000 hostile actions (a test sums the loop sizes, so
shrinking them fails); the hypothesis test adds arbitrary text and JSON values on top.
"""

from __future__ import annotations

import importlib
import json
import math
import random

import gymnasium as gym
import pytest
from hostile import hostile_action, hostile_text
from hypothesis import HealthCheck, given, settings

import dialogue_gym  # noqa: F401
from envs_registry import REGISTRY

ROLE_CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]
SINGLE_ACTIONS = 400
VECTOR_STEPS, VECTOR_ENVS = 50, 4
AEC_ACTIONS = 840
LLM_COUNTERPART_ACTIONS = 60


def _strict_json(trajectory) -> None:
    json.dumps(trajectory.to_dict(), allow_nan=False)


def _check_finite(reward, where: str) -> None:
    assert math.isfinite(float(reward)), f"non-finite reward {reward!r} {where}"


def play_single(env, rng: random.Random, actions: int, seed: int) -> None:
    """Step ``env`` with ``actions`` hostile actions, resetting as episodes end."""
    observation, info = env.reset(seed=seed)
    sent = 0
    while sent < actions:
        action = hostile_action(rng)
        observation, reward, terminated, truncated, info = env.step(action)
        sent += 1
        _check_finite(reward, f"after {action[:80]!r}")
        assert env.observation_space.contains(observation), f"observation outside its space after {action[:80]!r}"
        if terminated or truncated:
            _strict_json(env.unwrapped.trajectory())
            observation, info = env.reset(seed=seed + sent)


@pytest.mark.parametrize("env_id, learner", ROLE_CASES)
def test_single_agent_view_survives_hostile_actions(env_id, learner):
    env = gym.make(env_id, learner=learner)
    play_single(env, random.Random(f"{env_id}/{learner}"), SINGLE_ACTIONS, seed=0)


@pytest.mark.parametrize("env_id, learner", ROLE_CASES)
def test_vector_view_survives_hostile_actions(env_id, learner):
    rng = random.Random(f"vector/{env_id}/{learner}")
    envs = gym.make_vec(env_id, num_envs=VECTOR_ENVS, learner=learner)
    envs.reset(seed=0)
    for _ in range(VECTOR_STEPS):
        actions = [hostile_action(rng) for _ in range(VECTOR_ENVS)]
        observations, rewards, terminations, truncations, infos = envs.step(actions)
        for reward in rewards:
            _check_finite(reward, "in the vector view")
        assert envs.observation_space.contains(observations)
        for trajectory in envs.unwrapped.pop_trajectories():
            _strict_json(trajectory)


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda entry: entry.id)
def test_aec_view_survives_hostile_actions_from_every_role(entry):
    rng = random.Random(f"aec/{entry.id}")
    env = importlib.import_module(entry.pettingzoo_module).env()
    env.reset(seed=0)
    sent = episodes = 0
    while sent < AEC_ACTIONS:
        role = env.agent_selection
        observation, reward, termination, truncation, info = env.last()
        _check_finite(reward, f"for {role}")
        if termination or truncation:
            env.step(None)
        else:
            assert env.observation_space(role).contains(observation)
            env.step(hostile_action(rng))
            sent += 1
        if not env.agents:
            _strict_json(env.unwrapped.trajectory())
            episodes += 1
            env.reset(seed=episodes)


def _llm_counterpart_cases():
    """(env_id, learner, kwargs): every non-learner role, and every judge, played by a model that
    answers with hostile text."""
    replies = [hostile_action(random.Random(i)) for i in range(40)]
    canned = {"name": "canned", "replies": replies}
    cases = []
    for entry in REGISTRY:
        for learner in entry.roles:
            for role in entry.roles:
                if role != learner:
                    cases.append((entry.id, learner, {role: "llm", f"{role}_backend": canned}))
    cases.append(("RLADA-Banking-v0", "agent", {"judge": "llm", "judge_backend": canned}))
    cases.append(("DMBench-Assistant-v0", "assistant", {"judge": "llm", "judge_backend": canned}))
    return cases


def _llm_counterpart_id(value):
    """Short ids: the roles played by the hostile model, not its 40 canned replies."""
    return "+".join(key for key in value if not key.endswith("_backend")) if isinstance(value, dict) else str(value)


@pytest.mark.parametrize("env_id, learner, kwargs", _llm_counterpart_cases(), ids=_llm_counterpart_id)
def test_llm_played_counterparts_and_judges_survive_hostile_output(env_id, learner, kwargs):
    env = gym.make(env_id, learner=learner, **kwargs)
    rng = random.Random(f"llm/{env_id}/{learner}/{sorted(kwargs)}")
    play_single(env, rng, LLM_COUNTERPART_ACTIONS, seed=0)


def test_the_seeded_loops_send_at_least_ten_thousand_hostile_actions():
    total = (
        len(ROLE_CASES) * (SINGLE_ACTIONS + VECTOR_STEPS * VECTOR_ENVS)
        + len(REGISTRY) * AEC_ACTIONS
        + len(_llm_counterpart_cases()) * LLM_COUNTERPART_ACTIONS
    )
    assert total >= 10_000


@pytest.mark.parametrize("env_id, learner", ROLE_CASES)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=hostile_text())
def test_any_text_is_a_legal_move(env_id, learner, text):
    env = gym.make(env_id, learner=learner)
    env.reset(seed=len(text))
    observation, reward, terminated, truncated, info = env.step(text)
    _check_finite(reward, f"after {text[:80]!r}")
    assert env.observation_space.contains(observation)
    if terminated or truncated:
        _strict_json(env.unwrapped.trajectory())
