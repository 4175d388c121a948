"""SEAD's Profile Controller: the curriculum over initial user profiles (SPEC section 1).

It never acts inside a dialogue; it only picks the profiles p_0 = (c0, e0, tr0, B) that the next
batch of dialogues starts from, and learns which initial states are near the target completion
rate from the trajectories those dialogues produced (Mistake Analysis).

Modes (the paper's Table 3 ablations):

* ``full``: cold start uniform over the 120 states, then weights w(s) = 1 - |CR(s) - target| on
  the completion rates accumulated over the run; unseen states weigh 1 (explored first).
* ``uniform`` ("w/o MA"): the structured grid, sampled uniformly, no adaptation.
* ``unstructured`` ("w/o MA + w/o PS"): free-form personas, not drawn from the grid.
* ``released``: the curriculum of SEAD's public code (SPEC section 1), per-dimension value weights
  instead of per-state ones. From the last batch: its completion rate CR_b, the deviation
  d = CR_b - target, and per value v of each dimension the dialogues that started there, count(v),
  and their success rate sr(v). If d < -0.1 (too hard) w(v) = 1 + 2|d| sr(v); if d > 0.1 (too easy)
  w(v) = 1 + 2d (1 - sr(v)); otherwise w(v) = 1 + 0.1 / count(v). Decisions where the SPEC is
  silent: an unseen value has sr = 0.5 (SPEC) and count = 1 (so it weighs as much as a value seen
  once, the most any value gets); "the last batch" is the last :meth:`update` that brought a finished
  dialogue, and before one every valid value weighs 1 (cold start); d is rounded to 12 decimals so a
  batch exactly 0.1 from the target (24 of 60) lands in the middle band as the SPEC's strict
  inequalities say, not on the side float rounding picks. The extremes (cooperation 0 and 4,
  emotion 0 and 3, trust 0 and 5) weigh 0 unless ``include_extremes``. Each dimension is
  normalised and c, e, tr are drawn independently: the state weight is the product of the three
  marginals, so the consistency rules and n_max remove states exactly as resampling would.

In every grid mode a state stops being sampled once ``n_max`` dialogues started from it, no
profile appears twice in a batch, and profiles breaking a consistency rule are resampled.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.scenarios.sead.data import (
    DATA_DIR,
    DEFAULT_BEHAVIORS_FILE,
    BehaviorLibrary,
    load_behaviors,
)
from dialogue_gym.scenarios.sead.state import (
    ALL_STATES,
    MAX_BEHAVIORS,
    STATE_DIMS,
    STATE_NAMES,
    Profile,
    UserState,
    state_index,
)
from dialogue_gym.types import Outcome, Trajectory, finite_number

MODES = ("full", "uniform", "unstructured", "released")
RELEASED_DEADBAND = 0.1
"""released mode: |d| up to this is the middle band (SPEC: strict "d < -0.1" / "d > 0.1")."""
RELEASED_GAIN = 2.0
"""released mode: the 2 of w(v) = 1 + 2|d| sr(v) and w(v) = 1 + 2d (1 - sr(v))."""
RELEASED_EXPLORATION = 0.1
"""released mode: the 0.1 of w(v) = 1 + 0.1 / count(v) in the middle band."""
CATEGORIES = ("too_easy", "ideal", "too_hard", "unseen")
DEFAULT_RULES_FILE = DATA_DIR / "profile_rules.json"
DEFAULT_PERSONAS_FILE = DATA_DIR / "personas.json"
_MAX_ATTEMPTS = 10_000


@dataclass(frozen=True)
class ProfileRules:
    """The declarative consistency table (data/profile_rules.json)."""

    state_rules: tuple[dict[str, Any], ...]
    behavior_rules: tuple[dict[str, Any], ...]

    def state_violation(self, state: UserState) -> str | None:
        values = dict(zip(STATE_NAMES, state))
        for rule in self.state_rules:
            if all(low <= values[name] <= high for name, (low, high) in rule["when"].items()):
                return rule["reason"]
        return None

    def violations(self, profile: Profile, library: BehaviorLibrary) -> list[str]:
        reasons = [r for r in [self.state_violation(profile.state)] if r]
        categories = [library[b].category for b in profile.behaviors]
        for rule in self.behavior_rules:
            if rule.get("same_category") and len(set(categories)) < len(categories):
                reasons.append(rule["reason"])
            elif "categories" in rule and all(c in categories for c in rule["categories"]):
                reasons.append(rule["reason"])
        return reasons


@lru_cache(maxsize=8)
def load_rules(path: str | Path = DEFAULT_RULES_FILE) -> ProfileRules:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    for position, rule in enumerate(data.get("state_rules", [])):
        unknown = set(rule.get("when", {})) - set(STATE_NAMES)
        if unknown or "reason" not in rule:
            raise ScenarioError(
                f"{path}: state_rules[{position}]: needs 'when' over {list(STATE_NAMES)} and a 'reason'; got {rule!r}."
            )
    for position, rule in enumerate(data.get("behavior_rules", [])):
        if "reason" not in rule or not ("categories" in rule or rule.get("same_category")):
            raise ScenarioError(f"{path}: behavior_rules[{position}]: needs 'categories' or 'same_category', and a 'reason'.")
    return ProfileRules(tuple(data.get("state_rules", [])), tuple(data.get("behavior_rules", [])))


def _jsonable(value: Any) -> Any:
    return [_jsonable(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


class ProfileController:
    """Samples initial user profiles for SEAD-Outbound and adapts to the agent's completion rates.

    Args:
        mode: ``"full"``, ``"uniform"``, ``"unstructured"`` or ``"released"`` (see the module docstring).
        batch_size: profiles per iteration (SPEC: 60); ``sample()`` without ``n`` returns this many.
        n_max: dialogues per initial state over a run before the state is no longer sampled (200).
        target: the completion rate the curriculum aims at (0.5).
        band: ``(low, high)`` completion rates counted as "ideal" (0.4, 0.6).
        smoothing: ``None`` (the paper) or ``"beta"``: CR = (successes + a) / (dialogues + a + b).
        prior: ``(a, b)`` of the Beta smoothing, centred at 0.5 by default.
        seed: seed of the sampler; the sampler's state is part of :meth:`state_dict`.
        include_extremes: ``released`` mode: also draw the extreme value of each dimension
            (cooperation 0 and 4, emotion 0 and 3, trust 0 and 5), which the released code excludes.
    """

    def __init__(
        self,
        mode: str = "full",
        batch_size: int = 60,
        n_max: int = 200,
        target: float = 0.5,
        band: tuple[float, float] = (0.4, 0.6),
        smoothing: str | None = None,
        prior: tuple[float, float] = (1.0, 1.0),
        seed: int = 0,
        include_extremes: bool = False,
        behaviors_file: str | None = None,
        rules_file: str | None = None,
        personas_file: str | None = None,
    ):
        if mode not in MODES:
            raise ConfigError(f"mode={mode!r} is not a ProfileController mode; use one of {MODES}.")
        for name, value in (("batch_size", batch_size), ("n_max", n_max)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive int, got {value!r}.")
        if not 0.0 <= target <= 1.0:
            raise ConfigError(f"target must be a completion rate in [0, 1], got {target!r}.")
        if len(band) != 2 or not 0.0 <= band[0] <= band[1] <= 1.0:
            raise ConfigError(f"band must be (low, high) with 0 <= low <= high <= 1, got {band!r}.")
        if smoothing not in (None, "beta"):
            raise ConfigError(f"smoothing={smoothing!r} is not supported; use None or 'beta'.")
        if len(prior) != 2 or min(prior) <= 0:
            raise ConfigError(f"prior must be two positive Beta parameters (a, b), got {prior!r}.")
        if not isinstance(include_extremes, bool):
            raise ConfigError(f"include_extremes must be True or False, got {include_extremes!r}.")
        self.mode = mode
        self.batch_size = batch_size
        self.n_max = n_max
        self.target = float(target)
        self.band = (float(band[0]), float(band[1]))
        self.smoothing = smoothing
        self.prior = (float(prior[0]), float(prior[1]))
        self.seed = seed
        self.include_extremes = include_extremes
        self.library = load_behaviors(behaviors_file or DEFAULT_BEHAVIORS_FILE)
        self.rules = load_rules(rules_file or DEFAULT_RULES_FILE)
        self._personas = json.loads(Path(personas_file or DEFAULT_PERSONAS_FILE).read_text(encoding="utf-8"))
        self._valid_states = np.array([self.rules.state_violation(s) is None for s in ALL_STATES])
        self.rng = random.Random(seed)
        self.successes = np.zeros(len(ALL_STATES))
        self.counts = np.zeros(len(ALL_STATES))
        self.batch_successes = np.zeros(len(ALL_STATES))
        self.batch_counts = np.zeros(len(ALL_STATES))
        self.iterations = 0

    # -- statistics (Mistake Analysis) -------------------------------------------------
    def update(self, trajectories: Iterable[Trajectory]) -> None:
        """Add finished dialogues to the per-initial-state statistics (accumulated over the run), and
        make them the last batch that the ``released`` mode reads (unless none of them finished)."""
        batch_successes, batch_counts = np.zeros(len(ALL_STATES)), np.zeros(len(ALL_STATES))
        for trajectory in trajectories:
            if not isinstance(trajectory, Trajectory):
                raise ConfigError(f"update() takes Trajectory objects, got {type(trajectory).__name__}.")
            if trajectory.outcome is None or trajectory.outcome.value == "backend_failure":
                continue  # unfinished, or no verdict on the agent
            index = state_index(tuple(trajectory.profile["state"]))
            batch_counts[index] += 1
            batch_successes[index] += trajectory.outcome is Outcome.SUCCESS
        self.counts += batch_counts
        self.successes += batch_successes
        if batch_counts.sum() > 0:  # a batch without a verdict has nothing to analyse
            self.batch_successes, self.batch_counts = batch_successes, batch_counts
        self.iterations += 1

    def completion_rates(self) -> np.ndarray:
        """CR per initial state (120 entries, (c, e, tr) lexicographic); NaN where unseen; Beta-smoothed if configured."""
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.smoothing == "beta":
                a, b = self.prior
                rates = (self.successes + a) / (self.counts + a + b)
            else:
                rates = self.successes / self.counts
        return np.where(self.counts > 0, rates, np.nan)

    def value_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``released`` mode: the normalised weights of the values of cooperation (5), emotion (4) and
        trust (6), from the last batch (see the module docstring); uniform over the valid values before one."""
        counts_grid, successes_grid = state_grid(self.batch_counts), state_grid(self.batch_successes)
        dialogues = self.batch_counts.sum()
        deviation = round(self.batch_successes.sum() / dialogues - self.target, 12) if dialogues else 0.0
        marginals = []
        for axis, size in enumerate(STATE_DIMS):
            others = tuple(a for a in range(len(STATE_DIMS)) if a != axis)
            counts, successes = counts_grid.sum(axis=others), successes_grid.sum(axis=others)
            success_rates = np.where(counts > 0, successes / np.maximum(counts, 1), 0.5)
            if not dialogues:
                weights = np.ones(size)
            elif deviation < -RELEASED_DEADBAND:
                weights = 1.0 + RELEASED_GAIN * abs(deviation) * success_rates
            elif deviation > RELEASED_DEADBAND:
                weights = 1.0 + RELEASED_GAIN * deviation * (1.0 - success_rates)
            else:
                weights = 1.0 + RELEASED_EXPLORATION / np.maximum(counts, 1)
            values = np.arange(size)
            allowed = self.include_extremes | ((values > 0) & (values < size - 1))
            weights = np.where(allowed, weights, 0.0)
            marginals.append(weights / weights.sum())
        return tuple(marginals)

    def _raw_weights(self, planned: np.ndarray | None = None) -> np.ndarray:
        counts = self.counts + (planned if planned is not None else 0)
        available = self._valid_states & (counts < self.n_max)
        if self.mode == "full":
            rates = self.completion_rates()
            weights = np.where(np.isnan(rates), 1.0, 1.0 - np.abs(rates - self.target))
        elif self.mode == "released":
            weights = np.einsum("i,j,k->ijk", *self.value_weights()).ravel()  # (c, e, tr) lexicographic, as ALL_STATES
        else:
            weights = np.ones(len(ALL_STATES))
        return np.where(available, weights, 0.0)

    def weights(self) -> np.ndarray:
        """The normalised sampling distribution over the 120 states (uniform in ``uniform`` mode; in
        ``released`` mode the product of :meth:`value_weights` over the open, consistent states)."""
        weights = self._raw_weights()
        total = weights.sum()
        return weights / total if total > 0 else weights

    def categories(self) -> list[str]:
        """Per state: ``too_easy`` (CR > band high), ``ideal``, ``too_hard`` (CR < band low) or ``unseen``."""
        low, high = self.band
        return [
            "unseen" if math.isnan(rate) else "too_easy" if rate > high else "too_hard" if rate < low else "ideal"
            for rate in self.completion_rates()
        ]

    def ideal_fraction(self) -> float:
        """Fraction of the played states whose completion rate is in the ideal band."""
        labels = [c for c in self.categories() if c != "unseen"]
        return labels.count("ideal") / len(labels) if labels else math.nan

    def weight_entropy(self) -> float:
        weights = self.weights()
        weights = weights[weights > 0]
        return float(-(weights * np.log(weights)).sum())

    # -- sampling ---------------------------------------------------------------------
    def _behaviors(self) -> tuple[str, ...]:
        ids = self.library.ids
        chosen = self.rng.sample(range(len(ids)), self.rng.randint(1, MAX_BEHAVIORS))
        return tuple(ids[i] for i in sorted(chosen))

    def _persona_profile(self) -> Profile:
        traits = self.rng.sample(self._personas["traits"], 2)
        state = UserState(*(b + sum(t["shift"][i] for t in traits) for i, b in enumerate(self._personas["base"])))
        return Profile(state.clamped(), self._behaviors(), persona=" and ".join(t["text"] for t in traits))

    def sample(self, n: int | None = None) -> list[dict[str, Any]]:
        """``n`` (default ``batch_size``) distinct, consistent profiles, as dicts for ``reset(options={"profile": ...})``."""
        n = self.batch_size if n is None else n
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"sample(n) needs a positive int, got {n!r}.")
        planned = np.zeros(len(ALL_STATES))
        batch: list[Profile] = []
        seen: set[Profile] = set()
        for _ in range(n):
            for _attempt in range(_MAX_ATTEMPTS):
                if self.mode == "unstructured":
                    profile = self._persona_profile()
                else:
                    weights = self._raw_weights(planned)
                    if weights.sum() <= 0:
                        raise ScenarioError(
                            f"Every initial state has reached n_max={self.n_max} dialogues; raise n_max or stop the run."
                        )
                    index = self.rng.choices(range(len(ALL_STATES)), weights=weights.tolist())[0]
                    profile = Profile(ALL_STATES[index], self._behaviors())
                if profile not in seen and not self.rules.violations(profile, self.library):
                    break
            else:
                raise ScenarioError(f"Could not draw {n} distinct consistent profiles; lower n (asked {n}).")
            seen.add(profile)
            batch.append(profile)
            planned[state_index(profile.state)] += 1
        return [profile.to_dict() for profile in batch]

    # -- persistence ------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "config": {
                "mode": self.mode, "batch_size": self.batch_size, "n_max": self.n_max, "target": self.target,
                "band": list(self.band), "smoothing": self.smoothing, "prior": list(self.prior), "seed": self.seed,
                "include_extremes": self.include_extremes,
            },
            "successes": self.successes.tolist(),
            "counts": self.counts.tolist(),
            "last_batch": {"successes": self.batch_successes.tolist(), "counts": self.batch_counts.tolist()},
            "iterations": self.iterations,
            "rng": _jsonable(self.rng.getstate()),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output. Everything is checked before anything changes:
        a wrong field raises :class:`ConfigError` naming it, with the expected and the actual value."""
        if not isinstance(state, dict):
            raise ConfigError(f"load_state_dict: state must be a dict from state_dict(), got {type(state).__name__}.")
        missing = [name for name in ("config", "successes", "counts", "iterations", "rng") if name not in state]
        if missing:
            raise ConfigError(f"load_state_dict: field(s) {missing} missing; pass the dict state_dict() returned.")
        if not isinstance(state["config"], dict):
            raise ConfigError(f"load_state_dict: field 'config' must be a dict, got {type(state['config']).__name__}.")
        unknown = sorted(set(state["config"]) - {"mode", "batch_size", "n_max", "target", "band", "smoothing", "prior", "seed", "include_extremes"})
        if unknown:
            raise ConfigError(f"load_state_dict: field 'config' has unknown key(s) {unknown}; pass the dict state_dict() returned.")
        mismatched = {k: (v, getattr(self, k)) for k, v in state["config"].items() if _jsonable(getattr(self, k)) != v}
        if mismatched:
            raise ConfigError(f"load_state_dict: saved config differs from this controller's: {mismatched}.")
        counts = _per_state_array(state["counts"], "counts")
        successes = _per_state_array(state["successes"], "successes")
        exceeding = np.flatnonzero(successes > counts)
        if exceeding.size:
            first = int(exceeding[0])
            raise ConfigError(
                f"load_state_dict: field 'successes' exceeds 'counts' at state {first} "
                f"({successes[first]:g} successes of {counts[first]:g} dialogues); the state is inconsistent."
            )
        batch_successes, batch_counts = _last_batch(state.get("last_batch"), self.mode)
        iterations = state["iterations"]
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
            raise ConfigError(f"load_state_dict: field 'iterations' must be an int >= 0, got {iterations!r:.80}.")
        rng = random.Random()
        try:
            rng.setstate(_tupled(state["rng"]))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigError(
                f"load_state_dict: field 'rng' is not a random.Random state (version, 625 ints, gauss): {exc}."
            ) from exc
        self.successes, self.counts, self.iterations, self.rng = successes, counts, iterations, rng
        self.batch_successes, self.batch_counts = batch_successes, batch_counts

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], **files: Any) -> ProfileController:
        if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
            raise ConfigError("from_state_dict: state must be a dict with a 'config' dict, as state_dict() returns.")
        config = dict(state["config"])
        for name in ("band", "prior"):
            if isinstance(config.get(name), list):
                config[name] = tuple(config[name])
        try:
            controller = cls(**config, **files)
        except TypeError as exc:
            raise ConfigError(f"from_state_dict: field 'config' does not fit ProfileController: {exc}.") from exc
        controller.load_state_dict(state)
        return controller


def _per_state_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float array of one finite, non-negative number per initial state."""
    if not isinstance(values, (list, tuple)):
        raise ConfigError(
            f"load_state_dict: field {name!r} must be a list of {len(ALL_STATES)} numbers (one per initial state), "
            f"got {type(values).__name__}."
        )
    if len(values) != len(ALL_STATES):
        raise ConfigError(
            f"load_state_dict: field {name!r} must hold {len(ALL_STATES)} numbers (one per initial state), got {len(values)}."
        )
    for position, value in enumerate(values):
        if not finite_number(value) or value < 0:
            raise ConfigError(
                f"load_state_dict: field {name!r}[{position}] must be a finite number >= 0, got {value!r:.80} ({type(value).__name__})."
            )
    return np.asarray(values, dtype=float)


def _last_batch(value: Any, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """The saved last-batch statistics (successes, counts). State dicts written before the
    ``released`` mode have none; only that mode reads them, so only that mode requires them."""
    if value is None:
        if mode == "released":
            raise ConfigError("load_state_dict: field 'last_batch' missing; the released mode needs it. Pass the dict state_dict() returned.")
        return np.zeros(len(ALL_STATES)), np.zeros(len(ALL_STATES))
    if not isinstance(value, dict) or set(value) != {"successes", "counts"}:
        raise ConfigError(f"load_state_dict: field 'last_batch' must be a dict with 'successes' and 'counts', got {value!r:.80}.")
    counts = _per_state_array(value["counts"], "last_batch.counts")
    successes = _per_state_array(value["successes"], "last_batch.successes")
    if (successes > counts).any():
        raise ConfigError("load_state_dict: field 'last_batch.successes' exceeds 'last_batch.counts'; the state is inconsistent.")
    return successes, counts


def state_grid(values: Sequence[float]) -> np.ndarray:
    """Reshape 120 per-state values to the (cooperation, emotion, trust) grid (5, 4, 6)."""
    return np.asarray(values, dtype=float).reshape(STATE_DIMS)
