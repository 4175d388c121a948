import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics import batch_dtw, cdist_dtw, dtw, dtw_path
from dialogue_gym.metrics.dtw import (
    BACKENDS,
    METRICS,
    align,
    discounted_suffix,
    dtw_path_from_cost,
    local_cost_matrix,
    turn_deviations,
)

# tslearn, the reference, is imported in the tests that use it: importing it takes seconds (it loads
# torch and scikit-learn), which the tests that need no reference, and mutation runs stopped by them, skip.
levels = st.lists(st.integers(0, 5), min_size=1, max_size=15)
TSLEARN_NAMES = {"abs": "cityblock", "sqeuclidean": "sqeuclidean", "cosine": "cosine"}
reals = st.lists(st.floats(-100, 100, allow_nan=False, allow_infinity=False), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(levels, levels)
def test_abs_equals_tslearn_cityblock_path_and_cost(a, b):
    from tslearn.metrics import dtw_path_from_metric

    path, cost = dtw_path(a, b)
    expected_path, expected_cost = dtw_path_from_metric(np.array(a, float), np.array(b, float), metric="cityblock")
    assert path == expected_path and cost == expected_cost
    assert dtw(a, b) == expected_cost


@settings(max_examples=100, deadline=None)
@given(reals, reals)
def test_sqeuclidean_equals_tslearn_and_tslearn_dtw_is_its_square_root(a, b):
    from tslearn.metrics import dtw as tslearn_dtw
    from tslearn.metrics import dtw_path_from_metric

    path, cost = dtw_path(a, b, "sqeuclidean")
    expected_path, expected_cost = dtw_path_from_metric(np.array(a), np.array(b), metric="sqeuclidean")
    assert path == expected_path and cost == expected_cost
    assert np.sqrt(cost) == tslearn_dtw(np.array(a), np.array(b))


def test_costs_by_hand():
    assert dtw([1, 2, 3], [1, 1, 2, 3]) == 0.0
    assert dtw([0, 5], [5, 0]) == 10.0  # (0,0)=5, then (1,1)=5: no cheaper monotone path
    assert dtw([3], [1, 2, 4]) == 2 + 1 + 1
    assert dtw([0, 5], [5, 0], "sqeuclidean") == 50.0


def test_multivariate_and_cosine_points():
    from tslearn.metrics import dtw_path_from_metric

    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    b = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    cost = local_cost_matrix(a, b, "cosine")
    assert cost[0, 0] == pytest.approx(0.0) and cost[1, 1] == pytest.approx(0.0) and cost[0, 1] == pytest.approx(1.0)
    assert cost[0, 2] == 1.0  # a zero vector is at distance 1 from anything but another zero vector
    assert local_cost_matrix(np.zeros((1, 2)), np.zeros((1, 2)), "cosine")[0, 0] == 0.0
    path, total = dtw_path_from_cost(cost)
    assert path[0] == (0, 0) and path[-1] == (1, 2) and total == pytest.approx(1.0)
    assert dtw(a, b) == dtw_path_from_metric(a, b, metric="cityblock")[1]


def left_to_right(a, b, metric):
    """The local costs as scipy's cdist (tslearn's cityblock and sqeuclidean) takes them, and the cosine
    distance as the module defines it: features added one after another, in plain Python floats."""
    if metric == "cosine":
        def dot(p, q):
            return sum(x * y for x, y in zip(p, q))
        return [[1.0 - min(1.0, max(-1.0, dot(p, q) / math.sqrt(dot(p, p) * dot(q, q)))) for q in b] for p in a]
    return [[sum((abs(x - y) if metric == "abs" else (x - y) * (x - y)) for x, y in zip(p, q)) for q in b] for p in a]


@pytest.mark.parametrize("features", [2, 7, 8, 9, 15, 16])
def test_multivariate_costs_equal_tslearn_bit_for_bit_in_any_memory_layout(features):
    """Eight or more features are where NumPy's sum adds in another order (and a Fortran-ordered array
    in yet another, and another SIMD width in a third): every cost follows the left-to-right sum in any
    layout, so ``abs`` and ``sqeuclidean`` equal scipy's (tslearn's) bit for bit. tslearn's cosine goes
    through the CPU's BLAS kernel, whose order no code can promise: it agrees to 1e-12, on the same path."""
    from tslearn.metrics import dtw_path_from_metric

    rng = np.random.default_rng(features)
    for _ in range(20):
        a = np.round(rng.normal(size=(int(rng.integers(1, 6)), features)), 1)
        b = np.round(rng.normal(size=(int(rng.integers(1, 6)), features)), 1)
        for metric in METRICS:
            expected = dtw_path_from_metric(a, b, metric=TSLEARN_NAMES[metric])
            for layout_a, layout_b in [(a, b), (np.asfortranarray(a), np.asfortranarray(b)), (a.T.copy().T, b.T.copy().T)]:
                assert local_cost_matrix(layout_a, layout_b, metric).tolist() == left_to_right(a.tolist(), b.tolist(), metric)
                path, cost = dtw_path(layout_a, layout_b, metric)
                assert path == expected[0] and align(layout_a, layout_b, metric).cost == cost
                assert cost == expected[1] if metric != "cosine" else cost == pytest.approx(expected[1], rel=1e-12, abs=1e-12)
    # by hand: 0.3 + 0.2 + 0.3 + 0.1 + 0.1 + 0.3 + 0.0 + 0.1 left to right is 1.4000000000000001 in float64
    assert dtw([[0.3, 0.2, 0.3, 0.1, 0.1, 0.3, 0.0, 0.1]], np.zeros((1, 8))) == 1.4000000000000001


def test_points_need_a_feature_and_numbers_need_to_fit_a_float():
    for metric in METRICS:
        with pytest.raises(ConfigError, match=r"^a must hold points of at least one feature, got shape \(3, 0\)\.$"):
            dtw(np.zeros((3, 0)), np.zeros((2, 0)), metric)
    with pytest.raises(ConfigError, match=r"^a must be a sequence of numbers .*got \[1, 1000000"):
        dtw([1, 10**400], [1])
    for cost in ([["a", "b"]], [[1.0], [1.0, 2.0]], [[1j]], [[10**400]]):
        with pytest.raises(ConfigError, match=r"^cost must (be a sequence of numbers|hold real numbers)"):
            dtw_path_from_cost(cost)


def test_cosine_distance_is_exact_at_its_ends_and_ignores_length():
    # (13, 7, 12) normalised dots with itself to 1 + 2**-51 in floating point: the clip keeps its distance
    # to itself at exactly 0 (not -4.4e-16) and to its opposite at exactly 2 (not 2.0000000000000004).
    assert local_cost_matrix([[13.0, 7.0, 12.0]], [[13.0, 7.0, 12.0], [-13.0, -7.0, -12.0]], "cosine").tolist() == [[0.0, 2.0]]
    # short vectors (norm below 1) are normalised too: (0.5, 0) points where (0.25, 0) does
    assert local_cost_matrix([[0.5, 0.0]], [[0.25, 0.0], [0.0, 3.0]], "cosine").tolist() == [[0.0, 1.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a zero vector is never divided by its zero norm
        assert local_cost_matrix([[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0]], "cosine").tolist() == [[0.0], [1.0]]


def test_multivariate_squared_cost_by_hand():
    # a = [(0, 0), (1, 2)] against b = [(1, 0)]: both points pair with b[0]; squared 1 + (0 + 4), abs 1 + 2
    assert dtw([[0, 0], [1, 2]], [[1, 0]], "sqeuclidean") == 5.0 and dtw([[0, 0], [1, 2]], [[1, 0]]) == 3.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_backends_equal_tslearn_exactly(backend):
    from tslearn.metrics import dtw_path_from_metric

    rng = np.random.default_rng(3)
    a = [rng.integers(0, 6, size=n).astype(float) for n in rng.integers(1, 16, size=120)]
    b = [rng.integers(0, 6, size=n).astype(float) for n in rng.integers(1, 16, size=120)]
    b[0] = rng.normal(size=7)  # not only integers
    expected = [dtw_path_from_metric(x, y, metric="cityblock")[1] for x, y in zip(a, b)]
    assert batch_dtw(a, b, backend=backend).tolist() == expected
    expected_sq = [dtw_path_from_metric(x, y, metric="sqeuclidean")[1] for x, y in zip(a, b)]
    assert batch_dtw(a, b, "sqeuclidean", backend=backend).tolist() == expected_sq


def test_batch_accepts_python_lists_and_empty_batches():
    assert batch_dtw([[1, 2, 3], [0]], [[1, 3], [5, 5]]).tolist() == [1.0, 10.0]
    assert batch_dtw([], []).shape == (0,)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_cdist(backend):
    seqs = [[0, 1, 2], [2, 2], [5, 4, 3, 2], [1]]
    matrix = cdist_dtw(seqs, backend=backend)
    assert np.array_equal(matrix, matrix.T) and np.all(np.diag(matrix) == 0)
    assert matrix[0, 2] == dtw(seqs[0], seqs[2])
    cross = cdist_dtw(seqs[:2], seqs[2:], backend=backend)
    assert cross.shape == (2, 2) and cross[1, 0] == dtw(seqs[1], seqs[2])


def test_paper_example_pacing_delay_is_not_an_error():
    # Appendix H: the simulator takes an extra turn at the first stage, then matches 4 and 5.
    alignment = align([3, 3, 4, 5], [3, 4, 5])
    assert alignment.cost == 0.0 and alignment.deviations == (0.0, 0.0, 0.0, 0.0)
    assert alignment.path == ((0, 0), (1, 0), (2, 1), (3, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        alignment.cost = 1.0


def test_turn_deviations_average_the_aligned_reference_turns():
    # simulated turn 0 is aligned to reference turns 0, 1 and 2 (one-to-many): d_0 = mean(|3-1|, |3-2|, |3-3|)
    path, _ = dtw_path([3, 5], [1, 2, 3, 5])
    assert path == [(0, 0), (0, 1), (0, 2), (1, 3)]
    assert turn_deviations([3, 5], [1, 2, 3, 5], path).tolist() == [1.0, 0.0]
    assert turn_deviations([3, 5], [1, 2, 3, 5], np.array(path, dtype=np.int32)).tolist() == [1.0, 0.0]


@pytest.mark.parametrize(
    "path, message",
    [
        ([(0, 0)], r"must run from \(0, 0\) to .* = \(1, 0\), got \(0, 0\) to \(0, 0\); pass the path dtw_path\(\) returns"),
        ([(0, 0), (1, -1)], r"must run from \(0, 0\) to .* = \(1, 0\), got \(0, 0\) to \(1, -1\)"),
        ([(0, -1), (1, 0)], r"got \(0, -1\) to \(1, 0\)"),
        ([(0, 0), (2, 0), (1, 0)], r"^path steps from \(0, 0\) to \(2, 0\)"),
        ([(0, 0), (0, 0), (1, 0)], r"^path steps from \(0, 0\) to \(0, 0\); a warping path moves by \(1, 0\), \(0, 1\) or \(1, 1\)"),
        ([(0, 0, 1), (1, 0, 1)], r"integer pairs, got dtype int64 and shape \(2, 3\)"),
        ([(0, 0), (1, 0.0)], r"integer pairs, got dtype float64"),
        ([(0, 0), (1,)], r"path must be a sequence of \(i, j\) index pairs"),
        ([], r"integer pairs, got dtype float64 and shape \(0,\)"),
        (np.zeros((0, 2), dtype=np.int64), r"integer pairs, got dtype int64 and shape \(0, 2\)"),
        ([(0, "0"), (1, "0")], r"integer pairs, got dtype <U"),
    ],
)
def test_turn_deviations_takes_only_a_warping_path(path, message):
    """A path that skips, repeats, leaves the matrix or holds other than integer pairs is refused by
    name (it used to be read anyway: a negative index wrapped round, a triple was read as pairs)."""
    with pytest.raises(ConfigError, match=message):
        turn_deviations([3, 5], [1], path)
    with pytest.raises(ConfigError, match="steps from \\(0, 0\\) to \\(1, 2\\)"):
        turn_deviations([3, 5], [1, 2, 3], [(0, 0), (1, 2)])


def test_discounted_suffix():
    assert discounted_suffix([1.0, 0.0, 2.0], 0.5).tolist() == [1.5, 1.0, 2.0]
    assert discounted_suffix([1.0, 0.0, 2.0], 0.0).tolist() == [1.0, 0.0, 2.0]
    assert discounted_suffix([1.0, 1.0], 1.0).tolist() == [2.0, 1.0]
    assert align([1, 2], [2, 2]).suffix(0.5).tolist() == [1.0, 0.0]
    for rho in (1.5, -0.5, True, "0.5"):  # a bool is not a discount factor, though True == 1
        with pytest.raises(ConfigError, match=rf"^rho must be a number in \[0, 1\], got {rho!r}\.$"):
            discounted_suffix([1.0], rho)
    for deviations in ([0.0, np.inf], [np.nan]):
        with pytest.raises(ConfigError, match=r"^deviations must be finite, got .*; rescale sequences whose local costs overflow"):
            discounted_suffix(deviations, 0.0)
    with np.errstate(over="ignore"), pytest.raises(ConfigError, match="deviations must be finite"):
        align([0.0, 1e200], [0.0, -1e200], "sqeuclidean").suffix(0.0)  # (2e200)^2 overflows to inf
    for deviations in (["a"], [[1.0], [1.0, 2.0]], [1j], [10**400]):
        with pytest.raises(ConfigError, match=r"deviations must (be a sequence of numbers|hold real numbers)"):
            discounted_suffix(deviations, 0.5)


vectors = st.integers(1, 3).flatmap(
    lambda d: st.tuples(*(st.lists(st.lists(st.floats(-10, 10, allow_nan=False), min_size=d, max_size=d), min_size=1, max_size=9),) * 2)
)


@settings(max_examples=150, deadline=None)
@given(reals, reals, vectors)
def test_align_is_dtw_path_and_turn_deviations_bit_for_bit(a, b, pair):
    """The one compiled call equals the separate functions exactly, on real numbers (where a sum's
    order would show) and on vectors under every metric."""
    for simulated, reference, metric in [(a, b, "abs"), (a, b, "sqeuclidean"), (*pair, "abs"), (*pair, "sqeuclidean"), (*pair, "cosine")]:
        alignment = align(simulated, reference, metric)
        path, cost = dtw_path(simulated, reference, metric)
        assert list(alignment.path) == path and alignment.cost == cost
        assert alignment.deviations == tuple(turn_deviations(simulated, reference, path, metric).tolist())


@settings(max_examples=80, deadline=None)
@given(levels, levels, st.floats(0, 1))
def test_suffix_definition_and_deviations_bound(simulated, reference, rho):
    alignment = align(simulated, reference)
    d = np.array(alignment.deviations)
    assert d.shape == (len(simulated),) and np.all(d >= 0) and np.all(d <= 5)
    explicit = [sum(rho**k * d[t + k] for k in range(len(d) - t)) for t in range(len(d))]
    assert np.allclose(alignment.suffix(rho), explicit)


wide_ints = st.lists(st.integers(-(2**53) - 2, 2**53 + 2) | st.integers(0, 5), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(wide_ints, wide_ints, st.booleans())
def test_align_of_python_ints_equals_the_checked_path_bit_for_bit(simulated, reference, as_tuples):
    """align's fast path for tuples and lists of ints (TRACER's levels) gives what the checked path
    gives the same numbers as int64 arrays, bits included (ints past 2**53, which float64 rounds,
    take the checked path in both), under each metric."""
    for metric in ("abs", "sqeuclidean"):  # only abs costs are taken fast
        fast = align(tuple(simulated) if as_tuples else simulated, tuple(reference) if as_tuples else reference, metric)
        checked = align(np.array(simulated, dtype=np.int64), np.array(reference, dtype=np.int64), metric)
        assert fast.path == checked.path
        assert fast.cost.hex() == checked.cost.hex()
        assert [d.hex() for d in fast.deviations] == [d.hex() for d in checked.deviations]


def test_align_fast_path_keeps_the_checks():
    for empty in ((), []):
        with pytest.raises(ConfigError, match="a must be a non-empty 1-D sequence"):
            align(empty, (1, 2))
    assert align((True, False), (1, 0)) == align(np.array([1.0, 0.0]), np.array([1.0, 0.0]))  # bools: the checked path


@settings(max_examples=200, deadline=None)
@given(reals, st.floats(0, 1) | st.sampled_from([0, 1]))
def test_suffix_of_a_tuple_of_floats_equals_the_array_path_bit_for_bit(deviations, rho):
    """discounted_suffix on a tuple of finite floats (an Alignment's deviations) takes Python floats;
    the same sums as on an array, bit for bit."""
    fast = discounted_suffix(tuple(deviations), rho)
    checked = discounted_suffix(np.array(deviations), rho)
    assert fast.dtype == checked.dtype == np.float64 and fast.shape == checked.shape
    assert [v.hex() for v in fast.tolist()] == [v.hex() for v in checked.tolist()]
    for bad in (np.inf, -np.inf, np.nan):  # a tuple with a non-finite value is refused as a list is
        with pytest.raises(ConfigError, match="deviations must be finite"):
            discounted_suffix((*deviations, bad), rho)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: dtw([], [1]), r"a must be a non-empty 1-D sequence \(T,\) or a 2-D array \(T, d\), got shape \(0,\)"),
        (lambda: dtw([1, float("nan")], [1]), "a must hold finite numbers"),
        (lambda: dtw([1], [1], metric="euclid"), r"metric='euclid' is not supported here; use one of \['abs', 'sqeuclidean', 'cosine'\]"),
        (lambda: dtw([1, 2], [1, 2], metric="cosine"), r"metric='cosine' needs 2-D arrays"),
        (lambda: dtw(np.ones((2, 2)), [1, 2], metric="cosine"), r"metric='cosine' needs 2-D arrays of vectors \(T, d\), got shapes \(2, 2\) and \(2,\)"),
        (lambda: dtw(np.ones((2, 2)), np.ones((2, 3))), "same point dimension"),
        (lambda: batch_dtw([[1]], [[1], [2]]), "got 1 and 2 sequences"),
        (lambda: batch_dtw([[1]], [[1]], backend="cuda"), r"backend='cuda' is not supported; use one of \['numba', 'numpy', 'torch', 'tslearn'\]"),
        (lambda: batch_dtw([[1], []], [[1], [2]]), r"seqs_a\[1\] must be a non-empty 1-D sequence"),
        (lambda: batch_dtw([[1], [[1, 2]]], [[1], [2]]), r"seqs_a\[1\] has shape \(1, 2\); batch_dtw / cdist_dtw take univariate"),
        (lambda: batch_dtw("abc", ["a"]), "seqs_a must be a list of sequences, got str"),
        (lambda: cdist_dtw([[1]], metric="cosine"), "not supported here"),
        (lambda: dtw_path_from_cost([1.0, 2.0]), r"^cost must be a non-empty finite 2-D matrix, got shape \(2,\)\.$"),
        (lambda: dtw_path_from_cost(np.zeros((0, 3))), r"^cost must be a non-empty finite 2-D matrix, got shape \(0, 3\)\.$"),
        (lambda: dtw_path_from_cost([[0.0, np.inf]]), r"^cost must be a non-empty finite 2-D matrix, got shape \(1, 2\)\.$"),
    ],
)
def test_errors_name_the_value_and_the_fix(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
