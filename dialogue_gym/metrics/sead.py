"""SEAD metrics (SPEC section 1): CR, ATT, UPA, EI / TI / CI, per-state completion rates."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from dialogue_gym.metrics.core import (
    MeanStd,
    _require,
    completed,
    cr,
    exact_mean,
    exact_sum,
    cr_interval,
    invalid_action_rate,
    mean_std,
    split_failures,
    tokens_per_dialogue,
)
from dialogue_gym.scenarios.sead.state import STATE_DIMS, TOP_COOPERATION, TOP_EMOTION, TOP_TRUST
from dialogue_gym.types import Outcome, Trajectory

_RANGES = (TOP_COOPERATION, TOP_EMOTION, TOP_TRUST)


def agent_turns(trajectory: Trajectory) -> int:
    return len(trajectory.turns_of("agent"))


def att_success(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Average agent turns over successful dialogues (the paper's ATT)."""
    return mean_std([agent_turns(t) for t in _require(trajectories) if t.outcome is Outcome.SUCCESS])


def att_all(trajectories: Sequence[Trajectory]) -> MeanStd:
    """Average agent turns over all dialogues (what SEAD's reference code reports)."""
    return mean_std([agent_turns(t) for t in _require(trajectories)])


def _estimated_turns(trajectories: Sequence[Trajectory]) -> list[tuple[tuple[int, ...] | None, tuple[int, ...]]]:
    """(estimate or None, true state when the agent spoke) for every agent turn with a recorded state."""
    return [
        (turn.parsed.get("estimate"), turn.state)
        for trajectory in _require(trajectories)
        for turn in trajectory.turns_of("agent")
        if turn.state is not None
    ]


def _portrait_error(estimate: Sequence[int], state: Sequence[int]) -> float:
    return sum(abs(a - b) / r for a, b, r in zip(estimate, state, _RANGES)) / 3


def upa(trajectories: Sequence[Trajectory]) -> float:
    """User Portrait Accuracy over every agent turn: 1 - mean of (|dc|/4 + |de|/3 + |dtr|/5) / 3 against
    the true state when the agent spoke, where a turn without an estimate has the maximal error 1.

    Abstaining is therefore never better than guessing, so estimating only on "easy" turns cannot
    raise it (see :func:`upa_answered` for SPEC's literal formula over answered turns only)."""
    turns = _estimated_turns(trajectories)
    errors = [1.0 if estimate is None else _portrait_error(estimate, state) for estimate, state in turns]
    return 1.0 - exact_mean(errors) if errors else math.nan


def upa_answered(trajectories: Sequence[Trajectory]) -> float:
    """SPEC's UPA, comparable to the paper's table: the mean is over turns with an estimate only.
    Report it beside :func:`upa_coverage`; alone it rewards estimating only when confident."""
    errors = [_portrait_error(estimate, state) for estimate, state in _estimated_turns(trajectories) if estimate is not None]
    return 1.0 - exact_mean(errors) if errors else math.nan


def upa_coverage(trajectories: Sequence[Trajectory]) -> float:
    """Fraction of agent turns that carried a state estimate."""
    turns = _estimated_turns(trajectories)
    return sum(estimate is not None for estimate, _ in turns) / len(turns) if turns else math.nan


def upa_constant(trajectories: Sequence[Trajectory]) -> float:
    """UPA of the best constant estimate in hindsight over the same turns: per dimension the median of
    the true values (which minimises the summed absolute error). A tracker shows skill only above it."""
    states = np.array([state for _, state in _estimated_turns(trajectories)], dtype=float)
    if states.size == 0:
        return math.nan
    # Any integer between the lower and upper median minimises a sum of absolute errors; the floor of
    # the median is one (an integer itself, or lying between the two middle integers).
    best = np.floor(np.median(states, axis=0))
    return 1.0 - exact_sum(exact_mean(column) for column in (np.abs(states - best) / np.array(_RANGES)).T.tolist()) / 3


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
    ("att_all", "ATT(all)"), ("upa", "UPA"),
    ("upa_coverage", "UPA cov"), ("upa_constant", "UPA const"), ("ei", "EI"), ("ti", "TI"), ("ci", "CI"),
    ("invalid_action_rate", "invalid"), ("tokens_per_dialogue", "tokens/dlg"), ("backend_failures", "failed"),
)
"""The summary keys ``dialogue-gym eval`` prints for SEAD, with their labels."""


_SPREAD = (("min", 0.0), ("p10", 0.1), ("median", 0.5), ("p90", 0.9), ("max", 1.0))


def state_spread(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Quantiles of the per-initial-state completion rate over the states played (NaN when none was)."""
    rates = per_state_cr(trajectories).ravel()
    rates = rates[~np.isnan(rates)]
    if rates.size == 0:
        return {key: math.nan for key, _ in _SPREAD}
    quantiles = np.quantile(rates, [q for _, q in _SPREAD])
    return {key: float(value) for (key, _), value in zip(_SPREAD, quantiles)}


def report(results: dict[str, Sequence[Trajectory]]) -> str:
    """Printed after the table: each agent's completion-rate spread over the initial states, over its
    completed episodes like the table (a backend failure is not a failed dialogue)."""
    from dialogue_gym.reporting import format_table

    spreads = [{"name": agent, **state_spread(completed(trajectories))} for agent, trajectories in results.items()]
    table = format_table(spreads, [(key, key) for key, _ in _SPREAD], "agent")
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
        "upa_coverage": upa_coverage(trajectories),
        "upa_constant": upa_constant(trajectories),
        "upa_answered": upa_answered(trajectories),
        "ei": ei(trajectories).mean,
        "ti": ti(trajectories).mean,
        "ci": ci(trajectories).mean,
        "invalid_action_rate": invalid_action_rate(trajectories, "agent"),
        "tokens_per_dialogue": tokens_per_dialogue(trajectories),
    }
    return result


__all__ = [
    "att_all", "att_success", "ci", "cr", "cr_interval", "ei", "per_state_counts", "per_state_cr",
    "COLUMNS", "report", "state_spread", "summary", "ti", "upa", "upa_answered", "upa_constant",
    "upa_coverage",
]
