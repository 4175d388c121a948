"""The jointly trained SEAD owner's features and draws, by hand (issue 43 item 6, trainers/sead/joint_user.py):
the call phase a turn falls in, and move draws from a stream of the owner's own."""

from __future__ import annotations

import random

import pytest

from dialogue_gym.scenarios.sead.data import DEFAULT_BEHAVIORS_FILE, load_behaviors
from dialogue_gym.scenarios.sead.scripted_user import ScriptedUser
from trainers.sead.joint_user import FEATURES, JointUser, features

SCRIPTED = ScriptedUser(load_behaviors(DEFAULT_BEHAVIORS_FILE))


@pytest.mark.parametrize("turn, phase", [(0, "early"), (2, "early"), (3, "middle"), (5, "middle"), (6, "late"), (14, "late")])
def test_the_phase_feature_of_a_turn(turn, phase):
    # early: turns 0-2, middle: 3-5, late: 6 on
    observation = {"turn": turn, "state": [1, 2, 3], "messages": [{"role": "user", "content": "Hello"}]}
    names = [FEATURES[i] for i in features(observation, 0)]
    assert names[:2] == ["bias", phase]
    assert names[2:5] == ["cooperation:1", "emotion:2", "trust:3"] and names[-1] == "scripted:continue"


def test_the_owners_move_draws_are_not_the_scripted_owners_stream():
    # The scripted owner draws from random.Random(seed); the trained owner's moves from a stream of their own,
    # so which move it picks does not follow the scripted owner's own luck.
    profile = {"state": [1, 2, 3], "behaviors": []}
    for seed in (0, 1, 7):
        memory = JointUser(SCRIPTED, 1.0).start(profile, seed)
        scripted_stream = random.Random(seed)
        assert [memory["rng"].random() for _ in range(5)] != [scripted_stream.random() for _ in range(5)]
        first, again = (JointUser(SCRIPTED, 1.0).start(profile, seed)["rng"] for _ in range(2))
        assert [first.random() for _ in range(5)] == [again.random() for _ in range(5)]  # and still seeded by the episode


@pytest.mark.parametrize("status, name", [(0, "scripted:continue"), (1, "scripted:done"), (-1, "scripted:hang_up")])
def test_the_scripted_owners_next_status_is_a_feature(status, name):
    # the record's status: 0 the call goes on, 1 the owner does the operation, -1 it hangs up
    observation = {"turn": 4, "state": [0, 0, 0], "messages": [{"role": "user", "content": "Hello"}]}
    assert FEATURES[features(observation, status)[-1]] == name
