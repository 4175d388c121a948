"""The intent-dynamics model: how a simulated user's next intent level follows from its context.

A softmax-linear policy over the six levels: ``p(z' | x) = softmax(x @ W)``, where ``x`` are named
binary / scalar features of the user's context just before it replies (its previous level, what it
understood of the assistant's last utterance -- the acts its sentences carry and whether it was
confusing, an echo, a repeat or a monologue, read by :mod:`~dialogue_gym.scenarios.tracer.acts` --
how far the session is, its persona and the merchant's industry). One model serves three roles:
the default scripted user (weights from ``data/user_dynamics.json``), the synthetic reference
generator (the same weights plus hidden per-merchant effects the features cannot see), and the
small policy the ``cpu-strategy`` trainer learns (weights learnt from zero).
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.tracer.acts import ACTS, FLAGS, carries, read_turn
from dialogue_gym.scenarios.tracer.data import (
    DYNAMICS_FILE,
    LEVELS,
    MAX_USER_TURNS,
    World,
    load_weights,
    load_world,
)

CONTACT_ACT = "contact_request"
PUSHY_AFTER = 2
"""The ``pushy`` feature is on once the assistant has asked for contact information this many times."""


@dataclass(frozen=True)
class FeatureMap:
    """Named features of a user's context; :meth:`features` builds the vector ``x``."""

    names: tuple[str, ...]
    max_turns: int = MAX_USER_TURNS

    @classmethod
    def from_world(cls, world: World, max_turns: int = MAX_USER_TURNS) -> FeatureMap:
        names = (
            "bias",
            "prev:start",
            *(f"prev:{level}" for level in range(1, LEVELS - 1)),
            "progress",
            *(f"act:{act}" for act in ACTS),
            *(f"turn:{flag}" for flag in FLAGS),
            "pushy",
            *(f"personality:{p}" for p in world.personalities),
            *(f"industry:{i}" for i in world.industries),
            *(f"need:{n}" for n in world.needs),
        )
        return cls(names, max_turns)

    @property
    def size(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int | None:
        return _positions(self.names).get(name)

    def features(
        self,
        profile: dict[str, Any],
        assistant_utterances: Sequence[str],
        previous_level: int | None,
        turn: int,
        own_replies: Sequence[str] = (),
    ) -> np.ndarray:
        """``x`` for a user about to make its ``turn``-th reply (0-based), having heard ``assistant_utterances``
        (opening first), said ``own_replies`` (its reply texts, oldest first) and last said
        ``previous_level`` (``None`` before its first reply).

        ``profile`` is the episode profile (``{"user": {...}, "merchant": {...}, ...}``); persona
        values outside the world's categories simply switch no feature on. The last utterance is
        read in context (:func:`~dialogue_gym.scenarios.tracer.acts.read_turn`): the merchant's
        facts, the user's last reply, the assistant's earlier utterances."""
        x = np.zeros(self.size)
        positions = _positions(self.names)
        facts = tuple(str(f) for f in profile.get("merchant", {}).get("facts", ()))
        on = ["bias", "prev:start" if previous_level is None else f"prev:{previous_level}"]
        if assistant_utterances:
            heard = own_replies[-1] if own_replies else ""
            reading = read_turn(assistant_utterances[-1], facts, heard, assistant_utterances[:-1])
            on += [f"act:{act}" for act in reading.acts]
            on += [f"turn:{flag}" for flag in reading.flags]
        else:
            on.append("act:none")
        if _asked_for_contact(assistant_utterances, facts, PUSHY_AFTER):
            on.append("pushy")
        user = profile.get("user", {})
        on += [f"personality:{user.get('personality')}", f"need:{user.get('need')}"]
        on.append(f"industry:{profile.get('merchant', {}).get('industry')}")
        for name in on:
            position = positions.get(name)
            if position is not None:
                x[position] = 1.0
        x[positions["progress"]] = min(turn, self.max_turns) / self.max_turns
        return x


def _asked_for_contact(utterances: Sequence[str], facts: tuple[str, ...], times: int) -> bool:
    """Whether at least ``times`` of ``utterances`` ask for contact, counting only that far: recounting
    every utterance every turn was 40% of a feature vector whose reading was memoised, and stopping
    early takes 1.3% of the instructions off a TRACER user turn (test_tracer_dynamics.py holds it
    equal to the full count)."""
    for utterance in utterances:
        if carries(utterance, CONTACT_ACT, facts):
            times -= 1
            if times <= 0:
                return True
    return times <= 0


@lru_cache(maxsize=32)
def _positions(names: tuple[str, ...]) -> dict[str, int]:
    return {name: i for i, name in enumerate(names)}


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


class IntentDynamics:
    """``p(z' | x) = softmax(x @ weights)``; ``weights`` has shape ``(features, 6)``."""

    def __init__(self, feature_map: FeatureMap, weights: np.ndarray):
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (feature_map.size, LEVELS):
            raise ConfigError(
                f"weights must have shape ({feature_map.size}, {LEVELS}) (features x levels), got {weights.shape}."
            )
        self.feature_map = feature_map
        self.weights = weights

    @classmethod
    def zeros(cls, feature_map: FeatureMap | None = None) -> IntentDynamics:
        feature_map = feature_map or FeatureMap.from_world(load_world())
        return cls(feature_map, np.zeros((feature_map.size, LEVELS)))

    @classmethod
    def from_file(cls, path: str | Path = DYNAMICS_FILE, feature_map: FeatureMap | None = None) -> IntentDynamics:
        feature_map = feature_map or FeatureMap.from_world(load_world())
        weights = np.zeros((feature_map.size, LEVELS))
        for name, row in load_weights(path, feature_map.names).items():
            weights[feature_map.index(name)] = row
        return cls(feature_map, weights)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Level probabilities for one context ``(F,)`` or a batch ``(N, F)``."""
        return softmax(np.asarray(x) @ self.weights)

    def sample(self, x: np.ndarray, rng: random.Random) -> int:
        return draw_level(np.asarray(x) @ self.weights, rng)


_CUMULATIVE: dict[bytes, list[float]] = {}
"""Unnormalised CDFs of float64 logit vectors of the six levels lately drawn from, keyed by their
bytes: a scripted user meets the same few contexts again and again, and NumPy's per-call cost on six
numbers was most of a draw."""
_MAX_CUMULATIVE = 16384


def draw_level(logits: np.ndarray, rng: random.Random) -> int:
    """One level drawn from ``softmax(logits)`` with ``rng`` (inverse CDF on one uniform draw, so a
    seeded ``random.Random`` replays exactly)."""
    if type(logits) is not np.ndarray or logits.dtype != np.float64 or logits.shape != (LEVELS,):
        cumulative = _cdf(logits)
        return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), LEVELS - 1))
    key = logits.tobytes()
    memoised = _CUMULATIVE.get(key)
    if memoised is None:
        memoised = _cdf(logits).tolist()
        if len(_CUMULATIVE) >= _MAX_CUMULATIVE:
            _CUMULATIVE.clear()
        _CUMULATIVE[key] = memoised
    # bisect_right on the non-decreasing CDF is searchsorted(side="right") on it; a NaN logit makes the
    # target NaN, which both place past the end (no comparison with NaN holds; NumPy sorts NaN last)
    return min(bisect_right(memoised, rng.random() * memoised[-1]), LEVELS - 1)


def _cdf(logits: np.ndarray) -> np.ndarray:
    """The unnormalised CDF of ``softmax(logits)`` (shifted by the maximum, so no exponent overflows)."""
    return np.cumsum(np.exp(logits - logits.max()))
