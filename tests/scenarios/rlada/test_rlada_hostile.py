"""Hostile model output and hostile numbers in RL-ADA: every parser is total and bounded, tools and
data refuse non-finite and sub-cent amounts, and trajectories stay strict JSON."""

import json
import math
import random
import time

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.envs import rlada_banking_v0
from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS
from dialogue_gym.scenarios.rlada.agents import tool_args
from dialogue_gym.scenarios.rlada.bank import generate_bank
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaConfig, RladaGame
from dialogue_gym.scenarios.rlada.judge import LLMJudge, parse_judge_score
from dialogue_gym.scenarios.rlada.parsing import (
    parse_agent_action,
    parse_customer_output,
)
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act
from dialogue_gym.scenarios.rlada.tools import call_tool

DOMAIN = load_domain()
TOOLS = {tool.name: tool for tool in DOMAIN.tools}
NESTED = "[" * 1000 + "]" * 1000
HUGE = "9" * 5000
LOOKUP = '{"action_type": "tool_call", "tool": "lookup_account", "tool_args": {"account_id": "ACC-000001"}}'


def transfer(amount_literal: str) -> str:
    return (
        '{"action_type": "tool_call", "tool": "transfer_funds", "tool_args": {"from_account_id": "CHK-000001", '
        f'"to_account_id": "SAV-000001", "amount": {amount_literal}}}}}'
    )


HOSTILE_AGENT_ACTIONS = (
    NESTED,
    '{"action_type": "speak", "content": ' + NESTED + "}",
    '{"action_type": "speak", "content": "hi", "thinking": ' + HUGE + "}",
    transfer(HUGE),
    transfer("NaN"),
    transfer("Infinity"),
    transfer("-Infinity"),
    transfer("1e999"),
    transfer('"abc"'),
    transfer("[1]"),
    transfer("true"),
    transfer("0.001"),
    '{"action_type": "tool_call", "tool": "lookup_account", "arguments": ["ACC-000001"]}',
    '{"action_type": "tool_call", "tool": 7, "tool_args": {}}',
    '{"action_type": "tool_call", "tool": ["transfer_funds"], "content": 3}',
    '{"action_type": true, "content": null}',
    '{"action_type": "speak", "content": "\\u0000\\u001b[2J\\ud800 hello"}',
    '```json\n{"action_type": "speak", "content": "fenced"}\n```',
    "```" + " " * 19_000 + "x",
    "\x00\x1b[2J\ud800{",
    "",
)


def hostile_customer_speech() -> list[str]:
    long_units = ("rate ", "move ", "card ", "put ", "$1", "paid ", "only paid ", "[", "<a", "moved ")
    return [*(unit * (MAX_ACTION_CHARS // len(unit)) for unit in long_units), NESTED, HUGE, "NaN", "\x00\ud800", "", "[hang up]" * 3000]


def strict_json(trajectory) -> str:
    return json.dumps(trajectory.to_dict(), allow_nan=False)


@pytest.mark.parametrize("text", HOSTILE_AGENT_ACTIONS, ids=range(len(HOSTILE_AGENT_ACTIONS)))
def test_agent_parser_flags_hostile_output_and_never_raises(text):
    action = parse_agent_action(text)
    assert action.action_type in (None, "speak", "tool_call", "end_call")
    json.dumps(action.parsed(), allow_nan=False)


def test_deep_nesting_and_huge_numbers_are_flagged_with_the_reason():
    assert "MAX_JSON_DEPTH" in parse_agent_action(NESTED).problem
    assert "digits" in parse_agent_action(transfer(HUGE)).problem
    assert "non-finite" in parse_agent_action(transfer("NaN")).problem
    assert "not finite" in parse_agent_action(transfer("1e999")).problem
    long = parse_agent_action("x" * (MAX_ACTION_CHARS + 1))
    assert long.action_type is None and f"exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}" in long.problem
    assert parse_agent_action('```json\n{"action_type": "speak", "content": "Hi"}\n```').format == "json_fenced"


@pytest.mark.parametrize("env_id", ["RLADA-Banking-v0", "RLADA-Customer-v0"])
def test_hostile_actions_through_the_envs_are_flagged_with_finite_rewards_and_strict_json(env_id):
    env = gym.make(env_id)
    actions = [*HOSTILE_AGENT_ACTIONS, *hostile_customer_speech(), LOOKUP]
    random.Random(0).shuffle(actions)
    env.reset(seed=0)
    for index, action in enumerate(actions):
        _, reward, terminated, truncated, info = env.step(action)
        assert math.isfinite(reward) and all(math.isfinite(v) for v in info["reward_terms"].values())
        if terminated or truncated:
            strict_json(env.unwrapped.trajectory())
            env.reset(seed=index)
    strict_json(env.unwrapped.trajectory())


def test_hostile_actions_through_the_pettingzoo_view():
    aec = rlada_banking_v0.env()
    aec.reset(seed=0)
    actions = [*HOSTILE_AGENT_ACTIONS, *hostile_customer_speech()]
    for index, action in enumerate(actions * 2):
        if not aec.agents:
            aec.reset(seed=index)
        role = aec.agent_selection
        aec.step(None if aec.terminations[role] or aec.truncations[role] else action)
        assert all(math.isfinite(reward) for reward in aec.rewards.values())


def test_an_llm_customer_with_hostile_output_is_read_bounded():
    replies = ["```" + " " * 19_000 + "x", "rate " * 200_000, NESTED, "\x00\ud800 [hang up]"]
    env = gym.make("RLADA-Banking-v0", customer="llm", customer_backend=CannedBackend(replies))
    observation, _ = env.reset(seed=0)
    terminated = False
    while not terminated:
        observation, reward, terminated, _, info = env.step('{"action_type": "speak", "content": "Could you tell me more?"}')
        assert math.isfinite(reward)
    heard = [m["content"] for m in observation["messages"] if m["role"] == "user"]
    assert len(heard) == 4 and all(len(text) <= 400 for text in heard) and info["outcome"] == "hangup"
    strict_json(env.unwrapped.trajectory())


def test_nan_and_sub_cent_amounts_through_the_agent_env_execute_nothing():
    env = gym.make("RLADA-Banking-v0")
    env.reset(seed=0, options={"intent": "transfer_into_account"})
    game = env.unwrapped.game
    checking, savings = (account.account_id for account in game.bank.accounts)
    balances = [account.balance for account in game.bank.accounts]
    for literal in ("NaN", "Infinity", "0.001", "0.004"):
        text = transfer(literal).replace("CHK-000001", checking).replace("SAV-000001", savings)
        _, reward, _, _, info = env.step(text)
        assert info["invalid_action"] is not None and reward == pytest.approx(-0.3 - 0.05)
    assert [account.balance for account in game.bank.accounts] == balances and game.bank.transfers == []
    strict_json(env.unwrapped.trajectory())


@pytest.mark.parametrize("amount", [math.nan, math.inf, -math.inf, 10**400, 0.001, 0.004, 0], ids=["nan", "inf", "-inf", "10**400", "0.001", "0.004", "0"])
@pytest.mark.parametrize("tool", ["transfer_funds", "dispute_charge"])
def test_tools_refuse_non_finite_and_sub_cent_amounts(tool, amount):
    bank, facts = generate_bank(3, DOMAIN.intent("transaction_charged_twice"), DOMAIN)
    checking, savings = (account.account_id for account in bank.accounts)
    args = (
        {"from_account_id": checking, "to_account_id": savings, "amount": amount}
        if tool == "transfer_funds"
        else {"account_id": bank.customer_id, "amount": amount, "reason": "duplicate"}
    )
    balances = [account.balance for account in bank.accounts]
    outcome = call_tool(bank, TOOLS, tool, args)
    assert not outcome.schema_ok and outcome.error["code"] == "invalid_arguments"
    assert "tool_args.amount must be" in outcome.error["message"]
    assert [account.balance for account in bank.accounts] == balances and bank.transfers == [] and bank.disputes == []


def test_the_bank_itself_refuses_amounts_a_lenient_schema_lets_through():
    bank, _ = generate_bank(3, DOMAIN.intent("transfer_into_account"), DOMAIN)
    checking, savings = (account.account_id for account in bank.accounts)
    for amount in (math.nan, 0.001):
        ok, error = bank.execute("transfer_funds", {"from_account_id": checking, "to_account_id": savings, "amount": amount})
        assert not ok and error["code"] == "invalid_amount" and "at least $0.01" in error["message"]
        ok, error = bank.execute("dispute_charge", {"account_id": bank.customer_id, "amount": amount, "reason": "other"})
        assert not ok and error["code"] == "invalid_amount"
    assert all(math.isfinite(account.balance) for account in bank.accounts) and bank.transfers == []


def test_one_cent_is_still_a_valid_transfer():
    bank, _ = generate_bank(3, DOMAIN.intent("transfer_into_account"), DOMAIN)
    checking, savings = (account.account_id for account in bank.accounts)
    outcome = call_tool(bank, TOOLS, "transfer_funds", {"from_account_id": checking, "to_account_id": savings, "amount": 0.01})
    assert outcome.ok and outcome.result["amount"] == 0.01


def test_a_megabyte_of_customer_speech_is_cut_and_completes_quickly():
    domain = DOMAIN
    speech = ("rate move card put paid only paid $1 " * 30_000)[:1_000_000]
    move = parse_customer_output(speech, domain.hangup_markers, domain.role_reversal, domain.meta_talk)
    assert len(move.utterance) <= 400 and not move.format_ok
    assert any("exceeds MAX_ACTION_CHARS" in note for note in move.notes) and any("cut to 400" in note for note in move.notes)
    for env_id in ("RLADA-Customer-v0", "RLADA-Banking-v0"):
        env = gym.make(env_id)
        env.reset(seed=0)
        started = time.process_time()
        env.step(speech)
        # Generous bound (the step takes milliseconds): a quadratic cue pattern takes hours here.
        assert time.process_time() - started < 2.0
    heard = env.unwrapped.game.observe("agent")["messages"]
    assert all(len(message["content"]) <= 400 for message in heard if message["role"] == "user")


def test_long_customer_turns_are_cut_to_customer_max_chars():
    move = parse_customer_output("I was charged twice. " * 40, DOMAIN.hangup_markers, DOMAIN.role_reversal, DOMAIN.meta_talk, max_chars=100)
    assert len(move.utterance) <= 100 and "839 characters (at most 100); cut to 100" in move.notes


def test_config_limits_utterances_to_what_a_parser_reads():
    with pytest.raises(ConfigError, match=rf"customer_max_chars must be at most {MAX_ACTION_CHARS}.*got 50000"):
        RladaConfig(customer_max_chars=50_000)
    with pytest.raises(ConfigError, match=rf"max_utterance_chars must be at most {MAX_ACTION_CHARS}"):
        RladaConfig(max_utterance_chars=MAX_ACTION_CHARS + 1)


@pytest.mark.parametrize(
    "text",
    ['{"score": ' + NESTED + "}", '{"score": ' + HUGE + "}", "{" + NESTED + "}", '{"score": NaN}', '{"score": 1e999}', "1" * 1_000_000, None],
    ids=["nested-score", "huge-score", "nested-object", "nan-score", "overflowing-score", "megabyte-of-digits", "none"],
)
def test_llm_judge_score_parser_never_raises(text):
    score, problem = parse_judge_score(text)
    assert score is None and problem


def test_llm_judge_with_a_hostile_answer_falls_back_to_the_rule_score():
    backend = CannedBackend(['{"score": ' + NESTED + "}"])
    game = RladaGame(judge=LLMJudge(DOMAIN, backend))
    game.reset(seed=0, options={"scenario": "dispute_duplicate"})
    game.step("I was charged twice at Riverside Diner, $42.80.")
    game.step('{"action_type": "end_call", "content": "Goodbye."}')
    assert game.verdict.judge == "rule_fallback" and "no score found" in game.verdict.note
    strict_json(game.trajectory())


@pytest.mark.parametrize("amount", [math.nan, math.inf, "abc", 0.001, True])
def test_profile_facts_with_a_bad_amount_are_a_config_error(amount):
    env = gym.make("RLADA-Banking-v0")
    with pytest.raises(ConfigError, match=r"profile facts\['amount'\] must be a finite number of dollars >= 0.01"):
        env.reset(seed=0, options={"profile": {"intent": "transaction_charged_twice", "facts": {"amount": amount}}})


def test_the_keyword_agent_never_sends_an_amount_that_is_not_finite():
    observation = {"messages": [{"role": "system", "content": "Caller ACC-123456."}, {"role": "user", "content": "Please move $" + "9" * 400}]}
    assert tool_args("transfer_funds", observation, None)["amount"] == 1.0


# -- data files ------------------------------------------------------------------------------------
def _rewrite(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_amount_in_a_scenario_file_names_file_line_and_field(data_dir, literal):
    _rewrite(data_dir / "arena_scenarios.jsonl", '"amount": 42.8', f'"amount": {literal}')
    with pytest.raises(ScenarioError, match=r"arena_scenarios.jsonl: line 1: field 'facts.amount' is -?(nan|inf); .*finite number"):
        load_domain(str(data_dir))


def test_sub_cent_amount_in_a_scenario_file_is_refused(data_dir):
    _rewrite(data_dir / "arena_scenarios.jsonl", '"amount": 42.8', '"amount": 0.001')
    with pytest.raises(ScenarioError, match=r"line 1: field 'facts.amount' must be at least 0.01 \(one cent\), got 0.001"):
        load_domain(str(data_dir))


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('"amount_range": [4.5, 480.0]', '"amount_range": [4.5, NaN]', r"bank.json: line \d+: field 'amount_range\[1\]' is nan"),
        ('"daily_transfer": 5000', '"daily_transfer": Infinity', r"bank.json: line \d+: field 'limits.daily_transfer' is inf"),
        ('"amount_range": [4.5, 480.0]', '"amount_range": [0.001, 480.0]', r"bank.json: field 'amount_range' must have 0.01 <= low <= high"),
        ('"amount_range": [4.5, 480.0]', '"amount_range": [480.0, 4.5]', r"field 'amount_range' must have 0.01 <= low <= high"),
        ('"background_transactions": [12, 20]', '"background_transactions": [12, 1e9]', r"field 'background_transactions\[1\]' must be a non-negative integer"),
        ('"daily_transfer": 5000', '"daily_transfer": 0', r"field 'limits.daily_transfer' must be at least 0.01, got 0"),
        ('"today": "2024-06-14"', '"today": "someday"', r"field 'today' must be a date YYYY-MM-DD, got 'someday'"),
    ],
    ids=["nan-range", "infinite-limit", "sub-cent-range", "inverted-range", "float-count", "zero-limit", "bad-date"],
)
def test_bank_file_numbers_are_checked(data_dir, old, new, message):
    _rewrite(data_dir / "bank.json", old, new)
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('"maximum": 100000, "description": "Dollars', '"maximum": NaN, "description": "Dollars', r"tools.json: line \d+: field 'tools\[4\].parameters.properties.amount.maximum' is nan"),
        ('"minimum": 1, "maximum": 90', '"minimum": "1", "maximum": 90', r"properties.days: field 'minimum' must be a finite number, got '1'"),
        ('"minimum": 1, "maximum": 90', '"minimum": 100, "maximum": 90', r"properties.days: minimum 100.0 is above maximum 90.0"),
        ('"minLength": 3, "maxLength": 300', '"minLength": -1, "maxLength": 300', r"properties.reason: field 'minLength' must be a non-negative integer, got -1"),
        ('"minLength": 3, "maxLength": 300', '"minLength": 3, "maxLength": 2.5', r"field 'maxLength' must be a non-negative integer, got 2.5"),
        ('"minLength": 3, "maxLength": 300', '"minLength": 30, "maxLength": 3', r"minLength 30 is above maxLength 3"),
        ('"days": {"type": "integer"', '"days": {"type": "float"', r"properties.days: field 'type' is 'float'; use one of"),
        ('"pattern": "^CARD-[0-9]{4}$"', '"pattern": "^CARD-.*$"', r"has the unbounded gap '\.\*'"),
    ],
    ids=["nan-maximum", "string-minimum", "inverted-bounds", "negative-min-length", "float-max-length", "inverted-lengths", "unknown-type", "quadratic-pattern"],
)
def test_tool_schema_numbers_and_patterns_are_checked(data_dir, old, new, message):
    _rewrite(data_dir / "tools.json", old, new)
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))


def test_quadratic_cue_patterns_are_refused_at_load(data_dir):
    _rewrite(data_dir / "lexicon.json", '"rate .{0,120}(wrong|off)"', '"rate .*(wrong|off)"')
    with pytest.raises(ScenarioError, match=r"lexicon.json: cues.dispute_charge\[\d+\]: 'rate \.\*\(wrong\|off\)' has the unbounded gap '\.\*'.*bounded gap"):
        load_domain(str(data_dir))


def test_judge_weights_must_be_finite(data_dir):
    _rewrite(data_dir / "judge.json", '"routing": 1.0', '"routing": NaN')
    with pytest.raises(ScenarioError, match=r"judge.json: line \d+: field 'components.routing' is nan"):
        load_domain(str(data_dir))


def test_huge_integers_and_deep_nesting_in_a_data_file_are_scenario_errors(data_dir):
    _rewrite(data_dir / "arena_scenarios.jsonl", '"amount": 42.8', f'"amount": {HUGE}')
    with pytest.raises(ScenarioError, match=r"arena_scenarios.jsonl: line 1: unreadable JSON \(ValueError"):
        load_domain(str(data_dir))


@pytest.mark.parametrize("copies, shown", [("2.5", "2.5"), ("0", "0"), ("1000000", "1000000"), ("true", "True"), ("NaN", None)])
def test_planted_copies_must_be_a_small_count(data_dir, copies, shown):
    _rewrite(data_dir / "intents.jsonl", '"copies": 2}', f'"copies": {copies}}}')
    message = r"intents.jsonl: line 26: field 'plant.transaction.copies' is nan" if shown is None else (
        rf"intents.jsonl: line 26: plant transaction.copies must be an integer from 1 to 10, got {shown}\."
    )
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))


@pytest.mark.parametrize(
    "content",
    [
        "$1," * 600,
        "I have refunded " * 120,
        "1" * 1900,
        "DSP-" * 450,
        "? " * 900,
        ("Is it your card? " * 100)[:1990],
        "a" * 1990,
        ". " * 900,
    ],
)
def test_hostile_spoken_turns_are_read_in_bounded_time(content):
    """The customer's reading and the judge's claim and value checks are linear in a bounded turn."""
    game = RladaGame()
    game.reset(seed=2, options={"intent": "check_account_balance", "concealment": "camouflage"})
    game.step("Payday was Friday and I can't tell what I've got left.")
    start = time.process_time()
    for _ in range(3):
        if game.done:
            break
        game.step(act("speak", content))
        if not game.done:
            game.step("Sorry, what?")
    if not game.done:
        game.step(act("end_call", content))
    assert game.done and time.process_time() - start < 2.0
    assert game.verdict is not None and not game.passed
