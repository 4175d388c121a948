"""Advantages over the greedy copy (``over_greedy``, issue 41 item 2): only the copies whose turn beat the
argmax's train, each by how much it beat it; the others leave the batch."""

import pytest

from dialogue_gym.errors import ConfigError
from trainers.grpo.decision_point import group_samples, over_greedy_advantages
from trainers.sead.config import build_config


def _copy(reward, completion, greedy=False):
    from dialogue_gym.types import Trajectory

    trajectory = Trajectory(scenario="t", seed=0, profile={}, turns=[], rewards={"agent": reward})
    trajectory.meta = {
        "learner_record": {"prompt_ids": [1, 2], "completion_ids": completion, "logprobs": [-1.0] * len(completion)},
        "decision_point": {"greedy": greedy},
    }
    return trajectory


def test_over_greedy_advantages_are_the_reward_above_the_greedy_copys_or_zero():
    assert over_greedy_advantages([0.0, 1.0, 0.0, 0.5], 0.0).tolist() == [0.0, 1.0, 0.0, 0.5]
    assert over_greedy_advantages([1.0, 0.0, 1.0, 0.25], 0.5).tolist() == [0.5, 0.0, 0.5, 0.0]


def test_group_samples_over_greedy_keep_only_the_copies_that_beat_the_greedy_turn():
    # group 1: greedy 0, samples 1 ([5]), 0 ([6]), 0.5 ([7, 8]); group 2: greedy 1 beats every sample (no sample kept)
    group_1 = [_copy(0.0, [4], greedy=True), _copy(1.0, [5]), _copy(0.0, [6]), _copy(0.5, [7, 8])]
    group_2 = [_copy(1.0, [4], greedy=True), _copy(0.0, [5]), _copy(1.0, [6]), _copy(0.0, [7])]
    samples, metrics = group_samples(group_1 + group_2, 4, "agent", over_greedy=True)
    assert [(s.completion_ids, s.advantages) for s in samples] == [([5], [1.0]), ([7, 8], [0.5, 0.5])]
    assert metrics["decision/greedy_beaten"] == 0.5 and metrics["decision/informative_groups"] == 1.0
    plain, _ = group_samples(group_1 + group_2, 4, "agent")
    assert len(plain) == 8  # group-normalised: every copy trains


def test_over_greedy_needs_a_greedy_copy_in_the_groups_and_in_the_config():
    with pytest.raises(ValueError, match=r"needs a greedy copy in every group; play the groups with greedy_copy=True"):
        group_samples([_copy(0.0, [4]), _copy(1.0, [5])], 2, "agent", over_greedy=True)
    with pytest.raises(ConfigError, match=r"over_greedy=True scores each copy against the group's greedy copy; pass greedy_copy=True"):
        build_config("cpu-lm-scratch", over_greedy=True)
    assert build_config("cpu-lm-scratch", greedy_copy=True, over_greedy=True).over_greedy
    assert build_config("cpu-lm-scratch").over_greedy is False


def test_the_sead_trainer_trains_only_the_copies_that_beat_the_greedy_one_with_over_greedy():
    from test_decision_point import GreedyOrGarble, sead_setup  # tests/trainers is on pytest's path

    from dialogue_gym.curriculum import ProfileController
    from trainers.grpo.decision_point import DecisionPointSeat
    from trainers.sead.train import decision_point_step

    class Fresh:
        def completed_episodes(self, iteration):
            return {}

        def append_trajectories(self, trajectories, iteration):
            pass

    class Learner(GreedyOrGarble):
        def score(self, prompt, completion):
            return [-0.25] * len(completion)

        def step(self, samples):
            return {"advantages": [s.advantages[0] for s in samples]}

    pool, expert, user = sead_setup(8)
    lm = Learner(expert)
    profiles = ProfileController(mode="full", batch_size=2, n_max=200, seed=0).sample()
    config = build_config("cpu-lm-scratch", group_size=4, greedy_copy=True, over_greedy=True)
    trajectories, update = decision_point_step(config, Fresh(), 0, profiles, lm, expert, DecisionPointSeat(lm, expert), user, pool)
    rewards = [t.rewards.get("agent", 0.0) for t in trajectories]
    beating = [rewards[i] - rewards[i - i % 4] for i in range(8) if rewards[i] > rewards[i - i % 4]]
    assert update["advantages"] == pytest.approx(beating)  # [] where the greedy turn wins every group
