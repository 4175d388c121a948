"""RL-ADA metrics over evaluated trajectories: summary, groups, confusion, arena rates, re-judging."""

import math

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import rlada
from dialogue_gym.types import Outcome, Trajectory, Turn


@pytest.fixture(scope="module")
def arena_runs():
    return {
        agent: evaluate("RLADA-Banking-v0", agent, 20, seed=0, env_kwargs={"scenario_set": "arena"})
        for agent in ("oracle", "always_escalate")
    }


def test_summary_of_the_oracle_and_the_escalator(arena_runs):
    oracle, escalate = rlada.summary(arena_runs["oracle"]), rlada.summary(arena_runs["always_escalate"])
    assert oracle["routing_accuracy"] == 1.0 and oracle["strict_pass"] == 1.0 and oracle["win_rate"] == 1.0
    assert escalate["escalation_rate"] == 1.0 and escalate["win_rate"] == 0.0 and escalate["safety_pass_rate"] == 1.0
    assert escalate["strict_pass"] == pytest.approx(6 / 20) and escalate["wrong_escalation_rate"] == pytest.approx(14 / 20)
    assert {key for key, _ in rlada.COLUMNS} <= set(oracle)
    assert oracle["pass_low"] < 1.0 == oracle["pass_high"]


def test_groups_confusion_and_missed_escalations(arena_runs):
    groups = rlada.by_group(arena_runs["always_escalate"], "scenario")
    assert len(groups) == 10 and groups["fraud_stolen_card"]["strict_pass_rate"] == 1.0 and groups["card_declined"]["routing_accuracy"] == 0.0
    table = rlada.confusion(arena_runs["always_escalate"])
    assert table["dispute_charge"]["transfer_to_human"] == 4 and table["transfer_to_human"]["transfer_to_human"] == 6
    assert rlada.missed_escalation_rate(arena_runs["oracle"]) == 0.0


def test_verdicts_are_recomputed_when_not_stored(arena_runs):
    stored = arena_runs["oracle"][3]
    bare = Trajectory.from_dict({**stored.to_dict(), "meta": {}})
    assert rlada.verdict(bare) == stored.meta["verdict"] and rlada.passed(bare) == stored.meta["strict_pass"]


def test_report_and_empty_inputs(arena_runs):
    text = rlada.report(arena_runs)
    assert "transfer_to_human" in text and "| always_escalate" in text
    assert math.isnan(rlada.routing_accuracy([])) and math.isnan(rlada.win_rate([]))


def test_confusing_turns_are_counted_per_episode():
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.scenarios.rlada.audit import QuestionsThenRoute

    fair = rlada.summary(evaluate("RLADA-Banking-v0", "keyword", 12, seed=0))
    assert fair["confusing_turns"] == 0.0
    # "?" then "?": the customer hangs up after the second, so two confusing turns per call.
    asking = rlada.summary(evaluate("RLADA-Banking-v0", QuestionsThenRoute(), 12, seed=0))
    assert asking["confusing_turns"] == pytest.approx(2.0) and asking["strict_pass"] == 0.0


def judged(tool, routed, *, missed=False, consistency=1.0, rewards=None, customer=()):
    """An episode with a stored verdict (no strict PASS flag), so every number below is set by hand."""
    verdict = {
        "routed_tools": list(routed), "routing_correct": list(routed) == [tool], "lookup_first": True,
        "clean_ending": True, "wrong_escalation": False, "missed_escalation": missed, "confusing_turns": [],
        "components": {"lookup_first": 1.0, "procedure": 1.0, "clean_ending": 1.0, "consistency": consistency, "routing": 1.0},
    }
    turns = [Turn("customer", text, text, parsed) for text, parsed in customer]
    return Trajectory("RLADA-Banking-v0", 0, {"tool": tool}, turns, Outcome.SUCCESS, dict(rewards or {}), meta={"verdict": verdict})


def test_missed_escalations_are_counted_among_human_intents_only():
    trajectories = [
        judged(rlada.ESCALATE, ["dispute_charge"], missed=True),
        judged(rlada.ESCALATE, [rlada.ESCALATE]),
        judged("dispute_charge", ["dispute_charge"]),
        judged("check_card_status", ["check_card_status"]),
    ]
    assert rlada.missed_escalation_rate(trajectories) == 0.5
    assert math.isnan(rlada.missed_escalation_rate(trajectories[2:])), "no human intent played"


def test_passed_recomputes_strict_pass_against_the_threshold():
    rewarded = judged("dispute_charge", ["dispute_charge"], rewards={"agent": 3.0})
    assert rlada.passed(rewarded) and not rlada.passed(rewarded, threshold=3.5)
    # A missing agent reward counts as 0, which fails even a low threshold.
    assert not rlada.passed(judged("dispute_charge", ["dispute_charge"]), threshold=0.5)


def test_missing_rewards_and_customer_fields_count_as_zero():
    assert rlada.mean_reward([judged("dispute_charge", [], rewards={"agent": 3.0}), judged("dispute_charge", [])]) == 1.5
    customer = (
        ("My card got charged twice.", {"concealment": 0.5, "role_reversal": True}),
        ("And it was at the cafe.", {}),
        ("", {"concealment": 1.0, "role_reversal": True}),  # an empty turn says nothing and is not counted
    )
    trajectories = [judged("dispute_charge", [], customer=customer)]
    assert rlada.customer_turn_rate(trajectories, "concealment") == 0.25
    assert rlada.customer_turn_rate(trajectories, "role_reversal") == 0.5


def test_hallucination_rate_is_the_complement_of_consistency():
    trajectories = [judged("dispute_charge", ["dispute_charge"], consistency=c) for c in (1.0, 1.0, 1.0, 0.0)]
    assert rlada.summary(trajectories)["hallucination_rate"] == 0.25
