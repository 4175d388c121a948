"""Parsers for what the two roles emit.

User (the simulator): ``<think>rationale</think><intent_level>z</intent_level><reply>text</reply>``, z in
0..5. Anything else is read leniently (tags in another order or missing, the same fields as JSON),
flagged, and scores 0 on the format reward. Field consistency is part of the format: only a level-0
reply may be empty, and a level-5 reply must carry contact information (TRACER's annotation rule).
Assistant: plain text (an optional ``<response>`` tag or ``{"response": ...}`` is unwrapped).
Parsers never raise on model output: they return what they could read plus a ``problem`` string.

Limits: the same as SEAD's parsers (:mod:`dialogue_gym.scenarios.sead.parsing`, from
:mod:`dialogue_gym.scenarios.common`): any ``str`` is read in linear time, at most ``MAX_ACTION_CHARS``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from dialogue_gym.scenarios.common import (
    TagSpan,
    bound_text,
    clean_utterance,
    memoise_short_texts,
    safe_json_loads,
    scan_tags,
    short_repr,
    tag_fields,
    to_int,
    truncation_problem,
)
from dialogue_gym.scenarios.tracer.data import CONVERSION_LEVEL, DROPOUT_LEVEL, LEVELS

USER_FORMAT = "<think>...</think><intent_level>z</intent_level><reply>...</reply>"
_USER_TAGS = ("think", "intent_level", "reply")
_LEVEL_DIGIT = re.compile(r"\d")
"""The intent level, whitespace around it stripped first (``\\s*(\\d)\\s*`` was linear only under ``fullmatch``; a search over a run of spaces was quadratic)."""
_ANY_TAG = re.compile(r"</?\w+>")
_CONTACT = re.compile(r"\d{5,}|\d{3}x+\d{3,}|wechat|\bwx\b|@", re.IGNORECASE)


@dataclass(frozen=True)
class UserMove:
    reply: str
    intent_level: int
    think: str
    format_ok: bool
    problem: str | None = None
    repairs: tuple[str, ...] = ()
    """What a lenient read fixed (empty when the output is in the canonical format)."""
    inconsistency: str | None = None
    """How the reply contradicts its intent level (:func:`_consistency`), if it does."""


def _consistency(reply: str, level: int) -> str | None:
    if not reply and level != DROPOUT_LEVEL:
        return f"empty reply with intent level {level} (only a level-0 reply may be empty)"
    if level == CONVERSION_LEVEL and not _CONTACT.search(reply):
        return "intent level 5 without contact information in the reply"
    return None


def parse_user_output(text: str, fallback_level: int) -> UserMove:
    """Read one simulator turn. An unreadable or out-of-range level becomes ``fallback_level``; an
    output over ``MAX_ACTION_CHARS`` is read from its head and flagged. Total: any ``str`` gives a move."""
    bounded, truncated = bound_text(text)
    move = _parse_user_output(bounded, fallback_level)
    if truncated:
        return dataclasses.replace(
            move, format_ok=False, problem=truncation_problem(len(text), move.problem), repairs=(truncation_problem(len(text)), *move.repairs)
        )
    return move


def _canonical_user(text: str, spans: list[TagSpan]) -> UserMove | None:
    """The move when ``text`` is exactly the canonical format (whitespace around tags allowed), else None."""
    if tuple(span.name for span in spans) != _USER_TAGS:
        return None
    gaps = [text[: spans[0].start], *(text[a.end : b.start] for a, b in zip(spans, spans[1:])), text[spans[-1].end :]]
    if any(gap.strip() for gap in gaps):
        return None
    think, level_text, reply = (span.content for span in spans)
    level_digit = _LEVEL_DIGIT.fullmatch(level_text.strip())
    if level_digit is None or int(level_digit.group()) >= LEVELS:
        return None
    level = int(level_digit.group())
    reply = " ".join(reply.split())
    problem = _consistency(reply, level)
    return UserMove(reply, level, think.strip(), problem is None, problem, inconsistency=problem)


@memoise_short_texts(maxsize=16384)
def _parse_user_output(text: str, fallback_level: int) -> UserMove:
    """Pure and memoised."""
    spans = scan_tags(text)
    canonical = _canonical_user(text, spans)
    if canonical is not None:
        return canonical
    problems = [f"output does not match {USER_FORMAT}"]
    stripped = text.strip()
    fields: dict[str, object] = {}
    if stripped.startswith("{"):
        loaded, json_problem = safe_json_loads(stripped)
        if json_problem:
            problems.append(json_problem)
        if isinstance(loaded, dict):
            fields = loaded
    if not fields:
        fields = tag_fields(spans)
    if "reply" in fields and isinstance(fields["reply"], str):
        reply = fields["reply"]
    else:
        reply = _ANY_TAG.sub(" ", text) if not stripped.startswith("{") else ""
        problems.append("no reply field; the text outside tags is used")
    reply = " ".join(reply.split())
    level = to_int(fields.get("intent_level"))
    if level is None or not 0 <= level < LEVELS:
        problems.append(
            f"intent_level {short_repr(fields.get('intent_level'))} is not an int 0-{LEVELS - 1}; kept {fallback_level}"
        )
        level = fallback_level
    repairs = tuple(problems)
    consistency = _consistency(reply, level)
    if consistency:
        problems.append(consistency)
    think = fields.get("think", "")
    return UserMove(reply, level, think if isinstance(think, str) else short_repr(think, 200), False, "; ".join(problems), repairs, consistency)


def render_user_output(reply: str, level: int, think: str = "") -> str:
    """The simulator's canonical output (the inverse of :func:`parse_user_output`)."""
    return f"<think>{think}</think><intent_level>{level}</intent_level><reply>{reply}</reply>"


@dataclass(frozen=True)
class AssistantMove:
    utterance: str
    problem: str | None = None


def parse_assistant_output(text: str, max_chars: int = 2000) -> AssistantMove:
    """Read one assistant turn: plain text, or the content of ``<response>`` / JSON ``response``.
    An output over ``MAX_ACTION_CHARS`` is read from its head and flagged. Total: any ``str`` gives a move."""
    bounded, truncated = bound_text(text)
    move = _parse_assistant_output(bounded, max_chars)
    if truncated:
        return dataclasses.replace(move, problem=truncation_problem(len(text), move.problem))
    return move


@memoise_short_texts(maxsize=16384)
def _parse_assistant_output(text: str, max_chars: int) -> AssistantMove:
    stripped = text.strip()
    utterance = stripped
    problems: list[str] = []
    # The first <response> and the first </response> after it (what a lazy regex finds, without
    # its quadratic rescans when openers are many and unclosed).
    opening = stripped.find("<response>")
    closing = stripped.find("</response>", opening + len("<response>")) if opening >= 0 else -1
    if closing >= 0:
        utterance = stripped[opening + len("<response>") : closing]
    elif stripped.startswith("{"):
        loaded, _ = safe_json_loads(stripped)
        if isinstance(loaded, dict) and isinstance(loaded.get("response"), str):
            utterance = loaded["response"]
    utterance = clean_utterance(utterance, problems, max_chars)
    return AssistantMove(utterance, "; ".join(problems) or None)
