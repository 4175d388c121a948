"""Helpers every scenario's data loaders and output parsers share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dialogue_gym.errors import ScenarioError


def read_json(path: Path) -> Any:
    """A scenario data file; errors name the file and, for bad JSON, the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"Cannot read scenario file {str(path)!r}: {exc}. Pass an existing JSON file.") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg}). Fix the syntax at that line.") from exc


def require(entry: dict[str, Any], field: str, kind: type, where: str) -> Any:
    """``entry[field]``, which must be a ``kind`` (non-empty for str, list and dict); errors name ``where``."""
    if field not in entry:
        raise ScenarioError(f"{where}: missing field {field!r}. Add it ({kind.__name__}).")
    value = entry[field]
    if not isinstance(value, kind) or (kind in (str, list, dict) and not value):
        raise ScenarioError(f"{where}: field {field!r} must be a non-empty {kind.__name__}, got {value!r}.")
    return value


def to_int(value: object) -> int | None:
    """An integer read from model output (int, integral float or numeric string), else None."""
    kind = type(value)
    if kind is int:
        return value
    if kind is str:
        try:
            return int(value)
        except ValueError:
            return None
    if kind is float and value.is_integer():
        return int(value)
    return None


def clean_utterance(text: str, problems: list[str], max_chars: int) -> str:
    """Collapse whitespace; flag an empty utterance and truncate (and flag) one over ``max_chars``."""
    utterance = " ".join(text.split())
    if not utterance:
        problems.append("empty utterance")
    if len(utterance) > max_chars:
        problems.append(f"utterance of {len(utterance)} characters exceeds max_utterance_chars={max_chars}; truncated")
        utterance = utterance[:max_chars]
    return utterance
