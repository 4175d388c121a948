"""Health checks of the two SEAD roles (the vocabulary is :mod:`dialogue_gym.health`).

Owner (``user``): in format when all six tags of its record are there with valid values; repaired
with whatever the parser fixed; role reversal when it speaks as the caller (``data/health.json``,
"I'm Alex", "our platform", ...) or out of character; rule violations:

- a state dimension moves more than ``max_state_step`` levels in one turn;
- status 1 (completed) with cooperation below 3 (the game reads it as 0);
- it raises a concern of a behavior category none of its profile's behaviors has (``behavior_cues``);
- it copies the caller's last line, or gives the same reply ``same_reply_run`` times in a row.

Caller (``agent``): in format when the tagged (or JSON) output carries the utterance and a full
in-range state estimate; role reversal when it speaks as the owner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from dialogue_gym.errors import ScenarioError
from dialogue_gym.health import CHARACTER_BREAKS, MODEL_TALK, SERVICE_VOICE, RoleVoice, TurnHealth, check_patterns
from dialogue_gym.scenarios.common import MAX_CACHED_TEXT_CHARS, read_json
from dialogue_gym.scenarios.sead.data import DATA_DIR, BehaviorLibrary, Campaign
from dialogue_gym.scenarios.sead.parsing import AgentMove, UserMove
from dialogue_gym.scenarios.sead.state import STATE_NAMES, UserState
from dialogue_gym.scenarios.understanding import content_words, highest_overlap

DEFAULT_HEALTH_FILE = DATA_DIR / "health.json"
MIN_COOPERATION_TO_ACT = 3
ECHO_MIN_WORDS = 4
"""A reply with fewer content words than this copies nothing (``"Okay."`` after ``"Okay?"``)."""
MAX_READINGS = 16384
"""Memoised reply readings per rule set (the memo is emptied when full)."""


class ReplyReading(NamedTuple):
    reversals: tuple[str, ...]
    categories: frozenset[str]
    echoes: bool


@dataclass(frozen=True)
class SeadHealthRules:
    """The checks' settings and lexicons, from ``data/health.json`` and the campaign."""

    max_state_step: int
    same_reply_run: int
    echo_overlap: float
    voices: dict[str, RoleVoice]
    behavior_cues: tuple[tuple[str, re.Pattern[str]], ...]
    """``(category, pattern)`` pairs."""
    # The memos are no init fields, so dataclasses.replace() gives the new rules empty ones: a reading
    # of the old rules' cues and voices must not answer for rules with others.
    _readings: dict[tuple[str, str], ReplyReading] = field(default_factory=dict, init=False, repr=False, compare=False)
    _reply_readings: dict[str, tuple[tuple[str, ...], frozenset[str], frozenset[str]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """What a reply says whatever it answers: its other-side phrases, cued categories, content words."""

    def read_reply(self, reply: str, caller_line: str) -> ReplyReading:
        """What the owner's ``reply`` says against the caller's last line: its other-side phrases, the
        behavior categories it raises, whether it copies the line. Memoised on short texts, so a scripted
        owner, which repeats its lines, pays a dict lookup a turn."""
        key = (reply, caller_line)
        reading = self._readings.get(key)
        if reading is None:
            reading = self._read(reply, caller_line)
            if len(reply) + len(caller_line) <= MAX_CACHED_TEXT_CHARS:
                if len(self._readings) >= MAX_READINGS:
                    self._readings.clear()
                self._readings[key] = reading
        return reading

    def _read(self, reply: str, caller_line: str) -> ReplyReading:
        reading = self._reply_readings.get(reply)
        if reading is None:
            cued = frozenset(category for category, pattern in self.behavior_cues if pattern.search(reply))
            reading = (self.voices["user"].reversals(reply), cued, content_words(reply))
            if len(reply) <= MAX_CACHED_TEXT_CHARS:
                if len(self._reply_readings) >= MAX_READINGS:
                    self._reply_readings.clear()
                self._reply_readings[reply] = reading
        reversals, cued, mine = reading
        heard = content_words(caller_line)
        # A line without content words is copied by no reply, whatever echo_overlap (0.0 is a valid setting).
        echoes = len(mine) >= ECHO_MIN_WORDS and bool(heard) and highest_overlap(mine, (heard,)) >= self.echo_overlap
        return ReplyReading(reversals, cued, echoes)


def _fill(pattern: str, agent_name: str, company: str) -> str:
    # str.replace, not str.format: the patterns hold regex braces such as {0,40}.
    return pattern.replace("{agent_name}", re.escape(agent_name)).replace("{company}", re.escape(company))


def load_health_rules(campaign: Campaign, library: BehaviorLibrary, path: str | Path = DEFAULT_HEALTH_FILE) -> SeadHealthRules:
    """The rules of ``path`` for this campaign and library; errors name the file and the field."""
    categories = frozenset(behavior.category for behavior in library.behaviors)
    return _load_health_rules(str(path), campaign.agent_name, campaign.company, categories)


@lru_cache(maxsize=16)
def _load_health_rules(path: str, agent_name: str, company: str, categories: frozenset[str]) -> SeadHealthRules:
    path = Path(path)
    data = read_json(path)
    where = str(path)
    settings = {}
    for name, kind, low, high in (("max_state_step", int, 1, 5), ("same_reply_run", int, 2, 15), ("echo_overlap", float, 0.0, 1.0)):
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)) or not low <= value <= high:
            raise ScenarioError(f"{where}: field {name!r} must be {'an int' if kind is int else 'a number'} in [{low}, {high}], got {value!r}.")
        settings[name] = value
    voices_data = data.get("role_voice")
    if not isinstance(voices_data, dict) or set(voices_data) != {"agent", "user"}:
        raise ScenarioError(f"{where}: field 'role_voice' must map both roles 'agent' and 'user' to pattern lists, got {voices_data!r:.120}.")
    voices = {}
    for role, patterns in voices_data.items():
        filled = [_fill(p, agent_name, company) for p in check_patterns(patterns, f"{where}: role_voice[{role!r}]")]
        # The owner speaking like any service agent ("How can I help you?") has taken the caller's part too.
        owner = role == "user"
        voices[role] = RoleVoice(
            [*(SERVICE_VOICE if owner else ()), *filled], where=f"{where}: role_voice[{role!r}]", breaks=CHARACTER_BREAKS if owner else MODEL_TALK
        )
    cues_data = data.get("behavior_cues")
    if not isinstance(cues_data, dict):
        raise ScenarioError(f"{where}: field 'behavior_cues' must map behavior categories to pattern lists, got {cues_data!r:.120}.")
    cues = []
    for category, patterns in cues_data.items():
        if category not in categories:
            raise ScenarioError(f"{where}: behavior_cues names {category!r}, which is no category of the behavior library; use one of {sorted(categories)}.")
        checked = check_patterns(patterns, f"{where}: behavior_cues[{category!r}]")
        cues.append((category, re.compile("|".join(f"(?:{p})" for p in checked), re.IGNORECASE)))
    return SeadHealthRules(voices=voices, behavior_cues=tuple(cues), **settings)


def user_turn_health(
    move: UserMove,
    previous: UserState,
    profile_categories: frozenset[str],
    rules: SeadHealthRules,
    earlier_replies: list[str],
    caller_line: str,
) -> TurnHealth:
    """The checks of one owner turn: ``move`` as parsed from ``previous``, the categories of the
    profile's behaviors, the owner's earlier replies in this call and the caller's last line."""
    reply = move.reply
    reading = rules.read_reply(reply, caller_line)
    violations = []
    step = rules.max_state_step
    for name, old, new in zip(STATE_NAMES, previous, move.state):
        if new - old > step or old - new > step:
            violations.append(f"{name} moved {old} -> {new} in one turn (at most {step})")
    if move.status == 1 and move.state.cooperation < MIN_COOPERATION_TO_ACT:
        violations.append(f"status 1 (completed) with cooperation {move.state.cooperation} < {MIN_COOPERATION_TO_ACT}")
    if not reading.categories <= profile_categories:
        violations += [f"raises a {category} concern, which none of its behaviors has" for category in sorted(reading.categories - profile_categories)]
    if reading.echoes:
        violations.append("copies the caller's last line")
    run = rules.same_reply_run - 1
    if reply and len(earlier_replies) >= run and all(earlier == reply for earlier in earlier_replies[-run:]):
        violations.append(f"the same reply {rules.same_reply_run} times in a row")
    repaired = move.repairs if "status" not in move.missing else (*move.repairs, "no <status> tag; read as 0 (continue)")
    return TurnHealth(move.problem is None and not move.missing, repaired, reading.reversals, tuple(violations))


def agent_turn_health(move: AgentMove, rules: SeadHealthRules) -> TurnHealth:
    """The checks of one caller turn: the utterance and a full, in-range estimate, spoken as the caller."""
    return TurnHealth(
        format_ok=move.problem is None and move.format != "plain" and move.estimate is not None,
        repaired=(move.problem,) if move.problem else (),
        role_reversal=rules.voices["agent"].reversals(move.utterance),
    )
