"""An audit whose two fair baselines tie (issue 33): the tie breaks the fair order (each baseline must
score strictly above the one before it, or by its minimum gap), the bound of every degenerate and
probe row is the tied score whichever of the two is named last, and no row depends on their order."""

from __future__ import annotations

import pytest

import dialogue_gym.audit as audit_module
from dialogue_gym.audit import BLIND_MARGIN, AuditPolicy, ScenarioAudit, audit_rows, probe_rows


def _audit(order, kind="reward", gaps=None):
    policies = tuple(AuditPolicy(name, kind_, "", lambda: None) for name, kind_ in (("salad", "degenerate"), ("script", "blind")))
    return ScenarioAudit(
        env_id="X", learner="agent", score="score", score_kind=kind, baseline="sop", fair_order=order,
        policies=policies, min_gaps=gaps or {}, reward_margin=0.25,
    )


def _non_order(rows):
    return {row.name: (row.kind, row.score, row.bound, row.passed) for row in rows if row.kind != "fair order"}


@pytest.mark.parametrize("salad", [0.25, 0.5])
def test_two_tied_best_fair_baselines_bound_the_rewards_by_their_score_in_either_order(salad):
    scores = {"random": -0.5, "sop": 0.75, "adaptive": 0.75, "salad": salad, "script": 0.75}
    forward = audit_rows(_audit(("random", "sop", "adaptive")), scores)
    backward = audit_rows(_audit(("random", "adaptive", "sop")), scores)
    for rows in (forward, backward):
        by_name = {row.name: row for row in rows}
        # the degenerate bound is the tied best score less the margin: 0.75 - 0.25, the same for either baseline
        assert by_name["salad"].bound == 0.5 and by_name["salad"].passed is (salad < 0.5)
        # the blind bound is the named baseline's score (sop, one of the tied pair) + the margin
        assert by_name["script"].bound == pytest.approx(0.75 + BLIND_MARGIN) and by_name["script"].passed
    assert _non_order(forward) == _non_order(backward)
    # the tie itself breaks the fair order, named either way round; the order below it holds
    assert [(row.name, row.score, row.passed) for row in forward if row.kind == "fair order"] == [("random < sop", 1.25, True), ("sop < adaptive", 0.0, False)]
    assert [(row.name, row.score, row.passed) for row in backward if row.kind == "fair order"] == [("random < adaptive", 1.25, True), ("adaptive < sop", 0.0, False)]


def test_the_best_fair_score_bounds_the_rewards_even_when_a_weaker_named_baseline_ties_it_first():
    """The bound is the highest fair score, not the last-named baseline's: with random tied at the top
    and adaptive (named last) below it, the bound follows random."""
    scores = {"random": 1.0, "sop": 1.0, "adaptive": 0.5, "salad": 0.625, "script": 0.0}
    rows = {row.name: row for row in audit_rows(_audit(("random", "sop", "adaptive")), scores)}
    assert rows["salad"].bound == 0.75 and rows["salad"].passed
    assert not rows["random < sop"].passed and not rows["sop < adaptive"].passed


@pytest.mark.parametrize("kind", ["rate", "reward"])
def test_a_tie_fails_a_minimum_gap_and_exactly_the_gap_passes(kind):
    gaps = {("sop", "adaptive"): 0.25}
    tied = {"random": 0.0, "sop": 0.5, "adaptive": 0.5, "salad": 0.0, "script": 0.0}
    rows = {row.name: row for row in audit_rows(_audit(("random", "sop", "adaptive"), kind, gaps), tied)}
    assert (rows["sop < adaptive"].score, rows["sop < adaptive"].bound, rows["sop < adaptive"].passed) == (0.0, 0.25, False)
    at_gap = {**tied, "adaptive": 0.75}
    assert {row.name: row for row in audit_rows(_audit(("random", "sop", "adaptive"), kind, gaps), at_gap)}["sop < adaptive"].passed
    # the rate audit's degenerate bound is half the named baseline's rate, untouched by the tie
    if kind == "rate":
        assert rows["salad"].bound == 0.25


def test_probes_are_bound_by_the_tied_fair_score_in_either_order(monkeypatch):
    scores = {"sop": 0.5, "adaptive": 0.5, "seed_replay": 0.5, "clairvoyant": 0.625}
    probes = tuple(AuditPolicy(name, "probe", "", lambda: None) for name in ("seed_replay", "clairvoyant"))
    outcomes = []
    for fair in (["sop", "adaptive"], ["adaptive", "sop"]):
        monkeypatch.setattr(audit_module, "fair_players", lambda audit, fair=fair: (fair, None))
        rows = probe_rows(_audit(("random", *fair)), probes, scores, sealed=True)
        outcomes.append([(row.name, row.bound, row.passed, row.counted) for row in rows])
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] == [("seed_replay", pytest.approx(0.5 + BLIND_MARGIN), True, True), ("clairvoyant", pytest.approx(0.5 + BLIND_MARGIN), False, True)]
