"""SEAD metrics (SPEC section 1): CR, ATT, UPA, EI / TI / CI, per-state completion rates."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from dialogue_gym.metrics.core import (
    MeanStd,
    _require,
    cr,
    cr_interval,
    invalid_action_rate,
    mean_std,
    split_failures,
    tokens_per_dialogue,
)
from dialogue_gym.scenarios.sead.state import STATE_DIMS
from dialogue_gym.types import Outcome, Trajectory

_RANGES = tuple(n - 1 for n in STATE_DIMS)


def agent_turns(trajectory: Trajectory) -> int:
    return len(trajectory.turns_of("agent"))


def att_success(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Average agent turns over successful dialogues (the paper's ATT)."""
    return mean_std([agent_turns(t) for t in _require(trajectories) if t.outcome is Outcome.SUCCESS])


def att_all(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Average agent turns over all dialogues (what SEAD's reference code reports)."""
    return mean_std([agent_turns(t) for t in _require(trajectories)])


def upa(trajectories: Sequence[Trajectory]) -> float:
    """User Portrait Accuracy: 1 - mean over agent turns with an estimate of
    (|dc|/4 + |de|/3 + |dtr|/5) / 3, against the true state when the agent spoke."""
    errors = []
    for trajectory in _require(trajectories):
        for turn in trajectory.turns_of("agent"):
            estimate = turn.parsed.get("estimate")
            if estimate is None or turn.state is None:
                continue
            errors.append(sum(abs(a - b) / r for a, b, r in zip(estimate, turn.state, _RANGES)) / 3)
    return 1.0 - float(np.mean(errors)) if errors else math.nan


def _final_state(trajectory: Trajectory) -> tuple[int, ...]:
    for turn in reversed(trajectory.turns):
        if turn.role == "user" and turn.state is not None:
            return turn.state
    return tuple(trajectory.profile["state"])


def _improvement(trajectories: Sequence[Trajectory], dimension: int) -> MeanStd:
    return mean_std(
        [_final_state(t)[dimension] - t.profile["state"][dimension] for t in _require(trajectories)]
    )


def ci(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Cooperation improvement: mean (final - initial) cooperation, std ddof=1."""
    return _improvement(trajectories, 0)


def ei(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Emotion improvement: mean (final - initial) emotion, std ddof=1."""
    return _improvement(trajectories, 1)


def ti(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Trust improvement: mean (final - initial) trust, std ddof=1."""
    return _improvement(trajectories, 2)


def per_state_counts(trajectories: Sequence[Trajectory]) -> tuple[np.ndarray, np.ndarray]:
    """(successes, dialogues) per initial state, each of shape (5, 4, 6)."""
    successes = np.zeros(STATE_DIMS)
    counts = np.zeros(STATE_DIMS)
    for trajectory in _require(trajectories):
        state = tuple(trajectory.profile["state"])
        counts[state] += 1
        successes[state] += trajectory.outcome is Outcome.SUCCESS
    return successes, counts


def per_state_cr(trajectories: Sequence[Trajectory]) -> np.ndarray:
    """Completion rate per initial state, shape (5, 4, 6); NaN where a state was never played."""
    successes, counts = per_state_counts(trajectories)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, successes / np.maximum(counts, 1), np.nan)


COLUMNS = (
    ("cr", "CR"), ("cr_low", "CR lo95"), ("cr_high", "CR hi95"), ("att_success", "ATT(succ)"),
    ("att_all", "ATT(all)"), ("upa", "UPA"), ("ei", "EI"), ("ti", "TI"), ("ci", "CI"),
    ("invalid_action_rate", "invalid"), ("tokens_per_dialogue", "tokens/dlg"), ("backend_failures", "failed"),
)
"""The summary keys ``dialogue-gym eval`` prints for SEAD, with their labels."""


def state_spread(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Quantiles of the per-initial-state completion rate over the states played."""
    rates = per_state_cr(trajectories).ravel()
    rates = rates[~np.isnan(rates)]
    quantiles = np.quantile(rates, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {key: float(value) for key, value in zip(("min", "p10", "median", "p90", "max"), quantiles)}


def report(results: dict[str, Sequence[Trajectory]]) -> str:
    """Printed after the table: each agent's completion-rate spread over the initial states."""
    from dialogue_gym.reporting import format_table

    spreads = [{"name": agent, **state_spread(trajectories)} for agent, trajectories in results.items()]
    table = format_table(spreads, [(k, k) for k in ("min", "p10", "median", "p90", "max")], "agent")
    return f"Completion rate per initial state (spread over the 5 x 4 x 6 grid):\n\n{table}"


def summary(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Every SEAD metric under namespaced keys.

    ``episodes`` counts every trajectory; ``backend_failures`` (and ``backend_failure_rate``) those cut
    short by a backend failure, and ``completed`` the rest, over which every other metric is computed.
    """
    trajectories, header = split_failures(trajectories)
    low, high = cr_interval(trajectories)
    result: dict[str, Any] = {
        **header,
        "cr": cr(trajectories),
        "cr_low": low,
        "cr_high": high,
        "att_success": att_success(trajectories).mean,
        "att_success_std": att_success(trajectories).std,
        "att_all": att_all(trajectories).mean,
        "upa": upa(trajectories),
        "ei": ei(trajectories).mean,
        "ti": ti(trajectories).mean,
        "ci": ci(trajectories).mean,
        "invalid_action_rate": invalid_action_rate(trajectories, "agent"),
        "tokens_per_dialogue": tokens_per_dialogue(trajectories),
    }
    return result


__all__ = [
    "att_all", "att_success", "ci", "cr", "cr_interval", "ei", "per_state_counts", "per_state_cr",
    "COLUMNS", "report", "state_spread", "summary", "ti", "upa",
]
