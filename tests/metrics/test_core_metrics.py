"""Scenario-independent metrics (``dialogue_gym.metrics.core``): sample statistics, the Wilson interval
at its clamps and bounds, input checks, and backend failures counted apart."""

import math
import warnings
from statistics import NormalDist

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics import core
from dialogue_gym.types import Outcome, Trajectory

Z95 = NormalDist().inv_cdf(0.975)


def episodes(*outcomes):
    return [Trajectory("SEAD-Outbound-v0", seed, {"state": [2, 1, 3]}, [], outcome) for seed, outcome in enumerate(outcomes)]


def test_mean_std_uses_the_sample_std_from_two_values():
    assert core.mean_std([1.0, 3.0]) == (2.0, pytest.approx(math.sqrt(2)), 2)


def test_mean_std_of_one_value_has_no_std_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ddof=1 std of one value warns "Degrees of freedom <= 0"
        mean, std, n = core.mean_std([3.0])
    assert (mean, n) == (3.0, 1) and math.isnan(std)


@pytest.mark.parametrize("bad, name", [("abc", "str"), (set(), "set"), (iter(episodes(Outcome.SUCCESS)), "list_iterator")])
def test_trajectories_must_be_a_sequence(bad, name):
    with pytest.raises(ConfigError, match=rf"^Expected a sequence of Trajectory, got {name}\.$"):
        core.cr(bad)


def test_wilson_interval_is_clamped_to_the_unit_interval():
    # All 9 successes: lower bound n / (n + z^2); the upper bound is 1 in exact arithmetic, and
    # 1 + 1 ulp in floating point for n = 9 at 95% -- clamped back to exactly 1.
    low, high = core.cr_interval(episodes(*[Outcome.SUCCESS] * 9))
    assert low == pytest.approx(9 / (9 + Z95**2)) and high == 1.0
    # All 21 failures: the lower bound would be -1 ulp; clamped to exactly 0. Upper: z^2 / (n + z^2).
    low, high = core.cr_interval(episodes(*[Outcome.HANGUP] * 21))
    assert low == 0.0 and high == pytest.approx(Z95**2 / (21 + Z95**2))


@pytest.mark.parametrize("n", [1, 2, 3, 9, 21, 40, 97, 240, 1200])
def test_wilson_bound_is_exactly_0_with_no_success_and_exactly_1_with_no_failure(n):
    # In floating point the two terms differ by an ulp either way: 40 failures gave a lower bound of 6.9e-18.
    assert core.cr_interval(episodes(*[Outcome.HANGUP] * n))[0] == 0.0
    assert core.cr_interval(episodes(*[Outcome.SUCCESS] * n))[1] == 1.0
    # one success or one failure: the bound is off the edge
    assert core.cr_interval(episodes(Outcome.SUCCESS, *[Outcome.HANGUP] * n))[0] > 0.0
    assert core.cr_interval(episodes(Outcome.HANGUP, *[Outcome.SUCCESS] * n))[1] < 1.0


@pytest.mark.parametrize("confidence", [0, 0.0, 1, 1.0, 1.5, -0.5])
def test_wilson_confidence_must_lie_strictly_between_0_and_1(confidence):
    with pytest.raises(ConfigError, match=rf"confidence must be in \(0, 1\), got {confidence!r}\."):
        core.cr_interval(episodes(Outcome.SUCCESS), confidence=confidence)


def test_wilson_interval_at_90_percent_by_hand():
    # n = 4, p = 1/4, z = 1.644854, z^2 = 2.705543: centre (0.25 + z^2/8) / (1 + z^2/4) = 0.588193 / 1.676386
    # = 0.350869; half z sqrt(0.25 * 0.75 / 4 + z^2/64) / (1 + z^2/4) = 1.644854 * 0.298578 / 1.676386 = 0.292962.
    low, high = core.cr_interval(episodes(Outcome.SUCCESS, Outcome.HANGUP, Outcome.TIMEOUT, Outcome.INVALID), 0.9)
    assert low == pytest.approx(0.057907, abs=1e-5) and high == pytest.approx(0.643831, abs=1e-5)


def test_backend_failures_are_counted_apart():
    trajectories = episodes(Outcome.SUCCESS, Outcome.BACKEND_FAILURE, Outcome.HANGUP, Outcome.TIMEOUT)
    assert core.backend_failures(trajectories) == 1 and core.backend_failure_rate(trajectories) == 0.25
    finished, header = core.split_failures(trajectories)
    assert [t.seed for t in finished] == [0, 2, 3]
    assert header == {"episodes": 4, "completed": 3, "backend_failures": 1, "backend_failure_rate": 0.25}
    assert math.isnan(core.backend_failure_rate([])) and core.backend_failures([]) == 0


@pytest.mark.parametrize("k", [True, 1.0, "2"])
def test_pass_hat_k_needs_an_int_k(k):
    with pytest.raises(ConfigError, match=rf"^k must be an int >= 1, got {k!r}\.$"):
        core.pass_hat_k([1], [2], k)


def test_bootstrap_resamples_defaults_and_smallest_sizes():
    rows = core.bootstrap_resamples(5)
    assert rows.shape == (1000, 5) and np.array_equal(rows, core.bootstrap_resamples(5, 1000, seed=0))
    assert set(rows.ravel()) == {0, 1, 2, 3, 4}, "every unit can be drawn, the first one too"
    assert core.bootstrap_resamples(3, 1).shape == (1, 3)
    assert np.array_equal(core.bootstrap_resamples(1, 4), np.zeros((4, 1), dtype=int))


@pytest.mark.parametrize(
    "units, resamples, message",
    [(True, 5, "units must be an int >= 1, got True"), (0, 5, "units must be an int >= 1, got 0"),
     (2.0, 5, "units must be an int >= 1, got 2.0"), (5, True, "resamples must be an int >= 1, got True")],
)
def test_bootstrap_resamples_need_positive_int_sizes(units, resamples, message):
    with pytest.raises(ConfigError, match=rf"^{message}\.$"):
        core.bootstrap_resamples(units, resamples)


def test_resampled_ratios_with_fractional_weights_match_ratio_of_sums():
    # Weights below 1 (e.g. an episode counted at half weight): row [0, 0] is 2 * 0.5 / (2 * 0.25) = 2,
    # row [1, 1] is 0 / 1.5 = 0, row [0, 1] is 0.5 / 1.0 = 0.5.
    numerators, denominators = [0.5, 0.0], [0.25, 0.75]
    rows = np.array([[0, 0], [1, 1], [0, 1]])
    ratios = core.resampled_ratios(numerators, denominators, rows)
    assert list(ratios) == pytest.approx([2.0, 0.0, 0.5])
    assert [core.ratio_of_sums(np.take(numerators, row), np.take(denominators, row)) for row in rows] == pytest.approx(list(ratios))


@pytest.mark.parametrize("confidence", [0, 0.0, 1.0, -0.1])
def test_percentile_interval_confidence_must_lie_strictly_between_0_and_1(confidence):
    with pytest.raises(ConfigError, match=rf"confidence must be in \(0, 1\), got {confidence!r}\."):
        core.percentile_interval([1.0, 2.0], confidence)
