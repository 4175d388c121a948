"""The released-code curriculum (``ProfileController(mode="released")``, SPEC section 1): per-dimension
value weights from the last batch, each branch and boundary checked against weights computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.curriculum import ProfileController
from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.scenarios.sead.state import ALL_STATES, state_index
from dialogue_gym.types import Outcome, Trajectory

S, F = Outcome.SUCCESS, Outcome.HANGUP


def played(state, outcomes):
    return [Trajectory("SEAD-Outbound-v0", 0, {"state": list(state), "behaviors": ["CC1"]}, [], o) for o in outcomes]


def released(**kwargs):
    return ProfileController(mode="released", **kwargs)


def assert_marginals(controller, cooperation, emotion, trust):
    got = controller.value_weights()
    for name, actual, expected in zip(("cooperation", "emotion", "trust"), got, (cooperation, emotion, trust)):
        assert actual == pytest.approx(expected, abs=1e-12), name


def test_cold_start_is_uniform_over_the_values_without_the_extremes():
    controller = released()
    assert_marginals(controller, [0, 1 / 3, 1 / 3, 1 / 3, 0], [0, 1 / 2, 1 / 2, 0], [0, 1 / 4, 1 / 4, 1 / 4, 1 / 4, 0])
    weights = controller.weights()
    drawn = [i for i, s in enumerate(ALL_STATES) if 1 <= s.cooperation <= 3 and 1 <= s.emotion <= 2 and 1 <= s.trust <= 4]
    assert len(drawn) == 24 and np.allclose(weights[drawn], 1 / 24) and weights.sum() == pytest.approx(1.0)


def test_too_hard_favours_the_values_where_the_agent_succeeds():
    controller = released()
    controller.update(played((1, 1, 1), [S, F, F, F]) + played((2, 2, 2), [F] * 6))
    # CR_b = 1/10, d = -0.4: w = 1 + 2 * 0.4 * sr. Value 1: sr 1/4 -> 1.2; value 2: sr 0 -> 1.0; unseen: sr 0.5 -> 1.4.
    # cooperation [0, 1.2, 1.0, 1.4, 0] / 3.6; emotion [0, 1.2, 1.0, 0] / 2.2; trust [0, 1.2, 1.0, 1.4, 1.4, 0] / 5.0
    assert_marginals(controller, [0, 1 / 3, 5 / 18, 7 / 18, 0], [0, 6 / 11, 5 / 11, 0], [0, 0.24, 0.2, 0.28, 0.28, 0])


def test_too_easy_favours_the_values_where_the_agent_fails():
    controller = released()
    controller.update(played((1, 1, 1), [S, S, S, F]) + played((3, 2, 4), [S] * 6))
    # CR_b = 9/10, d = +0.4: w = 1 + 2 * 0.4 * (1 - sr). Value 1: sr 3/4 -> 1.2; sr 1 -> 1.0; unseen -> 1.4.
    assert_marginals(controller, [0, 1 / 3, 7 / 18, 5 / 18, 0], [0, 6 / 11, 5 / 11, 0], [0, 0.24, 0.28, 0.28, 0.2, 0])


def test_the_middle_band_favours_rarely_drawn_values_and_an_unseen_value_counts_as_one():
    controller = released()
    controller.update(played((1, 1, 1), [S, F]) + played((2, 1, 2), [S, F, S, F]))
    # CR_b = 0.5, d = 0: w = 1 + 0.1 / count. count 2 -> 1.05, count 4 -> 1.025, count 6 -> 1 + 1/60, unseen -> 1.1.
    cooperation = np.array([0, 1.05, 1.025, 1.1, 0])
    emotion = np.array([0, 1 + 0.1 / 6, 1.1, 0])
    trust = np.array([0, 1.05, 1.025, 1.1, 1.1, 0])
    assert_marginals(controller, cooperation / cooperation.sum(), emotion / emotion.sum(), trust / trust.sum())


@pytest.mark.parametrize("successes", [4, 6])
def test_a_batch_exactly_0_1_from_the_target_is_in_the_middle_band(successes):
    controller = released()
    controller.update(played((1, 1, 1), [S] * successes + [F] * (10 - successes)))  # CR_b 0.4 or 0.6: |d| = 0.1, not > 0.1
    # middle band: value 1 drawn 10 times -> 1 + 0.1/10 = 1.01; unseen values -> 1.1
    cooperation = np.array([0, 1.01, 1.1, 1.1, 0])
    emotion = np.array([0, 1.01, 1.1, 0])
    assert_marginals(controller, cooperation / cooperation.sum(), emotion / emotion.sum(),
                     np.array([0, 1.01, 1.1, 1.1, 1.1, 0]) / 4.31)


def test_the_boundary_does_not_depend_on_float_rounding_of_the_target():
    controller = released(target=0.7)
    controller.update(played((1, 1, 1), [S] * 8 + [F] * 2))  # 0.8 - 0.7 is 0.10000000000000009 in floats
    assert controller.value_weights()[1] == pytest.approx(np.array([0, 1.01, 1.1, 0]) / 2.11)


@pytest.mark.parametrize("successes, branch_weight", [(39, 1 + 2 * 0.11 * 0.39), (61, 1 + 2 * 0.11 * 0.39)])
def test_just_past_the_boundary_the_outer_branches_apply(successes, branch_weight):
    controller = released()
    controller.update(played((1, 1, 1), [S] * successes + [F] * (100 - successes)))
    # d = -0.11: w(1) = 1 + 0.22 * 0.39, unseen 1 + 0.22 * 0.5; d = +0.11: w(1) = 1 + 0.22 * (1 - 0.61), unseen the same 1.11
    emotion = np.array([0, branch_weight, 1.11, 0])
    assert controller.value_weights()[1] == pytest.approx(emotion / emotion.sum())


def test_the_deviation_is_measured_from_the_target():
    controller = released(target=0.2)
    controller.update(played((1, 1, 1), [S, S, F, F]))  # CR_b 0.5, d = +0.3: too easy; sr 0.5 -> 1.3, unseen -> 1.3
    assert controller.value_weights()[1] == pytest.approx([0, 0.5, 0.5, 0])


def test_the_option_allows_the_extremes():
    controller = released(include_extremes=True)
    assert_marginals(controller, [0.2] * 5, [0.25] * 4, [1 / 6] * 6)
    controller.update(played((0, 0, 0), [F] * 4) + played((4, 3, 5), [S, F, F, F]))
    # CR_b = 1/8, d = -0.375: w = 1 + 0.75 sr. Value 0: sr 0 -> 1.0; value 4 (cooperation): sr 1/4 -> 1.1875; unseen -> 1.375.
    cooperation = np.array([1.0, 1.375, 1.375, 1.375, 1.1875])
    assert controller.value_weights()[0] == pytest.approx(cooperation / cooperation.sum())
    states = {tuple(p["state"]) for p in released(include_extremes=True, seed=1).sample(60)}
    assert any(s[0] in (0, 4) or s[1] in (0, 3) or s[2] in (0, 5) for s in states)
    with pytest.raises(ConfigError, match="include_extremes must be True or False, got 1"):
        released(include_extremes=1)


def test_state_weights_are_the_product_of_the_marginals_over_the_open_consistent_states():
    controller = released(include_extremes=True, n_max=3)
    controller.update(played((1, 1, 1), [S, F, F]))  # d = -1/6: w(1) = 1 + (1/3)(1/3), unseen 1 + (1/3)(1/2)
    weights, (c, e, _) = controller.weights(), controller.value_weights()
    assert weights[state_index((1, 1, 1))] == 0.0, "n_max: the capped state is not drawn"
    assert weights[state_index((4, 0, 2))] == 0.0, "the rule table: fully cooperative yet furious"
    ratio = weights[state_index((2, 1, 3))] / weights[state_index((1, 2, 3))]
    assert ratio == pytest.approx((c[2] * e[1]) / (c[1] * e[2])), "independent draws: the joint is the product"
    assert weights.sum() == pytest.approx(1.0)


def test_batches_stay_inside_the_grid_without_duplicates_and_run_out_at_n_max():
    controller = released(seed=2)
    batch = controller.sample()
    assert len({(tuple(p["state"]), tuple(p["behaviors"])) for p in batch}) == 60
    assert all(1 <= p["state"][0] <= 3 and 1 <= p["state"][1] <= 2 and 1 <= p["state"][2] <= 4 for p in batch)
    with pytest.raises(ScenarioError, match="Every initial state has reached n_max=1"):
        released(n_max=1).sample(25)  # 24 states, one dialogue each


def test_a_batch_without_a_verdict_keeps_the_last_batch():
    controller = released()
    controller.update(played((1, 1, 1), [S, F, F, F]) + played((2, 2, 2), [F] * 6))
    before = controller.value_weights()
    controller.update(played((3, 2, 4), [None, Outcome.BACKEND_FAILURE]))
    assert all(np.array_equal(a, b) for a, b in zip(controller.value_weights(), before))
    controller.update(played((3, 2, 4), [S, F]))  # a new batch replaces it: only the last batch counts
    assert controller.value_weights()[0] == pytest.approx(np.array([0, 1.1, 1.1, 1.05, 0]) / 3.25)


def test_same_seed_same_batches_and_the_state_dict_round_trip_continues_exactly():
    first, twin = released(seed=7), released(seed=7)
    for controller in (first, twin):
        controller.update(played((1, 1, 1), [S, F, F, F]) + played((2, 2, 2), [F] * 6))
    assert first.sample() == twin.sample()
    assert released(seed=8).sample() != released(seed=7).sample()
    saved = first.state_dict()
    assert saved["config"]["include_extremes"] is False and sum(saved["last_batch"]["counts"]) == 10
    restored = ProfileController.from_state_dict(saved)
    assert all(np.array_equal(a, b) for a, b in zip(restored.value_weights(), first.value_weights()))
    assert restored.sample() == first.sample()


def test_load_state_dict_checks_the_last_batch():
    saved = released().state_dict()
    legacy = {k: v for k, v in saved.items() if k != "last_batch"}
    with pytest.raises(ConfigError, match="field 'last_batch' missing; the released mode needs it"):
        released().load_state_dict(legacy)
    ProfileController().load_state_dict({**legacy, "config": {**legacy["config"], "mode": "full"}})  # older full-mode saves load
    with pytest.raises(ConfigError, match=r"field 'last_batch.counts' must hold 120 numbers"):
        released().load_state_dict({**saved, "last_batch": {"successes": [0] * 120, "counts": [0] * 119}})
    with pytest.raises(ConfigError, match="field 'last_batch' must be a dict with 'successes' and 'counts'"):
        released().load_state_dict({**saved, "last_batch": [0] * 120})
    with pytest.raises(ConfigError, match="field 'last_batch.successes' exceeds 'last_batch.counts'"):
        released().load_state_dict({**saved, "last_batch": {"successes": [1] * 120, "counts": [0] * 120}})
