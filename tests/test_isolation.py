"""Policies played in a process of their own (issue 32, item 4; since issue 42 over the JSON-lines
boundary of :mod:`dialogue_gym.agents`): the same episodes as in-process, and out of reach of the
live game. The plain ``process`` level is used here; tests/agents/ attack the sandbox."""

from __future__ import annotations

import json
import os
import time

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.cli import main
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import Evaluator, evaluate
from dialogue_gym.metrics.rlada import summary
from dialogue_gym.probes import GarbageCollectorSnoop
from dialogue_gym.simulators.base import ScriptedPolicy

SNOOP = ("RLADA-Banking-v0", "agent", "keyword", "oracle")


def played(trajectories) -> list[str]:
    for trajectory in trajectories:
        trajectory.meta.pop("isolation", None)
    return [trajectory.to_json() for trajectory in trajectories]


def test_an_isolated_agent_plays_the_episodes_it_plays_in_process_and_says_so():
    isolated = evaluate("RLADA-Banking-v0", "keyword", 12, unseal="ab" * 16, isolate="process")
    assert all(trajectory.meta["isolation"] == "process" for trajectory in isolated)
    assert played(isolated) == played(evaluate("RLADA-Banking-v0", "keyword", 12, unseal="ab" * 16))
    oracle = evaluate("RLADA-Banking-v0", "oracle", 4, isolate="process")
    assert all(trajectory.meta["privileged"] for trajectory in oracle)  # the privileged channel still reaches a policy that declares it


# slow: walking the garbage collector takes as long as the test process's heap is big (90 s late in the
# default suite's single process on a fresh clone, 2026-12-06), so it runs in CI's slow step.
@pytest.mark.slow
def test_a_policy_that_walks_the_garbage_collector_finds_the_live_game_only_in_process():
    in_process = summary(evaluate("RLADA-Banking-v0", GarbageCollectorSnoop(*SNOOP), 24))
    isolated = summary(evaluate("RLADA-Banking-v0", GarbageCollectorSnoop(*SNOOP), 24, isolate="process"))
    keyword = summary(evaluate("RLADA-Banking-v0", "keyword", 24))
    assert in_process["strict_pass"] == 1.0 > keyword["strict_pass"] + 0.05
    assert isolated["strict_pass"] == keyword["strict_pass"]


def test_an_agent_that_cannot_be_sent_to_a_process_or_built_there_is_a_config_error():
    class Local(ScriptedPolicy):
        def act(self, observation, info, memory):
            return ""

    with pytest.raises(ConfigError, match=r"is a policy name, 'module:Class', or a picklable policy object; Local cannot be pickled"):
        evaluate("RLADA-Banking-v0", Local(), 1, isolate="process")
    with pytest.raises(ConfigError, match=r"could not be built in its process: ConfigError: .*'genius' is not a known agent policy"):
        evaluate("RLADA-Banking-v0", "genius", 1, isolate="process")
    with pytest.raises(ConfigError, match=r"isolate must be one of 'none', 'process', 'sandbox' .*got str: 'yes'"):
        Evaluator("RLADA-Banking-v0", "keyword", isolate="yes")


def test_eval_isolate_records_it_in_the_provenance(tmp_path, capsys):
    saved = tmp_path / "isolated.json"
    command = ["eval", "RLADA-Banking-v0", "--episodes", "4", "--isolate", "process", "--quiet", "--bootstrap", "0", "--save", str(saved)]
    assert main([*command, "--sealed"]) == 0
    assert "each agent in a plain process of its own (--isolate process: weaker" in capsys.readouterr().out
    provenance = json.loads(saved.read_text())["provenance"]
    assert provenance["isolation"] == "process" and provenance["isolated"] is True
    assert provenance["sealed"] is True and provenance["replay"] is False
    assert main([*command, "--unseal", provenance["secret"]]) == 0
    assert "a replay of a sealed run (--unseal" in capsys.readouterr().out
    replayed = json.loads(saved.read_text())["provenance"]
    assert replayed["sealed"] is False and replayed["replay"] is True and replayed["secret"] == provenance["secret"]


def test_the_policy_process_answers_alone_and_closes_when_asked():
    from dialogue_gym.agents import AgentProcess
    from dialogue_gym.agents.process import CLOSE_SECONDS

    assert Evaluator("SEAD-Outbound-v0", "sop").isolated is None  # in this process unless asked
    policy = AgentProcess("SEAD-Outbound-v0", "agent", {}, "sop", level="process")
    memory = policy.start({}, 3)
    observation = {"messages": [{"role": "system", "content": "You call restaurant owners."}], "turn": 0}
    (text,) = policy.act_batch([observation], [{}], [memory])
    assert isinstance(text, str) and text and policy.problems(memory) == []
    started = time.monotonic()
    policy.close()
    assert time.monotonic() - started < CLOSE_SECONDS  # it exited when asked, not when killed after the wait
    with pytest.raises(ProcessLookupError):
        os.killpg(policy._process.pid, 0)  # and nothing of its process group is left
