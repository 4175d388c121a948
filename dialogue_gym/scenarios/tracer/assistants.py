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
from functools import lru_cache
from typing import Any

from dialogue_gym.scenarios.tracer.acts import fact_overlaps
from dialogue_gym.scenarios.tracer.data import load_phrases
from dialogue_gym.scenarios.tracer.judges import sounds_negative
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
        # The judge's memoised reading of the same cues (a scripted user's replies repeat): searching the
        # long alternation afresh each turn cost 1.1% of the instructions of a DM-Bench assistant turn.
        return sounds_negative(reply.strip())

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


PLAN_ACTS: tuple[tuple[str, ...], ...] = (
    ("answer",), ("probe",), ("contact",), ("empathy",), ("benefit",),
    ("answer", "contact"), ("answer", "probe"), ("empathy", "benefit"), ("empathy", "answer"), ("benefit", "contact"), ("probe", "contact"),
)
"""The turns the planning assistant weighs: one or two acts of the SOP's phrase pools."""
LEVEL_VALUE = (-3.0, 0.0, 0.0, 0.0, 0.0, 1.0)
"""What each next intent level is worth to the planner: the chance of contact (5) now less three times the
chance the user leaves (0). Chosen among six tried weightings on the first 200 open starts (seed 0);
the gains of the others were within 0.03 CR of it."""


def reply_level(reply: str, industry: str | None) -> int | None:
    """The intent level whose public reply template (``data/replies.json``) rendered ``reply``: of the
    templates that could have, the one with the most literal text; ``None`` when none could. A slot
    matches what the scripted users put there (:data:`SLOT_PATTERNS`): a bare ``{phone}`` template is a
    number, so a reply no template renders (an LLM user's) reads as no level, not as contact given."""
    from dialogue_gym.scenarios.tracer.data import load_replies

    best: tuple[int, int] | None = None
    for level, by_industry in load_replies()["replies"].items():
        templates = by_industry.get(industry or "") or by_industry.get("any") or [line for lines in by_industry.values() for line in lines]
        for template in templates:
            if _template_pattern(template).fullmatch(reply.strip()):
                literal = len(re.sub(r"\{[a-z_]+\}", "", template))
                if best is None or literal > best[0]:
                    best = (literal, int(level))
    return None if best is None else best[1]


SLOT_PATTERNS = {"phone": r"\+?\d[\dx()\- ]{4,}[\dx]", "wechat": r"[A-Za-z0-9_\-]{3,}"}
"""What a reply template's slot may hold when :func:`reply_level` reads it: a phone number's digits (the
scripted users write ``138xxxx1234``) and a WeChat id's word; any other slot (``{need_short}``,
``{merchant}``) holds any text."""


@lru_cache(maxsize=1024)
def _template_pattern(template: str) -> re.Pattern[str]:
    pieces = re.split(r"\{([a-z_]+)\}", template.rstrip(".?"))
    literals, slots = pieces[0::2], pieces[1::2]
    pattern = re.escape(literals[0])
    for slot, literal in zip(slots, literals[1:]):
        pattern += f"(?:{SLOT_PATTERNS.get(slot, '.+?')})" + re.escape(literal)
    return re.compile(pattern + r"[.?]?", re.DOTALL)


class PlannerAssistant(PhraseAssistant):
    """DM-Bench's fair ceiling: plans each turn with the user's public intent-dynamics model
    (``data/user_dynamics.json`` and :mod:`~dialogue_gym.scenarios.tracer.dynamics`). It reads the
    user's last level off its reply (the reply templates are public: :func:`reply_level`), renders each
    turn of :data:`PLAN_ACTS` as it would say it, and says the one whose next-level distribution is worth
    most (:data:`LEVEL_VALUE`). The user's persona (personality, need) is unknown to it: those features
    stay off. Reads only its observation and the merchant it works for."""

    def __init__(self) -> None:
        from dialogue_gym.scenarios.tracer.dynamics import IntentDynamics

        self.dynamics = IntentDynamics.from_file()

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        import copy

        from dialogue_gym.scenarios.tracer.dynamics import softmax

        merchant = memory["profile"].get("merchant", {})
        heard = [m["content"] for m in observation["messages"] if m["role"] == "user"]
        said = [m["content"] for m in observation["messages"] if m["role"] == "assistant"]
        previous = reply_level(heard[-1], merchant.get("industry")) if heard else None
        known = {"merchant": merchant}
        utterances = [merchant.get("greeting", ""), *said]

        def worth(acts: tuple[str, ...]) -> tuple[float, str]:
            trial = copy.deepcopy({key: value for key, value in memory.items() if key != "rng"})
            trial["reply"] = heard[-1] if heard else ""
            text = " ".join(self.phrase(act, trial) for act in acts)
            x = self.dynamics.feature_map.features(known, [*utterances, text], previous, len(heard), heard[-1:])
            return float(softmax(x @ self.dynamics.weights) @ LEVEL_VALUE), text

        best = max(PLAN_ACTS, key=lambda acts: worth(acts)[0])
        memory["reply"] = heard[-1] if heard else ""
        return " ".join(self.phrase(act, memory) for act in best)
