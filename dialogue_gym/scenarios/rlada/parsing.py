"""Parsers for what the two RL-ADA roles emit. They never raise on model output: they return what
they could read plus a ``problem`` string.

Support agent: one JSON object ``{"thinking", "action_type": "speak" | "tool_call" | "end_call",
"content", "tool_args"}``. Read leniently where the meaning is clear: a Markdown code fence or text
around the object, ``"tool"`` / ``"name"`` for the tool name, and a few spellings of the action
type (``say`` -> ``speak``, ``tool`` -> ``tool_call``, ``end`` -> ``end_call``) are accepted; anything
else is flagged.

Customer: plain spoken text (one or two sentences); ``[hang up]`` ends the call.

Each move carries its health record (:mod:`dialogue_gym.health`), which goes into ``turn.parsed``:
the agent is in format with one bare JSON object of the four fields (a fence, surrounding text, an
alias or a missing field is a repair) and reverses roles when a spoken turn says what only a
customer says (``data/health.json``); the customer is in format with a spoken, markup-free turn,
reverses roles on the domain's role-reversal and meta-talk patterns and the shared service-side
phrases, and breaks its rule by speaking more than ``max_sentences`` sentences.

Both parsers first cut their input to ``MAX_ACTION_CHARS`` characters (:mod:`dialogue_gym.scenarios.common`)
and read JSON with :func:`~dialogue_gym.scenarios.common.safe_json_loads` (bounded nesting and
integers, no NaN/Infinity), so one step costs time linear in a bounded text whatever the model emits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.errors import ScenarioError
from dialogue_gym.health import MODEL_TALK, SERVICE_VOICE, RoleVoice, TurnHealth, check_patterns, said_phrases
from dialogue_gym.scenarios.common import (
    bound_text,
    matching_patterns,
    memoise_short_texts,
    read_json,
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
AGENT_FIELDS = ("thinking", "action_type", "content", "tool_args")
HEALTH_FILE = Path(__file__).parent / "data" / "health.json"


@lru_cache(maxsize=1)
def agent_voice() -> RoleVoice:
    """What only the customer says (``data/health.json``), heard in a spoken agent turn; an agent may
    say it is an AI, so only model talk counts as out of character."""
    data = read_json(HEALTH_FILE)
    voices = data.get("role_voice")
    if not isinstance(voices, dict) or "agent" not in voices:
        raise ScenarioError(f"{HEALTH_FILE}: field 'role_voice' must hold an 'agent' list of patterns, got {voices!r:.120}.")
    where = f"{HEALTH_FILE}: role_voice['agent']"
    return RoleVoice(check_patterns(voices["agent"], where), where=where, breaks=MODEL_TALK)


@lru_cache(maxsize=1)
def customer_voice() -> RoleVoice:
    """The shared service-side and out-of-character phrases, beside the domain's own role-reversal patterns."""
    return RoleVoice(SERVICE_VOICE, where="customer voice")


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
    health: TurnHealth = TurnHealth(False)

    def parsed(self) -> dict[str, Any]:
        return {
            "action_type": self.action_type, "content": self.content, "tool": self.tool, "args": self.args, "thinking": self.thinking,
            "format": self.format, "health": self.health.to_dict(),
        }


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
        problem = truncation_problem(len(text), "answer with one short JSON object")
        return AgentAction(None, "", None, {}, "", "text", problem, TurnHealth(False))
    return _parse_agent_action(bounded, max_chars)


def _agent_health(loaded: dict[str, Any], fmt: str, action_type: str | None, content: str, problems: list[str], cut: bool) -> TurnHealth:
    """In format: one bare JSON object with the four fields, an action type spelled as the prompt
    spells it, and nothing the parser flagged; ``cut``: the content was truncated to be used."""
    repaired = ["content truncated to max_utterance_chars"] if cut else []
    if fmt == "json_fenced":
        repaired.append("JSON read from inside a code fence")
    elif fmt == "json_embedded":
        repaired.append("JSON read from inside other text")
    raw_type = loaded.get("action_type", loaded.get("action", loaded.get("type")))
    if action_type is not None and raw_type != action_type:
        repaired.append(f"action_type {raw_type!r} read as {action_type!r}")
    missing = [name for name in AGENT_FIELDS if name not in loaded]
    if missing:
        repaired.append(f"no {', '.join(missing)} field(s); read with defaults")
    spoken = content if action_type in ("speak", "end_call") else ""
    return TurnHealth(
        format_ok=not problems and not repaired,
        repaired=tuple(repaired),
        role_reversal=agent_voice().reversals(spoken) if spoken else (),
    )


@memoise_short_texts(maxsize=16384)
def _parse_agent_action(text: str, max_chars: int) -> AgentAction:
    loaded, fmt, problem = _load_object(text)
    if problem is not None:
        problem += "; answer with one JSON object {thinking, action_type, content, tool_args}"
        return AgentAction(None, "", None, {}, "", fmt, problem, TurnHealth(False))
    if not isinstance(loaded, dict):
        return AgentAction(None, "", None, {}, "", fmt, f"expected a JSON object, got {type(loaded).__name__}", TurnHealth(False))
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
    cut = len(content) > max_chars
    if cut:
        problems.append(f"content of {len(content)} characters exceeds max_utterance_chars={max_chars}; truncated")
        content = content[:max_chars]
    health = _agent_health(loaded, fmt, action_type, content, problems, cut)
    return AgentAction(action_type, content, tool, args, thinking, fmt, "; ".join(problems) or None, health)


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
    health: TurnHealth = TurnHealth(False)

    def parsed(self) -> dict[str, Any]:
        return {
            "hangup": self.hangup,
            "sentences": self.sentences,
            "format_ok": self.format_ok,
            "role_reversal": list(self.role_reversal),
            "meta_talk": self.meta_talk,
            "notes": list(self.notes),
            "health": self.health.to_dict(),
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
    stripped = bounded.strip()
    unlabelled = _SPEAKER.sub("", stripped).strip()
    utterance = unlabelled.strip('"').strip()
    repaired = [truncation_problem(len(text))] if truncated else []
    if unlabelled != stripped:
        repaired.append("speaker label removed")
    if utterance != unlabelled:
        repaired.append("quotes removed")
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
        repaired.append(notes[-1])
        utterance = utterance[:max_chars].rstrip()
    markup = bool(_MARKUP.search(utterance))
    if markup:
        notes.append("markup or JSON in a spoken turn")
    # Only the patterns found at all can have a phrase said: searched once, read twice below.
    reversing = tuple(matching_patterns(role_reversal, utterance))
    meta_said = tuple(matching_patterns(meta_talk, utterance))
    reversal = tuple(p.pattern for p in reversing)
    meta = bool(meta_said)
    problem = "empty utterance" if not utterance and not hangup else None
    format_ok = bool(utterance) and not notes
    health = TurnHealth(
        format_ok=(bool(utterance) or hangup) and not markup and not truncated,
        repaired=tuple(repaired),
        role_reversal=tuple(dict.fromkeys((*said_phrases(reversing, utterance), *customer_voice().reversals(utterance), *said_phrases(meta_said, utterance)))),
        rule_violations=(f"{sentences} sentences (the customer speaks 1-{max_sentences})",) if sentences > max_sentences else (),
    )
    return CustomerMove(utterance, hangup, sentences, format_ok, reversal, meta, problem, tuple(notes), health)
