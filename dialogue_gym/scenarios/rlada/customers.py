"""The scripted adversarial customer: speaks one or two sentences per turn, never names its intent,
never speaks as the bank, at one of three concealment levels.

* ``direct``: says plainly what happened, with the facts (and repeats it when asked);
* ``vague``: says something is off without saying what; when asked, gives facts but not the
  problem; reveals the problem only after ``reveal_after["vague"]`` questions;
* ``camouflage`` (RL-ADA's *contextual camouflage*): buries the problem in realistic detail
  (merchant names, amounts, what happened that day) with side worries that point at other tools;
  reveals it plainly after ``reveal_after["camouflage"]`` questions.

The ``contextual`` customer (:class:`ScriptedCustomer` with ``side_worry_first=True``) is camouflage
that always opens the way RL-ADA's trained customer wins (the paper's section 5.3 and appendix C.1):
a hedged worry about another tool's problem (``customer.json["side_worries"]``) beside a hint of its
own problem, so a router that acts on the first cue acts on the worry; after that it plays camouflage.
It tells the truth (the worry is voiced as a worry, its own problem is in the story), so it is the
strongest fair scripted customer, the one the customer-side exploit audit measures attackers against.

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
from dialogue_gym.scenarios.rlada.reading import misdirection, own_tools, read_agent_turn, repeats_itself
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
    reaction = react(domain, memory, observation)
    if reaction is not None:
        return reaction
    asked = memory["questions"]
    reveal = phrasing["reveal_after"]
    if style == "direct" or (style in reveal and asked >= reveal[style]):
        prefix = phrasing["direct_followup_prefix"][rng.randrange(len(phrasing["direct_followup_prefix"]))]
        return _restate(render(_pick(rng, intent.direct, memory), facts), prefix)
    kind = "hint" if style == "vague" else "camouflage_followup"
    return render(_pick(rng, family_lines(domain, intent, kind), memory), facts)


def react(domain: Domain, memory: dict[str, Any], observation: dict[str, Any]) -> str | None:
    """The customer's reaction to the agent's last turn when it is not a real question (confusion, an
    acknowledgement) or one question too many (a hang-up); None when the customer answers a question
    (counted in ``memory["questions"]``)."""
    rng, phrasing, messages = memory["rng"], domain.customer, observation["messages"]
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
    if memory["questions"] > phrasing["patience"]:
        return _pick(rng, phrasing["hangups"], memory)
    return None


def side_worry_opener(domain: Domain, memory: dict[str, Any]) -> str | None:
    """The contextual customer's first turn: a hedged worry about the problem of a tool outside the
    intent's :func:`~dialogue_gym.scenarios.rlada.reading.own_tools`, then the family's hint line (two
    sentences). None when ``side_worries`` has no line for any other tool."""
    rng, intent, facts = memory["rng"], memory["intent"], memory["facts"]
    worries = domain.customer.get("side_worries", {})
    tools = [tool for tool in sorted(worries) if worries[tool] and tool not in own_tools(intent, domain)]
    if not tools:
        return None
    worry = _pick(rng, worries[tools[rng.randrange(len(tools))]], memory)
    return render(worry, facts) + " " + render(_pick(rng, family_lines(domain, intent, "hint"), memory), facts)


class ScriptedCustomer(ScriptedPolicy):
    """Plays the customer at a fixed concealment ``level``, or at the episode profile's level (``None``);
    ``side_worry_first`` opens every call with :func:`side_worry_opener` (the ``contextual`` customer)."""

    def __init__(self, domain: Domain, level: str | None = None, side_worry_first: bool = False):
        if level is not None and level not in LEVELS:
            raise ConfigError(f"level={level!r} is not a concealment level; use one of {list(LEVELS)} or None (the profile's).")
        if side_worry_first and not any(domain.customer.get("side_worries", {}).values()):
            raise ConfigError(
                "side_worry_first=True needs side-worry lines: add a 'side_worries' object (tool -> lines) to the "
                "data folder's customer.json, or use side_worry_first=False."
            )
        self.domain = domain
        self.level = level
        self.side_worry_first = side_worry_first

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return start_memory(self.domain, profile, seed)

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        said = [m["content"] for m in observation["messages"] if m["role"] == "assistant"]
        if self.side_worry_first and not said:
            opener = side_worry_opener(self.domain, memory)
            if opener is not None:
                return opener
        line = customer_turn(self.domain, memory, self.level or memory["profile"]["concealment"], observation)
        if self.side_worry_first and repeats_itself(line, said, self.domain):
            return self._elaborate(memory, said) or line
        return line

    def _elaborate(self, memory: dict[str, Any], said: list[str]) -> str | None:
        """A camouflage follow-up can near-repeat the hint the contextual opener already said: tell more
        of the story instead, from the family's camouflage lines that carry no side worry (a second worry
        would invent a problem), or, when every one would repeat too, the problem plainly."""
        intent, facts = memory["intent"], memory["facts"]
        stories = {line: render(line, facts) for line in family_lines(self.domain, intent, "camouflage")}
        plain = {line: _restate(render(line, facts), "Like I said, ") for line in intent.direct}
        for options in (stories, plain):
            fresh = [
                template for template, line in options.items()
                if not repeats_itself(line, said, self.domain) and not misdirection(line, intent, self.domain).worried
                and not misdirection(line, intent, self.domain).asserted
            ]
            if fresh:
                return options[_pick(memory["rng"], fresh, memory)]
        return None


def withheld_story(domain: Domain, intent: Intent) -> tuple[tuple[str, ...], ...]:
    """The line sets of ``customer.json["withholding"]["stories"]`` that fit ``intent``'s family (each
    also fits intents of another tool)."""
    stories = domain.customer.get("withholding", {}).get("stories", ())
    return tuple(tuple(story["lines"]) for story in stories if intent.family in story["families"])


class WithholdingCustomer(ScriptedCustomer):
    """RLADA-Banking-v1's customer: the scripted customer, except that at a withholding level
    (``customer.json["withholding"]["levels"]``: vague and camouflage) a caller whose problem a
    withholding story fits never states it. It opens with one of the story's lines, true of its own
    problem and of a problem another tool serves (the paper's ambiguous-intent scenarios: a charge
    that may be a dispute or fraud, a transfer that may be pending or still to make), answers every
    real question with another, and hangs up after ``patience`` questions like any caller. So no agent
    can tell the tool from its words alone on those calls. Every other call plays as ``scripted``."""

    def __init__(self, domain: Domain):
        if not domain.customer.get("withholding"):
            raise ConfigError(
                "the withholding customer needs a 'withholding' object (levels, stories) in the data folder's "
                "customer.json; use customer='scripted' for a data folder without one."
            )
        super().__init__(domain)

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        memory = start_memory(self.domain, profile, seed)
        stories = withheld_story(self.domain, memory["intent"])
        if stories and profile["concealment"] in self.domain.customer["withholding"]["levels"]:
            memory["story"] = stories[memory["rng"].randrange(len(stories))]
        return memory

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        if "story" not in memory:
            return super().act(observation, info, memory)
        if any(m["role"] == "assistant" for m in observation["messages"]):
            reaction = react(self.domain, memory, observation)
            if reaction is not None:
                return reaction
        return render(_pick(memory["rng"], memory["story"], memory), memory["facts"])
