"""The heuristic RQ judge checks substance: keyword stuffing, fact stuffing and length cannot raise
RQ, and helpfulness needs the fact that answers the question (scores computed by hand)."""

from __future__ import annotations

import pytest

from dialogue_gym.scenarios.tracer.judges import HeuristicJudge, answers
from dialogue_gym.scenarios.tracer.acts import read_turn

MERCHANT = {
    "name": "Shop",
    "industry": "automotive",
    "facts": [
        "down payments start from 15% on most models",
        "test drives can be booked any day of the week",
        "the showroom is next to the city ring road",
        "we have sedans, SUVs and new-energy models in stock",
    ],
}
JUDGE = HeuristicJudge()


def rq(transcript):
    return JUDGE.score(transcript, MERCHANT)


def test_keyword_stuffing_meets_no_dimension():
    stuffed = "we offer phone sorry understand free discount contact wechat specialist today"
    scores = rq([("user", "Where is the showroom?"), ("assistant", stuffed), ("user", "Hmm."), ("assistant", stuffed)])
    assert scores == {"accuracy": 1.0, "helpfulness": 1.0, "informativeness": 1.0, "empathy": 1.0, "rq": 1.0}
    review = rq([("user", "Where is the showroom?"), ("assistant", "we offer phone sorry")])
    assert review["helpfulness"] == 1.0 and review["informativeness"] == 1.0


def test_fact_stuffing_is_a_monologue_then_a_repeat():
    pasted = " ".join(f"{fact[0].upper()}{fact[1:]}." for fact in MERCHANT["facts"])
    scores = rq([("user", "What is the down payment?"), ("assistant", pasted), ("user", "Ok."), ("assistant", pasted)])
    # Turn 1: a monologue (4 sentences) -- accurate and calm, neither helpful nor informative.
    # Turn 2: a repeat of turn 1 -- no reply, meets nothing. Shares: accuracy 1/2, help 0, info 0, empathy 1/2.
    assert scores == {"accuracy": 3.0, "helpfulness": 1.0, "informativeness": 1.0, "empathy": 3.0, "rq": 2.0}


def test_length_does_not_pay():
    padded = "Down payments start from 15% on most models, " + " ".join(["and we are always here to help you with that"] * 5) + "."
    scores = rq([("user", "What is the down payment?"), ("assistant", padded)])
    assert scores["helpfulness"] == 1.0 and scores["informativeness"] == 1.0 and scores["accuracy"] == 1.0, "'always' overclaims"


def test_helpfulness_needs_the_fact_that_answers_the_question():
    question = "Where is the showroom?"
    right = "The showroom is next to the city ring road."
    wrong = "Test drives can be booked any day of the week."
    assert rq([("user", question), ("assistant", right)])["helpfulness"] == 5.0
    assert rq([("user", question), ("assistant", wrong)])["helpfulness"] == 1.0
    assert rq([("user", question), ("assistant", wrong)])["informativeness"] == 5.0, "still a new fact"
    facts = tuple(MERCHANT["facts"])
    # No fact shares a word with the question: any fact, or a real question back, helps.
    assert answers("Is it nice?", read_turn("Which model do you like best?", facts), facts)
    assert not answers("Is it nice?", read_turn("Okay.", facts), facts)


def test_echo_and_content_free_turns_score_nothing_the_fair_turn_everything():
    echo = rq([("user", "Where is the showroom exactly?"), ("assistant", "Where is the showroom exactly? Leave your phone number.")])
    assert echo["rq"] == 1.0
    vague = rq([("user", "Ok."), ("assistant", "Could you tell me more?")])
    assert vague["helpfulness"] == 1.0 and vague["informativeness"] == 1.0 and vague["accuracy"] == 5.0
    fair = rq([
        ("user", "Where is the showroom?"),
        ("assistant", "The showroom is next to the city ring road. Could you share your phone so we can follow up?"),
        ("user", "Too expensive."),
        ("assistant", "I understand, no pressure. Down payments start from 15% on most models."),
    ])
    assert fair == {"accuracy": 5.0, "helpfulness": 5.0, "informativeness": 5.0, "empathy": 5.0, "rq": 5.0}


@pytest.mark.parametrize("text", ["", "(silence)", "kalovex drimun zorpel quobre", "Okay."])
def test_a_turn_with_nothing_understood_is_no_reply(text):
    assert rq([("user", "Hi"), ("assistant", text)])["rq"] == 1.0
