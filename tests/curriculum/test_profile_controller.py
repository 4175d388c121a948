import math

import gymnasium as gym
import numpy as np
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.curriculum import ProfileController, load_rules, with_curriculum
from dialogue_gym.envs import sead_outbound_v0
from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.scenarios.sead.data import load_behaviors
from dialogue_gym.scenarios.sead.state import (
    ALL_STATES,
    Profile,
    UserState,
    state_index,
)
from dialogue_gym.types import Outcome, Trajectory


def played(state, outcomes):
    return [Trajectory("SEAD-Outbound-v0", 0, {"state": list(state), "behaviors": ["CC1"]}, [], o) for o in outcomes]


S, F = Outcome.SUCCESS, Outcome.HANGUP


def test_cold_start_is_uniform_over_consistent_states():
    controller = ProfileController(seed=0)
    weights = controller.weights()
    valid = [i for i, s in enumerate(ALL_STATES) if load_rules().state_violation(s) is None]
    assert np.allclose(weights[valid], 1 / len(valid)) and weights.sum() == pytest.approx(1.0)
    assert len(valid) == 120 - (6 + 4 - 1)  # c=4,e=0 (6 states) and c=4,tr=0 (4 states), overlapping in 1
    assert set(controller.categories()) == {"unseen"} and math.isnan(controller.completion_rates()[0])


def test_weights_follow_one_minus_distance_to_target_on_accumulated_rates():
    controller = ProfileController(seed=0)
    easy, ideal, hard = (3, 3, 5), (2, 2, 2), (0, 1, 1)
    controller.update(played(easy, [S, S, S, F]) + played(hard, [F, F, F, F, F]))
    controller.update(played(ideal, [S, F]) + played(easy, [S, S, S, S]))  # accumulated: easy 7/8
    rates = controller.completion_rates()
    assert rates[state_index(easy)] == pytest.approx(7 / 8) and rates[state_index(ideal)] == 0.5 and rates[state_index(hard)] == 0.0
    raw = controller._raw_weights()
    assert raw[state_index(easy)] == pytest.approx(1 - 3 / 8)
    assert raw[state_index(ideal)] == 1.0 and raw[state_index(hard)] == 0.5
    assert raw[state_index((1, 1, 1))] == 1.0  # unseen
    assert controller.weights().sum() == pytest.approx(1.0)
    categories = controller.categories()
    assert (categories[state_index(easy)], categories[state_index(ideal)], categories[state_index(hard)]) == ("too_easy", "ideal", "too_hard")
    assert controller.ideal_fraction() == pytest.approx(1 / 3)


def test_beta_smoothing_pulls_rates_to_half():
    controller = ProfileController(smoothing="beta", prior=(1.0, 1.0), seed=0)
    controller.update(played((2, 2, 2), [S, S]))
    assert controller.completion_rates()[state_index((2, 2, 2))] == pytest.approx(3 / 4)


def test_uniform_mode_does_not_adapt():
    controller = ProfileController(mode="uniform", seed=0)
    before = controller.weights()
    controller.update(played((2, 2, 2), [S] * 10))
    assert np.allclose(controller.weights(), before)


def test_n_max_caps_a_state_over_the_run_and_within_a_batch():
    controller = ProfileController(n_max=3, batch_size=60, seed=0)
    controller.update(played((2, 2, 2), [S, F, S]))
    assert controller.weights()[state_index((2, 2, 2))] == 0.0
    batch = ProfileController(n_max=1, seed=1).sample(100)
    states = [tuple(p["state"]) for p in batch]
    assert len(set(states)) == 100
    with pytest.raises(ScenarioError, match="reached n_max=1"):
        ProfileController(n_max=1, seed=1).sample(120)


def test_batches_have_no_duplicates_and_respect_the_rules():
    controller = ProfileController(seed=3, batch_size=60)
    library, rules = load_behaviors(), load_rules()
    for _ in range(5):
        batch = controller.sample()
        profiles = [Profile.coerce(p, library.ids) for p in batch]
        assert len(set(profiles)) == 60 and all(1 <= len(p.behaviors) <= 3 for p in profiles)
        assert not [p for p in profiles if rules.violations(p, library)]


def test_rule_table_rejects_incoherent_profiles():
    rules, library = load_rules(), load_behaviors()
    assert rules.violations(Profile(UserState(4, 0, 3), ("CC1",)), library) == ["fully cooperative yet furious"]
    assert "in a hurry yet insists on exact figures" in rules.violations(Profile(UserState(2, 2, 2), ("PE1", "DF1")), library)
    assert "two behaviors of the same category" in rules.violations(Profile(UserState(2, 2, 2), ("TS1", "TS2")), library)
    assert rules.violations(Profile(UserState(2, 2, 2), ("TS1", "CC1")), library) == []


def test_unstructured_mode_draws_free_form_personas_off_the_grid_distribution():
    profiles = ProfileController(mode="unstructured", seed=0).sample(60)
    assert all(p.get("persona") for p in profiles)
    states = {tuple(p["state"]) for p in profiles}
    assert len(states) < 60  # a few recurring states, not the uniform 120-state grid
    mean_c = np.mean([p["state"][0] for p in profiles])
    assert mean_c > 2.0  # skewed towards cooperative, talkative users


def test_state_dict_round_trip_continues_exactly():
    controller = ProfileController(seed=5)
    controller.update(played((2, 2, 2), [S, F]))
    controller.sample()
    saved = controller.state_dict()
    restored = ProfileController.from_state_dict(saved)
    assert restored.sample() == controller.sample()
    assert np.array_equal(restored.completion_rates(), controller.completion_rates(), equal_nan=True)
    with pytest.raises(ConfigError, match="saved config differs"):
        ProfileController(seed=6).load_state_dict(saved)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "adaptive"}, "mode='adaptive' is not a ProfileController mode"),
        ({"n_max": 0}, "n_max must be a positive int, got 0"),
        ({"band": (0.7, 0.3)}, "band must be"),
        ({"smoothing": "laplace"}, "smoothing='laplace'"),
        ({"target": 2}, "target must be a completion rate"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ProfileController(**kwargs)


def test_curriculum_drives_single_vector_and_aec_views():
    for env in (gym.make("SEAD-Outbound-v0"), gym.make_vec("SEAD-Outbound-v0", num_envs=3), sead_outbound_v0.env()):
        controller = ProfileController(batch_size=2, seed=0)
        with_curriculum(env, controller)
        env.reset(seed=0)
        games = getattr(env.unwrapped, "games", None) or [env.unwrapped.game]
        drawn = [game.episode_profile() for game in games]
        twin = ProfileController(batch_size=2, seed=0)
        expected = twin.sample() + twin.sample()
        assert drawn == expected[: len(drawn)]
        assert controller.counts.sum() == 0
    single = with_curriculum(gym.make("SEAD-Outbound-v0"), ProfileController(batch_size=2, seed=0))
    for episode in range(3):
        single.reset(seed=episode)
        done = False
        while not done:
            _, _, done, _, _ = single.step("Hello there.")
    assert single.unwrapped.game.start_source.controller.counts.sum() == 2  # first batch of 2, folded in when batch 2 was drawn


def _corrupted(**changes):
    controller = ProfileController(seed=5)
    controller.update(played((2, 2, 2), [S, F]))
    return {**controller.state_dict(), **changes}


@pytest.mark.parametrize(
    "state, message",
    [
        ([], r"state must be a dict from state_dict\(\), got list"),
        ({"config": {}}, r"field\(s\) \['successes', 'counts', 'iterations', 'rng'\] missing"),
        (_corrupted(config=[]), "field 'config' must be a dict, got list"),
        (_corrupted(config={"library": None}), r"field 'config' has unknown key\(s\) \['library'\]"),
        (_corrupted(counts=[1.0] * 119), r"field 'counts' must hold 120 numbers \(one per initial state\), got 119"),
        (_corrupted(counts=[1.0] * 121), r"field 'counts' must hold 120 numbers \(one per initial state\), got 121"),
        (_corrupted(successes={"0": 1}), "field 'successes' must be a list of 120 numbers .*, got dict"),
        (_corrupted(counts=[1.0] * 119 + ["1"]), r"field 'counts'\[119\] must be a finite number >= 0, got '1' \(str\)"),
        (_corrupted(counts=[float("nan")] * 120), r"field 'counts'\[0\] must be a finite number >= 0, got nan"),
        (_corrupted(counts=[-1.0] * 120), r"field 'counts'\[0\] must be a finite number >= 0, got -1.0"),
        (_corrupted(counts=[10**400] * 120), r"field 'counts'\[0\] must be a finite number >= 0, got 1000"),
        (_corrupted(successes=[1.0] * 120), r"field 'successes' exceeds 'counts' at state 0 \(1 successes of 0 dialogues\)"),
        (_corrupted(iterations="1"), "field 'iterations' must be an int >= 0, got '1'"),
        (_corrupted(iterations=-1), "field 'iterations' must be an int >= 0, got -1"),
        (_corrupted(rng=[3, [0] * 10, None]), "field 'rng' is not a random.Random state"),
        (_corrupted(rng="seed"), "field 'rng' is not a random.Random state"),
    ],
)
def test_load_state_dict_rejects_a_wrong_field_and_changes_nothing(state, message):
    controller = ProfileController(seed=5)
    before = controller.state_dict()
    with pytest.raises(ConfigError, match=message):
        controller.load_state_dict(state)
    assert controller.state_dict() == before


def test_from_state_dict_names_a_config_that_does_not_fit():
    with pytest.raises(ConfigError, match="from_state_dict: state must be a dict with a 'config' dict"):
        ProfileController.from_state_dict({"counts": []})
    with pytest.raises(ConfigError, match="from_state_dict: field 'config' does not fit ProfileController"):
        ProfileController.from_state_dict(_corrupted(config={"mode": "full", "colour": "red"}))
