"""Pipelined rollouts (one group of sub-envs stepped while another's batch generates) play exactly the
episodes of the plain loop, for every id; ``step_subset`` of a partition is one ``step``; infos batched
once per step equal Gymnasium's ``_add_info`` merged sub-env by sub-env."""

import functools
import gc

import gymnasium as gym
import numpy as np
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import GenerationRequest
from dialogue_gym.backends.canned import LatencyBackend
from dialogue_gym.envs.pipeline import pipelined_steps, sequential_steps, split_groups
from dialogue_gym.envs.vector import _add_infos, batch_infos
from dialogue_gym.errors import ConfigError, EpisodeStateError
from dialogue_gym.evaluation import evaluate
from envs_registry import REGISTRY, get

@functools.lru_cache(maxsize=None)
def replies(env_id):
    """What the id's default agent says as the learner in a few episodes: replies of the real format."""
    entry = get(env_id)
    trajectories = evaluate(env_id, entry.agents[0], 4, learner=entry.default_learner)
    return sorted({turn.raw for t in trajectories for turn in t.turns if turn.role == entry.default_learner})


def acting(env_id):
    backend = LatencyBackend(replies(env_id), latency=0.0)

    def act(observations):
        return [out.text for out in backend.generate([GenerationRequest(messages=tuple(m)) for m in observations["messages"]])]

    return act


def transcript(envs, steps):
    """Every sub-env's actions, rewards, ends, last message, turn and own info (a group's batched info
    arrays may have another dtype than the whole batch's, as Gymnasium picks it from the first sub-env
    with the key), and every finished episode."""
    per_env = {index: [] for index in range(envs.unwrapped.num_envs)}
    for step in steps:
        for k, index in enumerate(step.indices):
            per_env[index].append((step.actions[k], float(step.rewards[k]), bool(step.terminations[k]),
                                   bool(step.truncations[k]), step.observations["messages"][k][-1]["content"],
                                   int(step.observations["turn"][k]), envs.unwrapped.games[index].info(envs.unwrapped.learner)))
    finished = sorted((t.seed, tuple(turn.raw for turn in t.turns), t.outcome) for t in envs.unwrapped.pop_trajectories())
    return per_env, finished


@pytest.mark.parametrize("groups", [2, 3])
@pytest.mark.parametrize("entry", REGISTRY, ids=[e.id for e in REGISTRY])
def test_pipelined_rollouts_play_the_sequential_episodes(entry, groups):
    plain = gym.make_vec(entry.id, num_envs=7, keep_trajectories=None)
    expected = transcript(plain, sequential_steps(plain, acting(entry.id), 16, seed=11))
    piped = gym.make_vec(entry.id, num_envs=7, keep_trajectories=None)
    got = transcript(piped, pipelined_steps(piped, acting(entry.id), 16, groups=groups, seed=11))
    assert got == expected
    assert len(expected[1]) >= 3  # episodes ended and were autoreset on the way
    # and the env left behind is the same: one more plain step of both gives the same result
    actions = ["Thank you, goodbye."] * 7
    a, b = plain.step(actions), piped.step(actions)
    assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]) and a[0]["messages"] == b[0]["messages"]


@pytest.mark.parametrize("loop", ["sequential", "pipelined"])
def test_both_loops_freeze_the_heap_while_they_run_and_unfreeze_it_after(loop):
    def steps(envs, **kwargs):
        if loop == "sequential":
            return sequential_steps(envs, acting("SEAD-Outbound-v0"), 3, seed=0, **kwargs)
        return pipelined_steps(envs, acting("SEAD-Outbound-v0"), 3, seed=0, **kwargs)

    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=2)
    assert gc.get_freeze_count() == 0
    seen = [gc.get_freeze_count() for _ in steps(envs)]
    assert min(seen) > 0 and gc.get_freeze_count() == 0
    # left early, the loop still gives the objects back to the collector
    early = steps(envs)
    next(early)
    early.close()
    assert gc.get_freeze_count() == 0
    assert [gc.get_freeze_count() for _ in steps(envs, freeze_gc=False)] == [0, 0, 0] * (1 if loop == "sequential" else 2)


def test_a_callers_own_freezing_is_left_as_it_is():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=2)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        for _ in pipelined_steps(envs, acting("SEAD-Outbound-v0"), 2, seed=0):
            pass
        # not unfrozen by the loop, nor frozen again (frozen objects freed on the way leave the count)
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_step_subset_of_contiguous_groups_in_turn_is_one_step():
    whole = gym.make_vec("SEAD-Outbound-v0", num_envs=5).unwrapped
    parts = gym.make_vec("SEAD-Outbound-v0", num_envs=5).unwrapped
    whole.reset(seed=2)
    parts.reset(seed=2)
    for turn in range(12):
        actions = [f"Hello, I call from the delivery platform about offer {turn}." for _ in range(5)]
        observations, rewards, terminations, truncations, infos = whole.step(actions)
        first = parts.step_subset([0, 1], actions[:2])
        second = parts.step_subset([2, 3, 4], actions[2:])
        order = [0, 1, 2, 3, 4]
        assert [observations["messages"][i] for i in order] == list(first[0]["messages"]) + list(second[0]["messages"])
        assert np.array_equal(rewards[order], np.concatenate([first[1], second[1]]))
        assert np.array_equal(terminations[order], np.concatenate([first[2], second[2]]))
        assert list(infos["outcome"][order]) == list(first[4]["outcome"]) + list(second[4]["outcome"])


def test_step_subset_checks_its_indices_and_actions():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=3).unwrapped
    with pytest.raises(EpisodeStateError, match="before reset"):
        envs.step_subset([0], ["hi"])
    envs.reset(seed=0)
    for bad in ([], [1, 0], [0, 0], [3], [-1], "ab", None):
        with pytest.raises(ConfigError, match="ascending, distinct sub-env indices|list of sub-env indices"):
            envs.step_subset(bad, ["hi"])
    with pytest.raises(ConfigError, match=r"one action per sub-env \(2\), got 1"):
        envs.step_subset([0, 2], ["hi"])
    assert list(envs.observe_subset([1])["turn"]) == [0]


def test_groups_partition_the_sub_envs():
    assert split_groups(7, 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split_groups(4, 1) == [[0, 1, 2, 3]]
    for bad in (0, 5, True, 1.5):
        with pytest.raises(ConfigError, match="groups must be an int"):
            split_groups(4, bad)


def test_a_failing_learner_stops_the_pipeline():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=4)

    def act(observations):
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError, match="model crashed"):
        list(pipelined_steps(envs, act, 3, seed=0))


INFOS = [
    [{"turn": 1, "outcome": None}, {"turn": 2, "outcome": "hangup"}],
    [{"outcome": "hangup", "turn": 1}, {"turn": 2.5, "outcome": None}],  # int column with a float, other key order
    [{"flag": True}, {}, {"flag": False, "extra": np.float32(1.5)}],
    [{}, {"reward_terms": {"route": 1.0, "judge": 0.5}}, {"reward_terms": {"judge": 2}}],
    [{"final_obs": {"turn": 3}, "final_info": {"outcome": "success"}}, {}],
    [{"vec": np.arange(3)}, {"vec": np.ones(3, dtype=np.int64)}],
    [{"traj": [1, 2, 3]}, {"traj": [4]}, {"traj": (5, 6)}],
    [{"n": np.int32(4)}, {"n": 7}],
    [{"mixed": {"a": 1}}, {"mixed": 3}],  # a dict in one sub-env only: Gymnasium's own merge
    [{"_turn": 1}, {"turn": 2}],  # a key that looks like a mask: Gymnasium's own merge
    [],
]


def same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert [repr(x) for x in a.tolist()] == [repr(x) for x in b.tolist()]
    else:
        assert repr(a) == repr(b)


@pytest.mark.parametrize("infos", INFOS)
def test_infos_batched_once_equal_gymnasiums_merge(infos):
    try:
        expected = _add_infos(infos)
    except Exception as exc:  # whatever Gymnasium's merge raises, the batched path raises too
        with pytest.raises(type(exc)):
            batch_infos(infos)
        return
    same(batch_infos(infos), expected)


@pytest.mark.parametrize("entry", REGISTRY, ids=[e.id for e in REGISTRY])
def test_every_id_batches_its_infos_as_gymnasium_does(entry):
    envs = gym.make_vec(entry.id, num_envs=6).unwrapped
    envs.reset(seed=4)
    act = acting(entry.id)
    observations = envs._observations()
    for _ in range(10):
        singles = [game.info(envs.learner) for game in envs.games]
        same(envs._infos(), _add_infos(singles))
        observations, *_ = envs.step(act(observations))
