"""Lists (and tuples) of sequences are packed inside compiled code (``_pack_objects``) exactly as the
Python packer packs them: the same float64 values and offsets, the same costs bit for bit; whatever
it cannot read goes to the Python packer, which names the bad item as before."""

import importlib
import threading

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError

dtw = importlib.import_module("dialogue_gym.metrics.dtw")

pytestmark = pytest.mark.skipif(not dtw._compiled_packing_works(), reason="this interpreter's objects are not laid out as the compiled packer reads them")


def python_packed(values, name="seqs"):
    """The plain packer: the compiled one switched off."""
    saved = dtw._CompiledPacking.usable
    dtw._CompiledPacking.usable = False
    try:
        return dtw._packed(values, name)
    finally:
        dtw._CompiledPacking.usable = saved


def compiled(values):
    packed = dtw._packed_compiled(values, None)
    assert packed is not None, "expected the compiled packer to read this batch"
    return packed


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


def random_item(rng):
    length = int(rng.integers(1, 16))
    kind = rng.integers(0, 11)
    ints = rng.integers(-(2**62), 2**62, length) // (10 ** rng.integers(0, 19))
    floats = rng.normal(0, 10.0 ** rng.integers(-3, 30), length)
    if kind == 0:
        return [int(x) for x in ints]
    if kind == 1:
        return [float(x) for x in floats]
    if kind == 2:
        return tuple(int(x) if i % 2 else float(f) for i, (x, f) in enumerate(zip(ints, floats)))
    if kind == 3:
        return [bool(x % 2) for x in ints] + [2**31, -(2**30), 2**30 - 1, 10**20, -(2**63) - 1]
    if kind == 4:
        return floats
    if kind == 5:
        return floats.astype(np.float32)
    if kind == 6:
        return ints
    if kind == 7:
        return ints.astype(np.int32)
    if kind == 8:
        return np.repeat(floats, 3)[::3]  # strided
    if kind == 9:
        return ints[::-1]  # negative stride
    return np.asfortranarray(floats)


@pytest.mark.parametrize("seed", range(20))
def test_compiled_packing_equals_the_python_packer(seed):
    rng = np.random.default_rng(seed)
    batch = [random_item(rng) for _ in range(int(rng.integers(1, 60)))]
    for values in (batch, tuple(batch)):
        fast = compiled(values)
        slow = python_packed(values)
        same_bits(fast[0], slow[0])
        same_bits(fast[1], slow[1])


@pytest.mark.parametrize("seed", range(5))
def test_costs_from_lists_arrays_and_packed_input_are_the_same_bits(seed):
    rng = np.random.default_rng(100 + seed)
    arrays = [rng.integers(0, 6, int(rng.integers(3, 16))) for _ in range(400)]
    others = [rng.normal(size=int(rng.integers(3, 16))) for _ in range(400)]
    packed = dtw.batch_dtw(dtw.pack_sequences(arrays), dtw.pack_sequences(others), n_jobs=1)
    for a, b in [(arrays, others), ([a.tolist() for a in arrays], [b.tolist() for b in others]),
                 (tuple(a.astype(np.int32) for a in arrays), [tuple(b) for b in others])]:
        same_bits(dtw.batch_dtw(a, b, n_jobs=1), packed)
        same_bits(dtw.cdist_dtw(a[:30], b[:20], n_jobs=1), dtw.cdist_dtw(dtw.pack_sequences(arrays[:30]), dtw.pack_sequences(others[:20]), n_jobs=1))


@pytest.mark.parametrize("batch", [
    [[1, 2], [np.float64(2.0)]],  # a NumPy scalar: a float subclass
    [[1, 2], ["3"]],
    [[1, 2], [[3]]],
    [[1, 10**400]],  # beyond float64: PyFloat_AsDouble fails and is cleared
    [np.zeros((2, 2))],
    [np.array([1 + 2j])],
    [np.array([1, 2], dtype=np.float16)],
    [np.array([1, 2], dtype=np.uint64)],
    [np.array([1.0, 2.0]).astype(">f8")],  # not the native builtin dtype object
    [[1, 2], {3, 4}],
    [range(3)],
    [np.float64(2.0)],
])
def test_what_the_compiled_packer_cannot_read_goes_to_the_python_packer(batch):
    assert dtw._packed_compiled(batch, None) is None
    try:
        expected = python_packed(batch)
    except ConfigError as error:
        with pytest.raises(ConfigError, match=".+") as raised:
            dtw._packed(batch, "seqs")
        assert str(raised.value) == str(error)
    else:
        got = dtw._packed(batch, "seqs")
        same_bits(got[0], expected[0])
        same_bits(got[1], expected[1])


@pytest.mark.parametrize("batch, message", [
    ([[1.0, float("nan")]], r"seqs\[0\] must hold finite numbers"),
    ([[1.0], []], r"seqs\[1\] must be a non-empty 1-D sequence"),
    ([[1.0], [float("inf")]], r"seqs\[1\] must hold finite numbers"),
])
def test_compiled_packs_are_validated_like_python_ones(batch, message):
    assert dtw._packed_compiled(batch, None) is not None
    with pytest.raises(ConfigError, match=message):
        dtw._packed(batch, "seqs")
    with pytest.raises(ConfigError, match=message):
        python_packed(batch)


def test_scratch_buffers_are_reused_and_never_handed_out():
    first = [[1, 2, 3], [4, 5]]
    second = [[9.5, 8.5], [7.5]]
    packed = dtw.pack_sequences(first)  # arrays of its own, not the scratch buffer
    assert dtw.batch_dtw(first, first, n_jobs=1).tolist() == [0.0, 0.0]
    assert dtw.batch_dtw(second, first, n_jobs=1).tolist() == dtw.batch_dtw(second, first, backend="numpy").tolist() == [20.5, 6.0]
    assert packed.values.tolist() == [1, 2, 3, 4, 5]
    assert not any(np.shares_memory(packed.values, buffer) for buffer in dtw._scratch.buffers.values())
    long = [list(range(20))] * 10  # longer than the guess of 16 points a sequence: the kernel grows its buffer
    same_bits(dtw.batch_dtw(long, long[::-1], n_jobs=1), np.zeros(10))
    same_bits(dtw.batch_dtw(second, first, n_jobs=1), np.array([20.5, 6.0]))


def test_threads_pack_into_buffers_of_their_own():
    rng = np.random.default_rng(7)
    batches = [([rng.integers(0, 6, 9).tolist() for _ in range(300)], [rng.integers(0, 6, 7).tolist() for _ in range(300)]) for _ in range(4)]
    expected = [dtw.batch_dtw(dtw.pack_sequences(a), dtw.pack_sequences(b), n_jobs=1) for a, b in batches]
    results = [None] * 4

    def work(k):
        for _ in range(30):
            results[k] = dtw.batch_dtw(*batches[k], n_jobs=1)
            assert np.array_equal(results[k], expected[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected):
        same_bits(got, want)
