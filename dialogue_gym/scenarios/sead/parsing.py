"""Parsers for what the two SEAD roles emit.

Agent: SEAD's tagged format (``<response>``, ``<cooperation_score>``, ``<emotion_score>``,
``<trust_score>``, optional ``<stage>``, ``<status>``), JSON with the same fields, or plain text.
User: ``<think>``, ``<reply>``, ``<cooperation>``, ``<emotion>``, ``<trust>``, ``<status>``.
Parsers never raise on model output: they return what they could read plus a ``problem`` string.

Limits (:mod:`dialogue_gym.scenarios.common`): only the first ``MAX_ACTION_CHARS`` (20,000)
characters of an output are read, and a longer output is flagged; JSON deeper than
``MAX_JSON_DEPTH`` (32), with integers over ``MAX_JSON_INT_DIGITS`` (100) digits or with
non-finite numbers is malformed; tag names over 64 characters are text. Tags are found by
:func:`~dialogue_gym.scenarios.common.scan_tags` and every pattern here is linear-time, so a step
costs time linear in at most ``MAX_ACTION_CHARS`` characters whatever the model emits.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from dialogue_gym.scenarios.common import (
    MAX_ACTION_CHARS,
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
from dialogue_gym.scenarios.sead.state import STATE_DIMS, UserState

_ANY_TAG = re.compile(r"</?\w+>")
_USER_TAGS = ("think", "reply", "cooperation", "emotion", "trust", "status")
_DIGIT = re.compile(r"\d")
_STATUS_DIGIT = re.compile(r"-?\d")
_USER_LAYOUT = re.compile("".join(f"<{name}>([^<]*)</{name}>" for name in _USER_TAGS))
"""The user record's six tags back to back, with no ``<`` inside them: the layout the scripted user
(and a well-behaved model) emits, whose tags :func:`scan_tags` would find one for one (linear: a
``[^<]*`` run cannot overlap the ``<`` after it)."""

AGENT_SCORE_FIELDS = ("cooperation_score", "emotion_score", "trust_score")
USER_STATE_FIELDS = ("cooperation", "emotion", "trust")
USER_STATUS = {-1: "hung up", 0: "continue", 1: "completed"}


@dataclass(frozen=True)
class AgentMove:
    utterance: str
    estimate: UserState | None
    stage: int | None
    status: int | None
    format: str
    problem: str | None = None

    def parsed(self) -> dict:
        return {
            "estimate": list(self.estimate) if self.estimate is not None else None,
            "stage": self.stage,
            "status": self.status,
            "format": self.format,
        }


@dataclass(frozen=True)
class UserMove:
    reply: str
    state: UserState
    status: int
    think: str
    problem: str | None = None
    repairs: tuple[str, ...] = ()
    """What the parser fixed to use the output, one entry each (``problem`` joins them)."""
    missing: tuple[str, ...] = ()
    """The record's tags the output lacks (a missing ``<status>`` reads as 0 without a problem)."""



def _read_estimate(fields: dict[str, object], names: tuple[str, ...]) -> tuple[UserState | None, str | None]:
    present = [name for name in names if name in fields]
    if not present:
        return None, None
    if len(present) < len(names):
        missing = [name for name in names if name not in fields]
        return None, f"state estimate incomplete: missing {', '.join(missing)}"
    values = [to_int(fields[name]) for name in names]
    if any(v is None for v in values):
        bad = {name: fields[name] for name, v in zip(names, values) if v is None}
        return None, f"state estimate is not integer: {short_repr(bad, 200)}"
    state = UserState(*values)
    out = state.out_of_range()
    if out:
        return None, f"state estimate out of range: {'; '.join(out)}"
    return state, None


def parse_agent_output(text: str, max_chars: int = 2000) -> AgentMove:
    """Read one agent turn; ``problem`` is set when the output is malformed, out of range or over
    ``MAX_ACTION_CHARS`` (then only its head is read). Total: any ``str`` gives a move."""
    bounded, truncated = bound_text(text)
    move = _parse_agent_output(bounded, max_chars)
    return dataclasses.replace(move, problem=truncation_problem(len(text), move.problem)) if truncated else move


@memoise_short_texts(maxsize=16384)
def _parse_agent_output(text: str, max_chars: int) -> AgentMove:
    """Pure and memoised: scripted policies repeat their lines, and an env step should cost microseconds."""
    stripped = text.strip()
    fields: dict[str, object] = {}
    problems: list[str] = []
    fmt = "plain"
    if stripped.startswith("{"):
        loaded, json_problem = safe_json_loads(stripped)
        if json_problem:
            problems.append(json_problem)
        if isinstance(loaded, dict):
            fmt = "json"
            fields = loaded
            if not isinstance(fields.get("response"), str):
                problems.append(f"JSON output has no string 'response' field (got {short_repr(fields.get('response'))})")
        response = fields.get("response")
        utterance = response if isinstance(response, str) else ""
    else:
        fields = tag_fields(scan_tags(stripped))
        if "response" in fields:
            fmt = "tags"
            utterance = fields["response"]
        elif "<response>" in stripped:
            fmt = "tags"
            utterance = _ANY_TAG.sub(" ", stripped.split("<response>", 1)[1]).strip()
            utterance = re.split(r"\s{2,}", utterance)[0] if utterance else utterance
            problems.append("unclosed <response> tag")
        else:
            if fields:
                problems.append("tagged output without a <response> tag")
            utterance = _ANY_TAG.sub(" ", stripped).strip() if fields else stripped
    estimate, problem = _read_estimate(fields, AGENT_SCORE_FIELDS)
    if problem:
        problems.append(problem)
    stage = _optional_int(fields, "stage", problems)
    status = _optional_int(fields, "status", problems)
    utterance = clean_utterance(utterance, problems, max_chars)
    return AgentMove(utterance, estimate, stage, status, fmt, "; ".join(problems) or None)


def _optional_int(fields: dict[str, object], name: str, problems: list[str]) -> int | None:
    if name not in fields:
        return None
    value = to_int(fields[name])
    if value is None:
        problems.append(f"{name} {short_repr(fields[name])} is not an integer; ignored")
    return value


def render_agent_output(utterance: str, estimate: tuple[int, int, int] | None = None) -> str:
    """SEAD's tagged agent format (the inverse of :func:`parse_agent_output`)."""
    text = f"<response>{utterance}</response>"
    if estimate is not None:
        # str.format on a template built once: the same text as formatting each tag (a test checks it),
        # without a generator a turn (render_agent_output was 2% of a scripted SEAD episode).
        text += _ESTIMATE_TAGS.format(*estimate) if len(estimate) == len(AGENT_SCORE_FIELDS) else _estimate_tags(estimate)
    return text


def _estimate_tags(estimate) -> str:
    """The score tags of ``estimate``, one per field (a shorter estimate writes fewer)."""
    return "".join(f"<{name}>{value}</{name}>" for name, value in zip(AGENT_SCORE_FIELDS, estimate))


_ESTIMATE_TAGS = "".join(f"<{name}>{{}}</{name}>" for name in AGENT_SCORE_FIELDS)
""":func:`_estimate_tags` of a full estimate, as a ``str.format`` template."""


def parse_user_output(text: str, previous: UserState) -> UserMove:
    """Read one user turn. Out-of-range states are clamped, missing ones repaired from ``previous``;
    an output over ``MAX_ACTION_CHARS`` is read from its head and flagged. Total: any ``str`` gives a move."""
    rendered = _RENDERED_MOVES.get(text)
    if rendered is not None:
        return rendered
    bounded, truncated = bound_text(text)
    move = _parse_user_output(bounded, previous)
    if not truncated:
        return move
    return dataclasses.replace(move, problem=truncation_problem(len(text), move.problem), repairs=(truncation_problem(len(text)), *move.repairs))


def _user_spans(text: str) -> list[TagSpan]:
    """``scan_tags(text)``, read off :data:`_USER_LAYOUT` when ``text`` has that layout."""
    layout = _USER_LAYOUT.fullmatch(text)
    if layout is None:
        return scan_tags(text)
    return [
        TagSpan(name, layout.group(group), layout.start(group) - len(name) - 2, layout.end(group) + len(name) + 3)
        for group, name in enumerate(_USER_TAGS, start=1)
    ]


def _canonical_user(spans: list[TagSpan]) -> UserMove | None:
    """The move when ``spans`` are SEAD's six user tags in order with a non-blank reply and in-range
    values, else None. Text around or between the tags does not matter: the general parser ignores it
    too, and gives this same move (a property test checks it on records with text around, between
    and inside their tags)."""
    if tuple(span.name for span in spans) != _USER_TAGS:
        return None
    think, reply, c, e, tr, status = (span.content for span in spans)
    if not all(_DIGIT.fullmatch(value) for value in (c, e, tr)) or not _STATUS_DIGIT.fullmatch(status):
        return None
    state = UserState(int(c), int(e), int(tr))
    if state.out_of_range() or int(status) not in USER_STATUS or not reply.strip():
        return None
    return UserMove(" ".join(reply.split()), state, int(status), think.strip())


@memoise_short_texts(maxsize=16384)
def _parse_user_output(text: str, previous: UserState) -> UserMove:
    """Pure and memoised."""
    spans = _user_spans(text)
    canonical = _canonical_user(spans)
    if canonical is not None:
        return canonical
    fields = tag_fields(spans)
    problems: list[str] = []
    if "reply" in fields:
        reply = fields["reply"]
    else:
        reply = _ANY_TAG.sub(" ", text).strip()
        problems.append("no <reply> tag; whole output used as the reply")
    values = []
    for name, old in zip(USER_STATE_FIELDS, previous):
        value = to_int(fields.get(name)) if name in fields else None
        if value is None:
            problems.append(f"{name} missing or not an integer; kept {old}")
            value = old
        values.append(value)
    raw_state = UserState(*values)
    out = raw_state.out_of_range()
    if out:
        problems.append(f"{'; '.join(out)}; clamped")
    status = to_int(fields.get("status")) if "status" in fields else 0
    if status not in USER_STATUS:
        problems.append(f"status {short_repr(fields.get('status'))} is not -1, 0 or 1; treated as 0")
        status = 0
    reply = " ".join(reply.split())
    if not reply:
        problems.append("empty reply")
    missing = tuple(name for name in _USER_TAGS if name not in fields)
    return UserMove(reply, raw_state.clamped(), status, fields.get("think", ""), "; ".join(problems) or None, tuple(problems), missing)


_RENDERED_MOVES: dict[str, UserMove] = {}
"""The move of every canonical record :func:`render_user_output` wrote lately, keyed by its text, so
:func:`parse_user_output` reads the scripted user's records without scanning them again (that scan
was a sixth of a scripted SEAD step). Only records that parse canonically go in, with the move that
parse gives (a test checks both on every record the scripted user writes and on hostile fields)."""
_MAX_RENDERED_MOVES = 16384
"""Past this many records :data:`_RENDERED_MOVES` starts afresh: its memory stays bounded."""


def render_user_output(reply: str, state: tuple[int, int, int], status: int, think: str = "") -> str:
    """The user record in tagged form (what an LLM user emits; the scripted user emits the same)."""
    c, e, tr = state
    text = (
        f"<think>{think}</think><reply>{reply}</reply>"
        f"<cooperation>{c}</cooperation><emotion>{e}</emotion><trust>{tr}</trust><status>{status}</status>"
    )
    # A stored record was stored from these same fields: a canonical record's text determines them.
    if text not in _RENDERED_MOVES and _renders_canonically(reply, state, status, think) and len(text) <= MAX_ACTION_CHARS:
        if len(_RENDERED_MOVES) >= _MAX_RENDERED_MOVES:
            _RENDERED_MOVES.clear()
        _RENDERED_MOVES[text] = UserMove(" ".join(reply.split()), UserState(c, e, tr), status, think.strip())
    return text


def _renders_canonically(reply: str, state: tuple[int, int, int], status: int, think: str) -> bool:
    """Whether the record of these fields is one :func:`_canonical_user` reads: no tag character in the
    texts, a stripped non-empty reply, one-digit in-range state values and a known status (all plain ints)."""
    return (
        "<" not in reply
        and "<" not in think
        and bool(reply)
        and reply.strip() == reply
        and all(type(value) is int and 0 <= value < dims for value, dims in zip(state, STATE_DIMS))
        and type(status) is int
        and status in USER_STATUS
    )
