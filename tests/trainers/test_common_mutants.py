"""The trainers' shared helpers pinned value by value (issue 43 item 6): the sweep interval and its
summary (stats), and the fair scripted baselines a trained policy is reported beside (baselines)."""

from __future__ import annotations

import math

import pytest

from trainers.common.baselines import best_baseline, fair_baselines
from trainers.common.stats import shown, summary, t_interval


def test_the_interval_takes_its_confidence_level():
    # [1, 2, 3]: mean 2, sample sd 1, t(0.95, df 2) = 2.919986 (tables) -> half width 2.919986 / sqrt(3) = 1.685854
    low, high = t_interval([1.0, 2.0, 3.0], confidence=0.90)
    assert (low, high) == pytest.approx((2 - 1.685854, 2 + 1.685854), abs=1e-6)


def test_summary_reports_the_95_percent_interval_and_its_text_takes_the_decimals():
    # [2, 4, 6, 8]: mean 5, sample sd sqrt(20 / 3) = 2.581989, t(0.975, df 3) = 3.182446 -> half width
    # 3.182446 * 2.581989 / sqrt(4) = 4.108521
    entry = summary([2.0, 4.0, 6.0, 8.0])
    assert (entry["low"], entry["high"]) == pytest.approx((5 - 4.108521, 5 + 4.108521), abs=1e-5)
    assert shown(entry, decimals=1) == "5.0 [0.9, 9.1]"
    assert shown(summary([0.25]), decimals=1) == "0.2 [n/a]"  # 0.25 rounds half to even


def test_summary_keeps_its_own_copy_of_the_values():
    values = [0.5, 0.7]
    entry = summary(values)
    values.append(9.0)  # a sweep that goes on adding seeds must not change a summary it already saved
    assert entry["per_seed"] == [0.5, 0.7]
    assert summary((0.5, 0.7))["per_seed"] == [0.5, 0.7]  # a list (JSON's array) whatever sequence came in
    assert not math.isnan(entry["low"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # RLADA-Banking-v0 is out of date (v1 exists)
@pytest.mark.parametrize(
    "env_id, expected",
    [
        ("SEAD-Outbound-v0", ["sop", "random", "adaptive"]),  # the oracle reads the privileged channel: an upper bound
        ("RLADA-Banking-v0", ["keyword", "always_escalate", "random"]),
        ("TRACER-UserSim-v0", ["scripted", "random", "flat", "eager", "reluctant"]),  # registry order, not alphabetical
    ],
)
def test_fair_baselines_are_the_registrys_unprivileged_agents_in_its_order(env_id, expected):
    baselines = fair_baselines(env_id)
    assert list(baselines) == expected
    assert all(not getattr(policy, "privileged", False) for policy in baselines.values())


def test_the_best_baseline_follows_the_key_and_reports_its_score():
    scores = {"sop": 0.3, "random": 0.5, "adaptive": 0.5}
    # higher is better: a tie goes to the first in registry order; the score is the CR, not the key (-CR)
    assert best_baseline(scores, lambda cr: -cr) == ("random", 0.5)
    # closest to a target: 0.3 is 0.05 from 0.35, 0.5 is 0.15 away
    assert best_baseline(scores, lambda value: abs(value - 0.35)) == ("sop", 0.3)
