"""The agent's side of the boundary (``dialogue_gym.agents.runner``) driven in this process over
in-memory pipes (issue 43, item 6: runner.py's mutants): the error text's cut, the three ways a
``hello`` names the policy, and how starts, failed starts, ends, acts and ``close`` are answered."""

from __future__ import annotations

import base64
import io
import json
import pickle
import sys

import pytest

from dialogue_gym.agents import runner
from dialogue_gym.agents.protocol import MAX_ERROR_CHARS

HELLO = {"type": "hello", "env_id": "SEAD-Outbound-v0", "learner": "agent", "env_kwargs": {}}
OBSERVATION = {"messages": [{"role": "system", "content": "You call restaurant owners."}], "turn": 0}


class Recorder:
    """Moves that say which start each episode's memory came from."""

    def start(self, profile, seed):
        if profile.get("fail"):
            raise ValueError("this start is refused")
        return {"tag": profile.get("tag"), "seed": seed}

    def act_batch(self, observations, infos, memories):
        return [f"<response>{memory['tag']} {memory['seed']}</response>" for memory in memories]


class NotText(Recorder):
    """Moves that are not JSON text."""

    def act_batch(self, observations, infos, memories):
        return [float("nan")]


def talk(*requests: dict) -> list[dict]:
    """The answers ``serve`` writes to the requests, one JSON line each."""
    answers = io.BytesIO()
    runner.serve(io.BytesIO(b"".join(json.dumps(request).encode() + b"\n" for request in requests)), answers)
    return [json.loads(line) for line in answers.getvalue().splitlines()]


def pickled(policy) -> dict:
    return {**HELLO, "agent": {"pickle": base64.b64encode(pickle.dumps(policy)).decode()}}


def act(request_id: int, episodes: list[int]) -> dict:
    return {"type": "act", "id": request_id, "episodes": episodes, "observations": [OBSERVATION] * len(episodes),
            "infos": [{}] * len(episodes)}


def test_an_error_text_of_exactly_the_limit_is_sent_whole_and_one_character_more_is_cut(capsys):
    prefix = len("ValueError: ")
    exact = runner.failure(ValueError("x" * (MAX_ERROR_CHARS - prefix)))
    assert exact == "ValueError: " + "x" * (MAX_ERROR_CHARS - prefix)
    longer = runner.failure(ValueError("y" * (MAX_ERROR_CHARS - prefix + 1)))
    assert longer == "ValueError: " + "y" * (MAX_ERROR_CHARS - prefix) + "..."
    assert len(longer) == MAX_ERROR_CHARS + 3


def test_starts_failed_starts_ends_and_acts_are_answered_per_episode_until_close():
    answers = talk(
        pickled(Recorder()),
        {"type": "start", "episode": 0, "profile": {"tag": "a"}, "seed": 11},
        {"type": "start", "episode": 1, "profile": {"fail": True}, "seed": 12},
        {"type": "start", "episode": 2, "profile": {"tag": "c"}, "seed": 13},
        act(5, [2, 1, 0]),
        {"type": "end", "episode": 1},
        {"type": "start", "episode": 1, "profile": {"tag": "b"}, "seed": 14},
        act(6, [1]),
        {"type": "close"},
        act(7, [0]),  # after close nothing is read
    )
    assert answers[0] == {"type": "ready", "privileged": False}
    refused = "start failed: ValueError: this start is refused"
    assert answers[1] == {"id": 5, "texts": ["<response>c 13</response>", None, "<response>a 11</response>"],
                          "errors": [None, refused, None]}
    # the episode number's failed start was forgotten at its end: its new start plays
    assert answers[2] == {"id": 6, "texts": ["<response>b 14</response>"], "errors": [None]}
    assert len(answers) == 3


def test_an_ended_episodes_memory_is_dropped():
    answers = talk(pickled(Recorder()), {"type": "start", "episode": 0, "profile": {"tag": "a"}, "seed": 1},
                   {"type": "end", "episode": 0}, act(1, [0]))
    # the act names a forgotten episode: the whole call fails (KeyError), it is not played from a kept memory
    assert answers[1] == {"id": 1, "error": "KeyError: 0"}


def test_a_hello_naming_a_registered_policy_or_a_class_builds_it(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = list(sys.path)
    answers = talk({**HELLO, "agent": {"name": "sop"}, "path": []}, {"type": "start", "episode": 0, "profile": {}, "seed": 0},
                   act(1, [0]))
    assert answers[0] == {"type": "ready", "privileged": False}
    assert answers[1]["errors"] == [None] and answers[1]["texts"][0].startswith("<response>")
    assert sys.path == before  # an empty path list adds nothing and drops nothing

    answers = talk({**HELLO, "agent": {"class": "test_runner_units:Recorder"}, "path": ["/nowhere/first"]},
                   {"type": "start", "episode": 3, "profile": {"tag": "k"}, "seed": 9}, act(2, [3]))
    assert answers[1] == {"id": 2, "texts": ["<response>k 9</response>"], "errors": [None]}
    assert sys.path == ["/nowhere/first", *before]  # the hello's folders come first, nothing else is dropped


def test_a_hello_that_cannot_be_built_is_one_error_message_and_the_runner_stops():
    answers = talk({**HELLO, "agent": {"class": "no_such_module_anywhere:Policy"}}, act(1, [0]))
    assert len(answers) == 1
    assert answers[0]["type"] == "error" and "no_such_module_anywhere" in answers[0]["message"]


def test_a_move_that_is_not_json_text_is_that_calls_error():
    answers = talk(pickled(NotText()), {"type": "start", "episode": 0, "profile": {}, "seed": 0}, act(4, [0]))
    assert set(answers[1]) == {"id", "error"} and answers[1]["id"] == 4
    assert answers[1]["error"].startswith("ValueError: Out of range float values")  # json's own words for NaN
