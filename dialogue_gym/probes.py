"""Probe policies: policies that try to reach the game instead of playing it.

They sit beside each scenario's audit (:mod:`dialogue_gym.audit`) and show what sealing holds off.

- :class:`DataMutator` plays like a fair policy, then vandalises everything it was handed (the
  ``start`` profile, every observation and ``info``, nested containers and the attributes reachable
  from them). Handed copies, it changes nothing: its episodes equal the fair policy's, and so do the
  episodes played after it in the same process.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np

from dialogue_gym.game import is_privileged

VANDAL = "<vandalised>"
"""What :func:`vandalise` writes wherever it can."""
_MAX_DEPTH = 12
"""How deep :func:`vandalise` follows containers and attributes (JSON-like data is a few levels deep)."""


def vandalise(value: Any, depth: int = 0, seen: set[int] | None = None) -> None:
    """Overwrite, extend and scramble every mutable thing reachable from ``value``: dict items, list
    items, writable arrays and object attributes (read-only data refuses, which is what it should do)."""
    seen = set() if seen is None else seen
    if depth > _MAX_DEPTH or id(value) in seen or isinstance(value, (str, bytes, int, float, type(None))):
        return
    seen.add(id(value))
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    else:
        children = list(getattr(value, "__dict__", {}).values())
    for child in children:
        vandalise(child, depth + 1, seen)
    try:
        if isinstance(value, dict):
            for key in list(value):
                value[key] = VANDAL
            value[VANDAL] = VANDAL
        elif isinstance(value, list):
            value[:] = [VANDAL] * (len(value) + 1)
        elif isinstance(value, set):
            value.clear()
            value.add(VANDAL)
        elif isinstance(value, np.ndarray):
            value[...] = 1
        else:
            for name in list(getattr(value, "__dict__", {})):
                setattr(value, name, VANDAL)
    except (TypeError, AttributeError, ValueError):
        pass


class DataMutator:
    """Plays as ``inner`` does (on private copies), then vandalises the originals it was handed.

    Reads the privileged channel exactly when ``inner`` does (so it is marked alike)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.privileged = is_privileged(inner)

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        memory = self.inner.start(copy.deepcopy(profile), seed)
        vandalise(profile)
        return memory

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]) -> list[str]:
        texts = self.inner.act_batch(copy.deepcopy(list(observations)), copy.deepcopy(list(infos)), memories)
        for handed in (*observations, *infos):
            vandalise(handed)
        return texts
