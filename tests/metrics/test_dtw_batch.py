"""batch_dtw / cdist_dtw: every input form (lists, arrays, PackedSequences), the threaded kernel
and its n_jobs contract, and the errors that name the bad sequence.

Costs are checked against hand-worked values and against :func:`dtw` (itself equal to tslearn, see
test_dtw.py), so a batch path that drifts from the single-pair recurrence fails here."""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from fractions import Fraction

import numba
import numpy as np
import pytest

from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.metrics.dtw import BACKENDS, PackedSequences, batch_dtw, cdist_dtw, dtw, pack_sequences

module = importlib.import_module("dialogue_gym.metrics.dtw")  # the package re-exports the function dtw under the same name
BLOCK = module._BLOCK
MOST_THREADS = numba.config.NUMBA_NUM_THREADS
needs_two_threads = pytest.mark.skipif(MOST_THREADS < 2, reason="numba may start one thread here")


def ragged(count, seed, longest=15):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 6, size=n).astype(float) for n in rng.integers(1, longest + 1, size=count)]


# Hand-worked pairs (a, b, |.| cost, squared cost), ragged lengths, single points included.
HAND = [
    ([3.0], [1.0, 2.0, 4.0], 2 + 1 + 1, 4 + 1 + 1),  # one point against three: every cell is on the path
    ([0.0, 5.0], [5.0, 0.0], 5 + 5, 25 + 25),  # (0,0) then (1,1): no monotone path avoids both 5s
    ([1.0, 2.0, 3.0], [1.0, 1.0, 2.0, 3.0], 0, 0),  # the repeated 1 warps onto a[0]
    ([0.0, 3.0], [1.0, 1.0], 1 + 2, 1 + 4),  # diagonal; |.| and squared take the same path here
    ([0.0, 2.0], [1.0], 1 + 1, 1 + 1),  # the only path pairs both points with b[0]
    ([2.0, 0.0, 0.0], [0.0, 2.0, 2.0, 0.0], 2 + 0 + 0, 4 + 0 + 0),
    # D for the last pair, row by row (|.|): [2 2 2 4] [2 4 4 2] [2 4 6 2]: (0,0)=2, then 0 along (0,1),(0,2),
    # then (1,3)=0 and (2,3)=0 -> 2; squared: 4.
]


def test_hand_costs_on_every_input_form():
    a, b = [h[0] for h in HAND], [h[1] for h in HAND]
    expected, expected_sq = [h[2] for h in HAND], [h[3] for h in HAND]
    values_a, offsets_a = np.concatenate(a), np.cumsum([0] + [len(s) for s in a])
    forms_a = {
        "lists": a,
        "tuple of int lists": tuple([int(x) for x in s] for s in a),
        "arrays": [np.array(s) for s in a],
        "float32 arrays": [np.array(s, dtype=np.float32) for s in a],
        "int8 arrays": [np.array(s, dtype=np.int8) for s in a],
        "object array": np.array([np.array(s) for s in a], dtype=object),
        "decimals": [[Decimal(str(x)) for x in s] for s in a],
        "fractions": [[Fraction(int(x)) for x in s] for s in a],
        "packed": PackedSequences(values_a, offsets_a),
        "packed from int32": PackedSequences(values_a.astype(np.int32), offsets_a.astype(np.int32)),
        "pack_sequences": pack_sequences(a),
    }
    for name, seqs_a in forms_a.items():
        assert batch_dtw(seqs_a, b).tolist() == expected, name
        assert batch_dtw(seqs_a, b, "sqeuclidean").tolist() == expected_sq, name
        assert batch_dtw(b, seqs_a).tolist() == expected, name  # DTW is symmetric in its arguments


def test_equal_length_rows_of_a_2d_array():
    rows_a = np.array([[0, 5], [0, 3], [1, 1]])
    rows_b = np.array([[5, 0], [1, 1], [1, 1]], dtype=np.float32)
    assert batch_dtw(rows_a, rows_b).tolist() == [10.0, 3.0, 0.0]
    assert batch_dtw(np.asfortranarray(rows_a), rows_b).tolist() == [10.0, 3.0, 0.0]  # not C-ordered
    # True is 1: [0, 1] against [5, 0] has C = [[5, 0], [4, 1]], D = [[5, 5], [9, 1 + 5]]
    assert batch_dtw(rows_a.astype(bool), rows_b).tolist() == [6.0, 1.0, 0.0]
    assert cdist_dtw(rows_a).tolist() == [[0.0, 2.0, 5.0], [2.0, 0.0, 3.0], [5.0, 3.0, 0.0]]
    assert batch_dtw(np.zeros((0, 4)), np.zeros((0, 4))).shape == (0,)


def test_packed_sequences_layout():
    packed = PackedSequences([1, 2, 3, 5, 3, 3], np.array([0, 3, 4, 6], dtype=np.uint8))
    assert len(packed) == 3 and packed.lengths.tolist() == [3, 1, 2]
    assert packed.values.dtype == np.float64 and packed.offsets.dtype == np.int64
    assert packed.values.flags.c_contiguous
    # [1,2,3] vs [1]: 0+1+2; [5] vs [5]: 0; [3,3] vs [1,4]: (0,0)=2, (1,1)=1 beats going round -> 3
    assert batch_dtw(packed, [[1], [5], [1, 4]]).tolist() == [3.0, 0.0, 3.0]
    assert len(PackedSequences(np.zeros(0), [0])) == 0
    strided = np.arange(12.0)[::2]  # 0 2 4 6 8 10, not contiguous
    assert batch_dtw(PackedSequences(strided, [0, 2, 6]), [[0], [6]]).tolist() == [2.0, 2 + 0 + 2 + 4]


def test_packed_sequences_take_float64_arrays_as_they_are_and_stay_fixed():
    values, offsets = np.array([1.0, 2.0, 3.0]), np.array([0, 1, 3])
    packed = PackedSequences(values, offsets)
    assert packed.values is values and packed.offsets is offsets  # no copy: a packed batch costs nothing to take
    with pytest.raises(dataclasses.FrozenInstanceError):
        packed.values = np.zeros(3)
    # arrays have no single truth value, so a packing equals only itself
    assert packed == packed and packed != PackedSequences(values, offsets)
    assert len(pack_sequences([])) == 0 and pack_sequences(np.ones((2, 3))).offsets.tolist() == [0, 3, 6]


def test_packed_sequences_are_checked_again_on_use():
    """The kernels do not bounds-check, so offsets changed after construction must not reach them."""
    offsets = np.array([0, 2, 3])
    packed = PackedSequences(np.array([1.0, 2.0, 3.0]), offsets)
    offsets[2] = 50  # the caller's array, taken as is
    with pytest.raises(ConfigError, match=r"^seqs_a offsets must run from 0 to len\(values\) = 3, got 0 to 50\.$"):
        batch_dtw(packed, [[1], [2]])
    offsets[2] = 3
    packed.values[1] = np.nan
    with pytest.raises(ConfigError, match=r"^seqs_b\[0\] must hold finite numbers"):
        cdist_dtw([[1.0]], packed)


@pytest.mark.parametrize(
    "values, offsets, message",
    [
        ([1, 2, 3], [1, 3], r"^PackedSequences offsets must run from 0 to len\(values\) = 3, got 1 to 3\.$"),
        ([1, 2, 3], [0, 2], r"^PackedSequences offsets must run from 0 to len\(values\) = 3, got 0 to 2\.$"),
        ([1, 2, 3], [0, 2, 1, 3], r"^PackedSequences offsets must increase, got offsets\[1\] = 2 > offsets\[2\] = 1\.$"),
        ([1, 2, 3], [0, 1, 1, 3], r"^PackedSequences\[1\] must be a non-empty 1-D sequence, got an empty one"),
        ([1, 2, 3], [0, 1, 2, 2, 3], r"^PackedSequences\[2\] must be a non-empty 1-D sequence, got an empty one"),
        ([1, 2, np.inf, 4], [0, 1, 2, 4], r"^PackedSequences\[2\] must hold finite numbers, got array\(\[inf,  4\.\]\)\.$"),
        ([np.nan, 2, 3], [0, 1, 3], r"^PackedSequences\[0\] must hold finite numbers"),
        ([1, 2, np.nan], [0, 2, 3], r"^PackedSequences\[1\] must hold finite numbers"),
        ([1, 2], [0.0, 2.0], r"^PackedSequences offsets must be a non-empty 1-D array of integers .* got dtype float64 and shape \(2,\)\.$"),
        ([1, 2], [], r"^PackedSequences offsets must be a non-empty 1-D array of integers"),
        ([1, 2], [[0, 2]], r"^PackedSequences offsets must be a non-empty 1-D array of integers .* shape \(1, 2\)\.$"),
        ([[1, 2]], [0, 2], r"^PackedSequences values must be 1-D \(sequences laid end to end\), got shape \(1, 2\)\.$"),
        ([1j, 2], [0, 2], r"^PackedSequences values must hold real numbers, got dtype complex128"),
    ],
)
def test_packed_sequences_errors_name_the_sequence(values, offsets, message):
    with pytest.raises(ConfigError, match=message):
        PackedSequences(np.array(values), offsets)


@pytest.mark.parametrize(
    "seqs, message",
    [
        ([[1], [2, 3], []], r"^seqs_a\[2\] must be a non-empty 1-D sequence, got an empty one"),
        ([np.ones(2), np.array([1.0, np.nan])], r"^seqs_a\[1\] must hold finite numbers, got array\(\[ 1., nan\]\)\.$"),
        ([[1, 2], [3, float("inf")], [4]], r"^seqs_a\[1\] must hold finite numbers"),
        ([[1], [1j]], r"^seqs_a\[1\] must hold real numbers, got dtype complex128"),
        ([np.ones(2), np.array([1j])], r"^seqs_a\[1\] must hold real numbers, got dtype complex128"),
        (["12", "34"], r"^seqs_a\[0\] must be a sequence of numbers, got str: '12'\.$"),
        ([[1, 2], "34"], r"^seqs_a\[1\] must be a sequence of numbers, got str: '34'\.$"),
        ([[1, 2], b"12"], r"^seqs_a\[1\] must be a sequence of numbers, got bytes"),
        ([[1, 2], {30, 1}], r"^seqs_a\[1\] must be a sequence of numbers, got set"),
        ([{3, 1}], r"^seqs_a\[0\] must be a sequence of numbers, got set"),
        ([[1, 2], {7: "a", 8: "b"}], r"^seqs_a\[1\] must be a sequence of numbers, got dict"),
        ([[1, 2], np.array([3 + 1j, 4])], r"^seqs_a\[1\] must hold real numbers, got dtype complex128"),
        ([[1, 2], [10**400]], r"^seqs_a\[1\] must be a sequence of numbers"),
        ([np.ones(2), np.ones((2, 1))], r"^seqs_a\[1\] has shape \(2, 1\); batch_dtw / cdist_dtw take univariate sequences"),
        ([[1, 2], 3], r"^seqs_a\[1\] must be a non-empty 1-D sequence \(T,\) or a 2-D array \(T, d\), got shape \(\)"),
        (np.ones(3), r"^seqs_a as an array must be 2-D, .* got shape \(3,\): that is one sequence, pass \[sequence\] or call dtw\(\)"),
        (np.ones((2, 3, 1)), r"^seqs_a as an array must be 2-D, .* got shape \(2, 3, 1\): for tslearn's \(n, T, 1\) layout pass array\[\.\.\., 0\]"),
        (np.ones((2, 3, 2)), r"^seqs_a as an array must be 2-D, .* got shape \(2, 3, 2\); sequences of different lengths go in a list"),
        (np.ones((2, 0)), r"^seqs_a\[0\] must be a non-empty 1-D sequence, got an empty one"),
        (np.array([[1.0, 2.0], [3.0, np.nan]]), r"^seqs_a\[1\] must hold finite numbers"),
        (5, r"^seqs_a must be a list of sequences, got int: 5\.$"),
        ({1: [1]}, r"^seqs_a must be a list of sequences, got dict"),
    ],
)
def test_batch_input_errors_name_the_sequence(seqs, message):
    with pytest.raises(ConfigError, match=message):
        batch_dtw(seqs, [[1]] * 3)


def test_other_sequence_types_are_read_item_by_item():
    """A batch holding ranges, deques or array subclasses is not refused: it is converted item by item,
    to the same costs as lists."""
    import collections

    expected = batch_dtw([[0, 1, 2], [4.0, 5.0]], [[1], [2]])
    mixed = [range(3), collections.deque([4.0, 5.0])]
    assert batch_dtw(mixed, [[1], [2]]).tolist() == expected.tolist()
    assert batch_dtw([[0, 1, 2], np.ma.masked_array([4.0, 5.0])], [[1], [2]]).tolist() == expected.tolist()


def test_every_sequence_counts_in_the_length_check():
    with pytest.raises(ConfigError, match=r"^batch_dtw pairs seqs_a\[k\] with seqs_b\[k\]; got 3 and 2 sequences\.$"):
        batch_dtw(PackedSequences([1, 2, 3], [0, 1, 2, 3]), np.ones((2, 1)))


@pytest.mark.parametrize("n_jobs", [0, -2, MOST_THREADS + 1, 1.5, True, "2", None])
def test_n_jobs_must_be_a_thread_count(n_jobs):
    message = (
        rf"^n_jobs={n_jobs!r} is not a thread count here; use -1 for all {MOST_THREADS} threads numba may start "
        rf"\(NUMBA_NUM_THREADS\) or a number from 1 to {MOST_THREADS}\.$"
    )
    with pytest.raises(ConfigError, match=message):
        batch_dtw([[1]], [[1]], n_jobs=n_jobs)
    with pytest.raises(ConfigError, match=r"is not a thread count here"):
        cdist_dtw([[1]], backend="numpy", n_jobs=n_jobs)  # checked on every backend


def test_n_jobs_limits_accepted():
    for n_jobs in (-1, 1, MOST_THREADS, np.int64(1)):
        assert batch_dtw([[1, 2]], [[2]], n_jobs=n_jobs).tolist() == [1.0]


@pytest.fixture
def parallel_calls(monkeypatch):
    """Each launch of the threaded kernel, as (numba threads, chunk size) seen inside it."""
    calls = []
    real = module._costs_parallel

    def spy(*args):
        calls.append((numba.get_num_threads(), numba.get_parallel_chunksize()))
        return real(*args)

    monkeypatch.setattr(module, "_costs_parallel", spy)
    monkeypatch.setattr(module._ThreadPool, "started", False)
    monkeypatch.setattr(module._ThreadPool, "inherited", False)
    return calls


@needs_two_threads
def test_the_threaded_kernel_runs_with_n_jobs_threads_and_equals_the_serial_one(parallel_calls):
    # 2 * BLOCK + 1 pairs: three blocks, the last holding one pair (a block count rounded down loses it)
    a, b = ragged(2 * BLOCK + 1, 1), ragged(2 * BLOCK + 1, 2, longest=40)
    b[-1] = np.array([9.0, 9.0])
    serial = batch_dtw(a, b, n_jobs=1)
    assert parallel_calls == []
    assert serial.tolist() == [dtw(x, y) for x, y in zip(a, b)]
    before = numba.get_num_threads()
    assert not module._ThreadPool.started
    assert np.array_equal(batch_dtw(a, b, n_jobs=2), serial)
    assert parallel_calls == [(2, 1)] and module._ThreadPool.started
    assert numba.get_num_threads() == before  # the caller's setting comes back
    assert np.array_equal(batch_dtw(a, b), serial)  # the default, n_jobs=-1: every thread
    cdist_dtw(a[:17])
    assert parallel_calls == [(2, 1), (MOST_THREADS, 1), (MOST_THREADS, 1)]


@needs_two_threads
def test_small_batches_and_forked_children_stay_on_one_thread(parallel_calls, monkeypatch):
    a = ragged(BLOCK + 1, 3)
    batch_dtw(a[:BLOCK], a[:BLOCK], n_jobs=2)
    cdist_dtw(a[:16], n_jobs=2)  # 16 x 16 = BLOCK entries
    assert parallel_calls == []
    cdist_dtw(a[:17], n_jobs=2)
    assert len(parallel_calls) == 1
    monkeypatch.setattr(module._ThreadPool, "inherited", True)
    batch_dtw(a, a, n_jobs=2)
    assert len(parallel_calls) == 1


@needs_two_threads
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_matrices_split_across_blocks(n_jobs):
    # 23 x 23 = 529 entries: blocks start at k = 256 (row 11, column 3) and 512 (row 22, column 6),
    # mid-row, so a block that starts from the wrong (i, j) shifts every cost after it.
    seqs = ragged(23, 4)
    seqs[22] = np.array([5.0, 5.0, 5.0])
    expected = np.array([[dtw(x, y) if i != j else 0.0 for j, y in enumerate(seqs)] for i, x in enumerate(seqs)])
    matrix = cdist_dtw(seqs, n_jobs=n_jobs)
    assert np.array_equal(matrix, expected) and np.array_equal(matrix, matrix.T)
    assert np.count_nonzero(np.diag(matrix)) == 0 and np.count_nonzero(matrix) > 400
    other = ragged(25, 5)
    cross = cdist_dtw(seqs, other, "sqeuclidean", n_jobs=n_jobs)
    assert cross.shape == (23, 25)
    assert np.array_equal(cross, [[dtw(x, y, "sqeuclidean") for y in other] for x in seqs])
    assert np.array_equal(cross, cdist_dtw(seqs, other, "sqeuclidean", backend="numpy"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_runs_its_own_implementation(backend, monkeypatch):
    ran = []
    for name in ("_numba_costs", "_batch_numpy", "_batch_torch", "_batch_tslearn"):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *args, real=real, name=name: ran.append(name) or real(*args))
    seqs = [[0, 1, 2], [2, 2], [5, 4, 3, 2], [1], [3, 0]]
    expected = [[dtw(x, y) if i != j else 0.0 for j, y in enumerate(seqs)] for i, x in enumerate(seqs)]
    assert cdist_dtw(seqs, backend=backend).tolist() == expected  # the upper triangle, mirrored, on every backend
    assert cdist_dtw(seqs[:2], seqs, backend=backend).tolist() == expected[:2]
    assert batch_dtw(seqs, seqs[::-1], backend=backend).tolist() == [expected[i][-1 - i] for i in range(5)]
    implementation = {"numba": "_numba_costs", "numpy": "_batch_numpy", "torch": "_batch_torch", "tslearn": "_batch_tslearn"}
    assert ran == [implementation[backend]] * 3


def test_the_torch_backend_names_its_extra_when_torch_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails
    message = r"^batch_dtw\(backend='torch'\) needs the optional package 'torch', .* pip install 'dialogue_gym\[llm\]'$"
    with pytest.raises(DependencyNotInstalled, match=message):
        batch_dtw([[1]], [[1]], backend="torch")


def test_matrix_shapes_of_empty_inputs():
    assert cdist_dtw([]).shape == (0, 0)
    assert cdist_dtw([], [[1]]).shape == (0, 1)
    assert cdist_dtw([[1]], np.zeros((0, 3))).shape == (1, 0)
    assert cdist_dtw(PackedSequences(np.zeros(0), [0])).shape == (0, 0)


FORK_SCRIPT = textwrap.dedent(
    """
    import importlib, os
    import numpy as np
    dtw = importlib.import_module("dialogue_gym.metrics.dtw")
    launched = []
    real = dtw._costs_parallel
    dtw._costs_parallel = lambda *args: launched.append(1) or real(*args)
    seqs = [[float(i % 6)] * (1 + i % 7) + [float(i % 5)] for i in range(600)]
    expected = dtw.batch_dtw(seqs, seqs[::-1], n_jobs=1)

    def child_status():
        pid = os.fork()
        if pid == 0:
            same = np.array_equal(dtw.batch_dtw(seqs, seqs[::-1], n_jobs=2), expected)
            os._exit((0 if same else 1) + (2 if launched else 0))
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    print(child_status())  # the parent has not started numba's threads: the child may
    dtw.batch_dtw(seqs, seqs[::-1], n_jobs=2)
    launched.clear()
    print(child_status())  # now it has: the child runs the serial kernel (GNU OpenMP would kill it)
    """
)


@needs_two_threads
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_after_the_threads_started_computes_on_one_thread():
    result = subprocess.run([sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "0"], result.stderr


THREADS_SCRIPT = textwrap.dedent(
    """
    import threading

    import numpy as np

    from dialogue_gym.metrics.dtw import batch_dtw

    seqs = [np.arange(1.0, 2 + k % 7) for k in range(600)]  # over one block: the threaded kernel runs
    expected = batch_dtw(seqs, seqs[::-1], n_jobs=1)
    same = []

    def work():
        for _ in range(20):
            same.append(np.array_equal(batch_dtw(seqs, seqs[::-1], n_jobs=2), expected))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(len(same), all(same))
    """
)


@needs_two_threads
def test_two_python_threads_share_the_workqueue_layer():
    """numba's workqueue layer (which batch_dtw's docstring suggests on shared cores) aborts the process
    when two Python threads run parallel regions at once; the kernels take turns instead."""
    environment = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    result = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], capture_output=True, text=True, timeout=300, env=environment)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["40", "True"], result.stderr[-2000:]


def test_a_long_pair_is_not_padded_into_thousands_of_short_ones(monkeypatch):
    """numpy and torch pad each chunk to its longest pair: chunks follow length, each as large as keeps
    its cumulative matrices, count x (L + 1) x (2 L + 1) cells, under _CHUNK_CELLS (one long pair among
    4,095 short ones asked for 244 GiB)."""
    dtw_module = importlib.import_module("dialogue_gym.metrics.dtw")
    lengths = [1 + k % 4 for k in range(300)] + [10] * 40 + [60, 2, 45]
    seqs_a = [np.arange(float(n)) for n in lengths]
    seqs_b = [np.arange(float(n))[::-1] + 0.5 for n in lengths]
    offsets = dtw_module._packed(seqs_a, "a")[1]
    index = np.arange(len(lengths))
    budget, most = 17 * 11 * 21, 64  # exactly 17 pairs of length 10 fit: the bound is inclusive
    monkeypatch.setattr(dtw_module, "_CHUNK_CELLS", budget)
    chunks = [chunk.tolist() for chunk in dtw_module._chunks(offsets, offsets, index, index, most=most)]
    expected, current = [], []  # by hand: the sorted pairs, a chunk closed when the next would not fit
    for position in sorted(index.tolist(), key=lambda k: lengths[k]):
        longest = lengths[position]
        if current and (len(current) == most or (len(current) + 1) * (longest + 1) * (2 * longest + 1) > budget):
            expected.append(current)
            current = []
        current.append(position)
    expected.append(current)
    assert chunks == expected
    assert [len(chunk) for chunk in chunks if lengths[chunk[-1]] == 10][0] == budget // (11 * 21) == 17
    assert [len(chunk) for chunk in chunks][-2:] == [1, 1]  # the two long pairs alone
    reference = batch_dtw(seqs_a, seqs_b, n_jobs=1)
    for backend in ("numpy", "torch"):
        if backend == "torch":
            pytest.importorskip("torch")
        assert batch_dtw(seqs_a, seqs_b, backend=backend).tolist() == reference.tolist()
        assert cdist_dtw(seqs_a[:40], seqs_b[-30:], backend=backend).tolist() == cdist_dtw(seqs_a[:40], seqs_b[-30:], n_jobs=1).tolist()
