"""Trajectories are written as strict JSON: a non-finite number is an error naming where it is."""

import json
import math

import pytest

from dialogue_gym.errors import ScenarioError
from dialogue_gym.types import Outcome, Trajectory, Turn, finite_number


def trajectory(**changes):
    fields = {
        "scenario": "Toy-v0", "seed": 3, "profile": {"state": [1, 2]},
        "turns": [Turn("agent", "hi", "hi", parsed={"estimate": [0.5, 1.0]})],
        "outcome": Outcome.SUCCESS, "rewards": {"agent": 1.0}, "reward_terms": {"agent/success": 1.0},
    }
    return Trajectory(**{**fields, **changes})


def test_to_json_is_strict_json_that_round_trips():
    text = trajectory().to_json()
    assert "\n" not in text
    assert Trajectory.from_dict(json.loads(text)).to_dict() == trajectory().to_dict()


@pytest.mark.parametrize(
    "changes, where",
    [
        ({"rewards": {"agent": math.nan}}, r"trajectory\['rewards'\]\['agent'\] = nan"),
        ({"reward_terms": {"agent/success": math.inf}}, r"trajectory\['reward_terms'\]\['agent/success'\] = inf"),
        ({"turns": [Turn("agent", "hi", "hi", parsed={"estimate": [0.5, -math.inf]})]},
         r"trajectory\['turns'\]\[0\]\['parsed'\]\['estimate'\]\[1\] = -inf"),
        ({"profile": {"amount": math.nan}}, r"trajectory\['profile'\]\['amount'\] = nan"),
    ],
    ids=["reward", "reward-term", "parsed-field", "profile"],
)
def test_to_json_names_the_non_finite_value_instead_of_writing_bare_nan(changes, where):
    with pytest.raises(ScenarioError, match=rf"{where} of the Toy-v0 trajectory \(seed 3\) is not a finite number"):
        trajectory(**changes).to_json()


@pytest.mark.parametrize("value", [0, -3, 1.5, 10**300])
def test_finite_numbers(value):
    assert finite_number(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400, -(10**400), True, "1", None, [1]])
def test_not_finite_numbers_never_raise(value):
    assert not finite_number(value)
