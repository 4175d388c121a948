"""The exploit audit: its bounds by hand, every registered scenario's audit plays, and it flags a
policy that beats its bound."""

from __future__ import annotations

import gymnasium as gym
import pytest

from dialogue_gym.audit import (
    BLIND_MARGIN,
    DEGENERATE_RATE_FACTOR,
    MIN_EPISODES,
    AuditPolicy,
    ScenarioAudit,
    TextPolicy,
    audit_rows,
    format_audit,
    last_heard,
    run_audit,
    unaudited_roles,
)
from dialogue_gym.errors import ConfigError
from envs_registry import REGISTRY, resolve

AUDITED = [entry for entry in REGISTRY if entry.audits]


def _policy(name, kind):
    return AuditPolicy(name, kind, "", lambda: None)


def _audit(score_kind="rate", margin=0.0):
    return ScenarioAudit(
        env_id="X", learner="agent", score="cr", score_kind=score_kind, baseline="sop",
        fair_order=("random", "sop", "adaptive"), min_gaps={("sop", "adaptive"): 0.15},
        policies=(_policy("salad", "degenerate"), _policy("script", "blind")), reward_margin=margin,
    )


def test_constants_are_the_issue_bounds():
    assert (DEGENERATE_RATE_FACTOR, BLIND_MARGIN, MIN_EPISODES) == (0.5, 0.05, 600)


def test_rate_bounds_by_hand():
    scores = {"random": 0.07, "sop": 0.36, "adaptive": 0.52, "salad": 0.19, "script": 0.41}
    rows = {row.name: row for row in audit_rows(_audit(), scores, privileged=frozenset({"adaptive"}))}
    assert "sop < adaptive*" in rows and "* reads" not in format_audit(_audit(), list(audit_rows(_audit(), scores)), 1)
    rows = {row.name: row for row in audit_rows(_audit(), scores)}
    assert rows["salad"].bound == pytest.approx(0.18) and not rows["salad"].passed
    assert rows["script"].bound == pytest.approx(0.41) and rows["script"].passed
    assert rows["random < sop"].passed and rows["sop < adaptive"].passed
    scores["adaptive"] = 0.50  # gap 0.14 < 0.15
    assert not {row.name: row for row in audit_rows(_audit(), scores)}["sop < adaptive"].passed


def test_reward_bound_is_below_the_best_fair_policy_by_the_margin():
    scores = {"random": -0.2, "sop": 0.4, "adaptive": 0.6, "salad": 0.45, "script": 0.3}
    rows = {row.name: row for row in audit_rows(_audit("reward", margin=0.1), scores)}
    assert rows["salad"].bound == pytest.approx(0.5) and rows["salad"].passed
    scores["salad"] = 0.5
    assert not {row.name: row for row in audit_rows(_audit("reward", margin=0.1), scores)}["salad"].passed


class NoPeeking(dict):
    def __getitem__(self, key):
        raise AssertionError(f"an audit policy read info[{key!r}]")

    get = __getitem__


@pytest.mark.parametrize("entry", AUDITED, ids=lambda entry: entry.id)
def test_every_audit_plays_and_its_policies_never_read_info(entry):
    for audit in resolve(entry.audits)():
        assert audit.env_id == entry.id and audit.baseline in audit.fair_order
        observation = {"messages": [{"role": "system", "content": "You are ... ACC-123456"}, {"role": "user", "content": "Hi there"}], "turn": 1}
        for policy in audit.policies:
            agent = policy.make()
            memory = agent.start({}, 0)
            for _ in range(3):
                assert isinstance(agent.act(observation, NoPeeking(), memory), str)
        scores, rows = run_audit(audit, episodes=12)
        assert set(scores) >= {p.name for p in audit.policies} | set(audit.fair_order)
        if audit.score_kind == "rate":
            assert all(0.0 <= score <= 1.0 for score in scores.values())
        assert audit.env_id in format_audit(audit, rows, 12)


def test_the_audit_flags_a_policy_that_reads_the_hidden_state():
    """A policy given the true profile (the oracle) declared degenerate must break its bound."""
    from dialogue_gym.scenarios.sead.agents import OracleAgent
    from dialogue_gym.scenarios.sead.data import load_behaviors

    cheat = AuditPolicy("cheat", "degenerate", "the oracle in disguise", lambda: OracleAgent(load_behaviors()))
    audit = ScenarioAudit("SEAD-Outbound-v0", "agent", "cr", "rate", "sop", ("random", "sop"), (cheat,))
    scores, rows = run_audit(audit, episodes=120)
    assert not {row.name: row for row in rows}["cheat*"].passed  # marked: it reads the privileged channel
    assert "* reads the privileged channel" in format_audit(audit, rows, 120)


def test_run_audit_rejects_a_bad_episode_count():
    with pytest.raises(ConfigError, match="episodes must be a positive int, got 0"):
        run_audit(_audit(), episodes=0)


def test_last_heard_is_the_other_sides_last_line():
    observation = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}
    assert last_heard(observation) == "c" and last_heard({"messages": []}) == ""
    assert TextPolicy(lambda o, t, r: last_heard(o), str.upper).act(observation, {}, {"seed": 0}) == "C"


ALL_AUDITS = [audit for entry in AUDITED for audit in resolve(entry.audits)()]


def _game_kind(env_id: str) -> str:
    """The module of the id's rules: ids that differ only in defaults (TRACER and DM-Bench) share it."""
    return type(gym.make(env_id, disable_env_checker=True).unwrapped.game).__module__


def test_every_registered_id_and_learner_role_is_audited():
    """Each id audits its default learner; every other role it offers is audited in an id that plays
    the same game (RLADA-Banking-v0's customer in RLADA-Customer-v0, say) or declared unaudited with
    its reason."""
    for entry in REGISTRY:
        assert entry.audits, f"{entry.id} declares no audit"
        assert entry.default_learner in {a.learner for a in resolve(entry.audits)()}, entry.id
    audited = {(_game_kind(audit.env_id), audit.learner) for audit in ALL_AUDITS}
    declared = {(_game_kind(role.env_id), role.learner): role for entry in AUDITED for role in unaudited_roles(entry.audits)}
    assert all(len(role.reason) > 80 for role in declared.values()), "an unaudited role needs its reason spelled out"
    assert not set(declared) & audited, "a role is both audited and declared unaudited"
    missing = [
        (entry.id, role) for entry in REGISTRY for role in entry.roles
        if (_game_kind(entry.id), role) not in audited | set(declared)
    ]
    assert not missing, f"roles no audit plays and no UNAUDITED entry explains: {missing}"


@pytest.mark.parametrize("audit", ALL_AUDITS, ids=lambda audit: f"{audit.env_id}-{audit.learner}")
def test_every_audit_holds_at_the_stated_strength(audit):
    """The shipped audits pass at the episode count their bounds are stated for (about 90 s in all)."""
    scores, rows = run_audit(audit, episodes=MIN_EPISODES)
    assert all(row.passed for row in rows), "\n" + format_audit(audit, rows, MIN_EPISODES)
