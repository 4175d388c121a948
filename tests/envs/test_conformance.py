"""Every registered ID through Gymnasium's and PettingZoo's own checkers."""

import importlib

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import dialogue_gym  # noqa: F401
from envs_registry import REGISTRY

IDS = [entry.id for entry in REGISTRY]
ROLE_CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]


@pytest.mark.parametrize("env_id, learner", ROLE_CASES)
def test_gymnasium_check_env(env_id, learner):
    env = gym.make(env_id, learner=learner)
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_module_prefix_form_in_a_fresh_interpreter(env_id):
    import subprocess
    import sys

    code = f"import gymnasium as gym; env = gym.make('dialogue_gym:{env_id}'); env.reset(seed=0); print('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("env_id", IDS)
def test_pettingzoo_api(env_id):
    module = importlib.import_module(next(e.pettingzoo_module for e in REGISTRY if e.id == env_id))
    api_test(module.env(), num_cycles=100)
    parallel_api_test(module.parallel_env(), num_cycles=100)
    seed_test(module.env, num_cycles=100)
    parallel_seed_test(module.parallel_env, num_cycles=100)


@pytest.mark.parametrize("env_id", IDS)
def test_vector_entry_point(env_id):
    envs = gym.make_vec(env_id, num_envs=3)
    observations, infos = envs.reset(seed=0)
    assert len(observations["messages"]) == 3 and envs.observation_space.contains(observations)
    observations, rewards, terminations, truncations, infos = envs.step(["Hello, is this the owner?"] * 3)
    assert rewards.shape == (3,) and terminations.dtype == bool
    envs.close()


def test_render_modes():
    env = gym.make("SEAD-Outbound-v0", render_mode="ansi")
    env.reset(seed=1)
    env.step("Hello, this is Alex from FoodMap. Am I speaking with the owner?")
    text = env.render()
    assert "agent: Hello, this is Alex" in text and "\nuser: " in text
