import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics import dtw
from dialogue_gym.rewards import (
    final_reward,
    flatness,
    format_reward,
    group_standardized_advantages,
    modulate_advantage,
    tracer_reward,
    trajectory_reward,
    trl_format_reward,
    trl_intent_reward,
    turn_advantages,
)
from dialogue_gym.scenarios.tracer.parsing import render_user_output

levels = st.lists(st.integers(0, 5), min_size=1, max_size=15)
advantage = st.floats(-10, 10, allow_nan=False, allow_subnormal=False)  # subnormals underflow to 0 when scaled
suffixes = st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=15)


def test_terms_by_hand():
    assert format_reward([True, False, True, True]) == 0.75
    assert final_reward([2, 3, 5], [1, 5]) == 1.0 and final_reward([2, 3, 4], [1, 5]) == 0.0
    # D([2, 3, 5], [1, 5]) = |2-1| + |3-1| + 0 = 3 (or via (3,5): 1 + 2 + 0); |T* - T| = 1; T = 2
    assert trajectory_reward([2, 3, 5], [1, 5]) == pytest.approx(math.exp(-(3 + 1) / 2))
    assert trajectory_reward([2, 3, 5], [1, 5], alpha=0.5, beta=0.0) == pytest.approx(math.exp(-0.5 * 3 / 2))
    assert trajectory_reward([1, 5], [1, 5]) == 1.0


def test_eta_discounts_only_flat_simulations_of_varying_references():
    assert flatness([3, 3, 3], [1, 3, 5], eta_flat=0.2) == 0.2
    assert flatness([3, 3, 3], [3, 3], eta_flat=0.2) == 1.0
    assert flatness([3, 4], [1, 3, 5], eta_flat=0.2) == 1.0
    assert trajectory_reward([3, 3, 3], [3, 4, 3]) == pytest.approx(math.exp(-1 / 3) * 0.2)
    with pytest.raises(ConfigError, match=r"eta_flat must be in \(0, 1\], got 0"):
        flatness([1], [1], eta_flat=0)


def test_weighted_sum_and_its_terms():
    reward = tracer_reward([2, 3, 5], [1, 5], [True, True, False])
    assert reward.r_fmt == pytest.approx(2 / 3) and reward.r_final == 1.0 and reward.dtw_cost == 3.0
    assert reward.total == pytest.approx(0.2 * 2 / 3 + 0.5 * 1.0 + 0.3 * math.exp(-2))
    assert sum(reward.weighted().values()) == pytest.approx(reward.total)
    assert reward.to_dict()["eta"] == 1.0
    with pytest.raises(ConfigError, match="format_ok has 2 flags for 3 simulated turns"):
        tracer_reward([2, 3, 5], [1, 5], [True, True])


def test_a_flat_session_of_a_varying_reference_is_discounted_in_the_record():
    # D([3, 3, 3], [3, 4, 3]) = 1, no length gap, T = 3: R_traj = exp(-1/3) * 0.2
    reward = tracer_reward([3, 3, 3], [3, 4, 3], [True] * 3, eta_flat=0.2)
    assert reward.eta == 0.2 and reward.dtw_cost == 1.0 and reward.r_final == 1.0
    assert reward.r_traj == pytest.approx(math.exp(-1 / 3) * 0.2)
    with pytest.raises(ConfigError, match=r"eta_flat must be in \(0, 1\], got 1.5"):
        tracer_reward([3], [3], [True], eta_flat=1.5)
    with pytest.raises(ConfigError, match="alpha and beta must be >= 0, got alpha=1.0, beta=-1"):
        tracer_reward([3], [3], [True], beta=-1)


@settings(max_examples=200, deadline=None)
@given(levels, levels, st.floats(0.01, 1.0), st.floats(0, 3), st.floats(0, 3))
def test_the_reward_record_holds_exactly_the_terms_of_the_term_functions(simulated, reference, eta_flat, alpha, beta):
    flags = [i % 3 != 0 for i in range(len(simulated))]
    reward = tracer_reward(simulated, reference, flags, alpha=alpha, beta=beta, eta_flat=eta_flat)
    assert reward.r_fmt == format_reward(flags) and reward.r_final == final_reward(simulated, reference)
    assert reward.r_traj == trajectory_reward(simulated, reference, alpha, beta, eta_flat)
    assert reward.eta == flatness(simulated, reference, eta_flat) and reward.dtw_cost == dtw(simulated, reference)


@settings(max_examples=200, deadline=None)
@given(levels, levels)
def test_trajectory_reward_is_in_unit_interval_and_one_only_without_cost_or_length_gap(simulated, reference):
    value = trajectory_reward(simulated, reference)
    assert 0.0 < value <= 1.0
    assert (value == 1.0) == (dtw(simulated, reference) == 0 and len(simulated) == len(reference))
    if simulated == reference:
        assert value == 1.0


@settings(max_examples=300, deadline=None)
@given(advantage, suffixes, st.floats(0, 1), st.floats(0.01, 5))
def test_modulation_keeps_the_sign_and_bounds_the_change(a, c, l_adv, gamma):
    modulated = modulate_advantage(a, c, l_adv, gamma)
    assert modulated.shape == (len(c),)
    assert np.all(modulated * a >= 0), "the sign never flips"
    if l_adv < 1:
        assert np.all(np.sign(modulated) == np.sign(a))
    if a > 0:
        assert np.all(modulated <= a + 1e-12) and np.all(modulated >= (1 - l_adv) * a - 1e-12)
    if a < 0:
        assert np.all(modulated <= a + 1e-12) and np.all(modulated >= (1 + l_adv) * a - 1e-12)
    assert np.allclose(modulated, a - l_adv * abs(a) * np.tanh(gamma * np.array(c)))


@settings(max_examples=100, deadline=None)
@given(advantage, suffixes, st.floats(0.01, 5))
def test_zero_strength_recovers_the_plain_advantage(a, c, gamma):
    assert np.all(modulate_advantage(a, c, 0.0, gamma) == a)


def test_larger_deviation_weakens_reinforcement_and_strengthens_suppression():
    positive = modulate_advantage(1.0, [0.0, 1.0, 4.0])
    negative = modulate_advantage(-1.0, [0.0, 1.0, 4.0])
    assert positive[0] == 1.0 and positive[0] > positive[1] > positive[2] > 0.8
    assert negative[0] == -1.0 and negative[0] > negative[1] > negative[2] > -1.2


def test_turn_advantages_standardise_within_groups_then_modulate():
    rewards = [1.0, 0.0, 0.5, 0.5]
    groups = ["a", "a", "b", "b"]
    suffix = [[0.0, 2.0], [1.0], [0.0], [3.0, 0.0]]
    result = turn_advantages(rewards, suffix, groups, l_adv=0.2, gamma=0.5)
    plain = group_standardized_advantages(rewards, groups)
    assert [r.tolist() for r in turn_advantages(rewards, suffix, groups, l_adv=0.0)] == [[a] * len(c) for a, c in zip(plain, suffix)]
    assert result[0][0] == pytest.approx(plain[0]) and result[0][1] < plain[0]
    assert result[1][0] < plain[1] < 0 and result[2].tolist() == [0.0] and result[3].tolist() == [0.0, 0.0]
    with pytest.raises(ConfigError, match="suffixes has 1 entries for 4 rewards"):
        turn_advantages(rewards, suffix[:1], groups)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: modulate_advantage(1.0, [0.0], l_adv=1.5), r"l_adv must be in \[0, 1\] \(larger values could flip"),
        (lambda: modulate_advantage(1.0, [0.0], gamma=0), "gamma must be a positive number, got 0"),
        (lambda: modulate_advantage(1.0, [-1.0]), "suffix must be a 1-D sequence of finite deviations >= 0"),
        (lambda: format_reward([]), "format_ok must be a non-empty sequence of bools"),
        (lambda: final_reward([], [1]), "simulated must be a non-empty 1-D sequence of intent levels"),
        (lambda: trajectory_reward([1], [1], alpha=-1), "alpha and beta must be >= 0"),
    ],
)
def test_errors(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: trajectory_reward([1, 2], [1, 2], alpha=-1.0, cost="x"), "alpha and beta must be >= 0"),
        (lambda: trajectory_reward([1, 2], [1, 2], eta_flat=0, cost=[1, 2]), r"eta_flat must be in \(0, 1\]"),
        (lambda: tracer_reward([math.nan], [1], [True], cost="x"), "simulated must be a non-empty 1-D sequence"),
        (lambda: tracer_reward([1], [], [True], cost="x"), "reference must be a non-empty 1-D sequence"),
        (lambda: tracer_reward([], [1], [], cost=3), "format_ok must be a non-empty sequence of bools"),
        (lambda: tracer_reward([1], [1], [True], alpha=-1.0, cost="x"), "alpha and beta must be >= 0"),
    ],
)
def test_arguments_are_checked_before_the_cost_is_read_or_computed(call, message, monkeypatch):
    """A bad setting is named before a bad ``cost`` is converted, and before a DTW of long sequences
    runs (which would take seconds first and then raise anyway)."""
    import dialogue_gym.rewards.tracer as tracer_rewards

    def no_dtw(*args):
        raise AssertionError("the DTW ran before the arguments were checked")

    monkeypatch.setattr(tracer_rewards, "dtw", no_dtw)
    with pytest.raises(ConfigError, match=message):
        call()
    with pytest.raises(ConfigError, match="alpha and beta must be >= 0"):
        trajectory_reward([0, 1] * 10_000, [1, 0] * 10_000, alpha=-1.0)


def test_the_paper_defaults_by_hand():
    """eta_flat 0.2, l_adv 0.2 and gamma 0.5 (paper 002, SPEC section 2) are the defaults of every function."""
    assert flatness([3, 3, 3], [1, 3, 5]) == 0.2
    assert tracer_reward([3, 3, 3], [3, 4, 3], [True] * 3).eta == 0.2
    # A = 1, c = 2: 1 - 0.2 tanh(0.5 * 2) = 0.8476811...
    assert modulate_advantage(1.0, [2.0]) == pytest.approx([1 - 0.2 * math.tanh(1.0)])
    assert 1 - 0.2 * math.tanh(1.0) == pytest.approx(0.8476811)
    rewards, suffixes = [1.0, 0.0], [[2.0], [2.0]]
    standardized = group_standardized_advantages(rewards)
    expected = [modulate_advantage(a, c, l_adv=0.2, gamma=0.5) for a, c in zip(standardized, suffixes)]
    assert [list(turns) for turns in turn_advantages(rewards, suffixes)] == [list(turns) for turns in expected]


def test_a_bool_is_no_setting():
    """True is an int to Python, but no eta_flat, l_adv or gamma: each is refused by name."""
    with pytest.raises(ConfigError, match=r"eta_flat must be in \(0, 1\], got True"):
        flatness([1], [1], eta_flat=True)
    with pytest.raises(ConfigError, match="l_adv must be in"):
        modulate_advantage(1.0, [0.0], l_adv=True)
    with pytest.raises(ConfigError, match="gamma must be a positive number, got True"):
        modulate_advantage(1.0, [0.0], gamma=True)


def test_the_reward_record_is_frozen_and_weighs_each_term_by_its_own_weight():
    import dataclasses

    reward = tracer_reward([2, 3, 4], [1, 5], [True, True, False])
    with pytest.raises(dataclasses.FrozenInstanceError):
        reward.r_fmt = 1.0
    # r_final = 0 (4 != 5): its weighted term is 0.5 * 0 = 0
    assert reward.r_final == 0.0 and reward.weighted()["final"] == 0.0
    assert reward.weighted()["trajectory"] == pytest.approx(0.3 * reward.r_traj) and reward.r_traj < 1.0


def test_trl_reward_functions_take_standard_and_conversational_completions():
    good = render_user_output("Where is your store?", 4, "ready")
    completions = [good, "just text", [{"role": "assistant", "content": good}]]
    assert trl_format_reward(completions) == [1.0, 0.0, 1.0]
    assert trl_intent_reward(completions, intent_level=[4, 2, 3]) == [1.0, 0.0, 0.0]
    assert trl_intent_reward(["just text"] * 6, intent_level=[0, 1, 2, 3, 4, 5]) == [0.0] * 6  # unreadable: no level
    with pytest.raises(ConfigError, match="intent_level has 1 values for 3 completions"):
        trl_intent_reward(completions, intent_level=[4])
    with pytest.raises(ConfigError, match="a completion must be a str or a list of chat messages"):
        trl_format_reward([42])
