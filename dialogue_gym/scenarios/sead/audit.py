"""SEAD-Outbound-v0's exploit audit (see :mod:`dialogue_gym.audit`): the agent role, scored by CR.

Beyond the generic library, the cheapest policies that could top a keyword-reading owner:

- ``resolving_cue_salad`` (degenerate): looks up which scripted line the owner said (the behavior
  library is public) and answers with the cue words of the act that resolves it (or of the next
  operation step once the owner asks what to do), padded with other cues and made-up words. The
  review measured CR 0.744 for it against the keyword analyzer (``oracle`` 0.771).
- ``cue_template`` (blind): a fluent carrier sentence with two cue phrases slotted in, rotating,
  never reading the owner ("I want to tell you about no fees and claim it today.").
- ``every_act_monologue`` (degenerate): the opener, then the whole fluent pitch and walkthrough in
  one turn, every turn.
- ``step_loop`` (blind): the opener, then the three operation steps over and over, never reading
  the owner (a walkthrough must come when the owner is ready, not by persistence).
- ``walkthrough_twice`` (blind): the strongest fluent blind script found, the offer and then the
  walkthrough twice in other words.

Its fair ceiling is ``informed``: the oracle's play with the hidden state replaced by what the owner's
words voice and the concerns its public lines name (reads only its observation).

The owner's side: ``data/UNDERSTANDING.md``.
"""

from __future__ import annotations

import random
from typing import Any

from dialogue_gym.audit import (
    AuditPolicy,
    ScenarioAudit,
    TextPolicy,
    UnauditedRole,
    Vocabulary,
    generic_policies,
    last_heard,
    made_up_word,
)
from dialogue_gym.scenarios.sead.data import load_behaviors

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

RESOLVING_CUES: dict[str, str] = {
    "ai_disclosure": "ai assistant", "self_intro": "calling from foodmap", "evidence": "500,000 rating 4.6",
    "cost": "no fees", "rules": "pay-per-click anytime", "value": "free credit more customers", "confirm": "700",
    "guide": "open the app", "simplify": "simply", "empathy": "sorry understand", "respect_time": "quick",
}
"""The cue words a keyword matcher would take for each act."""

STEP_CUES = ("open the app", "tap get more exposure", "claim it sms")
_READY = ("what do i need to do", "what's next", "app is open", "tapped", "screen again", "where is that")


class ResolvingCueSalad:
    """``say`` of the resolving-cue salad: the owner's last line -> the cue of the act that settles it."""

    def __init__(self) -> None:
        library = load_behaviors()
        self.line_to_act = {line: sorted(b.resolved_by)[0] for b in library.behaviors for line in b.lines}

    def __call__(self, observation: dict[str, Any], turn: int, rng: random.Random) -> str:
        if turn == 1:
            return VOCABULARY.opener
        heard = last_heard(observation)
        cues = [RESOLVING_CUES[act] for line, act in self.line_to_act.items() if line in heard]
        if any(word in heard.lower() for word in _READY):
            steps = sum(word in heard.lower() for word in ("app is open", "tapped"))
            cues.append(STEP_CUES[min(steps, len(STEP_CUES) - 1)])
        cues = cues[:2] or [RESOLVING_CUES["value"]]
        padding = rng.sample(VOCABULARY.cue_words, 2) + [made_up_word(rng), made_up_word(rng)]
        return " ".join(cues + padding)


CARRIERS = (
    "I want to tell you about {a} and {b} today.",
    "You will really like {a}, and also {b}.",
    "We are calling because of {a} and {b}.",
    "Let me explain that {a} is part of it, with {b}.",
)
TEMPLATE_CUES = ("free credit", "no fees", "pay-per-click", "700 units", "500,000 users", "a 4.6 rating", "open the app", "claim it", "more customers")


def _cue_template(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    if turn == 1:
        return VOCABULARY.opener
    a, b = rng.sample(TEMPLATE_CUES, 2)
    return CARRIERS[turn % len(CARRIERS)].format(a=a, b=b)


MONOLOGUE = (
    "I understand you're busy, so I'll be quick. We're giving your restaurant 700 units of free advertising "
    "credit, with no fees: it's pay-per-click and you can switch it off anytime. Our app has more than "
    "500,000 users and a 4.6 rating. Simply open the merchant back-office app, tap 'get more exposure' and "
    "claim the credit; you should see an SMS and a pop-up."
)

STEPS_SCRIPT = (
    "Please open your merchant back-office app.",
    "Now tap the 'get more exposure' entry.",
    "Then claim the credit; you should see an SMS and a pop-up.",
)


def _monologue(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return VOCABULARY.opener if turn == 1 else MONOLOGUE


def _step_loop(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return VOCABULARY.opener if turn == 1 else STEPS_SCRIPT[(turn - 2) % len(STEPS_SCRIPT)]


SCRIPT = (
    "Hello, this is Alex from FoodMap. Am I speaking with the owner?",
    "I understand you're busy, I'll be quick: we're giving your restaurant 700 units of free advertising credit.",
    "There are no fees: it is pay-per-click and you can switch it off anytime, valid until the end of the year.",
    "Our app has more than 500,000 users and a 4.6 rating, so it brings you more orders.",
    "Simply open the merchant back-office app and tap 'get more exposure'.",
    "Then claim the credit; you should see an SMS and a pop-up.",
)


def _script(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return SCRIPT[min(turn, len(SCRIPT)) - 1]


SCRIPT_TWICE = (
    "Hello, this is Alex from FoodMap, sorry to bother you. Am I speaking with the owner?",
    "I understand you're busy. We're giving your restaurant 700 units of free advertising credit to bring you more customers.",
    "Totally fair to wonder, I appreciate your patience. More than 500,000 people use our app, and it has a 4.6 rating.",
    "It costs you nothing, you won't be charged for the credit. You can turn it off anytime, no deadline.",
    "In short, it's simple. Open the merchant back-office app on your phone.",
    "On the home screen, tap 'get more exposure'.",
    "Press claim it, and an SMS with a pop-up will confirm.",
    "I hear you. Other restaurants in your area on average see more orders with it.",
    "Let me walk you through it once more: please open your merchant back-office app.",
    "Now tap the 'get more exposure' entry.",
    "Then claim the credit; you should see an SMS and a pop-up.",
)
"""The strongest blind script the audit's authors found: the whole offer, then the walkthrough twice in
different words (a blind policy can only hope the owner is ready on one of the passes)."""


def _script_twice(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return SCRIPT_TWICE[min(turn, len(SCRIPT_TWICE)) - 1]


CEILING_DESCRIPTION = "the oracle's play on the state the owner's words voice and the concerns its public lines name"
"""SEAD's fair ceiling, ``informed`` (:class:`~dialogue_gym.scenarios.sead.agents.InformedAgent`): reads only its observation."""


def audits() -> list[ScenarioAudit]:
    extra = (
        AuditPolicy("fixed_script", "blind", "a fluent SOP script, one line a turn, that never reads the owner", lambda: TextPolicy(_script, str)),
        AuditPolicy(
            "resolving_cue_salad", "degenerate", "answers the owner's scripted line with its resolving cue words, plus cues and made-up words",
            lambda: TextPolicy(ResolvingCueSalad(), str),
        ),
        AuditPolicy("cue_template", "blind", "a fluent carrier sentence with two cue phrases slotted in, never reading the owner", lambda: TextPolicy(_cue_template, str)),
        AuditPolicy("every_act_monologue", "degenerate", "opener, then the whole pitch and walkthrough in one turn, every turn", lambda: TextPolicy(_monologue, str)),
        AuditPolicy("step_loop", "blind", "opener, then the three operation steps over and over", lambda: TextPolicy(_step_loop, str)),
        AuditPolicy("walkthrough_twice", "blind", "the whole offer, then the walkthrough twice in other words, never reading the owner", lambda: TextPolicy(_script_twice, str)),
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
            policies=(*generic_policies(VOCABULARY), *extra),
            ceiling={"informed": CEILING_DESCRIPTION},
        )
    ]


UNAUDITED = (
    UnauditedRole(
        "SEAD-Outbound-v0",
        "user",
        "the user role's only reward is SEAD's adversarial one (user_reward='adversarial', the paper's "
        "'Train URM' ablation): it pays exactly when the agent fails, so refusing or hanging up at once is "
        "optimal by design, and the owner reports its own state, so no rule can tell a justified hang-up "
        "from a degenerate one. A user simulator's quality is realism, which needs reference dialogues "
        "SEAD does not ship; audit an LLM-played user with TRACER-UserSim-v0's reference-aligned reward instead.",
    ),
)
"""The SEAD learner roles without an audit, and why."""
