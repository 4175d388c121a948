"""RL-ADA's game, bank, customers and parsers pinned where mutation testing found them loose (issue 43
item 6): each test names the bug it catches; the values are worked out by hand."""

from __future__ import annotations

import json
import random

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.errors import ConfigError
from dialogue_gym.rewards.rlada import AgentWeights, CustomerWeights
from dialogue_gym.scenarios.rlada.bank import (
    Bank,
    Card,
    SubAccount,
    Transaction,
    generate_bank,
)
from dialogue_gym.scenarios.rlada.customers import (
    ScriptedCustomer,
    WithholdingCustomer,
    start_memory,
    withheld_story,
)
from dialogue_gym.scenarios.rlada.data import LEVELS, load_domain
from dialogue_gym.scenarios.rlada.game import RladaConfig, RladaGame
from dialogue_gym.scenarios.rlada.parsing import (
    parse_agent_action,
    parse_customer_output,
    render_agent_action,
)
from dialogue_gym.scenarios.rlada.prompts import render
from dialogue_gym.scenarios.rlada.reading import own_tools


def test_the_taxonomy_plays_every_intent_at_one_level_before_the_next_level():
    game = RladaGame()
    intents = game.domain.intents
    count = len(intents)
    starts = [game.evaluation_options(episode, 0)["profile"] for episode in range(count * len(LEVELS))]
    # episode e: intent e % count, level (e // count) % 3: every (intent, level) pair exactly once
    assert {(start["intent"], start["concealment"]) for start in starts} == {(i.name, level) for level in LEVELS for i in intents}
    assert [start["concealment"] for start in starts[:count]] == [LEVELS[0]] * count


def test_each_evaluation_episode_gets_its_own_bank():
    game = RladaGame()
    seeds = {game.evaluation_options(episode, 3)["profile"]["bank_seed"] for episode in range(20)}
    assert len(seeds) == 20
    assert game.evaluation_options(4, 3) == game.evaluation_options(4, 3)


def test_the_customer_is_handed_a_copy_of_its_profile():
    game = RladaGame()
    game.reset(seed=0)
    known = game.role_profile("customer")
    facts_before = dict(game.episode_profile()["facts"])
    known["facts"]["merchant"] = "somewhere else"
    assert game.episode_profile()["facts"] == facts_before and "bank_seed" not in known


# -- the simulated bank ---------------------------------------------------------------------------


def small_bank(seed: int = 0, transactions=()) -> Bank:
    return Bank(
        customer_id="ACC-1", name="Ann Lee",
        accounts=[SubAccount("CHK-1", "checking", 100.0), SubAccount("SAV-1", "savings", 50.0)],
        cards=[Card("CARD-0001", "1234")], transactions=list(transactions), limits={"daily_transfer": 5000.0}, seed=seed,
    )


def test_a_transfer_moves_money_from_its_source_to_its_target():
    bank = small_bank()
    ok, result = bank.execute("transfer_funds", {"from_account_id": "CHK-1", "to_account_id": "SAV-1", "amount": 30})
    # 100 - 30 = 70 left in checking, 50 + 30 = 80 in savings
    assert ok and result["new_balances"] == {"CHK-1": 70.0, "SAV-1": 80.0}


def test_looking_up_the_account_hands_out_a_copy_of_the_limits():
    bank = small_bank()
    ok, result = bank.execute("lookup_account", {"account_id": "ACC-1"})
    result["limits"]["daily_transfer"] = 10**9
    assert ok and bank.limits == {"daily_transfer": 5000.0}


def test_ticket_ids_come_from_the_banks_seed():
    tickets = [small_bank(seed).execute("transfer_to_human", {"reason": "x"})[1]["ticket_id"] for seed in (1, 1, 2)]
    assert tickets[0] == tickets[1] and tickets[0] != tickets[2]


def test_a_repeated_charge_is_disputed_latest_first():
    charges = [Transaction(f"TX-{n}", date, "Cafe Luna", 12.5, "card_payment", "posted", "debit") for n, date in ((1, "2024-06-01"), (2, "2024-06-09"))]
    bank = small_bank(transactions=charges)
    args = {"account_id": "ACC-1", "amount": 12.5, "reason": "charged twice"}
    assert [bank.execute("dispute_charge", args)[1].get("transaction_id") for _ in range(2)] == ["TX-2", "TX-1"]
    assert bank.execute("dispute_charge", args)[1]["code"] == "already_disputed"


# -- the scripted customer ------------------------------------------------------------------------


def test_the_customers_generator_is_seeded_with_the_episode_seed():
    domain = load_domain()
    profile = {"intent": domain.intents[0].name, "facts": {}, "concealment": "vague"}
    assert start_memory(domain, profile, 11)["rng"].random() == random.Random(11).random()


def test_a_fixed_level_customer_plays_its_level_whatever_the_profile_says():
    game = RladaGame()
    game.reset(seed=0)
    profile = {**game.episode_profile(), "concealment": "camouflage"}
    intent = game.domain.intent(profile["intent"])
    memory = start_memory(game.domain, profile, 0)
    customer = ScriptedCustomer(game.domain, level="direct")
    line = customer.act({"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "Hello, how can I help?"}]}, {}, memory)
    assert line in {render(template, profile["facts"]) for template in intent.direct}


# -- the agent's parser ---------------------------------------------------------------------------


def test_an_end_call_is_checked_for_role_reversal_like_speech():
    content = "I'm calling about my card, it was blocked. Goodbye."
    spoken = parse_agent_action(render_agent_action("speak", content)).health.role_reversal
    assert spoken and parse_agent_action(render_agent_action("end_call", content)).health.role_reversal == spoken


def test_tool_progress_pays_the_first_lookup_and_the_first_domain_tool_once_each():
    """tool_progress_bonus 0.1 for the first successful domain tool and the first lookup, whatever the
    order; turn_cost -0.05 every move."""
    env = gym.make("RLADA-Banking-v0")
    env.reset(seed=1)
    account = {"account_id": env.unwrapped.game.bank.customer_id}
    expected = [(-0.05, 0.1), (-0.10, 0.1), (-0.15, 0.2), (-0.20, 0.2), (-0.25, 0.2)]
    tools = ("get_transactions", "get_transactions", "lookup_account", "lookup_account", "get_transactions")
    for tool, (cost, progress) in zip(tools, expected):
        _, _, terminated, _, info = env.step(render_agent_action("tool_call", tool, account))
        assert not terminated and info["tool_error"] is None
        assert info["reward_terms"] == {"turn_cost": pytest.approx(cost), "tool_progress": pytest.approx(progress)}


def test_the_configs_default_weights_are_the_documented_ones():
    assert RladaConfig().agent_weights() == AgentWeights() and RladaConfig().customer_weights() == CustomerWeights()


def test_a_bank_seed_of_zero_is_a_bank_seed():
    game = RladaGame()
    game.reset(seed=0, options={"profile": {"bank_seed": 0}})
    assert game.episode_profile()["bank_seed"] == 0


def test_no_role_reversal_is_reported_before_the_customer_speaks_nor_ever_to_the_agent():
    game = RladaGame()
    game.reset(seed=0)
    assert game.info("customer")["role_reversal"] is False and game.info("agent")["role_reversal"] is False
    game.step("Thank you for calling, how can I help you today? Let me look up your account.")  # the customer speaks as the bank
    assert game.info("customer")["role_reversal"] is True and game.info("agent")["role_reversal"] is False


@pytest.mark.parametrize("bank_seed", [True, -1, "5", 2.0])
def test_a_bank_seed_must_be_a_non_negative_int(bank_seed):
    with pytest.raises(ConfigError, match="profile bank_seed must be a non-negative int"):
        RladaGame().reset(seed=0, options={"profile": {"bank_seed": bank_seed}})


def test_the_withheld_stories_of_an_intent_are_those_listing_its_family():
    domain = load_domain()
    by_family = {intent.family: intent for intent in domain.intents}
    # customer.json: 'pending' is in three stories (with duplicate, charge_amount, balance), 'fraud' in two, 'account_info' in none
    assert len(withheld_story(domain, by_family["pending"])) == 3 and len(withheld_story(domain, by_family["fraud"])) == 2
    assert withheld_story(domain, by_family["account_info"]) == ()
    assert withheld_story(domain, by_family["fraud"])[0][0].startswith("There's {merchant} for {amount} on {day}")


def test_a_withholding_customer_opens_with_a_line_of_its_story():
    game = RladaGame()
    game.reset(seed=0, options={"profile": {"intent": "balance_not_updated_after_cheque_or_cash_deposit", "concealment": "vague"}})
    profile = game.episode_profile()
    customer = WithholdingCustomer(game.domain)
    memory = customer.start(profile, 0)
    opening = customer.act({"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "Hello, how can I help?"}]}, {}, memory)
    assert opening in {render(line, profile["facts"]) for line in memory["story"]}


def test_an_escalations_wait_is_two_to_ten_minutes():
    waits = {small_bank(seed).execute("transfer_to_human", {"reason": "x"})[1]["estimated_wait_minutes"] for seed in range(60)}
    # 2 + randrange(9): 2 to 10 minutes; 60 banks draw more than one of them
    assert waits <= set(range(2, 11)) and len(waits) > 1


def test_a_bank_file_without_amounts_draws_them_from_4_50_to_480(data_dir):
    """The packaged bank.json states the default range; without it a bank draws the same amounts."""
    packaged = load_domain()
    bank_file = data_dir / "bank.json"
    data = json.loads(bank_file.read_text())
    assert data.pop("amount_range") == [4.5, 480.0]
    bank_file.write_text(json.dumps(data))
    bare = load_domain(str(data_dir))
    intent = packaged.intents[0]
    for seed in range(5):
        assert generate_bank(seed, intent, bare)[1]["amount"] == generate_bank(seed, intent, packaged)[1]["amount"]


def test_a_bank_file_without_limits_gets_the_packaged_limits(data_dir):
    bank_file = data_dir / "bank.json"
    data = json.loads(bank_file.read_text())
    packaged_limits = data.pop("limits")
    bank_file.write_text(json.dumps(data))
    bank, _ = generate_bank(0, load_domain().intents[0], load_domain(str(data_dir)))
    assert bank.limits == packaged_limits == {"daily_transfer": 5000, "top_up_max": 10000, "atm_daily": 800}


def test_json_followed_by_text_is_read_from_inside_it():
    action = parse_agent_action('{"action_type": "speak", "content": "Hi"}.')
    assert (action.format, action.action_type, action.content, action.problem) == ("json_embedded", "speak", "Hi", None)
    assert action.health.repaired[0] == "JSON read from inside other text"


def test_an_aliased_action_type_is_a_repair_and_the_canonical_one_is_not():
    aliased = parse_agent_action(json.dumps({"thinking": "", "action_type": "say", "content": "Hi", "tool_args": {}}))
    assert aliased.action_type == "speak" and aliased.health.repaired == ("action_type 'say' read as 'speak'",)
    assert not aliased.health.format_ok
    canonical = parse_agent_action(render_agent_action("speak", "Hi"))
    assert canonical.health.repaired == () and canonical.health.format_ok


def test_a_json_value_that_is_no_object_is_out_of_format():
    action = parse_agent_action("[1, 2]")
    assert action.problem == "expected a JSON object, got list" and action.health.format_ok is False


def customer_move(text: str):
    domain = load_domain()
    return parse_customer_output(text, domain.hangup_markers, domain.role_reversal, domain.meta_talk)


def test_a_customer_line_is_repaired_only_of_the_label_and_quotes_it_has():
    assert customer_move('Customer: "My card was charged twice."').health.repaired == ("speaker label removed", "quotes removed")
    assert customer_move("Customer: My card was charged twice.").health.repaired == ("speaker label removed",)
    assert customer_move('"My card was charged twice."').health.repaired == ("quotes removed",)
    assert customer_move("My card was charged twice.").health.repaired == ()


def test_a_side_worry_beside_the_problem_told_after_a_lookup_is_camouflage():
    """The customer voices another tool's worry, the agent looks the account up (no action yet), the
    customer tells its own problem, then the agent acts. What the agent heard before it acted told
    the problem, so the worry stood beside the story: both turns realistic (realism 0.5 x mean 1.0 = 0.5)
    and the call earns concealment credit. Counting the lookup as acting would cut the story at the
    worry alone: the worry turn would score no realism and the call no concealment."""
    game = RladaGame()
    game.reset(seed=0)
    profile = game.episode_profile()
    intent = game.domain.intent(profile["intent"])
    worries = game.domain.customer["side_worries"]
    other = next(tool for tool in sorted(worries) if worries[tool] and tool not in own_tools(intent, game.domain))
    account = {"account_id": game.bank.customer_id}
    game.step(render(worries[other][0], profile["facts"]))
    game.step(render_agent_action("tool_call", "lookup_account", account))
    game.step(render_agent_action("speak", "I see. What happened exactly?"))
    game.step(render(intent.direct[0], profile["facts"]))
    game.step(render_agent_action("tool_call", game.privileged()["target_tool"], {"reason": "as asked", "department": "cards"}))
    game.step(render_agent_action("end_call", "Your request is with our cards team. Goodbye."))
    terms = game.trajectory().reward_terms
    assert terms["customer/realism"] == 0.5 and terms["customer/concealment"] > 0
