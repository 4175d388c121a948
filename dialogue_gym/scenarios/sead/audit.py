"""SEAD-Outbound-v0's exploit audit (see :mod:`dialogue_gym.audit`): the agent role, scored by CR."""

from __future__ import annotations

from dialogue_gym.audit import (
    AuditPolicy,
    ScenarioAudit,
    TextPolicy,
    Vocabulary,
    generic_policies,
)

VOCABULARY = Vocabulary(
    opener="Hello, this is Alex from FoodMap. Am I speaking with the owner?",
    cue_words=(
        "free credit", "exposure", "owner", "understand", "quick", "no fees", "pay-per-click", "anytime",
        "700", "simply", "open the app", "tap", "get more exposure", "claim it", "sms", "rating", "500,000",
    ),
    facts=(
        "700 units of free advertising credit.", "Pay-per-click, switch it off anytime.", "No date limit, valid until the end of the year.",
        "Claimed in the merchant back-office app.", "More than 500,000 users.", "An app rating of 4.6.",
        "Open the app, tap get more exposure, claim the credit, you should see an SMS.",
    ),
    fixed_sentence="We are offering your restaurant free advertising credit on FoodMap, would you like it?",
    end="Goodbye, have a nice day.",
)


def audits() -> list[ScenarioAudit]:
    fixed_script = AuditPolicy(
        "fixed_script", "blind", "a fluent SOP script, one line a turn, that never reads the owner",
        lambda: TextPolicy(_script, str),
    )
    return [
        ScenarioAudit(
            env_id="SEAD-Outbound-v0",
            learner="agent",
            score="cr",
            score_kind="rate",
            baseline="sop",
            fair_order=("random", "sop", "adaptive", "oracle"),
            min_gaps={("sop", "adaptive"): 0.15},
            policies=(*generic_policies(VOCABULARY), fixed_script),
        )
    ]


SCRIPT = (
    "Hello, this is Alex from FoodMap. Am I speaking with the owner?",
    "I understand you're busy, I'll be quick: we're giving your restaurant 700 units of free advertising credit.",
    "There are no fees: it is pay-per-click and you can switch it off anytime, valid until the end of the year.",
    "Our app has more than 500,000 users and a 4.6 rating, so it brings you more orders.",
    "Simply open the merchant back-office app and tap 'get more exposure'.",
    "Then claim the credit; you should see an SMS and a pop-up.",
)


def _script(observation, turn, rng) -> str:
    return SCRIPT[min(turn, len(SCRIPT)) - 1]
