"""SEAD-Outbound-v0's fair ceiling (issue 42, item 7): ``informed`` plays the oracle's rules on what the
call shows (the state the owner's words voice, the concern its public lines name) instead of the hidden
state. Written as attacks on the claim that it is fair: it never touches ``info`` or its start profile,
it plays the same episodes in a process of its own as in the evaluator, and its decisions do not move
when the hidden state behind the same words changes."""

from __future__ import annotations

import pytest

from dialogue_gym.audit import CEILING, run_audit
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics.sead import summary
from dialogue_gym.scenarios.sead.agents import InformedAgent, OracleAgent, voiced_state
from dialogue_gym.scenarios.sead.audit import audits
from dialogue_gym.scenarios.sead.data import load_behaviors


class NoPeeking(dict):
    def __getitem__(self, key):
        raise AssertionError(f"the fair ceiling read info[{key!r}]")

    get = __getitem__


def cr(agent, episodes: int) -> float:
    return float(summary(evaluate("SEAD-Outbound-v0", agent, episodes, 0))["cr"])


def test_the_ceiling_sits_between_the_best_fair_baseline_and_the_oracle():
    scores = {agent: cr(agent, 300) for agent in ("adaptive", "informed", "oracle")}
    assert scores == pytest.approx({"adaptive": 0.6133333333333333, "informed": 0.6366666666666667, "oracle": 0.6766666666666666}, abs=1e-12)
    assert scores["adaptive"] < scores["informed"] < scores["oracle"]


def test_voiced_state_follows_the_owners_words_by_hand():
    estimate = [2, 2, 2]
    assert voiced_state(estimate, "Alright, so what do I need to do?") == (3, 2, 2)
    assert voiced_state(estimate, "Ugh. I'm not sure I believe this.") == (3, 1, 2)
    assert voiced_state(estimate, "Okay.") == (3, 2, 2)  # silence says nothing of cooperation or trust; irritation passed
    assert voiced_state(estimate, "Hmm, why would I need this?") == (2, 2, 2)
    assert estimate == [2, 2, 2]


def test_the_ceiling_reads_neither_info_nor_its_start_profile():
    library = load_behaviors()
    observation = {"messages": [{"role": "system", "content": "You call restaurants."}, {"role": "user", "content": "Ugh. Who is this?"}], "turn": 1}
    replies = []
    for profile in ({}, {"state": [0, 0, 0], "behaviors": ["CC1"]}, {"state": [4, 3, 5], "behaviors": []}):
        agent = InformedAgent(library)
        memory = agent.start(profile, 0)
        agent.act({**observation, "turn": 0}, NoPeeking(), memory)
        replies.append(agent.act(observation, NoPeeking(), memory))
    assert len(set(replies)) == 1
    assert not InformedAgent.privileged and OracleAgent.privileged


def test_the_ceiling_plays_the_same_episodes_in_a_process_of_its_own():
    """Isolated, a policy gets only the JSON observation the boundary sends: the same episodes there
    prove it needs nothing else."""
    inside = evaluate("SEAD-Outbound-v0", "informed", 12, 0)
    isolated = evaluate("SEAD-Outbound-v0", "informed", 12, 0, isolate="process")
    assert [[turn.raw for turn in t.turns] for t in inside] == [[turn.raw for turn in t.turns] for t in isolated]
    assert not any(t.meta.get("privileged") for t in inside)


def test_the_audit_reports_the_ceiling_beside_the_baselines():
    (audit,) = audits()
    assert list(audit.ceiling) == ["informed"]
    scores, rows = run_audit(audit, 60)
    (row,) = [row for row in rows if row.kind == CEILING]
    assert row.name == "informed" and row.bound is None and row.passed and row.score == scores["informed"]
