"""Exploit audits (see :mod:`dialogue_gym.audit`) of DM-Bench's assistant and TRACER's user.

``DMBench-Assistant-v0`` (:func:`audits`): the assistant role, scored by conversion rate (CR). Beside
the generic library, the cheapest attacks on a sentence-reading user: answering the user's own line
back with a contact request (``mirror_cue``), a fluent template with cue words slotted in
(``cue_template``), the user's words plus cue words as a salad (``cue_salad``), one long turn with
every act and every merchant fact (``monologue``), the merchant's facts pasted as a list every turn
(``merchant_fact_stuffing``), and fluent blind scripts that never read the user
(``fact_contact_script``: a fact and a contact request every turn; ``contact_rotation``: a contact
request every turn, phrased five ways so it is no verbatim repeat; ``facts_then_contacts``: each
fact once, then the rotating requests). The merchant's facts are read from the
assistant's system prompt, as any learner could. Its fair ceiling is ``planner``: it plans each turn with
the user's public intent-dynamics model, reading the user's level off its reply (the templates are public).

``TRACER-UserSim-v0`` (:func:`tracer_audits`): the user role, scored by the TRACER reward against the
reference session (``reward``). Degenerate users say nothing, echo the assistant, repeat one line,
speak made-up words or salads, stuff keywords, hang up at once, or hold one intent level; a blind
user follows a fixed, well-formed schedule that never reads the assistant. See :data:`TRACER_MARGIN`.
"""

from __future__ import annotations

import random
from typing import Any

from dialogue_gym.audit import (
    AuditPolicy,
    ScenarioAudit,
    TextPolicy,
    Vocabulary,
    generic_policies,
    last_heard,
    made_up_word,
)
from dialogue_gym.scenarios.tracer.parsing import render_user_output

VOCABULARY = Vocabulary(
    opener="Hello! How can I help you today?",
    cue_words=("we offer", "phone", "sorry", "understand", "free", "discount", "contact", "wechat", "specialist", "today"),
    facts=(
        "We offer free consultations.", "We have experienced specialists.", "We are open on weekends.",
        "Prices are transparent.", "Leave your phone or WeChat and we will follow up.",
    ),
    fixed_sentence="Could you leave your phone number so our specialist can help you?",
    end="Thank you, goodbye.",
)

CONTACT = "Could you share your phone or WeChat so we can follow up?"
_FACTS_HEADER = "Facts you may state:"


def merchant_facts(observation: dict[str, Any]) -> list[str]:
    """The merchant's facts as the assistant's system prompt lists them (``[]`` when it lists none)."""
    messages = observation.get("messages") or [{}]
    system = str(messages[0].get("content", "")) if messages[0].get("role") == "system" else ""
    if _FACTS_HEADER not in system:
        return []
    lines = system.split(_FACTS_HEADER, 1)[1].split("\n\n", 1)[0].splitlines()
    return [line[2:].strip() for line in lines if line.startswith("- ") and line[2:].strip()]


def _fact(observation: dict[str, Any], turn: int) -> str:
    facts = merchant_facts(observation)
    return facts[turn % len(facts)] if facts else "we are happy to help"


def _mirror_cue(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return f"{last_heard(observation).strip()} {CONTACT}".strip()


_TEMPLATES = (
    "I understand, we offer {a} and {b} for you today.",
    "Sorry, our {a} and {b} are free for you.",
    "We offer {a}, {b} and a discount for you.",
)


def _cue_template(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    cues = ("phone", "contact", "wechat", "specialist", "consultation", "discount", "offer", "plan")
    a, b = rng.sample(cues, 2)
    return rng.choice(_TEMPLATES).format(a=a, b=b)


def _cue_salad(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    theirs = [w.strip(".,!?") for w in last_heard(observation).split()][:4]
    return " ".join([*theirs, "yes", "free", "phone", "wechat", "sorry"])


def _monologue(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    facts = merchant_facts(observation) or ["we are happy to help"]
    return " ".join(
        [f"Good news: {_fact(observation, turn)}.", CONTACT, "I understand, no pressure at all."]
        + [f"Also, {fact}." for fact in facts]
        + ["What matters most to you?", "This offer ends today, don't miss it!"]
    )


def _merchant_fact_stuffing(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    if turn == 1:
        return VOCABULARY.opener
    return ", ".join(merchant_facts(observation) or VOCABULARY.facts)


def _fact_contact_script(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return f"Good news: {_fact(observation, turn)}. {CONTACT}"


CONTACT_PHRASINGS = (
    "Could you share your phone so we can follow up?",
    "Leave your WeChat and our specialist will reach out.",
    "What's your number, so a specialist can call?",
    "May we call you back later this week?",
    "Please send your contact details to us.",
)


def _contact_rotation(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    return CONTACT_PHRASINGS[(turn - 1) % len(CONTACT_PHRASINGS)]


def _facts_then_contacts(observation: dict[str, Any], turn: int, rng: random.Random) -> str:
    facts = merchant_facts(observation)
    if turn <= len(facts):
        return f"Good news: {facts[turn - 1]}."
    return _contact_rotation(observation, turn, rng)


def _dmbench_policies() -> list[AuditPolicy]:
    says = [
        ("mirror_cue", "degenerate", "the user's last line said back, plus a contact request", _mirror_cue),
        ("cue_template", "degenerate", "a fluent template with cue words slotted in, every turn", _cue_template),
        ("cue_salad", "degenerate", "the user's words plus cue words, as a list", _cue_salad),
        ("monologue", "degenerate", "every act and every merchant fact in one long turn", _monologue),
        ("merchant_fact_stuffing", "degenerate", "opener, then the merchant's facts pasted as a list", _merchant_fact_stuffing),
        ("fact_contact_script", "blind", "a merchant fact and a contact request every turn, never reading the user", _fact_contact_script),
        ("contact_rotation", "blind", "a contact request every turn in rotating fluent phrasings", _contact_rotation),
        ("facts_then_contacts", "blind", "each merchant fact once, then rotating contact requests", _facts_then_contacts),
    ]
    return [AuditPolicy(name, kind, what, (lambda say=say: TextPolicy(say, str))) for name, kind, what, say in says]


DMBENCH_CEILING_DESCRIPTION = "plans each turn with the user's public intent-dynamics model, reading its level off its reply"
"""DMBench-Assistant-v0's fair ceiling, ``planner`` (:class:`~dialogue_gym.scenarios.tracer.assistants.PlannerAssistant`)."""


def audits() -> list[ScenarioAudit]:
    """DMBench-Assistant-v0's audit."""
    return [
        ScenarioAudit(
            env_id="DMBench-Assistant-v0",
            learner="assistant",
            score="cr",
            score_kind="rate",
            baseline="sop",
            fair_order=("random", "sop"),
            policies=(*generic_policies(VOCABULARY), *_dmbench_policies()),
            ceiling={"planner": DMBENCH_CEILING_DESCRIPTION},
        )
    ]


# -- TRACER-UserSim-v0: the user is the learner -----------------------------------------------

TRACER_MARGIN = 0.05
"""How far below the best fair scripted user every degenerate user's mean TRACER reward must stay.

The reward is ``0.2 R_fmt + 0.5 R_final + 0.3 R_traj`` in [0, 1]. A well-formed user that always
lands on the most common final level earns 0.2 + 0.5 x P(that level) + 0.3 x R_traj without
reading anything, so the bound is relative to the best fair user, not to zero. 0.05 is one tenth of
R_final's weight: a degenerate user must miss the reference's final level in at least one session in
ten more than the best fair user (or lose the equivalent in format or trajectory), which is well
outside the 600-episode noise of the mean reward (its standard error is about 0.01)."""

_LINE = "Okay, tell me more about it."
_SALAD_WORDS = ("price", "phone", "free", "wechat", "appointment", "discount", "yes", "number")


def _user(reply: str, level: int, think: str = "") -> str:
    return render_user_output(reply, level, think)


def _tracer_says() -> list[tuple[str, str, str, Any]]:
    def echo(o, t, r):
        return _user(last_heard(o), 3)

    def salad(o, t, r):
        return _user(" ".join(r.sample(_SALAD_WORDS, 4) + [made_up_word(r), made_up_word(r)]), r.choice((2, 3, 4)))

    def made_up(o, t, r):
        return _user(" ".join(made_up_word(r) for _ in range(6)), r.choice((2, 3)))

    def keywords(o, t, r):
        return _user(" ".join(_SALAD_WORDS), 4 if t < 3 else 5, "interested price phone wechat")

    def schedule(o, t, r):
        # The reference sessions' most common shape: warm up, then convert; never reads the assistant.
        levels = (3, 3, 4, 4, 5)
        level = levels[min(t, len(levels)) - 1]
        replies = {3: "What does it cost?", 4: "Where are you exactly?", 5: "My phone number is 138xxxx1234."}
        return _user(replies[level], level, "I am getting interested.")

    return [
        ("empty", "degenerate", "an empty output every turn", lambda o, t, r: ""),
        ("echo", "degenerate", "says the assistant's last line back, at level 3", echo),
        ("fixed_line", "degenerate", "one reply at level 3 every turn", lambda o, t, r: _user(_LINE, 3)),
        ("made_up_words", "degenerate", "six made-up words a turn, levels 2-3", made_up),
        ("word_salad", "degenerate", "four cue words and two made-up words a turn, levels 2-4", salad),
        ("keyword_stuffing", "degenerate", "every cue word in one reply, then converts on turn 3", keywords),
        ("hang_up", "degenerate", "leaves at once (level 0, empty reply)", lambda o, t, r: _user("", 0)),
        ("constant_level", "degenerate", "a well-formed reply at level 2 every turn", lambda o, t, r: _user("Not sure yet.", 2)),
        ("fixed_schedule", "blind", "a fluent fixed schedule 3, 3, 4, 4, 5 that never reads the assistant", schedule),
    ]


TRACER_CEILING_DESCRIPTION = "samples the references' generating model (less its hidden per-merchant effects); no stronger fair user found"
"""TRACER-UserSim-v0's fair ceiling is its scripted baseline: the synthetic references are drawn from the same
intent-dynamics model plus per-merchant effects the user cannot see. Variants tried scored below it over 200
open episodes (seed 0): the model's most likely level every turn 0.506, sharper (logits / 0.8) 0.585, flatter
(/ 1.25) 0.568, against 0.589."""


def tracer_audits() -> list[ScenarioAudit]:
    """TRACER-UserSim-v0's audit."""
    policies = tuple(AuditPolicy(name, kind, what, (lambda say=say: TextPolicy(say, str))) for name, kind, what, say in _tracer_says())
    return [
        ScenarioAudit(
            env_id="TRACER-UserSim-v0",
            learner="user",
            score="reward",
            score_kind="reward",
            baseline="scripted",
            fair_order=("flat", "random", "scripted"),
            policies=policies,
            reward_margin=TRACER_MARGIN,
            margin_rationale="one tenth of R_final's weight, about five standard errors of a 600-episode mean",
            ceiling={"scripted": TRACER_CEILING_DESCRIPTION},
        )
    ]
