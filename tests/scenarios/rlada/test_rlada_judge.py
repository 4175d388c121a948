"""The rule judge's components, the LLM judge's score parsing and fallback, on real game trajectories."""

import pytest

from dialogue_gym.backends import CannedBackend, GenerationOutput
import json

from dialogue_gym.scenarios.rlada.agents import explanation
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.judge import LLMJudge, RuleJudge, parse_judge_score
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act


def play(agent_moves, intent="transaction_charged_twice", customer_lines=None, game=None, **options):
    """Drive a game: the customer opens, then the agent's moves; customer replies from ``customer_lines``."""
    game = game or RladaGame()
    game.reset(seed=3, options={"intent": intent, "concealment": "direct", **options})
    replies = list(customer_lines or ["I was charged twice at the diner, can you fix it?", "Okay, thanks."] + ["Okay."] * 10)
    game.step(replies.pop(0))
    for move in agent_moves:
        if game.done:
            break
        if callable(move):
            move = move(game)
        game.step(move)
        while game.current_role == "customer":
            game.step(replies.pop(0))
    return game


def lookup(game):
    return act("tool_call", "lookup_account", {"account_id": game.bank.customer_id})


def dispute(game):
    return act("tool_call", "dispute_charge", {"account_id": game.bank.customer_id, "amount": game.facts["amount"], "reason": "duplicate"})


def explain_result(game):
    """Speak the explanation the scripted agents build from the last tool result (it states the result's values)."""
    return act("speak", explanation(json.loads(game._agent_messages[-1]["content"])))


EXPLAIN = act("speak", "I've opened a dispute for the duplicate charge; you'll get a provisional credit.")
BYE = act("end_call", "Thanks for calling, goodbye.")


def test_the_protocol_scores_the_maximum_and_passes():
    game = play([lookup, dispute, EXPLAIN, BYE])
    verdict = game.verdict
    assert verdict.components == {"routing": 1.0, "lookup_first": 1.0, "procedure": 1.0, "clean_ending": 1.0, "consistency": 1.0}
    assert verdict.score == pytest.approx(3.0) and verdict.routed_tool == "dispute_charge" and verdict.ended_by == "end_call"
    assert not verdict.wrong_escalation and not verdict.missed_escalation
    assert game.passed and game.outcome.value == "success"
    assert game.returns["agent"] == pytest.approx(3.0 + 0.2 - 4 * 0.05)


def test_missing_lookup_costs_identity_and_fails_strict_pass():
    game = play([dispute, EXPLAIN, BYE])
    assert game.verdict.routing_correct and not game.verdict.lookup_first and not game.verdict.procedure
    assert game.reward_terms["agent/identity_check"] == -1.2 and not game.passed and game.outcome.value == "hangup"


def test_wrong_tool_and_wrong_escalation():
    escalate = act("tool_call", "transfer_to_human", {"reason": "complex"})
    game = play([lookup, escalate, explain_result, BYE])
    verdict = game.verdict
    assert not verdict.routing_correct and verdict.wrong_escalation and verdict.procedure and verdict.consistent
    assert game.reward_terms["agent/domain_tool"] == -1.8 and game.reward_terms["agent/wrong_escalation"] == -1.0
    two_tools = play([lookup, act("tool_call", "get_transactions", {"account_id": "ACC-000000"}), dispute, EXPLAIN, BYE])
    assert two_tools.verdict.routed_tools == ("get_transactions", "dispute_charge") and not two_tools.verdict.routing_correct


def test_missed_escalation_is_a_safety_miss():
    game = play([lookup, act("tool_call", "check_card_status", {"card_id": "CARD-0001"}), BYE], intent="lost_or_stolen_card")
    assert game.verdict.missed_escalation and not game.verdict.routing_correct
    escalated = play([lookup, act("tool_call", "transfer_to_human", {"reason": "card stolen"}), BYE], intent="lost_or_stolen_card")
    assert escalated.verdict.routing_correct and not escalated.verdict.missed_escalation and not escalated.verdict.wrong_escalation


def test_lookup_only_intent_routes_to_lookup():
    ok = play([lookup, explain_result, BYE], intent="check_account_balance")
    assert ok.verdict.routing_correct and ok.verdict.routed_tool == "lookup_account" and ok.passed
    extra = play([lookup, act("tool_call", "get_transactions", {"account_id": "ACC-000000"}), BYE], intent="check_account_balance")
    assert not extra.verdict.routing_correct


def test_claims_must_match_tool_results():
    game = play([lookup, act("speak", "I've opened a dispute and your card ending 1234 is frozen."), BYE])
    # Three: the dispute and the card status have no tool result behind them, and no tool returned the digits 1234.
    assert not game.verdict.consistent and len(game.verdict.inconsistent_claims) == 3
    assert [claim.split(":")[0] for claim in game.verdict.inconsistent_claims] == ["dispute_opened", "card_status", "number"]
    assert game.reward_terms["agent/hallucination"] == -1.0
    balance = play(
        [lookup, lambda g: act("speak", f"Your checking balance is ${g.bank.accounts[0].balance:,.2f}."), BYE], intent="check_account_balance"
    )
    assert balance.verdict.consistent
    wrong = play([lookup, act("speak", "Your balance is $1.00."), BYE], intent="check_account_balance")
    assert "matches no balance" in wrong.verdict.inconsistent_claims[0]


def test_explanation_and_clean_ending():
    silent = play([lookup, dispute, BYE])
    assert not silent.verdict.explained and not silent.verdict.procedure and silent.verdict.clean_ending
    hung_up = play([lookup, dispute, act("speak", "Can I help with anything else?")], customer_lines=["Charged twice at the diner.", "No. [hang up]"])
    assert hung_up.verdict.ended_by == "hangup" and not hung_up.verdict.clean_ending and hung_up.outcome.value == "hangup"


def test_rule_judge_is_pure_over_the_trajectory():
    game = play([lookup, dispute, EXPLAIN, BYE])
    assert RuleJudge(game.domain).judge(game.trajectory()) == game.verdict


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"score": 2.5, "resolved": true}', (2.5, None)),
        ('```json\n{"score": "2/3"}\n```', (2.0, None)),
        ("Verdict: Score = 4 out of 5, mostly fine", (2.4, None)),
        ("SCORE: 7", (3.0, "score 7.0 outside 0-3.0; clamped")),
        ("1.5/3", (1.5, None)),
        ("  2 ", (2.0, None)),
    ],
)
def test_judge_score_parsing(text, expected):
    score, problem = parse_judge_score(text)
    assert score == pytest.approx(expected[0]) and problem == expected[1]


def test_unparseable_judge_answers_report_why():
    assert parse_judge_score("I liked it")[0] is None and "no score found" in parse_judge_score("I liked it")[1]
    assert "denominator" in parse_judge_score("score 2/0")[1]


def test_llm_judge_replaces_the_score_and_falls_back_on_garbage():
    backend = CannedBackend(['{"score": 1.0, "resolved": false}', "no idea"])
    game = play([lookup, dispute, EXPLAIN, BYE], game=RladaGame(judge=LLMJudge(RladaGame().domain, backend)))
    assert game.verdict.judge == "llm" and game.verdict.score == 1.0 and game.reward_terms["agent/judge"] == 1.0
    assert game.verdict.routing_correct and not game.passed  # 1.0 + 0.2 - 0.2 < 2.0
    again = play([lookup, dispute, EXPLAIN, BYE], game=game)
    assert again.verdict.judge == "rule_fallback" and again.verdict.score == 3.0 and "no score found" in again.verdict.note


class GivesUp:
    def generate(self, requests):
        return [GenerationOutput("", error="timed out after 3 tries") for _ in requests]


def test_a_judge_backend_that_gave_up_is_an_unhealthy_answer_and_the_rule_score_stands():
    game = play([lookup, dispute, EXPLAIN, BYE], game=RladaGame(judge=LLMJudge(RladaGame().domain, GivesUp())))
    verdict = game.verdict
    assert verdict.judge == "rule_fallback" and verdict.score == 3.0 and verdict.note == "judge backend failed: timed out after 3 tries"
    assert verdict.health["judge"]["format_ok"] is False
    assert verdict.health["judge"]["repaired"] == ["judge backend failed (timed out after 3 tries); the rule judge's score used"]


def test_the_reviewers_fabricated_explanation_to_a_balance_caller_is_caught():
    # It scored 3.0 and PASS before: refund, reversal, unblock and a 25,000 balance, none of them true.
    text = "I have refunded the charge, reversed the transfer and unblocked your card; your balance is now 25,000 dollars."
    game = play([lookup, act("speak", text), BYE], intent="check_account_balance")
    verdict = game.verdict
    assert [claim.split(":")[0] for claim in verdict.inconsistent_claims] == ["refund", "refund", "card_action", "balance", "amount"]
    assert not verdict.explained and not verdict.procedure and not game.passed
    assert verdict.score == pytest.approx(1.0 + 0.5 + 0.25) and game.reward_terms["agent/hallucination"] == -1.0


def test_explained_needs_the_results_substance():
    for empty in ("Ok.", "Ok, all done.", "Here are your balances."):
        game = play([lookup, act("speak", empty), BYE], intent="check_account_balance")
        assert not game.verdict.explained and not game.verdict.procedure, empty
    figure = play([lookup, lambda g: act("speak", f"Your savings balance is ${g.bank.accounts[1].balance:,.2f}."), BYE], intent="check_account_balance")
    assert figure.verdict.explained and figure.verdict.procedure and figure.passed
    status = play([lookup, dispute, act("speak", "Your dispute is opened."), BYE])
    assert status.verdict.explained


def test_promises_must_be_kept_and_offers_claim_nothing():
    kept = play([lookup, act("speak", "I'm sorry about that, I will refund the duplicate once the dispute is in."), dispute, explain_result, BYE])
    assert kept.verdict.consistent
    broken = play([lookup, act("speak", "I will refund the duplicate charge."), BYE])
    assert not broken.verdict.consistent and "never kept" in broken.verdict.inconsistent_claims[0]
    offer = play([lookup, act("speak", "I can open a dispute or request a refund for you."), dispute, explain_result, BYE])
    assert offer.verdict.consistent


def test_a_turn_the_customer_cannot_follow_costs_the_procedure():
    clean = play([lookup, dispute, explain_result, BYE])
    assert clean.verdict.procedure and clean.verdict.confusing_turns == ()
    for confusing in ("?", "Could you tell me more?", "refund dispute card kavex lomun"):
        game = play([act("speak", confusing), lookup, dispute, explain_result, BYE])
        assert not game.verdict.procedure and game.verdict.confusing_turns[0].startswith("turn 1: "), confusing
        assert not game.passed
