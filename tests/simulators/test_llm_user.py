"""The LLM-played user: prompt, batching, and malformed output handled as part of the episode."""

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.scenarios.sead.parsing import render_user_output


class CountingBackend:
    """Wraps a backend and records the size of every batch it receives."""

    def __init__(self, inner):
        self.inner = inner
        self.batches = []
        self.requests = []

    def generate(self, requests):
        self.batches.append(len(requests))
        self.requests.extend(requests)
        return self.inner.generate(requests)


def test_llm_user_prompt_and_well_formed_replies():
    replies = [render_user_output("Who is this?", (2, 2, 2), 0), render_user_output("Done, I got the SMS.", (3, 2, 3), 1)]
    backend = CountingBackend(CannedBackend(replies))
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=backend)
    env.reset(seed=0, options={"profile": {"state": [2, 2, 2], "behaviors": ["IV1"]}})
    observation, reward, terminated, _, info = env.step("Hello, is this the owner?")
    system = backend.requests[0].messages[0]
    assert system["role"] == "system" and "asks whether the caller is a robot" in system["content"] and "cooperation 2/4" not in system["content"]
    caller = "Hello, is this the owner?\n\n[Your current state: cooperation 2/4, emotion 2/3, trust 2/5.]"
    assert backend.requests[0].messages[-1] == {"role": "user", "content": caller}
    assert observation["messages"][-1] == {"role": "user", "content": "Who is this?"}
    assert not terminated and "user_state" not in info and env.unwrapped.game.privileged()["user_state"] == (2, 2, 2)
    observation, reward, terminated, _, info = env.step("Please claim it in the app.")
    assert terminated and reward == 1.0 and info["outcome"] == "success"


def test_malformed_llm_user_output_is_flagged_and_the_episode_goes_on():
    backend = CannedBackend(["I dunno <cooperation>9</cooperation>", "<reply>ok</reply><status>-5</status>"])
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=backend)
    env.reset(seed=0, options={"profile": {"state": [1, 1, 1], "behaviors": ["CC1"]}})
    env.step("Hello")
    observation, _, terminated, _, _ = env.step("Hello again")
    user_turns = env.unwrapped.trajectory().turns_of("user")
    assert "no <reply> tag" in user_turns[0].invalid and "clamped" in user_turns[0].invalid
    assert user_turns[0].state == (4, 1, 1)
    assert "status '-5'" in user_turns[1].invalid and not terminated
    assert env.unwrapped.trajectory().reward_terms["user/invalid_action"] == pytest.approx(-0.2)


def test_vector_env_sends_one_batch_per_step():
    backend = CountingBackend(CannedBackend([render_user_output("Hm, go on.", (2, 2, 2), 0)]))
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=5, user="llm", user_backend=backend)
    envs.reset(seed=0)
    for _ in range(3):
        envs.step(["Tell me more."] * 5)
    assert backend.batches == [5, 5, 5]


def test_tiny_transformers_user_runs_in_the_vector_env(tiny_model_dir):
    spec = {"name": "transformers", "model": str(tiny_model_dir), "max_new_tokens": 12, "seed": 0}
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=3, user="llm", user_backend=spec)
    observations, _ = envs.reset(seed=0)
    observations, rewards, terminations, _, infos = envs.step(["Hello, is this the owner?"] * 3)
    trajectories = [game.trajectory() for game in envs.unwrapped.games]
    for trajectory in trajectories:
        user_turn = trajectory.turns_of("user")[0]
        assert user_turn.invalid is not None  # a random model cannot produce the record format
        assert user_turn.state == tuple(trajectory.profile["state"])  # repaired: state kept
    assert not terminations.any()
