"""The isolated agent's process is spawned, not forked (issue 43, item 6): a fresh isolated interpreter
that holds nothing of the evaluator's memory, environment or open files, at either level; and what the
boundary carries for each episode (its start, a failed start, its end) reaches the agent as sent."""

from __future__ import annotations

import json
import os
import sys

import pytest
from test_agent_sandbox import needs_bwrap
from witness import MARKER, Witness

import dialogue_gym
from dialogue_gym.agents import AgentProcess

OBSERVATION = {"messages": [{"role": "system", "content": "You call restaurant owners."}], "turn": 0}


@pytest.mark.parametrize("level", ["process", pytest.param("sandbox", marks=needs_bwrap)])
def test_the_agents_process_is_a_fresh_interpreter_holding_nothing_of_the_evaluator(level, tmp_path, monkeypatch):
    monkeypatch.setattr(dialogue_gym, MARKER, "evaluator memory", raising=False)
    monkeypatch.setenv("EVALUATOR_ONLY_KEY", "sk-not-for-the-agent")
    secret_file = tmp_path / "evaluator-only.txt"
    secret_file.write_text("private")
    handle = os.open(secret_file, os.O_RDONLY)
    os.set_inheritable(handle, True)  # a file a forked child or a child that keeps its fds would hold
    try:
        agent = AgentProcess("SEAD-Outbound-v0", "agent", {}, Witness(), level=level)
        try:
            (move,) = agent.act_batch([OBSERVATION], [{}], [agent.start({}, 0)])
        finally:
            agent.close()
    finally:
        os.close(handle)
    seen = json.loads(move)
    assert seen["marker"] is None  # this process's run-time state is not there: not a fork
    assert seen["pytest_loaded"] is False  # nor are the evaluator's modules
    assert seen["isolated"] == 1  # python -I: no PYTHONPATH, user site or current folder
    assert os.path.realpath(seen["executable"]) == os.path.realpath(sys.executable)
    assert "EVALUATOR_ONLY_KEY" not in seen["environment"]
    assert str(secret_file) not in seen["files"]
    stdin, stdout, stderr = seen["standard"]
    assert stdin == "/dev/null"  # the policy cannot read the evaluator's requests
    assert stdout == stderr and not stderr.startswith("pipe:")  # its prints go to the log, not into the answers


def test_each_episode_gets_what_its_start_was_handed_a_failed_start_is_its_own_problem_and_an_ended_episode_is_freed():
    agent = AgentProcess("SEAD-Outbound-v0", "agent", {}, Witness(), level="process")
    try:
        first, refused, second = agent.start({"k": 1}, 12345), agent.start({"fail": True}, 7), agent.start({"k": 2}, 67890)
        agent.end(first)
        moves = agent.act_batch([OBSERVATION] * 2, [{}, {}], [refused, second])
        problems = agent.problems(refused)
        problems.append("edited by the caller")
        assert agent.problems(refused) == [{"turn": 0, "problem": "the agent failed: start failed: ValueError: this start is refused"}]
        assert agent.problems(second) == []
    finally:
        agent.close()
    assert moves[0] == ""  # a refused move is the empty move
    seen = json.loads(moves[1])
    assert (seen["profile"], seen["seed"]) == ({"k": 2}, 67890)
    assert seen["live_memories"] == 1  # the ended episode's memory was dropped in the agent's process
