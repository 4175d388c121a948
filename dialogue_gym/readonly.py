"""Data that crosses the game's boundary: what a policy is handed is its own, cached reference data is read-only.

A policy (an evaluated agent, a probe, user code in a gym loop) may keep, edit or vandalise whatever
it is handed, so a :class:`~dialogue_gym.game.Game` hands out copies (``observe``, ``info``,
``role_profile``, ``episode_profile``, ``privileged``) or read-only data (the chat messages in an
observation, which every turn's observation shares), and reference data cached for every game of a
process (TRACER's reference sessions, whose merchants DM-Bench's assistant is told about) is frozen
where it is loaded, so no slip in a copy can poison the episodes that follow.
"""

from __future__ import annotations

from typing import Any, Mapping, NoReturn, Sequence

import numpy as np


class ReadOnlyDict(dict):
    """A ``dict`` whose mutating methods raise ``TypeError``; JSON, pickle and ``dict(...)`` see a plain dict.

    A ``dict`` subclass rather than ``types.MappingProxyType``: a proxy cannot be pickled (a game built
    from Python-made references travels to Ray workers) nor written by ``json``."""

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("this data is read-only (kept by the game or cached for every episode of the process); make a copy with thawed() to edit it")

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


def message(role: str, content: str) -> ReadOnlyDict:
    """A chat message as a game keeps it: read-only, so every observation can hand out the message itself.

    A game's history only grows, and its observations used to copy every message every turn (each
    observation of a 20-turn dialogue copied its 20 messages): sharing them took SEAD's agent learner
    turns from 409,392 to 396,706 instructions (callgrind, 300 episodes; ``compare_revisions.py
    --instructions`` against 8e997f0). With the kept messages read-only, an observation shares them
    (:func:`message_views`) and a policy still cannot change the game's record or the prompt it
    renders next: editing a message raises ``TypeError``, and the list it is handed is its own."""
    return ReadOnlyDict(role=role, content=content)


def message_views(messages: Sequence[ReadOnlyDict]) -> list[ReadOnlyDict]:
    """The chat history a policy is handed: its own list (to append to, trim or reorder) of the game's
    read-only :func:`message` objects, which it reads as it would copies (``json``, ``dict(...)``,
    chat templates) and must copy to edit. Equal to the per-turn copies it replaces
    (``test_readonly.py``); the game's messages must all be made by :func:`message`."""
    return list(messages)
