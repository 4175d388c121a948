"""A realistic customer tells the truth about its problem and states it when asked: a turn that
asserts a problem another tool serves, or a second turn of side worries, invents problems (no
realism, no concealment, the call's realism halved, no adversarial credit), and a customer asked as
many real questions as the camouflage customer needs that still never stated its problem withheld it."""

import pytest

from dialogue_gym.scenarios.rlada import reading
from dialogue_gym.scenarios.rlada.agents import CLARIFY
from dialogue_gym.scenarios.rlada.customers import family_lines
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act
from dialogue_gym.scenarios.rlada.prompts import render
from dialogue_gym.scenarios.rlada.reading import Misdirection, misdirection, own_tools

DOMAIN = load_domain()
EXPIRE = DOMAIN.intent("card_about_to_expire")
"""Its tool is check_card_status: a charged-twice story is another tool's problem (dispute_charge)."""


@pytest.mark.parametrize(
    "text, expected",
    [
        ("On Sunday at Chipotle I was charged twice.", Misdirection(asserted=True, worried=False, disclosed=False)),
        # One hedged clause does not cover an asserted one beside it.
        ("My card was stolen, and I might have been charged twice.", Misdirection(asserted=True, worried=False, disclosed=False)),
        ("On Sunday at Chipotle, maybe I was charged twice?", Misdirection(asserted=False, worried=True, disclosed=False)),
        ("I wonder if I was charged twice at Chipotle.", Misdirection(asserted=False, worried=True, disclosed=False)),
        ("Was I charged twice at Chipotle on Sunday?", Misdirection(asserted=False, worried=True, disclosed=False)),
        # Its own problem: the tool's cues lead alone.
        ("My card ending 1234 expires soon and I don't know if a new one is coming.", Misdirection(False, False, True)),
        # Its own tool's cue in the same clause: part of its own story, not another problem ...
        ("My card was declined when they charged me twice.", Misdirection(False, False, False)),
        # ... but a clause of its own asserting the other problem is read as one.
        ("My card was declined and I was charged twice.", Misdirection(True, False, False)),
        ("I was at Chipotle on Sunday with a friend.", Misdirection(False, False, False)),
    ],
)
def test_misdirection_by_hand(text, expected):
    assert misdirection(text, EXPIRE, DOMAIN) == expected


def test_own_tools_absorb_the_lexicons_overlaps():
    # "I need to order a new card" is a check_card_status cue; for this escalation intent it is the truth.
    assert own_tools(DOMAIN.intent("order_physical_card"), DOMAIN) == frozenset({"transfer_to_human", "check_card_status"})
    assert own_tools(EXPIRE, DOMAIN) == frozenset({"check_card_status"})
    assert not misdirection("I need to order a new card to be posted to my home.", DOMAIN.intent("order_physical_card"), DOMAIN).asserted


def test_hedges_are_words_not_substrings():
    assert reading.HEDGES.search("maybe") and reading.HEDGES.search("it worries me") and reading.HEDGES.search("I'd like to know")
    assert not reading.HEDGES.search("I was charged twice") and not reading.HEDGES.search("gift")


FACTS = {"{merchant}": "Chipotle", "{amount}": "$4.71", "{day}": "Sunday", "{last4}": "8085", "{person}": "Jordan",
         "{country}": "Spain", "{atm}": "Main Street", "{company}": "Apex Mobile", "{descriptor}": "SQ *BRNX 4471",
         "{source}": "savings", "{target}": "checking"}


def _fill(line: str) -> str:
    for slot, value in FACTS.items():
        line = line.replace(slot, value)
    return line


def test_the_scripted_customers_never_invent_a_problem_but_one_camouflage_line():
    asserted = []
    for intent in DOMAIN.intents:
        for kind in ("direct", "vague", "hint", "camouflage", "camouflage_followup"):
            lines = getattr(intent, kind) if kind in ("direct", "vague") else family_lines(DOMAIN, intent, kind)
            asserted += [(intent.name, line) for line in lines if misdirection(_fill(line), intent, DOMAIN).asserted]
    # The duplicate family's terminal story ("a pending thing and a posted thing") is true, but the
    # lexicon reads "pending" as another tool's problem: the one known false positive (1 of 156 openers).
    assert sorted({line for _, line in asserted}) == [
        "I was at {merchant} on {day}, {amount}, the terminal froze, and now my app shows a pending thing and a posted thing for that same amount."
    ]
    for line in (*DOMAIN.customer["acknowledgements"], *DOMAIN.customer["hangups"]):
        assert misdirection(line, EXPIRE, DOMAIN) == Misdirection(False, False, False)


def _call(customer_lines, agent_lines, intent="card_about_to_expire"):
    """Alternate customer and agent moves (customer first), then the agent ends the call."""
    game = RladaGame()
    game.reset(seed=11, options={"intent": intent, "concealment": "camouflage"})
    facts = {key: str(value) for key, value in game.facts.items()}
    for said, agent in zip(customer_lines, [*agent_lines, None]):
        game.step(said.format(**facts))
        game.step(act("end_call", "Goodbye.") if agent is None else act("speak", agent))
    assert game.done
    return game, game.trajectory().reward_terms


def _customer(terms):
    return {key[len("customer/"):]: value for key, value in terms.items() if key.startswith("customer/")}


def test_a_false_claim_costs_realism_concealment_and_the_adversarial_credit():
    statement = "Thank you, I understand what you are telling me."
    game, terms = _call(["On {day} at {merchant} I was charged twice.", "Okay, thanks."], [statement])
    agent = game.returns["agent"]
    assert agent < 0  # no lookup, no domain tool: the agent lost
    # format [1, 1]; realism [0, 1] halved for the untruthful call; concealment [0, 1]; credit capped at 0.
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5 * 0.5 * 0.5, "concealment": 0.25, "inverse_agent": 0.0})
    # The same story voiced as a worry is contextual camouflage and keeps the credit.
    game, terms = _call(["On {day} at {merchant}, maybe I was charged twice?", "Okay, thanks."], [statement])
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5, "concealment": 0.5, "inverse_agent": -0.5 * game.returns["agent"]})
    assert _customer(terms)["inverse_agent"] > 0


def test_a_new_worry_each_turn_invents_problems():
    game, terms = _call(
        ["On {day} at {merchant}, maybe I was charged twice?", "I wonder if someone used my card at {merchant}."],
        ["Thank you, I understand what you are telling me."],
    )
    # The second turn of side worries scores realism 0 and concealment 0; the call is untruthful.
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5 * 0.5 * 0.5, "concealment": 0.25, "inverse_agent": 0.0})


def test_a_customer_asked_three_real_questions_must_have_stated_its_problem():
    asides = ["I was at {merchant} on {day} with a friend.", "It was {day}, I remember because {merchant} was busy.",
              "I usually shop at {merchant} on a {day} afternoon."]
    game, terms = _call([*asides, "Okay then."], list(CLARIFY))
    assert game._questions == 3
    assert _customer(terms)["inverse_agent"] == 0.0 and game.returns["agent"] < 0
    # Stating the problem in the third answer (as the scripted camouflage does) keeps the credit.
    direct = render(EXPIRE.direct[0], game.facts)
    game, terms = _call([*asides[:2], direct, "Okay then."], list(CLARIFY))
    assert _customer(terms)["inverse_agent"] == pytest.approx(-0.5 * game.returns["agent"]) and game.returns["agent"] < 0


def test_the_turn_records_what_the_reward_read():
    game, _ = _call(["On {day} at {merchant} I was charged twice.", "Okay, thanks."], ["Thank you, I understand what you are telling me."])
    first = [turn for turn in game.trajectory().turns if turn.role == "customer"][0]
    assert first.parsed["invents_problem"] is True and first.parsed["discloses"] is False


def test_the_known_limit_is_the_camouflage_customers_own_tactic():
    """One hedged side worry, then nothing about the real problem, is not in the audit: it scores what
    the scripted camouflage customer scores whenever its opener carries a side worry (the keyword
    router acts on it at once). Pinned so the documented limit stays what it says."""
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.scenarios.rlada.audit import SIDE_WORRY_ONLY

    episodes = 234
    camouflage = evaluate("RLADA-Customer-v0", "camouflage", episodes, 0, learner="customer")
    worried = [t.rewards["customer"] for t in camouflage
               if misdirection(next(x.text for x in t.turns if x.role == "customer"), DOMAIN.intent(t.profile["intent"]), DOMAIN).worried]
    side = evaluate("RLADA-Customer-v0", SIDE_WORRY_ONLY.make(), episodes, 0, learner="customer")
    side_mean = sum(t.rewards["customer"] for t in side) / episodes
    assert len(worried) > episodes // 3
    assert abs(side_mean - sum(worried) / len(worried)) < 0.15
    assert not any(t.meta.get("strict_pass") for t in side)
