"""Load and validate the SEAD campaign (facts + SOP) and the behavior library.

Errors name the file, the entry and the field, so a user swapping in their own campaign can fix it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.common import read_json, require
from dialogue_gym.scenarios.sead.acts import ACTS

DATA_DIR = Path(__file__).parent / "data"
DEFAULT_SCENARIO_FILE = DATA_DIR / "scenario.json"
DEFAULT_BEHAVIORS_FILE = DATA_DIR / "behaviors.json"


@dataclass(frozen=True)
class Behavior:
    id: str
    category: str
    description: str
    lines: tuple[str, ...]
    resolved_by: frozenset[str]


class BehaviorLibrary:
    """The behaviors, addressable by id."""

    def __init__(self, behaviors: tuple[Behavior, ...]):
        self.behaviors = behaviors
        self.ids = tuple(b.id for b in behaviors)
        self._by_id = {b.id: b for b in behaviors}
        self._index = {b.id: i for i, b in enumerate(behaviors)}

    def __getitem__(self, behavior_id: str) -> Behavior:
        try:
            return self._by_id[behavior_id]
        except KeyError:
            raise ScenarioError(
                f"Unknown behavior id {behavior_id!r}. Use one of the library's ids: {', '.join(self.ids)}."
            ) from None

    def index(self, behavior_id: str) -> int:
        self[behavior_id]
        return self._index[behavior_id]


@dataclass(frozen=True)
class Campaign:
    name: str
    agent_name: str
    company: str
    facts: dict[str, str]
    sop: tuple[dict[str, Any], ...]




@lru_cache(maxsize=16)
def load_behaviors(path: str | Path = DEFAULT_BEHAVIORS_FILE) -> BehaviorLibrary:
    path = Path(path)
    data = read_json(path)
    categories = require(data, "categories", dict, str(path))
    for name, category in categories.items():
        acts = require(category, "resolved_by", list, f"{path}: category {name!r}")
        unknown = [act for act in acts if act not in ACTS]
        if unknown:
            raise ScenarioError(
                f"{path}: category {name!r}: field 'resolved_by' has unknown acts {unknown}; "
                f"known acts are {sorted(ACTS)}."
            )
    behaviors = []
    seen: set[str] = set()
    for position, entry in enumerate(require(data, "behaviors", list, str(path))):
        where = f"{path}: behaviors[{position}]"
        behavior_id = require(entry, "id", str, where)
        if behavior_id in seen:
            raise ScenarioError(f"{where}: duplicate id {behavior_id!r}. Give every behavior a unique id.")
        seen.add(behavior_id)
        category = require(entry, "category", str, where)
        if category not in categories:
            raise ScenarioError(
                f"{where}: field 'category' is {category!r}, which is not declared under 'categories'. "
                f"Use one of {sorted(categories)} or declare it."
            )
        lines = require(entry, "lines", list, where)
        behaviors.append(
            Behavior(
                id=behavior_id,
                category=category,
                description=require(entry, "description", str, where),
                lines=tuple(lines),
                resolved_by=frozenset(categories[category]["resolved_by"]),
            )
        )
    return BehaviorLibrary(tuple(behaviors))


@lru_cache(maxsize=16)
def load_campaign(path: str | Path = DEFAULT_SCENARIO_FILE) -> Campaign:
    path = Path(path)
    data = read_json(path)
    where = str(path)
    facts = require(data, "facts", dict, where)
    sop = require(data, "sop", list, where)
    for position, stage in enumerate(sop):
        require(stage, "name", str, f"{path}: sop[{position}]")
        require(stage, "instruction", str, f"{path}: sop[{position}]")
    return Campaign(
        name=require(data, "name", str, where),
        agent_name=require(data, "agent_name", str, where),
        company=require(data, "company", str, where),
        facts={key: str(value) for key, value in facts.items()},
        sop=tuple(sop),
    )
