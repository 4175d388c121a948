"""The Profile Controller's edges that the main tests left open (found by ``tools/mutation.py
curriculum``): the exact bounds of every setting, what ``update`` skips, unseen states under
smoothing, normalisation when few states are left, the within-batch n_max count, the entropy by
hand, how many behaviors and persona traits a profile gets, and the rule-file checks."""

from __future__ import annotations

import json
import math

import pytest

from dialogue_gym.curriculum import ProfileController, load_rules
from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.scenarios.sead.data import DATA_DIR
from dialogue_gym.scenarios.sead.state import ALL_STATES, state_index
from dialogue_gym.types import Outcome, Trajectory

STATE = (2, 2, 2)


def played(state, outcomes):
    return [Trajectory("SEAD-Outbound-v0", 0, {"state": list(state), "behaviors": ["CC1"]}, [], o) for o in outcomes]


def only_open(controller, state, n_max):
    """Cap every state but ``state`` (as if ``n_max`` dialogues had started from each)."""
    controller.counts[:] = n_max
    controller.counts[state_index(state)] = 0


@pytest.mark.parametrize(
    "kwargs",
    [{"target": 0.0}, {"target": 1.0}, {"band": (0.0, 1.0)}, {"band": (0.5, 0.5)}, {"batch_size": 1}, {"n_max": 1}, {"prior": (0.5, 2.0)}],
)
def test_settings_at_their_bounds_are_accepted(kwargs):
    ProfileController(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": True}, "batch_size must be a positive int, got True"),
        ({"n_max": True}, "n_max must be a positive int, got True"),
        ({"batch_size": 0}, "batch_size must be a positive int, got 0"),
        ({"target": -0.01}, "target must be a completion rate"),
        ({"target": 1.01}, "target must be a completion rate"),
        ({"band": (0.4, 1.5)}, "band must be"),
        ({"band": (-0.1, 0.6)}, "band must be"),
        ({"band": (0.4, 0.5, 0.6)}, "band must be"),
        ({"prior": (0.0, 1.0)}, "prior must be two positive Beta parameters"),
        ({"prior": (1.0, 1.0, 1.0)}, "prior must be two positive Beta parameters"),
    ],
)
def test_settings_past_their_bounds_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ProfileController(**kwargs)


def test_the_default_seed_is_0_and_the_prior_keeps_its_order():
    assert ProfileController().sample() == ProfileController(seed=0).sample()
    controller = ProfileController(smoothing="beta", prior=(2.0, 3.0))
    assert controller.prior == (2.0, 3.0)
    controller.update(played(STATE, [Outcome.SUCCESS]))
    # (successes + a) / (dialogues + a + b) = (1 + 2) / (1 + 5) = 0.5
    assert controller.completion_rates()[state_index(STATE)] == 0.5


def test_update_counts_iterations_and_skips_unfinished_and_failed_backends():
    controller = ProfileController()
    assert controller.iterations == 0
    controller.update(played(STATE, [Outcome.SUCCESS, None, Outcome.BACKEND_FAILURE, Outcome.HANGUP]))
    assert controller.iterations == 1
    assert controller.counts[state_index(STATE)] == 2 and controller.successes[state_index(STATE)] == 1
    controller.update([])
    assert controller.iterations == 2


def test_unseen_states_have_no_rate_even_when_smoothed():
    controller = ProfileController(smoothing="beta")
    controller.update(played(STATE, [Outcome.HANGUP]))
    rates = controller.completion_rates()
    # one dialogue is enough for a rate: (0 + 1) / (1 + 2) = 1/3; an unseen state stays NaN, not the prior's 0.5
    assert rates[state_index(STATE)] == pytest.approx(1 / 3)
    assert math.isnan(rates[state_index((2, 2, 3))])


def test_weights_normalise_however_few_states_are_left():
    controller = ProfileController(n_max=10)
    only_open(controller, STATE, 10)
    controller.counts[state_index(STATE)] = 1
    controller.successes[state_index(STATE)] = 1  # CR 1.0 -> raw weight 0.5, the only one left
    weights = controller.weights()
    assert weights[state_index(STATE)] == 1.0 and weights.sum() == 1.0
    assert controller.sample(1)[0]["state"] == list(STATE), "a single state of weight 0.5 can still be drawn"
    controller.counts[state_index(STATE)] = 10
    assert controller.weights().tolist() == [0.0] * len(ALL_STATES), "no state left: zeros, not NaN"


def test_n_max_counts_the_profiles_planned_in_the_batch_one_each():
    controller = ProfileController(n_max=3)
    only_open(controller, STATE, 3)
    batch = controller.sample(3)
    assert [p["state"] for p in batch] == [list(STATE)] * 3
    with pytest.raises(ScenarioError, match="Every initial state has reached n_max=3"):
        controller.sample(4)


def test_weight_entropy_by_hand():
    controller = ProfileController()
    valid = int((controller.weights() > 0).sum())
    assert controller.weight_entropy() == pytest.approx(math.log(valid))  # uniform over the valid states
    only_open(controller, STATE, controller.n_max)
    assert controller.weight_entropy() == 0.0
    controller.counts[state_index((2, 2, 3))] = 0
    assert controller.weight_entropy() == pytest.approx(math.log(2))


def test_a_batch_mixes_one_two_and_three_behaviors():
    sizes = {len(p["behaviors"]) for p in ProfileController(seed=1).sample()}
    assert sizes == {1, 2, 3}


def test_an_unstructured_persona_is_two_traits():
    traits = [t["text"] for t in json.loads((DATA_DIR / "personas.json").read_text())["traits"]]
    pairs = {f"{a} and {b}" for a in traits for b in traits if a != b}
    personas = [p["persona"] for p in ProfileController(mode="unstructured", seed=2).sample(20)]
    assert all(persona in pairs for persona in personas)


@pytest.mark.parametrize("n", [True, 0, -1, 1.5])
def test_sample_size_must_be_a_positive_int(n):
    with pytest.raises(ConfigError, match="sample\\(n\\) needs a positive int"):
        ProfileController().sample(n)


def test_a_fresh_state_dict_round_trips_with_zero_iterations():
    state = ProfileController(seed=4).state_dict()
    assert state["iterations"] == 0
    assert ProfileController.from_state_dict(state).iterations == 0
    with pytest.raises(ConfigError, match="field 'iterations' must be an int >= 0, got -1"):
        ProfileController(seed=4).load_state_dict({**state, "iterations": -1})


@pytest.mark.parametrize(
    "rules, message",
    [
        ({"state_rules": [{"when": {"mood": [0, 1]}, "reason": "unknown dimension"}]}, r"state_rules\[0\]: needs 'when'"),
        ({"state_rules": [{"when": {"cooperation": [0, 1]}}]}, r"state_rules\[0\]: needs 'when'"),
        ({"behavior_rules": [{"categories": ["Cost_Concerns"]}]}, r"behavior_rules\[0\]: needs 'categories' or 'same_category'"),
        ({"behavior_rules": [{"reason": "matches nothing"}]}, r"behavior_rules\[0\]: needs 'categories' or 'same_category'"),
    ],
)
def test_a_rule_file_without_its_fields_is_refused(tmp_path, rules, message):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    with pytest.raises(ScenarioError, match=message):
        load_rules(path)


def test_the_rule_table_is_immutable():
    rules = load_rules()
    with pytest.raises(AttributeError):
        rules.state_rules = ()
