"""Scripted simulated users: the embedded intent-dynamics user (default) and baseline simulators.

Each picks an intent level, then renders a reply and a rationale from the templates in
``data/replies.json`` and emits TRACER's format, exactly what an LLM simulator emits:
``<think>...</think><intent_level>z</intent_level><reply>...</reply>``.

* ``scripted``: :class:`IntentDynamicsUser`, levels drawn from the intent-dynamics model
  (:mod:`dialogue_gym.scenarios.tracer.dynamics`) with the packaged weights, reacting to what it
  understood of the assistant's last turn (:mod:`dialogue_gym.scenarios.tracer.acts`,
  ``data/UNDERSTANDING.md``);
* ``random``: a uniform level each turn; ``flat``: level 3 every turn (never decides; times out);
* ``eager``: 3, 4, then 5 (over-compliant); ``reluctant``: 2, 1, then 0 (over-refusing) -- the two
  failure modes the paper reports for general LLM simulators.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from dialogue_gym.scenarios.tracer.data import LEVELS, load_replies
from dialogue_gym.scenarios.tracer.dynamics import IntentDynamics, draw_level
from dialogue_gym.scenarios.tracer.parsing import parse_user_output, render_user_output
from dialogue_gym.simulators.base import ScriptedPolicy


def _pick(rng: random.Random, options: list[str]) -> str:
    return options[rng.randrange(len(options))]


def render_reply(level: int, profile: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """``(reply, rationale)`` for ``level`` in this episode's industry and persona (templates, seeded).

    The contact numbers are drawn with ``rng._randbelow``, the draw ``randint(a, b)`` makes as
    ``a + _randbelow(b - a + 1)`` and ``choice(seq)`` as ``seq[_randbelow(len(seq))]`` (through one
    more frame, ``randrange``): the same stream, and 4 of the 6 draws a scripted user makes a turn
    without 2 Python frames each (test_tracer_policies.py holds replies and stream equal to the plain
    draws')."""
    data = load_replies()
    by_industry = data["replies"][str(level)]
    industry = profile.get("merchant", {}).get("industry")
    reply = _pick(rng, by_industry.get(industry) or by_industry.get("any") or next(iter(by_industry.values())))
    user = profile.get("user", {})
    need = str(user.get("initial_intent", "need this")).rstrip(".")
    below = rng._randbelow
    fields = {
        "phone": f"1{30 + below(60)}xxxx{1000 + below(9000)}",
        "wechat": f"user{100 + below(900)}{'abcdefgh'[below(8)]}",
        "need_short": need if len(need) < 60 else "have a concrete need",
        "merchant": profile.get("merchant", {}).get("name", "the merchant"),
    }
    reply = reply.format(**fields)
    if user.get("personality") == "impatient and direct" and reply.endswith((".", "?")) and rng.random() < 0.5:
        reply = reply[:-1]
    rationale = _pick(rng, data["rationales"][str(level)]).format(**fields)
    return reply, rationale


class TemplateUser(ScriptedPolicy):
    """Base of the scripted users: subclasses choose the level; replies come from the templates."""

    def level(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> int:
        raise NotImplementedError

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        level = self.level(observation, info, memory)
        reply, rationale = render_reply(level, memory["profile"], self.rng(memory))
        return render_user_output(reply, level, rationale)


class IntentDynamicsUser(TemplateUser):
    """Draws each level from an :class:`~dialogue_gym.scenarios.tracer.dynamics.IntentDynamics` model."""

    def __init__(self, dynamics: IntentDynamics | None = None):
        self.dynamics = dynamics if dynamics is not None else IntentDynamics.from_file()

    def context(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> np.ndarray:
        """The feature vector of this decision (what the level is drawn from)."""
        heard = [m["content"] for m in observation["messages"] if m["role"] == "user"]
        own = [m["content"] for m in observation["messages"] if m["role"] == "assistant"]
        said = [parse_user_output(own[-1], LEVELS // 2).reply] if own else []
        levels = info.get("intent_trajectory") or []
        return self.dynamics.feature_map.features(
            memory["profile"], heard, levels[-1] if levels else None, int(observation["turn"]), said
        )

    def logits(self, x: np.ndarray, memory: dict[str, Any]) -> np.ndarray:
        return x @ self.dynamics.weights

    def level(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> int:
        return draw_level(self.logits(self.context(observation, info, memory), memory), self.rng(memory))


class RandomUser(TemplateUser):
    def level(self, observation, info, memory) -> int:
        return self.rng(memory).randrange(LEVELS)


class FlatUser(TemplateUser):
    def level(self, observation, info, memory) -> int:
        return 3


class ScheduleUser(TemplateUser):
    """Follows a fixed level schedule, repeating its last entry."""

    def __init__(self, schedule: tuple[int, ...]):
        self.schedule = schedule

    def level(self, observation, info, memory) -> int:
        return self.schedule[min(int(observation["turn"]), len(self.schedule) - 1)]


def eager_user() -> ScheduleUser:
    return ScheduleUser((3, 4, 5))


def reluctant_user() -> ScheduleUser:
    return ScheduleUser((2, 1, 0))
