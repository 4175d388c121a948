"""RL-ADA's recogniser (scenarios/rlada/reading.py): what the customer makes of an agent turn, which
customer turns a person understands, and which claims and values an agent turn states."""

import pytest

from dialogue_gym.scenarios.rlada import reading
from dialogue_gym.scenarios.rlada.agents import CLARIFY, GOODBYE, explanation
from dialogue_gym.scenarios.rlada.audit import FABRICATED, MONOLOGUE, VOCABULARY
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.reading import (
    customer_turn_understood,
    evidence_numbers,
    quoted_values,
    read_agent_turn,
    repeats_itself,
    spoken_claims,
    split_sentences,
)

DOMAIN = load_domain()
HEARD = ("On Monday I was at Target and it just kept beeping at me, then the app logged me out too, so maybe it's my whole account?",)


def test_constants():
    assert reading.CONFUSING == ("not_understood", "content_free", "echo", "repeat", "off_topic", "monologue")
    assert (reading.ECHO_OVERLAP, reading.REPEAT_OVERLAP, reading.MAX_QUESTIONS, reading.MAX_SENTENCES) == (0.6, 0.75, 2, 5)
    assert reading.ON_TOPIC_SHARE == 0.75
    assert (reading.NEGATION_WINDOW, reading.OFFER_GAP, reading.MAX_CACHED_CALL_CHARS) == (2, 6, 4000)


@pytest.mark.parametrize(
    "text, kind",
    [
        ("?", "not_understood"),
        ("", "not_understood"),
        ("And?", "content_free"),
        ("Why?", "content_free"),
        ("Could you tell me more?", "content_free"),
        ("What do you mean?", "content_free"),
        ("Is that so?", "content_free"),
        ("refund dispute card blocked kavex lomun", "not_understood"),
        ("kalovex drimun zortas pelquo rinbre nuvka", "not_understood"),
        ("refund dispute card blocked transfer balance charge human fraud account", "not_understood"),
        ("Is it your card, dispute, refund, transfer, balance or fraud?", "not_understood"),
        (HEARD[0] + "?", "echo"),
        ("What is your favourite colour?", "off_topic"),
        ("Is your account purple today?", "off_topic"),
        ("Does your card like jazz music?", "off_topic"),
        ("When did you notice the charge on your statement?", "question"),
        ("Was it at Target on Monday?", "question"),
        ("Is it your card? Is it a payment? Is it a transfer?", "monologue"),
        (MONOLOGUE, "monologue"),
        (" ".join(VOCABULARY.facts), "monologue"),
        ("Which card is this about, the one ending 1234?", "question"),
        ("I have your account open: your checking balance is $1,234.50 and your savings balance is $20.00.", "statement"),
    ],
)
def test_what_the_customer_makes_of_an_agent_turn(text, kind):
    assert read_agent_turn(text, HEARD, (), DOMAIN).kind == kind


def test_the_scripted_agents_lines_are_real_questions_and_statements():
    assert [read_agent_turn(line, HEARD, (), DOMAIN).kind for line in CLARIFY] == ["question"] * 3
    assert read_agent_turn(GOODBYE, HEARD, (), DOMAIN).kind == "statement"
    # Asking the same thing again is a near-repeat; two made-up words do not make it new.
    assert read_agent_turn(CLARIFY[1], HEARD, (CLARIFY[1],), DOMAIN).kind == "repeat"
    padded = CLARIFY[1].replace("exactly", "kalovex drimun")
    assert read_agent_turn(padded, HEARD, (CLARIFY[1],), DOMAIN).kind in ("repeat", "not_understood")


def test_customer_turns_a_person_understands():
    assert customer_turn_understood("Okay, thanks.", DOMAIN)
    assert customer_turn_understood(HEARD[0], DOMAIN)
    assert customer_turn_understood("I was charged twice at Chipotle on Sunday.", DOMAIN)  # the scenario's own names are words
    for text in ("?", "", "kalovex drimun zortas", "charged twice pending declined blocked stolen fraud balance", "Okay. vexlo murin tasbre pelkaquo."):
        assert not customer_turn_understood(text, DOMAIN), text
    assert repeats_itself("Like I said, " + HEARD[0].lower(), HEARD, DOMAIN)
    assert not repeats_itself("It was the one ending 1234.", HEARD, DOMAIN)


def test_every_packaged_customer_line_is_understood():
    lines = [line for intent in DOMAIN.intents for line in (*intent.direct, *intent.vague)]
    lines += [line for family in DOMAIN.customer["families"].values() for kind in ("hint", "camouflage", "camouflage_followup") for line in family[kind]]
    lines += [*DOMAIN.customer["acknowledgements"], *[line for group in DOMAIN.customer["confused"].values() for line in group]]
    facts = {"{merchant}": "Chipotle", "{amount}": "$4.71", "{day}": "Sunday", "{last4}": "8085", "{person}": "Jordan",
             "{country}": "Spain", "{atm}": "Main Street", "{company}": "Apex Mobile", "{descriptor}": "SQ *BRNX 4471",
             "{source}": "savings", "{target}": "checking"}
    for line in lines:
        for slot, value in facts.items():
            line = line.replace(slot, value)
        assert customer_turn_understood(line, DOMAIN), line


def test_sentences_keep_decimal_amounts():
    assert split_sentences("Your balance is $1,234.50 and $3.00. Thanks!") == ("Your balance is $1,234.50 and $3.00.", "Thanks!")


def test_claims_are_declarative_unnegated_and_not_offers():
    def names(text):
        return [(claim.name, claim.mode) for claim in spoken_claims(text, DOMAIN)]

    assert names(FABRICATED) == [("refund", "fact"), ("refund", "fact"), ("card_action", "fact"), ("balance", "fact")]
    assert names("I haven't refunded anything yet.") == []
    assert names("Would you like me to open a dispute or get a refund?") == []
    assert names("I can request a refund for you.") == []
    assert names("I can confirm the refund.") == [("refund", "fact")]
    assert names("I can confirm I have refunded your charge.") == [("refund", "fact")]
    assert names("No problem, I have refunded it.") == [("refund", "fact")]
    assert names("I will refund the charge.") == [("refund", "promise")]
    assert names("You will get a refund within 3 days.") == [("refund", "fact")]
    assert names("It's all sorted out now.") == [("resolved", "fact")]


def test_quoted_values_by_hand():
    values = quoted_values("Your balance is now 25,000 dollars. Ticket HUM-123456, card ending 0421, $1,234.50, 2024-06-14, 30 days.")
    assert values.amounts == (25000.0, 1234.5) and values.ids == ("HUM-123456",) and values.numbers == (421.0,)
    assert evidence_numbers('{"balance": 1234.5, "last4": "0421", "days": 30}') == frozenset({1234.5, 421.0, 30.0})


def test_the_scripted_explanations_claim_only_what_the_tool_returned():
    dispute = {"tool": "dispute_charge", "ok": True, "result": {"dispute_id": "DSP-000123", "amount": 4.71, "merchant": "Chipotle", "provisional_credit": "within 3 business days", "status": "opened"}}
    text = explanation(dispute)
    assert [claim.name for claim in spoken_claims(text, DOMAIN)] == ["dispute_opened", "refund"]
    assert quoted_values(text).ids == ("DSP-000123",) and quoted_values(text).amounts == (4.71,)
