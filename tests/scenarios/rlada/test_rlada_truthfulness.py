"""A realistic customer tells the truth about its problem and states it when asked: a turn that
asserts a problem another tool serves, a second turn of side worries, or a side worry in a story
that never told the customer's own problem before the agent acted, invents problems (no realism for
the turn, the call's realism halved, no concealment, no adversarial credit), and a customer asked as
many real questions as the camouflage customer needs that still never stated its problem withheld it."""

import pytest

from dialogue_gym.scenarios.rlada import reading
from dialogue_gym.scenarios.rlada.agents import CLARIFY
from dialogue_gym.scenarios.rlada.customers import family_lines
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act
from dialogue_gym.scenarios.rlada.prompts import render
from dialogue_gym.scenarios.rlada.reading import MAX_SIDE_PROBLEMS, Misdirection, misdirection, own_tools, problem_signs, told_problem

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


STATEMENT = "Thank you, I understand what you are telling me."
WORRY_BESIDE_MY_STORY = "On {day} at {merchant}, maybe I was charged twice, and the date on my card is coming up."
"""A side worry (charged twice: dispute_charge) beside a sign of its own problem (card_delivery: the date on its card)."""


def test_a_false_claim_costs_realism_concealment_and_the_adversarial_credit():
    game, terms = _call(["On {day} at {merchant} I was charged twice.", "Okay, thanks."], [STATEMENT])
    agent = game.returns["agent"]
    assert agent < 0  # no lookup, no domain tool: the agent lost
    # format [1, 1]; realism [0, 1] halved for the untruthful call; no concealment; credit capped at 0.
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5 * 0.5 * 0.5, "concealment": 0.0, "inverse_agent": 0.0})
    # The same story voiced as a worry beside its own story is contextual camouflage and keeps the credit.
    game, terms = _call([WORRY_BESIDE_MY_STORY, "Okay, thanks."], [STATEMENT])
    assert game.trajectory().meta["customer_told_problem"] is True
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5, "concealment": 0.5, "inverse_agent": -0.5 * game.returns["agent"]})
    assert _customer(terms)["inverse_agent"] > 0


def test_a_side_worry_alone_is_a_problem_the_customer_does_not_have():
    # One hedged side worry, never the real problem: the worry was the whole story. Its turn scores
    # realism 0 (realism [0, 1], halved), the call no concealment and no credit for the agent's loss.
    game, terms = _call(["On {day} at {merchant}, maybe I was charged twice?", "Okay, thanks."], [STATEMENT])
    assert game.returns["agent"] < 0 and game.trajectory().meta["customer_told_problem"] is False
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5 * 0.5 * 0.5, "concealment": 0.0, "inverse_agent": 0.0})
    first = [turn for turn in game.trajectory().turns if turn.role == "customer"][0]
    assert first.parsed["side_worry"] is True and first.parsed["invents_problem"] is False


def test_a_new_worry_each_turn_invents_problems():
    game, terms = _call([WORRY_BESIDE_MY_STORY, "I wonder if someone used my card at {merchant}."], [STATEMENT])
    # The second turn of side worries scores realism 0; the call is untruthful: realism [1, 0] halved, no concealment.
    assert _customer(terms) == pytest.approx({"format": 0.5, "realism": 0.5 * 0.5 * 0.5, "concealment": 0.0, "inverse_agent": 0.0})


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
    assert first.parsed["invents_problem"] is True and first.parsed["discloses"] is False and first.parsed["side_worry"] is False


def test_a_side_worry_alone_is_bounded_and_the_camouflage_customers_worries_keep_their_credit():
    """One hedged side worry, then nothing about the real problem, scored 1.473 against the camouflage
    customer's 1.017 (the keyword router acts on the worry at once, as on camouflage's own side-worry
    openers, 1.424). The camouflage openers bury the customer's problem beside the worry; the attacker's
    story has none, so it is now below the audit's bound, and camouflage's worried calls are untouched."""
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.scenarios.rlada.audit import CUSTOMER_MARGIN, SIDE_WORRY_ONLY

    episodes = 234
    camouflage = evaluate("RLADA-Customer-v0", "camouflage", episodes, 0, learner="customer")
    worried = [t for t in camouflage if any(turn.parsed.get("side_worry") for turn in t.turns if turn.role == "customer")]
    assert len(worried) > episodes // 3 and all(t.meta["customer_told_problem"] for t in camouflage)
    side = evaluate("RLADA-Customer-v0", SIDE_WORRY_ONLY.make(), episodes, 0, learner="customer")
    side_mean = sum(t.rewards["customer"] for t in side) / episodes
    camouflage_mean = sum(t.rewards["customer"] for t in camouflage) / episodes
    assert side_mean < camouflage_mean - CUSTOMER_MARGIN
    assert sum(t.rewards["customer"] for t in worried) / len(worried) > camouflage_mean > side_mean + CUSTOMER_MARGIN
    assert not any(t.meta.get("strict_pass") for t in side)


def test_the_story_ends_when_the_agent_acts():
    """What the customer says once the agent has made its routing decision (a domain tool call that passed
    schema validation, even one the bank refused) tells the agent nothing it could act on."""
    game = RladaGame()
    game.reset(seed=11, options={"intent": "card_about_to_expire", "concealment": "camouflage"})
    facts = {key: str(value) for key, value in game.facts.items()}
    account = game.bank.customer_id
    game.step("On {day} at {merchant}, maybe I was charged twice?".format(**facts))
    game.step(act("tool_call", "lookup_account", {"account_id": account}))
    game.step(act("tool_call", "dispute_charge", {"account_id": account, "amount": 9999.0, "reason": "duplicate"}))
    assert game.trajectory().turns[-1].parsed["tool_outcome"]["ok"] is False  # the bank refused it: no posted charge of that amount
    game.step(act("speak", STATEMENT))
    game.step(render(EXPIRE.direct[0], game.facts))  # the truth, after the agent acted
    game.step(act("end_call", "Goodbye."))
    assert game.trajectory().meta["customer_told_problem"] is False
    # realism [0, 1] halved; the direct line's cue ("expires") would have cost concealment, but there is none to keep.
    assert _customer(game.trajectory().reward_terms) == pytest.approx({"format": 0.5, "realism": 0.125, "concealment": 0.0, "inverse_agent": 0.0})


@pytest.mark.parametrize(
    "story, told",
    [
        (["My card ending 1234 expires soon."], True),  # its own tool's cue
        (["The date on my card is coming up and I'm a bit worried."], True),  # a sign of its family's problem
        (["I was at Chipotle on Sunday.", "I'm waiting on the post from you."], True),  # told in a later turn
        (["On Sunday at Chipotle, maybe I was charged twice?"], False),  # a side worry alone
        (["It has been sitting there since Sunday."], False),  # a sign of another family's problem (pending)
        # Every tool's problem voiced at once: its own cue is there, beside four other tools.
        (["Maybe my card was declined, or I was charged twice, or a payment is still pending.",
          "I might need to check my balance or move money between my accounts."], False),
        # Its own sign beside signs of three other families' problems: a recital.
        (["The date on my card worries me, it has been sitting there, the app changed its mind and I can't place it."], False),
        # Two side worries beside its own story are camouflage's limit, not a recital.
        (["The date on my card worries me, maybe I was charged twice or a payment is still pending."], True),
        ([], False),
    ],
)
def test_told_problem_by_hand(story, told):
    assert told_problem(story, EXPIRE, DOMAIN) is told


def test_recital_limit_is_two_other_problems():
    assert MAX_SIDE_PROBLEMS == 2


def test_every_packaged_line_tells_its_own_problem_and_no_audit_worry_tells_another():
    """The signs were written for the packaged phrasing: every line a scripted customer says of its own
    problem (direct, vague, hint, follow-up, camouflage opener) tells it, by a cue of its own tools or a
    sign of its family; the audit's grounded worries about another tool never carry the customer's family's
    sign, and its grounded asides carry no family's."""
    from dialogue_gym.scenarios.rlada.audit import ASIDES, WORRIES

    for intent in DOMAIN.intents:
        lines = [*intent.direct, *intent.vague, *(line for kind in ("hint", "camouflage_followup", "camouflage") for line in family_lines(DOMAIN, intent, kind))]
        silent = [line for line in lines if not told_problem([_fill(line)], intent, DOMAIN)]
        assert not silent, (intent.name, silent)
        for tool, worries in WORRIES.items():
            if tool not in own_tools(intent, DOMAIN):
                assert not [line for line in worries if intent.family in problem_signs(_fill("I'm not sure, but I think " + line), DOMAIN)], intent.name
    assert not [line for line in ASIDES if problem_signs(_fill(line), DOMAIN)]


def test_a_side_worry_beside_its_own_story_every_call_is_the_contextual_customer():
    """A hedged side worry beside a hint of the customer's own problem tells its problem (buried) and is
    contextual camouflage, so it keeps its credit: fixed for every call it out-earns the scripted
    camouflage customer, which opens with a side worry in about half its calls, because the keyword
    router acts on the first cue without asking. That is the strongest fair strategy, not a lie, so the
    scripted ``contextual`` customer plays it (with camouflage's answers instead of dodges) and the audit
    holds blind customers to it: the fixed tactic stays within the blind bound of ``contextual``."""
    from dialogue_gym.audit import BLIND_MARGIN, TextPolicy
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.scenarios.rlada import audit

    episodes = 234

    def mean_reward(policy):
        trajectories = evaluate("RLADA-Customer-v0", policy, episodes, 0, learner="customer")
        return sum(t.rewards["customer"] for t in trajectories) / episodes, trajectories

    camouflage, _ = mean_reward("camouflage")
    contextual, played = mean_reward("contextual")
    tactic, fixed = mean_reward(TextPolicy(audit._dodge(audit._worry_beside_hint), str))
    assert all(t.meta["customer_told_problem"] for t in (*fixed, *played))
    assert tactic > camouflage + audit.CUSTOMER_MARGIN  # what the camouflage-relative audit missed
    assert tactic <= contextual + BLIND_MARGIN


def test_the_story_reader_is_bounded_on_hostile_text():
    import time

    hostile = "$1.11 only paid there's more " * 40_000  # a megabyte of sign fragments and repeated amounts
    started = time.process_time()
    assert problem_signs(hostile, DOMAIN) <= frozenset(DOMAIN.signs)
    assert told_problem([hostile] * 3, EXPIRE, DOMAIN) is False
    assert time.process_time() - started < 2.0
