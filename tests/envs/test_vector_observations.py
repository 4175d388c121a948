"""The vector env batches observations exactly as Gymnasium's ``concatenate`` would, with the per-space
dispatch resolved once at construction instead of on every step."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.vector import observation_batcher
from dialogue_gym.spaces import ChatMessages, Utterance
from envs_registry import REGISTRY

LEARNERS = [(entry.id, role) for entry in REGISTRY for role in entry.roles]


def same(batched, expected):
    """Equal values, and the same container types and array dtypes all the way down."""
    assert type(batched) is type(expected)
    if isinstance(expected, dict):
        assert batched.keys() == expected.keys()
        for key in expected:
            same(batched[key], expected[key])
    elif isinstance(expected, np.ndarray):
        assert batched.dtype == expected.dtype and batched.shape == expected.shape and np.array_equal(batched, expected)
    else:
        assert batched == expected


@pytest.mark.parametrize("env_id, learner", LEARNERS, ids=[f"{i}-{r}" for i, r in LEARNERS])
def test_every_id_batches_its_observations_as_gymnasium_does(env_id, learner):
    envs = gym.make_vec(env_id, num_envs=3, learner=learner).unwrapped
    envs.reset(seed=5)
    space = envs.single_observation_space
    for _ in range(4):
        singles = [game.observe(learner) for game in envs.games]
        same(envs._observations(), concatenate(space, singles, create_empty_array(space, 3)))
        envs.step(["Hello, is this the owner? I call about your account."] * 3)


def test_spaces_with_no_shortcut_go_through_concatenate():
    space = spaces.Dict({
        "box": spaces.Box(0.0, 1.0, (2,), dtype=np.float32),
        "turn": spaces.Discrete(4, start=1),
        "text": spaces.Text(8),
        "reply": Utterance(),
        "messages": ChatMessages(),
        "nested": spaces.Dict({"flag": spaces.MultiBinary(3)}),
    })
    space.seed(0)
    items = [space.sample() for _ in range(4)]
    same(observation_batcher(space, 4)(items), concatenate(space, items, create_empty_array(space, 4)))
