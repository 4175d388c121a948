"""RL-ADA reward terms as pure functions, and their TRL reward-function form."""

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.rewards import rlada
from dialogue_gym.rewards.rlada import AgentWeights, CustomerWeights


def test_agent_terminal_deductions_follow_the_paper():
    weights = AgentWeights()
    perfect = rlada.agent_terminal_terms(judge_score=3.0, routing_correct=True, lookup_first=True, wrong_escalation=False, consistent=True, weights=weights)
    assert perfect == {"judge": 3.0}
    worst = rlada.agent_terminal_terms(judge_score=0.5, routing_correct=False, lookup_first=False, wrong_escalation=True, consistent=False, weights=weights)
    assert worst == {"judge": 0.5, "identity_check": -1.2, "domain_tool": -1.8, "wrong_escalation": -1.0, "hallucination": -1.0}


def test_agent_turn_terms():
    weights = AgentWeights(turn_cost=-0.1)
    assert rlada.agent_turn_terms(progress=0, weights=weights) == {"turn_cost": -0.1}
    assert rlada.agent_turn_terms(progress=2, weights=weights) == {"turn_cost": -0.1, "tool_progress": pytest.approx(0.2)}


def test_customer_terms_are_means_and_inverse_of_the_agent():
    terms = rlada.customer_terminal_terms(
        format_scores=[1, 0], realism_scores=[1, 1], concealment_scores=[1.0, 0.5], grounded=False, agent_total=2.0, weights=CustomerWeights()
    )
    assert terms == pytest.approx({"format": 0.25, "realism": 0.25, "concealment": 0.375, "inverse_agent": -1.0})
    empty = rlada.customer_terminal_terms(format_scores=[], realism_scores=[], concealment_scores=[], grounded=True, agent_total=-1.0, weights=CustomerWeights())
    assert empty == {"format": 0.0, "realism": 0.0, "concealment": 0.0, "inverse_agent": 0.5}


@pytest.mark.parametrize(
    "routing, lookup, reward, clean, expected",
    [(True, True, 2.0, True, True), (True, True, 1.99, True, False), (False, True, 3, True, False), (True, False, 3, True, False), (True, True, 3, False, False)],
)
def test_strict_pass_needs_all_four(routing, lookup, reward, clean, expected):
    assert rlada.strict_pass(routing_correct=routing, lookup_first=lookup, agent_reward=reward, clean_ending=clean) is expected


def test_trl_reward_functions_sum_each_roles_terms():
    columns = [{"agent/judge": 3.0, "agent/turn_cost": -0.2, "customer/format": 0.5}, {"customer/inverse_agent": 1.0}]
    assert rlada.agent_reward(["c1", "c2"], reward_terms=columns) == pytest.approx([2.8, 0.0])
    assert rlada.customer_reward(["c1", "c2"], reward_terms=columns) == pytest.approx([0.5, 1.0])
    with pytest.raises(ConfigError, match="agent_reward needs the trajectories' reward_terms"):
        rlada.agent_reward(["c1"])


def test_a_customer_that_ends_the_call_concedes_it():
    # Hanging up at once: no turns, the agent's total is -3.0 (no lookup, no domain tool). Without the
    # concession the customer earned -0.5 * -3.0 = +1.5 for leaving; now it concedes the agent's best judge term.
    left = rlada.customer_terminal_terms(
        format_scores=[], realism_scores=[], concealment_scores=[], grounded=False, agent_total=-3.0, weights=CustomerWeights(), conceded=True
    )
    assert left == {"format": 0.0, "realism": 0.0, "concealment": 0.0, "conceded": -1.5}
    # The concession is never kinder than staying: an agent that already earned more is credited in full.
    rich = rlada.customer_terminal_terms(
        format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=True, agent_total=3.1, weights=CustomerWeights(),
        conceded=True, conceded_agent_reward=3.0,
    )
    assert rich["conceded"] == pytest.approx(-1.55) and "inverse_agent" not in rich


def test_adversarial_credit_needs_the_customer_to_have_put_its_case():
    weights = CustomerWeights()
    ungrounded = rlada.customer_terminal_terms(
        format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=False, agent_total=-2.0, weights=weights
    )
    assert ungrounded == pytest.approx({"format": 0.5, "realism": 0.25, "concealment": 0.5, "inverse_agent": 0.0})
    # It still loses from the agent's success, and a grounded customer earns the credit.
    assert rlada.customer_terminal_terms(
        format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=False, agent_total=2.0, weights=weights
    )["inverse_agent"] == pytest.approx(-1.0)
    assert rlada.customer_terminal_terms(
        format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=True, agent_total=-2.0, weights=weights
    )["inverse_agent"] == pytest.approx(1.0)


def test_adversarial_credit_needs_a_truthful_customer_that_did_not_withhold_its_problem():
    weights = CustomerWeights()
    # An untruthful call (a turn asserted a problem another tool serves): its realism is halved on top
    # of the per-turn zeros the game recorded, it earns no concealment (the truthful turn's 1 counts for
    # nothing: what it hid, it hid behind the falsehood), and the agent's loss is no credit.
    liar = rlada.customer_terminal_terms(
        format_scores=[1, 1], realism_scores=[0, 1], concealment_scores=[0, 1], grounded=True, agent_total=-2.0, weights=weights, truthful=False
    )
    assert liar == pytest.approx({"format": 0.5, "realism": 0.5 * 0.5 * 0.5, "concealment": 0.0, "inverse_agent": 0.0})
    # The same turns told truthfully keep the concealment of the turn that hid its problem (0.5 x 0.5).
    assert rlada.customer_terminal_terms(
        format_scores=[1, 1], realism_scores=[0, 1], concealment_scores=[0, 1], grounded=True, agent_total=-2.0, weights=weights
    )["concealment"] == pytest.approx(0.25)
    # Ungrounded and untruthful: both halvings apply (0.5 x 1.0 x 0.5 x 0.5).
    assert rlada.customer_terminal_terms(
        format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=False, agent_total=-2.0, weights=weights, truthful=False
    )["realism"] == pytest.approx(0.125)
    # Withheld (asked enough real questions, never stated its problem): no credit, realism untouched.
    withheld = rlada.customer_terminal_terms(
        format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=True, agent_total=-2.0, weights=weights, withheld=True
    )
    assert withheld == pytest.approx({"format": 0.5, "realism": 0.5, "concealment": 0.5, "inverse_agent": 0.0})
    # Either still loses from the agent's success, exactly as a fair customer does.
    for flags in ({"truthful": False}, {"withheld": True}):
        assert rlada.customer_terminal_terms(
            format_scores=[1], realism_scores=[1], concealment_scores=[1], grounded=True, agent_total=2.5, weights=weights, **flags
        )["inverse_agent"] == pytest.approx(-1.25)


def test_the_weights_are_the_documented_defaults_and_cannot_be_changed_in_place():
    """The env docstring's Rewards section: -0.05 a turn, +0.1 progress, -1.2 / -1.8 deductions (SPEC
    §3), -1.0 wrong escalation and hallucination; the customer's four 0.5 weights and -1.0 per
    bank-sounding turn. Frozen, so one episode cannot retune another's rewards."""
    import dataclasses

    agent, customer = AgentWeights(), CustomerWeights()
    assert (
        agent.judge_weight, agent.identity_deduction, agent.domain_tool_deduction, agent.wrong_escalation_penalty,
        agent.hallucination_penalty, agent.turn_cost, agent.tool_progress_bonus,
    ) == (1.0, -1.2, -1.8, -1.0, -1.0, -0.05, 0.1)
    assert (
        customer.format_weight, customer.realism_weight, customer.concealment_weight, customer.inverse_weight,
        customer.role_reversal_penalty,
    ) == (0.5, 0.5, 0.5, 0.5, -1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.turn_cost = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        customer.role_reversal_penalty = 0.0
