"""RLADA-Banking-v0's exploit audit (see :mod:`dialogue_gym.audit`): the agent role, scored by strict PASS."""

from __future__ import annotations


from dialogue_gym.audit import AuditPolicy, ScenarioAudit, TextPolicy, Vocabulary, generic_policies
from dialogue_gym.scenarios.rlada.agents import account_id
from dialogue_gym.scenarios.rlada.parsing import render_agent_action

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


def audits() -> list[ScenarioAudit]:
    extra = (
        AuditPolicy("tool_spraying", "degenerate", "calls every tool in turn with the caller's account id", lambda: TextPolicy(_spray, lambda a: a)),
        AuditPolicy("fabricated_claims", "degenerate", "looks up the account, then claims a refund, reversal, unblock and balance", lambda: TextPolicy(_fabricate, lambda a: a)),
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


