"""Scenario-independent metrics over trajectories (pure functions).

Every sum behind a published number is exact (:func:`exact_sum`, :func:`exact_mean`, :func:`exact_row_sums`):
NumPy's ``sum`` and ``mean`` add in an order that depends on the array's length and layout and on the
CPU's SIMD width, so the same episodes gave 1.8424999999999998 on one machine and 1.8425 on another
(a tie at the third decimal the docs print). A correctly rounded sum has one value whatever the order
of its terms and whatever the CPU.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.types import Outcome, Trajectory


def exact_sum(values: Iterable[float]) -> float:
    """The correctly rounded sum of ``values`` (:func:`math.fsum`): the same bits in any order, on any CPU."""
    return math.fsum(values)


def exact_mean(values: Iterable[float]) -> float:
    """:func:`exact_sum` divided by the count (NaN when empty): order-free and CPU-independent."""
    values = list(values)
    return math.fsum(values) / len(values) if values else math.nan


def exact_row_sums(matrix: Any) -> np.ndarray:
    """:func:`exact_sum` of every row of a 2-D array (a bootstrap resample per row)."""
    return np.array([math.fsum(row) for row in np.asarray(matrix, dtype=float).tolist()], dtype=float)


class MeanStd(NamedTuple):
    mean: float
    std: float
    n: int


def mean_std(values: Sequence[float]) -> MeanStd:
    """Mean and sample standard deviation (ddof=1; NaN below two values), from exact sums."""
    values = [float(value) for value in values]
    if not values:
        return MeanStd(math.nan, math.nan, 0)
    mean = exact_mean(values)
    std = math.sqrt(math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)) if len(values) > 1 else math.nan
    return MeanStd(mean, std, len(values))


def _require(trajectories: Sequence[Trajectory]) -> Sequence[Trajectory]:
    if not isinstance(trajectories, Sequence) or isinstance(trajectories, (str, bytes)):
        raise ConfigError(f"Expected a sequence of Trajectory, got {type(trajectories).__name__}.")
    for position, item in enumerate(trajectories):
        if not isinstance(item, Trajectory):
            raise ConfigError(
                f"trajectories[{position}] is a {type(item).__name__}, not a Trajectory; "
                "load JSONL records with Trajectory.from_dict."
            )
    return trajectories


def cr(trajectories: Sequence[Trajectory]) -> float:
    """Completion rate: the fraction of trajectories whose outcome is success (NaN when empty)."""
    trajectories = _require(trajectories)
    if not trajectories:
        return math.nan
    return sum(t.outcome is Outcome.SUCCESS for t in trajectories) / len(trajectories)


def cr_interval(trajectories: Sequence[Trajectory], confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the completion rate."""
    trajectories = _require(trajectories)
    n = len(trajectories)
    if n == 0:
        return (math.nan, math.nan)
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}.")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = cr(trajectories)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At p = 0 (p = 1) centre and half are equal in exact arithmetic, so the bound is exactly 0 (1); in
    # floating point they differ by an ulp either way (40 failures gave a lower bound of 6.9e-18).
    return (0.0 if p == 0 else max(0.0, centre - half), 1.0 if p == 1 else min(1.0, centre + half))


def invalid_action_rate(trajectories: Sequence[Trajectory], role: str = "agent") -> float:
    """Fraction of ``role``'s turns flagged invalid (NaN when it never moved)."""
    turns = [turn for t in _require(trajectories) for turn in t.turns_of(role)]
    if not turns:
        return math.nan
    return sum(turn.invalid is not None for turn in turns) / len(turns)


def tokens_per_dialogue(trajectories: Sequence[Trajectory], role: str | None = None) -> float:
    """Mean tokens per dialogue: generated token ids where recorded, else whitespace-separated words of
    the raw output (an approximation for text-only policies). ``role=None`` counts every role."""
    trajectories = _require(trajectories)
    if not trajectories:
        return math.nan
    totals = [
        sum(
            len(turn.token_ids) if turn.token_ids is not None else len(turn.raw.split())
            for turn in t.turns
            if role is None or turn.role == role
        )
        for t in trajectories
    ]
    return exact_mean(totals)


def backend_failures(trajectories: Sequence[Trajectory]) -> int:
    """Number of episodes cut short by a backend failure (outcome ``backend_failure``)."""
    return sum(t.outcome is Outcome.BACKEND_FAILURE for t in _require(trajectories))


def backend_failure_rate(trajectories: Sequence[Trajectory]) -> float:
    """Fraction of episodes cut short by a backend failure (NaN when empty)."""
    trajectories = _require(trajectories)
    return backend_failures(trajectories) / len(trajectories) if trajectories else math.nan


def completed(trajectories: Sequence[Trajectory]) -> list[Trajectory]:
    """The episodes that ran to a game outcome, i.e. all but the backend failures: scenario metrics
    are computed over these, so an infrastructure fault never counts as the agent's failure."""
    return [t for t in _require(trajectories) if t.outcome is not Outcome.BACKEND_FAILURE]


def split_failures(trajectories: Sequence[Trajectory]) -> tuple[list[Trajectory], dict[str, Any]]:
    """``(completed episodes, header)``: every scenario's summary starts with the header (episodes,
    completed, backend failures and their rate) and computes the rest over the completed episodes."""
    everything = _require(trajectories)
    finished = completed(everything)
    return finished, {
        "episodes": len(everything),
        "completed": len(finished),
        "backend_failures": backend_failures(everything),
        "backend_failure_rate": backend_failure_rate(everything),
    }


def pass_hat_k(successes: Sequence[int], trials: Sequence[int], k: int) -> float:
    """tau-bench's pass^k: the chance that ``k`` trials of a start, drawn without replacement from its
    ``trials``, all succeed, averaged over starts: mean of ``C(c, k) / C(n, k)`` for a start with ``c``
    successes in ``n`` trials. With ``n == k`` it is the fraction of starts whose every trial succeeded;
    pass^1 is the success rate. NaN for no starts."""
    per_start = pass_hat_k_per_start(successes, trials, k)
    return exact_mean(per_start.tolist())


def pass_hat_k_per_start(successes: Sequence[int], trials: Sequence[int], k: int) -> np.ndarray:
    """``C(c, k) / C(n, k)`` per start (see :func:`pass_hat_k`), so starts can be resampled."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be an int >= 1, got {k!r}.")
    if len(successes) != len(trials):
        raise ConfigError(f"successes and trials must have one entry per start, got {len(successes)} and {len(trials)}.")
    values = []
    for start, (c, n) in enumerate(zip(successes, trials)):
        if not 0 <= c <= n:
            raise ConfigError(f"start {start}: successes must be in 0..trials, got {c} of {n}.")
        if n < k:
            raise ConfigError(f"pass^{k} needs at least {k} trials of every start; start {start} has {n}. Play more repeats.")
        values.append(math.comb(c, k) / math.comb(n, k))
    return np.asarray(values, dtype=float)


def bootstrap_resamples(units: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """Row indices of ``resamples`` bootstrap resamples of ``units`` units, shape ``(resamples, units)``,
    drawn with replacement from a fixed-seed generator (so a report's intervals are reproducible)."""
    for name, value, minimum in (("units", units, 1), ("resamples", resamples, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return np.random.default_rng(seed).integers(0, units, size=(resamples, units))


def ratio_of_sums(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """``sum(numerators) / sum(denominators)``: a rate or mean over episodes (denominators 1, or 0 for an
    episode left out), or a mean over turns (denominators the turn counts). NaN when the denominator is 0."""
    total = exact_sum(np.asarray(denominators, dtype=float).tolist())
    return exact_sum(np.asarray(numerators, dtype=float).tolist()) / total if total else math.nan


def resampled_ratios(numerators: Sequence[float], denominators: Sequence[float], resamples: np.ndarray) -> np.ndarray:
    """:func:`ratio_of_sums` of every resample (a row of unit indices from :func:`bootstrap_resamples`);
    NaN for a resample whose denominator is 0."""
    numerators, denominators = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    totals = exact_row_sums(denominators[resamples])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, exact_row_sums(numerators[resamples]) / np.where(totals > 0, totals, 1), math.nan)


def percentile_interval(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval: the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    quantiles of the finite ``samples`` (NaN, NaN when there are none)."""
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}.")
    finite = np.asarray(samples, dtype=float)
    finite = finite[np.isfinite(finite)]
    if not finite.size:
        return (math.nan, math.nan)
    low, high = np.quantile(finite, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (float(low), float(high))
