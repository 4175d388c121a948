"""Tools against the simulated bank: schema validation, structured errors, planted problems, determinism."""

import copy

import pytest

from dialogue_gym.scenarios.rlada.bank import generate_bank
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.tools import call_tool, schema_errors

DOMAIN = load_domain()
TOOLS = {tool.name: tool for tool in DOMAIN.tools}


def bank_for(intent, seed=5, facts=None):
    return generate_bank(seed, DOMAIN.intent(intent), DOMAIN, facts)


def test_generation_is_a_pure_function_of_seed_intent_and_facts():
    bank_a, facts_a = bank_for("transaction_charged_twice")
    bank_b, facts_b = bank_for("transaction_charged_twice", facts=facts_a)
    assert facts_a == facts_b and bank_a.transactions == bank_b.transactions and bank_a.cards == bank_b.cards
    assert bank_for("transaction_charged_twice", seed=6)[1] != facts_a


@pytest.mark.parametrize(
    "intent, check",
    [
        ("transaction_charged_twice", lambda b, f: sum(t.amount == f["amount"] and t.merchant == f["merchant"] for t in b.transactions) == 2),
        ("pending_card_payment", lambda b, f: any(t.status == "pending" and t.amount == f["amount"] for t in b.transactions)),
        ("declined_card_payment", lambda b, f: b.cards[0].status == "frozen" and f["last4"] == b.cards[0].last4),
        ("virtual_card_not_working", lambda b, f: any(c.virtual and c.status == "frozen" for c in b.cards)),
        ("verify_my_identity", lambda b, f: b.identity_verified is False),
        ("card_payment_fee_charged", lambda b, f: any(t.kind == "fee" and t.amount == f["amount"] for t in b.transactions)),
        ("transfer_into_account", lambda b, f: b.accounts[0].balance >= f["amount"]),
    ],
)
def test_the_intent_is_planted_in_the_bank(intent, check):
    for seed in range(5):
        bank, facts = bank_for(intent, seed=seed)
        assert check(bank, facts), (intent, seed, facts)


def test_scenario_facts_override_the_drawn_ones():
    bank, facts = bank_for("card_payment_not_recognised", facts={"merchant": "AMZN MKTP US*2K4", "amount": 89})
    assert facts["merchant"] == "AMZN MKTP US*2K4" and facts["amount"] == 89.0
    assert any(t.merchant == "AMZN MKTP US*2K4" and t.amount == 89.0 for t in bank.transactions)


def test_schema_errors_name_the_field_the_value_and_the_rule():
    schema = TOOLS["dispute_charge"].parameters
    assert schema_errors({"account_id": "ACC-123456", "amount": 4.5, "reason": "duplicate"}, schema) == []
    errors = schema_errors({"account_id": "123", "amount": -2, "reason": "because", "extra": 1}, schema)
    assert "tool_args.account_id must match ^ACC-[0-9]{6}$, got '123'" in errors
    assert "tool_args.amount must be >= 0.01, got -2" in errors
    assert any(e.startswith("tool_args.reason must be one of ['duplicate'") for e in errors)
    assert any("unknown field(s) ['extra']" in e for e in errors)
    assert schema_errors([1], schema) == ["tool_args must be of type object, got list [1]"]
    assert schema_errors({"account_id": "ACC-123456", "amount": True, "reason": "fee"}, schema) == ["tool_args.amount must be of type number, got bool True"]
    assert "tool_args.reason is required" in schema_errors({"account_id": "ACC-123456", "amount": 3}, schema)


def test_a_bad_call_returns_a_structured_error_and_executes_nothing():
    bank, facts = bank_for("transfer_into_account")
    before = copy.deepcopy(bank)
    unknown = call_tool(bank, TOOLS, "refund_everything", {"amount": 5})
    assert not unknown.schema_ok and unknown.error["code"] == "unknown_tool" and "transfer_funds" in unknown.error["message"]
    bad = call_tool(bank, TOOLS, "transfer_funds", {"from_account_id": bank.accounts[0].account_id, "amount": "all"})
    assert not bad.schema_ok and bad.error["code"] == "invalid_arguments" and "to_account_id is required" in bad.error["message"]
    assert bad.message() == {"tool": "transfer_funds", "ok": False, "error": bad.error}
    assert bank.accounts == before.accounts and bank.transfers == [] and bank.transactions == before.transactions


def test_every_tool_happy_path_and_domain_errors():
    bank, facts = bank_for("transaction_charged_twice")
    acc = bank.customer_id
    lookup = call_tool(bank, TOOLS, "lookup_account", {"account_id": acc})
    assert lookup.ok and lookup.result["name"] == bank.name and len(lookup.result["accounts"]) == 2
    assert call_tool(bank, TOOLS, "lookup_account", {"account_id": "ACC-000001"}).error["code"] == "account_not_found"
    listing = call_tool(bank, TOOLS, "get_transactions", {"account_id": acc, "days": 7, "status": "posted"})
    assert listing.ok and all(t["status"] == "posted" for t in listing.result["transactions"])
    dispute = call_tool(bank, TOOLS, "dispute_charge", {"account_id": acc, "amount": facts["amount"], "reason": "duplicate", "merchant": facts["merchant"]})
    assert dispute.ok and dispute.result["merchant"] == facts["merchant"] and dispute.result["status"] == "opened"
    second = call_tool(bank, TOOLS, "dispute_charge", {"account_id": acc, "amount": facts["amount"], "reason": "duplicate"})
    assert second.ok and second.result["transaction_id"] != dispute.result["transaction_id"]
    third = call_tool(bank, TOOLS, "dispute_charge", {"account_id": acc, "amount": facts["amount"], "reason": "duplicate"})
    assert third.error["code"] == "already_disputed"
    assert call_tool(bank, TOOLS, "dispute_charge", {"account_id": acc, "amount": 0.01, "reason": "other"}).error["code"] == "no_matching_charge"
    card = call_tool(bank, TOOLS, "check_card_status", {"card_id": bank.cards[0].card_id})
    assert card.ok and card.result["last4"] == bank.cards[0].last4
    assert call_tool(bank, TOOLS, "check_card_status", {"card_id": "CARD-9999" if bank.cards[0].card_id != "CARD-9999" else "CARD-9998"}).error["code"] == "card_not_found"
    checking, savings = bank.accounts
    total = checking.balance + savings.balance
    moved = call_tool(bank, TOOLS, "transfer_funds", {"from_account_id": checking.account_id, "to_account_id": savings.account_id, "amount": 10})
    assert moved.ok and round(checking.balance + savings.balance, 2) == round(total, 2)
    broke = call_tool(bank, TOOLS, "transfer_funds", {"from_account_id": checking.account_id, "to_account_id": savings.account_id, "amount": 99999})
    assert broke.error["code"] in ("insufficient_funds", "limit_exceeded")
    same = call_tool(bank, TOOLS, "transfer_funds", {"from_account_id": checking.account_id, "to_account_id": checking.account_id, "amount": 1})
    assert same.error["code"] == "same_account"
    human = call_tool(bank, TOOLS, "transfer_to_human", {"reason": "stolen card", "department": "fraud"})
    assert human.ok and human.result["department"] == "fraud" and bank.escalations
