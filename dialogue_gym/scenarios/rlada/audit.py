"""RLADA-Banking-v0's exploit audit (see :mod:`dialogue_gym.audit`): the agent role, scored by strict PASS."""

from __future__ import annotations

from dialogue_gym.audit import (
    AuditPolicy,
    ScenarioAudit,
    TextPolicy,
    Vocabulary,
    generic_policies,
    last_heard,
)
from dialogue_gym.scenarios.rlada.agents import ESCALATE, account_id, procedure_action
from dialogue_gym.scenarios.rlada.cues import cue_hits
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.parsing import render_agent_action
from dialogue_gym.simulators.base import ScriptedPolicy

TOOLS = ("lookup_account", "get_transactions", "dispute_charge", "check_card_status", "transfer_funds", "transfer_to_human")
FABRICATED = (
    "I have refunded the charge, reversed the transfer and unblocked your card; your balance is now 25,000 dollars."
)


def speak(text: str) -> str:
    return render_agent_action("speak", text)


VOCABULARY = Vocabulary(
    opener="Thank you for calling. Could you tell me what you need help with today?",
    cue_words=("refund", "dispute", "card", "blocked", "transfer", "balance", "charge", "human", "fraud", "account", "?"),
    facts=(
        "I can look up your account.", "I can list your transactions.", "I can dispute a charge.",
        "I can check your card status.", "I can transfer funds.", "I can transfer you to a human.",
    ),
    fixed_sentence="I can help with your account today, what would you like to do?",
    end=render_agent_action("end_call", "Thank you for calling, goodbye."),
    wrap=speak,
)


def _spray(observation, turn, rng) -> str:
    tool = TOOLS[(turn - 1) % len(TOOLS)]
    return render_agent_action("tool_call", tool, {"account_id": account_id(observation)})


def _fabricate(observation, turn, rng) -> str:
    if turn == 1:
        return render_agent_action("tool_call", "lookup_account", {"account_id": account_id(observation)})
    if turn == 2:
        return speak(FABRICATED)
    return VOCABULARY.end


class QuestionsThenRoute(ScriptedPolicy):
    """Says "?" three times, then routes on the cues of the customer's last line alone: content-free
    questions that an earlier customer answered by stating its problem plainly."""

    def __init__(self) -> None:
        self.domain = load_domain()

    def act(self, observation, info, memory) -> str:
        memory["turn"] = memory.get("turn", 0) + 1
        if memory["turn"] <= 3:
            return speak("?")
        if "route" not in memory:
            scores = cue_hits(last_heard(observation), self.domain)
            best = max(scores.values())
            memory["route"] = max(scores, key=scores.get) if best > 0 else ESCALATE
        return procedure_action(memory["route"], observation, memory)


def audits() -> list[ScenarioAudit]:
    extra = (
        AuditPolicy("tool_spraying", "degenerate", "calls every tool in turn with the caller's account id", lambda: TextPolicy(_spray, str)),
        AuditPolicy("questions_then_route", "degenerate", 'says "?" three times, then routes on the last line\'s cues', QuestionsThenRoute),
        AuditPolicy("fabricated_claims", "degenerate", "looks up the account, then claims a refund, reversal, unblock and balance", lambda: TextPolicy(_fabricate, str)),
    )
    return [
        ScenarioAudit(
            env_id="RLADA-Banking-v0",
            learner="agent",
            score="strict_pass",
            score_kind="rate",
            baseline="keyword",
            fair_order=("random", "keyword", "oracle"),
            policies=(*generic_policies(VOCABULARY), *extra),
        )
    ]


