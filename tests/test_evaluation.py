"""evaluate: the stratified evaluation order, repeats, shards, and where trajectories go (strict
JSON, never a partial line, never appended to an existing file by accident)."""

import json
import math
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dialogue_gym  # noqa: F401
from dialogue_gym.backends.canned import CannedBackend
from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.evaluation import (
    ORDER_STREAM,
    EvaluationOrder,
    Evaluator,
    coverage_note,
    episode_seed,
    evaluate,
    load_trajectories,
    stratified_permutation,
)
from dialogue_gym.health import UNHEALTHY_THRESHOLD
from dialogue_gym.scenarios.sead.game import SeadGame
from dialogue_gym.seeding import mix_seed
from envs_registry import REGISTRY


def test_trajectories_are_written_as_strict_json(tmp_path):
    out = tmp_path / "run.jsonl"
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 3, out=out, batch_size=2)
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        json.loads(line, parse_constant=lambda name: pytest.fail(f"bare {name} in the JSONL"))
    assert [t.to_dict() for t in load_trajectories(out)] == [t.to_dict() for t in trajectories]


def test_a_non_finite_number_is_refused_and_the_file_keeps_the_whole_episodes_before_it(tmp_path, monkeypatch):
    """The file is written in start order, so it stops after the first episode whatever ends first."""
    first = evaluate("SEAD-Outbound-v0", "sop", 1)[0]
    recorded = SeadGame.trajectory
    second = EvaluationOrder(SeadGame().evaluation_strata(), 0).start(1)

    def with_a_nan_in_the_second_episode(game):
        trajectory = recorded(game)
        if game.seed == second:
            trajectory.reward_terms["agent/probe"] = math.nan
        return trajectory

    monkeypatch.setattr(SeadGame, "trajectory", with_a_nan_in_the_second_episode)
    out = tmp_path / "run.jsonl"
    with pytest.raises(ScenarioError, match=rf"trajectory\['reward_terms'\]\['agent/probe'\] = nan .*seed {second}\)"):
        evaluate("SEAD-Outbound-v0", "sop", 3, out=out, batch_size=3)
    assert out.read_text() == first.to_json() + "\n"


# -- the evaluation order ------------------------------------------------------------------------

def _strata(env_id, **kwargs):
    return gym.make(env_id, **kwargs).unwrapped.game.evaluation_strata()


@settings(max_examples=60, deadline=None)
@given(
    strata=st.lists(st.fixed_dictionaries({}, optional={"a": st.integers(0, 2), "b": st.integers(0, 4)}), min_size=1, max_size=30),
    seed=st.integers(0, 2**40),
    cycles=st.integers(1, 3),
)
def test_every_prefix_plays_each_stratum_floor_or_ceil_of_its_share(strata, seed, cycles):
    size = len(strata)
    starts = EvaluationOrder(strata, seed).starts(cycles * size)
    for cycle in range(cycles):
        assert sorted(starts[cycle * size : (cycle + 1) * size]) == list(range(cycle * size, (cycle + 1) * size))
    played = Counter()
    for length, start in enumerate(starts, start=1):
        played[start % size] += 1
        low, high = length // size, -(-length // size)
        assert all(low <= played[stratum] <= high for stratum in range(size)), (length, played)


@pytest.mark.parametrize(
    "env_id, kwargs", [("SEAD-Outbound-v0", {}), ("RLADA-Banking-v0", {}), ("TRACER-UserSim-v0", {}), ("RLADA-Banking-v0", {"scenario_set": "arena"})]
)
def test_every_prefix_is_within_one_and_a_half_episodes_of_each_facets_share(env_id, kwargs):
    strata = _strata(env_id, **kwargs)
    for seed in range(3):
        order = stratified_permutation(strata, seed)
        for facet in strata[0]:
            share = Counter(stratum[facet] for stratum in strata)
            played = Counter()
            for length, pick in enumerate(order, start=1):
                played[strata[pick][facet]] += 1
                assert all(abs(played[value] - length * total / len(strata)) <= 1.5 for value, total in share.items())


def test_ten_sead_episodes_play_every_cooperation_level_twice():
    """The issue's case: the old order played the 10 cooperation-0 states first (sop CR 0.000 at 10 episodes)."""
    strata = _strata("SEAD-Outbound-v0")
    for seed in range(5):
        cooperation = Counter(strata[start % 120]["cooperation"] for start in EvaluationOrder(strata, seed).starts(10))
        assert cooperation == {level: 2 for level in range(5)}


def test_a_multiple_of_the_strata_plays_the_same_starts_and_seeds_as_the_plain_order():
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 240, seed=4)
    assert sorted(t.meta["start"] for t in trajectories) == list(range(240))
    game = gym.make("SEAD-Outbound-v0").unwrapped.game
    for trajectory in trajectories[:20]:
        start = trajectory.meta["start"]
        assert trajectory.seed == 4 + start
        assert trajectory.profile == game.evaluation_options(start, 4)["profile"]
    assert [t.meta["start"] for t in evaluate("SEAD-Outbound-v0", "sop", 12, seed=5)] != [t.meta["start"] for t in trajectories[:12]]


def test_coverage_note_counts_the_strata_played_and_each_facet():
    strata = _strata("SEAD-Outbound-v0")
    assert coverage_note(strata, 240, 0) is None and coverage_note((), 7, 0) is None
    note = coverage_note(strata, 130, 0)
    assert "130 episodes is not a multiple of the 120 strata" in note and "10 played 2x, 110 played 1x" in note
    # cooperation has 24 states per level: 130 * 24 / 120 = 26.0 proportional.
    assert "cooperation (played/proportional): 0 26/26.0, 1 26/26.0" in note


def test_the_sead_evaluation_order_is_pinned():
    """Published partial runs (not a multiple of 120) must replay the same starts in any later release."""
    assert ORDER_STREAM == int.from_bytes(b"order", "big")
    order = EvaluationOrder(_strata("SEAD-Outbound-v0"), 0)
    assert order.starts(12) == [20, 76, 105, 41, 67, 24, 16, 104, 93, 54, 1, 65]
    assert order.starts(6, first=120) == [227, 164, 135, 168, 199, 232]


def _float_permutation(strata, seed):
    """The plain form of stratified_permutation: every deficit summed afresh in floats at each pick."""
    count = len(strata)
    priority = np.random.default_rng(seed).permutation(count)
    columns = []
    for facet in sorted({facet for stratum in strata for facet in stratum}):
        values = [repr(stratum.get(facet)) for stratum in strata]
        codes = {value: code for code, value in enumerate(dict.fromkeys(values))}
        index = np.array([codes[value] for value in values])
        columns.append((index, np.bincount(index) / count, np.zeros(len(codes))))
    taken = np.zeros(count, dtype=bool)
    order = []
    for length in range(1, count + 1):
        deficit = np.zeros(count)
        for index, share, played in columns:
            deficit += played[index] - length * share[index]
        deficit[taken] = np.inf
        candidates = np.flatnonzero(deficit <= deficit.min() + 1e-9)
        pick = int(candidates[np.argmin(priority[candidates])])
        taken[pick] = True
        order.append(pick)
        for index, _, played in columns:
            played[index[pick]] += 1
    return order


@pytest.mark.parametrize("env_id", [entry.id for entry in REGISTRY])
def test_the_whole_number_permutation_picks_as_the_float_sums_on_every_ids_strata(env_id):
    strata = _strata(env_id)
    for seed in (0, 1, 7, mix_seed(3, 0, ORDER_STREAM)):
        assert stratified_permutation(strata, seed) == _float_permutation(strata, seed)


@settings(max_examples=200, deadline=None)
@given(
    strata=st.lists(
        st.fixed_dictionaries({}, optional={"a": st.integers(0, 2), "b": st.sampled_from(["x", "y", None]), "c": st.integers(0, 9)}),
        min_size=1, max_size=60,
    ),
    seed=st.integers(0, 2**40),
)
def test_the_whole_number_permutation_picks_as_the_float_sums(strata, seed):
    """Missing facets, None values, many ties and lone values: the same picks as the plain float form."""
    assert stratified_permutation(strata, seed) == _float_permutation(strata, seed)


def test_the_second_pick_goes_to_the_under_represented_value_whatever_the_seed():
    """Hand-computed: strata a=0, a=0, a=1 (shares 2/3, 1/3). The first pick is an a=0 stratum
    (deficit -2/3 against -1/3); at prefix length 2 the deficits are 1 - 4/3 = -1/3 for a=0 and
    0 - 2/3 = -2/3 for a=1, so a=1 comes second on every seed (a prefix length off by one would tie
    them at -1 and let the seed decide)."""
    strata = [{"a": 0}, {"a": 0}, {"a": 1}]
    orders = {tuple(stratified_permutation(strata, seed)) for seed in range(12)}
    assert orders == {(0, 2, 1), (1, 2, 0)}


def test_coverage_note_prints_the_gap_range_of_a_facet_with_more_than_eight_values():
    """4 starts of 18 strata holding 9 values twice each: proportional is 4 * 2/18 = 0.44 a value, so
    the 4 values played once are 1 - 0.44 = +0.6 over and the 5 others 0 - 0.44 = -0.4 under."""
    note = coverage_note([{"x": index % 9} for index in range(18)], 4, 0)
    assert note.splitlines()[1] == "  x (9 values): played minus proportional from -0.4 to +0.6"
    eight = coverage_note([{"x": value} for value in range(8)], 3, 0).splitlines()[1]
    assert eight == "  x (played/proportional): 0 1/0.4, 1 0/0.4, 2 1/0.4, 3 1/0.4, 4 0/0.4, 5 0/0.4, 6 0/0.4, 7 0/0.4"


def test_repeats_replay_each_start_with_other_seeds():
    trajectories = evaluate("SEAD-Outbound-v0", "adaptive", 4, seed=2, repeats=3)
    assert [(t.meta["start"], t.meta["repeat"]) for t in trajectories[:3]] == [(trajectories[0].meta["start"], r) for r in range(3)]
    assert len(trajectories) == 12 and len({t.seed for t in trajectories}) == 12
    for trajectory in trajectories:
        start, repeat = trajectory.meta["start"], trajectory.meta["repeat"]
        assert trajectory.seed == episode_seed(2, start, repeat) and (repeat or trajectory.seed == 2 + start)
    by_start = {}
    for trajectory in trajectories:
        by_start.setdefault(trajectory.meta["start"], []).append(trajectory)
    assert all(len({json.dumps(t.profile) for t in group}) == 1 for group in by_start.values())
    transcripts = {tuple(turn.text for turn in t.turns) for t in trajectories}
    assert len(transcripts) > len(by_start)


def test_shards_of_a_repeated_run_add_up_to_the_run():
    whole = evaluate("RLADA-Banking-v0", "keyword", 6, seed=1, repeats=2)
    evaluator = Evaluator("RLADA-Banking-v0", "keyword", batch_size=3)
    shards = evaluator.run(2, 1, repeats=2) + evaluator.run(4, 1, repeats=2, first_episode=2)
    assert [t.to_dict() for t in shards] == [t.to_dict() for t in whole]


def test_plays_defaults_to_one_repeat_from_the_first_position():
    evaluator = Evaluator("SEAD-Outbound-v0", "sop")
    assert evaluator.plays(3, 0) == [(20, 0), (76, 0), (105, 0)]
    assert evaluator.plays(2, 0, repeats=2, first_episode=1) == [(76, 0), (76, 1), (105, 0), (105, 1)]


def test_run_defaults_to_seed_zero():
    evaluator = Evaluator("SEAD-Outbound-v0", "sop")
    assert [t.to_dict() for t in evaluator.run(2)] == [t.to_dict() for t in evaluator.run(2, 0)]
    assert [t.seed for t in evaluator.run(2)] == [20, 76]


def test_unhealthy_episodes_are_marked_only_when_asked():
    """An LLM-played user that never writes its format fails its health checks on every turn."""
    garbled = {"user": "llm", "user_backend": CannedBackend(["no format here"])}
    assert not any("unhealthy" in t.meta for t in evaluate("SEAD-Outbound-v0", "sop", 2, env_kwargs=garbled))
    marked = evaluate("SEAD-Outbound-v0", "sop", 2, env_kwargs=garbled, invalid_on_unhealthy=True)
    assert [t.meta["unhealthy"] for t in marked] == [{"roles": {"user": 1.0}, "threshold": UNHEALTHY_THRESHOLD}] * 2


def test_for_agent_shares_the_env_and_plays_like_a_fresh_evaluator():
    first = Evaluator("SEAD-Outbound-v0", "sop")
    second = first.for_agent("adaptive")
    assert second.environment is first.environment and second.agent_name == "adaptive" and first.agent_name == "sop"
    assert [t.to_dict() for t in second.run(5, 3)] == [t.to_dict() for t in evaluate("SEAD-Outbound-v0", "adaptive", 5, seed=3)]
    with pytest.raises(ConfigError, match=r"agent='adaptiv' is not a known agent policy \(did you mean 'adaptive'\?\)"):
        first.for_agent("adaptiv")


# -- where trajectories go -----------------------------------------------------------------------


def test_out_refuses_an_existing_file_unless_append(tmp_path):
    out = tmp_path / "run.jsonl"
    evaluate("SEAD-Outbound-v0", "sop", 2, out=out)
    with pytest.raises(ConfigError, match=r"run.jsonl' already exists \(\d+ bytes\); choose a new path, delete it, or append"):
        evaluate("SEAD-Outbound-v0", "sop", 2, out=out)
    assert len(out.read_text().splitlines()) == 2
    evaluate("SEAD-Outbound-v0", "sop", 2, out=out, append=True)
    assert len(out.read_text().splitlines()) == 4


def test_a_bad_out_path_is_a_config_error_before_any_episode(tmp_path, monkeypatch):
    monkeypatch.setattr(Evaluator, "run", lambda *a, **k: pytest.fail("an episode ran"))
    with pytest.raises(ConfigError, match=r"the folder '.*missing' does not exist; create it first"):
        evaluate("SEAD-Outbound-v0", "sop", 2, out=tmp_path / "missing" / "run.jsonl")
    with pytest.raises(ConfigError, match="is a folder; give a file path"):
        evaluate("SEAD-Outbound-v0", "sop", 2, out=tmp_path)


def test_an_existing_empty_file_is_written_without_append_and_a_one_byte_file_is_refused(tmp_path):
    out = tmp_path / "run.jsonl"
    out.touch()
    evaluate("SEAD-Outbound-v0", "sop", 1, out=out)
    assert len(out.read_text().splitlines()) == 1
    one_byte = tmp_path / "one.jsonl"
    one_byte.write_text("\n")
    with pytest.raises(ConfigError, match=r"one.jsonl' already exists \(1 bytes\)"):
        evaluate("SEAD-Outbound-v0", "sop", 1, out=one_byte)


@pytest.mark.parametrize("name, value", [("batch_size", True), ("batch_size", 0), ("batch_size", "3"), ("batch_size", 2.0), ("repeats", 0), ("episodes", False)])
def test_a_count_that_is_not_a_positive_int_is_refused(name, value):
    arguments = {"episodes": 1, name: value}
    with pytest.raises(ConfigError, match=rf"{name} must be an int >= 1, got {value!r}\."):
        evaluate("SEAD-Outbound-v0", "sop", **arguments)


def test_learner_in_env_kwargs_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"env_kwargs hold learner='user'; .*`--learner`"):
        evaluate("SEAD-Outbound-v0", "sop", 1, env_kwargs={"learner": "user"})
