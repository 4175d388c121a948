"""The audit through the agent boundary (issue 42, item 1): ``audit --isolate`` plays every player in a
process of its own, with the same scores as in-process; ``audit --agent module:Class`` plays your own
policy as one more probe, imported only in its process. Attacks: an agent that walks the garbage
collector for the live game (and its hidden state) and one that reads the evaluator's ``/proc``."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import pytest
from attackers import Prober
from test_agent_sandbox import needs_bwrap

import dialogue_gym  # noqa: F401
from dialogue_gym.audit import SUBMITTED, audit_player, registered_audit, run_audit
from dialogue_gym.cli import main
from dialogue_gym.errors import ConfigError
from dialogue_gym.probes import GarbageCollectorSnoop
from dialogue_gym.sealing import Seal

SECRET = "5e" * 16
SNOOP = ("RLADA-Banking-v0", "agent", "keyword", "oracle")


def test_an_isolated_audit_builds_only_the_registered_audits_policies_and_they_are_found_by_name():
    audit = registered_audit("RLADA-Banking-v0", "agent")
    assert type(audit_player("RLADA-Banking-v0", "agent", "seed_replay", 6)).__name__ == "SeedReplay"
    assert audit_player("RLADA-Banking-v0", "agent", "word_salad").act({"messages": [], "turn": 0}, {}, {"seed": 0}).startswith('{"thinking"')
    with pytest.raises(ConfigError, match=r"RLADA-Banking-v0's audit of 'agent' has no policy or probe 'nobody'; it has \['empty', 'echo'"):
        audit_player("RLADA-Banking-v0", "agent", "nobody")
    with pytest.raises(ConfigError, match=r"RLADA-Banking-v0 declares no exploit audit of the learner role 'customer'"):
        registered_audit("RLADA-Banking-v0", "customer")
    renamed = replace(audit, policies=(replace(audit.policies[0], name="mine"),))
    with pytest.raises(ConfigError, match=r"builds its policies by name from RLADA-Banking-v0's registered audit, which has no \['mine'\]"):
        run_audit(renamed, episodes=1, isolate="process")
    with pytest.raises(ConfigError, match=r"already plays \['keyword'\]; give your agents other names"):
        run_audit(audit, episodes=1, agents={"keyword": "keyword"})


def played_moves(trajectory) -> list[str]:
    """The learner's moves as it sent them."""
    return [turn["raw"] for turn in trajectory.to_dict()["turns"] if turn["role"] == "agent"]


@needs_bwrap
def test_an_attacker_finds_the_live_game_in_process_and_nothing_in_a_sealed_sandboxed_audit():
    """The garbage-collector snoop plays the oracle on the live game's hidden state wherever it finds one;
    the reader opens the evaluator's memory through /proc. In-process the snoop tops the probes' bound
    (and fails the sealed audit); sandboxed it finds no game, plays keyword's very episodes, and the
    reader is refused."""
    audit = registered_audit("RLADA-Banking-v0", "agent")
    audit = replace(audit, policies=())  # the library's policies are the other tests'; here the fair ones
    seal = Seal.parse(SECRET)
    kept: dict[str, list] = {}
    agents = {"gc_snoop": GarbageCollectorSnoop(*SNOOP), "proc_reader": Prober("evaluator_memory", str(os.getpid()))}
    scores, rows = run_audit(audit, episodes=12, seal=seal, agents=agents, isolate="sandbox", on_played=lambda name, runs: kept.setdefault(name, runs))
    shown = {row.name: row for row in rows}
    assert shown["gc_snoop"].counted and shown["gc_snoop"].passed and shown["gc_snoop"].description == SUBMITTED
    assert scores["gc_snoop"] == scores["keyword"]
    assert [played_moves(t) for t in kept["gc_snoop"]] == [played_moves(t) for t in kept["keyword"]]
    assert {move for t in kept["proc_reader"] for move in played_moves(t)} == {
        f"refused: FileNotFoundError: [Errno 2] No such file or directory: '/proc/{os.getpid()}/cmdline'"
    }
    assert all(t.meta["isolation"] == "sandbox" and t.meta["sealed"] for runs in kept.values() for t in runs)
    open_scores, open_rows = run_audit(audit, episodes=12, seal=seal, agents={"gc_snoop": GarbageCollectorSnoop(*SNOOP)})
    snoop = {row.name: row for row in open_rows}["gc_snoop"]
    assert open_scores["gc_snoop"] > snoop.bound and snoop.counted and not snoop.passed


def test_an_isolated_audit_plays_your_own_class_without_importing_it_and_scores_every_player_as_in_process(example, capsys):
    command = ["audit", "SEAD-Outbound-v0", "--episodes", "2", "--quiet", "--agent", "greeter:Greeter", "--agent-kwargs", '{"greeting": "Hi"}']
    verdict = main([*command, "--isolate", "process", "--agent-logs", str(example)])  # 2 episodes: a fair order may not hold
    isolated = capsys.readouterr().out
    assert "greeter" not in sys.modules  # isolated, the evaluator never imports it
    assert "each agent in a plain process of its own (--isolate process" in isolated.splitlines()[0]
    assert "| greeter:Greeter   | open-book |" in isolated
    assert (example / "greeter_Greeter").is_dir() and any((example / "seed_replay").iterdir())  # a log folder per player
    assert main(command) == verdict
    in_process = capsys.readouterr().out
    assert "agents in this process" in in_process.splitlines()[0]
    assert isolated.splitlines()[1:] == in_process.splitlines()[1:]  # every player, probes included, scores the same


def test_audit_refuses_an_agent_named_as_one_it_plays_and_kwargs_without_a_class(example, capsys):
    assert main(["audit", "SEAD-Outbound-v0", "--episodes", "1", "--quiet", "--agent", "sop"]) == 2
    assert "the audit of SEAD-Outbound-v0 already plays ['sop']; give your agents other names" in capsys.readouterr().err
    assert main(["audit", "SEAD-Outbound-v0", "--episodes", "1", "--quiet", "--agent-kwargs", "{}"]) == 2
    assert "--agent-kwargs are the keyword arguments of an agent given as module:Class" in capsys.readouterr().err
