"""Load and validate the RL-ADA banking domain: tools, intent taxonomy, customer phrasing, cue
lexicon, judge rules, prompts, bank generator data, and the arena / held-out scenarios.

Every file lives under ``data/``; a user swaps in their own domain with ``data_dir=...`` (any file
missing there falls back to the packaged one). Errors name the file, the line (JSONL files) or the
entry, and the field, e.g. ``intents.jsonl: line 12: field 'tool' is 'refund'; use one of [...]``.

Numbers must be finite everywhere (``NaN``, ``Infinity`` and overflowing literals are refused with the
file, line and field); money amounts are at least one cent. Regular expressions (cues, claims, schema
patterns) may not use an unbounded gap (``.*``, ``.+``, ``[^...]*``): use a bounded one such as
``.{0,120}``, so that matching them stays linear in the length of a text.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import string
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from dialogue_gym.errors import ScenarioError
from dialogue_gym.inputs import read_utf8
from dialogue_gym.scenarios.common import read_json as _read_json_syntax
from dialogue_gym.scenarios.common import require
from dialogue_gym.types import finite_number, first_non_finite

DATA_DIR = Path(__file__).parent / "data"
FILES = (
    "tools.json", "intents.jsonl", "customer.json", "lexicon.json", "judge.json", "prompts.json", "bank.json",
    "arena_scenarios.jsonl", "heldout_scenarios.jsonl",
)
LEVELS = ("direct", "vague", "camouflage")
"""Concealment levels of the customer, from plain to contextual camouflage."""
SOURCES = ("banking77", "core", "banking77+core")
FACT_KEYS = frozenset(
    {"merchant", "amount", "day", "last4", "person", "country", "atm", "company", "descriptor", "source", "target"}
)
"""Placeholders customer templates may use; every episode's facts define all of them."""
PLANT_KINDS = {
    "transaction": {"kind", "status", "copies", "merchant", "foreign"},
    "card": {"status", "virtual"},
    "account": {"identity_verified"},
    "move": set(),
    "suspicious": set(),
}
TRANSACTION_KINDS = ("card_payment", "cash_withdrawal", "transfer_out", "transfer_in", "top_up", "deposit", "fee", "direct_debit", "refund")
TRANSACTION_STATUSES = ("posted", "pending", "reverted", "declined", "failed")
CARD_STATUSES = ("active", "inactive", "frozen", "blocked", "pin_blocked", "expiring", "shipped", "contactless_off")
MERCHANT_SOURCES = ("merchants", "descriptor", "atm", "transfer_fee", "company")
CLAIM_TARGETS = ("never", "any_domain_tool")
"""Besides a tool name, what a ``requires`` claim of ``judge.json`` may need: ``never`` (an action no tool
performs, e.g. unblocking a card: backed only by a status the tools returned) or ``any_domain_tool``
(a success claim such as "resolved": backed by any successful domain tool)."""
CONFUSING_KINDS = ("not_understood", "content_free", "echo", "repeat", "off_topic", "monologue")
"""What the customer can make of a confusing agent turn (:mod:`.reading`); ``customer.json["confused"]`` has lines for each."""
FAMILY_LINES = ("hint", "camouflage", "camouflage_followup")
"""Customer lines of a family (``customer.json``); an intent may replace any of them."""
SCHEMA_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "enum", "pattern", "minimum", "maximum",
     "exclusiveMinimum", "minLength", "maxLength", "description"}
)
SCHEMA_TYPES = ("object", "string", "integer", "number", "boolean", "array")
MIN_AMOUNT = 0.01
"""Smallest money amount (one cent) in scenario data and tool arguments."""
MAX_PLANTED_COPIES = 10
"""Most copies of a planted transaction (``intents.jsonl``: ``plant.transaction.copies``)."""
MAX_BACKGROUND_TRANSACTIONS = 1000
"""Most background transactions per generated bank (``bank.json``): each episode generates them all."""
_UNBOUNDED_GAP = re.compile(r"(?<!\\)(?:\.|\[\^(?:\\.|[^\]\\])*\])(?:[*+]|\{\d*,\})")
"""``.*``, ``.+``, ``[^...]*`` or ``.{n,}`` in a regular expression: quadratic search time on long text."""
_NUMBER_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|(-?(?:NaN|Infinity)|-?(?<![0-9])[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+))')
"""A JSON string (skipped) or a literal that can be non-finite: ``NaN``, ``Infinity``, a float. A number
starts only where a digit run starts (from inside a run it fails as from its start, and retrying every
digit of a long run was quadratic)."""


# -- records -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Intent:
    name: str
    tool: str
    source: str
    family: str
    plant: dict[str, Any] | None
    direct: tuple[str, ...]
    vague: tuple[str, ...]
    index: int
    phrasing: dict[str, tuple[str, ...]] = dc_field(default_factory=dict)
    """Per-intent replacements of the family's customer lines (``hint``, ``camouflage``, ``camouflage_followup``)."""

    @property
    def phrase(self) -> str:
        """The label as words (``transaction charged twice``): what a customer must never say."""
        return self.name.replace("_", " ")


@dataclass(frozen=True)
class Scenario:
    id: str
    intent: str
    kind: str
    customer_winnable: bool
    safety: bool
    concealment: str
    facts: dict[str, Any]


@dataclass(frozen=True, eq=False)
class Domain:
    """Everything the rules read, loaded once per data folder (hashed by identity, so functions
    over a domain can be memoised)."""

    tools: tuple[Tool, ...]
    intents: tuple[Intent, ...]
    customer: dict[str, Any]
    cues: dict[str, tuple[re.Pattern[str], ...]]
    cue_names: tuple[str, ...]
    context: tuple[tuple[str, re.Pattern[str]], ...]
    """Named context cues (``lexicon.json["context"]``): details of a story that point at no tool by
    themselves (an amount said twice, a card statement descriptor, an ATM); features for learned agents."""
    signs: dict[str, tuple[re.Pattern[str], ...]]
    """Signs of each family's problem (``lexicon.json["problem_signs"]``): how a customer tells that
    problem in other words than its tool's cues ("it's been sitting there" for a pending payment). The
    reward reads them against the customer's own family, which a counterpart does not know."""
    role_reversal: tuple[re.Pattern[str], ...]
    meta_talk: tuple[re.Pattern[str], ...]
    hangup_markers: tuple[re.Pattern[str], ...]
    judge: dict[str, Any]
    claims: tuple[tuple[str, str, str, re.Pattern[str]], ...]
    prompts: dict[str, Any]
    bank: dict[str, Any]
    arena: tuple[Scenario, ...]
    heldout: tuple[Scenario, ...]

    @cached_property
    def tool_names(self) -> tuple[str, ...]:
        """The tools' names in order, worked out once (``tools`` is a frozen tuple): every customer turn reads them."""
        return tuple(tool.name for tool in self.tools)

    def tool(self, name: str) -> Tool:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise ScenarioError(f"Unknown tool {name!r}; the domain's tools are {list(self.tool_names)}.")

    def intent(self, name: str) -> Intent:
        for intent in self.intents:
            if intent.name == name:
                return intent
        raise ScenarioError(
            f"Unknown intent {name!r}; use one of the {len(self.intents)} taxonomy intents, e.g. {self.intents[0].name!r}."
        )

    def scenario(self, scenario_id: str) -> Scenario:
        for scenario in (*self.arena, *self.heldout):
            if scenario.id == scenario_id:
                return scenario
        known = [s.id for s in (*self.arena, *self.heldout)]
        raise ScenarioError(f"Unknown scenario {scenario_id!r}; arena and held-out scenarios are {known}.")


# -- helpers -----------------------------------------------------------------------------------
def _path(data_dir: Path, name: str) -> Path:
    candidate = data_dir / name
    return candidate if candidate.exists() else DATA_DIR / name


def _non_finite(value: Any) -> tuple[str, float] | None:
    """``(field path, value)`` of the first non-finite number inside ``value`` (``facts.amount``), else None."""
    found = first_non_finite(value)
    if found is None:
        return None
    keys, number = found
    field = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in keys).lstrip(".")
    return field, number


def _non_finite_line(text: str) -> int | None:
    """The line of the first non-finite number literal in JSON ``text``."""
    for token in _NUMBER_LITERAL.finditer(text):
        if token.group(1) and not math.isfinite(float(token.group(1))):
            return text.count("\n", 0, token.start()) + 1
    return None


def _check_finite(value: Any, path: Path, line: int | None) -> None:
    found = _non_finite(value)
    if found is not None:
        field, number = found
        where = f"{path}: line {line}" if line is not None else str(path)
        raise ScenarioError(f"{where}: field {field!r} is {number}; scenario data must hold finite numbers. Write a finite number there.")


def read_json(path: Path) -> Any:
    """A JSON data file, with finite numbers only; errors name the file, the line and the field."""
    try:
        data = _read_json_syntax(path)
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"{path}: unreadable JSON ({type(exc).__name__}: {str(exc)[:200]}). Fix the file.") from exc
    if _non_finite(data) is not None:
        _check_finite(data, path, _non_finite_line(path.read_text(encoding="utf-8")))
    return data


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line, with finite numbers only; errors name the line."""
    text = read_utf8(path, "pass data_dir= a folder whose JSONL files are UTF-8, one JSON object per line.", ScenarioError)
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{path}: line {number}: invalid JSON ({exc.msg}). Fix the syntax of that line.") from exc
        except (ValueError, RecursionError) as exc:
            raise ScenarioError(f"{path}: line {number}: unreadable JSON ({type(exc).__name__}: {str(exc)[:200]}). Fix that line.") from exc
        _check_finite(record, path, number)
        if not isinstance(record, dict):
            raise ScenarioError(f"{path}: line {number}: expected a JSON object, got {type(record).__name__}.")
        records.append((number, record))
    return records


def _choice(entry: dict[str, Any], field: str, options: tuple[str, ...] | frozenset[str], where: str) -> str:
    value = require(entry, field, str, where)
    if value not in options:
        raise ScenarioError(f"{where}: field {field!r} is {value!r}; use one of {sorted(options)}.")
    return value


def _flag(entry: dict[str, Any], field: str, where: str) -> bool:
    if field not in entry:
        raise ScenarioError(f"{where}: missing field {field!r}. Add it (true or false).")
    if not isinstance(entry[field], bool):
        raise ScenarioError(f"{where}: field {field!r} must be true or false, got {entry[field]!r}.")
    return entry[field]


def _unique(entry: dict[str, Any], field: str, seen: set[str], where: str) -> str:
    """The entry's ``field`` (a non-empty str), which no earlier entry of the file may share."""
    value = require(entry, field, str, where)
    if value in seen:
        raise ScenarioError(f"{where}: duplicate {field} {value!r}; every entry needs its own.")
    seen.add(value)
    return value


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _templates(entry: dict[str, Any], field: str, where: str) -> tuple[str, ...]:
    lines = require(entry, field, list, where)
    for position, line in enumerate(lines):
        if not isinstance(line, str) or not line.strip():
            raise ScenarioError(f"{where}: field {field!r}[{position}] must be a non-empty str, got {line!r}.")
        try:
            unknown = placeholders(line) - FACT_KEYS
        except ValueError as exc:
            raise ScenarioError(f"{where}: field {field!r}[{position}] is not a valid template ({exc}): {line!r}.") from exc
        if unknown:
            raise ScenarioError(
                f"{where}: field {field!r}[{position}] uses unknown placeholder(s) {sorted(unknown)}; "
                f"facts are {sorted(FACT_KEYS)}."
            )
    return tuple(lines)


def _compile(patterns: Any, where: str) -> tuple[re.Pattern[str], ...]:
    if not isinstance(patterns, list) or not patterns:
        raise ScenarioError(f"{where}: must be a non-empty list of regular expressions, got {patterns!r}.")
    compiled = []
    for position, pattern in enumerate(patterns):
        try:
            compiled.append(re.compile(pattern, re.IGNORECASE))
        except (re.error, TypeError) as exc:
            raise ScenarioError(f"{where}[{position}]: {pattern!r} is not a valid regular expression ({exc}).") from exc
        gap = _UNBOUNDED_GAP.search(pattern)
        if gap:
            raise ScenarioError(
                f"{where}[{position}]: {pattern!r} has the unbounded gap {gap.group(0)!r}, which makes matching quadratic "
                f"in the length of a text; use a bounded gap such as '.{{0,120}}'."
            )
    return tuple(compiled)


def _number(value: Any, where: str, field: str) -> float:
    """``value`` as a finite number (not a bool); errors name ``where`` and ``field``."""
    if not finite_number(value):
        raise ScenarioError(f"{where}: field {field!r} must be a finite number, got {value!r}.")
    return float(value)


def _count(value: Any, where: str, field: str) -> int:
    """``value`` as a non-negative int (not a bool); errors name ``where`` and ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScenarioError(f"{where}: field {field!r} must be a non-negative integer, got {value!r}.")
    return value


# -- tools ---------------------------------------------------------------------------------------
def _check_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        raise ScenarioError(f"{where}: a schema must be a JSON object, got {schema!r}.")
    unknown = set(schema) - SCHEMA_KEYWORDS
    if unknown:
        raise ScenarioError(f"{where}: unsupported schema keyword(s) {sorted(unknown)}; supported: {sorted(SCHEMA_KEYWORDS)}.")
    if "type" in schema and schema["type"] not in SCHEMA_TYPES:
        raise ScenarioError(f"{where}: field 'type' is {schema['type']!r}; use one of {list(SCHEMA_TYPES)}.")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ScenarioError(f"{where}: field 'properties' must be an object of name -> schema, got {properties!r}.")
    for name, sub in properties.items():
        _check_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise ScenarioError(f"{where}: field 'required' must be a list of property names, got {required!r}.")
    missing = set(required) - set(properties)
    if missing:
        raise ScenarioError(f"{where}: 'required' names {sorted(missing)}, which are not under 'properties'.")
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        raise ScenarioError(f"{where}: field 'enum' must be a non-empty list, got {schema['enum']!r}.")
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        raise ScenarioError(f"{where}: field 'additionalProperties' must be true or false, got {schema['additionalProperties']!r}.")
    bounds = {key: _number(schema[key], where, key) for key in ("minimum", "exclusiveMinimum", "maximum") if key in schema}
    lengths = {key: _count(schema[key], where, key) for key in ("minLength", "maxLength") if key in schema}
    for low in ("minimum", "exclusiveMinimum"):
        if low in bounds and "maximum" in bounds and bounds[low] > bounds["maximum"]:
            raise ScenarioError(f"{where}: {low} {bounds[low]} is above maximum {bounds['maximum']}; no value could pass. Swap or fix them.")
    if lengths.get("minLength", 0) > lengths.get("maxLength", math.inf):
        raise ScenarioError(f"{where}: minLength {lengths['minLength']} is above maxLength {lengths['maxLength']}; no string could pass.")
    if "pattern" in schema:
        _compile([schema["pattern"]], f"{where}.pattern")


def _load_tools(path: Path) -> tuple[Tool, ...]:
    data = read_json(path)
    tools, seen = [], set()
    for position, entry in enumerate(require(data, "tools", list, str(path))):
        where = f"{path}: tools[{position}]"
        name = _unique(entry, "name", seen, where)
        parameters = require(entry, "parameters", dict, where)
        _check_schema(parameters, f"{where}.parameters")
        if parameters.get("type") != "object":
            raise ScenarioError(f"{where}.parameters: field 'type' must be 'object', got {parameters.get('type')!r}.")
        tools.append(Tool(name, require(entry, "description", str, where), parameters))
    return tuple(tools)


# -- intents -------------------------------------------------------------------------------------
def _check_plant(plant: Any, where: str) -> None:
    if plant is None:
        return
    if not isinstance(plant, dict) or len(plant) != 1 or next(iter(plant)) not in PLANT_KINDS:
        raise ScenarioError(
            f"{where}: field 'plant' must be null or an object with exactly one of {sorted(PLANT_KINDS)}, got {plant!r}."
        )
    kind, spec = next(iter(plant.items()))
    if not isinstance(spec, dict) or set(spec) - PLANT_KINDS[kind]:
        raise ScenarioError(f"{where}: plant {kind!r} accepts the keys {sorted(PLANT_KINDS[kind])}, got {spec!r}.")
    checks = {
        ("transaction", "kind"): TRANSACTION_KINDS,
        ("transaction", "status"): TRANSACTION_STATUSES,
        ("transaction", "merchant"): MERCHANT_SOURCES,
        ("card", "status"): CARD_STATUSES,
    }
    for (plant_kind, key), options in checks.items():
        if kind == plant_kind and key in spec and spec[key] not in options:
            raise ScenarioError(f"{where}: plant {kind}.{key} is {spec[key]!r}; use one of {list(options)}.")
    copies = spec.get("copies", 1)
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= MAX_PLANTED_COPIES:
        raise ScenarioError(f"{where}: plant {kind}.copies must be an integer from 1 to {MAX_PLANTED_COPIES}, got {copies!r}.")
    if kind == "transaction" and "kind" not in spec:
        raise ScenarioError(f"{where}: plant transaction needs a 'kind' (one of {list(TRANSACTION_KINDS)}).")
    if kind == "card" and "status" not in spec:
        raise ScenarioError(f"{where}: plant card needs a 'status' (one of {list(CARD_STATUSES)}).")


def _load_intents(path: Path, tools: tuple[str, ...], families: set[str]) -> tuple[Intent, ...]:
    intents, seen = [], set()
    for number, entry in read_jsonl(path):
        where = f"{path}: line {number}"
        name = _unique(entry, "intent", seen, where)
        if not re.fullmatch(r"[a-z0-9_]+", name):
            raise ScenarioError(f"{where}: field 'intent' is {name!r}; use lower_snake_case (a-z, 0-9, _).")
        _check_plant(entry.get("plant"), where)
        intents.append(
            Intent(
                name=name,
                tool=_choice(entry, "tool", tools, where),
                source=_choice(entry, "source", SOURCES, where),
                family=_choice(entry, "family", frozenset(families), where),
                plant=entry.get("plant"),
                direct=_templates(entry, "direct", where),
                vague=_templates(entry, "vague", where),
                index=len(intents),
                phrasing={key: _templates(entry, key, where) for key in FAMILY_LINES if key in entry},
            )
        )
    if not intents:
        raise ScenarioError(f"{path}: no intents; add one JSON object per line.")
    return tuple(intents)


# -- customer phrasing, lexicon, judge, prompts, bank --------------------------------------------
def _load_customer(path: Path) -> dict[str, Any]:
    data = read_json(path)
    families = require(data, "families", dict, str(path))
    for name, family in families.items():
        where = f"{path}: families.{name}"
        if not isinstance(family, dict):
            raise ScenarioError(f"{where}: must be an object with hint, camouflage and camouflage_followup lists.")
        for key in FAMILY_LINES:
            _templates(family, key, where)
    for field in ("direct_followup_prefix", "acknowledgements", "hangups"):
        require(data, field, list, str(path))
    patience = require(data, "patience", int, str(path))
    if isinstance(patience, bool) or patience < 1:
        raise ScenarioError(f"{path}: field 'patience' must be >= 1, got {patience}.")
    confusion = require(data, "confusion_patience", int, str(path))
    if isinstance(confusion, bool) or confusion < 0:
        raise ScenarioError(f"{path}: field 'confusion_patience' must be >= 0, got {confusion}.")
    confused = require(data, "confused", dict, str(path))
    missing = [kind for kind in CONFUSING_KINDS if not (isinstance(confused.get(kind), list) and confused[kind])]
    if missing:
        raise ScenarioError(f"{path}: field 'confused' needs a non-empty list of lines for each of {list(CONFUSING_KINDS)}; missing {missing}.")
    require(data, "confused_hangups", list, str(path))
    understanding = require(data, "understanding", dict, str(path))
    for key in ("topic_words", "service_words"):
        words = require(understanding, key, list, f"{path}: understanding")
        if not all(isinstance(word, str) and word == word.lower() for word in words):
            raise ScenarioError(f"{path}: understanding.{key} must be a non-empty list of lower-case words.")
    reveal = require(data, "reveal_after", dict, str(path))
    for level in ("vague", "camouflage"):
        if isinstance(reveal.get(level), bool) or not isinstance(reveal.get(level), int) or reveal[level] < 1:
            raise ScenarioError(f"{path}: reveal_after.{level} must be an int >= 1, got {reveal.get(level)!r}.")
    return data


def _check_side_worries(customer: dict[str, Any], tools: tuple[str, ...], path: Path) -> None:
    """``side_worries`` (optional; the ``contextual`` customer needs it): tool -> worry templates."""
    worries = customer.get("side_worries", {})
    if not isinstance(worries, dict):
        raise ScenarioError(f"{path}: field 'side_worries' must be an object of tool -> list of lines, got {type(worries).__name__}.")
    unknown = sorted(set(worries) - set(tools))
    if unknown:
        raise ScenarioError(f"{path}: side_worries for unknown tool(s) {unknown}; tools are {list(tools)}.")
    for tool in worries:
        _templates(worries, tool, f"{path}: side_worries")


def _check_withholding(customer: dict[str, Any], intents: tuple[Intent, ...], path: Path) -> None:
    """``withholding`` (optional; RLADA-Banking-v1's ``withholding`` customer needs it): the concealment
    ``levels`` at which a caller never states its problem, and ``stories``, each a list of lines true of
    every intent of its ``families``, which must be served by at least two tools (a story that names one
    tool withholds nothing)."""
    withholding = customer.get("withholding")
    if withholding is None:
        return
    where = f"{path}: withholding"
    if not isinstance(withholding, dict):
        raise ScenarioError(f"{where} must be an object with 'levels' and 'stories', got {type(withholding).__name__}.")
    levels = require(withholding, "levels", list, where)
    if not levels or not set(levels) <= set(LEVELS) - {"direct"}:
        raise ScenarioError(f"{where}: field 'levels' must be a non-empty list of {sorted(set(LEVELS) - {'direct'})}, got {levels!r}.")
    tools: dict[str, set[str]] = {}
    for intent in intents:
        tools.setdefault(intent.family, set()).add(intent.tool)
    for position, story in enumerate(require(withholding, "stories", list, where)):
        here = f"{where}.stories[{position}]"
        families = require(story, "families", list, here) if isinstance(story, dict) else None
        if families is None or not families:
            raise ScenarioError(f"{here} must be an object with a non-empty 'families' list and 'lines', got {story!r}.")
        unknown = sorted(set(families) - set(tools))
        if unknown:
            raise ScenarioError(f"{here}: unknown or intent-less families {unknown}; families are {sorted(tools)}.")
        served = set().union(*(tools[family] for family in families))
        if len(served) < 2:
            raise ScenarioError(f"{here}: families {families} are all served by {sorted(served)}; a story must fit intents of two tools.")
        _templates(story, "lines", here)


def _load_judge(path: Path, tools: tuple[str, ...]) -> tuple[dict[str, Any], tuple[tuple[str, str, str, re.Pattern[str]], ...]]:
    data = read_json(path)
    components = require(data, "components", dict, str(path))
    expected = {"routing", "lookup_first", "procedure", "clean_ending", "consistency"}
    if set(components) != expected or not all(finite_number(v) and v >= 0 for v in components.values()):
        raise ScenarioError(f"{path}: field 'components' must give a finite number >= 0 for each of {sorted(expected)}, got {components!r}.")
    claims = []
    for position, entry in enumerate(require(data, "claims", list, str(path))):
        where = f"{path}: claims[{position}]"
        name = require(entry, "name", str, where)
        if "requires" in entry:
            kind, target = "requires", _choice(entry, "requires", (*tools, *CLAIM_TARGETS), where)
        else:
            kind, target = "matches", _choice(entry, "matches", ("card_status", "balance"), where)
        claims.append((name, kind, target, _compile([require(entry, "pattern", str, where)], f"{where}.pattern")[0]))
    require(data, "rubric", str, str(path))
    require(data, "card_status_words", dict, str(path))
    return data, tuple(claims)


def _load_scenarios(path: Path, intents: dict[str, Intent]) -> tuple[Scenario, ...]:
    scenarios, seen = [], set()
    for number, entry in read_jsonl(path):
        where = f"{path}: line {number}"
        scenario_id = _unique(entry, "id", seen, where)
        intent = require(entry, "intent", str, where)
        if intent not in intents:
            raise ScenarioError(f"{where}: field 'intent' is {intent!r}, which is not in the intent taxonomy.")
        facts = entry.get("facts", {})
        if not isinstance(facts, dict) or set(facts) - FACT_KEYS:
            raise ScenarioError(f"{where}: field 'facts' must be an object with keys from {sorted(FACT_KEYS)}, got {facts!r}.")
        if "amount" in facts and _number(facts["amount"], where, "facts.amount") < MIN_AMOUNT:
            raise ScenarioError(f"{where}: field 'facts.amount' must be at least {MIN_AMOUNT} (one cent), got {facts['amount']!r}.")
        scenarios.append(
            Scenario(
                id=scenario_id,
                intent=intent,
                kind=_choice(entry, "kind", ("ambiguous", "clear", "fraud"), where),
                customer_winnable=_flag(entry, "customer_winnable", where),
                safety=_flag(entry, "safety", where),
                concealment=_choice(entry, "concealment", LEVELS, where),
                facts=dict(facts),
            )
        )
    return tuple(scenarios)


def _load_context(lexicon: dict[str, Any], path: Path) -> tuple[tuple[str, re.Pattern[str]], ...]:
    context = lexicon.get("context", {})
    if not isinstance(context, dict):
        raise ScenarioError(f"{path}: field 'context' must be an object of name -> regular expression, got {context!r}.")
    return tuple((name, _compile([pattern], f"{path}: context.{name}")[0]) for name, pattern in context.items())


def _load_signs(lexicon: dict[str, Any], path: Path, families: dict[str, Any]) -> dict[str, tuple[re.Pattern[str], ...]]:
    signs = lexicon.get("problem_signs", {})
    if not isinstance(signs, dict):
        raise ScenarioError(f"{path}: field 'problem_signs' must be an object of family -> list of regular expressions, got {signs!r:.80}.")
    unknown = sorted(set(signs) - set(families))
    if unknown:
        raise ScenarioError(f"{path}: problem_signs for unknown famil(ies) {unknown}; the families of customer.json are {sorted(families)}.")
    return {family: _compile(patterns, f"{path}: problem_signs.{family}") for family, patterns in signs.items()}


def _check_bank_numbers(bank: dict[str, Any], path: Path) -> None:
    """The generator's numbers: ``today`` a date, ``amount_range`` of at least a cent, counts and limits."""
    where = str(path)
    try:
        dt.date.fromisoformat(bank["today"])
    except ValueError as exc:
        raise ScenarioError(f"{where}: field 'today' must be a date YYYY-MM-DD, got {bank['today']!r}.") from exc
    amount_range = bank.get("amount_range", [4.5, 480.0])
    if not isinstance(amount_range, list) or len(amount_range) != 2:
        raise ScenarioError(f"{where}: field 'amount_range' must be [low, high], got {amount_range!r}.")
    low, high = (_number(value, where, f"amount_range[{i}]") for i, value in enumerate(amount_range))
    if not MIN_AMOUNT <= low <= high:
        raise ScenarioError(f"{where}: field 'amount_range' must have {MIN_AMOUNT} <= low <= high, got {amount_range!r}.")
    counts = bank.get("background_transactions", [12, 20])
    if not isinstance(counts, list) or len(counts) != 2:
        raise ScenarioError(f"{where}: field 'background_transactions' must be [fewest, most], got {counts!r}.")
    fewest, most = (_count(value, where, f"background_transactions[{i}]") for i, value in enumerate(counts))
    if not fewest <= most <= MAX_BACKGROUND_TRANSACTIONS:
        raise ScenarioError(
            f"{where}: field 'background_transactions' must have fewest <= most <= {MAX_BACKGROUND_TRANSACTIONS}, got {counts!r}."
        )
    limits = bank.get("limits", {"daily_transfer": 5000})
    if not isinstance(limits, dict) or "daily_transfer" not in limits:
        raise ScenarioError(f"{where}: field 'limits' must be an object with 'daily_transfer', got {limits!r}.")
    for name, value in limits.items():
        if _number(value, where, f"limits.{name}") < MIN_AMOUNT:
            raise ScenarioError(f"{where}: field 'limits.{name}' must be at least {MIN_AMOUNT}, got {value!r}.")


@lru_cache(maxsize=8)
def load_domain(data_dir: str | Path | None = None) -> Domain:
    """The whole domain from ``data_dir`` (default: the packaged banking domain), validated."""
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    if not folder.is_dir():
        raise ScenarioError(f"data_dir={str(folder)!r} is not a folder; pass a folder holding some of {list(FILES)}.")
    tools = _load_tools(_path(folder, "tools.json"))
    tool_names = tuple(tool.name for tool in tools)
    customer = _load_customer(_path(folder, "customer.json"))
    _check_side_worries(customer, tool_names, _path(folder, "customer.json"))
    intents = _load_intents(_path(folder, "intents.jsonl"), tool_names, set(customer["families"]))
    _check_withholding(customer, intents, _path(folder, "customer.json"))
    lexicon_path = _path(folder, "lexicon.json")
    lexicon = read_json(lexicon_path)
    cue_table = require(lexicon, "cues", dict, str(lexicon_path))
    unknown = set(cue_table) - set(tool_names)
    if unknown:
        raise ScenarioError(f"{lexicon_path}: cues for unknown tool(s) {sorted(unknown)}; tools are {list(tool_names)}.")
    cues = {tool: _compile(cue_table.get(tool, []) or ["(?!)"], f"{lexicon_path}: cues.{tool}") for tool in tool_names}
    judge, claims = _load_judge(_path(folder, "judge.json"), tool_names)
    prompts_path = _path(folder, "prompts.json")
    prompts = read_json(prompts_path)
    for field in ("agent", "customer"):
        require(prompts, field, str, str(prompts_path))
    styles = require(prompts, "styles", dict, str(prompts_path))
    if set(styles) != set(LEVELS):
        raise ScenarioError(f"{prompts_path}: field 'styles' must describe exactly {list(LEVELS)}, got {sorted(styles)}.")
    bank_path = _path(folder, "bank.json")
    bank = read_json(bank_path)
    for field in ("first_names", "last_names", "merchants", "descriptors", "companies", "atms", "people", "countries"):
        require(bank, field, list, str(bank_path))
    for field in ("bank_name", "greeting", "today"):
        require(bank, field, str, str(bank_path))
    _check_bank_numbers(bank, bank_path)
    by_name = {intent.name: intent for intent in intents}
    return Domain(
        tools=tools,
        intents=intents,
        customer=customer,
        cues=cues,
        cue_names=tuple(f"{tool}:{p.pattern}" for tool in tool_names for p in cues[tool]),
        context=_load_context(lexicon, lexicon_path),
        signs=_load_signs(lexicon, lexicon_path, customer["families"]),
        role_reversal=_compile(lexicon.get("role_reversal"), f"{lexicon_path}: role_reversal"),
        meta_talk=_compile(lexicon.get("meta_talk"), f"{lexicon_path}: meta_talk"),
        hangup_markers=_compile(lexicon.get("hangup_markers"), f"{lexicon_path}: hangup_markers"),
        judge=judge,
        claims=claims,
        prompts=prompts,
        bank=bank,
        arena=_load_scenarios(_path(folder, "arena_scenarios.jsonl"), by_name),
        heldout=_load_scenarios(_path(folder, "heldout_scenarios.jsonl"), by_name),
    )
