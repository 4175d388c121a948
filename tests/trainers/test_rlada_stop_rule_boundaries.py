"""RL-ADA's stopping rule at its exact boundaries (SPEC §3: at least 3 matches, win rate >= 0.60 for 2
consecutive matches with the last change <= 0.05, or 8 matches), and the trainer building the rule
from its config field by field."""

from __future__ import annotations

import pytest

from trainers.common import RunDir
from trainers.rlada.arena import TOLERANCE, StoppingRule
from trainers.rlada.config import build_config
from trainers.rlada.train import CoEvolution, new_state

RULE = StoppingRule()


@pytest.mark.parametrize(
    "rates, stop",
    [
        ([0.6, 0.6], False),  # 2 matches: below the minimum of 3 although everything else holds
        ([0.6, 0.6, 0.6], True),  # 3 matches: exactly the threshold twice, change 0
        ([0.0, 0.6, 0.65], True),  # change exactly 0.05 (0.65 - 0.6 rounds to 0.05000000000000004)
        ([0.0, 0.65, 0.6], True),  # the change is an absolute value
        ([0.0, 0.6, 0.66], False),  # change 0.06
        ([0.0, 0.59, 0.6], False),  # the earlier of the two matches is below 0.60
        ([0.0, 0.6, 0.59], False),  # the last one is
        ([0.7, 0.1, 0.6, 0.6], True),  # only the last 2 matches count
        ([0.6, 0.6, 0.1, 0.6], False),
    ],
)
def test_threshold_epsilon_and_minimum_at_the_boundary(rates, stop):
    assert RULE.decide(rates)[0] is stop, f"SPEC §3 stopping rule on {rates}"


def test_eight_matches_stop_whatever_the_win_rate():
    assert RULE.decide([0.1] * 7)[0] is False, "SPEC §3: 7 matches below the threshold go on"
    assert RULE.decide([0.1] * 8) == (True, "reached max_matches=8"), "SPEC §3: or 8 matches"


def test_the_trainer_builds_the_rule_from_its_config(tmp_path):
    # distinct values for every field, so a swapped positional argument shows
    config = build_config("cpu-strategy", min_matches=4, max_matches=9, win_threshold=0.7, patience=3, stability_epsilon=0.02)
    with RunDir.create(tmp_path / "run", config.to_dict()) as run:
        rule = CoEvolution(config, run, new_state(), resumed=False).rule
    assert (rule.min_matches, rule.max_matches, rule.threshold, rule.patience, rule.epsilon) == (4, 9, 0.7, 3, 0.02)
    default = build_config("cpu-strategy")
    with RunDir.create(tmp_path / "default", default.to_dict()) as run:
        assert CoEvolution(default, run, new_state(), resumed=False).rule == StoppingRule(), "SPEC §3: the trainer's default rule"


def test_the_rounding_tolerance_is_inclusive():
    # the rule gives way by exactly TOLERANCE (1e-9): a win rate of threshold - TOLERANCE still counts as
    # reached (>=), one a little lower does not
    rule = StoppingRule(min_matches=1, patience=1)
    assert TOLERANCE == 1e-9
    assert rule.decide([0.6 - TOLERANCE])[0] is True
    assert rule.decide([0.6 - 2 * TOLERANCE])[0] is False


def test_a_change_of_exactly_epsilon_plus_tolerance_still_counts():
    # threshold 0 so only the change decides; |0.05 + 1e-9 - 0| is the very float epsilon + TOLERANCE
    rule = StoppingRule(min_matches=1, patience=2, threshold=0.0)
    assert rule.decide([0.0, 0.05 + TOLERANCE])[0] is True
    assert rule.decide([0.0, 0.05 + 3 * TOLERANCE])[0] is False


def test_the_change_is_measured_from_the_second_match_on():
    # patience 1: with two matches the last change (0.7) already counts; with one there is none
    rule = StoppingRule(min_matches=1, patience=1)
    assert rule.decide([0.9]) == (True, "win rate >= 0.6 for 1 matches, last change 0.000 <= 0.05")
    assert rule.decide([0.2, 0.9]) == (False, "last change 0.700 > epsilon 0.05")


def test_the_message_shows_a_rate_at_the_threshold_with_three_decimals():
    assert RULE.decide([0.2, 0.6, 0.55]) == (False, "win rate below 0.6 in the last 2 matches: [0.600, 0.550]")


def test_the_rule_is_immutable():
    with pytest.raises(AttributeError):
        RULE.threshold = 0.5
