"""TRACER-UserSim-v0 and DMBench-Assistant-v0: the same seed gives the same transcript in every view,
and the kwargs choose who plays which role."""

import gymnasium as gym
import pytest
import views

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.envs import dmbench_assistant_v0, tracer_usersim_v0
from dialogue_gym.envs.driver import role_seed
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.tracer.assistants import SopAssistant
from dialogue_gym.scenarios.tracer.parsing import render_user_output
from dialogue_gym.scenarios.tracer.users import IntentDynamicsUser

ROLES = ("assistant", "user")
CASES = [("TRACER-UserSim-v0", tracer_usersim_v0, "user"), ("DMBench-Assistant-v0", dmbench_assistant_v0, "assistant")]


def policies():
    return {"assistant": SopAssistant(), "user": IntentDynamicsUser()}


def transcript(trajectory):
    return [(turn.role, turn.raw, turn.state) for turn in trajectory.turns], trajectory.outcome, trajectory.profile["session_id"]


@pytest.mark.parametrize("env_id, module, learner", CASES)
def test_every_view_gives_the_same_transcript(env_id, module, learner):
    seeds = [0, 1, 2]
    singles = [transcript(views.play_single(env_id, policies, learner, seed)) for seed in seeds]
    assert all(len(s[0]) >= 1 for s in singles) and len({s[2] for s in singles}) > 1
    for seed, single in zip(seeds, singles):
        assert transcript(views.play_aec(module, policies, seed)) == single
        assert transcript(views.play_parallel(module, policies, seed)) == single
    assert [transcript(t) for t in views.play_vector(env_id, policies, learner, seeds)] == singles


def test_evaluate_plays_the_reference_session_of_each_start():
    trajectories = evaluate("TRACER-UserSim-v0", "scripted", 3, seed=5, learner="user")
    env = gym.make("TRACER-UserSim-v0")
    sessions = [env.unwrapped.game.evaluation_options(t.meta["start"], 5)["session_id"] for t in trajectories]
    assert [t.profile["session_id"] for t in trajectories] == sessions and len(set(sessions)) == 3
    player = IntentDynamicsUser()
    start = trajectories[1].meta["start"]
    options = env.unwrapped.game.evaluation_options(start, 5)
    observation, info = env.reset(seed=5 + start, options=options)
    memory = player.start(env.unwrapped.game.episode_profile(), role_seed(5 + start, "user", ROLES))
    done = False
    while not done:
        observation, _, done, _, info = env.step(player.act(observation, info, memory))
    assert transcript(env.unwrapped.trajectory()) == transcript(trajectories[1])


def test_the_learner_gets_its_reward_at_the_end():
    env = gym.make("TRACER-UserSim-v0")
    observation, info = env.reset(seed=0, options={"session_id": "syn-g00-s00"})
    assert observation["turn"] == 0 and info["intent_trajectory"] == []
    observation, reward, terminated, truncated, info = env.step(render_user_output("How big are the classes?", 3, "curious"))
    assert reward == 0.0 and not terminated and observation["messages"][-1]["role"] == "user"
    assert info["intent_trajectory"] == [3] and "dtw_cost" not in info and "session_id" not in info
    assert env.unwrapped.game.privileged()["dtw_cost"] is not None
    _, reward, terminated, _, info = env.step(render_user_output("138xxxx0000", 5, "ready"))
    assert terminated and reward == pytest.approx(info["reward_terms"]["total"]) and info["outcome"] == "success"


def test_an_llm_can_play_the_user_in_tracer_format():
    replies = [render_user_output("How much is it?", 3, "asks"), render_user_output("", 0, "leaves")]
    env = gym.make("DMBench-Assistant-v0", user="llm", user_backend=CannedBackend(replies, cycle=False))
    observation, info = env.reset(seed=0)
    assert env.unwrapped.game.intents == [3] and "intent_trajectory" not in info  # the user's own state
    assert observation["messages"][-1] == {"role": "user", "content": "How much is it?"}
    _, reward, terminated, _, info = env.step("It depends on the plan. Leave your number?")
    assert terminated and reward == 0.0 and info["outcome"] == "hangup" and info["response_quality"]["judge"] == "heuristic"
    env = gym.make("TRACER-UserSim-v0", assistant="llm", assistant_backend=CannedBackend(["Sure, we have it. Your number?"]))
    env.reset(seed=0)
    observation, *_ = env.step(replies[0])
    assert observation["messages"][-1] == {"role": "user", "content": "Sure, we have it. Your number?"}


def test_role_kwargs_and_render():
    env = gym.make("DMBench-Assistant-v0", user="eager", render_mode="ansi")
    env.reset(seed=1)
    env.step("We have SUVs in stock.")
    text = env.render()
    assert "[DMBench-Assistant-v0 seed=1" in text and "\nassistant: We have SUVs in stock." in text
    with pytest.raises(ConfigError, match="assistant='genius' is not a known assistant policy"):
        gym.make("TRACER-UserSim-v0", assistant="genius")
    with pytest.raises(ConfigError, match=r"Unknown keyword\(s\) \['temperature'\] for TracerConfig"):
        gym.make("TRACER-UserSim-v0", temperature=0.7)
