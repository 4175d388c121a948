"""The isolation gym's start mix (SPEC §3: 70:30 failures:successes) gives exactly ``count`` starts."""

from __future__ import annotations

import random

import pytest

from dialogue_gym.types import Trajectory
from trainers.rlada.arena import gym_starts


def episode(scenario, passed):
    return Trajectory("RLADA-Banking-v0", 0, {"scenario": scenario}, meta={"strict_pass": passed, "verdict": {"routing_correct": passed}})


@pytest.mark.parametrize("count, failures", [(20, 14), (10, 7), (3, 2), (1, 1)])
def test_count_starts_round_failure_fraction_of_them_from_losses(count, failures):
    pool = [episode("lost", False)] * 3 + [episode("won", True)] * 3
    starts = gym_starts(pool, "agent", count, 0.7, random.Random(0))
    assert len(starts) == count
    assert [s["scenario"] for s in starts].count("lost") == failures  # round(count * 0.7)


def test_one_kind_missing_gives_all_starts_from_the_other():
    losses = [episode("lost", False)] * 2
    assert [s["scenario"] for s in gym_starts(losses, "agent", 5, 0.7, random.Random(0))] == ["lost"] * 5
    assert [s["scenario"] for s in gym_starts(losses, "customer", 5, 0.7, random.Random(0))] == ["lost"] * 5
