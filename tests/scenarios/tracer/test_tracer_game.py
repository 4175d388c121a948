import math

import pytest

from dialogue_gym.errors import (
    ConfigError,
    EpisodeStateError,
    InvalidAction,
    ScenarioError,
)
from dialogue_gym.rewards import tracer_reward
from dialogue_gym.scenarios.tracer.data import load_sessions
from dialogue_gym.scenarios.tracer.game import DMBenchGame, TracerConfig, TracerGame
from dialogue_gym.scenarios.tracer.parsing import render_user_output
from dialogue_gym.types import Outcome, Trajectory

SESSION = "syn-g00-s00"


def started(game_class=TracerGame, **config):
    game = game_class(game_class.config_class(**config))
    game.reset(seed=0, options={"session_id": SESSION})
    return game


def user(level, reply=None):
    return render_user_output(reply if reply is not None else ("138xxxx1234" if level == 5 else "Okay?"), level, "why")


def test_user_moves_first_from_the_reference_opening():
    game = started()
    reference = load_sessions()[SESSION]
    assert game.current_role == "user"
    user_view, assistant_view = game.observe("user"), game.observe("assistant")
    assert user_view["turn"] == 0 and user_view["messages"][-1] == {"role": "user", "content": reference.opening}
    assert "<intent_level>" in user_view["messages"][0]["content"] and reference.merchant["name"] in user_view["messages"][0]["content"]
    assert assistant_view["messages"][-1] == {"role": "assistant", "content": reference.opening}
    assert reference.merchant["facts"][0] in assistant_view["messages"][0]["content"]
    assert game.episode_profile()["opening"] == reference.opening and "turns" not in game.episode_profile()


def test_conversion_ends_the_session_and_scores_both_roles():
    game = started()
    game.step(user(3))
    result = game.step("We have what you need. Leave your number?")
    assert game.intents == [3] and "intent_trajectory" not in result.info and game.current_role == "user"
    game.step(user(4))
    game.step("Great.")
    result = game.step(user(5))
    assert result.terminated and game.outcome is Outcome.SUCCESS
    expected = tracer_reward([3, 4, 5], load_sessions()[SESSION].intents, [True, True, True])
    assert result.rewards["user"] == pytest.approx(expected.total)
    assert result.rewards["assistant"] == 1.0
    info, hidden = result.info, game.privileged()
    assert hidden["dtw_cost"] == expected.dtw_cost and info["reward_terms"]["total"] == pytest.approx(expected.total)
    assert len(hidden["deviations"]) == 3 and hidden["deviation_suffix"][-1] == hidden["deviations"][-1]
    trajectory = Trajectory.from_dict(game.trajectory().to_dict())
    assert trajectory.reward_terms["user/final"] == pytest.approx(0.5 * expected.r_final)
    assert trajectory.meta["reference"]["session_id"] == SESSION and trajectory.meta["alignment"]["rho"] == 0.4
    assert [t.parsed["intent_level"] for t in trajectory.turns_of("user")] == [3, 4, 5]


def test_dropout_and_the_turn_limit():
    game = started()
    game.step(user(2))
    game.step("Hm.")
    result = game.step(user(0, ""))
    assert result.terminated and game.outcome is Outcome.HANGUP and result.rewards["assistant"] == 0.0
    game = started(max_user_turns=2)
    game.step(user(3))
    game.step("Hm.")
    result = game.step(user(3))
    assert result.terminated and not result.truncated and game.outcome is Outcome.TIMEOUT
    assert game.observe("user")["turn"] == 2


def test_the_alignment_is_tracked_after_every_user_turn_in_the_privileged_channel_only():
    game = started(rho=0.5)
    game.step(user(1))
    game.step("Sorry.")
    game.step(user(2))
    mine = game.info("user")
    assert mine["intent_level"] == 2 and mine["intent_trajectory"] == [1, 2]
    hidden = game.privileged()
    d = hidden["deviations"]
    assert hidden["deviation_suffix"] == pytest.approx([d[0] + 0.5 * d[1], d[1]])
    assert hidden["session_id"] == SESSION and hidden["reference_intents"] == list(load_sessions()[SESSION].intents)
    for role in ("user", "assistant"):
        info = game.info(role)
        assert not {"deviations", "deviation_suffix", "dtw_cost", "session_id", "group_id", "reward_terms"} & set(info)
        assert info["outcome"] is None
    assert "intent_level" not in game.info("assistant")


def test_malformed_output_is_part_of_the_episode():
    game = started(invalid_action_penalty=0.3)
    result = game.step("Where is your store?")
    assert "does not match" in result.info["invalid_action"] and result.rewards["user"] == -0.3
    assert result.info["intent_trajectory"] == [2], "an unreadable first level falls back to fallback_intent_level"
    assert game.current_role == "assistant"
    result = game.step("")
    assert result.info["invalid_action"] == "empty utterance" and game.observe("user")["messages"][-1]["content"] == "(silence)"
    result = game.step("<intent_level>x</intent_level><reply>Hm</reply>")
    assert result.info["intent_trajectory"] == [2, 2], "an unreadable level keeps the previous one"
    game = started(invalid_action="end")
    assert game.step("nonsense").terminated and game.outcome is Outcome.INVALID
    game = started(invalid_action="raise")
    with pytest.raises(InvalidAction, match="does not match.*invalid_action='penalize'"):
        game.step("nonsense")
    game = started()
    with pytest.raises(InvalidAction, match=r"must be a str .* got int: 3"):
        game.step(3)


def test_format_failures_lower_r_fmt():
    game = started()
    game.step(user(3))
    game.step("Hi")
    game.step("<intent_level>0</intent_level><reply></reply>")
    reward = game.trajectory().meta["tracer_reward"]
    assert game.outcome is Outcome.HANGUP and reward["r_fmt"] == 0.5


def test_dmbench_defaults_judge_every_episode():
    game = started(DMBenchGame)
    game.step(user(3, "Where is the store?"))
    game.step("I understand. " + load_sessions()[SESSION].merchant["facts"][0] + ". Leave your phone number?")
    result = game.step(user(5))
    quality = result.info["response_quality"]
    assert quality["judge"] == "heuristic" and 1.0 <= quality["rq"] <= 5.0
    assert game.trajectory().scenario == "DMBench-Assistant-v0" and game.trajectory().meta["response_quality"] == quality
    assert started(DMBenchGame).config.invalid_action_penalty == 0.1 and TracerConfig().invalid_action_penalty == 0.0


def test_sessions_subset_evaluation_order_and_reset_options():
    game = TracerGame(sessions=["syn-g01-s03", "syn-g02-s00"])
    assert [game.evaluation_options(i, 0)["session_id"] for i in range(3)] == ["syn-g01-s03", "syn-g02-s00", "syn-g01-s03"]
    game.reset(seed=4)
    assert game.episode_profile()["session_id"] in {"syn-g01-s03", "syn-g02-s00"}
    clone = game.spawn()
    clone.reset(seed=4)
    assert clone.episode_profile()["session_id"] == game.episode_profile()["session_id"]
    with pytest.raises(ScenarioError, match="Unknown session id 'nope'"):
        game.reset(options={"session_id": "nope"})


def test_abort_records_a_backend_failure():
    game = started()
    result = game.abort("user policy failed: timeout")
    assert result.truncated and game.outcome is Outcome.BACKEND_FAILURE
    assert game.trajectory().meta["failure"] == "user policy failed: timeout"


@pytest.mark.parametrize(
    "config, message",
    [
        ({"max_user_turns": 0}, r"max_user_turns must be an int >= 2 \(the user's first move cannot end an episode\), got 0"),
        ({"max_user_turns": 1}, r"max_user_turns must be an int >= 2 .*, got 1"),
        ({"max_utterance_chars": 0}, r"max_utterance_chars must be an int 1-20000 \(MAX_ACTION_CHARS, what a parser reads\), got 0"),
        ({"max_utterance_chars": 10**6}, r"max_utterance_chars must be an int 1-20000 .*, got 1000000"),
        ({"user_reward": "dtw"}, r"user_reward='dtw' is not supported; use one of \('tracer', 'none'\)"),
        ({"reward_weights": [1, 2]}, r"reward_weights must be three numbers \(l1, l2, l3\), got \[1, 2\]"),
        ({"rho": 2}, r"rho must be in \[0.0, 1.0\], got 2"),
        ({"eta_flat": -1}, r"eta_flat must be in \[0.0, 1.0\], got -1"),
        ({"conversion_reward": float("inf")}, r"conversion_reward must be a finite number, got inf"),
        ({"alpha": float("nan")}, r"alpha must be a finite number, got nan"),
        ({"eta_flat": 0}, r"eta_flat must be in \(0, 1\], got 0; 1 turns the flatness discount off"),
        ({"judge": "gpt"}, r"judge='gpt' is not supported; use one of \['none', 'heuristic', 'llm'\]"),
        ({"judge": "llm"}, "judge='llm' needs judge_backend=..."),
        ({"sessions": []}, "sessions must be a non-empty list of session ids"),
        ({"fallback_intent_level": 0}, "fallback_intent_level must be an int 1-4, got 0"),
        ({"invalid_action": "ignore"}, "invalid_action='ignore' is not supported"),
    ],
)
def test_config_errors(config, message):
    with pytest.raises(ConfigError, match=message):
        TracerGame(**config)


def test_lifecycle_errors():
    with pytest.raises(EpisodeStateError, match="before reset"):
        TracerGame().step("hi")
    game = started()
    game.step(user(2))
    game.step("Hm.")
    game.step(user(0, ""))
    with pytest.raises(EpisodeStateError, match="after the episode ended"):
        game.step(user(3))
    assert math.isfinite(game.trajectory().rewards["user"])
