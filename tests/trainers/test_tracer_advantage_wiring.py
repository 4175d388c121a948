"""The TRACER trainer hands its own gamma, l_adv, rho, reward weights and eta to the formulas (a trainer
that fell back to the functions' defaults would pass every default-valued test), checked with values
that differ from the defaults and hand-computed advantages."""

from __future__ import annotations

import math

import pytest

from dialogue_gym.types import Trajectory
from trainers.tracer.config import build_config
from trainers.tracer.train import advantages_of, env_kwargs


def rollout(session_id, reward, suffix):
    meta = {"alignment": {"suffix": suffix}, "reference": {"session_id": session_id}}
    return Trajectory("TRACER-UserSim-v0", 0, {}, rewards={"user": reward}, meta=meta)


def test_advantages_use_the_configs_gamma_and_l_adv():
    config = build_config("cpu-strategy", gamma=2.0, l_adv=0.5)
    trajectories = [rollout("s1", 1.0, [1.0, 0.0]), rollout("s1", 0.0, [0.5]), rollout("s2", 0.3, [2.0])]
    first, second, third = advantages_of(trajectories, config)
    # group s1: rewards (1, 0), mean 0.5, population std 0.5 -> A = +-0.5 / (0.5 + 1e-6)
    a = 0.5 / (0.5 + 1e-6)
    # A~ = A (1 - l_adv sign(A) tanh(gamma c)): turn 0 of the first, c = 1 -> a (1 - 0.5 tanh 2); c = 0 -> a
    assert first.tolist() == pytest.approx([a * (1 - 0.5 * math.tanh(2.0)), a], rel=1e-12)
    # the second: A = -a, c = 0.5 -> -a (1 + 0.5 tanh 1)
    assert second.tolist() == pytest.approx([-a * (1 + 0.5 * math.tanh(1.0))], rel=1e-12)
    # group s2 has one rollout: A = 0 whatever c
    assert third.tolist() == [0.0]
    # with the defaults (gamma 0.5, l_adv 0.2) the first turn would be a (1 - 0.2 tanh 0.5) = 0.9076
    assert first[0] == pytest.approx(0.517986, abs=1e-6)


def test_the_env_gets_the_configs_reward_settings():
    config = build_config("cpu-strategy", rho=0.3, eta_flat=0.5, alpha=2.0, beta=0.5, reward_weights=(0.1, 0.6, 0.3), max_user_turns=9)
    kwargs = env_kwargs(config)
    assert (kwargs["rho"], kwargs["eta_flat"], kwargs["alpha"], kwargs["beta"], kwargs["max_user_turns"]) == (0.3, 0.5, 2.0, 0.5, 9)
    assert kwargs["reward_weights"] == [0.1, 0.6, 0.3]
