"""Parsers for what the two SEAD roles emit.

Agent: SEAD's tagged format (``<response>``, ``<cooperation_score>``, ``<emotion_score>``,
``<trust_score>``, optional ``<stage>``, ``<status>``), JSON with the same fields, or plain text.
User: ``<think>``, ``<reply>``, ``<cooperation>``, ``<emotion>``, ``<trust>``, ``<status>``.
Parsers never raise on model output: they return what they could read plus a ``problem`` string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from dialogue_gym.scenarios.common import clean_utterance, to_int
from dialogue_gym.scenarios.sead.state import UserState

_TAG = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)
_ANY_TAG = re.compile(r"</?\w+>")
_CANONICAL_USER = re.compile(
    r"<think>(.*?)</think><reply>(.*?)</reply><cooperation>(\d)</cooperation>"
    r"<emotion>(\d)</emotion><trust>(\d)</trust><status>(-?\d)</status>",
    re.DOTALL,
)

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
        return None, f"state estimate is not integer: {bad}"
    state = UserState(*values)
    out = state.out_of_range()
    if out:
        return None, f"state estimate out of range: {'; '.join(out)}"
    return state, None


@lru_cache(maxsize=16384)
def parse_agent_output(text: str, max_chars: int = 2000) -> AgentMove:
    """Read one agent turn; ``problem`` is set when the output is malformed or out of range.

    Pure and memoised: scripted policies repeat their lines, and an env step should cost microseconds."""
    stripped = text.strip()
    fields: dict[str, object] = {}
    problems: list[str] = []
    fmt = "plain"
    if stripped.startswith("{"):
        try:
            loaded = json.loads(stripped)
        except json.JSONDecodeError as exc:
            loaded = None
            problems.append(f"malformed JSON ({exc.msg})")
        if isinstance(loaded, dict):
            fmt = "json"
            fields = loaded
            if not isinstance(fields.get("response"), str):
                problems.append("JSON output has no string 'response' field")
        utterance = str(fields.get("response", "")) if fields else ""
    else:
        fields = {name: value.strip() for name, value in _TAG.findall(stripped)}
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
    stage = to_int(fields.get("stage")) if "stage" in fields else None
    status = to_int(fields.get("status")) if "status" in fields else None
    utterance = clean_utterance(utterance, problems, max_chars)
    return AgentMove(utterance, estimate, stage, status, fmt, "; ".join(problems) or None)


def render_agent_output(utterance: str, estimate: tuple[int, int, int] | None = None) -> str:
    """SEAD's tagged agent format (the inverse of :func:`parse_agent_output`)."""
    text = f"<response>{utterance}</response>"
    if estimate is not None:
        text += "".join(f"<{name}>{value}</{name}>" for name, value in zip(AGENT_SCORE_FIELDS, estimate))
    return text


@lru_cache(maxsize=16384)
def parse_user_output(text: str, previous: UserState) -> UserMove:
    """Read one user turn. Out-of-range states are clamped, missing ones repaired from ``previous``. Pure and memoised."""
    canonical = _CANONICAL_USER.fullmatch(text)
    if canonical is not None:
        think, reply, c, e, tr, status = canonical.groups()
        state = UserState(int(c), int(e), int(tr))
        if not state.out_of_range() and int(status) in USER_STATUS and reply.strip() == reply and reply:
            return UserMove(" ".join(reply.split()), state, int(status), think.strip())
    fields = {name: value.strip() for name, value in _TAG.findall(text)}
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
        problems.append(f"status {fields.get('status')!r} is not -1, 0 or 1; treated as 0")
        status = 0
    reply = " ".join(reply.split())
    if not reply:
        problems.append("empty reply")
    return UserMove(reply, raw_state.clamped(), status, fields.get("think", ""), "; ".join(problems) or None)


def render_user_output(reply: str, state: tuple[int, int, int], status: int, think: str = "") -> str:
    """The user record in tagged form (what an LLM user emits; the scripted user emits the same)."""
    c, e, tr = state
    return (
        f"<think>{think}</think><reply>{reply}</reply>"
        f"<cooperation>{c}</cooperation><emotion>{e}</emotion><trust>{tr}</trust><status>{status}</status>"
    )
