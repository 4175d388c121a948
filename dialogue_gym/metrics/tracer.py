"""TRACER's user-simulator metrics (SPEC section 2; paper 002, section 5.1), pure functions of trajectories.

Every trajectory of ``TRACER-UserSim-v0`` / ``DMBench-Assistant-v0`` records its paired reference in
``meta["reference"]`` (session and group id, intent levels, outcome, user replies), so these need
nothing else. The *real* side of a group is the set of distinct reference sessions paired with the
trajectories of that group (each counted once, however many rollouts it had).

* Session level: PCR (simulated conversion rate), ACC and conversion-class F1 against the paired
  real outcome.
* Group level: Group-dPCR = mean over groups of |simulated CR - real CR|; W1-Turns = mean over groups
  of the Wasserstein-1 distance (equal to ``scipy.stats.wasserstein_distance``) between simulated and
  real user-turn counts. Both are rational numbers and are computed exactly (:class:`fractions.Fraction`),
  then rounded once to a float.
* Semantic: OT-DTW = mean over groups of the exact optimal-transport cost (POT ``ot.emd``, uniform
  weights) between simulated and real sessions; the pairwise cost is the DTW of their per-turn reply
  embeddings under cosine distance, divided by the optimal path's length (**decision**: normalised so
  sessions of different lengths compare, in [0, 2]).
* ``intent_dtw``: mean DTW cost of the intent trajectory against its paired reference (TRACER's D).

Every number here is the same on any CPU and for any order of the trajectories (the docs publish them
to three decimals): sums are exact (:func:`~dialogue_gym.metrics.core.exact_sum`), cosine distances add
their terms in a fixed order (:func:`~dialogue_gym.metrics.dtw.local_cost_matrix`), DTW paths break ties
in a fixed order, and OT-DTW sorts each group's sessions into a canonical order before the transport, so
among equally cheap plans the same one is found.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics.core import (
    _require, bootstrap_resamples, exact_mean, exact_sum, invalid_action_rate, percentile_interval, ratio_of_sums,
    resampled_ratios, split_failures,
)
from dialogue_gym.metrics.dtw import batch_dtw, dtw_path_from_cost, local_cost_matrix
from dialogue_gym.metrics.embedders import make_embedder
from dialogue_gym.types import Outcome, Trajectory


def _reference(trajectory: Trajectory) -> dict[str, Any]:
    reference = trajectory.meta.get("reference")
    if not isinstance(reference, dict):
        raise ConfigError(
            f"trajectory (seed {trajectory.seed}, scenario {trajectory.scenario!r}) has no meta['reference']; "
            "TRACER metrics need trajectories of TRACER-UserSim-v0 or DMBench-Assistant-v0."
        )
    return reference


def simulated_intents(trajectory: Trajectory) -> list[int]:
    return [int(turn.parsed["intent_level"]) for turn in trajectory.turns_of("user")]


def converted(trajectory: Trajectory) -> bool:
    return trajectory.outcome is Outcome.SUCCESS


def pcr(trajectories: Sequence[Trajectory]) -> float:
    """Simulated conversion rate (NaN when empty)."""
    trajectories = _require(trajectories)
    return exact_mean(converted(t) for t in trajectories)


def real_pcr(trajectories: Sequence[Trajectory]) -> float:
    """Conversion rate of the distinct reference sessions paired with ``trajectories``."""
    outcomes = {r["session_id"]: r["outcome"] == "conversion" for r in map(_reference, _require(trajectories))}
    return exact_mean(outcomes.values())


def _paired(trajectories: Sequence[Trajectory]) -> tuple[np.ndarray, np.ndarray]:
    trajectories = _require(trajectories)
    simulated = np.array([converted(t) for t in trajectories], dtype=bool)
    real = np.array([_reference(t)["outcome"] == "conversion" for t in trajectories], dtype=bool)
    return simulated, real


def acc(trajectories: Sequence[Trajectory]) -> float:
    """Fraction of sessions whose simulated outcome (conversion or not) equals the paired real one."""
    simulated, real = _paired(trajectories)
    return exact_mean((simulated == real).tolist())


def conversion_f1(trajectories: Sequence[Trajectory]) -> float:
    """F1 of the conversion class (simulated conversions against the paired real conversions)."""
    simulated, real = _paired(trajectories)
    true_positive = float(np.sum(simulated & real))
    denominator = float(np.sum(simulated) + np.sum(real))
    if denominator == 0:
        return math.nan
    return 2 * true_positive / denominator


def _groups(trajectories: Sequence[Trajectory]) -> dict[str, tuple[list[Trajectory], dict[str, dict[str, Any]]]]:
    """group id -> (its trajectories, its distinct paired reference sessions by id)."""
    groups: dict[str, tuple[list[Trajectory], dict[str, dict[str, Any]]]] = defaultdict(lambda: ([], {}))
    for trajectory in _require(trajectories):
        reference = _reference(trajectory)
        simulated, real = groups[reference["group_id"]]
        simulated.append(trajectory)
        real[reference["session_id"]] = reference
    return dict(groups)


def _share(flags: Sequence[bool]) -> Fraction:
    return Fraction(sum(map(bool, flags)), len(flags))


def _conversion_gap(simulated: Sequence[Trajectory], real: dict[str, dict[str, Any]]) -> Fraction:
    """|simulated CR - real CR| of one group, exactly."""
    return abs(_share([converted(t) for t in simulated]) - _share([r["outcome"] == "conversion" for r in real.values()]))


def wasserstein_1(u: Sequence[int], v: Sequence[int]) -> Fraction:
    """The exact Wasserstein-1 distance between the empirical distributions of two non-empty samples of
    integers: the area between their CDFs, summed over the gaps between consecutive observed values
    (``scipy.stats.wasserstein_distance`` computes the same area in floating point)."""
    points = sorted(set(u) | set(v))
    total = Fraction(0)
    for left, right in zip(points, points[1:]):
        below_u = Fraction(sum(value <= left for value in u), len(u))
        below_v = Fraction(sum(value <= left for value in v), len(v))
        total += abs(below_u - below_v) * (right - left)
    return total


def _turns_distance(simulated: Sequence[Trajectory], real: dict[str, dict[str, Any]]) -> Fraction:
    """Wasserstein-1 distance between one group's simulated and real user-turn counts, exactly."""
    return wasserstein_1([len(t.turns_of("user")) for t in simulated], [len(r["intents"]) for r in real.values()])


def _exact_mean(values: Sequence[Fraction]) -> float:
    return float(sum(values, Fraction(0)) / len(values)) if values else math.nan


def group_dpcr(trajectories: Sequence[Trajectory]) -> float:
    """Mean over groups of |simulated CR - real CR| (exact, rounded once)."""
    return _exact_mean([_conversion_gap(simulated, real) for simulated, real in _groups(trajectories).values()])


def w1_turns(trajectories: Sequence[Trajectory]) -> float:
    """Mean over groups of the Wasserstein-1 distance between simulated and real user-turn counts (exact,
    rounded once)."""
    return _exact_mean([_turns_distance(simulated, real) for simulated, real in _groups(trajectories).values()])


def semantic_dtw(a: np.ndarray, b: np.ndarray) -> float:
    """DTW of two reply-embedding sequences under cosine distance, divided by the optimal path's length."""
    return _normalised_dtw(local_cost_matrix(a, b, "cosine"))


def _normalised_dtw(cost: np.ndarray) -> float:
    path, total = dtw_path_from_cost(cost)
    return total / len(path)


def _transport_cost(matrix: np.ndarray) -> float:
    """The exact OT cost between uniform weights on the rows and on the columns of ``matrix``, summed
    exactly over the plan POT's network simplex finds."""
    import ot

    rows, columns = matrix.shape
    plan = ot.emd(np.full(rows, 1 / rows), np.full(columns, 1 / columns), matrix)
    return exact_sum((plan * matrix).ravel().tolist())


def ot_dtw(trajectories: Sequence[Trajectory], embedder: Any = "hashing") -> float:
    """Mean over groups of the exact OT cost (uniform weights) between simulated and real sessions, the
    pairwise cost being :func:`semantic_dtw` of their per-turn reply embeddings.

    Each distinct text is embedded once, and per group the cosine distances between its simulated and
    its real texts are computed once (not between every two texts of the run: a run of varied
    policies holds thousands). A group's simulated sessions are sorted by their texts and its real ones
    by session id, so the transport problem, and the plan found among equally cheap ones, do not depend
    on the order of ``trajectories``."""
    embedder = make_embedder(embedder)
    groups = _groups(trajectories)
    texts = sorted(
        {turn.text for simulated, _ in groups.values() for t in simulated for turn in t.turns_of("user")}
        | {reply for _, real in groups.values() for r in real.values() for reply in r["replies"]}
    )
    if not texts:
        return math.nan
    vectors = dict(zip(texts, embedder.embed(texts)))
    costs = []
    for simulated, real in groups.values():
        left = sorted(tuple(turn.text for turn in t.turns_of("user")) for t in simulated)
        right = [tuple(real[session]["replies"]) for session in sorted(real)]
        rows, columns = sorted({text for session in left for text in session}), sorted({text for session in right for text in session})
        distances = local_cost_matrix(np.array([vectors[text] for text in rows]), np.array([vectors[text] for text in columns]), "cosine")
        row, column = {text: i for i, text in enumerate(rows)}, {text: j for j, text in enumerate(columns)}
        matrix = np.array([
            [_normalised_dtw(distances[np.ix_([row[text] for text in a], [column[text] for text in b])]) for b in right] for a in left
        ])
        costs.append(_transport_cost(matrix))
    return exact_mean(costs)


def _intent_costs(trajectories: Sequence[Trajectory]) -> np.ndarray:
    """Intent-trajectory DTW cost of each trajectory with at least one user turn."""
    trajectories = [t for t in trajectories if t.turns_of("user")]
    if not trajectories:
        return np.zeros(0)
    return batch_dtw([simulated_intents(t) for t in trajectories], [_reference(t)["intents"] for t in trajectories])


def intent_dtw(trajectories: Sequence[Trajectory]) -> float:
    """Mean DTW cost (|zhat - z| local cost) of each simulated intent trajectory against its paired reference."""
    costs = _intent_costs(_require(trajectories))
    return exact_mean(costs.tolist())


PAIRED_METRICS = ("group_dpcr", "intent_dtw", "w1_turns")
"""The metrics :func:`paired_change` compares (lower is closer to the real sessions for each)."""


def paired_change(
    before: Sequence[Trajectory], after: Sequence[Trajectory], resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, dict[str, float]]:
    """How ``after`` moved each of :data:`PAIRED_METRICS` from ``before`` on the same reference groups
    (two simulators, or one before and after training, played on the same sessions).

    For each metric: ``before``, ``after``, ``change`` (after - before; negative is closer to the real
    sessions) and the percentile bootstrap interval ``change_low`` / ``change_high``. The unit resampled
    is the group (Group-dPCR and W1-Turns are group-level; intent DTW is the mean over the resampled
    groups' trajectories), drawn once per resample for both sides, so the interval is of a paired change.
    """
    sides = {}
    for name, trajectories in (("before", before), ("after", after)):
        groups = _groups(trajectories)
        if not groups:
            raise ConfigError(f"paired_change needs trajectories with reference groups on both sides; {name!r} has none ({len(trajectories)} given). Pass the played TRACER episodes.")
        sides[name] = {
            group: {"group_dpcr": _conversion_gap(*pair), "w1_turns": _turns_distance(*pair), "intent_costs": _intent_costs(pair[0])}
            for group, pair in groups.items()
        }
    if set(sides["before"]) != set(sides["after"]):
        only = sorted(set(sides["before"]) ^ set(sides["after"]))
        raise ConfigError(f"paired_change needs both sides to cover the same reference groups; {only[:5]} appear on one side only. Play both on the same sessions.")
    order = sorted(sides["before"])
    rows = bootstrap_resamples(len(order), resamples, seed)
    result: dict[str, dict[str, float]] = {}
    for metric in PAIRED_METRICS:
        values, draws = {}, {}
        for name, per_group in sides.items():
            if metric == "intent_dtw":
                numerators = [exact_sum(per_group[g]["intent_costs"].tolist()) for g in order]
                denominators = [float(per_group[g]["intent_costs"].size) for g in order]
            else:
                numerators = [float(per_group[g][metric]) for g in order]
                denominators = [1.0] * len(order)
            values[name] = ratio_of_sums(numerators, denominators)
            draws[name] = resampled_ratios(numerators, denominators, rows)
        low, high = percentile_interval(draws["after"] - draws["before"], confidence)
        result[metric] = {**values, "change": values["after"] - values["before"], "change_low": low, "change_high": high}
    return result


def mean_reward(trajectories: Sequence[Trajectory], role: str = "user") -> float:
    trajectories = _require(trajectories)
    return exact_mean(t.rewards.get(role, 0.0) for t in trajectories)


def summary(trajectories: Sequence[Trajectory], embedder: Any = "hashing") -> dict[str, Any]:
    """Every TRACER metric; computed over the completed episodes (backend failures counted apart).
    ``embedder=None`` skips OT-DTW (NaN), the one metric that embeds text."""
    trajectories, header = split_failures(trajectories)
    return {
        **header,
        "groups": len(_groups(trajectories)),
        "pcr": pcr(trajectories),
        "real_pcr": real_pcr(trajectories),
        "acc": acc(trajectories),
        "f1": conversion_f1(trajectories),
        "group_dpcr": group_dpcr(trajectories),
        "w1_turns": w1_turns(trajectories),
        "ot_dtw": ot_dtw(trajectories, embedder) if trajectories and embedder is not None else math.nan,
        "intent_dtw": intent_dtw(trajectories),
        "user_turns": exact_mean(len(t.turns_of("user")) for t in trajectories),
        "reward": mean_reward(trajectories),
        "invalid_action_rate": invalid_action_rate(trajectories, "user"),
    }


COLUMNS = (
    ("pcr", "PCR"), ("real_pcr", "real PCR"), ("acc", "ACC"), ("f1", "F1"), ("group_dpcr", "Group-dPCR"),
    ("w1_turns", "W1-Turns"), ("ot_dtw", "OT-DTW"), ("intent_dtw", "intent DTW"), ("user_turns", "turns"),
    ("reward", "reward"), ("invalid_action_rate", "invalid"), ("backend_failures", "failed"),
)


def report(results: dict[str, Sequence[Trajectory]]) -> str:
    """The reference side of the table: sessions, groups, and whether they are synthetic."""
    trajectories = [t for group in results.values() for t in group]
    references = {r["session_id"]: r for r in map(_reference, trajectories)}
    synthetic = all(r.get("synthetic") for r in references.values())
    return (
        f"References: {len(references)} sessions in {len({r['group_id'] for r in references.values()})} groups"
        f"{' (SYNTHETIC sample)' if synthetic else ''}; lower is better for Group-dPCR, W1-Turns, OT-DTW and intent DTW."
    )
