"""The ``contextual`` customer: camouflage that always opens with a hedged worry about another tool's
problem beside a hint of its own (RL-ADA's emergent contextual camouflage), the strongest fair style and
the customer-side audit's baseline."""

import dataclasses
import json

import pytest

from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.rlada.agents import CLARIFY
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer, family_lines, side_worry_opener, start_memory
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.parsing import render_agent_action
from dialogue_gym.scenarios.rlada.prompts import render
from dialogue_gym.scenarios.rlada.reading import customer_turn_understood, misdirection, own_tools, split_sentences, told_problem

DOMAIN = load_domain()
FACTS = {"merchant": "Chipotle", "amount": 4.71, "day": "Sunday", "last4": "8085", "person": "Jordan", "country": "Spain",
         "atm": "Main Street", "company": "Apex Mobile", "descriptor": "SQ *BRNX 4471", "source": "savings", "target": "checking"}


def test_every_opening_is_a_truthful_side_worry_beside_the_customers_own_story():
    checked = 0
    for intent in DOMAIN.intents:
        for tool, worries in DOMAIN.customer["side_worries"].items():
            if tool in own_tools(intent, DOMAIN):
                continue
            for worry in worries:
                for hint in family_lines(DOMAIN, intent, "hint"):
                    text = render(worry, FACTS) + " " + render(hint, FACTS)
                    reading = misdirection(text, intent, DOMAIN)
                    assert customer_turn_understood(text, DOMAIN) and len(split_sentences(text)) <= 2, text
                    assert reading.worried and not reading.asserted, (intent.name, text)
                    assert told_problem([text], intent, DOMAIN), (intent.name, text)
                    checked += 1
    assert checked > 600  # 78 intents x (10-12 worries of the other tools)


def test_the_opening_is_drawn_from_the_episode_seed():
    intent = DOMAIN.intent("card_about_to_expire")
    profile = {"intent": intent.name, "facts": FACTS, "concealment": "camouflage"}
    openings = {side_worry_opener(DOMAIN, start_memory(DOMAIN, profile, seed)) for seed in range(40)}
    assert len(openings) > 3
    hint = render(family_lines(DOMAIN, intent, "hint")[0], FACTS)
    assert all(opening.endswith(" " + hint) for opening in openings)
    # never a worry about its own tool: "card" worries are this customer's own problem
    card = {render(line, FACTS) for line in DOMAIN.customer["side_worries"]["check_card_status"]}
    assert not [opening for opening in openings if any(opening.startswith(line) for line in card)]


def _asked_call(intent: str, seed: int) -> RladaGame:
    """The contextual customer against an agent that asks the three clarifying questions, then ends."""
    game = RladaGame()
    game.reset(seed=seed, options={"intent": intent, "concealment": "camouflage"})
    customer = ScriptedCustomer(DOMAIN, "camouflage", side_worry_first=True)
    memory = customer.start(game.profile, seed)
    for question in [*CLARIFY, None]:
        game.step(customer.act(game.observe("customer"), {}, memory))
        if game.done:
            break
        game.step(render_agent_action("end_call", "Goodbye.") if question is None else render_agent_action("speak", question))
    return game


@pytest.mark.parametrize("intent", [intent.name for intent in DOMAIN.intents[::7]])
def test_answers_to_questions_never_repeat_the_opening_hint(intent):
    # The family's camouflage follow-up near-repeats its hint for many families: answered as plain
    # camouflage answers, 146 of 600 calls lost that turn's format, realism and concealment. With no
    # story left to tell, the customer states its problem early; asked again after that, it repeats it.
    game = _asked_call(intent, seed=3)
    said = [turn for turn in game.trajectory().turns if turn.role == "customer"]
    assert len(said) == 4 and all(turn.parsed["understood"] and not turn.parsed["invents_problem"] for turn in said)
    direct = [render(line, game.facts).lower() for line in DOMAIN.intent(intent).direct]
    stated = next(index for index, turn in enumerate(said) if any(line.rstrip(".?") in turn.text.lower() for line in direct))
    assert stated <= 3  # camouflage's plain statement at the third question, or earlier
    assert not [turn.text for turn in said[: stated + 1] if turn.parsed["repeat"]]


def test_it_is_the_strongest_fair_customer_against_the_keyword_router():
    episodes = 78
    means = {}
    for style in ("camouflage", "contextual"):
        trajectories = evaluate("RLADA-Customer-v0", style, episodes, 0, learner="customer")
        assert all(t.meta["customer_told_problem"] for t in trajectories)
        means[style] = sum(t.rewards["customer"] for t in trajectories) / episodes
    assert means["contextual"] > means["camouflage"] + 0.2


def test_a_domain_without_side_worries_is_refused_with_the_fix():
    bare = dataclasses.replace(DOMAIN, customer={k: v for k, v in DOMAIN.customer.items() if k != "side_worries"})
    with pytest.raises(ConfigError, match=r"side_worry_first=True needs side-worry lines: add a 'side_worries' object .* customer\.json"):
        ScriptedCustomer(bare, "camouflage", side_worry_first=True)
    assert ScriptedCustomer(bare, "camouflage").level == "camouflage"


def _edit_customer(folder, change):
    path = folder / "customer.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(side_worries=["maybe"]), r"field 'side_worries' must be an object of tool -> list of lines, got list"),
        (lambda d: d["side_worries"].update(refund_money=["Maybe a refund."]), r"side_worries for unknown tool\(s\) \['refund_money'\]; tools are \["),
        (lambda d: d["side_worries"].update(dispute_charge=["Maybe {pet} charged me."]), r"field 'dispute_charge'\[0\] uses unknown placeholder\(s\) \['pet'\]"),
    ],
)
def test_side_worry_data_errors_name_the_field(data_dir, change, message):
    _edit_customer(data_dir, change)
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))


def test_side_worries_are_optional_in_a_data_folder(data_dir):
    _edit_customer(data_dir, lambda d: d.pop("side_worries"))
    assert "side_worries" not in load_domain(str(data_dir)).customer
