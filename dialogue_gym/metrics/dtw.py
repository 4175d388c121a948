"""Dynamic time warping over short sequences, exactly equal to tslearn, and the per-turn alignment
deviations TRACER builds on (SPEC section 2).

Names follow tslearn: :func:`dtw`, :func:`dtw_path`, :func:`batch_dtw`, :func:`cdist_dtw`.

**Cost convention.** Every function here returns the *cumulative local cost along the optimal path*
(no square root), which is what ``tslearn.metrics.dtw_path_from_metric`` returns:

* ``metric="abs"``: local cost ``|a_i - b_j|`` (cityblock for multivariate points); equals
  ``dtw_path_from_metric(a, b, metric="cityblock")`` exactly, path included. This is TRACER's
  intent-trajectory cost.
* ``metric="sqeuclidean"``: local cost ``||a_i - b_j||^2``; equals
  ``dtw_path_from_metric(a, b, metric="sqeuclidean")`` exactly. ``tslearn.metrics.dtw`` returns the
  square root of this sum: ``tslearn.metrics.dtw(a, b) == sqrt(dtw(a, b, "sqeuclidean"))``.
* ``metric="cosine"`` (multivariate points, e.g. reply embeddings): ``1 - cos(a_i, b_j)``, equal to
  ``dtw_path_from_metric(a, b, metric="cosine")`` except that a zero vector is at distance 0 from
  another zero vector (scikit-learn says 1) and 1 from anything else.

The recurrence is tslearn's, ``D(i, j) = C(i, j) + min(D(i-1, j-1), D(i-1, j), D(i, j-1))``, and the
path is traced back from the end preferring the diagonal, then ``(i-1, j)``, then ``(i, j-1)`` on ties,
so paths equal tslearn's too.

**Batches** of univariate sequences (intent trajectories) come in any of three forms, none of which
costs Python work per pair: a list of sequences of any lengths (lists, tuples or 1-D arrays, packed in
compiled code that reads the Python objects in place), a 2-D array with one equal-length sequence per
row, or a :class:`PackedSequences`
(``values`` laid end to end and ``offsets``), the layout the kernels read, which costs nothing to take.
They run on one of four backends: ``"numba"`` (a compiled kernel over the packed layout, the default:
numba is already a dependency of tslearn; ``n_jobs`` threads), ``"numpy"`` (a vectorised
anti-diagonal wavefront over the whole batch), ``"torch"`` (the same wavefront in torch) and
``"tslearn"`` (one ``dtw_path_from_metric`` call per pair, the reference). Every backend and every
``n_jobs`` gives the same costs, bit for bit. ``python benchmarks/dtw_throughput.py`` measures them
side by side, with dtaidistance as a peer.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numba
import numba.extending
import numpy as np

from dialogue_gym.errors import ConfigError

METRICS = ("abs", "sqeuclidean", "cosine")
BATCH_METRICS = ("abs", "sqeuclidean")
BACKENDS = ("numba", "numpy", "torch", "tslearn")
_TSLEARN_METRIC = {"abs": "cityblock", "sqeuclidean": "sqeuclidean", "cosine": "cosine"}


# -- validation ------------------------------------------------------------------------------
def _check_metric(metric: str, allowed: tuple[str, ...] = METRICS) -> str:
    if metric not in allowed:
        raise ConfigError(f"metric={metric!r} is not supported here; use one of {list(allowed)}.")
    return metric


def _real(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array, converted as NumPy converts; complex numbers are refused rather
    than cast (NumPy would drop the imaginary part)."""
    try:
        array = np.asarray(value)
        if array.dtype.kind != "c":
            return array.astype(np.float64, copy=False)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int beyond float64, e.g. 10**400
        raise ConfigError(f"{name} must be a sequence of numbers (or of equal-length vectors), got {value!r:.80}.") from exc
    raise ConfigError(f"{name} must hold real numbers, got dtype {array.dtype}: {value!r:.80}.")


def _sequence(value: Any, name: str) -> np.ndarray:
    """A non-empty finite float64 array of shape (T,) or (T, d)."""
    array = _real(value, name)
    if array.ndim not in (1, 2) or array.shape[0] == 0:
        raise ConfigError(
            f"{name} must be a non-empty 1-D sequence (T,) or a 2-D array (T, d), got shape {array.shape}: {value!r:.80}."
        )
    if array.ndim == 2 and array.shape[1] == 0:
        raise ConfigError(f"{name} must hold points of at least one feature, got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"{name} must hold finite numbers, got {value!r:.80}.")
    return array


def _pair(a: Any, b: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    _check_metric(metric)
    a, b = _sequence(a, "a"), _sequence(b, "b")
    if metric == "cosine" and (a.ndim != 2 or b.ndim != 2):
        raise ConfigError(f"metric='cosine' needs 2-D arrays of vectors (T, d), got shapes {a.shape} and {b.shape}.")
    if a.ndim != b.ndim or (a.ndim == 2 and a.shape[1] != b.shape[1]):
        raise ConfigError(f"a and b must have the same point dimension, got shapes {a.shape} and {b.shape}.")
    return a, b


def local_cost_matrix(a: Any, b: Any, metric: str = "abs") -> np.ndarray:
    """The ``(len(a), len(b))`` matrix of local costs between points of ``a`` and ``b``.

    Every multivariate cost sums the features one after another, from the first, so its bits are the
    same on any CPU and in any memory layout: ``abs`` and ``sqeuclidean`` as scipy's ``cdist`` (and so
    tslearn) take them, where NumPy's ``sum`` would add eight at a time, in another order for a
    Fortran-ordered array, and differently again with another SIMD width. ``cosine`` is
    ``1 - a.b / sqrt((a.a) (b.b))`` with each dot product summed that way too, where scikit-learn's
    (tslearn's) matrix product adds in the order of the CPU's BLAS kernel: it equals tslearn's to within
    a few units in the last place, and is exactly 0 between a vector and any positive multiple of it when
    their dot products are exact (integer counts, say)."""
    a, b = _pair(a, b, metric)
    if a.ndim == 1:
        difference = a[:, None] - b[None, :]
        return np.abs(difference) if metric == "abs" else difference * difference
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if metric == "cosine":
        return _cosine_cost(a, b)

    def term(feature: int) -> np.ndarray:
        difference = a[:, feature, None] - b[None, :, feature]
        return np.abs(difference) if metric == "abs" else difference * difference

    return _left_to_right(term, a.shape[1])


def _left_to_right(term: Any, features: int) -> np.ndarray:
    """``term(0) + term(1) + ... + term(features - 1)``, added in that order."""
    total = term(0)  # points have at least one feature (_sequence)
    for feature in range(1, features):
        total = total + term(feature)
    return total


def _cosine_cost(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine distances between the rows of ``a`` and ``b``, every dot product added left to right; a
    zero vector is at distance 1 from every other vector and 0 from another zero vector."""
    dots = _left_to_right(lambda feature: a[:, feature, None] * b[None, :, feature], a.shape[1])
    squares_a = _left_to_right(lambda feature: a[:, feature] * a[:, feature], a.shape[1])
    squares_b = _left_to_right(lambda feature: b[:, feature] * b[:, feature], b.shape[1])
    scale = np.sqrt(squares_a[:, None] * squares_b[None, :])
    zero_a, zero_b = squares_a == 0, squares_b == 0
    cost = 1.0 - np.clip(dots / np.where(scale > 0, scale, 1.0), -1.0, 1.0)
    cost[zero_a[:, None] | zero_b[None, :]] = 1.0
    cost[zero_a[:, None] & zero_b[None, :]] = 0.0
    return cost


# -- compiled kernels ------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _accumulate(cost: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(n):
        for j in range(m):
            acc[i + 1, j + 1] = cost[i, j] + min(acc[i, j + 1], acc[i + 1, j], acc[i, j])
    return acc[1:, 1:]


@numba.njit(cache=True, nogil=True)
def _trace_path(acc: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    i, j = acc.shape[0] - 1, acc.shape[1] - 1
    path = np.empty((i + j + 1, 2), dtype=np.int64)
    k = 0
    path[0, 0], path[0, 1] = i, j
    while i > 0 or j > 0:
        if i == 0:
            j -= 1
        elif j == 0:
            i -= 1
        else:
            diagonal, up, left = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
            if diagonal <= up and diagonal <= left:
                i -= 1
                j -= 1
            elif up <= left:
                i -= 1
            else:
                j -= 1
        k += 1
        path[k, 0], path[k, 1] = i, j
    return path[: k + 1][::-1]


_PAIRED, _CROSS, _SELF = 0, 1, 2
"""Which pairs a batch kernel computes: ``(a[k], b[k])``; every ``(a[i], b[j])`` into an
``len(a) x len(b)`` matrix; every ``(a[i], a[j])``, ``i < j`` once, into a symmetric matrix with a zero diagonal."""

_BLOCK = 256
"""Pairs per parallel work item: ~25 us of work, enough that handing it to a thread costs nothing,
few enough that a thread slowed by another process does not hold up the batch."""


@numba.njit(cache=True, nogil=True)
def _pair_cost(a, b, squared, row):  # pragma: no cover - compiled
    """DTW cost of ``a`` against ``b``, keeping one row of the cumulative matrix in ``row`` (at least
    ``len(b)`` long).

    Equal to :func:`_accumulate` (tslearn's recurrence), bit for bit: ``min`` is exact, and
    ``local + min(x, y, z)`` is the same single rounding whichever order the minimum is taken in. The
    first row and column have one finite predecessor each, so they are running sums and the inner loop
    needs no branch."""
    m = b.shape[0]
    x = a[0]
    left = 0.0
    for j in range(m):
        difference = x - b[j]
        left = (difference * difference if squared else abs(difference)) + left
        row[j] = left
    for i in range(1, a.shape[0]):
        x = a[i]
        difference = x - b[0]
        diagonal = row[0]
        left = (difference * difference if squared else abs(difference)) + diagonal
        row[0] = left
        for j in range(1, m):
            up = row[j]
            difference = x - b[j]
            left = (difference * difference if squared else abs(difference)) + min(left, min(up, diagonal))
            diagonal = up
            row[j] = left
    return row[m - 1]


@numba.njit(cache=True, nogil=True)
def _costs_range(values_a, offsets_a, values_b, offsets_b, mode, squared, width, out, start, stop):  # pragma: no cover
    """Costs ``start:stop`` of a batch into ``out`` (see ``_PAIRED``, ``_CROSS``, ``_SELF``; the
    matrix modes number the pairs row by row, ``k = i * len(b) + j``). ``width`` is the longest ``b``."""
    row = np.empty(width)
    if mode == _PAIRED:
        for k in range(start, stop):
            out[k] = _pair_cost(values_a[offsets_a[k] : offsets_a[k + 1]], values_b[offsets_b[k] : offsets_b[k + 1]], squared, row)
        return out
    columns = offsets_b.shape[0] - 1
    i, j = start // columns, start % columns
    for k in range(start, stop):
        if mode == _CROSS or j > i:
            cost = _pair_cost(values_a[offsets_a[i] : offsets_a[i + 1]], values_b[offsets_b[j] : offsets_b[j + 1]], squared, row)
            out[k] = cost
            if mode == _SELF:
                out[j * columns + i] = cost
        elif j == i:
            out[k] = 0.0
        j += 1
        if j == columns:
            i, j = i + 1, 0
    return out


@numba.njit(cache=True, parallel=True)
def _costs_parallel(values_a, offsets_a, values_b, offsets_b, mode, squared, width, out):  # pragma: no cover
    """:func:`_costs_range` over the whole batch, ``_BLOCK`` pairs per work item, on numba's threads
    (one call at a time: :data:`_PARALLEL_REGION`)."""
    count = out.shape[0]
    for block in numba.prange(-(-count // _BLOCK)):  # ceil(count / _BLOCK) blocks, the last one short
        start = block * _BLOCK
        _costs_range(values_a, offsets_a, values_b, offsets_b, mode, squared, width, out, start, min(count, start + _BLOCK))
    return out


# -- single pairs ------------------------------------------------------------------------------
def _accumulated(a: Any, b: Any, metric: str) -> np.ndarray:
    return _accumulate(np.ascontiguousarray(local_cost_matrix(a, b, metric)))


def dtw(a: Any, b: Any, metric: str = "abs") -> float:
    """Cumulative local cost of the optimal warping path between ``a`` and ``b`` (see the module doc
    for the convention: no square root, equal to tslearn's ``dtw_path_from_metric`` cost)."""
    return float(_accumulated(a, b, metric)[-1, -1])


def dtw_path(a: Any, b: Any, metric: str = "abs") -> tuple[list[tuple[int, int]], float]:
    """``(path, cost)``: the optimal path as ``(i, j)`` index pairs (``i`` into ``a``), from ``(0, 0)``
    to ``(len(a) - 1, len(b) - 1)``, and its cumulative cost. Equal to tslearn's ``dtw_path_from_metric``."""
    accumulated = _accumulated(a, b, metric)
    path = [(int(i), int(j)) for i, j in _trace_path(accumulated)]
    return path, float(accumulated[-1, -1])


def dtw_path_from_cost(cost: Any) -> tuple[list[tuple[int, int]], float]:
    """``(path, cost)`` from a precomputed local-cost matrix (tslearn's ``metric="precomputed"``)."""
    matrix = _real(cost, "cost")
    if matrix.ndim != 2 or 0 in matrix.shape or not np.all(np.isfinite(matrix)):
        raise ConfigError(f"cost must be a non-empty finite 2-D matrix, got shape {matrix.shape}.")
    accumulated = _accumulate(np.ascontiguousarray(matrix))
    return [(int(i), int(j)) for i, j in _trace_path(accumulated)], float(accumulated[-1, -1])


# -- batches of univariate sequences ------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PackedSequences:
    """Univariate sequences of any lengths laid end to end: sequence ``k`` is
    ``values[offsets[k]:offsets[k + 1]]``.

    This is the layout the batch kernels read, so :func:`batch_dtw` and :func:`cdist_dtw` take it with
    no packing at all. Build one with :func:`pack_sequences`, or from arrays already laid out this way:
    ``values`` of any real dtype (kept as float64), ``offsets`` integers from 0 to ``len(values)``,
    strictly increasing (every sequence has at least one point). Both are checked here and again on
    each use (a few microseconds), since the arrays may be the caller's own and change later."""

    values: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        values, offsets = _checked_layout(self.values, self.offsets, "PackedSequences")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "offsets", offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def pack_sequences(seqs: Any) -> PackedSequences:
    """``seqs`` (a list of univariate sequences, or a 2-D array of equal-length rows) as
    :class:`PackedSequences`, to pack once and reuse."""
    return PackedSequences(*_packed(seqs, "seqs"))


def _checked_layout(values: Any, offsets: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(values, offsets)`` as contiguous float64 / int64 arrays, checked so that the kernels, which do
    not bounds-check, only read inside ``values``; errors name the offending sequence ``name[k]``."""
    values = np.ascontiguousarray(_real(values, f"{name} values"))
    offsets = np.asarray(offsets)
    if values.ndim != 1:
        raise ConfigError(f"{name} values must be 1-D (sequences laid end to end), got shape {values.shape}.")
    if offsets.ndim != 1 or offsets.size == 0 or offsets.dtype.kind not in "iu":
        raise ConfigError(
            f"{name} offsets must be a non-empty 1-D array of integers (len(sequences) + 1 of them), "
            f"got dtype {offsets.dtype} and shape {offsets.shape}."
        )
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets[0] != 0 or offsets[-1] != values.size:
        raise ConfigError(
            f"{name} offsets must run from 0 to len(values) = {values.size}, got {offsets[0]} to {offsets[-1]}."
        )
    lengths = np.diff(offsets)
    if lengths.size and lengths.min() <= 0:
        k = int(np.argmax(lengths <= 0))
        if lengths[k] < 0:
            raise ConfigError(f"{name} offsets must increase, got offsets[{k}] = {offsets[k]} > offsets[{k + 1}] = {offsets[k + 1]}.")
        raise ConfigError(f"{name}[{k}] must be a non-empty 1-D sequence, got an empty one; DTW needs a point of each sequence.")
    finite = np.isfinite(values)
    if not finite.all():
        k = int(np.searchsorted(offsets, np.argmin(finite), side="right")) - 1
        raise ConfigError(f"{name}[{k}] must hold finite numbers, got {values[offsets[k] : offsets[k + 1]]!r:.80}.")
    return values, offsets


def _univariate(values: Sequence[Any], name: str) -> list[np.ndarray]:
    """Each item checked and converted on its own, errors naming it ``name[k]`` (the slow path of
    :func:`_packed_list`)."""
    sequences = []
    for position, value in enumerate(values):
        if isinstance(value, (str, bytes, set, frozenset, dict)):  # NumPy would read digits, codes or keys
            raise ConfigError(f"{name}[{position}] must be a sequence of numbers, got {type(value).__name__}: {value!r:.80}.")
        sequence = _sequence(value, f"{name}[{position}]")
        if sequence.ndim != 1:
            raise ConfigError(
                f"{name}[{position}] has shape {sequence.shape}; batch_dtw / cdist_dtw take univariate sequences. "
                "Use dtw() for multivariate ones."
            )
        sequences.append(sequence)
    return sequences


# -- packing Python lists inside compiled code ----------------------------------------------------
# Reading a list of sequences item by item in Python costs more than the DTW itself: from lists of 3-15
# ints, packing was 84% of batch_dtw's time (issue 45: 1.4M pairs/s from lists, 2.0M from lists of arrays,
# 8.9M packed). The kernel below reads the CPython objects where they lie, with the GIL held: a list's or
# tuple's item pointers, a float or int through PyFloat_AsDouble, a 1-D array's data through its
# pointer, length and stride, for the dtypes in _ARRAY_KINDS only. Anything else (another item type, a
# number subclass, another dtype, a conversion that fails) hands the batch back to the Python packer,
# which names the bad item. Whether this interpreter lays its objects out as read here is checked once,
# on samples packed both ways (_compiled_packing_works), before the kernel is used.

_OB_TYPE, _OB_SIZE, _LIST_ITEMS, _TUPLE_ITEMS = 8, 16, 24, 24
"""Offsets in a 64-bit CPython object: its type, a list's or tuple's length, a list's item array
pointer, a tuple's inline items."""
_AHEAD = 8
"""How many items ahead :func:`_pack_objects` prefetches."""
_FLOAT_VALUE, _INT_DIGITS = 16, 24
"""Offsets of a float's value and of an int's first 30-bit digit."""
_ARRAY_DATA, _ARRAY_NDIM, _ARRAY_DIMS, _ARRAY_STRIDES, _ARRAY_DESCR = 16, 24, 32, 40, 56
"""Offsets of NumPy's ``PyArrayObject_fields``: data pointer, ndim, shape and strides pointers, dtype."""
_ARRAY_KINDS = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.int32))
"""The dtypes the compiled packer reads, by the identity of NumPy's builtin dtype objects (codes 0-3)."""


def _load(kind: Any) -> Any:
    """A numba intrinsic: the ``kind`` value stored at an integer address."""

    @numba.extending.intrinsic
    def load(typingctx, address):
        def codegen(context, builder, signature, args):
            pointer = builder.inttoptr(args[0], context.get_value_type(kind).as_pointer())
            return builder.load(pointer)

        return kind(numba.types.intp), codegen

    return load


_load_intp, _load_int32 = _load(numba.types.intp), _load(numba.types.int32)
_load_float64, _load_float32, _load_int64 = _load(numba.types.float64), _load(numba.types.float32), _load(numba.types.int64)


@numba.extending.intrinsic
def _call_double_of_pointer(typingctx, function, argument):
    """Call the C function ``double f(void *)`` at address ``function`` with ``argument``."""

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        kind = ir.FunctionType(ir.DoubleType(), [ir.IntType(8).as_pointer()])
        callee = builder.inttoptr(args[0], kind.as_pointer())
        return builder.call(callee, [builder.inttoptr(args[1], ir.IntType(8).as_pointer())])

    return numba.types.float64(numba.types.intp, numba.types.intp), codegen


@numba.extending.intrinsic
def _call_pointer(typingctx, function):
    """Call the C function ``void *f(void)`` at address ``function``; its result as an integer."""

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        kind = ir.FunctionType(ir.IntType(8).as_pointer(), [])
        result = builder.call(builder.inttoptr(args[0], kind.as_pointer()), [])
        return builder.ptrtoint(result, context.get_value_type(numba.types.intp))

    return numba.types.intp(numba.types.intp), codegen


@numba.extending.intrinsic
def _prefetch(typingctx, address):
    """Ask the CPU to bring the cache line at ``address`` in (a hint: never faults, no result)."""

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = builder.module.declare_intrinsic("llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [pointer, int32, int32, int32]))
        builder.call(function, [builder.inttoptr(args[0], pointer), int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return numba.types.none(numba.types.intp), codegen


@numba.njit(cache=True)
def _item(container, is_list, k):  # pragma: no cover - compiled
    """The address of item ``k`` of the list or tuple at ``container``."""
    if is_list:
        return _load_intp(_load_intp(container + _LIST_ITEMS) + 8 * k)
    return _load_intp(container + _TUPLE_ITEMS + 8 * k)


@numba.njit(cache=True)
def _small_int(number, int_layout):  # pragma: no cover - compiled
    """``(True, value)`` for an int (or bool) of one 30-bit digit at most, read in place; ``(False, 0.0)``
    for a larger one or an unknown layout (then ``PyFloat_AsDouble`` converts it). ``int_layout`` 1:
    CPython before 3.12 (signed digit count at ``_OB_SIZE``); 2: 3.12 and later (``lv_tag``: digit
    count << 3 | sign bits, 0 positive, 1 zero, 2 negative)."""
    tag = _load_intp(number + _OB_SIZE)
    digit = float(_load_int32(number + _INT_DIGITS))
    if int_layout == 1 and -1 <= tag <= 1:
        return True, tag * digit
    if int_layout == 2 and tag < 16:
        return True, (1 - (tag & 3)) * digit
    return False, 0.0


@numba.njit(cache=True)
def _pack_objects(outer, outer_is_list, count, kinds, descrs, int_layout, as_double, error_occurred, error_clear, out):  # pragma: no cover
    """``(values, offsets, ok)`` of the ``count`` sequences in the list/tuple at address ``outer``, the
    values written into ``out`` (a larger array where it is too short); ``ok`` is False (and the arrays
    unused) where an item is not one this kernel reads.

    ``kinds`` holds the type addresses of list, tuple, ndarray, float, int and bool; ``descrs`` those of
    the dtypes of :data:`_ARRAY_KINDS`; ``int_layout`` says how ints are stored (:func:`_small_int`);
    ``as_double``, ``error_occurred`` and ``error_clear`` are the addresses of ``PyFloat_AsDouble``,
    ``PyErr_Occurred`` and ``PyErr_Clear``."""
    offsets = np.zeros(count + 1, dtype=np.int64)
    values = out
    for k in range(count):
        # the objects lie scattered in memory: fetch the headers 8 items ahead and a list's item array 4
        # ahead (its header fetched 4 steps before), so the reads below wait on memory less
        if k + _AHEAD < count:
            _prefetch(_item(outer, outer_is_list, k + _AHEAD))
        if k + _AHEAD // 2 < count:
            ahead = _item(outer, outer_is_list, k + _AHEAD // 2)
            _prefetch(ahead + _LIST_ITEMS)
            if _load_intp(ahead + _OB_TYPE) == kinds[0]:
                _prefetch(_load_intp(ahead + _LIST_ITEMS))
        item = _item(outer, outer_is_list, k)
        kind = _load_intp(item + _OB_TYPE)
        if kind == kinds[0] or kind == kinds[1]:
            length = _load_intp(item + _OB_SIZE)
        elif kind == kinds[2] and _load_int32(item + _ARRAY_NDIM) == 1:
            length = _load_intp(_load_intp(item + _ARRAY_DIMS))
        else:
            return values[:0], offsets, False
        start = offsets[k]
        offsets[k + 1] = start + length
        if offsets[k + 1] > values.size:  # grown by doubling: a fresh buffer's pages cost more than the copies
            grown = np.empty(max(2 * values.size, offsets[k + 1]))
            grown[:start] = values[:start]
            values = grown
        if kind != kinds[2]:
            for j in range(length):
                number = _item(item, kind == kinds[0], j)
                number_kind = _load_intp(number + _OB_TYPE)
                if number_kind == kinds[3]:
                    values[start + j] = _load_float64(number + _FLOAT_VALUE)
                    continue
                if number_kind != kinds[4] and number_kind != kinds[5]:
                    return values[:0], offsets, False
                small, value = _small_int(number, int_layout)
                if not small:
                    value = _call_double_of_pointer(as_double, number)
                    if value == -1.0 and _call_pointer(error_occurred) != 0:
                        _call_pointer(error_clear)  # e.g. an int beyond float64: the Python packer names it
                        return values[:0], offsets, False
                values[start + j] = value
            continue
        descr = _load_intp(item + _ARRAY_DESCR)
        data = _load_intp(item + _ARRAY_DATA)
        stride = _load_intp(_load_intp(item + _ARRAY_STRIDES))
        if descr == descrs[0]:
            for j in range(length):
                values[start + j] = _load_float64(data + j * stride)
        elif descr == descrs[1]:
            for j in range(length):
                values[start + j] = _load_float32(data + j * stride)
        elif descr == descrs[2]:
            for j in range(length):
                values[start + j] = _load_int64(data + j * stride)
        elif descr == descrs[3]:
            for j in range(length):
                values[start + j] = _load_int32(data + j * stride)
        else:
            return values[:0], offsets, False
    return values[: offsets[count]], offsets, True


def _function_address(name: str) -> int:
    import ctypes

    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


class _CompiledPacking:
    """The addresses :func:`_pack_objects` reads by, and whether it may be used here (checked once)."""

    kinds = np.array([id(list), id(tuple), id(np.ndarray), id(float), id(int), id(bool)], dtype=np.intp)
    descrs = np.array([id(dtype) for dtype in _ARRAY_KINDS], dtype=np.intp)
    int_layout = 1 if sys.version_info < (3, 12) else 2
    usable: bool | None = None
    functions: tuple[int, int, int] = (0, 0, 0)


def _compiled_packing_works() -> bool:
    """Whether this interpreter's objects are laid out as :func:`_pack_objects` reads them: a 64-bit
    CPython with the GIL, and samples of every item kind packed alike both ways. Checked once."""
    if _CompiledPacking.usable is None:
        _CompiledPacking.usable = False
        import sysconfig

        if sys.implementation.name == "cpython" and sys.maxsize == 2**63 - 1 and not sysconfig.get_config_var("Py_GIL_DISABLED"):
            try:
                _CompiledPacking.functions = tuple(_function_address(name) for name in ("PyFloat_AsDouble", "PyErr_Occurred", "PyErr_Clear"))
                samples = [[1, 2.5, True, False, -7, 0, 2**30 - 1, -(2**30) + 1, 2**30, -(2**31)], (3, 4), np.array([0.5, -1.0]),
                           np.arange(6, dtype=np.int32)[::-2], np.array([1.5, 2.0], dtype=np.float32), np.array([2**40, -3]),
                           [10**17 + 1, 0.1, -(10**30)]]
                fast = _pack_objects(id(samples), True, len(samples), _CompiledPacking.kinds, _CompiledPacking.descrs,
                                     _CompiledPacking.int_layout, *_CompiledPacking.functions, np.empty(4))
                plain = [np.asarray(sample).astype(np.float64) for sample in samples]
                _CompiledPacking.usable = bool(fast[2]) and np.array_equal(fast[0], np.concatenate(plain)) and np.array_equal(
                    fast[1], np.cumsum([0] + [len(sample) for sample in samples])
                )
            except Exception:  # any surprise here means: pack in Python, as before
                _CompiledPacking.usable = False
    return _CompiledPacking.usable


_SCRATCH_POINTS = 1 << 20
"""The most points (8 MiB) a thread keeps in each of its two scratch buffers between calls."""
_scratch = threading.local()


def _scratch_buffer(slot: str, size: int) -> np.ndarray:
    """This thread's reusable buffer ``slot`` (``"seqs_a"`` or ``"seqs_b"``), at least ``size`` points
    where that is at most :data:`_SCRATCH_POINTS`. Measured reason: a fresh buffer for 10,000 lists of
    3-15 ints (720 KB) is touched page by page, and those page faults took 0.35 of the 0.75 ms that
    packing both sides of such a batch took (load 3 on 2 cores); a buffer reused from the last call has
    its pages already."""
    buffers = _scratch.__dict__.setdefault("buffers", {})
    buffer = buffers.get(slot)
    if buffer is None or buffer.size < size:
        buffer = np.empty(max(size, 1024))
        if buffer.size <= _SCRATCH_POINTS:
            buffers[slot] = buffer
    return buffer


def _packed_compiled(values: Any, scratch: str | None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(flat values, offsets)`` of a list or tuple of sequences packed by :func:`_pack_objects`, or
    ``None`` where it cannot read them (then the Python packer does). Not yet validated. With ``scratch``
    the values lie in this thread's scratch buffer of that name, valid until the next call that uses it
    (batch_dtw and cdist_dtw, which are done with them before they return); else in an array of their own."""
    if type(values) not in (list, tuple) or not _compiled_packing_works():
        return None
    guess = 16 * len(values)
    out = _scratch_buffer(scratch, guess) if scratch is not None else np.empty(guess)
    flat, offsets, ok = _pack_objects(
        id(values), type(values) is list, len(values), _CompiledPacking.kinds, _CompiledPacking.descrs,
        _CompiledPacking.int_layout, *_CompiledPacking.functions, out,
    )
    if not ok:
        return None
    if scratch is None and flat.size < out.size:
        flat = flat.copy()  # not a view that keeps the whole guess alive
    return flat, offsets


_PACKED_FAST = frozenset({list, tuple, np.ndarray})
"""Item types :func:`_packed_list` packs in one pass; a batch holding any other goes item by item."""


def _packed_list(values: Sequence[Any], name: str, scratch: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A list of sequences packed with no Python code run per sequence: the lengths by one ``map(len)``,
    the values by one concatenation (arrays) or one ``fromiter`` (lists), well under a microsecond a
    sequence. A batch with items of other types, or that this pass cannot read as real numbers, is
    checked and converted item by item, so that a bad item is named."""
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    if not len(values):
        return np.zeros(0), offsets
    compiled = _packed_compiled(values, name if scratch else None)
    if compiled is not None:
        return _checked_layout(*compiled, name)
    flat = None
    types = set(map(type, values))
    if types <= _PACKED_FAST:
        try:
            np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)), out=offsets[1:])
            if np.ndarray in types:  # keeps a complex array complex, to be refused, where fromiter would cast it
                flat = np.concatenate(values)
            else:
                flat = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64, count=int(offsets[-1]))
        except (TypeError, ValueError, OverflowError):
            flat = None
    if flat is None or flat.ndim != 1 or flat.dtype.kind not in "biuf":
        sequences = _univariate(values, name)
        np.cumsum([sequence.size for sequence in sequences], out=offsets[1:])
        flat = np.concatenate(sequences)
    return _checked_layout(flat, offsets, name)


def _packed(values: Any, name: str, scratch: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(flat values, offsets)`` of a batch in any of its three forms (see the module doc), validated.
    ``scratch``: a list's values may lie in this thread's scratch buffer ``name`` (:func:`_packed_compiled`)."""
    if isinstance(values, PackedSequences):
        return _checked_layout(values.values, values.offsets, name)
    if isinstance(values, np.ndarray) and values.dtype != object:
        if values.ndim != 2:
            hint = ""
            if values.ndim == 1:
                hint = ": that is one sequence, pass [sequence] or call dtw()"
            elif values.ndim == 3 and values.shape[2] == 1:
                hint = ": for tslearn's (n, T, 1) layout pass array[..., 0]"
            raise ConfigError(
                f"{name} as an array must be 2-D, one equal-length sequence per row, got shape {values.shape}"
                f"{hint}; sequences of different lengths go in a list or PackedSequences."
            )
        offsets = np.arange(values.shape[0] + 1, dtype=np.int64) * values.shape[1]
        return _checked_layout(_real(values, name).ravel(), offsets, name)
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ConfigError(f"{name} must be a list of sequences, got {type(values).__name__}: {values!r:.80}.")
    return _packed_list(values, name, scratch)


def _padded(values: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sequences ``index`` (at least one) of a packed list as a zero-padded matrix, and their lengths."""
    lengths = (offsets[index + 1] - offsets[index]).astype(np.int64)
    width = int(lengths.max())
    columns = np.arange(width)
    valid = columns[None, :] < lengths[:, None]
    padded = np.zeros((index.size, width))
    padded[valid] = values[(offsets[index][:, None] + columns[None, :])[valid]]
    return padded, lengths


def _wavefront(a: Any, b: Any, lengths_a: Any, lengths_b: Any, squared: bool, xp: Any) -> Any:
    """DTW of a padded batch, one anti-diagonal of the cumulative matrix at a time; ``xp`` is numpy
    or torch (the same calls in both).

    Diagonal ``d`` of the (n+1) x (m+1) cumulative matrix is stored by row index ``i`` (column
    ``d - i``), so its three predecessors are plain slices of diagonals ``d-1`` and ``d-2``, and the
    reference points ``b[d - i - 1]`` a plain slice of ``b`` reversed. Padding is never read by a real cell."""
    count, n = a.shape
    m = b.shape[1]
    b_reversed = xp.flip(b, dims=(1,)) if xp.__name__ == "torch" else b[:, ::-1]
    inf = float("inf")
    diagonals = xp.full((n + m + 1, count, n + 1), inf, dtype=a.dtype)
    diagonals[0, :, 0] = 0.0
    for d in range(2, n + m + 1):
        low, high = max(1, d - m), min(n, d - 1)
        difference = a[:, low - 1 : high] - b_reversed[:, m - d + low : m - d + high + 1]
        local = difference * difference if squared else xp.abs(difference)
        before, last = diagonals[d - 2], diagonals[d - 1]
        best = xp.minimum(xp.minimum(before[:, low - 1 : high], last[:, low - 1 : high]), last[:, low : high + 1])
        diagonals[d, :, low : high + 1] = local + best
    return diagonals[lengths_a + lengths_b, xp.arange(count), lengths_a]


_CHUNK_CELLS = 1 << 24
"""Cells (float64: 128 MiB) of the padded cumulative matrices one chunk of the numpy / torch wavefront
keeps: ``count x (L + 1) x (2 L + 1)`` for its longest sequence ``L`` (a single longer pair still runs)."""


def _chunks(offsets_a: np.ndarray, offsets_b: np.ndarray, index_a: np.ndarray, index_b: np.ndarray, most: int = 4096) -> Any:
    """Positions of the pairs in chunks of at most ``most``, shortest pairs first, each chunk as large
    as keeps its padded cumulative matrices under :data:`_CHUNK_CELLS` (one pair at least): a long pair
    among thousands of short ones no longer pads them all to its length (hundreds of gigabytes)."""
    longest = np.maximum(offsets_a[index_a + 1] - offsets_a[index_a], offsets_b[index_b + 1] - offsets_b[index_b])
    order = np.argsort(longest, kind="stable")
    work = (longest[order] + 1) * (2 * longest[order] + 1)  # per pair, padded to the chunk's last (longest) pair
    start = 0
    while start < order.size:
        low, high = 1, min(most, order.size - start)  # the largest count whose work fits: it grows with count
        while low < high:
            middle = (low + high + 1) // 2
            if middle * int(work[start + middle - 1]) <= _CHUNK_CELLS:
                low = middle
            else:
                high = middle - 1
        yield order[start : start + low]
        start += low


def _batch_numpy(values_a, offsets_a, values_b, offsets_b, index_a, index_b, squared: bool) -> np.ndarray:
    out = np.empty(index_a.size)
    for chunk in _chunks(offsets_a, offsets_b, index_a, index_b):
        a, lengths_a = _padded(values_a, offsets_a, index_a[chunk])
        b, lengths_b = _padded(values_b, offsets_b, index_b[chunk])
        out[chunk] = _wavefront(a, b, lengths_a, lengths_b, squared, np)
    return out


def _batch_torch(values_a, offsets_a, values_b, offsets_b, index_a, index_b, squared: bool) -> np.ndarray:
    try:
        import torch
    except ImportError as exc:
        from dialogue_gym.errors import DependencyNotInstalled

        raise DependencyNotInstalled("torch", "llm", "batch_dtw(backend='torch')") from exc
    out = np.empty(index_a.size)
    for chunk in _chunks(offsets_a, offsets_b, index_a, index_b):
        a, lengths_a = _padded(values_a, offsets_a, index_a[chunk])
        b, lengths_b = _padded(values_b, offsets_b, index_b[chunk])
        tensors = (torch.from_numpy(x) for x in (a, b, lengths_a, lengths_b))
        out[chunk] = _wavefront(*tensors, squared, torch).numpy()
    return out


def _batch_tslearn(values_a, offsets_a, values_b, offsets_b, index_a, index_b, metric: str) -> np.ndarray:
    from tslearn.metrics import dtw_path_from_metric

    name = _TSLEARN_METRIC[metric]
    return np.array(
        [
            dtw_path_from_metric(values_a[offsets_a[i] : offsets_a[i + 1]], values_b[offsets_b[j] : offsets_b[j + 1]], metric=name)[1]
            for i, j in zip(index_a, index_b)
        ]
    )


def _check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ConfigError(f"backend={backend!r} is not supported; use one of {list(BACKENDS)}.")
    return backend


def _threads(n_jobs: Any) -> int:
    """The number of threads ``n_jobs`` asks for: -1 all that numba may start, else 1 to that many."""
    most = numba.config.NUMBA_NUM_THREADS
    if not isinstance(n_jobs, bool) and isinstance(n_jobs, (int, np.integer)):
        if n_jobs == -1:
            return most
        if 1 <= n_jobs <= most:
            return int(n_jobs)
    raise ConfigError(
        f"n_jobs={n_jobs!r} is not a thread count here; use -1 for all {most} threads numba may start "
        f"(NUMBA_NUM_THREADS) or a number from 1 to {most}."
    )


class _ThreadPool:
    """Whether this process may start numba's threads. GNU OpenMP (numba's ``omp`` threading layer)
    kills a forked child that starts a parallel region once its parent had ("fork() called from a
    process already using GNU OpenMP"), so a child forked after the pool started runs the serial kernel."""

    started = False
    inherited = False


def _after_fork_in_child() -> None:
    _ThreadPool.inherited = _ThreadPool.started


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_PARALLEL_REGION = threading.Lock()
"""Held while a parallel kernel runs: numba's ``workqueue`` threading layer aborts the process when two
Python threads run parallel regions at once (numba releases the GIL around them), so calls from
several threads take turns; one-thread calls do not wait."""


def _numba_costs(packed_a, packed_b, mode: int, squared: bool, threads: int, size: int) -> np.ndarray:
    out = np.empty(size)
    if not size:
        return out
    width = int(np.diff(packed_b[1]).max())
    if threads == 1 or size <= _BLOCK or _ThreadPool.inherited:
        return _costs_range(*packed_a, *packed_b, mode, squared, width, out, 0, size)
    with _PARALLEL_REGION:
        _ThreadPool.started = True
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            # Blocks handed out one at a time as threads free up, not split evenly in advance: on shared
            # cores one thread can run at half speed.
            with numba.parallel_chunksize(1):
                return _costs_parallel(*packed_a, *packed_b, mode, squared, width, out)
        finally:
            numba.set_num_threads(previous)


def _costs(packed_a, packed_b, mode: int, metric: str, backend: str, threads: int) -> np.ndarray:
    """Flat costs of the pairs ``mode`` names: ``len(a)`` of them, or a row-major ``len(a) x len(b)`` matrix."""
    count_a, count_b = packed_a[1].size - 1, packed_b[1].size - 1
    squared = metric == "sqeuclidean"
    if backend == "numba":
        return _numba_costs(packed_a, packed_b, mode, squared, threads, count_a if mode == _PAIRED else count_a * count_b)
    if mode == _PAIRED:
        index_a = index_b = np.arange(count_a, dtype=np.int64)
    elif mode == _CROSS:
        index_a, index_b = (index.ravel() for index in np.meshgrid(np.arange(count_a), np.arange(count_b), indexing="ij"))
    else:
        index_a, index_b = np.triu_indices(count_a, k=1)
    if backend == "numpy":
        costs = _batch_numpy(*packed_a, *packed_b, index_a, index_b, squared)
    elif backend == "torch":
        costs = _batch_torch(*packed_a, *packed_b, index_a, index_b, squared)
    else:
        costs = _batch_tslearn(*packed_a, *packed_b, index_a, index_b, metric)
    if mode != _SELF:
        return costs
    matrix = np.zeros((count_a, count_a))
    matrix[index_a, index_b] = costs
    matrix[index_b, index_a] = costs
    return matrix.ravel()


def batch_dtw(seqs_a: Any, seqs_b: Any, metric: str = "abs", backend: str = "numba", *, n_jobs: int = -1) -> np.ndarray:
    """DTW costs of the pairs ``(seqs_a[k], seqs_b[k])`` of univariate, variable-length sequences.

    ``seqs_a`` and ``seqs_b`` are lists of sequences, 2-D arrays (one sequence per row) or
    :class:`PackedSequences`. Returns a float64 array of ``len(seqs_a)`` costs, each equal to :func:`dtw`
    of its pair (and so to tslearn's) on every backend. ``n_jobs`` threads run the numba backend (-1:
    all numba may start; batches of up to a few hundred pairs run on one, where starting threads costs
    more than it saves); the other backends run as they are, ``n_jobs`` checked but unused. On cores
    that other busy processes share, GNU OpenMP (numba's ``omp`` threading layer) waits for descheduled
    threads at the end of each call and can run slower than one thread: pass ``n_jobs=1`` there, or set
    ``OMP_WAIT_POLICY=passive`` (or ``NUMBA_THREADING_LAYER=workqueue``) before the first call."""
    _check_metric(metric, BATCH_METRICS)
    _check_backend(backend)
    threads = _threads(n_jobs)
    packed_a, packed_b = _packed(seqs_a, "seqs_a", scratch=True), _packed(seqs_b, "seqs_b", scratch=True)
    if packed_a[1].size != packed_b[1].size:
        raise ConfigError(
            f"batch_dtw pairs seqs_a[k] with seqs_b[k]; got {packed_a[1].size - 1} and {packed_b[1].size - 1} sequences."
        )
    return _costs(packed_a, packed_b, _PAIRED, metric, backend, threads)


def cdist_dtw(seqs_a: Any, seqs_b: Any = None, metric: str = "abs", backend: str = "numba", *, n_jobs: int = -1) -> np.ndarray:
    """Matrix of DTW costs between every sequence of ``seqs_a`` and every one of ``seqs_b``
    (``seqs_b=None``: ``seqs_a`` against itself, symmetric with a zero diagonal, each pair computed once).
    Inputs and ``n_jobs`` as in :func:`batch_dtw`."""
    _check_metric(metric, BATCH_METRICS)
    _check_backend(backend)
    threads = _threads(n_jobs)
    packed_a = _packed(seqs_a, "seqs_a", scratch=True)
    packed_b = packed_a if seqs_b is None else _packed(seqs_b, "seqs_b", scratch=True)
    shape = (packed_a[1].size - 1, packed_b[1].size - 1)
    return _costs(packed_a, packed_b, _SELF if seqs_b is None else _CROSS, metric, backend, threads).reshape(shape)


# -- TRACER's per-turn deviations ------------------------------------------------------------------
@dataclass(frozen=True)
class Alignment:
    """The optimal DTW alignment of a simulated intent sequence to its reference.

    ``path`` holds ``(t, s)`` pairs (simulated turn, reference turn), ``cost`` is D_i, and
    ``deviations`` is d_t: for each simulated turn, the mean local cost to the reference turns the
    path aligns to it."""

    path: tuple[tuple[int, int], ...]
    cost: float
    deviations: tuple[float, ...]

    def suffix(self, rho: float) -> np.ndarray:
        """c_t = sum_k rho^k d_{t+k}: see :func:`discounted_suffix`."""
        return discounted_suffix(self.deviations, rho)

    def to_dict(self) -> dict[str, Any]:
        return {"path": [list(p) for p in self.path], "cost": self.cost, "deviations": list(self.deviations)}


def _deviations(cost: np.ndarray, path: np.ndarray) -> np.ndarray:
    rows = path[:, 0]
    totals = np.bincount(rows, weights=cost[rows, path[:, 1]], minlength=cost.shape[0])
    return totals / np.bincount(rows, minlength=cost.shape[0])


def _warping_path(path: Any, shape: tuple[int, int]) -> np.ndarray:
    """``path`` as a ``(k, 2)`` int64 array, checked to be a warping path of a ``shape`` cost matrix:
    integer ``(i, j)`` pairs from ``(0, 0)`` to ``(n - 1, m - 1)``, each step ``(1, 0)``, ``(0, 1)`` or
    ``(1, 1)`` (so every simulated turn is on it)."""
    fix = "pass the path dtw_path() returns"
    try:
        array = np.asarray(path)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"path must be a sequence of (i, j) index pairs, got {path!r:.80}; {fix}.") from exc
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] != 2 or array.dtype.kind not in "iu":
        raise ConfigError(
            f"path must be a non-empty sequence of (i, j) integer pairs, got dtype {array.dtype} and shape {array.shape}; {fix}."
        )
    array = array.astype(np.int64)
    n, m = shape
    if tuple(array[0]) != (0, 0) or tuple(array[-1]) != (n - 1, m - 1):
        raise ConfigError(
            f"path must run from (0, 0) to (len(simulated) - 1, len(reference) - 1) = {(n - 1, m - 1)}, got "
            f"{tuple(array[0].tolist())} to {tuple(array[-1].tolist())}; {fix}."
        )
    steps = np.diff(array, axis=0)
    bad = np.flatnonzero((steps < 0).any(axis=1) | (steps > 1).any(axis=1) | (steps == 0).all(axis=1))
    if bad.size:
        k = int(bad[0])
        raise ConfigError(
            f"path steps from {tuple(array[k].tolist())} to {tuple(array[k + 1].tolist())}; a warping path moves by "
            f"(1, 0), (0, 1) or (1, 1); {fix}."
        )
    return array


def turn_deviations(simulated: Any, reference: Any, path: Any, metric: str = "abs") -> np.ndarray:
    """d_t = mean over the reference turns ``s`` with ``(t, s)`` on ``path`` of the local cost between
    simulated turn ``t`` and reference turn ``s`` (SPEC section 2). ``path`` must be a warping path
    (see :func:`dtw_path`), so every simulated turn is on it."""
    cost = local_cost_matrix(simulated, reference, metric)
    return _deviations(cost, _warping_path(path, cost.shape))


def discounted_suffix(deviations: Any, rho: float) -> np.ndarray:
    """c_t = sum_{k>=0} rho^k d_{t+k}, the discounted deviation of turn ``t`` and those after it.
    ``rho=0`` gives d_t itself."""
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0.0 <= rho <= 1.0:
        raise ConfigError(f"rho must be a number in [0, 1], got {rho!r}.")
    if type(deviations) is tuple and all(type(value) is float and math.isfinite(value) for value in deviations):
        # An Alignment's own deviations (a tuple of finite floats): the same additions in Python floats,
        # which are float64, so the same bits, at 3 us instead of 18 us for TRACER's ~8 turns, where
        # converting, checking and indexing NumPy scalars was all the cost (tested equal in test_dtw.py).
        running = 0.0
        values = [0.0] * len(deviations)
        for t in range(len(deviations) - 1, -1, -1):
            running = deviations[t] + rho * running
            values[t] = running
        return np.array(values, dtype=np.float64)
    d = _real(deviations, "deviations")
    if d.ndim != 1:
        raise ConfigError(f"deviations must be a 1-D sequence, got shape {d.shape}.")
    if not np.all(np.isfinite(d)):
        # An infinite deviation (local costs that overflow float64) would make rho * inf NaN at rho = 0.
        raise ConfigError(f"deviations must be finite, got {deviations!r:.80}; rescale sequences whose local costs overflow float64.")
    suffix = np.zeros_like(d)
    running = 0.0
    for t in range(d.size - 1, -1, -1):
        running = d[t] + rho * running
        suffix[t] = running
    return suffix


@numba.njit(cache=True, nogil=True)
def _align_cost(cost: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:  # pragma: no cover - compiled
    """``(path, D, d_t)`` of a local-cost matrix in one compiled call: :func:`_accumulate`,
    :func:`_trace_path`, then :func:`_deviations`' sums taken in path order, as ``np.bincount`` takes
    them (the same additions, so the same bits); a DTW path visits every row."""
    accumulated = _accumulate(cost)
    path = _trace_path(accumulated)
    totals = np.zeros(cost.shape[0])
    counts = np.zeros(cost.shape[0], dtype=np.int64)
    for k in range(path.shape[0]):
        row = path[k, 0]
        totals[row] += cost[row, path[k, 1]]
        counts[row] += 1
    return path, accumulated[-1, -1], totals / counts


_EXACT_INT = 2**53
"""Integers up to this magnitude are float64 values exactly (however NumPy converts them)."""


def _exact_ints(value: Any) -> bool:
    """Whether ``value`` is a non-empty tuple or list of Python ints (not bools) that float64 holds exactly."""
    return (
        type(value) in (tuple, list) and len(value) > 0
        and all(type(item) is int and -_EXACT_INT <= item <= _EXACT_INT for item in value)
    )


def align(simulated: Any, reference: Any, metric: str = "abs") -> Alignment:
    """Optimal path, cost D and per-turn deviations d_t of ``simulated`` against ``reference``."""
    if metric == "abs" and _exact_ints(simulated) and _exact_ints(reference):
        # TRACER's intent levels: the local costs as local_cost_matrix takes them (the same float64
        # values, the same subtraction), without its checks, which cannot fail on such ints and were
        # 26 of align's 40 us on 8 x 9 levels (tested equal in test_dtw.py).
        local = np.abs(np.array(simulated, dtype=np.float64)[:, None] - np.array(reference, dtype=np.float64)[None, :])
    else:
        local = np.ascontiguousarray(local_cost_matrix(simulated, reference, metric))
    path, cost, deviations = _align_cost(local)
    return Alignment(tuple(map(tuple, path.tolist())), float(cost), tuple(deviations.tolist()))


__all__ = [
    "Alignment",
    "BACKENDS",
    "METRICS",
    "PackedSequences",
    "align",
    "batch_dtw",
    "cdist_dtw",
    "discounted_suffix",
    "dtw",
    "dtw_path",
    "dtw_path_from_cost",
    "local_cost_matrix",
    "pack_sequences",
    "turn_deviations",
]
