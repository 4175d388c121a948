"""pass^k, ratios of sums and the percentile bootstrap (dialogue_gym.metrics.core), against hand-computed numbers."""

import math

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics.core import (
    bootstrap_resamples,
    pass_hat_k,
    pass_hat_k_per_start,
    percentile_interval,
    ratio_of_sums,
    resampled_ratios,
)

# Four starts, three trials each: 3, 1, 0 and 2 successes.
SUCCESSES, TRIALS = [3, 1, 0, 2], [3, 3, 3, 3]


def test_pass_hat_k_by_hand():
    assert pass_hat_k(SUCCESSES, TRIALS, 1) == pytest.approx((1 + 1 / 3 + 0 + 2 / 3) / 4)  # the success rate, 0.5
    # C(3,2)/C(3,2) = 1, C(1,2) = 0, C(0,2) = 0, C(2,2)/C(3,2) = 1/3
    assert pass_hat_k(SUCCESSES, TRIALS, 2) == pytest.approx((1 + 0 + 0 + 1 / 3) / 4)
    assert pass_hat_k(SUCCESSES, TRIALS, 3) == pytest.approx(0.25)  # n == k: the starts whose every trial passed
    # More trials than k: 2 successes of 4, C(2,2)/C(4,2) = 1/6; 3 of 4: C(3,2)/C(4,2) = 3/6.
    assert list(pass_hat_k_per_start([2, 3], [4, 4], 2)) == pytest.approx([1 / 6, 1 / 2])
    assert math.isnan(pass_hat_k([], [], 2))


def test_pass_hat_k_falls_with_k_for_an_inconsistent_agent_and_not_for_a_consistent_one():
    """The point of pass^k: an agent right half the time on every start and one always right on half
    the starts have the same pass^1, but only the second keeps it at k = 4."""
    flaky, consistent = ([2] * 4, [4] * 4), ([4, 4, 0, 0], [4] * 4)
    assert pass_hat_k(*flaky, 1) == pass_hat_k(*consistent, 1) == 0.5
    assert pass_hat_k(*flaky, 4) == 0.0 and pass_hat_k(*consistent, 4) == 0.5


@pytest.mark.parametrize(
    "successes, trials, k, message",
    [
        ([1], [1], 2, r"pass\^2 needs at least 2 trials of every start; start 0 has 1\. Play more repeats\."),
        ([4], [3], 1, r"start 0: successes must be in 0\.\.trials, got 4 of 3"),
        ([1], [1], 0, r"k must be an int >= 1, got 0"),
        ([1, 1], [1], 1, r"one entry per start, got 2 and 1"),
    ],
)
def test_pass_hat_k_errors_name_the_value(successes, trials, k, message):
    with pytest.raises(ConfigError, match=message):
        pass_hat_k(successes, trials, k)


def test_ratio_of_sums_and_its_resamples_by_hand():
    numerators, denominators = [1.0, 0.0, 4.0], [1.0, 1.0, 2.0]
    assert ratio_of_sums(numerators, denominators) == pytest.approx(5 / 4)
    assert math.isnan(ratio_of_sums([1.0], [0.0]))
    rows = np.array([[0, 0, 2], [1, 1, 1], [2, 2, 2]])
    # (1 + 1 + 4) / (1 + 1 + 2) = 1.5; 0 / 3 = 0; 12 / 6 = 2
    assert list(resampled_ratios(numerators, denominators, rows)) == pytest.approx([1.5, 0.0, 2.0])
    left_out = resampled_ratios([1.0, 0.0], [1.0, 0.0], np.array([[1, 1], [0, 1]]))
    assert math.isnan(left_out[0]) and left_out[1] == 1.0


def test_percentile_interval_by_hand():
    assert percentile_interval(np.arange(101.0)) == pytest.approx((2.5, 97.5))
    assert percentile_interval([math.nan, 1.0, 3.0], 0.5) == pytest.approx((1.5, 2.5))
    assert all(math.isnan(bound) for bound in percentile_interval([math.nan]))
    with pytest.raises(ConfigError, match="confidence must be in"):
        percentile_interval([1.0], 1.0)


def test_bootstrap_resamples_are_fixed_by_the_seed():
    rows = bootstrap_resamples(7, 50, seed=3)
    assert rows.shape == (50, 7) and rows.min() >= 0 and rows.max() <= 6
    assert np.array_equal(rows, bootstrap_resamples(7, 50, seed=3)) and not np.array_equal(rows, bootstrap_resamples(7, 50, seed=4))
    with pytest.raises(ConfigError, match="resamples must be an int >= 1, got 0"):
        bootstrap_resamples(7, 0)


def test_the_95_percent_interval_covers_the_true_rate_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    rows = bootstrap_resamples(200, 500, seed=1)
    covered = 0
    for _ in range(200):
        outcomes = (rng.random(200) < 0.3).astype(float)
        low, high = percentile_interval(resampled_ratios(outcomes, np.ones(200), rows))
        covered += low <= 0.3 <= high
    assert 0.89 <= covered / 200 <= 0.99
