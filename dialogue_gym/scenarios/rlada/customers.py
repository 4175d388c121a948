"""The scripted adversarial customer: speaks one or two sentences per turn, never names its intent,
never speaks as the bank, at one of three concealment levels.

* ``direct``: says plainly what happened, with the facts (and repeats it when asked);
* ``vague``: says something is off without saying what; when asked, gives facts but not the
  problem; reveals the problem only after ``reveal_after["vague"]`` questions;
* ``camouflage`` (RL-ADA's *contextual camouflage*): buries the problem in realistic detail
  (merchant names, amounts, what happened that day) with side worries that point at other tools;
  reveals it plainly after ``reveal_after["camouflage"]`` questions.

The customer reacts to what the agent's turn means (:func:`~dialogue_gym.scenarios.rlada.reading.read_agent_turn`),
not to a ``"?"``: only a real, on-topic clarifying question counts as a question and earns
disclosure; a statement gets an acknowledgement; a confusing turn (not understood, content-free,
an echo of the customer, a near-repeat, off topic, a monologue) gets a confused reply and no
disclosure, and more than ``confusion_patience`` of them, or more than ``patience`` questions,
and the customer hangs up. :func:`customer_turn` renders one turn in a given style; the scripted
customer fixes the style, the trainer's strategy customer chooses it per turn.
"""

from __future__ import annotations

import random
from typing import Any

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.rlada.data import LEVELS, Domain, Intent
from dialogue_gym.scenarios.rlada.prompts import render
from dialogue_gym.scenarios.rlada.reading import read_agent_turn
from dialogue_gym.simulators.base import ScriptedPolicy


def family_lines(domain: Domain, intent: Intent, kind: str) -> tuple[str, ...]:
    """The intent's own ``kind`` lines (``hint``, ``camouflage``, ``camouflage_followup``) or its family's."""
    return intent.phrasing.get(kind) or tuple(domain.customer["families"][intent.family][kind])


def _pick(rng: random.Random, options: tuple[str, ...] | list[str], memory: dict[str, Any]) -> str:
    """A random option, preferring ones not yet said in this episode."""
    said = memory.setdefault("said", set())
    fresh = [option for option in options if option not in said] or list(options)
    choice = fresh[rng.randrange(len(fresh))]
    said.add(choice)
    return choice


def _restate(line: str, prefix: str) -> str:
    if line.startswith(("{", "I ", "I'")):
        return prefix + line
    return prefix + line[0].lower() + line[1:]


def start_memory(domain: Domain, profile: dict[str, Any], seed: int) -> dict[str, Any]:
    return {
        "rng": random.Random(seed), "intent": domain.intent(profile["intent"]), "facts": profile["facts"],
        "questions": 0, "confused": 0, "profile": profile,
    }


def customer_turn(domain: Domain, memory: dict[str, Any], style: str, observation: dict[str, Any], variant: int | None = None) -> str:
    """The customer's next utterance in ``style`` (one of :data:`LEVELS`); ``variant`` picks which
    camouflage opening to use (default: a random one)."""
    rng, intent, facts = memory["rng"], memory["intent"], memory["facts"]
    phrasing = domain.customer
    messages = observation["messages"]
    spoken_before = any(m["role"] == "assistant" for m in messages)
    if not spoken_before:
        if style == "direct":
            return render(_pick(rng, intent.direct, memory), facts)
        if style == "vague":
            return render(_pick(rng, intent.vague, memory), facts)
        lines = family_lines(domain, intent, "camouflage")
        if variant is not None:
            return render(lines[variant % len(lines)], facts)
        return render(_pick(rng, lines, memory), facts)
    agent_said = messages[-1]["content"] if messages[-1]["role"] == "user" else ""
    heard = [m["content"] for m in messages if m["role"] == "assistant"]
    said = [m["content"] for m in messages[1:-1] if m["role"] == "user"]
    reading = read_agent_turn(agent_said, heard, said, domain)
    if reading.confusing:
        memory["confused"] = memory.get("confused", 0) + 1
        if memory["confused"] > phrasing["confusion_patience"]:
            return _pick(rng, phrasing["confused_hangups"], memory)
        return _pick(rng, phrasing["confused"][reading.kind], memory)
    if reading.kind == "statement":
        return _pick(rng, phrasing["acknowledgements"], memory)
    memory["questions"] += 1
    asked = memory["questions"]
    if asked > phrasing["patience"]:
        return _pick(rng, phrasing["hangups"], memory)
    reveal = phrasing["reveal_after"]
    if style == "direct" or (style in reveal and asked >= reveal[style]):
        prefix = phrasing["direct_followup_prefix"][rng.randrange(len(phrasing["direct_followup_prefix"]))]
        return _restate(render(_pick(rng, intent.direct, memory), facts), prefix)
    kind = "hint" if style == "vague" else "camouflage_followup"
    return render(_pick(rng, family_lines(domain, intent, kind), memory), facts)


class ScriptedCustomer(ScriptedPolicy):
    """Plays the customer at a fixed concealment ``level``, or at the episode profile's level (``None``)."""

    def __init__(self, domain: Domain, level: str | None = None):
        if level is not None and level not in LEVELS:
            raise ConfigError(f"level={level!r} is not a concealment level; use one of {list(LEVELS)} or None (the profile's).")
        self.domain = domain
        self.level = level

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return start_memory(self.domain, profile, seed)

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        return customer_turn(self.domain, memory, self.level or memory["profile"]["concealment"], observation)
