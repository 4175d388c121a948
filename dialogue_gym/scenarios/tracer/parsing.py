"""Parsers for what the two roles emit.

User (the simulator): ``<think>rationale</think><intent_level>z</intent_level><reply>text</reply>``, z in
0..5. Anything else is read leniently (tags in another order or missing, the same fields as JSON),
flagged, and scores 0 on the format reward. Field consistency is part of the format: only a level-0
reply may be empty, and a level-5 reply must carry contact information (TRACER's annotation rule).
Assistant: plain text (an optional ``<response>`` tag or ``{"response": ...}`` is unwrapped).
Parsers never raise on model output: they return what they could read plus a ``problem`` string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from dialogue_gym.scenarios.common import clean_utterance, to_int
from dialogue_gym.scenarios.tracer.data import CONVERSION_LEVEL, DROPOUT_LEVEL, LEVELS

USER_FORMAT = "<think>...</think><intent_level>z</intent_level><reply>...</reply>"
_CANONICAL = re.compile(
    r"\s*<think>(.*?)</think>\s*<intent_level>\s*(\d)\s*</intent_level>\s*<reply>(.*?)</reply>\s*", re.DOTALL
)
_TAG = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)
_ANY_TAG = re.compile(r"</?\w+>")
_CONTACT = re.compile(r"\d{5,}|\d{3}x+\d{3,}|wechat|\bwx\b|@", re.IGNORECASE)


@dataclass(frozen=True)
class UserMove:
    reply: str
    intent_level: int
    think: str
    format_ok: bool
    problem: str | None = None


def _consistency(reply: str, level: int) -> str | None:
    if not reply and level != DROPOUT_LEVEL:
        return f"empty reply with intent level {level} (only a level-0 reply may be empty)"
    if level == CONVERSION_LEVEL and not _CONTACT.search(reply):
        return "intent level 5 without contact information in the reply"
    return None


@lru_cache(maxsize=16384)
def parse_user_output(text: str, fallback_level: int) -> UserMove:
    """Read one simulator turn. An unreadable or out-of-range level becomes ``fallback_level``. Pure and memoised."""
    canonical = _CANONICAL.fullmatch(text)
    if canonical is not None:
        think, level_text, reply = canonical.groups()
        level = int(level_text)
        reply = " ".join(reply.split())
        if level < LEVELS:
            problem = _consistency(reply, level)
            return UserMove(reply, level, think.strip(), problem is None, problem)
    problems = [f"output does not match {USER_FORMAT}"]
    stripped = text.strip()
    fields: dict[str, object] = {}
    if stripped.startswith("{"):
        try:
            loaded = json.loads(stripped)
        except json.JSONDecodeError:
            loaded = None
        if isinstance(loaded, dict):
            fields = loaded
    if not fields:
        fields = {name: value.strip() for name, value in _TAG.findall(text)}
    if "reply" in fields and isinstance(fields["reply"], str):
        reply = fields["reply"]
    else:
        reply = _ANY_TAG.sub(" ", text) if not stripped.startswith("{") else ""
        problems.append("no reply field; the text outside tags is used")
    reply = " ".join(reply.split())
    level = to_int(fields.get("intent_level"))
    if level is None or not 0 <= level < LEVELS:
        problems.append(f"intent_level {fields.get('intent_level')!r} is not an int 0-{LEVELS - 1}; kept {fallback_level}")
        level = fallback_level
    consistency = _consistency(reply, level)
    if consistency:
        problems.append(consistency)
    think = fields.get("think", "")
    return UserMove(reply, level, think if isinstance(think, str) else str(think), False, "; ".join(problems))


def render_user_output(reply: str, level: int, think: str = "") -> str:
    """The simulator's canonical output (the inverse of :func:`parse_user_output`)."""
    return f"<think>{think}</think><intent_level>{level}</intent_level><reply>{reply}</reply>"


@dataclass(frozen=True)
class AssistantMove:
    utterance: str
    problem: str | None = None


@lru_cache(maxsize=16384)
def parse_assistant_output(text: str, max_chars: int = 2000) -> AssistantMove:
    """Read one assistant turn: plain text, or the content of ``<response>`` / JSON ``response``."""
    stripped = text.strip()
    utterance = stripped
    problems: list[str] = []
    tagged = re.search(r"<response>(.*?)</response>", stripped, re.DOTALL)
    if tagged:
        utterance = tagged.group(1)
    elif stripped.startswith("{"):
        try:
            loaded = json.loads(stripped)
        except json.JSONDecodeError:
            loaded = None
        if isinstance(loaded, dict) and isinstance(loaded.get("response"), str):
            utterance = loaded["response"]
    utterance = clean_utterance(utterance, problems, max_chars)
    return AssistantMove(utterance, "; ".join(problems) or None)
