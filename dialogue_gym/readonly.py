"""Data that crosses the game's boundary: what a policy is handed is its own, cached reference data is read-only.

A policy (an evaluated agent, a probe, user code in a gym loop) may keep, edit or vandalise whatever
it is handed, so a :class:`~dialogue_gym.game.Game` hands out copies (``observe``, ``info``,
``role_profile``, ``episode_profile``, ``privileged``), and reference data cached for every game of a
process (TRACER's reference sessions, whose merchants DM-Bench's assistant is told about) is frozen
where it is loaded, so no slip in a copy can poison the episodes that follow.
"""

from __future__ import annotations

from typing import Any, Mapping, NoReturn

import numpy as np


class ReadOnlyDict(dict):
    """A ``dict`` whose mutating methods raise ``TypeError``; JSON, pickle and ``dict(...)`` see a plain dict.

    A ``dict`` subclass rather than ``types.MappingProxyType``: a proxy cannot be pickled (a game built
    from Python-made references travels to Ray workers) nor written by ``json``."""

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("this data is read-only (cached for every episode of the process); make a copy with thawed() to edit it")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        # pickle's default rebuilds a dict subclass item by item through __setitem__, which refuses
        return (ReadOnlyDict, (dict(self),))


_LEAVES = frozenset({str, int, float, bool, type(None)})


def frozen(value: Any) -> Any:
    """JSON-like ``value`` made read-only all the way down: mappings as :class:`ReadOnlyDict`, lists as tuples."""
    if isinstance(value, Mapping):
        return ReadOnlyDict({key: frozen(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(frozen(item) for item in value)
    return value


def thawed(value: Any) -> Any:
    """A deep copy of JSON-like ``value`` the caller owns: mappings as dicts, lists and tuples as lists,
    arrays copied (the inverse of :func:`frozen` for data read from JSON)."""
    if type(value) in _LEAVES:  # most of the data, and far cheaper to rule out than a Mapping
        return value
    if isinstance(value, Mapping):
        return {key: thawed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thawed(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def message_copies(messages: Any) -> list[dict[str, Any]]:
    """Copies of chat messages (dicts of strings), for an observation: a policy that edits its history
    edits its own copy, never the game's record or the prompt the game renders next."""
    return [{**message} for message in messages]
