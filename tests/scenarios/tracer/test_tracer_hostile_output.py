"""TRACER / DM-Bench parsers, judge and game on the nastiest model output, and the opening rule."""

from __future__ import annotations

import json
import math
import re

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import dmbench_assistant_v0, tracer_usersim_v0
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS
from dialogue_gym.scenarios.tracer.game import DMBenchGame, TracerGame
from dialogue_gym.scenarios.tracer.judges import DIMENSIONS, LLMJudge
from dialogue_gym.scenarios.tracer.parsing import (
    AssistantMove,
    UserMove,
    parse_assistant_output,
    parse_user_output,
    render_user_output,
)
from dialogue_gym.types import Outcome

MEGABYTE = 1_000_000

HOSTILE_USER_OUTPUT = [
    ('{"intent_level": ' + "9" * 5000 + ', "reply": "ok"}', "integer of 5000 digits"),
    ("{" + '"a": [' * 1000, "nested deeper than MAX_JSON_DEPTH"),
    ('{"intent_level": "x", "reply": "ok"}', "intent_level 'x' is not an int 0-5; kept 2"),
    ('{"intent_level": [3], "reply": 5, "think": {"a": 1}}', "no reply field"),
    ('{"intent_level": NaN, "reply": "ok"}', "non-finite number NaN"),
    ('{"intent_level": Infinity, "reply": "ok"}', "non-finite number Infinity"),
    ('{"intent_level": 3.0, "reply": "a\x07b"}', "Invalid control character"),
    ("<think><think>x</think></think><intent_level><intent_level>3</intent_level></intent_level><reply>ok</reply>", "does not match"),
    ("<intent_level>" + "9" * 5000 + "</intent_level><reply>ok</reply>", "is not an int 0-5"),
    ("<reply>" * 5000, "no reply field"),
    ("\x00\x1b[2J\ud800\u202e", "does not match"),
]


@pytest.mark.parametrize("action, problem", HOSTILE_USER_OUTPUT, ids=lambda value: repr(value)[:40])
def test_hostile_user_output_is_flagged_not_raised(action, problem):
    move = parse_user_output(action, 2)
    assert isinstance(move, UserMove) and not move.format_ok and 0 <= move.intent_level <= 5
    assert re.search(problem, move.problem), move.problem
    assert isinstance(move.think, str) and len(move.problem) < 2000


def test_the_canonical_format_still_parses_with_whitespace_around_tags():
    text = " <think> why </think>\n<intent_level> 4 </intent_level> <reply>Tell me more.</reply>\n"
    assert parse_user_output(text, 2) == UserMove("Tell me more.", 4, "why", True, None)
    stray = "<think>a</think>b</think><intent_level>3</intent_level><reply>ok</reply>"
    assert not parse_user_output(stray, 2).format_ok


@pytest.mark.parametrize(
    "action, utterance",
    [
        ('{"response": ' + "9" * 5000 + "}", '{"response": ' + "9" * 1987),
        ('{"response": 5}', '{"response": 5}'),
        ("[" * 1000, "[" * 1000),
        ('{"response": NaN}', '{"response": NaN}'),
        ("<response>" * 5000 + "hi", ("<response>" * 5000 + "hi")[:2000]),
        ("<response><response>hi</response></response>", "<response>hi"),
        ('{"response": "hi"}', "hi"),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_hostile_assistant_output_is_read_as_text(action, utterance):
    assert parse_assistant_output(action).utterance == utterance


@pytest.mark.parametrize("unit", ["a", "<response>", "<a>", "{", "[", "9", "<reply>x</reply", "wechat 111xxx"])
def test_a_megabyte_of_output_is_read_from_its_head_and_flagged(unit):
    action = (unit * (MEGABYTE // len(unit) + 1))[:MEGABYTE]
    expected = f"output of {MEGABYTE} characters exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}"
    user = parse_user_output(action, 2)
    assert user.problem.startswith(expected) and not user.format_ok
    assert parse_assistant_output(action).problem.startswith(expected)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(
            st.sampled_from(["<think>", "</think>", "<intent_level>", "</intent_level>", "<reply>", "</reply>", "<response>",
                             "</response>", "{", "}", "[", "]", '"', "NaN", "1e999", "9" * 50, ":", ",", "reply", "x", " "]),
            max_size=30,
        ).map("".join),
    )
)
def test_parsers_and_judge_are_total(text):
    assert isinstance(parse_user_output(text, 3), UserMove)
    assert isinstance(parse_assistant_output(text), AssistantMove)
    scores = LLMJudge.parse(text)
    assert set(DIMENSIONS) <= set(scores)


@pytest.mark.parametrize(
    "answer, error",
    [
        ('{"accuracy": ' + "9" * 5000 + "}", "integer of 5000 digits"),
        ('{"accuracy": [' + "[" * 1000 + "}", "nested deeper than MAX_JSON_DEPTH"),
        ('{"accuracy": NaN, "helpfulness": 3, "informativeness": 3, "empathy": 3}', "non-finite number NaN"),
        ('{"accuracy": "5", "helpfulness": 3, "informativeness": 3, "empathy": 3}', "not the rubric's JSON"),
        ("{" * 100_000, "no JSON object"),
        ("x" * MEGABYTE, "no JSON object"),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_the_llm_judge_leaves_unreadable_answers_unscored_with_an_error(answer, error):
    scores = LLMJudge.parse(answer)
    assert all(scores[name] is None for name in (*DIMENSIONS, "rq")) and re.search(error, scores["error"])
    assert len(scores["error"]) < 400


def test_the_llm_judge_reads_its_rubric_json_inside_chatter():
    scores = LLMJudge.parse('Sure! {"accuracy": 4, "helpfulness": 5, "informativeness": 3, "empathy": 4.5} done {')
    assert scores["rq"] == pytest.approx(4.125)


CRASHERS = [action for action, _ in HOSTILE_USER_OUTPUT] + ["x" * MEGABYTE, "<reply>" * 100_000, '{"response": ' + "9" * 5000 + "}"]


@pytest.mark.parametrize("env_id, learner", [("TRACER-UserSim-v0", "user"), ("TRACER-UserSim-v0", "assistant"),
                                             ("DMBench-Assistant-v0", "assistant"), ("DMBench-Assistant-v0", "user")])
def test_the_single_agent_env_steps_on_every_crasher(env_id, learner):
    env = gym.make(env_id, learner=learner)
    env.reset(seed=0)
    for action in CRASHERS:
        _, reward, terminated, truncated, info = env.step(action)
        assert math.isfinite(reward)
        if terminated or truncated:
            json.dumps(env.unwrapped.trajectory().to_dict(), allow_nan=False)
            env.reset(seed=1)


@pytest.mark.parametrize("module", [tracer_usersim_v0, dmbench_assistant_v0])
def test_the_aec_env_steps_on_every_crasher(module):
    env = module.env()
    env.reset(seed=0)
    for action in CRASHERS * 2:
        if not env.agents:
            env.reset(seed=1)
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        env.step(action)
        assert math.isfinite(env.rewards[agent])


# -- the opening rule --------------------------------------------------------------------------------
def started(game_class=TracerGame, **config):
    game = game_class(game_class.config_class(**config))
    game.reset(seed=0)
    return game


@pytest.mark.parametrize("level, read_as", [(5, 4), (0, 1)])
@pytest.mark.parametrize("game_class", [TracerGame, DMBenchGame])
def test_the_users_first_move_cannot_end_the_episode(game_class, level, read_as):
    for invalid_action in ("penalize", "end", "raise"):
        game = started(game_class, invalid_action=invalid_action)
        result = game.step(render_user_output("Sure, 138xxxx1234" if level == 5 else "", level, "why"))
        assert not result.terminated and game.outcome is None and game.current_role == "assistant"
        assert result.info["intent_level"] == read_as and result.info["invalid_action"] is None
        turn = game.turns[0]
        assert turn.parsed["requested_intent_level"] == level and turn.parsed["intent_level"] == read_as
        assert turn.parsed["format_ok"] is False and game.format_ok == [False]


def test_a_later_conversion_still_ends_and_credits_the_assistant():
    game = started(DMBenchGame)
    game.step(render_user_output("Sure, 138xxxx1234", 5))
    game.step("Thanks! We have slots on Saturday.")
    result = game.step(render_user_output("Here: 138xxxx1234", 5))
    assert result.terminated and game.outcome is Outcome.SUCCESS and game.returns["assistant"] == 1.0
    assert "requested_intent_level" not in game.turns[2].parsed
    assert math.isfinite(game.judged["rq"])


def test_dmbench_reset_never_returns_an_ended_episode():
    env = gym.make("DMBench-Assistant-v0")
    first_levels = set()
    for seed in range(3000):
        _, info = env.reset(seed=seed)
        assert info["outcome"] is None and not env.unwrapped.game.done, seed
        assert len(env.unwrapped.game.intents) == 1
        first_levels.add(env.unwrapped.game.intents[0])
    assert first_levels <= {1, 2, 3, 4}


def test_dmbench_vector_reset_then_a_valid_step_works():
    envs = gym.make_vec("DMBench-Assistant-v0", num_envs=121)
    _, infos = envs.reset(seed=0)
    assert not any(infos["outcome"])
    _, rewards, terminated, truncated, _ = envs.step(["Hello! We offer a free trial; what do you need?"] * 121)
    assert np.isfinite(rewards).all() and rewards.shape == (121,)
    envs.close()
