"""System prompts of the two RL-ADA roles, built from ``data/prompts.json``, the tool schemas and
the episode (bank, intent, facts, concealment level)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from dialogue_gym.scenarios.rlada.bank import Bank
from dialogue_gym.scenarios.rlada.cues import fact_strings
from dialogue_gym.scenarios.rlada.data import Domain, Intent


@lru_cache(maxsize=16)
def tool_catalogue(domain: Domain) -> str:
    """One line per tool: name, description and argument schema (compact JSON). Memoised per domain
    (domains hash by identity and are loaded once): every episode's agent prompt lists the same tools."""
    lines = [f"- {tool.name}: {tool.description} Arguments: {json.dumps(tool.parameters, separators=(',', ':'))}" for tool in domain.tools]
    return "\n".join(lines)


def agent_system_prompt(domain: Domain, bank: Bank) -> str:
    return domain.prompts["agent"].format(
        bank_name=domain.bank["bank_name"],
        greeting=domain.bank["greeting"],
        customer_name=bank.name,
        account_id=bank.customer_id,
        tools=tool_catalogue(domain),
    )


def render(template: str, facts: dict[str, Any]) -> str:
    return template.format(**fact_strings(facts))


def customer_system_prompt(domain: Domain, bank: Bank, intent: Intent, facts: dict[str, Any], level: str) -> str:
    shown = fact_strings(facts)
    known = ", ".join(
        f"{label} {shown[key]}" for key, label in (("merchant", "merchant"), ("amount", "amount"), ("day", "day"), ("last4", "card ending"), ("person", "person involved"))
    )
    return domain.prompts["customer"].format(
        customer_name=bank.name,
        bank_name=domain.bank["bank_name"],
        problem=render(intent.direct[0], facts),
        facts=known,
        style=domain.prompts["styles"][level],
    )
