"""The vector env keeps a bounded number of finished trajectories (``keep_trajectories``): a loop that
never pops stays flat in memory, every drop is counted, and what is kept is the newest, in order."""

import gc
import sys
import warnings

import gymnasium as gym
import pytest
from toy_game import Counterpart, ToyGame

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.driver import MAX_DRAWS, redraw_seed
from dialogue_gym.envs.vector import DEFAULT_KEEP_TRAJECTORIES, DialogueVectorEnv
from dialogue_gym.errors import ConfigError
from dialogue_gym.types import Trajectory

NUM_ENVS = 4
STEPS = 300
# A toy episode is two learner moves, and NEXT_STEP autoreset spends a third step on the reset, so each
# sub-env finishes an episode on steps 2, 5, 8, ...: 100 of them in 300 steps, 400 over the 4 sub-envs.
FINISHED = NUM_ENVS * ((STEPS + 1) // 3)


def vector(keep_trajectories="auto", num_envs=NUM_ENVS, counterpart=None):
    return DialogueVectorEnv(ToyGame, num_envs, "learner", {"counterpart": counterpart or Counterpart()}, keep_trajectories)


def play(envs, steps, seed=0):
    envs.reset(seed=seed)
    for _ in range(steps):
        envs.step(["move"] * envs.num_envs)
    return envs


def transcript(trajectory):
    return trajectory.seed, [(turn.role, turn.raw) for turn in trajectory.turns], trajectory.outcome


def live_trajectories():
    gc.collect()
    return sum(isinstance(candidate, Trajectory) for candidate in gc.get_objects())


def test_everything_is_kept_with_none_so_the_hand_count_holds():
    envs = play(vector(None), STEPS)
    finished = envs.pop_trajectories()
    assert len(finished) == FINISHED == 400 and envs.dropped_trajectories == 0
    assert [t.seed for t in finished[:NUM_ENVS]] == [0, 1, 2, 3]  # reset(seed=0) seeds the first episodes 0..3
    assert all(len(t.turns_of("learner")) == 2 and t.learner == "learner" for t in finished)
    assert envs.pop_trajectories() == []


def test_a_cap_keeps_the_newest_in_order_and_counts_every_drop():
    everything = play(vector(None), STEPS).pop_trajectories()
    with pytest.warns(UserWarning, match=r"keep_trajectories=10 finished trajectories and has begun dropping") as caught:
        envs = play(vector(10), STEPS)
    assert len([w for w in caught if "keep_trajectories=10" in str(w.message)]) == 1  # warned once, not per drop
    assert len(envs.finished_trajectories) == 10 and envs.dropped_trajectories == FINISHED - 10 == 390
    kept = envs.pop_trajectories()
    assert [transcript(t) for t in kept] == [transcript(t) for t in everything[-10:]]
    assert len(envs.finished_trajectories) == 0 and envs.dropped_trajectories == 390  # popping forgets nothing counted


def test_popping_within_the_cap_loses_nothing_and_the_count_accumulates():
    envs = vector(10)
    envs.reset(seed=0)
    popped = []
    for _ in range(STEPS):
        envs.step(["move"] * NUM_ENVS)
        popped += envs.pop_trajectories()
    assert len(popped) == FINISHED and envs.dropped_trajectories == 0
    assert [transcript(t) for t in popped] == [transcript(t) for t in play(vector(None), STEPS).pop_trajectories()]


@pytest.mark.filterwarnings("ignore:.*has begun dropping the oldest")
def test_memory_stays_flat_over_many_autoresets():
    envs = play(vector(10), 30)
    baseline = live_trajectories()
    for _ in range(3000):
        envs.step(["move"] * NUM_ENVS)
    assert live_trajectories() == baseline
    assert len(envs.finished_trajectories) == 10 and envs.dropped_trajectories == NUM_ENVS * (3031 // 3) - 10


def test_zero_keeps_none_counts_all_and_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        envs = play(vector(0), STEPS)
    assert envs.pop_trajectories() == [] and envs.dropped_trajectories == FINISHED


@pytest.mark.filterwarnings("ignore:.*before the 'learner' role's first move")
def test_episodes_set_aside_at_reset_count_against_the_cap():
    def hangs_up(seed):  # reset(seed=0) sets aside the episodes seeded 0 and 3, and re-draws them
        return seed % 3 == 0

    set_aside = play(vector(None, counterpart=Counterpart(hangs_up)), 0).pop_trajectories()
    assert sorted(t.seed for t in set_aside) == [0, 3]
    with pytest.warns(UserWarning, match="keep_trajectories=1 "):
        envs = play(vector(1, counterpart=Counterpart(hangs_up)), 0)
    assert envs.dropped_trajectories == 1
    (kept,) = envs.pop_trajectories()
    assert transcript(kept) == transcript(set_aside[-1]) and not kept.turns_of("learner")


def test_auto_keeps_at_least_the_default_and_eight_a_sub_env():
    assert vector().keep_trajectories == DEFAULT_KEEP_TRAJECTORIES == 1024
    assert vector(num_envs=600).keep_trajectories == 4800 == MAX_DRAWS * 600
    assert vector(num_envs=600).finished_trajectories.maxlen == 4800
    assert gym.make_vec("SEAD-Outbound-v0", num_envs=2).unwrapped.keep_trajectories == 1024
    assert gym.make_vec("SEAD-Outbound-v0", num_envs=2, keep_trajectories=None).unwrapped.keep_trajectories is None
    assert gym.make_vec("SEAD-Outbound-v0", num_envs=2, keep_trajectories=7).unwrapped.finished_trajectories.maxlen == 7


@pytest.mark.filterwarnings("ignore:.*before the 'learner' role's first move")
def test_auto_loses_none_when_every_sub_env_sets_episodes_aside():
    """One reset can end up to MAX_DRAWS episodes a sub-env (those that end before the learner's first
    move): with 600 sub-envs whose counterpart hangs up on the first 3 draws, 2*num_envs dropped 600."""
    hung = {redraw_seed(seed, draw) for seed in range(600) for draw in range(3)}
    envs = vector(num_envs=600, counterpart=Counterpart(lambda seed: seed in hung))
    envs.reset(seed=0)
    assert len(envs.pop_trajectories()) == 1800 and envs.dropped_trajectories == 0


@pytest.mark.parametrize("bad", [-1, True, 2.5, "all", [10], 2**63, 10**30])
def test_a_bad_keep_trajectories_is_a_config_error_naming_the_value_and_the_fix(bad):
    with pytest.raises(ConfigError, match=rf"keep_trajectories must be 'auto', an int from 0 to {sys.maxsize} or None, got ") as error:
        vector(bad)
    assert repr(bad) in str(error.value) and "pass 0 to keep none" in str(error.value)
    with pytest.raises(ConfigError, match=r"keep_trajectories must be"):
        gym.make_vec("RLADA-Banking-v0", num_envs=2, keep_trajectories=bad)
