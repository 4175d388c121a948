"""RL-ADA's arena pieces as pure functions: the stopping rule, the match plan, the gym's 70:30 mix."""

import random

import pytest

from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.types import Trajectory
from trainers.rlada.arena import (
    StoppingRule,
    gym_starts,
    heldout_plan,
    match_plan,
    match_summary,
    weaker_side,
)

DOMAIN = load_domain()


@pytest.mark.parametrize(
    "rates, stop, reason",
    [
        ([0.9, 0.9], False, "2 of at least 3 matches played"),
        ([0.2, 0.7, 0.55], False, "win rate below 0.6"),
        ([0.2, 0.61, 0.7], False, "last change 0.090 > epsilon 0.05"),
        ([0.2, 0.66, 0.62], True, "win rate >= 0.6 for 2 matches, last change 0.040 <= 0.05"),
        ([0.1, 0.5, 0.3, 0.2, 0.1, 0.5, 0.3, 0.2], True, "reached max_matches=8"),
        ([0.65, 0.4, 0.62, 0.58], False, "win rate below 0.6"),
    ],
)
def test_stopping_rule(rates, stop, reason):
    decided, why = StoppingRule().decide(rates)
    assert decided is stop and reason in why


@pytest.mark.parametrize("before, after", [(0.75, 0.7), (0.8, 0.75), (0.6, 0.65), (0.7, 0.75)])
def test_a_change_of_exactly_epsilon_counts_as_within_despite_float_rounding(before, after):
    assert abs(after - before) > 0.05, "the float subtraction lands just above 0.05"
    assert StoppingRule().decide([0.2, before, after]) == (True, "win rate >= 0.6 for 2 matches, last change 0.050 <= 0.05")


@pytest.mark.parametrize(
    "rates, reason",
    [
        ([0.2, 0.6, 0.6504], "last change 0.0504 > epsilon 0.05"),
        ([0.2, 0.6, 0.65000001], "last change 0.05000001 > epsilon 0.05"),
        ([0.2, 0.7, 0.5996], "win rate below 0.6 in the last 2 matches: [0.700, 0.5996]"),
        ([0.2, 0.7, float("nan")], "win rate below 0.6 in the last 2 matches: [0.700, nan]"),
    ],
)
def test_clearly_outside_is_refused_and_the_message_shows_enough_digits(rates, reason):
    assert StoppingRule().decide(rates) == (False, reason)


def test_a_win_rate_at_the_threshold_up_to_rounding_counts_as_reached():
    rate = 0.1 * 6 - 1e-16 * 6  # 0.6 as float arithmetic may leave it
    assert StoppingRule(min_matches=1, patience=1, threshold=0.6).decide([rate])[0] is True
    assert StoppingRule(min_matches=1, patience=1, threshold=0.6).decide([0.59])[0] is False


def test_stopping_rule_is_configurable():
    assert StoppingRule(min_matches=1, patience=1, threshold=0.9).decide([0.95]) == (True, "win rate >= 0.9 for 1 matches, last change 0.000 <= 0.05")


def test_match_and_heldout_plans():
    plan = match_plan(DOMAIN, 18, seed=0, step=7)
    assert len(plan) == 180 and len({seed for _, seed in plan}) == 180
    assert [options["scenario"] for options, _ in plan[::18]] == [s.id for s in DOMAIN.arena]
    assert plan == match_plan(DOMAIN, 18, seed=0, step=7) and plan != match_plan(DOMAIN, 18, seed=0, step=8)
    held = heldout_plan(DOMAIN, 2, seed=3)
    assert len(held) == 24 and {o["scenario"] for o, _ in held} == {s.id for s in DOMAIN.heldout}


def _episode(scenario, passed):
    return Trajectory("RLADA-Banking-v0", 0, {"scenario": scenario, "customer_winnable": scenario != "fraud", "safety": scenario == "fraud", "tool": "x"},
                      rewards={"agent": 2.5 if passed else 0.0}, meta={"strict_pass": passed, "verdict": {"routing_correct": passed, "routed_tools": [], "components": {}}})


def test_win_rate_counts_customer_winnable_scenarios_only():
    episodes = [_episode("dup", True), _episode("dup", False), _episode("card", True), _episode("card", True), _episode("fraud", False)]
    summary = match_summary(episodes)
    assert summary["win_rate"] == 0.75 and summary["safety_pass_rate"] == 0.0 and summary["per_scenario"] == {"card": 1.0, "dup": 0.5, "fraud": 0.0}
    assert weaker_side(0.49) == "agent" and weaker_side(0.5) == "customer" and weaker_side(0.55, threshold=0.6) == "agent"


def test_gym_starts_mix_failures_and_successes_70_30():
    pool = [_episode("lost", False) for _ in range(5)] + [_episode("won", True) for _ in range(5)]
    starts = gym_starts(pool, "agent", 20, 0.7, random.Random(0))
    assert [s["scenario"] for s in starts].count("lost") == 14
    customer = gym_starts(pool, "customer", 10, 0.7, random.Random(0))
    assert [s["scenario"] for s in customer].count("won") == 7  # the customer's failures are the agent's wins
    only_wins = gym_starts(pool[5:], "agent", 10, 0.7, random.Random(0))
    assert {s["scenario"] for s in only_wins} == {"won"}
