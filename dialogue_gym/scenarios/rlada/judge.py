"""The fixed judge of an RL-ADA call: a rule-based judge over the recorded trajectory, and an LLM
judge with a fixed rubric (``data/judge.json``) and robust score parsing.

Rule-based components (each 0 or 1, weighted by ``judge.json["components"]``, maximum 3.0):

* ``routing``: the agent's domain tools are exactly the intent's tool (for an intent routed to
  ``lookup_account``: a successful lookup and no other domain tool). A tool counts once a call of
  it passed schema validation, whether or not the bank accepted it: routing is the agent's decision.
* ``lookup_first``: a successful ``lookup_account`` before any domain tool (identity verification).
* ``procedure``: lookup first, at most one domain tool, that tool succeeded, the agent explained
  the result afterwards (a spoken turn or goodbye that states a value the tool returned: the balance,
  the dispute id, the card's status or digits, the amount moved, the ticket; "ok" explains nothing),
  and every spoken turn was one the customer could follow (no turn that
  :func:`~dialogue_gym.scenarios.rlada.reading.read_agent_turn` finds confusing: "?", word salad,
  content-free questions, echoes, near-repeats, monologues).
* ``clean_ending``: the agent ended the call with ``end_call`` and a goodbye (no hang-up, timeout or
  invalid ending).
* ``consistency``: every claim of fact the agent spoke is backed by the tool results it had by then
  (:func:`~dialogue_gym.scenarios.rlada.reading.spoken_claims`): a dispute opened, a refund or
  reversal, money moved, an escalation, a card status, a card action no tool performs (unblocked,
  replaced), a balance, "resolved"; and every amount, id and long number it stated appears in the
  tool calls and results or in the customer's words. Questions, negations and offers ("I can open
  a dispute") claim nothing; the agent's promises ("I'll open a dispute") must be kept by the end.

The LLM judge replaces the weighted score by the model's 0-3 score; routing and the identity check
stay rule-based (they are world facts), and an unparseable answer falls back to the rule score with
the problem recorded in the verdict.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from dialogue_gym.backends.base import GenerationRequest, SamplingParams
from dialogue_gym.health import TurnHealth
from dialogue_gym.scenarios.common import bound_text, safe_json_loads
from dialogue_gym.scenarios.rlada.data import Domain
from dialogue_gym.scenarios.rlada.reading import (
    ID_PATTERN,
    Claim,
    customer_turn_understood,
    evidence_numbers,
    quoted_values,
    read_agent_turn,
    spoken_claims,
)
from dialogue_gym.types import Trajectory

LOOKUP = "lookup_account"
ESCALATE = "transfer_to_human"


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
    confusing_turns: tuple[str, ...] = ()
    """Spoken agent turns the customer could not follow (``"turn 3: not_understood (empty)"``)."""
    health: dict[str, Any] | None = None
    """``{"judge": record}``: the health of a judge model's answer (:func:`judge_answer_health`); None for the rule judge."""

    @property
    def routed_tool(self) -> str | None:
        """The tool the agent routed to: its first domain tool, or ``lookup_account`` when it only looked up."""
        return self.routed_tools[0] if self.routed_tools else None

    def to_dict(self) -> dict[str, Any]:
        # Built field by field (what dataclasses.asdict gives, without its recursive copy of every
        # atom, which dominated building a trajectory): only the two dict fields hold mutable values.
        data = {name: getattr(self, name) for name in _VERDICT_FIELDS}
        data["routed_tools"] = list(self.routed_tools)
        data["inconsistent_claims"] = list(self.inconsistent_claims)
        data["confusing_turns"] = list(self.confusing_turns)
        data["components"] = dict(self.components)
        data["health"] = copy.deepcopy(self.health)
        return data


_VERDICT_FIELDS = tuple(field.name for field in fields(Verdict))


def _calls(trajectory: Trajectory) -> list[tuple[int, dict[str, Any]]]:
    """``(turn index, tool record)`` of every agent tool call, in order."""
    return [
        (index, turn.parsed["tool_outcome"])
        for index, turn in enumerate(trajectory.turns)
        if turn.role == "agent" and turn.parsed.get("tool_outcome") is not None
    ]


@dataclass(frozen=True)
class _ResultEvidence:
    """The numbers and ids written in one successful tool result (read from its JSON text)."""

    numbers: frozenset[float]
    ids: frozenset[str]


def _results_evidence(calls: list[tuple[int, dict[str, Any]]], shown_results: Mapping[int, str]) -> dict[int, _ResultEvidence]:
    """``{turn index: evidence}`` of every successful call's result, each serialised and read once:
    both the explanation check and the consistency check read the same results. ``shown_results``
    holds ``json.dumps(result)`` of those already serialised (see :meth:`RuleJudge.judge`)."""
    evidence = {}
    for index, call in calls:
        if call["ok"]:
            shown = shown_results.get(index)
            if shown is None:
                shown = json.dumps(call["result"])
            evidence[index] = _ResultEvidence(evidence_numbers(shown), frozenset(ID_PATTERN.findall(shown)))
    return evidence


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
        self._status_words = {word: {s.replace("_", " ") for s in statuses} for word, statuses in domain.judge["card_status_words"].items()}
        self._card_statuses = {s.replace("_", " ") for statuses in self._status_words.values() for s in statuses}

    def judge(self, trajectory: Trajectory, shown_results: Mapping[int, str] | None = None) -> Verdict:
        """The verdict on ``trajectory``. ``shown_results``: ``{turn index: json.dumps(result)}`` of
        successful tool calls whose result the caller has serialised already (the game has, for the
        agent's tool message); the others are serialised here. The verdict is the same either way."""
        target = trajectory.profile["tool"]
        calls = _calls(trajectory)
        evidence = _results_evidence(calls, shown_results or {})
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
        explained = bool(successes) and self._explained_after(trajectory, successes[-1], calls, evidence[successes[-1]])
        confusing = self._confusing_turns(trajectory)
        procedure = lookup_first and bool(successes) and explained and not confusing
        end = ended_by(trajectory)
        last_agent = next((t for t in reversed(trajectory.turns) if t.role == "agent"), None)
        clean = (
            end == "end_call" and last_agent is not None and bool(last_agent.parsed.get("content"))
            and customer_turn_understood(last_agent.parsed["content"], self.domain)
        )
        bad_claims = self._inconsistent_claims(trajectory, evidence)
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
            confusing_turns=tuple(confusing),
        )

    def _explained_after(self, trajectory: Trajectory, index: int, calls: list[tuple[int, dict[str, Any]]], evidence: _ResultEvidence) -> bool:
        """Whether a later spoken turn (or goodbye) that a person understands states a value of the
        tool result at ``index`` (``evidence``: its numbers and ids): one of its amounts, ids or numbers, or its status."""
        record = next(c for i, c in calls if i == index)
        numbers, ids = evidence.numbers, evidence.ids
        statuses = _statuses(record["result"], ("status",))
        for turn in trajectory.turns[index + 1 :]:
            if turn.role != "agent" or turn.invalid is not None or turn.parsed.get("action_type") not in ("speak", "end_call"):
                continue
            content = turn.parsed.get("content", "")
            if not content or not customer_turn_understood(content, self.domain):
                continue
            values = quoted_values(content)
            words = " ".join(content.lower().replace("-", " ").split())
            if (
                set(values.amounts + values.numbers) & numbers or set(values.ids) & ids
                or any(re.search(rf"\b{re.escape(status)}\b", words) for status in statuses)
            ):
                return True
        return False

    def _confusing_turns(self, trajectory: Trajectory) -> list[str]:
        """The agent's spoken turns the customer could not follow, read as the customer read them."""
        heard: list[str] = []
        said: list[str] = [self.domain.bank["greeting"]]
        found = []
        for number, turn in enumerate(trajectory.turns):
            if turn.role == "customer":
                heard.append(turn.raw)
                continue
            if turn.invalid is not None or turn.parsed.get("action_type") != "speak":
                continue
            content = turn.parsed.get("content", "")
            reading = read_agent_turn(content, heard, said, self.domain)
            if reading.confusing:
                found.append(f"turn {number}: {reading.kind} ({reading.reason})")
            said.append(content)
        return found

    def _inconsistent_claims(self, trajectory: Trajectory, results: dict[int, _ResultEvidence]) -> list[str]:
        """Every claim and stated value of the agent's spoken turns that the evidence it had by then
        (successful tool results and arguments, the customer's words) does not back; ``results``:
        :func:`_results_evidence` of the trajectory's calls."""
        succeeded: set[str] = set()
        statuses: set[str] = set()
        balances: set[float] = set()
        numbers: set[float] = set()
        ids: set[str] = set()
        bad: list[str] = []
        promises: list[Claim] = []
        for index, turn in enumerate(trajectory.turns):
            if turn.role == "customer":
                numbers |= evidence_numbers(turn.text)
                ids.update(ID_PATTERN.findall(turn.text))
                continue
            call = turn.parsed.get("tool_outcome")
            if call is not None:
                if call["schema_ok"]:
                    shown = json.dumps(call["args"])
                    numbers |= evidence_numbers(shown)
                    ids.update(ID_PATTERN.findall(shown))
                if call["ok"]:
                    self._learn(call, succeeded, statuses, balances)
                    numbers |= results[index].numbers
                    ids.update(results[index].ids)
                continue
            if turn.invalid is not None or turn.parsed.get("action_type") not in ("speak", "end_call"):
                continue
            text = turn.parsed.get("content", "")
            claims = spoken_claims(text, self.domain)
            promises.extend(claim for claim in claims if claim.mode == "promise")
            bad.extend(self._check_claims([c for c in claims if c.mode == "fact"], succeeded, statuses, balances))
            values = quoted_values(text)
            bad.extend(f"amount: ${amount:,.2f} appears in no tool result" for amount in values.amounts if amount not in numbers)
            bad.extend(f"number: {number:g} appears in no tool result" for number in values.numbers if number not in numbers)
            bad.extend(f"id: {found} appears in no tool result" for found in values.ids if found not in ids)
        bad.extend(f"{problem} (a promise the call never kept)" for problem in self._check_claims(promises, succeeded, statuses, balances))
        return bad

    @staticmethod
    def _learn(call: dict[str, Any], succeeded: set[str], statuses: set[str], balances: set[float]) -> None:
        """Add what one successful call establishes: its tool succeeded, the statuses and balances it returned."""
        result = call["result"]
        succeeded.add(call["tool"])
        statuses.update(_statuses(result))
        if call["tool"] == LOOKUP:
            balances.update(round(a["balance"], 2) for a in result["accounts"])
        if call["tool"] == "transfer_funds":
            balances.update(round(v, 2) for v in result["new_balances"].values())

    def _check_claims(self, claims: list[Claim], succeeded: set[str], statuses: set[str], balances: set[float]) -> list[str]:
        """The claims the evidence does not back, each with why."""
        bad = []
        for claim in claims:
            matched = claim.matched.lower()
            backed_by_status = any(re.search(rf"\b{re.escape(status)}\b", matched.replace("-", " ")) for status in statuses)
            if claim.kind == "requires":
                if claim.target == "never":
                    supported = backed_by_status
                elif claim.target == "any_domain_tool":
                    supported = bool(succeeded - {LOOKUP})
                else:
                    supported = claim.target in succeeded or backed_by_status
                if not supported:
                    needs = "no tool does this" if claim.target == "never" else f"without a successful {claim.target.replace('_', ' ')}"
                    bad.append(f"{claim.name}: {claim.matched!r} {needs}")
            elif claim.target == "card_status":
                word = re.sub(r"^.* is (currently |now )?", "", matched)
                allowed = self._status_words.get(word, {word})
                card_statuses = statuses & set(self._card_statuses)
                if not card_statuses & allowed:
                    bad.append(f"{claim.name}: {claim.matched!r} but check_card_status returned {sorted(card_statuses) or 'nothing'}")
            else:
                amounts = quoted_values(claim.matched).amounts
                if not amounts or any(amount not in balances for amount in amounts):
                    bad.append(f"{claim.name}: {claim.matched!r} matches no balance the tools returned")
        return bad


def _statuses(result: Any, keys: tuple[str, ...] = ("status", "kind")) -> set[str]:
    """Status and kind words of a tool result (card, transaction and dispute statuses; transaction
    kinds such as ``refund``), as spoken words: they back a claim that names them. ``keys`` picks
    which (an explanation's substance is a status, not a transaction kind)."""
    found: set[str] = set()
    if isinstance(result, dict):
        for key, value in result.items():
            if key in keys and isinstance(value, str):
                found.add(value.replace("_", " "))
            elif isinstance(value, (dict, list)):
                found |= _statuses(value, keys)
    elif isinstance(result, list):
        for item in result:
            found |= _statuses(item, keys)
    return found


# -- LLM judge ---------------------------------------------------------------------------------
# A fraction starts where no digit or point precedes it: without that lookbehind, a long digit run
# with no "/" after it is retried from every one of its digits (quadratic time). A score followed by
# an exponent ("score": 1e999, which the JSON reader refused) is not read as its mantissa.
_SCORE = re.compile(r"score[^\w-]{0,3}\s*(-?\d+(?:\.\d+)?)(?![\d.]|[eE][+-]?\d)(?:\s*(?:/|out of)\s*(\d+(?:\.\d+)?))?", re.IGNORECASE)
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
                # _NUMBER has no second group; in the others it is None when no "/ N" followed
                denominator = match.group(2) if pattern is not _NUMBER else None
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

    def judge(self, trajectory: Trajectory, shown_results: Mapping[int, str] | None = None) -> Verdict:
        """The model's score on the rule judge's verdict (``shown_results``: see :meth:`RuleJudge.judge`)."""
        verdict = self.rule.judge(trajectory, shown_results)
        outputs = self.backend.generate([self.request(trajectory)])
        error = getattr(outputs[0], "error", None) if outputs else "no output"
        if error is not None:
            failed = {"judge": TurnHealth(False, (f"judge backend failed ({error}); the rule judge's score used",)).to_dict()}
            return replace(verdict, judge="rule_fallback", note=f"judge backend failed: {error}", health=failed)
        text = outputs[0].text
        score, problem = parse_judge_score(text, self.max_score)
        health = {"judge": judge_answer_health(text, self.max_score).to_dict()}
        if score is None:
            return replace(verdict, judge="rule_fallback", note=problem, health=health)
        return replace(verdict, score=score, judge="llm", note=problem, health=health)


RUBRIC_FIELDS = {"score": (int, float), "resolved": bool, "hallucination": bool, "reason": str}
"""The rubric's answer (``data/judge.json``): its fields and their JSON types."""


def judge_answer_health(text: str, max_score: float = 3.0) -> TurnHealth:
    """The health of one judge answer: in format when it is the rubric's JSON object alone, every
    field present with its type; repaired when the score had to be read another way (from text around
    the object, from prose, as a fraction); a rule violation when the score lies outside 0-``max_score``.
    Total: any ``str`` gives a record."""
    bounded = bound_text(text)[0] if isinstance(text, str) else ""
    stripped = bounded.strip()
    loaded = safe_json_loads(stripped)[0] if stripped.startswith("{") else None
    repaired = []
    if not isinstance(loaded, dict):
        first, last = stripped.find("{"), stripped.rfind("}")
        embedded = safe_json_loads(stripped[first : last + 1])[0] if 0 <= first < last else None
        if isinstance(embedded, dict):
            loaded = embedded
            repaired.append("JSON read from inside other text")
    fields_ok = isinstance(loaded, dict) and all(
        isinstance(loaded.get(name), kind) and not (kind is not bool and isinstance(loaded.get(name), bool))
        for name, kind in RUBRIC_FIELDS.items()
    )
    score, problem = parse_judge_score(bounded, max_score)
    if score is not None and not (isinstance(loaded, dict) and isinstance(loaded.get("score"), (int, float)) and not isinstance(loaded.get("score"), bool)):
        repaired.append("score read from text, not from the JSON 'score' number")
    if score is None:
        repaired.append(f"{problem}; the rule judge's score used")
    violations = (problem,) if score is not None and problem and "outside" in problem else ()
    return TurnHealth(format_ok=fields_ok and not repaired and not violations, repaired=tuple(repaired), rule_violations=violations)
