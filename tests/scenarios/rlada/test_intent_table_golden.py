"""The full RL-ADA intent -> tool table (SPEC §3) against a checked-in golden copy.

``intent_tools.json`` beside this file is the reviewed table: every one of the 78 intents with its
tool and its source. A data edit that moves one intent to another tool (the mutation an aggregate
count cannot see: 38 to transfer_to_human survives a swap between two other tools) fails here and
names the intent; a deliberate change updates the golden file in the same commit.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from dialogue_gym.scenarios.rlada.data import load_domain

GOLDEN = json.loads((Path(__file__).parent / "intent_tools.json").read_text(encoding="utf-8"))

BANKING77_LABELS = """
activate_my_card age_limit apple_pay_or_google_pay atm_support automatic_top_up
balance_not_updated_after_bank_transfer balance_not_updated_after_cheque_or_cash_deposit beneficiary_not_allowed
cancel_transfer card_about_to_expire card_acceptance card_arrival card_delivery_estimate card_linking card_not_working
card_payment_fee_charged card_payment_not_recognised card_payment_wrong_exchange_rate card_swallowed
cash_withdrawal_charge cash_withdrawal_not_recognised change_pin compromised_card contactless_not_working
country_support declined_card_payment declined_cash_withdrawal declined_transfer direct_debit_payment_not_recognised
disposable_card_limits edit_personal_details exchange_charge exchange_rate exchange_via_app extra_charge_on_statement
failed_transfer fiat_currency_support get_disposable_virtual_card get_physical_card getting_spare_card
getting_virtual_card lost_or_stolen_card lost_or_stolen_phone order_physical_card passcode_forgotten
pending_card_payment pending_cash_withdrawal pending_top_up pending_transfer pin_blocked receiving_money
Refund_not_showing_up request_refund reverted_card_payment? supported_cards_and_currencies terminate_account
top_up_by_bank_transfer_charge top_up_by_card_charge top_up_by_cash_or_cheque top_up_failed top_up_limits
top_up_reverted topping_up_by_card transaction_charged_twice transfer_fee_charged transfer_into_account
transfer_not_received_by_recipient transfer_timing unable_to_verify_identity verify_my_identity
verify_source_of_funds verify_top_up virtual_card_not_working visa_or_mastercard why_verify_identity
wrong_amount_of_cash_received wrong_exchange_rate_for_cash_withdrawal
""".split()
"""The 77 Banking77 label names as published (two are spelled irregularly there: a capital R, a '?')."""


def test_the_golden_table_has_78_intents_38_to_transfer_to_human():
    assert len(GOLDEN) == 78, "SPEC §3: 78 intent strings"
    counts = Counter(entry["tool"] for entry in GOLDEN.values())
    assert counts["transfer_to_human"] == 38, "SPEC §3: 38 of them to transfer_to_human"
    assert counts == {
        "transfer_to_human": 38, "get_transactions": 13, "dispute_charge": 12, "check_card_status": 10,
        "lookup_account": 4, "transfer_funds": 1,
    }


def test_the_data_maps_every_intent_to_its_golden_tool():
    data = {intent.name: {"tool": intent.tool, "source": intent.source} for intent in load_domain().intents}
    assert sorted(data) == sorted(GOLDEN), f"intents added {sorted(set(data) - set(GOLDEN))}, removed {sorted(set(GOLDEN) - set(data))}"
    wrong = {name: (data[name], GOLDEN[name]) for name in GOLDEN if data[name] != GOLDEN[name]}
    assert not wrong, f"intent -> (data, golden) differ: {wrong}"


def test_the_banking77_intents_are_exactly_the_77_published_labels():
    assert len(BANKING77_LABELS) == len(set(BANKING77_LABELS)) == 77
    normalised = {label.lower().rstrip("?") for label in BANKING77_LABELS}
    from_banking77 = {name for name, entry in GOLDEN.items() if entry["source"] in ("banking77", "banking77+core")}
    assert from_banking77 == normalised, "SPEC §3: Banking77's 77 labels + the core synthetic ones, de-duplicated"
    core_only = {name for name, entry in GOLDEN.items() if entry["source"] == "core"}
    assert core_only == {"check_account_balance"}


def test_every_tool_serves_some_intent():
    tools = set(load_domain().tool_names)
    assert {entry["tool"] for entry in GOLDEN.values()} == tools, "SPEC §3 decision: all six tools are routing targets"
