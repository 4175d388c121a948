"""Scripted assistants: TRACER's fixed SOP assistant and DM-Bench's baseline agents.

All read only the user's words (never the intent level) and compose short turns from the phrase
pools in ``data/sop.json``, filling ``{fact}`` with the merchant's facts, each fact once and the
one the user's last reply is about first: when every fact has been said, a turn that would state
one probes instead (a restated fact is a repeat to the user, see ``data/UNDERSTANDING.md``).

* ``sop``: the fixed SOP -- answer a question with a fact and ask for contact; soothe a negative
  reply with empathy and a benefit; otherwise probe the need and ask for contact every other turn.
* ``consultative``: answers, probes, and asks for contact only once the user shows a concrete need.
* ``empathetic``: warm and informative, never asks for contact (good responses, few conversions).
* ``pushy``: asks for contact with urgency every turn.
* ``random``: random acts.
"""

from __future__ import annotations

import re
from typing import Any

from dialogue_gym.scenarios.tracer.acts import fact_overlaps
from dialogue_gym.scenarios.tracer.data import load_phrases
from dialogue_gym.simulators.base import ScriptedPolicy

FACT_ACTS = ("answer", "benefit")
"""Acts whose phrases state a merchant fact (``{fact}``)."""
_CONCRETE = re.compile(r"where|how much|book|appointment|start|call me|wechat|number|monthly|trade|tomorrow|saturday|fee", re.IGNORECASE)


class PhraseAssistant(ScriptedPolicy):
    """Base: ``acts(...)`` names the acts of the turn; phrases come from ``data/sop.json``."""

    def acts(self, reply: str, turn: int, memory: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        reply = observation["messages"][-1]["content"]
        acts = self.acts(reply, int(observation["turn"]), memory)
        facts = memory["profile"].get("merchant", {}).get("facts") or ()
        if len(memory.get("facts_said", ())) >= len(facts):
            # Every fact has been said: restating one is no answer (the user hears a repeat), so probe.
            acts = list(dict.fromkeys("probe" if act in FACT_ACTS else act for act in acts))
        memory["reply"] = reply
        return " ".join(self.phrase(act, memory) for act in acts)

    @staticmethod
    def negative(reply: str) -> bool:
        return bool(re.search(load_phrases()["negative_cues"], reply.strip(), re.IGNORECASE))

    def phrase(self, act: str, memory: dict[str, Any]) -> str:
        """The next phrasing of ``act`` (rotating, so a scripted assistant does not repeat itself verbatim)."""
        merchant = memory["profile"].get("merchant", {})
        pool = load_phrases()["phrases"][act]
        if isinstance(pool, dict):
            pool = pool.get(merchant.get("industry")) or next(iter(pool.values()))
        counts = memory.setdefault("used", {})
        count = counts.get(act, 0)
        counts[act] = count + 1
        text = pool[count % len(pool)]
        if "{fact}" in text:
            text = text.replace("{fact}", self.next_fact(merchant, memory))
        return text.replace("{merchant}", merchant.get("name", "us"))

    @staticmethod
    def next_fact(merchant: dict[str, Any], memory: dict[str, Any]) -> str:
        """The unsaid merchant fact that shares most words with the user's last reply (the SOP's
        "answer the user's question with a fact"), else the first unsaid one; once all are said,
        they cycle."""
        facts = tuple(merchant.get("facts") or ["we are happy to help"])
        said = memory.setdefault("facts_said", [])
        unsaid = [i for i in range(len(facts)) if i not in said]
        if not unsaid:
            return facts[len(said) % len(facts)]
        overlaps = fact_overlaps(memory.get("reply", ""), facts)
        choice = max(unsaid, key=lambda i: (overlaps[i], -i))
        said.append(choice)
        return facts[choice]


class SopAssistant(PhraseAssistant):
    def acts(self, reply: str, turn: int, memory: dict[str, Any]) -> list[str]:
        if "?" in reply:
            return ["answer", "contact"]
        if self.negative(reply):
            return ["empathy", "benefit"]
        return ["probe"] if turn % 2 == 1 else ["answer", "contact"]


class ConsultativeAssistant(PhraseAssistant):
    def acts(self, reply: str, turn: int, memory: dict[str, Any]) -> list[str]:
        concrete = bool(_CONCRETE.search(reply))
        if self.negative(reply):
            return ["empathy", "answer"]
        if "?" in reply:
            return ["answer", "contact"] if concrete else ["answer", "probe"]
        return ["contact"] if concrete else ["probe"]


class EmpatheticAssistant(PhraseAssistant):
    def acts(self, reply: str, turn: int, memory: dict[str, Any]) -> list[str]:
        return ["empathy", "answer"] if self.negative(reply) or "?" in reply else ["empathy", "probe"]


class PushyAssistant(PhraseAssistant):
    def acts(self, reply: str, turn: int, memory: dict[str, Any]) -> list[str]:
        return ["urgency", "contact"]


class RandomAssistant(PhraseAssistant):
    POOL = ("answer", "probe", "contact", "empathy", "benefit", "urgency", "filler", "closing")

    def acts(self, reply: str, turn: int, memory: dict[str, Any]) -> list[str]:
        rng = self.rng(memory)
        return rng.sample(self.POOL, rng.randint(1, 2))
