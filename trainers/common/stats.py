"""Intervals across independent runs (seeds): what a sweep reports beside each mean."""

from __future__ import annotations

import math
from statistics import mean, stdev
from typing import Sequence


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The Student-t interval of the mean of ``values`` (independent runs), ``(nan, nan)`` for fewer than 2."""
    from scipy.stats import t

    if len(values) < 2:
        return (math.nan, math.nan)
    half = t.ppf(0.5 + confidence / 2, len(values) - 1) * stdev(values) / math.sqrt(len(values))
    return (mean(values) - half, mean(values) + half)


def summary(values: Sequence[float]) -> dict[str, float | list[float]]:
    """``mean``, the 95% t-interval (``low``, ``high``) and the values themselves (``per_seed``)."""
    low, high = t_interval(values)
    return {"mean": mean(values), "low": low, "high": high, "per_seed": list(values)}


def shown(entry: dict, decimals: int = 3) -> str:
    """``mean [low, high]`` of a :func:`summary` (``[n/a]`` with one run: no interval)."""
    if math.isnan(entry["low"]):
        return f"{entry['mean']:.{decimals}f} [n/a]"
    return f"{entry['mean']:.{decimals}f} [{entry['low']:.{decimals}f}, {entry['high']:.{decimals}f}]"
