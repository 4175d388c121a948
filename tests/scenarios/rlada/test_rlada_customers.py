"""The scripted customer reacts to what the agent's turn means, and the customer's reward terms
credit only turns that say something, and no leaving."""

import pytest

from dialogue_gym.scenarios.rlada.agents import CLARIFY
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act

DOMAIN = load_domain()


def call(level, agent_lines, intent="transaction_charged_twice", seed=3):
    """Play the scripted customer at ``level`` against spoken agent lines; returns (game, customer lines)."""
    game = RladaGame()
    game.reset(seed=seed, options={"intent": intent, "concealment": level})
    customer = ScriptedCustomer(DOMAIN, level)
    memory = customer.start(game.role_profile("customer"), seed)
    said = [customer.act(game.observe("customer"), {}, memory)]
    game.step(said[-1])
    for line in agent_lines:
        if game.done:
            break
        game.step(act("speak", line))
        said.append(customer.act(game.observe("customer"), {}, memory))
        game.step(said[-1])
    return game, said


def test_question_marks_get_confusion_then_a_hang_up_not_the_problem():
    game, said = call("camouflage", ["?", "?", "?"])
    assert said[1] in DOMAIN.customer["confused"]["not_understood"]
    assert said[2] in DOMAIN.customer["confused_hangups"] and game.done and game.outcome.value == "hangup"
    direct = DOMAIN.intent("transaction_charged_twice").direct
    assert not any(line in " ".join(said) for line in direct)


@pytest.mark.parametrize(
    "line, kind",
    [
        ("Could you tell me more?", "content_free"),
        ("What do you mean?", "content_free"),
        ("refund dispute card blocked kavex lomun", "not_understood"),
        ("What is your favourite colour?", "off_topic"),
        ("Is it your card? Is it a payment? Is it a transfer?", "monologue"),
    ],
)
def test_confusing_turns_earn_confusion(line, kind):
    _, said = call("direct", [line])
    assert said[1] in DOMAIN.customer["confused"][kind]


def test_an_echo_and_a_repeated_question_are_confusing():
    game, said = call("vague", [CLARIFY[0], CLARIFY[0]])
    assert said[2] in DOMAIN.customer["confused"]["repeat"]
    game = RladaGame()
    game.reset(seed=3, options={"intent": "transaction_charged_twice", "concealment": "direct"})
    customer = ScriptedCustomer(DOMAIN, "direct")
    memory = customer.start(game.role_profile("customer"), 3)
    opening = customer.act(game.observe("customer"), {}, memory)
    game.step(opening)
    game.step(act("speak", opening + "?"))
    assert customer.act(game.observe("customer"), {}, memory) in DOMAIN.customer["confused"]["echo"]


def test_real_questions_earn_disclosure_as_concealment_allows():
    direct_lines = DOMAIN.intent("transaction_charged_twice").direct
    _, said = call("camouflage", list(CLARIFY))
    assert not any(line.split("{")[0][:20] in said[1] + said[2] for line in direct_lines)
    assert said[3].startswith(tuple(DOMAIN.customer["direct_followup_prefix"]))  # revealed at the third real question
    _, vague = call("vague", list(CLARIFY[:2]))
    assert vague[2].startswith(tuple(DOMAIN.customer["direct_followup_prefix"]))
    _, statement = call("direct", ["I have your account open now."])
    assert statement[1] in DOMAIN.customer["acknowledgements"]


def test_more_than_patience_real_questions_is_a_hang_up():
    questions = [*CLARIFY, "Which merchant was the payment at, and on what day?"]
    game, said = call("camouflage", questions)
    assert said[-1] in DOMAIN.customer["hangups"] and game.outcome.value == "hangup"


def customer_game(lines, intent="transaction_charged_twice"):
    """The customer speaks ``lines``; the agent asks a real question between them."""
    game = RladaGame()
    game.reset(seed=5, options={"intent": intent, "concealment": "direct"})
    for number, line in enumerate(lines):
        game.step(line)
        if game.done:
            break
        if number < len(lines) - 1:
            game.step(act("speak", CLARIFY[number % len(CLARIFY)]))
    return game


def test_hanging_up_at_once_concedes_the_call():
    game = customer_game(["[hang up]"])
    assert game.done and game.reward_terms["customer/conceded"] == pytest.approx(-1.5)
    assert game.returns["customer"] == pytest.approx(-1.5) and "customer/inverse_agent" not in game.reward_terms


def test_turns_that_say_nothing_earn_no_customer_credit():
    salad = customer_game(["charged twice pending declined blocked", "kalovex drimun zortas pelquo"])
    assert [t.parsed["understood"] for t in salad.trajectory().turns_of("customer")] == [False, False]
    assert salad._customer_scores == {"format": [0.0, 0.0], "realism": [0.0, 0.0], "concealment": [0.0, 0.0]}
    line = "I was at Riverside Diner on Monday and something about it looks off to me."
    parrot = customer_game([line, line, line])
    assert [t.parsed["repeat"] for t in parrot.trajectory().turns_of("customer")] == [False, True, True]
    assert parrot._customer_scores["realism"] == [1.0, 0.0, 0.0] and parrot._customer_scores["format"] == [1.0, 0.0, 0.0]
