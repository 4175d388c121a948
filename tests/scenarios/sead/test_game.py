import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.errors import (
    ConfigError,
    EpisodeStateError,
    InvalidAction,
    ScenarioError,
)
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.parsing import render_agent_output, render_user_output
from dialogue_gym.types import Outcome, Trajectory

PROFILE = {"state": [3, 2, 3], "behaviors": ["CC1"]}


def started(**config):
    game = SeadGame(SeadConfig(**config))
    game.reset(seed=0, options={"profile": PROFILE})
    return game


def test_agent_speaks_first_and_observations_hide_the_state_from_the_agent():
    game = started()
    assert game.current_role == "agent"
    agent_obs = game.observe("agent")
    assert set(agent_obs) == {"messages", "turn"}
    assert agent_obs["messages"][0]["role"] == "system" and "700 units" in agent_obs["messages"][0]["content"]
    user_obs = game.observe("user")
    assert list(user_obs["state"]) == [3, 2, 3] and user_obs["behaviors"].sum() == 1
    assert "hidden costs" in user_obs["messages"][0]["content"]
    assert "user_state" not in game.info("agent") and game.info("user")["user_state"] == (3, 2, 3)
    assert game.privileged()["user_state"] == (3, 2, 3) and game.privileged()["profile"] == game.episode_profile()
    assert game.role_profile("agent") == {} and game.role_profile("user") == game.episode_profile()


def test_success_needs_status_one_and_cooperation_three():
    game = started()
    game.step(render_agent_output("Hello"))
    result = game.step(render_user_output("Done.", (2, 2, 3), 1))
    assert not result.terminated and "completed with cooperation 2 < 3" in result.info["invalid_action"]
    game.step(render_agent_output("Please claim it"))
    result = game.step(render_user_output("Done.", (3, 2, 3), 1))
    assert result.terminated and result.rewards["agent"] == 1.0
    assert game.trajectory().outcome is Outcome.SUCCESS


def test_hangup_and_timeout():
    game = started(user_reward="adversarial")
    game.step("Hi")
    result = game.step(render_user_output("Bye.", (1, 1, 1), -1))
    assert result.terminated and game.outcome is Outcome.HANGUP and result.rewards["user"] == 1.0
    game = started(max_agent_turns=2)
    for _ in range(2):
        game.step("Hi")
        result = game.step(render_user_output("Hm.", (2, 2, 2), 0))
    assert result.terminated and not result.truncated and game.outcome is Outcome.TIMEOUT
    assert len(game.trajectory().turns_of("agent")) == 2


def test_invalid_action_modes():
    game = started(invalid_action="penalize", invalid_action_penalty=0.25)
    result = game.step("")
    assert result.info["invalid_action"] == "empty utterance" and result.rewards["agent"] == -0.25
    heard = "(silence)\n\n[Your current state: cooperation 3/4, emotion 2/3, trust 3/5.]"
    assert game.current_role == "user" and game.observe("user")["messages"][-1]["content"] == heard
    game = started(invalid_action="end")
    result = game.step("<response></response>")
    assert result.terminated and game.outcome is Outcome.INVALID
    game = started(invalid_action="raise")
    with pytest.raises(InvalidAction, match="empty utterance.*invalid_action='penalize'"):
        game.step("")


def test_non_string_action_raises_naming_type_and_fix():
    game = started()
    with pytest.raises(InvalidAction, match=r"must be a str .* got int: 42\. Decode model output"):
        game.step(42)


def test_lifecycle_errors():
    game = SeadGame()
    with pytest.raises(EpisodeStateError, match="before reset"):
        game.step("hi")
    game = started()
    game.step("hi")
    game.step(render_user_output("Bye.", (1, 1, 1), -1))
    with pytest.raises(EpisodeStateError, match="after the episode ended"):
        game.step("hi")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"invalid_action": "ignore"}, "invalid_action='ignore' is not supported"),
        ({"max_agent_turns": 0}, "max_agent_turns must be a positive int, got 0"),
        ({"user_reward": "x"}, "user_reward='x' is not supported"),
        ({"success_reward": "1"}, "success_reward must be a finite number, got '1'"),
        ({"success_reward": float("nan")}, "success_reward must be a finite number, got nan"),
        ({"invalid_action_penalty": float("inf")}, "invalid_action_penalty must be a finite number, got inf"),
        ({"max_utterance_chars": 0}, r"max_utterance_chars must be an int 1-20000 \(MAX_ACTION_CHARS, what a parser reads\), got 0"),
        ({"max_utterance_chars": 50_000}, r"max_utterance_chars must be an int 1-20000 .*, got 50000"),
        ({"max_utterance_chars": True}, r"max_utterance_chars must be an int 1-20000 .*, got True"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SeadConfig(**kwargs)


def test_env_kwargs_errors_name_the_value():
    with pytest.raises(ConfigError, match=r"Unknown keyword\(s\) \['max_turns'\]"):
        gym.make("SEAD-Outbound-v0", max_turns=3)
    with pytest.raises(ConfigError, match="user='gpt' is not a known user policy"):
        gym.make("SEAD-Outbound-v0", user="gpt")
    with pytest.raises(ConfigError, match="user='llm' needs user_backend"):
        gym.make("SEAD-Outbound-v0", user="llm")
    with pytest.raises(ConfigError, match="learner='judge' is not a role"):
        gym.make("SEAD-Outbound-v0", learner="judge")


@pytest.mark.parametrize(
    "profile, message",
    [
        ({"state": [5, 0, 0], "behaviors": ["CC1"]}, r"cooperation 5 outside 0..4"),
        ({"state": [1, 1, 1], "behaviors": []}, "needs 1-3 behaviors"),
        ({"state": [1, 1, 1], "behaviors": ["NOPE"]}, r"\['NOPE'\] are not in the behavior library"),
        ({"state": "high", "behaviors": ["CC1"]}, "must be three ints"),
        ([1, 2, 3], "must be a Profile or a dict"),
    ],
)
def test_profile_validation(profile, message):
    with pytest.raises(ScenarioError, match=message):
        SeadGame().reset(seed=0, options={"profile": profile})


def test_bad_seed_and_options():
    with pytest.raises(ConfigError, match="seed must be a non-negative int"):
        SeadGame().reset(seed=-1)
    with pytest.raises(ConfigError, match="options must be a dict"):
        SeadGame().reset(options=["profile"])


def test_scenario_file_errors_name_file_and_field(tmp_path):
    bad = tmp_path / "behaviors.json"
    bad.write_text('{"categories": {"A": {"resolved_by": ["value"]}}, "behaviors": [{"id": "x", "category": "B", "description": "d", "lines": ["l"]}]}')
    with pytest.raises(ScenarioError, match=r"behaviors\[0\]: field 'category' is 'B'"):
        SeadGame(behaviors_file=str(bad))
    broken = tmp_path / "scenario.json"
    broken.write_text('{"name": "x",\n "facts": }')
    with pytest.raises(ScenarioError, match="line 2: invalid JSON"):
        SeadGame(scenario_file=str(broken))


def test_trajectory_round_trips_through_json():
    game = started()
    game.step(render_agent_output("Hello", (1, 1, 1)))
    game.step(render_user_output("Bye.", (1, 1, 1), -1))
    trajectory = game.trajectory()
    assert Trajectory.from_dict(trajectory.to_dict()) == trajectory
