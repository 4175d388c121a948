"""SEAD's parsers and game on the nastiest model output: a parsed move or a flagged one, never an exception."""

from __future__ import annotations

import json
import math
import re

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import sead_outbound_v0
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS
from dialogue_gym.scenarios.sead.parsing import (
    AgentMove,
    UserMove,
    parse_agent_output,
    parse_user_output,
    render_user_output,
)
from dialogue_gym.scenarios.sead.state import UserState

PREVIOUS = UserState(1, 1, 1)
MEGABYTE = 1_000_000

# (action, a fragment of the problem it must be flagged with)
HOSTILE_AGENT_OUTPUT = [
    ('{"response": "hi", "cooperation_score": ' + "9" * 5000 + "}", "integer of 5000 digits"),
    ("{" + '"a": [' * 1000 + "1", "nested deeper than MAX_JSON_DEPTH"),
    ("[" * 1000, "plain"),
    ('{"response": 5}', "no string 'response' field \\(got 5\\)"),
    ('{"response": ["hi"]}', "no string 'response' field"),
    ('{"response": "hi", "cooperation_score": [1], "emotion_score": 2, "trust_score": 3}', "state estimate is not integer"),
    ('{"response": "hi", "cooperation_score": NaN, "emotion_score": 2, "trust_score": 3}', "non-finite number NaN"),
    ('{"response": "hi", "trust_score": Infinity}', "non-finite number Infinity"),
    ('{"response": "hi", "trust_score": 1e999}', "is not finite"),
    ('{"response": "a\x00b"}', "Invalid control character"),
    ("[1, 2]", "plain"),
    ('{"response": "hi", "stage": {"x": 1}}', "stage \\{'x': 1\\} is not an integer"),
    ("<response><response>hi</response></response><stage><stage>1</stage></stage>", "stage '<stage>1' is not an integer"),
    ("<response>" * 5000, "unclosed <response> tag"),
    ("<response>hi</response><cooperation_score>" + "9" * 5000 + "</cooperation_score>", "state estimate"),
    ("\x00\x1b[2J\ud800\u202e", "plain"),
    ("", "empty utterance"),
]


@pytest.mark.parametrize("action, problem", HOSTILE_AGENT_OUTPUT, ids=lambda value: repr(value)[:40])
def test_hostile_agent_output_is_flagged_not_raised(action, problem):
    move = parse_agent_output(action)
    assert isinstance(move, AgentMove)
    if problem == "plain":
        assert move.format == "plain"
    else:
        assert move.problem is not None and re.search(problem, move.problem), move.problem
    assert len(move.utterance) <= 2000 and len(move.problem or "") < 2000


@pytest.mark.parametrize(
    "action",
    [
        "<reply>" + "9" * 5000 + "</reply><cooperation>" + "9" * 5000 + "</cooperation>",
        "<cooperation>NaN</cooperation><trust>-Infinity</trust><status>" + "1" * 4400 + "</status>",
        "<think><think><reply>x</reply></think></think>",
        "<reply>" * 5000,
        '{"reply": "hi", "cooperation": 2}',
        "[" * 1000,
        "\x00\x1b\ud800",
        "",
    ],
    ids=lambda value: repr(value)[:40],
)
def test_hostile_user_output_is_repaired_and_flagged(action):
    move = parse_user_output(action, PREVIOUS)
    assert isinstance(move, UserMove) and move.problem
    assert not move.state.out_of_range() and move.status in (-1, 0, 1)


def test_canonical_user_records_still_take_the_fast_path():
    text = render_user_output("Sure, go ahead.", (3, 2, 4), 1, "fine")
    assert parse_user_output(text, PREVIOUS) == UserMove("Sure, go ahead.", UserState(3, 2, 4), 1, "fine")
    assert parse_user_output(text + " ", PREVIOUS).problem is None
    stray = text.replace("</think>", "</think>x")
    assert parse_user_output(stray, PREVIOUS).problem is None and parse_user_output(stray, PREVIOUS).reply == "Sure, go ahead."


@pytest.mark.parametrize("unit", ["a", "<response>", "<a>", "{", "[", "9", "<reply>x</reply"])
def test_a_megabyte_of_output_is_read_from_its_head_and_flagged(unit):
    action = (unit * (MEGABYTE // len(unit) + 1))[:MEGABYTE]
    agent = parse_agent_output(action)
    user = parse_user_output(action, PREVIOUS)
    expected = f"output of {MEGABYTE} characters exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}"
    assert agent.problem.startswith(expected) and user.problem.startswith(expected)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(
            st.sampled_from(["<response>", "</response>", "<cooperation_score>", "</cooperation_score>", "<reply>", "</reply>",
                             "<status>", "</status>", "{", "}", "[", "]", '"', "NaN", "1e999", "9" * 50, ":", ",", "x", " "]),
            max_size=30,
        ).map("".join),
    )
)
def test_parsers_are_total(text):
    assert isinstance(parse_agent_output(text), AgentMove)
    assert isinstance(parse_user_output(text, PREVIOUS), UserMove)


CRASHERS = [(action, problem != "plain") for action, problem in HOSTILE_AGENT_OUTPUT] + [
    ("x" * MEGABYTE, True),
    ("<response>" * 100_000, True),
]
"""(action, whether an agent turn with it is flagged); every one once crashed or stalled a step."""


@pytest.mark.parametrize("learner", ["agent", "user"])
def test_the_single_agent_env_steps_on_every_crasher(learner):
    env = gym.make("SEAD-Outbound-v0", learner=learner)
    env.reset(seed=0)
    for action, flagged in CRASHERS:
        _, reward, terminated, truncated, info = env.step(action)
        assert math.isfinite(reward)
        if learner == "agent":
            assert bool(info["invalid_action"]) == flagged
        if terminated or truncated:
            json.dumps(env.unwrapped.trajectory().to_dict(), allow_nan=False)
            env.reset(seed=1)


def test_the_aec_env_steps_on_every_crasher():
    env = sead_outbound_v0.env()
    env.reset(seed=0)
    for action, flagged in CRASHERS * 2:
        if not env.agents:
            env.reset(seed=1)
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        env.step(action)
        assert math.isfinite(env.rewards[agent])
        if agent == "agent":
            assert bool(env.infos[agent]["invalid_action"]) == flagged
