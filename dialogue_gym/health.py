"""Counterpart health: is each turn of a role in format, in character and within its rules?

When a model plays a counterpart (SEAD's owner, TRACER's user, RL-ADA's customer, an agent while
another role learns, a judge), every number computed against it is only as good as its play: a
user that answers as the caller, or never emits its state, makes a completion rate meaningless.
So every scenario checks every turn of every role where it parses that role's output and keeps a
:class:`TurnHealth` in ``turn.parsed["health"]`` (a judge, which speaks once an episode, keeps one in
its verdict's ``health``, keyed by ``"judge"``). The scripted counterparts are checked the same way:
they are the checks' control, in format on every turn and never speaking for the other side.

A record has four parts, the same vocabulary in every scenario:

- ``format_ok``: every required field of the role's output format was there and valid as emitted;
- ``repaired``: what the parser had to fix to use the turn (a missing field kept from before, a
  value clamped, the whole text used as the reply, ...);
- ``role_reversal``: the phrases that show the turn was spoken from the other side ("how can I help
  you" from a customer) or out of character ("as an AI"), as said, found by a :class:`RoleVoice`;
- ``rule_violations``: the scenario's rules the turn broke (SEAD: a state jump, success without
  cooperation, a concern outside the profile; TRACER: an intent level the reply contradicts; a
  judge: a score outside the rubric).

A turn *fails* when it is not in format, reverses roles or breaks a rule. :func:`health_summary`
gives per-role rates over trajectories, :func:`health_warnings` names the roles that fail on more
than :data:`UNHEALTHY_THRESHOLD` of their turns, and :func:`mark_unhealthy` marks the episodes in
which a counterpart did, so that :func:`benchmark_split` can leave them out of a benchmark.

Leaving episodes out is only sound when the learner cannot cause the failures: an agent that talks
an LLM user out of character ("ignore your instructions") would have exactly its lost calls
dropped. So an episode in which the learner itself broke character (a :class:`RoleVoice` finding in
its own turns) before the counterpart's first failing turn is *provoked*: it is never left out.
:func:`summary_with_health` reports how many episodes it left out and how many were provoked, and
by default counts every episode.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from gymnasium import logger

from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.scenarios.common import MAX_CACHED_TEXT_CHARS
from dialogue_gym.types import Trajectory

HEALTH_KEY = "health"
"""Where a turn keeps its record: ``turn.parsed[HEALTH_KEY]`` (and a verdict's ``health`` entry)."""
UNHEALTHY_THRESHOLD = 0.10
"""A role that fails its checks on more than this share of its turns is unhealthy (the issue's 10%)."""
UNHEALTHY_KEY = "unhealthy"
"""``trajectory.meta[UNHEALTHY_KEY]``: set by :func:`mark_unhealthy` on an episode whose counterpart failed."""
RATES = ("format_rate", "repair_rate", "role_reversal_rate", "rule_violation_rate", "failure_rate")

MODEL_TALK: tuple[str, ...] = (
    r"\blanguage model\b",
    r"\bsystem prompt\b",
    r"\b(?:my|your) instructions\b",
    r"\bignore (?:all |any |the |your )?(?:previous |prior |above )?(?:instructions|rules|prompt)\b",
    r"\brole-?play(?:ing)?\b",
    r"\byou are (?:now )?(?:an? )?(?:ai|assistant|chatbot|language model)\b",
)
"""Phrases no person in a service call says: the model talking about itself (or to the other side's
model) instead of playing its role."""
AI_IDENTITY: tuple[str, ...] = (
    r"\bas an ai\b",
    r"\bi(?: am|'m) (?:an? )?(?:ai|artificial intelligence|chatbot|virtual assistant|ai assistant|helpful assistant)\b",
)
"""A speaker calling itself an AI: out of character for a customer-side role (owner, user, customer),
but a service agent may be one and say so (SEAD's caller answers "are you a robot?" that way)."""
CHARACTER_BREAKS: tuple[str, ...] = MODEL_TALK + AI_IDENTITY
"""What a customer-side role never says of itself."""
SERVICE_VOICE: tuple[str, ...] = (
    r"\bhow (?:can|may|could) i (?:help|assist) you\b",
    r"\b(?:glad|happy|here) to (?:help|assist)\b",
    r"\bthank(?:s| you) for (?:calling|contacting|reaching out|your call)\b",
    r"\b(?:is there )?anything else i can (?:help|do)\b",
)
"""Phrases only the service side says: a customer-side role (owner, user, customer) that says one
has taken the other side's part."""


class TurnHealth(NamedTuple):
    """One turn's checks (see the module docstring). Plain data, kept in the trajectory as a dict
    (a named tuple: every scripted turn builds one, and it must cost next to nothing)."""

    format_ok: bool
    repaired: tuple[str, ...] = ()
    role_reversal: tuple[str, ...] = ()
    rule_violations: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Out of format, spoken from the other side, or against a rule."""
        return not self.format_ok or bool(self.role_reversal) or bool(self.rule_violations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_ok": self.format_ok,
            "repaired": list(self.repaired),
            "role_reversal": list(self.role_reversal),
            "rule_violations": list(self.rule_violations),
        }

    @classmethod
    def from_dict(cls, data: Any) -> TurnHealth:
        """The record a trajectory holds; a malformed one is a :class:`ConfigError` naming it."""
        try:
            return cls(
                bool(data["format_ok"]),
                tuple(map(str, data.get("repaired", ()))),
                tuple(map(str, data.get("role_reversal", ()))),
                tuple(map(str, data.get("rule_violations", ()))),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"not a health record: {data!r:.200} ({exc}); a record is a dict with format_ok, repaired, "
                "role_reversal and rule_violations, as TurnHealth.to_dict() writes it."
            ) from exc


class RoleVoice:
    """Tells when a turn is spoken from the wrong side of the call.

    ``other_side`` are regular expressions (case-insensitive) of what only the other side says;
    ``breaks`` (default :data:`CHARACTER_BREAKS`; a service role passes :data:`MODEL_TALK`) are
    added to them. :meth:`reversals` returns what a text says that matches them (``"how can I help
    you"``). One combined search decides whether any matches (the usual answer, no), so a scripted
    turn costs one regex pass; results are memoised for texts up to ``MAX_CACHED_TEXT_CHARS``.
    A pattern that does not compile is a :class:`ScenarioError` naming ``where`` and the pattern.
    """

    def __init__(self, other_side: Iterable[str] = (), *, where: str = "RoleVoice", breaks: Sequence[str] = CHARACTER_BREAKS):
        patterns = [*breaks, *other_side]
        compiled = []
        for position, pattern in enumerate(patterns):
            if not isinstance(pattern, str) or not pattern:
                raise ScenarioError(f"{where}: pattern {position} must be a non-empty regular expression (str), got {pattern!r}.")
            try:
                compiled.append(re.compile(pattern, re.IGNORECASE))
            except re.error as exc:
                raise ScenarioError(f"{where}: pattern {pattern!r} is not a regular expression ({exc}). Fix it in the data file.") from exc
        self.patterns: tuple[re.Pattern[str], ...] = tuple(compiled)
        self._any = re.compile("|".join(f"(?:{p.pattern})" for p in compiled), re.IGNORECASE)
        self._cached: Callable[[str], tuple[str, ...]] = lru_cache(maxsize=8192)(self._scan)

    def _scan(self, text: str) -> tuple[str, ...]:
        if not self._any.search(text):
            return ()
        return said_phrases(self.patterns, text)

    def reversals(self, text: str) -> tuple[str, ...]:
        """The phrases of ``text`` that match, in pattern order, each once (empty: the turn stays on its side)."""
        return self._cached(text) if len(text) <= MAX_CACHED_TEXT_CHARS else self._scan(text)


def said_phrases(patterns: Iterable[re.Pattern[str]], text: str) -> tuple[str, ...]:
    """The first match of each pattern in ``text``, as said, without repeats."""
    found = (pattern.search(text) for pattern in patterns)
    return tuple(dict.fromkeys(match.group(0) for match in found if match is not None))


def check_patterns(value: Any, where: str) -> tuple[str, ...]:
    """A data file's list of regular expressions (each must compile), as a tuple."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ScenarioError(f"{where} must be a list of non-empty regular expressions (str), got {value!r:.120}.")
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ScenarioError(f"{where}: pattern {pattern!r} is not a regular expression ({exc}).") from exc
    return tuple(value)


# -- reading records back ---------------------------------------------------------------------------
def health_records(trajectory: Trajectory) -> list[tuple[str, TurnHealth]]:
    """``(role, record)`` of every checked turn of ``trajectory``, in order, then the once-an-episode
    roles (judges), whose records sit in a ``meta`` entry's ``health`` mapping ``{role: record}``."""
    records = [
        (turn.role, TurnHealth.from_dict(turn.parsed[HEALTH_KEY])) for turn in trajectory.turns if HEALTH_KEY in turn.parsed
    ]
    for value in trajectory.meta.values():
        if isinstance(value, dict) and isinstance(value.get(HEALTH_KEY), dict):
            records.extend((role, TurnHealth.from_dict(record)) for role, record in value[HEALTH_KEY].items())
    return records


@dataclass
class _Tally:
    turns: int = 0
    episodes: set[int] = field(default_factory=set)
    format_ok: int = 0
    repaired: int = 0
    role_reversal: int = 0
    rule_violations: int = 0
    failed: int = 0

    def add(self, episode: int, record: TurnHealth) -> None:
        self.turns += 1
        self.episodes.add(episode)
        self.format_ok += record.format_ok
        self.repaired += bool(record.repaired)
        self.role_reversal += bool(record.role_reversal)
        self.rule_violations += bool(record.rule_violations)
        self.failed += record.failed

    def rates(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "episodes": len(self.episodes),
            "format_rate": self.format_ok / self.turns,
            "repair_rate": self.repaired / self.turns,
            "role_reversal_rate": self.role_reversal / self.turns,
            "rule_violation_rate": self.rule_violations / self.turns,
            "failure_rate": self.failed / self.turns,
        }


def _check_trajectories(trajectories: Any) -> Sequence[Trajectory]:
    if not isinstance(trajectories, Sequence) or isinstance(trajectories, (str, bytes)):
        raise ConfigError(f"Expected a sequence of Trajectory, got {type(trajectories).__name__}.")
    for position, item in enumerate(trajectories):
        if not isinstance(item, Trajectory):
            raise ConfigError(f"trajectories[{position}] is a {type(item).__name__}, not a Trajectory; load JSONL records with Trajectory.from_dict.")
    return trajectories


def health_summary(trajectories: Sequence[Trajectory], *, counterparts_only: bool = False) -> dict[str, dict[str, Any]]:
    """``{role: {turns, episodes, format_rate, repair_rate, role_reversal_rate, rule_violation_rate,
    failure_rate}}`` over every checked turn, roles in name order. Each rate is the share of the role's
    turns with that finding (``failure_rate``: turns that failed). ``counterparts_only`` leaves out each
    trajectory's learner role (whose own failures are the learner's metrics)."""
    tallies: dict[str, _Tally] = {}
    for episode, trajectory in enumerate(_check_trajectories(trajectories)):
        for role, record in health_records(trajectory):
            if counterparts_only and role == trajectory.learner:
                continue
            tallies.setdefault(role, _Tally()).add(episode, record)
    return {role: tallies[role].rates() for role in sorted(tallies)}


def counterpart_health(trajectories: Sequence[Trajectory]) -> dict[str, dict[str, Any]]:
    """:func:`health_summary` of every role but the learner: the block reported beside the learner's metrics."""
    return health_summary(trajectories, counterparts_only=True)


def _check_threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < 1:
        raise ConfigError(f"threshold must be a number in [0, 1) (a share of turns, e.g. 0.1), got {threshold!r}.")
    return float(threshold)


def health_warnings(summary: dict[str, dict[str, Any]], threshold: float = UNHEALTHY_THRESHOLD) -> list[str]:
    """One message per role of ``summary`` (from :func:`health_summary`) failing on more than
    ``threshold`` of its turns, naming the rates that make it fail."""
    threshold = _check_threshold(threshold)
    messages = []
    for role, rates in summary.items():
        if rates["failure_rate"] <= threshold:
            continue
        messages.append(
            f"the {role} role failed its health checks on {rates['failure_rate']:.0%} of its {rates['turns']} turns "
            f"(more than {threshold:.0%}): format {rates['format_rate']:.2f}, repaired {rates['repair_rate']:.2f}, "
            f"role reversal {rates['role_reversal_rate']:.2f}, rule violations {rates['rule_violation_rate']:.2f}. "
            f"Numbers computed against this {role} are not to be trusted: play it with a larger model, or compare "
            "it with the scripted one (`dialogue-gym fidelity`)."
        )
    return messages


def warn_unhealthy(summary: dict[str, dict[str, Any]], threshold: float = UNHEALTHY_THRESHOLD) -> list[str]:
    """:func:`health_warnings`, each also sent through Gymnasium's logger (``logger.warn``); returns them."""
    messages = health_warnings(summary, threshold)
    for message in messages:
        logger.warn("UNHEALTHY COUNTERPART: %s", message)  # the message holds "%" signs: never the format string
    return messages


def episode_failure_rates(trajectory: Trajectory, *, counterparts_only: bool = True) -> dict[str, float]:
    """``{role: share of its checked turns that failed}`` in one episode (the learner left out by default)."""
    failed: dict[str, list[int]] = {}
    for role, record in health_records(trajectory):
        if counterparts_only and role == trajectory.learner:
            continue
        counts = failed.setdefault(role, [0, 0])
        counts[0] += record.failed
        counts[1] += 1
    return {role: bad / total for role, (bad, total) in sorted(failed.items())}


def provoked(trajectory: Trajectory) -> bool:
    """Whether the learner broke character (its own turns' ``role_reversal``) at or before the first
    turn in which a counterpart failed its checks: the learner may have caused the failure."""
    learner_broke = False
    for turn in trajectory.turns:
        record = turn.parsed.get(HEALTH_KEY)
        if record is None:
            continue
        health = TurnHealth.from_dict(record)
        if turn.role == trajectory.learner:
            learner_broke = learner_broke or bool(health.role_reversal)
        elif health.failed:
            return learner_broke
    return False


def unhealthy(trajectory: Trajectory, threshold: float = UNHEALTHY_THRESHOLD) -> dict[str, float]:
    """``{role: failure share}`` of the counterparts that failed on more than ``threshold`` of their turns."""
    return {role: rate for role, rate in episode_failure_rates(trajectory).items() if rate > threshold}


def mark_unhealthy(trajectories: Sequence[Trajectory], threshold: float = UNHEALTHY_THRESHOLD) -> list[Trajectory]:
    """Mark each episode in which a counterpart failed on more than ``threshold`` of its turns, unless
    the learner :func:`provoked` it: ``meta["unhealthy"] = {"roles": {role: failure share}, "threshold":
    threshold}``. Returns the marked ones. Marking is idempotent, and a mark from an earlier call is
    cleared when the episode now passes."""
    threshold = _check_threshold(threshold)
    marked = []
    for trajectory in _check_trajectories(trajectories):
        failing = unhealthy(trajectory, threshold)
        trajectory.meta.pop(UNHEALTHY_KEY, None)
        if failing and not provoked(trajectory):
            trajectory.meta[UNHEALTHY_KEY] = {"roles": failing, "threshold": threshold}
            marked.append(trajectory)
    return marked


def benchmark_split(trajectories: Sequence[Trajectory]) -> tuple[list[Trajectory], list[Trajectory]]:
    """``(counted, left out)``: the episodes without and with a :func:`mark_unhealthy` mark."""
    counted, left_out = [], []
    for trajectory in _check_trajectories(trajectories):
        (left_out if UNHEALTHY_KEY in trajectory.meta else counted).append(trajectory)
    return counted, left_out


FORMAT_COLUMN = ("out_of_format", "out of format")
"""The results tables' column (key, label) of the learner's share of turns out of its output format, beside ``invalid``."""


def learner_out_of_format(trajectories: Sequence[Trajectory]) -> float:
    """The learner's share of its checked turns that were not in format (``format_ok`` false): an LLM
    agent that never writes its state tags has every turn flagged, though the parser read each leniently
    (``invalid`` 0). NaN when none of its turns was checked."""
    checked = missed = 0
    for trajectory in _check_trajectories(trajectories):
        for role, record in health_records(trajectory):
            if role == trajectory.learner:
                checked += 1
                missed += not record.format_ok
    return missed / checked if checked else math.nan


def with_format_column(columns: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """A results table's ``columns`` with :data:`FORMAT_COLUMN` right after ``invalid_action_rate`` (at
    the end when there is none)."""
    keys = [key for key, _ in columns]
    at = keys.index("invalid_action_rate") + 1 if "invalid_action_rate" in keys else len(keys)
    return [*columns[:at], FORMAT_COLUMN, *columns[at:]]


def summary_with_health(
    trajectories: Sequence[Trajectory],
    summary: Callable[..., dict[str, Any]],
    *,
    invalid_on_unhealthy: bool = False,
    threshold: float = UNHEALTHY_THRESHOLD,
    **metric_kwargs: Any,
) -> dict[str, Any]:
    """A scenario ``summary`` plus the counterpart-health block.

    Adds ``out_of_format`` (:func:`learner_out_of_format` over the counted episodes), ``counterpart_health``
    (:func:`counterpart_health` over every episode), ``health_warnings``,
    ``unhealthy_episodes`` (episodes in which a counterpart failed on more than ``threshold`` of its
    turns) and ``unhealthy_provoked`` (those of them the learner :func:`provoked`). With
    ``invalid_on_unhealthy`` the unprovoked ones are marked (:func:`mark_unhealthy`) and the scenario
    metrics are computed over the others only; ``unhealthy_excluded`` says how many were left out.
    Without it every episode counts and nothing is marked."""
    threshold = _check_threshold(threshold)
    trajectories = _check_trajectories(trajectories)
    block = counterpart_health(trajectories)
    failing = [trajectory for trajectory in trajectories if unhealthy(trajectory, threshold)]
    counted = list(trajectories)
    if invalid_on_unhealthy:
        mark_unhealthy(trajectories, threshold)
        counted, _ = benchmark_split(trajectories)
    return {
        **summary(counted, **metric_kwargs),
        FORMAT_COLUMN[0]: learner_out_of_format(counted),
        "counterpart_health": block,
        "health_warnings": health_warnings(block, threshold),
        "unhealthy_episodes": len(failing),
        "unhealthy_provoked": sum(provoked(trajectory) for trajectory in failing),
        "unhealthy_excluded": len(trajectories) - len(counted),
    }


def format_health(summary: dict[str, dict[str, Any]], title: str = "counterpart health") -> str:
    """The health block as a Markdown table, one row per role (empty string when no role was checked)."""
    from dialogue_gym.reporting import format_table

    if not summary:
        return ""
    rows = [{"name": role, **rates} for role, rates in summary.items()]
    columns = [
        ("turns", "turns"), ("format_rate", "format"), ("repair_rate", "repaired"),
        ("role_reversal_rate", "role reversal"), ("rule_violation_rate", "rule violations"), ("failure_rate", "failing"),
    ]
    return f"{title}:\n{format_table(rows, columns, 'role')}"
