import math

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics import sead
from dialogue_gym.metrics.core import (
    cr_interval,
    invalid_action_rate,
    mean_std,
    tokens_per_dialogue,
)
from dialogue_gym.types import Outcome, Trajectory, Turn


def dialogue(initial, steps, outcome, invalid=(), tokens=None):
    """steps: list of (estimate or None, state after the user's reply)."""
    turns, state = [], tuple(initial)
    for index, (estimate, after) in enumerate(steps):
        turns.append(
            Turn("agent", "a b c", "a b c", {"estimate": estimate}, state, "bad" if index in invalid else None, tokens)
        )
        turns.append(Turn("user", "x y", "x y", {"status": 0}, tuple(after)))
        state = tuple(after)
    return Trajectory("SEAD-Outbound-v0", 0, {"state": list(initial), "behaviors": ["CC1"]}, turns, outcome)


@pytest.fixture
def trajectories():
    return [
        dialogue((2, 1, 3), [((2, 1, 3), (3, 2, 3)), ((3, 2, 3), (4, 2, 4))], Outcome.SUCCESS),
        dialogue((0, 0, 0), [((4, 3, 5), (0, 0, 0))], Outcome.HANGUP, invalid=(0,)),
        dialogue((1, 2, 2), [(None, (1, 2, 2)), (None, (2, 3, 2)), ((0, 0, 0), (2, 3, 2))], Outcome.TIMEOUT, tokens=[1, 2]),
    ]


def test_cr_and_wilson_interval(trajectories):
    assert sead.cr(trajectories) == pytest.approx(1 / 3)
    low, high = cr_interval(trajectories)
    # Wilson, n=3, p=1/3, z=1.959964: centre 0.4247, half 0.3630
    assert low == pytest.approx(0.0615, abs=1e-3) and high == pytest.approx(0.7923, abs=1e-3)


def test_att(trajectories):
    mean, std, n = sead.att_success(trajectories)
    assert (mean, n) == (2.0, 1) and math.isnan(std)
    mean, std, n = sead.att_all(trajectories)
    assert (mean, n) == (2.0, 3) and std == pytest.approx(1.0)


def test_upa_answered_by_hand(trajectories):
    # per-turn errors: 0, 0 (perfect); (4/4 + 3/3 + 5/5)/3 = 1; last: (2/4 + 2/3 + 2/5)/3
    last = (2 / 4 + 3 / 3 + 2 / 5) / 3
    expected = 1 - (0 + 0 + 1 + last) / 4
    assert sead.upa_answered(trajectories) == pytest.approx(expected)


def test_improvements_use_sample_std(trajectories):
    assert sead.ci(trajectories).mean == pytest.approx((2 + 0 + 1) / 3)
    assert sead.ei(trajectories).mean == pytest.approx((1 + 0 + 1) / 3)
    assert sead.ti(trajectories).mean == pytest.approx((1 + 0 + 0) / 3)
    assert sead.ci(trajectories).std == pytest.approx(np.std([2, 0, 1], ddof=1))


def test_invalid_rate_and_tokens(trajectories):
    assert invalid_action_rate(trajectories) == pytest.approx(1 / 6)
    # token ids where recorded (2 per agent turn in the third), else whitespace words: agent 3, user 2
    assert tokens_per_dialogue(trajectories) == pytest.approx(((3 + 2) * 2 + (3 + 2) + (2 + 2) * 3) / 3)
    assert tokens_per_dialogue(trajectories, role="user") == pytest.approx((4 + 2 + 6) / 3)


def test_per_state_cr(trajectories):
    rates = sead.per_state_cr(trajectories)
    assert rates.shape == (5, 4, 6)
    assert rates[2, 1, 3] == 1.0 and rates[0, 0, 0] == 0.0 and np.isnan(rates[4, 3, 5])
    assert np.isnan(rates).sum() == 117


def test_empty_inputs_and_type_errors():
    assert math.isnan(sead.cr([])) and math.isnan(sead.upa([]))
    assert mean_std([]).n == 0
    with pytest.raises(ConfigError, match=r"trajectories\[0\] is a dict, not a Trajectory; load JSONL records with Trajectory.from_dict"):
        sead.cr([{"outcome": "success"}])
    with pytest.raises(ConfigError, match="confidence must be in"):
        cr_interval([dialogue((0, 0, 0), [], Outcome.SUCCESS)], confidence=95)


def test_summary_keys(trajectories):
    summary = sead.summary(trajectories)
    assert summary["episodes"] == 3 and summary["cr"] == pytest.approx(1 / 3)
    assert {"upa", "att_all", "att_success", "ei", "ti", "ci", "invalid_action_rate", "tokens_per_dialogue"} <= set(summary)


def test_upa_counts_turns_without_an_estimate_as_maximal_error(trajectories):
    # six agent turns; errors 0, 0, 1, 1 (missing), 1 (missing), (2/4 + 3/3 + 2/5)/3
    last = (2 / 4 + 3 / 3 + 2 / 5) / 3
    assert sead.upa(trajectories) == pytest.approx(1 - (0 + 0 + 1 + 1 + 1 + last) / 6)
    assert sead.upa_answered(trajectories) == pytest.approx(1 - (0 + 0 + 1 + last) / 4)
    assert sead.upa_coverage(trajectories) == pytest.approx(4 / 6)


def test_estimating_only_on_confident_turns_lowers_upa():
    # the user's state moves to (1, 1, 3) after the first turn, which the agent cannot be sure of
    confident = dialogue((2, 1, 3), [((2, 1, 3), (1, 1, 3)), (None, (1, 1, 3))], Outcome.TIMEOUT)
    always = dialogue((2, 1, 3), [((2, 1, 3), (1, 1, 3)), ((2, 1, 3), (1, 1, 3))], Outcome.TIMEOUT)
    assert sead.upa_answered([confident]) > sead.upa_answered([always])
    assert sead.upa([confident]) < sead.upa([always])


def test_upa_constant_is_the_best_constant_guess_in_hindsight(trajectories):
    # true states when the agent spoke: (2,1,3) (3,2,3) (0,0,0) (1,2,2) (1,2,2) (2,3,2);
    # per-dimension medians: c 1.5 -> 1, e 2, tr 2.5 -> 2
    states = np.array([(2, 1, 3), (3, 2, 3), (0, 0, 0), (1, 2, 2), (1, 2, 2), (2, 3, 2)], dtype=float)
    ranges = np.array([4, 3, 5])
    expected = 1 - (np.abs(states - (1, 2, 2)) / ranges).mean(axis=0).sum() / 3
    assert sead.upa_constant(trajectories) == pytest.approx(expected)
    for guess in np.ndindex(5, 4, 6):
        assert 1 - (np.abs(states - guess) / ranges).mean(axis=0).sum() / 3 <= expected + 1e-12


def test_upa_family_is_nan_without_agent_turns():
    silent = [dialogue((2, 1, 3), [], Outcome.HANGUP)]
    for metric in (sead.upa, sead.upa_answered, sead.upa_coverage, sead.upa_constant):
        assert math.isnan(metric([])) and math.isnan(metric(silent)), metric.__name__


def test_final_state_is_the_last_user_turn_that_recorded_one():
    # The stored user reply of the second round lacks its state (e.g. a trajectory loaded from an older
    # JSONL); the final state is then the last recorded user state (3, 2, 4), not that missing one.
    trajectory = dialogue((1, 1, 1), [((1, 1, 1), (3, 2, 4)), ((3, 2, 4), (0, 0, 0))], Outcome.TIMEOUT)
    trajectory.turns[-1] = Turn("user", "x y", "x y", {"status": 0}, None)
    assert (sead.ci([trajectory]).mean, sead.ei([trajectory]).mean, sead.ti([trajectory]).mean) == (2, 1, 3)
    # With no user state at all the dialogue changed nothing.
    never = dialogue((1, 1, 1), [((1, 1, 1), (3, 2, 4))], Outcome.TIMEOUT)
    never.turns[-1] = Turn("user", "x y", "x y", {"status": 0}, None)
    assert sead.ci([never]).mean == 0


def _played(state, outcomes):
    return [dialogue(state, [], outcome) for outcome in outcomes]


def test_per_state_cr_divides_successes_by_dialogues():
    won, lost = Outcome.SUCCESS, Outcome.HANGUP
    trajectories = _played((1, 2, 3), [won, lost]) + _played((4, 3, 5), [won, won, lost, lost, lost])
    successes, counts = sead.per_state_counts(trajectories)
    assert (successes[1, 2, 3], counts[1, 2, 3], successes[4, 3, 5], counts[4, 3, 5]) == (1, 2, 2, 5)
    rates = sead.per_state_cr(trajectories)
    assert rates[1, 2, 3] == 0.5 and rates[4, 3, 5] == pytest.approx(0.4)


def test_state_spread_quantiles_by_hand():
    won, lost = Outcome.SUCCESS, Outcome.HANGUP
    trajectories = (
        _played((0, 0, 0), [lost])                   # 0
        + _played((0, 0, 1), [won, lost, lost])      # 1/3
        + _played((0, 0, 2), [won, lost])            # 1/2
        + _played((0, 0, 3), [lost, won])            # 1/2
        + _played((0, 0, 4), [won, won, lost])       # 2/3
        + _played((0, 0, 5), [won])                  # 1
    )
    # Six rates sorted 0, 1/3, 1/2, 1/2, 2/3, 1; linear interpolation at q * (6 - 1):
    # p10 at 0.5 -> 1/6, median at 2.5 -> 1/2, p90 at 4.5 -> 5/6.
    spread = sead.state_spread(trajectories)
    assert spread == pytest.approx({"min": 0.0, "p10": 1 / 6, "median": 0.5, "p90": 5 / 6, "max": 1.0})
    assert "| scripted" in sead.report({"scripted": trajectories})


def test_state_spread_leaves_backend_failures_out_like_the_summary():
    won = _played((2, 1, 3), [Outcome.SUCCESS])
    failed = _played((2, 1, 3), [Outcome.BACKEND_FAILURE])
    # Counted as a failed dialogue, the failure would put state (2, 1, 3) at 1/2.
    row = sead.report({"scripted": won + failed}).splitlines()[-1]
    assert [cell.strip() for cell in row.strip("|").split("|")] == ["scripted"] + ["1.000"] * 5
    nothing = sead.state_spread([])
    assert list(nothing) == ["min", "p10", "median", "p90", "max"] and all(math.isnan(v) for v in nothing.values())
    assert "| broken" in sead.report({"broken": failed})
