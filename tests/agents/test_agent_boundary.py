"""The agent boundary under attack (issue 42, items 1 and 8): whatever an agent sends that breaks the
protocol is an invalid move of its episode, flagged, never run, raised or waited on forever; and the
evaluator's later runs are unchanged. Played at the ``process`` level (the protocol is the same in the
sandbox, see test_agent_sandbox.py)."""

from __future__ import annotations

import time

import pytest
from attackers import Saboteur

import dialogue_gym  # noqa: F401
from dialogue_gym.agents import AgentProcess, Limits
from dialogue_gym.agents.protocol import Broken, LineReader, read_moves
from dialogue_gym.errors import AgentError, ConfigError
from dialogue_gym.evaluation import Evaluator, evaluate

EPISODES = 3
LIMITS = {"call_seconds": 2.0}


def moves(trajectories):
    return [turn["raw"] for trajectory in trajectories for turn in trajectory.to_dict()["turns"] if turn["role"] == "agent"]


def played(trajectory):
    trajectory.meta.pop("isolation", None)
    return trajectory.to_json()


@pytest.fixture(scope="module")
def reference():
    return [played(trajectory) for trajectory in evaluate("RLADA-Banking-v0", "keyword", EPISODES)]


ATTACKS = {
    "non_strings": "a move that is a JSON array, not a string",
    "long_move": "a move of 20,001 characters (at most 20,000)",
    "raises": "the agent failed the call: ValueError: the agent gave up",
    "pickle": "an answer that is not JSON",
    "not_json": "an answer that is not JSON",
    "json_list": "an answer that is a JSON array, not an object",
    "wrong_id": "an answer to request 99 while 1 was asked",
    "deep": "an answer that is not JSON (RecursionError",
    "nan": "a move that is a JSON number, not a string",
    "error_object": "the agent failed the call: (not a string: a JSON object)",
    "huge": "an answer over 868,096 bytes",  # 3 moves
}


QUICK = {"pickle", "non_strings", "huge", "raises", "wrong_id"}
"""Attacks of the default suite; the others (a few seconds each) run in the slow step."""


@pytest.mark.parametrize("mode", [mode if mode in QUICK else pytest.param(mode, marks=pytest.mark.slow) for mode in sorted(ATTACKS)])
def test_a_broken_answer_is_an_invalid_move_of_its_episodes_and_the_game_goes_on(mode, tmp_path, reference):
    marker = tmp_path / "unpickled"
    evaluator = Evaluator("RLADA-Banking-v0", Saboteur(mode, str(marker)), isolate="process", agent_limits=LIMITS)
    try:
        attacked = evaluator.run(EPISODES)
    finally:
        evaluator.close()
    for trajectory in attacked:
        (problem,) = trajectory.meta["agent_problems"]  # its first move only: the agent answers honestly after
        assert problem["turn"] == 0 and ATTACKS[mode] in problem["problem"]
        first = next(turn for turn in trajectory.to_dict()["turns"] if turn["role"] == "agent")
        assert first["raw"] == "" and first["invalid"]  # the game's own invalid move, with its penalty
        assert trajectory.meta["isolation"] == "process" and trajectory.outcome.value != "backend_failure"
    assert not marker.exists()  # nothing it sent was unpickled
    fresh = evaluator.for_agent("keyword")
    try:
        later = fresh.run(EPISODES)
    finally:
        fresh.close()
    assert [played(trajectory) for trajectory in later] == reference


@pytest.mark.parametrize("mode, problem", [("sleeps", "no answer within the time limit of a call (1 s)"), ("exits", "its process ended")])
def test_an_agent_that_stalls_or_dies_is_ended_once_and_plays_invalid_moves_from_then_on(mode, problem):
    started = time.monotonic()
    trajectories = evaluate("RLADA-Banking-v0", Saboteur(mode), EPISODES, isolate="process", agent_limits={"call_seconds": 1.0})
    assert time.monotonic() - started < 15  # one time limit, not one per move
    for trajectory in trajectories:
        problems = trajectory.meta["agent_problems"]
        assert problem in problems[0]["problem"]
        assert all(p["problem"].startswith("the agent's process was ended") for p in problems)
        assert all(move == "" for move in moves([trajectory]))


def test_what_an_agent_prints_goes_to_its_log_not_into_the_answers(tmp_path):
    trajectories = evaluate("RLADA-Banking-v0", Saboteur("prints"), EPISODES, isolate="process", agent_logs=tmp_path)
    assert not any("agent_problems" in trajectory.meta for trajectory in trajectories)
    (log,) = tmp_path.iterdir()
    assert "this is not an answer" in log.read_text()


def test_the_reader_skips_an_overlong_line_and_takes_the_next_answer():
    import os

    read, write = os.pipe()
    os.write(write, b"y" * 100 + b"\n" + b'{"id": 2, "texts": ["hi"]}\n')
    reader = LineReader(read)
    deadline = time.monotonic() + 1
    assert reader.line(10, deadline) == Broken("an answer over 10 bytes")
    assert read_moves(reader.line(100, deadline), 2, 1) == (["hi"], [None])
    assert reader.line(100, time.monotonic() + 0.05).ended  # silence: late
    os.close(write)
    assert reader.line(100, time.monotonic() + 1) == Broken("its process ended", ended=True)
    os.close(read)


def test_an_agent_defined_in_the_script_or_with_bad_limits_is_refused_up_front_with_the_fix():
    class Scripted:
        def start(self, profile, seed):
            return None

    Scripted.__module__ = "__main__"
    with pytest.raises(ConfigError, match=r"Scripted is defined in the script being run \(__main__\).*agent='myagent:Scripted'"):
        AgentProcess("RLADA-Banking-v0", "agent", {}, Scripted(), level="process")
    with pytest.raises(ConfigError, match=r"agent limit call_seconds must be a positive number, got -1"):
        Limits(call_seconds=-1)
    with pytest.raises(ConfigError, match=r"unknown agent limits \['seconds'\]"):
        Limits.of({"seconds": 1})
    with pytest.raises(ConfigError, match=r"an agent class is given as 'module:Class'.*got 'my agent:X'"):
        evaluate("RLADA-Banking-v0", "my agent:X", 1, isolate="process")


def test_an_agent_that_never_says_ready_is_a_typed_error_naming_its_log():
    with pytest.raises(AgentError, match=r"did not start in its process \(no answer within the time limit.*start limit 0.01 s\); read its log"):
        AgentProcess("RLADA-Banking-v0", "agent", {}, "keyword", level="process", limits={"start_seconds": 0.01})


def test_a_log_left_to_the_library_is_removed_if_empty_and_kept_if_the_agent_printed(tmp_path, monkeypatch):
    import gc
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    quiet = AgentProcess("RLADA-Banking-v0", "agent", {}, "keyword", level="process")
    assert quiet.log.parent == tmp_path and quiet.log.name.startswith("dialogue-gym-agent-RLADA-Banking-v0.agent.keyword.")
    log = quiet.log
    quiet.close()
    assert not log.exists()
    named = AgentProcess("RLADA-Banking-v0", "agent", {}, "keyword", level="process", log=tmp_path / "mine.log")
    named.close()
    assert (tmp_path / "mine.log").read_bytes() == b""  # a log the caller named is theirs: kept, even empty
    forgotten = AgentProcess("RLADA-Banking-v0", "agent", {}, "keyword", level="process")
    log = forgotten.log
    del forgotten
    gc.collect()
    assert not log.exists()
    evaluate("RLADA-Banking-v0", Saboteur("prints"), EPISODES, isolate="process")
    (kept,) = tmp_path.glob("dialogue-gym-agent-*.log")
    assert "this is not an answer" in kept.read_text()
    kept.unlink()
    with pytest.raises(AgentError, match=r"read its log (\S+) for why") as raised:
        AgentProcess("RLADA-Banking-v0", "agent", {}, "keyword", level="process", limits={"start_seconds": 0.01})
    (failed,) = tmp_path.glob("dialogue-gym-agent-*.log")
    assert str(failed) in str(raised.value) and failed.read_text().startswith("[dialogue_gym] the agent 'keyword' did not start")
    assert live_children() == []  # the agent that failed to start was ended, not left running


def live_children() -> list[int]:
    """The processes this one started that are still running (not zombies)."""
    import os
    from pathlib import Path

    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if int(parent) == os.getpid() and state != "Z":
            children.append(int(stat.parent.name))
    return children
