"""The vector view checks the whole batch of actions before moving any sub-env: a bad batch raises,
names what is wrong, and changes nothing."""

import gymnasium as gym
import numpy as np
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.errors import ConfigError, InvalidAction

HELLO = "Hello, is this the owner?"
HOW = r"pass a list of 2 strings, one action per sub-env"


def started(num_envs=2):
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=num_envs)
    envs.reset(seed=0)
    return envs


def snapshot(envs):
    return [game.trajectory().to_dict() for game in envs.unwrapped.games], [g.current_role for g in envs.unwrapped.games]


@pytest.mark.parametrize(
    "batch, error, match",
    [
        ("hi", InvalidAction, rf"step\(\) got str 'hi' as the batch of actions; {HOW}"),
        (b"hi", InvalidAction, rf"step\(\) got bytes b'hi' as the batch of actions; {HOW}"),
        (42, InvalidAction, rf"step\(\) got int 42 as the batch of actions; {HOW}"),
        (None, InvalidAction, rf"step\(\) got NoneType None as the batch of actions; {HOW}"),
        ({0: HELLO, 1: HELLO}, InvalidAction, rf"step\(\) got dict .* as the batch of actions; {HOW}"),
        ((a for a in [HELLO, HELLO]), InvalidAction, rf"step\(\) got generator .* as the batch of actions; {HOW}"),
        (np.array(HELLO), InvalidAction, rf"NumPy array of shape \(\) as the batch of actions; {HOW}"),
        (np.array([[HELLO], [HELLO]]), InvalidAction, rf"NumPy array of shape \(2, 1\) as the batch of actions; {HOW}"),
        ([HELLO], ConfigError, rf"needs one action per sub-env \(2\), got 1; {HOW}"),
        ([HELLO] * 3, ConfigError, rf"needs one action per sub-env \(2\), got 3; {HOW}"),
        ([HELLO, 5], InvalidAction, rf"actions\[1\] must be a str \(the learner's raw text\), got int: 5; {HOW}"),
        ([None, HELLO], InvalidAction, r"actions\[0\] must be a str .*got NoneType: None"),
        ([HELLO, b"hi"], InvalidAction, r"actions\[1\] must be a str .*got bytes: b'hi'"),
        (np.array([HELLO, 5], dtype=object), InvalidAction, r"actions\[1\] must be a str .*got int: 5"),
    ],
    ids=["str", "bytes", "int", "none", "dict", "generator", "0-d-array", "2-d-array", "short", "long",
         "int-element", "none-element", "bytes-element", "object-array-int"],
)
def test_a_bad_batch_raises_and_changes_nothing(batch, error, match):
    envs = started()
    envs.step([HELLO, HELLO])
    before = snapshot(envs)
    with pytest.raises(error, match=match):
        envs.step(batch)
    assert snapshot(envs) == before
    twin = started()
    twin.step([HELLO, HELLO])
    after = envs.step(["Can I tell you about a free ad credit?"] * 2)
    expected = twin.step(["Can I tell you about a free ad credit?"] * 2)
    assert snapshot(envs) == snapshot(twin)
    assert after[1].tolist() == expected[1].tolist() and after[2].tolist() == expected[2].tolist()


def test_the_next_step_after_a_rejected_batch_is_the_agents_turn_not_the_users():
    envs = started()
    with pytest.raises(InvalidAction):
        envs.step([HELLO, 5])
    envs.step([HELLO, HELLO])
    for game in envs.unwrapped.games:
        agent, user = game.trajectory().turns
        assert (agent.role, agent.raw) == ("agent", HELLO)
        assert user.role == "user" and user.raw != HELLO, "the learner's text was recorded as the user's turn"


@pytest.mark.parametrize("dtype", [None, object], ids=["unicode-array", "object-array"])
def test_numpy_arrays_of_str_are_accepted_as_a_batch(dtype):
    envs, twin = started(), started()
    batch = np.array([HELLO, "Hi there"], dtype=dtype)
    envs.step(batch)
    twin.step([HELLO, "Hi there"])
    assert snapshot(envs) == snapshot(twin)
    assert all(type(game.trajectory().turns[0].raw) is str for game in envs.unwrapped.games)


def test_tuples_are_accepted_and_actions_of_sub_envs_being_reset_must_still_be_str():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=2, max_agent_turns=1)
    envs.reset(seed=0)
    _, _, terminations, _, _ = envs.step((HELLO, HELLO))
    assert terminations.all()
    with pytest.raises(InvalidAction, match=r"actions\[0\] must be a str"):
        envs.step([None, None])
    envs.step(["", ""])
