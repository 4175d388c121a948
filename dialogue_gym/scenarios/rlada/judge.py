"""The fixed judge of an RL-ADA call: a rule-based judge over the recorded trajectory, and an LLM
judge with a fixed rubric (``data/judge.json``) and robust score parsing.

Rule-based components (each 0 or 1, weighted by ``judge.json["components"]``, maximum 3.0):

* ``routing``: the agent's domain tools are exactly the intent's tool (for an intent routed to
  ``lookup_account``: a successful lookup and no other domain tool). A tool counts once a call of
  it passed schema validation, whether or not the bank accepted it: routing is the agent's decision.
* ``lookup_first``: a successful ``lookup_account`` before any domain tool (identity verification).
* ``procedure``: lookup first, at most one domain tool, that tool succeeded, and the agent explained
  the result afterwards (a spoken turn, or a goodbye of at least six words).
* ``clean_ending``: the agent ended the call with ``end_call`` and a goodbye (no hang-up, timeout or
  invalid ending).
* ``consistency``: every claim the agent spoke (a dispute opened, money moved, a transfer to a
  specialist, a card status, a balance) is backed by the tool results of the episode.

The LLM judge replaces the weighted score by the model's 0-3 score; routing and the identity check
stay rule-based (they are world facts), and an unparseable answer falls back to the rule score with
the problem recorded in the verdict.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from dialogue_gym.backends.base import GenerationRequest, SamplingParams
from dialogue_gym.scenarios.common import bound_text, safe_json_loads
from dialogue_gym.scenarios.rlada.data import Domain
from dialogue_gym.types import Trajectory

LOOKUP = "lookup_account"
ESCALATE = "transfer_to_human"
EXPLAIN_WORDS = 6


@dataclass(frozen=True)
class Verdict:
    target_tool: str
    routed_tools: tuple[str, ...]
    routing_correct: bool
    lookup_first: bool
    procedure: bool
    explained: bool
    clean_ending: bool
    consistent: bool
    inconsistent_claims: tuple[str, ...]
    wrong_escalation: bool
    missed_escalation: bool
    ended_by: str | None
    components: dict[str, float]
    score: float
    judge: str = "rule"
    note: str | None = None

    @property
    def routed_tool(self) -> str | None:
        """The tool the agent routed to: its first domain tool, or ``lookup_account`` when it only looked up."""
        return self.routed_tools[0] if self.routed_tools else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["routed_tools"] = list(self.routed_tools)
        data["inconsistent_claims"] = list(self.inconsistent_claims)
        return data


def _calls(trajectory: Trajectory) -> list[tuple[int, dict[str, Any]]]:
    """``(turn index, tool record)`` of every agent tool call, in order."""
    return [
        (index, turn.parsed["tool_outcome"])
        for index, turn in enumerate(trajectory.turns)
        if turn.role == "agent" and turn.parsed.get("tool_outcome") is not None
    ]


def ended_by(trajectory: Trajectory) -> str | None:
    """How the call ended: ``end_call``, ``hangup``, or the outcome (``timeout``, ``invalid``, ...)."""
    if trajectory.turns:
        last = trajectory.turns[-1]
        if last.role == "agent" and last.parsed.get("action_type") == "end_call" and last.invalid is None:
            return "end_call"
        if last.role == "customer" and last.parsed.get("hangup"):
            return "hangup"
    return trajectory.outcome.value if trajectory.outcome is not None else None


class RuleJudge:
    """Scores a finished (or partial) trajectory from its turns alone: a pure function."""

    def __init__(self, domain: Domain, weights: dict[str, float] | None = None):
        self.domain = domain
        self.weights = dict(weights if weights is not None else domain.judge["components"])
        self._status_words = {word: set(statuses) for word, statuses in domain.judge["card_status_words"].items()}

    def judge(self, trajectory: Trajectory) -> Verdict:
        target = trajectory.profile["tool"]
        calls = _calls(trajectory)
        valid = [(i, c) for i, c in calls if c["schema_ok"]]
        lookup_ok = any(c["tool"] == LOOKUP and c["ok"] for _, c in valid)
        lookup_first = False
        for _, call in valid:
            if call["tool"] == LOOKUP:
                if call["ok"]:
                    lookup_first = True
                    break
            else:
                break
        domain_tools = tuple(dict.fromkeys(c["tool"] for _, c in valid if c["tool"] != LOOKUP))
        routed = domain_tools or ((LOOKUP,) if lookup_ok else ())
        if target == LOOKUP:
            routing = lookup_ok and not domain_tools
        else:
            routing = domain_tools == (target,)
        chosen = routed[0] if len(routed) == 1 else None
        successes = [i for i, c in valid if chosen is not None and c["tool"] == chosen and c["ok"]]
        explained = bool(successes) and self._explained_after(trajectory, successes[-1])
        procedure = lookup_first and bool(successes) and explained
        end = ended_by(trajectory)
        last_agent = next((t for t in reversed(trajectory.turns) if t.role == "agent"), None)
        clean = end == "end_call" and last_agent is not None and bool(last_agent.parsed.get("content"))
        bad_claims = self._inconsistent_claims(trajectory, valid)
        components = {
            "routing": float(routing),
            "lookup_first": float(lookup_first),
            "procedure": float(procedure),
            "clean_ending": float(clean),
            "consistency": float(not bad_claims),
        }
        return Verdict(
            target_tool=target,
            routed_tools=routed,
            routing_correct=routing,
            lookup_first=lookup_first,
            procedure=procedure,
            explained=explained,
            clean_ending=clean,
            consistent=not bad_claims,
            inconsistent_claims=tuple(bad_claims),
            wrong_escalation=ESCALATE in domain_tools and target != ESCALATE,
            missed_escalation=target == ESCALATE and ESCALATE not in domain_tools,
            ended_by=end,
            components=components,
            score=float(sum(self.weights[name] * value for name, value in components.items())),
        )

    @staticmethod
    def _explained_after(trajectory: Trajectory, index: int) -> bool:
        for turn in trajectory.turns[index + 1 :]:
            if turn.role != "agent" or turn.invalid is not None:
                continue
            kind, content = turn.parsed.get("action_type"), turn.parsed.get("content", "")
            if kind == "speak" and content:
                return True
            if kind == "end_call" and len(content.split()) >= EXPLAIN_WORDS:
                return True
        return False

    def _inconsistent_claims(self, trajectory: Trajectory, valid: list[tuple[int, dict[str, Any]]]) -> list[str]:
        succeeded = {c["tool"] for _, c in valid if c["ok"]}
        statuses = {c["result"]["status"] for _, c in valid if c["ok"] and c["tool"] == "check_card_status"}
        balances = set()
        for _, call in valid:
            if call["ok"] and call["tool"] == LOOKUP:
                balances.update(round(a["balance"], 2) for a in call["result"]["accounts"])
            if call["ok"] and call["tool"] == "transfer_funds":
                balances.update(round(v, 2) for v in call["result"]["new_balances"].values())
        bad = []
        for turn in trajectory.turns:
            if turn.role != "agent" or turn.parsed.get("action_type") not in ("speak", "end_call"):
                continue
            text = turn.parsed.get("content", "")
            for name, kind, target, pattern in self.domain.claims:
                for match in pattern.finditer(text):
                    if kind == "requires" and target not in succeeded:
                        bad.append(f"{name}: {match.group(0)!r} without a successful {target}")
                    elif kind == "matches" and target == "card_status":
                        word = re.sub(r"^.* is (currently |now )?", "", match.group(0).lower())
                        allowed = self._status_words.get(word, {word})
                        if not statuses & allowed:
                            bad.append(f"{name}: {match.group(0)!r} but check_card_status returned {sorted(statuses) or 'nothing'}")
                    elif kind == "matches" and target == "balance":
                        amount = round(float(match.group(match.lastindex).replace(",", "")), 2)
                        if amount not in balances:
                            bad.append(f"{name}: {match.group(0)!r} matches no balance the tools returned")
        return bad


# -- LLM judge ---------------------------------------------------------------------------------
# A fraction starts where no digit or point precedes it: without that lookbehind, a long digit run
# with no "/" after it is retried from every one of its digits (quadratic time). A score followed by
# an exponent ("score": 1e999, which the JSON reader refused) is not read as its mantissa.
_SCORE = re.compile(r"score\W{0,3}\s*(-?\d+(?:\.\d+)?)(?![\d.]|[eE][+-]?\d)(?:\s*(?:/|out of)\s*(\d+(?:\.\d+)?))?", re.IGNORECASE)
_FRACTION = re.compile(r"(?<![\d.])(-?\d+(?:\.\d+)?)\s*(?:/|out of)\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*$")


def parse_judge_score(text: str, max_score: float = 3.0) -> tuple[float | None, str | None]:
    """``(score in [0, max_score] or None, problem)`` from a judge model's answer.

    Reads, in order: a JSON object with ``score`` (also inside a code fence or surrounded by text; the
    score may be a number, a numeric string or ``"2/3"``), ``score: 2.5`` / ``Score = 2 out of 3``, a
    bare fraction ``2.5/3``, or a bare number. A fraction over another scale is rescaled; values
    outside the range are clamped and reported. Only the first ``MAX_ACTION_CHARS`` characters are
    read; never raises."""
    if not isinstance(text, str):
        return None, f"the judge's answer must be text, got {type(text).__name__}"
    text = bound_text(text)[0]
    candidates: list[tuple[float, float | None]] = []
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        data = safe_json_loads(text[first : last + 1])[0]
        if isinstance(data, dict) and "score" in data:
            value = data["score"]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                candidates.append((float(value), None))
            elif isinstance(value, str):
                fraction = _FRACTION.search(value)
                number = _NUMBER.match(value)
                if fraction:
                    candidates.append((float(fraction.group(1)), float(fraction.group(2))))
                elif number:
                    candidates.append((float(number.group(1)), None))
    if not candidates:
        for pattern in (_SCORE, _FRACTION, _NUMBER):
            match = pattern.search(text)
            if match:
                denominator = match.group(2) if pattern is not _NUMBER and match.lastindex and match.lastindex >= 2 else None
                candidates.append((float(match.group(1)), float(denominator) if denominator else None))
                break
    if not candidates:
        return None, f"no score found in the judge's answer {text[:120]!r}"
    value, denominator = candidates[0]
    if denominator is not None:
        if denominator <= 0:
            return None, f"score fraction with denominator {denominator} in {text[:120]!r}"
        value = value * max_score / denominator
    if not math.isfinite(value):
        return None, f"non-finite score in {text[:120]!r}"
    if value < 0 or value > max_score:
        return min(max(value, 0.0), max_score), f"score {value} outside 0-{max_score}; clamped"
    return value, None


def transcript_text(trajectory: Trajectory) -> str:
    """The call as the judge reads it: spoken turns, tool calls with their results."""
    lines = []
    for turn in trajectory.turns:
        if turn.role == "customer":
            lines.append(f"CUSTOMER: {turn.text}")
            continue
        parsed = turn.parsed
        if turn.invalid is not None:
            lines.append(f"AGENT (invalid output: {turn.invalid})")
        elif parsed.get("tool_outcome") is not None:
            outcome = parsed["tool_outcome"]
            shown = outcome["result"] if outcome["ok"] else outcome["error"]
            lines.append(f"AGENT calls {outcome['tool']}({json.dumps(outcome['args'])}) -> {json.dumps(shown)[:600]}")
        elif parsed.get("action_type") == "end_call":
            lines.append(f"AGENT (ends the call): {parsed.get('content', '')}")
        else:
            lines.append(f"AGENT: {parsed.get('content', '')}")
    return "\n".join(lines)


class LLMJudge:
    """A judge model with a fixed rubric. ``backend`` is a backend spec (``{"name": ..., ...}``) or any
    object with ``generate(requests)``; the backend package is imported only here, when it is used."""

    def __init__(self, domain: Domain, backend: Any, sampling: dict[str, Any] | None = None, weights: dict[str, float] | None = None):
        from dialogue_gym.backends import make_backend

        self.rule = RuleJudge(domain, weights)
        self.backend = make_backend(backend)
        self.rubric = domain.judge["rubric"]
        self.max_score = float(sum(self.rule.weights.values()))
        self.sampling = SamplingParams(**{"temperature": 0.0, "max_new_tokens": 128, **(sampling or {})})

    def request(self, trajectory: Trajectory) -> GenerationRequest:
        messages = (
            {"role": "system", "content": self.rubric},
            {"role": "user", "content": f"Transcript:\n{transcript_text(trajectory)}\n\nYour JSON verdict:"},
        )
        return GenerationRequest(messages=messages, sampling=self.sampling)

    def judge(self, trajectory: Trajectory) -> Verdict:
        verdict = self.rule.judge(trajectory)
        outputs = self.backend.generate([self.request(trajectory)])
        error = getattr(outputs[0], "error", None) if outputs else "no output"
        if error is not None:
            return replace(verdict, judge="rule_fallback", note=f"judge backend failed: {error}")
        score, problem = parse_judge_score(outputs[0].text, self.max_score)
        if score is None:
            return replace(verdict, judge="rule_fallback", note=problem)
        return replace(verdict, score=score, judge="llm", note=problem)
