"""SEAD user state p_t = (cooperation, emotion, trust) and profiles p_0 = (c0, e0, tr0, B)."""

from __future__ import annotations

import itertools
import numbers
import random
from dataclasses import dataclass
from typing import Any, NamedTuple

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.common import short_repr

COOPERATION_LEVELS = 5
EMOTION_LEVELS = 4
TRUST_LEVELS = 6
STATE_DIMS = (COOPERATION_LEVELS, EMOTION_LEVELS, TRUST_LEVELS)
STATE_NAMES = ("cooperation", "emotion", "trust")
TOP_COOPERATION, TOP_EMOTION, TOP_TRUST = (n - 1 for n in STATE_DIMS)
"""The highest level of each dimension."""
MAX_BEHAVIORS = 3


class UserState(NamedTuple):
    cooperation: int
    emotion: int
    trust: int

    def clamped(self) -> UserState:
        return UserState(*(min(max(int(v), 0), n - 1) for v, n in zip(self, STATE_DIMS)))

    def out_of_range(self) -> list[str]:
        return [
            f"{name} {short_repr(value)} outside 0..{n - 1}"
            for name, value, n in zip(STATE_NAMES, self, STATE_DIMS)
            if not 0 <= value < n
        ]


ALL_STATES: tuple[UserState, ...] = tuple(
    UserState(*s) for s in itertools.product(*(range(n) for n in STATE_DIMS))
)
"""The 5 x 4 x 6 = 120 initial states, in (c, e, tr) lexicographic order."""


def state_index(state: tuple[int, int, int]) -> int:
    c, e, tr = state
    return (c * EMOTION_LEVELS + e) * TRUST_LEVELS + tr


def _is_integer(value: Any) -> bool:
    """An integer that is not a bool. ``type(value) is int`` answers for the ints every profile holds
    without the ``numbers.Integral`` ABC check, which was a third of :meth:`Profile.coerce` (which
    every SEAD reset with a profile runs, each evaluation start among them)."""
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


@dataclass(frozen=True)
class Profile:
    """Initial user profile p_0: initial state, 1-3 behavior ids from the library, and an optional
    free-form persona text (the unstructured curriculum's profiles; shown in the user's prompt)."""

    state: UserState
    behaviors: tuple[str, ...]
    persona: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"state": list(self.state), "behaviors": list(self.behaviors)}
        if self.persona is not None:
            data["persona"] = self.persona
        return data

    @classmethod
    def coerce(cls, value: Any, library_ids: tuple[str, ...]) -> Profile:
        """Accept a Profile or its dict form; validate ranges and behavior ids."""
        if isinstance(value, Profile):
            profile = value
        elif isinstance(value, dict) and "state" in value:
            raw_state = value["state"]
            if not isinstance(raw_state, (list, tuple)) or len(raw_state) != 3 or not all(map(_is_integer, raw_state)):
                raise ScenarioError(
                    f"profile['state'] must be three ints (cooperation, emotion, trust), got {short_repr(raw_state)}."
                )
            behaviors = value.get("behaviors", ())
            if not isinstance(behaviors, (list, tuple)) or not all(isinstance(b, str) for b in behaviors):
                raise ScenarioError(f"profile['behaviors'] must be a list of behavior ids (str), got {short_repr(behaviors)}.")
            persona = value.get("persona")
            if persona is not None and not isinstance(persona, str):
                raise ScenarioError(f"profile['persona'] must be a str or absent, got {short_repr(persona)}.")
            profile = cls(UserState(*map(int, raw_state)), tuple(behaviors), persona)
        else:
            raise ScenarioError(
                f"A profile must be a Profile or a dict like {{'state': [c, e, tr], 'behaviors': [ids]}}, "
                f"got {short_repr(value)}."
            )
        problems = profile.state.out_of_range()
        if problems:
            raise ScenarioError(f"profile state {short_repr(tuple(profile.state))} is invalid: {'; '.join(problems)}.")
        if not 1 <= len(profile.behaviors) <= MAX_BEHAVIORS:
            raise ScenarioError(
                f"profile needs 1-{MAX_BEHAVIORS} behaviors, got {len(profile.behaviors)}: {profile.behaviors!r}."
            )
        unknown = [b for b in profile.behaviors if b not in library_ids]
        if unknown:
            raise ScenarioError(f"profile behaviors {unknown} are not in the behavior library; use ids like {library_ids[:5]}.")
        return profile


def sample_profile(rng: random.Random, library_ids: tuple[str, ...], state: UserState | None = None) -> Profile:
    """Uniform initial state (unless given) and 1-3 distinct behaviors, uniform from the library."""
    if state is None:
        state = ALL_STATES[rng.randrange(len(ALL_STATES))]
    chosen = rng.sample(range(len(library_ids)), rng.randint(1, MAX_BEHAVIORS))
    return Profile(state, tuple(library_ids[i] for i in sorted(chosen)))
