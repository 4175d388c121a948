"""Parsers for what the two RL-ADA roles emit. They never raise on model output: they return what
they could read plus a ``problem`` string.

Support agent: one JSON object ``{"thinking", "action_type": "speak" | "tool_call" | "end_call",
"content", "tool_args"}``. Read leniently where the meaning is clear: a Markdown code fence or text
around the object, ``"tool"`` / ``"name"`` for the tool name, and a few spellings of the action
type (``say`` -> ``speak``, ``tool`` -> ``tool_call``, ``end`` -> ``end_call``) are accepted; anything
else is flagged.

Customer: plain spoken text (one or two sentences); ``[hang up]`` ends the call.

Both parsers first cut their input to ``MAX_ACTION_CHARS`` characters (:mod:`dialogue_gym.scenarios.common`)
and read JSON with :func:`~dialogue_gym.scenarios.common.safe_json_loads` (bounded nesting and
integers, no NaN/Infinity), so one step costs time linear in a bounded text whatever the model emits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from dialogue_gym.scenarios.common import (
    bound_text,
    memoise_short_texts,
    safe_json_loads,
    truncation_problem,
)

ACTION_TYPES = ("speak", "tool_call", "end_call")
_ACTION_ALIASES = {
    "speak": "speak", "say": "speak", "reply": "speak", "respond": "speak", "message": "speak",
    "tool_call": "tool_call", "tool": "tool_call", "call_tool": "tool_call", "toolcall": "tool_call", "function_call": "tool_call",
    "end_call": "end_call", "end": "end_call", "hang_up": "end_call", "endcall": "end_call",
}
_FENCE = "```"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_MARKUP = re.compile(r"</?\w+>|^\s*[{\[]")
_SPEAKER = re.compile(r"^\s*(customer|caller|me|user)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class AgentAction:
    """One support-agent turn as read from its raw text."""

    action_type: str | None
    content: str
    tool: str | None
    args: Any
    thinking: str
    format: str
    problem: str | None = None

    def parsed(self) -> dict[str, Any]:
        return {"action_type": self.action_type, "content": self.content, "tool": self.tool, "args": self.args, "thinking": self.thinking, "format": self.format}


def _unfence(text: str) -> str | None:
    """The body of a Markdown code fence (three backticks, optionally ``json``) spanning all of ``text``,
    else None. String operations, not a regex: a lazy ``(.*?)\\s*```$`` is quadratic on long runs of spaces."""
    if len(text) < 2 * len(_FENCE) or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return None
    body = text[len(_FENCE) : -len(_FENCE)]
    return body[len("json") :] if body.startswith("json") else body


def _load_object(text: str) -> tuple[Any, str, str | None]:
    """``(object or None, format, problem)`` from raw text (at most ``MAX_ACTION_CHARS`` characters)."""
    stripped = text.strip()
    fmt = "json"
    fenced = _unfence(stripped)
    if fenced is not None:
        stripped, fmt = fenced.strip(), "json_fenced"
    loaded, problem = safe_json_loads(stripped)
    if problem is None:
        return loaded, fmt, None
    first, last = stripped.find("{"), stripped.rfind("}")
    if 0 <= first < last and (first, last) != (0, len(stripped) - 1):
        embedded, embedded_problem = safe_json_loads(stripped[first : last + 1])
        if embedded_problem is None:
            return embedded, "json_embedded", None
    return None, "text", problem


def parse_agent_action(text: str, max_chars: int = 2000) -> AgentAction:
    """Read one support-agent turn; ``problem`` is set when it cannot be used as is. Pure; memoised
    on the bounded text."""
    bounded, truncated = bound_text(text)
    if truncated:
        return AgentAction(None, "", None, {}, "", "text", truncation_problem(len(text), "answer with one short JSON object"))
    return _parse_agent_action(bounded, max_chars)


@memoise_short_texts(maxsize=16384)
def _parse_agent_action(text: str, max_chars: int) -> AgentAction:
    loaded, fmt, problem = _load_object(text)
    if problem is not None:
        return AgentAction(None, "", None, {}, "", fmt, problem + "; answer with one JSON object {thinking, action_type, content, tool_args}")
    if not isinstance(loaded, dict):
        return AgentAction(None, "", None, {}, "", fmt, f"expected a JSON object, got {type(loaded).__name__}")
    problems: list[str] = []
    raw_type = loaded.get("action_type", loaded.get("action", loaded.get("type")))
    action_type = _ACTION_ALIASES.get(str(raw_type).strip().lower()) if isinstance(raw_type, str) else None
    if action_type is None:
        problems.append(f"action_type must be one of {list(ACTION_TYPES)}, got {raw_type!r}")
    content = loaded.get("content", "")
    if not isinstance(content, str):
        problems.append(f"content must be a string, got {type(content).__name__}")
        content = ""
    content = " ".join(content.split())
    thinking = loaded.get("thinking", "")
    thinking = thinking if isinstance(thinking, str) else json.dumps(thinking)
    args: Any = loaded.get("tool_args", loaded.get("arguments", {}))
    tool = None
    if action_type == "tool_call":
        named = loaded.get("tool", loaded.get("tool_name", loaded.get("name")))
        tool = (named if isinstance(named, str) and named.strip() else content).strip()
        if not tool:
            problems.append("tool_call without a tool name: put it in content")
        if args is None:
            args = {}
    elif action_type == "speak" and not content:
        problems.append("speak with empty content")
    if len(content) > max_chars:
        problems.append(f"content of {len(content)} characters exceeds max_utterance_chars={max_chars}; truncated")
        content = content[:max_chars]
    return AgentAction(action_type, content, tool, args, thinking, fmt, "; ".join(problems) or None)


def render_agent_action(action_type: str, content: str, tool_args: dict[str, Any] | None = None, thinking: str = "") -> str:
    """The JSON text of one agent action (the inverse of :func:`parse_agent_action`)."""
    return json.dumps({"thinking": thinking, "action_type": action_type, "content": content, "tool_args": tool_args or {}})


@dataclass(frozen=True)
class CustomerMove:
    """One customer turn as read from its raw text, with the checks the rewards use."""

    utterance: str
    hangup: bool
    sentences: int
    format_ok: bool
    role_reversal: tuple[str, ...] = ()
    meta_talk: bool = False
    problem: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def parsed(self) -> dict[str, Any]:
        return {
            "hangup": self.hangup,
            "sentences": self.sentences,
            "format_ok": self.format_ok,
            "role_reversal": list(self.role_reversal),
            "meta_talk": self.meta_talk,
            "notes": list(self.notes),
        }


def count_sentences(text: str) -> int:
    """Sentences end at ``.``, ``!`` or ``?`` followed by a space (so ``$42.80`` is not a break)."""
    return sum(1 for part in _SENTENCE_END.split(text.strip()) if re.search(r"\w", part))


def parse_customer_output(
    text: str,
    hangup_markers: Sequence[re.Pattern[str]],
    role_reversal: Sequence[re.Pattern[str]],
    meta_talk: Sequence[re.Pattern[str]],
    max_sentences: int = 2,
    max_chars: int = 400,
) -> CustomerMove:
    """Read one customer turn: the utterance, a hang-up marker, and the format / role checks.

    Only the first ``MAX_ACTION_CHARS`` characters are read, and an utterance over ``max_chars`` is
    cut there (and noted, so the turn fails the format check): the agent hears, and the cue, role and
    grounding checks read, at most ``max_chars`` characters."""
    bounded, truncated = bound_text(text)
    utterance = _SPEAKER.sub("", bounded.strip()).strip().strip('"').strip()
    hangup = False
    for marker in hangup_markers:
        if marker.search(utterance):
            hangup = True
            utterance = marker.sub(" ", utterance)
    utterance = " ".join(utterance.split())
    notes = [truncation_problem(len(text))] if truncated else []
    sentences = count_sentences(utterance)
    if sentences > max_sentences:
        notes.append(f"{sentences} sentences (the customer speaks 1-{max_sentences})")
    if len(utterance) > max_chars:
        notes.append(f"{len(utterance)} characters (at most {max_chars}); cut to {max_chars}")
        utterance = utterance[:max_chars].rstrip()
    if _MARKUP.search(utterance):
        notes.append("markup or JSON in a spoken turn")
    reversal = tuple(p.pattern for p in role_reversal if p.search(utterance))
    meta = any(p.search(utterance) for p in meta_talk)
    problem = "empty utterance" if not utterance and not hangup else None
    format_ok = bool(utterance) and not notes
    return CustomerMove(utterance, hangup, sentences, format_ok, reversal, meta, problem, tuple(notes))
