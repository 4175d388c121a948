"""RLADA-Customer-v0's fair ceiling (issue 42, item 7): ``planner`` rehearses each truthful style against a
copy of the agent it faces (public code) on a call it builds from what it knows (its profile, a bank of
its own) and plays the best. Written as attacks on the claim that it is fair: handed the bank's seed it
refuses, its choice does not move when the episode's hidden bank changes, and it plays the same episodes
in a process of its own as in the evaluator."""

from __future__ import annotations

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.audit import CEILING, run_audit
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics.rlada import summary
from dialogue_gym.scenarios.rlada.audit import customer_audits
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.planner import GUESSED_BANK_SEED, OPPONENTS, STYLES, PlannerCustomer

EPISODES = 120


def reward(agent: str, episodes: int = EPISODES) -> float:
    return float(summary(evaluate("RLADA-Customer-v0", agent, episodes, 0, learner="customer"))["customer_reward"])


def test_the_constants():
    assert (GUESSED_BANK_SEED, STYLES, OPPONENTS) == (0, ("direct", "vague", "camouflage", "contextual"), ("keyword", "always_escalate", "phrase_match"))


def test_the_planner_beats_every_scripted_style():
    scores = {agent: reward(agent) for agent in ("contextual", "planner")}
    assert scores["planner"] > scores["contextual"] + 0.1, scores


def _profile(bank_seed: int) -> dict:
    """The caller's start profile of one call whose hidden bank is built from ``bank_seed`` (same facts)."""
    environment = gym.make("RLADA-Customer-v0").unwrapped
    environment.reset(seed=3, options={"intent": "transaction_charged_twice", "concealment": "camouflage", "profile": {"bank_seed": 5}})
    profile = environment.game.episode_profile()
    environment.reset(seed=3, options={"profile": {**profile, "bank_seed": bank_seed}})
    assert environment.game.episode_profile()["bank_seed"] == bank_seed
    return environment.game.role_profile("customer")


def test_handed_the_bank_seed_it_refuses():
    environment = gym.make("RLADA-Customer-v0").unwrapped
    environment.reset(seed=3)
    with pytest.raises(ConfigError, match="handed the episode's bank_seed; a caller does not know it"):
        PlannerCustomer(load_domain()).start(environment.game.episode_profile(), 0)


def test_its_choice_does_not_move_with_the_hidden_bank():
    planner = PlannerCustomer(load_domain())
    first, second = (planner.start(_profile(bank_seed), 11) for bank_seed in (5, 987654321))
    assert _profile(5) == _profile(987654321)  # what the caller is handed is the same
    assert first["style"] == second["style"] and first["rehearsed"] == second["rehearsed"]
    assert set(first["rehearsed"]) == set(STYLES)


def test_an_opponent_it_cannot_rehearse_is_refused_naming_the_ones_it_can():
    with pytest.raises(ConfigError, match=r"opponent='oracle' cannot be rehearsed.*\['keyword', 'always_escalate', 'phrase_match'\]"):
        PlannerCustomer(load_domain(), "oracle")


def test_the_planner_plays_the_same_episodes_in_a_process_of_its_own():
    inside = evaluate("RLADA-Customer-v0", "planner", 6, 0, learner="customer")
    isolated = evaluate("RLADA-Customer-v0", "planner", 6, 0, learner="customer", isolate="process")
    assert [[turn.raw for turn in t.turns] for t in inside] == [[turn.raw for turn in t.turns] for t in isolated]
    assert not any(t.meta.get("privileged") for t in inside)


def test_the_customer_audit_reports_the_planner_as_its_ceiling():
    (audit,) = customer_audits()
    assert list(audit.ceiling) == ["planner"]
    scores, rows = run_audit(audit, 24)
    (row,) = [row for row in rows if row.kind == CEILING]
    assert row.name == "planner" and row.bound is None and row.score == scores["planner"]
