"""Published numbers do not depend on the order of the episodes or on the CPU's summation order.

A float sum depends on the order of its terms, and NumPy's ``sum`` / ``mean`` pick that order from the
array's length, layout and the CPU's SIMD width: the same TRACER episodes gave a W1-Turns of
1.8424999999999998 on one machine and 1.8425 on another, which the docs print as 1.842 and 1.843. Every
metric a page pins now sums exactly (or, for the rational group metrics, in fractions), so shuffling the
episodes, which reorders every sum, must give the same bits. ``tests/test_docs.py`` recomputes the
docs' pages with NumPy's SIMD and OpenBLAS's kernel limited.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import core, tracer
from dialogue_gym.results import Results, results_of
from envs_registry import REGISTRY, get, resolve
from test_tracer_metrics_golden import session  # tests/metrics is on pytest's path

IDS = [entry.id for entry in REGISTRY]
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def test_exact_sums_are_correctly_rounded_in_any_order():
    # 0.1 + 0.2 + 0.3 is 0.6000000000000001 added left to right and 0.6 exactly rounded, in every order.
    values = [0.1, 0.2, 0.3]
    assert sum(values) == 0.6000000000000001
    assert {core.exact_sum(order) for order in ([0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.2, 0.3, 0.1])} == {0.6}
    assert core.exact_mean(values) == 0.6 / 3 and math.isnan(core.exact_mean([]))
    # 1e16 + 1 + -1e16: left to right the 1 is lost; exactly it is kept.
    assert core.exact_row_sums(np.array([[1e16, 1.0, -1e16], [1.0, 1e16, -1e16]])).tolist() == [1.0, 1.0]
    assert core.ratio_of_sums([1e16, 1.0, -1e16], [1.0, 0.0, 0.0]) == 1.0


def test_mean_std_is_exact():
    # mean of (1e16, 1, -1e16) is 1/3 exactly rounded; NumPy's pairwise sum gives 0 here.
    assert core.mean_std([1e16, 1.0, -1e16]).mean == 1 / 3
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, sample variance 32 / 7.
    assert core.mean_std([2, 4, 4, 4, 5, 5, 7, 9]) == (5.0, math.sqrt(32 / 7), 8)


def _one_tenth_apart(group: str, tenths: int) -> list:
    """A group whose W1-Turns is ``tenths / 10`` exactly: one simulated session of one turn against ten
    real sessions, ``tenths`` of them two turns long (the CDFs differ by tenths/10 on [1, 2))."""
    real = [["x"] * (2 if index < tenths else 1) for index in range(10)]
    return [session(group, f"{group}{index}", ["x"], replies) for index, replies in enumerate(real)]


def test_w1_turns_is_exact_where_float_sums_are_not():
    # Groups of W1 0.1, 0.2 and 0.3: the mean is 1/5. Float sums give 0.20000000000000004 (left to right,
    # as NumPy's mean of three) or 0.19999999999999998 (0.6 / 3); in fractions it is the float nearest 1/5.
    trajectories = [*_one_tenth_apart("a", 1), *_one_tenth_apart("b", 2), *_one_tenth_apart("c", 3)]
    assert [float(tracer.wasserstein_1([1], [2] * k + [1] * (10 - k))) for k in (1, 2, 3)] == [0.1, 0.2, 0.3]
    assert float(np.mean([0.1, 0.2, 0.3])) != 0.2 and 0.6 / 3 != 0.2
    assert tracer.w1_turns(trajectories) == 0.2
    assert tracer.w1_turns(trajectories[::-1]) == 0.2


def test_wasserstein_1_equals_scipy_by_hand():
    from scipy.stats import wasserstein_distance

    # {1, 2, 3} against {1, 1, 4}: |1/3 - 2/3| on [1, 2), 0 on [2, 3), |1 - 2/3| on [3, 4): 2/3.
    assert str(tracer.wasserstein_1([1, 2, 3], [1, 1, 4])) == "2/3"
    rng = random.Random(0)
    for _ in range(50):
        u = [rng.randint(0, 15) for _ in range(rng.randint(1, 9))]
        v = [rng.randint(0, 15) for _ in range(rng.randint(1, 9))]
        assert float(tracer.wasserstein_1(u, v)) == pytest.approx(wasserstein_distance(u, v), rel=1e-12, abs=1e-12)


class FourWords:
    """Four directions whose cosine distances are not all 0 or 1."""

    def embed(self, texts):
        table = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.6, 0.8, 0.0), "w": (0.3, 0.3, 0.9)}
        return np.array([table[text] for text in texts]).reshape(len(texts), 3)


def test_ot_dtw_does_not_depend_on_the_order_of_sessions():
    # Found by search: in some orders of these four sessions the network simplex ends on another of the
    # equally cheap plans, whose products with the costs round differently (0.40577665263753915 against
    # 0.4057766526375392). Sorting each group's sessions first gives every order the same problem.
    trajectories = [
        session("g", "s0", ["w", "y"], ["x", "w"]), session("g", "s2", ["w", "z", "x"], ["w"]),
        session("g", "s2", ["y", "y", "w"], ["w"]), session("g", "s1", ["x"], ["w"]),
    ]
    assert len({tracer.ot_dtw(list(order), FourWords()) for order in itertools.permutations(trajectories)}) == 1
    # The real side too: these three sessions meet their references in another order in each permutation,
    # and unsorted references gave 0.2333333333333333 or 0.23333333333333328.
    trajectories = [
        session("g", "s0", ["y", "y", "z"], ["z", "x"]), session("g", "s1", ["y", "x"], ["z", "y", "y"]),
        session("g", "s2", ["y", "z", "x"], ["x"]),
    ]
    assert len({tracer.ot_dtw(list(order), FourWords()) for order in itertools.permutations(trajectories)}) == 1


def _summaries(env_id: str, trajectories: list) -> tuple[str, str]:
    entry = get(env_id)
    summary = resolve(entry.summary)(trajectories)
    provenance = {"env_kwargs": {}, "learner": entry.default_learner, "episodes": len(trajectories), "repeats": 1, "seed": 0}
    headline = results_of(env_id, {"agent": trajectories}, provenance, resamples=200).agents[0].headline
    return json.dumps(summary, sort_keys=True), json.dumps(headline, sort_keys=True)


@pytest.mark.parametrize("env_id", IDS)
def test_every_summary_and_interval_is_the_same_for_any_order_of_episodes(env_id):
    """The docs' baselines agents of each id, 48 starts: reversing or shuffling the episodes reorders
    every sum behind the summary and the bootstrap intervals, and changes none of their bits."""
    provenance = Results.load(RESULTS / f"{env_id}.json").provenance
    for agent in provenance["agents"][:2]:
        trajectories = evaluate(env_id, agent, 48, seed=3, learner=provenance["learner"])
        shuffled = list(trajectories)
        random.Random(1).shuffle(shuffled)
        assert _summaries(env_id, trajectories[::-1]) == _summaries(env_id, trajectories) == _summaries(env_id, shuffled), agent


def test_pass_k_resamples_average_only_their_finite_starts_exactly():
    # A start with a failed repeat has no pass^k (NaN); a resample averages the starts it holds that have
    # one: (1 + 0 + 0.5) / 3, nothing for a resample of NaN starts only, and 0.6 / 3 from an exact sum.
    from dialogue_gym.results import _finite_means

    rows = np.array([[1.0, math.nan, 0.0, 0.5], [math.nan] * 4, [0.1, 0.2, 0.3, math.nan]])
    means = _finite_means(rows)
    assert means[0] == 0.5 and math.isnan(means[1]) and means[2] == 0.6 / 3
