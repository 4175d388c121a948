"""Behaviours of RLADA's agents, planner, cues, reading, policies and audit policies that the older
tests left open (found by mutation testing, issue 43 item 6). Expected values are worked out by hand
from the data files and rules, not copied from the code's output."""

import json
import random

import pytest

from dialogue_gym.scenarios.rlada import audit as rlada_audit
from dialogue_gym.scenarios.rlada.agents import (
    CLARIFY,
    AlwaysEscalateAgent,
    KeywordRouterAgent,
    OracleAgent,
    PhraseMatchAgent,
    RandomAgent,
    clarify,
    explains,
    explanation,
    fills,
    phrasebook,
    template_parts,
    tool_args,
)
from dialogue_gym.scenarios.rlada.bank import generate_bank
from dialogue_gym.scenarios.rlada.cues import (
    active_cues,
    concealment,
    fact_strings,
    grounded,
    names_intent,
)
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer, WithholdingCustomer
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.planner import (
    GUESSED_BANK_SEED,
    STYLES,
    PlannerCustomer,
)
from dialogue_gym.scenarios.rlada.policies import make_policy
from dialogue_gym.scenarios.rlada.prompts import customer_system_prompt
from dialogue_gym.scenarios.rlada.reading import (
    own_tools,
    quoted_values,
    read_agent_turn,
    spoken_claims,
)

CANNED = {"name": "canned", "replies": ["Hi."]}


# -- make_policy: every name builds its own policy --------------------------------------------------------
def test_each_agent_name_builds_its_own_agent():
    domain = load_domain()
    built = {name: type(make_policy("agent", name, domain)) for name in ("keyword", "always_escalate", "random", "oracle", "phrase_match")}
    assert built == {
        "keyword": KeywordRouterAgent, "always_escalate": AlwaysEscalateAgent, "random": RandomAgent,
        "oracle": OracleAgent, "phrase_match": PhraseMatchAgent,
    }


def test_each_customer_name_builds_its_own_style():
    domain = load_domain()
    styles = {}
    for name in ("scripted", "direct", "vague", "camouflage", "contextual"):
        policy = make_policy("customer", name, domain)
        assert type(policy) is ScriptedCustomer
        styles[name] = (policy.level, policy.side_worry_first)
    # scripted plays the profile's level (None); contextual is camouflage that opens with a side worry.
    assert styles == {
        "scripted": (None, False), "direct": ("direct", False), "vague": ("vague", False),
        "camouflage": ("camouflage", False), "contextual": ("camouflage", True),
    }
    assert type(make_policy("customer", "withholding", domain)) is WithholdingCustomer
    assert type(make_policy("customer", "planner", domain)) is PlannerCustomer


def test_an_llm_customer_stops_at_a_blank_line_and_an_llm_agent_has_no_stop():
    domain = load_domain()
    assert make_policy("customer", "llm", domain, backend=CANNED).sampling.stop == ("\n\n",)
    assert make_policy("agent", "llm", domain, backend=CANNED).sampling.stop == ()
    assert make_policy("customer", "llm", domain, backend=CANNED, sampling={"stop": ["."]}).sampling.stop == (".",)


# -- agents: arguments read from the call, explanations, the fair ceiling's template matching -------------


LOOKUP = {
    "cards": [{"card_id": "CARD-A", "last4": "1111", "virtual": False}, {"card_id": "CARD-B", "last4": "2222", "virtual": False}],
    "accounts": [{"type": "checking", "account_id": "CHK-1"}, {"type": "savings", "account_id": "SAV-1"}],
}


def _call(said):
    return {"messages": [{"role": "system", "content": "Caller account ACC-123456."}, {"role": "user", "content": said}]}


def test_the_card_checked_is_the_one_whose_digits_the_customer_said():
    assert tool_args("check_card_status", _call("My card ending 2222 does not work."), LOOKUP) == {"card_id": "CARD-B"}
    assert tool_args("check_card_status", _call("My card does not work."), LOOKUP) == {"card_id": "CARD-A"}


def test_a_transfer_goes_from_savings_only_when_the_customer_says_so():
    from_savings = tool_args("transfer_funds", _call("Please move $50 from my savings to checking."), LOOKUP)
    assert from_savings == {"from_account_id": "SAV-1", "to_account_id": "CHK-1", "amount": 50.0}
    to_savings = tool_args("transfer_funds", _call("Please move $50 to savings."), LOOKUP)
    assert to_savings == {"from_account_id": "CHK-1", "to_account_id": "SAV-1", "amount": 50.0}


def test_clarifying_questions_are_counted_and_rotate():
    memory = {}
    asked = [json.loads(clarify(memory))["content"] for _ in range(4)]
    assert asked == [CLARIFY[0], CLARIFY[1], CLARIFY[2], CLARIFY[0]] and memory["asked"] == 4


def test_the_transactions_explanation_names_the_first_row_that_is_not_posted():
    rows = [
        {"merchant": "Cafe", "amount": 4.5, "date": "2024-01-02", "status": "posted"},
        {"merchant": "Shop", "amount": 20.0, "date": "2024-01-03", "status": "pending"},
    ]
    said = explanation({"ok": True, "tool": "get_transactions", "result": {"transactions": rows}})
    assert said == "I can see the Shop transaction of $20.00 from 2024-01-03, and its status is pending."


def test_template_pieces_may_not_overlap_in_the_text():
    parts = template_parts("{a} x {b} x {c}")
    assert fills("1 x y x 2", parts) is True
    # " x " at 1 and at 3 share the middle "x": the middle slot would be empty.
    assert fills("1 x x 2", parts) is False


# -- cues -------------------------------------------------------------------------------------------------


def test_active_cues_index_the_domains_cue_names():
    domain = load_domain()
    assert [domain.cue_names[i] for i in active_cues("Is that payment still pending?", domain)] == ["get_transactions:\\bpending\\b"]


def test_concealment_counts_only_the_cues_of_the_intents_own_tool():
    domain = load_domain()
    balance = domain.intent("check_account_balance")  # tool lookup_account
    assert concealment("I was charged twice, it doubled.", balance, domain) == 1.0  # two dispute cues, none of its own
    assert concealment("I want to check my balance.", balance, domain) == 0.5


def test_naming_the_intents_label_is_naming_the_intent():
    domain = load_domain()
    balance = domain.intent("check_account_balance")
    assert names_intent("Can you do check_account_balance for me?", balance, domain.tool_names) is True
    assert names_intent("How are you today?", balance, domain.tool_names) is False


def test_the_card_digits_ground_a_turn():
    assert grounded("It is the card ending 4821.", {"last4": "4821"}) is True
    assert grounded("It is the card ending 1234.", {"last4": "4821"}) is False


# -- reading ----------------------------------------------------------------------------------------------


def test_a_negation_just_before_the_claim_cancels_it_and_one_at_the_sentence_start_does_not():
    domain = load_domain()
    assert spoken_claims("I have not refunded the charge.", domain) == ()
    (claim,) = spoken_claims("No, I have refunded the charge.", domain)
    assert (claim.name, claim.mode) == ("refund", "fact")


def test_the_framing_nearest_the_claim_decides():
    # "I'll check" is a promise, but "I can refund" right before the claim is an offer: no claim.
    assert spoken_claims("I'll check and I can refund the charge.", load_domain()) == ()


def test_an_amount_in_dollars_is_not_counted_again_as_a_plain_number():
    values = quoted_values("I moved 1250 dollars, ticket 48213.")
    assert (values.amounts, values.numbers) == ((1250.0,), (48213.0,))


def test_a_question_about_what_the_customer_said_is_on_topic_and_about_what_the_agent_said_is_not():
    domain = load_domain()
    story = "I bought a birthday gift for my grandmother at a small shop."
    question = "Was the birthday gift for your grandmother bought online?"
    assert read_agent_turn(question, [story], [], domain).kind == "question"
    assert read_agent_turn(question, [], [story], domain).kind == "off_topic"


def test_an_intents_own_tool_is_among_its_own_tools_even_when_its_lines_carry_no_cue_of_it():
    domain = load_domain()
    # card_linking's direct, vague, hint and follow-up lines carry no cue of its tool (checked by hand).
    linking = domain.intent("card_linking")
    assert linking.tool in own_tools(linking, domain)
    assert all(intent.tool in own_tools(intent, domain) for intent in domain.intents)


# -- the planner customer (the customer audit's fair ceiling) ----------------------------------------------


class _Said:
    """A style that says one line and keeps no memory."""

    def start(self, profile, seed):
        return {}

    def act(self, observation, info, memory):
        return "Hello."


class _ThreeStepCall:
    """A rehearsal call that pays 0.5, 0.25 and 1.0 and ends on its third step; records its resets."""

    def __init__(self):
        self.resets, self.steps = [], 0

    def reset(self, seed=None, options=None):
        self.resets.append((seed, options))
        self.steps = 0
        return {"messages": []}, {}

    def step(self, action):
        self.steps += 1
        return {"messages": []}, (0.5, 0.25, 1.0)[self.steps - 1], self.steps == 3, False, {}


def test_a_rehearsal_scores_the_whole_call_on_a_bank_of_the_guessed_seed():
    planner = PlannerCustomer(load_domain())
    planner._rehearsal = call = _ThreeStepCall()
    planner.style = lambda name: _Said()
    rewards = planner.rehearse({"intent": "card_linking"}, 7)
    assert rewards == {name: 1.75 for name in STYLES}
    assert [seed for seed, _ in call.resets] == [7] * len(STYLES)
    assert all(options["profile"] == {"intent": "card_linking", "bank_seed": GUESSED_BANK_SEED} for _, options in call.resets)


def test_the_planner_plays_the_best_rehearsed_style_and_the_earlier_one_on_a_tie():
    planner = PlannerCustomer(load_domain())
    planner.style = lambda name: _Said()
    for rehearsed, chosen in (
        ({name: 1.0 for name in STYLES}, "direct"),
        ({"direct": 0.0, "vague": 2.0, "camouflage": 2.0, "contextual": 1.0}, "vague"),
        ({"direct": 0.0, "vague": 1.0, "camouflage": 0.5, "contextual": 3.0}, "contextual"),
    ):
        planner.rehearse = lambda profile, seed, rehearsed=rehearsed: rehearsed
        assert planner.start({}, 0)["style"] == chosen


# -- the audit's customer and agent policies --------------------------------------------------------------


def test_fresh_worries_go_round_the_other_tools_then_take_each_ones_next_line():
    observation = {"intent": 0, "messages": []}  # intents[0] is check_account_balance: tool lookup_account
    others = rlada_audit._other_tools(observation)
    assert others == [tool for tool in rlada_audit.WORRIES if tool != "lookup_account"]
    facts = rlada_audit._facts(observation)  # no prompt: the default facts
    rng = random.Random(0)
    said = [rlada_audit._fresh_worry(observation, turn, rng) for turn in range(1, len(others) + 2)]
    assert said[: len(others)] == [rlada_audit.WORRIES[tool][0].format(**facts) for tool in others]
    assert said[len(others)] == rlada_audit.WORRIES[others[0]][1].format(**facts)


def test_a_customers_own_tool_is_not_among_its_other_tools():
    for position, intent in enumerate(rlada_audit.DOMAIN.intents[:40]):
        assert intent.tool not in rlada_audit._other_tools({"intent": position})


def test_questions_then_route_escalates_when_the_reply_carries_no_cue():
    policy = rlada_audit.QuestionsThenRoute(("?",))
    memory = {}
    call = {"messages": [{"role": "system", "content": "Caller account ACC-123456."}, {"role": "user", "content": "Hello there."}]}
    assert json.loads(policy.act(call, {}, memory))["content"] == "?"
    policy.act({**call, "messages": [*call["messages"], {"role": "assistant", "content": "?"}, {"role": "user", "content": "Okay, sure."}]}, {}, memory)
    assert memory["route"] == "transfer_to_human"


# -- the customer's prompt ------------------------------------------------------------------------------------


def test_the_customer_prompt_fills_its_problem_and_lists_the_facts_the_audit_reads_back():
    domain = load_domain()
    intent = domain.intent("receiving_money")  # its direct line: "{person} wants to send me money, ..."
    bank, facts = generate_bank(3, intent, domain)
    prompt = customer_system_prompt(domain, bank, intent, facts, "direct")
    shown = fact_strings(facts)
    assert f"problem (keep it hidden, never name it in these words): {shown['person']} wants to send me money" in prompt
    assert "{" not in prompt.split("Example of a turn")[0]
    read = rlada_audit._facts({"messages": [{"role": "system", "content": prompt}]})
    assert read == {key: shown[key] for key in ("merchant", "amount", "day", "last4")}


def test_saying_the_intents_label_in_words_is_naming_the_intent():
    domain = load_domain()
    balance = domain.intent("check_account_balance")
    assert balance.phrase == "check account balance"
    assert names_intent("I need to check account balance, please.", balance, domain.tool_names) is True


def test_the_routed_tool_is_called_even_when_the_lookup_gave_no_result():
    from dialogue_gym.scenarios.rlada.agents import procedure_action

    said = "I was charged twice $20 at the cafe."
    expected = {"account_id": "ACC-123456", "amount": 20.0, "reason": "duplicate"}
    failed = json.dumps({"ok": False, "tool": "lookup_account", "error": {"message": "unknown account"}})
    for last in ([], [{"role": "tool", "content": failed}]):  # no tool message at all, or a failed lookup
        memory = {"stage": "domain"}
        action = json.loads(procedure_action("dispute_charge", {"messages": [*_call(said)["messages"], *last]}, memory))
        assert (action["action_type"], action["content"], action["tool_args"]) == ("tool_call", "dispute_charge", expected)
        assert memory == {"stage": "explain", "lookup": None}


# -- the fair ceiling's phrase matching --------------------------------------------------------------------

LINKING = "i found my old card and want to link it back to my account in the app."  # card_linking's direct line
OTHER_WORRY = "i wonder if the cafe charged me twice on monday."  # a dispute_charge side worry, filled


def test_a_turn_is_explained_by_a_side_worry_about_another_tool_followed_by_an_own_line_only():
    book = phrasebook(load_domain())
    assert explains(book, "card_linking", LINKING) is True
    assert explains(book, "card_linking", f"{OTHER_WORRY} {LINKING}") is True
    assert explains(book, "card_linking", f"{OTHER_WORRY} hello there.") is False  # worry, then no own line
    assert explains(book, "card_linking", f"hello there. {LINKING}") is False  # no worry before the own line


def test_phrase_match_sets_acknowledgements_aside_when_matching_the_customers_turns():
    agent = PhraseMatchAgent(load_domain())
    user = [LINKING.capitalize(), "Okay, thanks."]  # the direct line, then a generic acknowledgement
    observation = {"messages": [{"role": "system", "content": "Caller account ACC-123456."}]}
    for line in user:
        observation["messages"] += [{"role": "user", "content": line}, {"role": "assistant", "content": "Okay."}]
    assert agent.candidates(observation) == ["card_linking"]


def test_the_domains_vocabulary_holds_words_not_numbers_decimals_included(tmp_path):
    import shutil

    from dialogue_gym.scenarios.rlada.data import DATA_DIR
    from dialogue_gym.scenarios.rlada.reading import vocabulary

    # A customer line holding a thousands-separated amount and a decimal: "1,250" and "4.5" are numbers,
    # not words the reader should know (tokens() keeps each as one token starting with a digit).
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    customer = json.loads((data / "customer.json").read_text())
    customer["acknowledgements"].append("Thanks, so 1,250 dollars at 4.5 percent, got it.")
    (data / "customer.json").write_text(json.dumps(customer))
    domain = load_domain(data)
    assert {"thanks", "dollars", "percent"} <= vocabulary(domain)
    assert [word for word in vocabulary(domain) if word[:1].isdigit()] == []


def test_an_amount_said_without_the_dollar_sign_or_trailing_zeros_grounds_a_turn():
    # $42.80 said as "42.8", $42.00 as "42"; a turn without the amount is not grounded by it.
    assert grounded("It was 42.8 at the shop.", {"amount": 42.80}) is True
    assert grounded("It was 42 at the shop.", {"amount": 42.0}) is True
    assert grounded("No idea what it was.", {"amount": 42.80}) is False


def test_the_asserted_claim_is_the_first_worry_line_the_reader_takes_as_an_assertion():
    observation = {"intent": 0, "messages": []}  # no prompt: the default facts (Monday, the shop, card 0000)
    # The first check_card_status worry is understood and asserted (no hedge); the policy takes it.
    assert rlada_audit._asserted_claim(observation) == "On Monday at the shop my card was declined at the till."


def test_a_keyword_router_with_its_explanation_replaced_still_looks_up_and_routes_first():
    policy = rlada_audit.KeywordWith(explain="Ok, all done.")
    memory = {}
    action = json.loads(policy.act(_call("I was charged twice for $20 at the cafe on Monday."), {}, memory))
    assert (action["action_type"], action["content"]) == ("tool_call", "lookup_account")
    assert memory["route"] == "dispute_charge"


@pytest.mark.parametrize("value", ["2", None, 0, True])
def test_reveal_after_must_be_an_int_of_at_least_one(tmp_path, value):
    import shutil

    from dialogue_gym.errors import ScenarioError
    from dialogue_gym.scenarios.rlada.data import DATA_DIR

    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    customer = json.loads((data / "customer.json").read_text())
    customer["reveal_after"]["vague"] = value
    (data / "customer.json").write_text(json.dumps(customer))
    with pytest.raises(ScenarioError, match=r"reveal_after\.vague must be an int >= 1"):
        load_domain(data)


def test_reveal_after_of_one_loads(tmp_path):
    import shutil

    from dialogue_gym.scenarios.rlada.data import DATA_DIR

    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    customer = json.loads((data / "customer.json").read_text())
    customer["reveal_after"]["vague"] = 1
    (data / "customer.json").write_text(json.dumps(customer))
    assert load_domain(data).customer["reveal_after"]["vague"] == 1


# -- the audit's keyword-router variants and its asserted claim ---------------------------------------------


def _agent_turns(agent):
    from dialogue_gym.evaluation import evaluate

    (trajectory,) = evaluate("RLADA-Banking-v0", agent, 1, seed=0, learner="agent")
    return [json.loads(turn.raw) for turn in trajectory.turns_of("agent")]


def test_the_keyword_router_with_an_explanation_of_its_own_says_it_only_in_place_of_the_explanation():
    router = _agent_turns(KeywordRouterAgent(load_domain()))
    assert _agent_turns(rlada_audit.KeywordWith()) == router  # nothing replaced: the router itself
    replaced = _agent_turns(rlada_audit.KeywordWith(explain="Ok, all done."))
    # the router's turn after its routed tool call (here transfer_to_human) is the explanation
    routed = max(i for i, turn in enumerate(router) if turn["action_type"] == "tool_call")
    assert [i for i, (a, b) in enumerate(zip(router, replaced)) if a != b] == [routed + 1] and len(replaced) == len(router)
    assert (replaced[routed + 1]["action_type"], replaced[routed + 1]["content"]) == ("speak", "Ok, all done.")


def _intent(name):
    return next(i for i, intent in enumerate(load_domain().intents) if intent.name == name)


def test_the_asserted_claim_is_the_first_unhedged_worry_of_the_first_other_tool(monkeypatch):
    # No prompt: the facts default to the shop, $20.00, Monday, card 0000.
    # activate_my_card's tool is check_card_status, so the first other tool is dispute_charge, whose
    # first worry is hedged ("I think ..."): the claim is its second.
    assert rlada_audit._asserted_claim({"intent": _intent("activate_my_card")}) == "There's an extra fee next to the $20.00 from the shop on Monday."
    # check_account_balance's tool is lookup_account: check_card_status comes first, its first worry a plain assertion
    assert rlada_audit._asserted_claim({"intent": _intent("check_account_balance")}) == "On Monday at the shop my card was declined at the till."
    # when no worry reads as an assertion, the first one is said anyway
    monkeypatch.setattr(rlada_audit, "misdirection", lambda *args: type("Reading", (), {"asserted": False})())
    assert rlada_audit._asserted_claim({"intent": _intent("activate_my_card")}) == "I think the shop charged me twice for the $20.00 on Monday."
