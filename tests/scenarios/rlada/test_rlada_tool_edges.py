"""Tool-call edges the main tests left open (found by ``tools/mutation.py``): schema keywords no
packaged tool uses yet (an empty string without ``minLength``, ``exclusiveMinimum``), the unknown-tool
outcome, the success message, and the outcome record being immutable."""

from __future__ import annotations

import dataclasses

import pytest

from dialogue_gym.scenarios.rlada.bank import generate_bank
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.tools import call_tool, schema_errors

DOMAIN = load_domain()
TOOLS = {tool.name: tool for tool in DOMAIN.tools}


def test_a_string_without_min_length_may_be_empty():
    assert schema_errors("", {"type": "string"}) == []
    assert schema_errors("", {"type": "string", "minLength": 1}) == ["tool_args must have at least 1 characters, got ''"]


def test_exclusive_minimum_excludes_the_bound():
    schema = {"type": "number", "exclusiveMinimum": 0}
    assert schema_errors(0, schema) == ["tool_args must be > 0, got 0"]
    assert schema_errors(0.01, schema) == []


def test_an_unknown_tool_executes_nothing_and_is_not_ok():
    bank, _ = generate_bank(5, DOMAIN.intent("transaction_charged_twice"), DOMAIN, None)
    outcome = call_tool(bank, TOOLS, "open_vault", {"amount": 5})
    assert (outcome.schema_ok, outcome.ok, outcome.result) == (False, False, None)
    assert outcome.message() == {"tool": "open_vault", "ok": False, "error": outcome.error}
    assert outcome.record()["schema_ok"] is False and outcome.record()["ok"] is False


def test_a_successful_call_says_ok_with_its_result():
    bank, _ = generate_bank(5, DOMAIN.intent("transaction_charged_twice"), DOMAIN, None)
    outcome = call_tool(bank, TOOLS, "lookup_account", {"account_id": bank.customer_id})
    assert outcome.message() == {"tool": "lookup_account", "ok": True, "result": outcome.result}
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.ok = False
