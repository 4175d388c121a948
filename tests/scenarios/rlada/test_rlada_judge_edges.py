"""The RL-ADA judge's edges the main tests left open (found by ``tools/mutation.py``): how a call
ended when its last turn or its outcome says so, failed and repeated tool calls, which turns can
explain a result or carry a claim (only spoken turns the customer heard and understood, after the
result), and the LLM judge's reply parsing (scores out of the rubric, missing fields, extra text)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from dialogue_gym.backends import CannedBackend, SamplingParams
from dialogue_gym.scenarios.rlada.game import RladaConfig, RladaGame
from dialogue_gym.scenarios.rlada.judge import LLMJudge, RuleJudge, ended_by, parse_judge_score, transcript_text
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act
from dialogue_gym.types import Outcome, Trajectory, Turn


def play(agent_moves, intent="transaction_charged_twice", game=None):
    """The customer opens with a direct request, then the agent's moves (a move may be built from the game); the customer says okay."""
    game = game or RladaGame()
    game.reset(seed=3, options={"intent": intent, "concealment": "direct"})
    game.step("I was charged twice at the diner, can you fix it?")
    for move in agent_moves:
        game.step(move(game) if callable(move) else move)
        while game.current_role == "customer":
            game.step("Okay, thanks.")
    assert game.done
    return game


def lookup(game):
    return act("tool_call", "lookup_account", {"account_id": game.bank.customer_id})


def dispute(game):
    return act("tool_call", "dispute_charge", {"account_id": game.bank.customer_id, "amount": game.facts["amount"], "reason": "duplicate"})


EXPLAIN = act("speak", "I've opened a dispute for the duplicate charge; you'll get a provisional credit.")
BYE = act("end_call", "Thanks for calling, goodbye.")


def result_of(call, tool):
    """The result of the first successful ``tool`` call of ``call`` (a game or a trajectory)."""
    return next(c["result"] for c in (t.parsed.get("tool_outcome") for t in call.turns) if c and c["tool"] == tool and c["ok"])


def test_a_verdict_is_immutable():
    verdict = play([lookup, dispute, EXPLAIN, BYE]).verdict
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.score = 0.0


@pytest.mark.parametrize(
    "last, outcome, expected",
    [
        (Turn("customer", "No. [hang up]", "No.", {"hangup": True}), None, "hangup"),  # a partial trajectory: the turn says it
        (Turn("customer", "Okay.", "Okay.", {"hangup": False}), Outcome.TIMEOUT, "timeout"),  # a customer turn that did not hang up
        (Turn("customer", "Okay.", "Okay.", {"hangup": False}), None, None),
        (Turn("agent", "...", "", {"action_type": "end_call", "content": "Bye."}, invalid="truncated"), Outcome.INVALID, "invalid"),
        (Turn("agent", "...", "", {"action_type": "end_call", "content": "Bye."}), None, "end_call"),
    ],
)
def test_ended_by_reads_the_last_turn_then_the_outcome(last, outcome, expected):
    opener = Turn("customer", "I was charged twice.", "I was charged twice.", {"hangup": False})
    assert ended_by(Trajectory("RLADA-Banking-v0", 0, {}, [opener, last], outcome)) == expected
    assert ended_by(Trajectory("RLADA-Banking-v0", 0, {}, [], None)) is None


def test_a_failed_lookup_routes_nowhere():
    # a schema-valid lookup of an account that is not the caller's: the bank refuses it
    refused = act("tool_call", "lookup_account", {"account_id": "ACC-000001"})
    game = play([refused, BYE], intent="check_account_balance")
    call = game.turns[1].parsed["tool_outcome"]
    assert call["schema_ok"] and not call["ok"]
    verdict = game.verdict
    assert verdict.routed_tools == () and not verdict.routing_correct and not verdict.lookup_first


def test_a_value_of_another_tool_does_not_explain_the_routed_tools_result():
    # the dispute is the routed tool; a second lookup after it, and the balance stated from that
    # lookup, explain nothing about the dispute
    balance = lambda g: act("speak", f"Your checking balance is ${g.bank.accounts[0].balance:,.2f}.")  # noqa: E731
    game = play([lookup, dispute, lookup, balance, BYE])
    verdict = game.verdict
    assert verdict.routed_tools == ("dispute_charge",) and verdict.consistent
    assert not verdict.explained and not verdict.procedure


def test_a_value_stated_before_the_result_explains_nothing():
    # A hand-built trajectory (the judge is a pure function of turns): the agent states the disputed
    # amount, then opens the dispute whose result holds it, then hangs up without a word about it.
    amount = lambda g: act("speak", f"I see the ${g.facts['amount']:,.2f} charge twice.")  # noqa: E731
    game = play([lookup, amount, dispute, act("end_call", "Goodbye.")])
    turns = [turn for index, turn in enumerate(game.turns) if index != 3]  # drop the customer's reply to the speech
    assert [t.parsed.get("action_type") for t in turns[1:]] == ["tool_call", "speak", "tool_call", "end_call"]
    trajectory = dataclasses.replace(game.trajectory(), turns=turns)
    verdict = RuleJudge(game.domain).judge(trajectory)
    assert verdict.routed_tools == ("dispute_charge",) and not verdict.explained and not verdict.procedure


def test_an_invalid_turn_neither_explains_nor_claims():
    # A speech over max_utterance_chars is flagged and not heard by the customer: the dispute id it
    # states explains nothing, and its false claim (a frozen card; no card was checked) is no hallucination.
    game = RladaGame(RladaConfig(max_utterance_chars=60))
    flagged = lambda g: act(  # noqa: E731
        "speak", f"Your dispute {result_of(g, 'dispute_charge')['dispute_id']} is opened; your card is frozen. Thank you for waiting."
    )
    game = play([lookup, dispute, flagged, BYE], game=game)
    assert game.turns[3].invalid is not None and game.turns[3].parsed["action_type"] == "speak"
    assert "your card is frozen" in game.turns[3].parsed["content"]  # the claim survives the cut
    verdict = game.verdict
    assert not verdict.explained and not verdict.procedure and verdict.consistent


def test_a_goodbye_the_customer_cannot_follow_explains_nothing():
    garbled = lambda g: act("end_call", f"{result_of(g, 'dispute_charge')['dispute_id']} kavex lomun dorvi.")  # noqa: E731
    game = play([lookup, dispute, garbled])
    verdict = game.verdict
    assert verdict.ended_by == "end_call" and verdict.confusing_turns == ()
    assert not verdict.explained and not verdict.procedure


def check_card(game):
    return act("tool_call", "check_card_status", {"card_id": game.bank.cards[0].card_id})


def test_each_unbacked_claim_says_what_would_have_backed_it():
    # a card was checked (status inactive): it backs "resolved" (some domain tool succeeded), not a
    # dispute, not another card status, and no tool ever unblocks a card
    speech = act("speak", "I've opened a dispute and your card is frozen. It has been resolved and I have unblocked your card.")
    checked = play([lookup, check_card, speech, BYE], intent="activate_my_card")
    assert result_of(checked, "check_card_status")["status"] == "inactive"
    assert checked.verdict.inconsistent_claims == (
        "dispute_opened: 'opened a dispute' without a successful dispute charge",
        "card_status: 'your card is frozen' but check_card_status returned ['inactive']",
        "card_action: 'unblocked' no tool does this",
    )
    unchecked = play([lookup, act("speak", "It has been resolved and your card is frozen."), BYE], intent="activate_my_card")
    assert unchecked.verdict.inconsistent_claims == (  # in the order of data/judge.json's claims
        "card_status: 'your card is frozen' but check_card_status returned nothing",
        "resolved: 'has been resolved' without a successful any domain tool",
    )


def with_result(game, tool, edit):
    """The game's trajectory with ``edit`` applied to (a copy of) the result of its first successful ``tool`` call."""
    trajectory = copy.deepcopy(game.trajectory())
    edit(result_of(trajectory, tool))
    return trajectory


def test_balances_are_compared_in_cents_like_every_stated_value():
    # Hand-edited tool results with a sub-cent balance (the packaged bank keeps cents): $100.26
    # states the balance 100.257 to the cent, as the amount check reads it.
    looked_up = play([lookup, act("speak", "Your checking balance is $100.26."), BYE], intent="check_account_balance")
    assert not looked_up.verdict.consistent  # the real balance is another
    trajectory = with_result(looked_up, "lookup_account", lambda result: result["accounts"][0].update(balance=100.257))
    assert RuleJudge(looked_up.domain).judge(trajectory).consistent

    def transfer(game):
        checking, savings = game.bank.accounts[0].account_id, game.bank.accounts[1].account_id
        return act("tool_call", "transfer_funds", {"from_account_id": checking, "to_account_id": savings, "amount": 10.0})

    moved = play([lookup, transfer, act("speak", "Your savings balance is now $100.26."), BYE], intent="transfer_into_account")
    savings = moved.bank.accounts[1].account_id
    trajectory = with_result(moved, "transfer_funds", lambda result: result["new_balances"].update({savings: 100.257}))
    assert not moved.verdict.consistent and RuleJudge(moved.domain).judge(trajectory).consistent


def test_restating_the_calls_own_words_explains_nothing():
    # the dispute's result repeats the merchant and the reason the agent gave; saying them back
    # states none of the result's substance (its amounts, ids, numbers, status)
    game = play([lookup, dispute, act("speak", "I have noted the Riverside Diner charge as a duplicate."), BYE])
    assert {"merchant": "Riverside Diner", "reason": "duplicate"}.items() <= result_of(game, "dispute_charge").items()
    assert not game.verdict.explained and not game.verdict.procedure


@pytest.mark.parametrize(
    "text, expected",
    [
        # the JSON object's score wins over a score its reason mentions: at the start of the answer,
        # after text, before text
        ('{"reason": "score 1 at first, then fixed", "score": 2}', (2.0, None)),
        ('Here you go: {"reason": "score 1 at first", "score": 2}', (2.0, None)),
        ('{"reason": "score 1 at first", "score": 2}. That is all.', (2.0, None)),
        ('{"score": "2.5", "resolved": true}', (2.5, None)),  # a numeric string
        ('{"resolved": true} Overall score: 2', (2.0, None)),  # no score field: read from the text
        ('{"score": true, "reason": "fine"}', (None, "no score found in the judge's answer '{\"score\": true, \"reason\": \"fine\"}'")),
    ],
)
def test_the_json_score_field_wins_and_only_a_number_is_a_score(text, expected):
    assert parse_judge_score(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Score: 0", (0.0, None)),  # the ends of the rubric's 0-3 are in range
        ("Score: 3", (3.0, None)),
        ("Score: 0.5", (0.5, None)),
        ('{"score": -1}', (0.0, "score -1.0 outside 0-3.0; clamped")),
        ("Score: 0.5/1", (1.5, None)),  # a fraction over a scale of 1 is rescaled, not refused
    ],
)
def test_scores_on_the_rubrics_edges(text, expected):
    assert parse_judge_score(text) == expected


def test_a_problem_quotes_the_first_120_characters_of_the_answer():
    padding = "x" * 200
    assert parse_judge_score(f"{padding} no verdict") == (None, f"no score found in the judge's answer {padding[:120]!r}")
    assert parse_judge_score(f"score: 2/0 {padding}") == (None, f"score fraction with denominator 0.0 in {f'score: 2/0 {padding}'[:120]!r}")
    huge = f"score: {'9' * 400} {padding}"
    assert parse_judge_score(huge) == (None, f"non-finite score in {huge[:120]!r}")


def test_the_judge_reads_every_kind_of_turn_and_bounded_tool_results():
    foreign = act("tool_call", "get_transactions", {"account_id": "ACC-000001"})  # refused: not the caller's
    history = lambda g: act("tool_call", "get_transactions", {"account_id": g.bank.customer_id})  # noqa: E731
    game = play([lookup, foreign, history, "{not json", dispute, EXPLAIN, BYE])
    lines = transcript_text(game.trajectory()).splitlines()
    assert [line.split(" ")[0] for line in lines] == ["CUSTOMER:"] + ["AGENT"] * 5 + ["AGENT:", "CUSTOMER:", "AGENT"]
    assert lines[0] == "CUSTOMER: I was charged twice at the diner, can you fix it?"
    assert lines[2].startswith('AGENT calls get_transactions({"account_id": "ACC-000001"}) -> {"code": "account_not_found"')
    # a long result is cut to its first 600 characters of JSON
    called = f'AGENT calls get_transactions({{"account_id": "{game.bank.customer_id}"}}) -> '
    transactions = json.dumps(result_of(game, "get_transactions"))
    assert len(transactions) > 600 and lines[3] == called + transactions[:600]
    assert lines[4].startswith("AGENT (invalid output: malformed JSON")
    assert lines[6:] == [
        "AGENT: I've opened a dispute for the duplicate charge; you'll get a provisional credit.",
        "CUSTOMER: Okay, thanks.",
        "AGENT (ends the call): Thanks for calling, goodbye.",
    ]

def test_the_judge_model_samples_greedily_with_128_tokens_unless_told():
    domain = RladaGame().domain
    assert LLMJudge(domain, CannedBackend(["{}"])).sampling == SamplingParams(temperature=0.0, max_new_tokens=128)
    told = LLMJudge(domain, CannedBackend(["{}"]), sampling={"max_new_tokens": 64})
    assert told.sampling == SamplingParams(temperature=0.0, max_new_tokens=64)


@pytest.mark.parametrize("answer", ["Score: -1", "score -2", "SCORE = -0.5 out of 3"])
def test_a_negative_score_in_text_is_clamped_to_zero_not_read_as_positive(answer):
    """The separator after "score" must not swallow the minus sign: a judge model that gives a
    negative score would otherwise hand the agent points."""
    from dialogue_gym.scenarios.rlada.judge import parse_judge_score

    score, problem = parse_judge_score(answer)
    assert score == 0.0 and problem is not None
