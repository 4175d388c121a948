"""Edges of TRACER's reward terms that the main tests left open (found by tools/mutation.py): which
level R_final compares, the bounds of eta_flat, alpha and beta, the type checks of l_adv and gamma, a
zero R_final in the weighted sum, the reward record being immutable, and an unreadable level never
matching a target in the TRL intent reward."""

from __future__ import annotations

import dataclasses
import math

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.rewards import final_reward, flatness, modulate_advantage, tracer_reward, trajectory_reward, trl_intent_reward


def test_r_final_compares_the_last_levels_of_both_sequences():
    # the references' second levels (4, 3) differ from their last ones (5, 2): only the last counts
    assert final_reward([1, 2, 5], [1, 4, 5]) == 1.0
    assert final_reward([2, 4, 2], [1, 4, 5]) == 0.0
    assert final_reward([5, 3, 2], [1, 3, 2, 2]) == 1.0


@pytest.mark.parametrize("eta_flat, allowed", [(1.0, True), (1e-9, True), (1.01, False), (0.0, False), (-0.5, False), (True, False)])
def test_eta_flat_is_a_number_in_the_half_open_unit_interval(eta_flat, allowed):
    if allowed:
        assert flatness([3, 3], [1, 5], eta_flat=eta_flat) == eta_flat
    else:
        with pytest.raises(ConfigError, match=r"eta_flat must be in \(0, 1\]"):
            flatness([3, 3], [1, 5], eta_flat=eta_flat)


def test_alpha_and_beta_may_be_zero_but_not_negative():
    # [2, 3] vs [1, 5]: D = |2-1| + |3-5| = 3 on the diagonal; alpha = 0 -> exp(0) = 1 whatever D
    assert trajectory_reward([2, 3], [1, 5], alpha=0.0) == 1.0
    assert trajectory_reward([2, 3, 5], [1, 5], beta=0.0) == pytest.approx(math.exp(-3 / 2))
    for alpha, beta in ((-0.1, 1.0), (1.0, -0.1)):
        with pytest.raises(ConfigError, match="alpha and beta must be >= 0"):
            trajectory_reward([2, 3], [1, 5], alpha=alpha, beta=beta)


def test_a_missed_final_level_contributes_nothing():
    # [2, 3] vs [1, 5]: R_fmt = 1/2, R_final = 0, D = 3, no length gap, T = 2 -> R_traj = exp(-3/2)
    reward = tracer_reward([2, 3], [1, 5], [True, False])
    assert reward.r_final == 0.0
    assert reward.weighted() == pytest.approx({"format": 0.2 * 0.5, "final": 0.0, "trajectory": 0.3 * math.exp(-1.5)})
    assert reward.total == pytest.approx(0.1 + 0.3 * math.exp(-1.5))


def test_the_reward_record_is_immutable():
    reward = tracer_reward([2, 3], [1, 5], [True, True])
    with pytest.raises(dataclasses.FrozenInstanceError):
        reward.r_final = 1.0


@pytest.mark.parametrize("keyword", ["l_adv", "gamma"])
def test_modulation_settings_must_be_numbers_not_bools(keyword):
    with pytest.raises(ConfigError, match=keyword):
        modulate_advantage(1.0, [0.5], **{keyword: True})


def test_an_unreadable_intent_level_never_scores():
    # the parser's fallback for an unreadable level must match no target level 0-5
    assert trl_intent_reward(["just text", "<intent_level>9</intent_level>"], intent_level=[1, 1]) == [0.0, 0.0]
    assert trl_intent_reward(["just text"] * 6, intent_level=list(range(6))) == [0.0] * 6


def test_l_adv_takes_both_ends_of_the_unit_interval():
    # l_adv = 0: the plain advantage; l_adv = 1, gamma = 0.5, c = 1: 2 (1 - tanh 0.5) = 1.0757657
    assert modulate_advantage(2.0, [1.0], l_adv=0.0).tolist() == [2.0]
    assert modulate_advantage(2.0, [1.0], l_adv=1.0).tolist() == pytest.approx([2.0 * (1 - math.tanh(0.5))], rel=1e-12)
    assert modulate_advantage(-2.0, [1.0], l_adv=1.0).tolist() == pytest.approx([-2.0 * (1 + math.tanh(0.5))], rel=1e-12)
    for l_adv in (-0.01, 1.01):
        with pytest.raises(ConfigError, match=r"l_adv must be in \[0, 1\]"):
            modulate_advantage(2.0, [1.0], l_adv=l_adv)
