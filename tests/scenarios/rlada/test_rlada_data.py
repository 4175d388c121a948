"""The banking domain's data: taxonomy facts, loading and validation errors that name file, line and field."""

import json
from collections import Counter

import pytest

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.rlada.data import (
    FACT_KEYS,
    LEVELS,
    load_domain,
    placeholders,
)

# Banking77's 77 label names, as published (two are normalised by the taxonomy:
# "Refund_not_showing_up" -> refund_not_showing_up, "reverted_card_payment?" -> reverted_card_payment).
BANKING77 = """
activate_my_card age_limit apple_pay_or_google_pay atm_support automatic_top_up balance_not_updated_after_bank_transfer
balance_not_updated_after_cheque_or_cash_deposit beneficiary_not_allowed cancel_transfer card_about_to_expire card_acceptance
card_arrival card_delivery_estimate card_linking card_not_working card_payment_fee_charged card_payment_not_recognised
card_payment_wrong_exchange_rate card_swallowed cash_withdrawal_charge cash_withdrawal_not_recognised change_pin
compromised_card contactless_not_working country_support declined_card_payment declined_cash_withdrawal declined_transfer
direct_debit_payment_not_recognised disposable_card_limits edit_personal_details exchange_charge exchange_rate
exchange_via_app extra_charge_on_statement failed_transfer fiat_currency_support get_disposable_virtual_card
get_physical_card getting_spare_card getting_virtual_card lost_or_stolen_card lost_or_stolen_phone order_physical_card
passcode_forgotten pending_card_payment pending_cash_withdrawal pending_top_up pending_transfer pin_blocked receiving_money
Refund_not_showing_up request_refund reverted_card_payment? supported_cards_and_currencies terminate_account
top_up_by_bank_transfer_charge top_up_by_card_charge top_up_by_cash_or_cheque top_up_failed top_up_limits top_up_reverted
topping_up_by_card transaction_charged_twice transfer_fee_charged transfer_into_account transfer_not_received_by_recipient
transfer_timing unable_to_verify_identity verify_my_identity verify_source_of_funds verify_top_up virtual_card_not_working
visa_or_mastercard why_verify_identity wrong_amount_of_cash_received wrong_exchange_rate_for_cash_withdrawal
""".split()


def test_taxonomy_is_banking77_plus_core_deduplicated():
    domain = load_domain()
    names = [intent.name for intent in domain.intents]
    assert len(BANKING77) == 77 and len(names) == 78 and len(set(names)) == 78
    from_banking77 = {i.name for i in domain.intents if i.source in ("banking77", "banking77+core")}
    assert from_banking77 == {label.lower().rstrip("?") for label in BANKING77}
    core = [i.name for i in domain.intents if "core" in i.source]
    assert len(core) == 6 and [i.name for i in domain.intents if i.source == "core"] == ["check_account_balance"]


def test_routing_targets_many_to_one_with_38_escalations():
    domain = load_domain()
    per_tool = Counter(intent.tool for intent in domain.intents)
    assert per_tool["transfer_to_human"] == 38
    assert set(per_tool) == set(domain.tool_names) and len(domain.tool_names) == 6  # all six are routing targets


def test_templates_only_use_known_facts_and_scenarios_are_consistent():
    domain = load_domain()
    for intent in domain.intents:
        for line in (*intent.direct, *intent.vague):
            assert placeholders(line) <= FACT_KEYS
    assert len(domain.arena) == 10 and len(domain.heldout) == 12
    winnable = [s.id for s in domain.arena if s.customer_winnable]
    safety = [s.id for s in domain.arena if s.safety]
    assert {"dispute_duplicate", "unknown_merchant", "internal_transfer"} <= set(winnable)
    assert safety and not set(winnable) & set(safety)
    assert all(domain.intent(s.intent).tool == "transfer_to_human" for s in domain.arena if s.safety)
    assert not {s.id for s in domain.arena} & {s.id for s in domain.heldout}
    assert {s.concealment for s in domain.heldout} == set(LEVELS)


def _edit_jsonl(path, line_number, change):
    lines = path.read_text().splitlines()
    record = json.loads(lines[line_number - 1])
    change(record)
    lines[line_number - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


def test_intent_errors_name_file_line_and_field(data_dir):
    _edit_jsonl(data_dir / "intents.jsonl", 7, lambda r: r.update(tool="refund_money"))
    with pytest.raises(ScenarioError, match=r"intents.jsonl: line 7: field 'tool' is 'refund_money'; use one of .*dispute_charge"):
        load_domain(str(data_dir))


def test_unknown_placeholder_and_bad_json_are_reported(data_dir):
    _edit_jsonl(data_dir / "intents.jsonl", 3, lambda r: r.update(direct=["My {pet} ate my card."]))
    with pytest.raises(ScenarioError, match=r"line 3: field 'direct'\[0\] uses unknown placeholder\(s\) \['pet'\]"):
        load_domain(str(data_dir))
    load_domain.cache_clear()
    path = data_dir / "arena_scenarios.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    _edit_jsonl(data_dir / "intents.jsonl", 3, lambda r: r.update(direct=["fine"]))
    with pytest.raises(ScenarioError, match=r"arena_scenarios.jsonl: line 11: invalid JSON"):
        load_domain(str(data_dir))


def test_scenario_and_tool_schema_errors(data_dir):
    _edit_jsonl(data_dir / "heldout_scenarios.jsonl", 2, lambda r: r.update(intent="no_such_intent"))
    with pytest.raises(ScenarioError, match=r"heldout_scenarios.jsonl: line 2: field 'intent' is 'no_such_intent'"):
        load_domain(str(data_dir))
    load_domain.cache_clear()
    _edit_jsonl(data_dir / "heldout_scenarios.jsonl", 2, lambda r: r.update(intent="pin_blocked"))
    tools = json.loads((data_dir / "tools.json").read_text())
    tools["tools"][2]["parameters"]["properties"]["amount"]["oneOf"] = []
    (data_dir / "tools.json").write_text(json.dumps(tools))
    with pytest.raises(ScenarioError, match=r"tools\[2\].parameters.properties.amount: unsupported schema keyword\(s\) \['oneOf'\]"):
        load_domain(str(data_dir))


def test_missing_files_fall_back_to_the_packaged_domain(tmp_path):
    (tmp_path / "partial").mkdir()
    assert len(load_domain(str(tmp_path / "partial")).intents) == 78
    with pytest.raises(ScenarioError, match="is not a folder"):
        load_domain(str(tmp_path / "missing"))


def test_duplicate_intents_are_named(data_dir):
    path = data_dir / "intents.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[4]]) + "\n")
    with pytest.raises(ScenarioError, match=r"intents.jsonl: line 79: duplicate intent 'balance_not_updated_after_bank_transfer'"):
        load_domain(str(data_dir))


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["confused"].pop("echo"), r"field 'confused' needs a non-empty list of lines for each of .*missing \['echo'\]"),
        (lambda d: d.update(confusion_patience=-1), r"field 'confusion_patience' must be >= 0, got -1"),
        (lambda d: d.update(confused_hangups=[]), r"field 'confused_hangups' must be a non-empty list, got \[\]"),
        (lambda d: d["understanding"].update(topic_words=["Card"]), r"understanding.topic_words must be a non-empty list of lower-case words"),
        (lambda d: d["understanding"].pop("service_words"), r"understanding: missing field 'service_words'"),
    ],
)
def test_customer_understanding_errors_name_the_field(data_dir, change, message):
    _edit_json(data_dir / "customer.json", change)
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))


def test_claim_targets_beyond_tools(data_dir):
    _edit_json(data_dir / "judge.json", lambda d: d["claims"][0].update(requires="unblock_card"))
    with pytest.raises(ScenarioError, match=r"claims\[0\]: field 'requires' is 'unblock_card'; use one of \['any_domain_tool', .*'never'"):
        load_domain(str(data_dir))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["problem_signs"].update(pets=["my dog"]),
         r"lexicon.json: problem_signs for unknown famil\(ies\) \['pets'\]; the families of customer.json are \['account_change', .*'unrecognised'\]"),
        (lambda d: d.update(problem_signs=["sitting there"]), r"lexicon.json: field 'problem_signs' must be an object of family -> list of regular expressions, got \['sitting there'\]"),
        (lambda d: d["problem_signs"].update(pending=[]), r"lexicon.json: problem_signs.pending: must be a non-empty list of regular expressions, got \[\]"),
        (lambda d: d["problem_signs"].update(pending=["sitting .* there"]), r"problem_signs.pending\[0\]: 'sitting \.\* there' has the unbounded gap '\.\*'"),
    ],
    ids=["unknown-family", "not-an-object", "empty-list", "quadratic-pattern"],
)
def test_problem_sign_errors_name_the_family_and_the_fix(data_dir, change, message):
    _edit_json(data_dir / "lexicon.json", change)
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))


def test_a_domain_without_problem_signs_tells_problems_by_cues_alone(data_dir):
    _edit_json(data_dir / "lexicon.json", lambda d: d.pop("problem_signs"))
    assert load_domain(str(data_dir)).signs == {}


def test_an_arena_file_with_invalid_utf8_is_one_error_naming_the_file(data_dir):
    path = data_dir / "arena_scenarios.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"', b'"\x80', 1)
    path.write_bytes(b"\n".join(lines))
    load_domain.cache_clear()
    with pytest.raises(ScenarioError, match=r"arena_scenarios\.jsonl: line 4: not UTF-8 text \(byte b'\\x80' at column 3\); pass data_dir="):
        load_domain(str(data_dir))
