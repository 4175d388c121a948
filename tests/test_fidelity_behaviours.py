"""Fidelity and DM-Bench numbers where a formula's detail shows (issue 33's list, issue 43 item 6): a DTW
path longer than both sequences, judge gaps of opposite sign, and Spearman with two agents. Worked by hand."""

from __future__ import annotations

import math

import pytest

from dialogue_gym.fidelity import Setup, judge_agreement, paired, per_initial_state, report, trajectory_dtw
from dialogue_gym.metrics import dmbench
from dialogue_gym.types import Outcome, Trajectory, Turn


def sead(seed, states, start=(2, 2, 3)):
    turns = []
    for state in states:
        turns += [Turn("agent", "hi", "hi", {}, None), Turn("user", "ok", "ok", {}, tuple(state))]
    return Trajectory("SEAD-Outbound-v0", seed, {"state": list(start), "behaviors": ["IV1"]}, turns, Outcome.TIMEOUT, learner="agent")


def test_the_per_step_dtw_cost_divides_by_the_path_which_can_be_longer_than_both_sequences():
    """scripted [s0, x, x] vs LLM [s0, s0, y], s0 = (2,2,3), x = (4,2,3), y = (5,2,3): the best path
    (0,0) (0,1) (1,2) (2,2) costs 0 + 0 + |4-5| + |4-5| = 2 over 4 steps (the diagonal costs 0 + 2 + 1 = 3),
    so 0.5 per step, not 2 / 3."""
    scripted = sead(1, [(4, 2, 3), (4, 2, 3)])
    llm = sead(1, [(2, 2, 3), (5, 2, 3)])
    assert trajectory_dtw(paired([scripted], [llm])) == {"mean": 2.0, "per_step": 0.5, "pairs": 1}


def rlada(seed, score):
    meta = {} if score is None else {"verdict": {"score": score}}
    return Trajectory("RLADA-Banking-v0", seed, {"concealment": 0.5}, [], Outcome.SUCCESS, learner="agent", meta=meta)


def test_judge_gaps_of_opposite_sign_do_not_cancel():
    """Scripted 1 vs LLM 3, then scripted 3 vs LLM 1: the mean absolute gap is 2 (the signed gaps sum to 0);
    a start only one judge scored is left out."""
    scripted = [rlada(0, 1.0), rlada(1, 3.0), rlada(2, 2.0)]
    llm = [rlada(0, 3.0), rlada(1, 1.0), rlada(2, None)]
    assert judge_agreement(paired(scripted, llm)) == {"pairs": 2, "mean_abs_gap": 2.0, "scripted": 2.0, "llm": 2.0}


def test_spearman_needs_three_agents_and_is_nan_with_two_as_documented():
    two = {"a": {"cr": 0.1, "rq": 1.0}, "b": {"cr": 0.2, "rq": 3.0}}
    rho, p, n = dmbench.spearman(two)
    assert math.isnan(rho) and math.isnan(p) and n == 2
    rho, _, n = dmbench.spearman({**two, "c": {"cr": 0.3, "rq": 2.0}})
    assert n == 3 and rho == pytest.approx(0.5)


def tracer(seed, intents, outcome):
    return Trajectory("TRACER-UserSim-v0", seed, {}, [], outcome, learner="user", meta={"reference": {"intents": intents}})


def test_a_tracer_start_is_named_by_the_first_intent_level_of_its_reference_session():
    scripted = [tracer(0, [2, 5, 1], Outcome.SUCCESS), tracer(1, [3, 2], Outcome.SUCCESS), tracer(2, [2, 0], Outcome.TIMEOUT)]
    llm = [tracer(0, [2, 5, 1], Outcome.TIMEOUT), tracer(1, [3, 2], Outcome.SUCCESS), tracer(2, [2, 0], Outcome.TIMEOUT)]
    assert per_initial_state(paired(scripted, llm)) == [
        {"name": "z0=2", "episodes": 2, "scripted": 0.5, "llm": 0.0},
        {"name": "z0=3", "episodes": 1, "scripted": 1.0, "llm": 1.0},
    ]


def test_no_start_scored_by_both_judges_is_zero_pairs_and_nan_means():
    for pairs in ([], paired([rlada(0, 1.0), rlada(1, None)], [rlada(0, None), rlada(1, 2.0)])):
        agreement = judge_agreement(pairs)
        assert agreement["pairs"] == 0
        assert all(math.isnan(agreement[key]) for key in ("mean_abs_gap", "scripted", "llm"))


def test_a_report_of_a_single_start_names_its_state_dimensions():
    plan = Setup("SEAD-Outbound-v0", "user", "agent", "sop", {"scripted": {}, "llm": {}})
    numbers = report(plan, {"sop": {"scripted": [sead(4, [(3, 2, 3)])], "llm": [sead(4, [(2, 2, 3)])]}})
    entry = numbers["agents"]["sop"]
    assert entry["state"] == {"what": "owner state (c, e, tr)", "dimensions": ["cooperation", "emotion", "trust"]}
    assert entry["per_initial_state"] == [{"name": "c2/e2/tr3", "episodes": 1, "scripted": 0.0, "llm": 0.0}]
