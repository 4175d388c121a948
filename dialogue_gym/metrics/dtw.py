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
* ``metric="cosine"`` (multivariate points, e.g. reply embeddings): ``1 - cos(a_i, b_j)``, with a
  zero vector at distance 0 from another zero vector and 1 from anything else.

The recurrence is tslearn's, ``D(i, j) = C(i, j) + min(D(i-1, j-1), D(i-1, j), D(i, j-1))``, and the
path is traced back from the end preferring the diagonal, then ``(i-1, j)``, then ``(i, j-1)`` on ties,
so paths equal tslearn's too.

Batches of univariate sequences (intent trajectories) run on one of four backends:
``"numba"`` (a compiled kernel, the default: numba is already a dependency of tslearn), ``"numpy"``
(a vectorised anti-diagonal wavefront over the whole batch), ``"torch"`` (the same wavefront in torch)
and ``"tslearn"`` (one ``dtw_path_from_metric`` call per pair, the reference).
``python benchmarks/dtw_throughput.py`` measures them side by side.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import numba
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


def _sequence(value: Any, name: str) -> np.ndarray:
    """A non-empty finite float64 array of shape (T,) or (T, d)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a sequence of numbers (or of equal-length vectors), got {value!r:.80}.") from exc
    if array.ndim not in (1, 2) or array.shape[0] == 0:
        raise ConfigError(
            f"{name} must be a non-empty 1-D sequence (T,) or a 2-D array (T, d), got shape {array.shape}: {value!r:.80}."
        )
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
    """The ``(len(a), len(b))`` matrix of local costs between points of ``a`` and ``b``."""
    a, b = _pair(a, b, metric)
    if a.ndim == 1:
        difference = a[:, None] - b[None, :]
        return np.abs(difference) if metric == "abs" else difference * difference
    if metric == "cosine":
        norm_a = np.linalg.norm(a, axis=1)
        norm_b = np.linalg.norm(b, axis=1)
        unit_a = a / np.where(norm_a > 0, norm_a, 1.0)[:, None]
        unit_b = b / np.where(norm_b > 0, norm_b, 1.0)[:, None]
        cost = 1.0 - np.clip(unit_a @ unit_b.T, -1.0, 1.0)
        zero_a, zero_b = norm_a == 0, norm_b == 0
        cost[zero_a[:, None] | zero_b[None, :]] = 1.0
        cost[zero_a[:, None] & zero_b[None, :]] = 0.0
        return cost
    difference = a[:, None, :] - b[None, :, :]
    if metric == "abs":
        return np.abs(difference).sum(axis=2)
    return (difference * difference).sum(axis=2)


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


@numba.njit(cache=True, nogil=True)
def _batch_kernel(values_a, offsets_a, values_b, offsets_b, index_a, index_b, squared, out):  # pragma: no cover
    """DTW cost of the pairs ``(index_a[k], index_b[k])`` of flat-packed 1-D sequences, one rolling row.

    Same recurrence and operation order as :func:`_accumulate` (local + min of three), so equal to it."""
    row = np.empty(64)
    for k in range(index_a.shape[0]):
        a0, a1 = offsets_a[index_a[k]], offsets_a[index_a[k] + 1]
        b0, b1 = offsets_b[index_b[k]], offsets_b[index_b[k] + 1]
        m = b1 - b0
        if row.shape[0] < m:
            row = np.empty(m)
        for i in range(a1 - a0):
            x = values_a[a0 + i]
            diagonal = 0.0 if i == 0 else np.inf
            left = np.inf
            for j in range(m):
                difference = x - values_b[b0 + j]
                local = difference * difference if squared else abs(difference)
                up = row[j] if i > 0 else np.inf
                value = local + min(up, left, diagonal)
                diagonal = up
                row[j] = value
                left = value
        out[k] = row[m - 1]
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
    matrix = np.asarray(cost, dtype=np.float64)
    if matrix.ndim != 2 or 0 in matrix.shape or not np.all(np.isfinite(matrix)):
        raise ConfigError(f"cost must be a non-empty finite 2-D matrix, got shape {matrix.shape}.")
    accumulated = _accumulate(np.ascontiguousarray(matrix))
    return [(int(i), int(j)) for i, j in _trace_path(accumulated)], float(accumulated[-1, -1])


# -- batches of univariate sequences ------------------------------------------------------------
def _check_sequences(values: Any, name: str) -> None:
    """Validate item by item, raising the precise error (the slow path of :func:`_packed`)."""
    for position, value in enumerate(values):
        sequence = _sequence(value, f"{name}[{position}]")
        if sequence.ndim != 1:
            raise ConfigError(
                f"{name}[{position}] has shape {sequence.shape}; batch_dtw / cdist_dtw take univariate sequences. "
                "Use dtw() for multivariate ones."
            )


def _packed(values: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(flat values, offsets)`` of a list of univariate sequences, validated: sequence ``k`` is
    ``flat[offsets[k]:offsets[k + 1]]``. One concatenation, so packing costs well under a microsecond a sequence."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ConfigError(f"{name} must be a list of sequences, got {type(values).__name__}: {values!r:.80}.")
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    if not len(values):
        return np.zeros(0), offsets
    try:
        np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)), out=offsets[1:])
        if isinstance(values[0], np.ndarray):
            flat = np.concatenate(values).astype(np.float64, copy=False)
        else:
            flat = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64, count=int(offsets[-1]))
    except (TypeError, ValueError):
        flat = None
    lengths = np.diff(offsets)
    if flat is None or flat.ndim != 1 or flat.size != offsets[-1] or not lengths.all() or not np.isfinite(flat).all():
        _check_sequences(values, name)
        raise ConfigError(f"{name} must be a list of non-empty univariate numeric sequences, got {values!r:.80}.")
    return flat, offsets


def _padded(values: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sequences ``index`` of a packed list as a zero-padded matrix, and their lengths."""
    lengths = (offsets[index + 1] - offsets[index]).astype(np.int64)
    width = int(lengths.max()) if lengths.size else 0
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


def _batch_numpy(values_a, offsets_a, values_b, offsets_b, index_a, index_b, squared: bool, chunk: int = 4096) -> np.ndarray:
    out = np.empty(index_a.size)
    for start in range(0, index_a.size, chunk):
        a, lengths_a = _padded(values_a, offsets_a, index_a[start : start + chunk])
        b, lengths_b = _padded(values_b, offsets_b, index_b[start : start + chunk])
        out[start : start + a.shape[0]] = _wavefront(a, b, lengths_a, lengths_b, squared, np)
    return out


def _batch_torch(values_a, offsets_a, values_b, offsets_b, index_a, index_b, squared: bool, chunk: int = 4096) -> np.ndarray:
    try:
        import torch
    except ImportError as exc:
        from dialogue_gym.errors import DependencyNotInstalled

        raise DependencyNotInstalled("torch", "llm", "batch_dtw(backend='torch')") from exc
    out = np.empty(index_a.size)
    for start in range(0, index_a.size, chunk):
        a, lengths_a = _padded(values_a, offsets_a, index_a[start : start + chunk])
        b, lengths_b = _padded(values_b, offsets_b, index_b[start : start + chunk])
        tensors = (torch.from_numpy(x) for x in (a, b, lengths_a, lengths_b))
        out[start : start + a.shape[0]] = _wavefront(*tensors, squared, torch).numpy()
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


def _batch(packed_a, packed_b, index_a, index_b, metric: str, backend: str) -> np.ndarray:
    squared = metric == "sqeuclidean"
    index_a, index_b = index_a.astype(np.int64, copy=False), index_b.astype(np.int64, copy=False)
    if backend == "numba":
        return _batch_kernel(*packed_a, *packed_b, index_a, index_b, squared, np.empty(index_a.size))
    if backend == "numpy":
        return _batch_numpy(*packed_a, *packed_b, index_a, index_b, squared)
    if backend == "torch":
        return _batch_torch(*packed_a, *packed_b, index_a, index_b, squared)
    return _batch_tslearn(*packed_a, *packed_b, index_a, index_b, metric)


def batch_dtw(seqs_a: Any, seqs_b: Any, metric: str = "abs", backend: str = "numba") -> np.ndarray:
    """DTW costs of the pairs ``(seqs_a[k], seqs_b[k])`` of univariate, variable-length sequences.

    Returns a float64 array of ``len(seqs_a)`` costs, each equal to :func:`dtw` of its pair (and so to
    tslearn's) on every backend."""
    _check_metric(metric, BATCH_METRICS)
    _check_backend(backend)
    packed_a, packed_b = _packed(seqs_a, "seqs_a"), _packed(seqs_b, "seqs_b")
    if len(seqs_a) != len(seqs_b):
        raise ConfigError(f"batch_dtw pairs seqs_a[k] with seqs_b[k]; got {len(seqs_a)} and {len(seqs_b)} sequences.")
    index = np.arange(len(seqs_a), dtype=np.int64)
    return _batch(packed_a, packed_b, index, index, metric, backend)


def cdist_dtw(seqs_a: Any, seqs_b: Any = None, metric: str = "abs", backend: str = "numba") -> np.ndarray:
    """Matrix of DTW costs between every sequence of ``seqs_a`` and every one of ``seqs_b``
    (``seqs_b=None``: ``seqs_a`` against itself, symmetric with a zero diagonal, each pair computed once)."""
    _check_metric(metric, BATCH_METRICS)
    _check_backend(backend)
    packed_a = _packed(seqs_a, "seqs_a")
    if seqs_b is None:
        rows, columns = np.triu_indices(len(seqs_a), k=1)
        matrix = np.zeros((len(seqs_a), len(seqs_a)))
        costs = _batch(packed_a, packed_a, rows, columns, metric, backend)
        matrix[rows, columns] = costs
        matrix[columns, rows] = costs
        return matrix
    packed_b = _packed(seqs_b, "seqs_b")
    rows, columns = np.meshgrid(np.arange(len(seqs_a)), np.arange(len(seqs_b)), indexing="ij")
    return _batch(packed_a, packed_b, rows.ravel(), columns.ravel(), metric, backend).reshape(len(seqs_a), len(seqs_b))


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
    counts = np.bincount(rows, minlength=cost.shape[0])
    if np.any(counts == 0):
        raise ConfigError(f"path does not visit every simulated turn (visited {np.flatnonzero(counts).tolist()}); pass a DTW path.")
    return totals / counts


def turn_deviations(simulated: Any, reference: Any, path: Sequence[tuple[int, int]], metric: str = "abs") -> np.ndarray:
    """d_t = mean over the reference turns ``s`` with ``(t, s)`` on ``path`` of the local cost between
    simulated turn ``t`` and reference turn ``s`` (SPEC section 2). Every simulated turn is on a DTW path."""
    return _deviations(local_cost_matrix(simulated, reference, metric), np.asarray(path, dtype=np.int64).reshape(-1, 2))


def discounted_suffix(deviations: Any, rho: float) -> np.ndarray:
    """c_t = sum_{k>=0} rho^k d_{t+k}, the discounted deviation of turn ``t`` and those after it.
    ``rho=0`` gives d_t itself."""
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0.0 <= rho <= 1.0:
        raise ConfigError(f"rho must be a number in [0, 1], got {rho!r}.")
    d = np.asarray(deviations, dtype=np.float64)
    if d.ndim != 1:
        raise ConfigError(f"deviations must be a 1-D sequence, got shape {d.shape}.")
    suffix = np.zeros_like(d)
    running = 0.0
    for t in range(d.size - 1, -1, -1):
        running = d[t] + rho * running
        suffix[t] = running
    return suffix


def align(simulated: Any, reference: Any, metric: str = "abs") -> Alignment:
    """Optimal path, cost D and per-turn deviations d_t of ``simulated`` against ``reference``."""
    cost = np.ascontiguousarray(local_cost_matrix(simulated, reference, metric))
    accumulated = _accumulate(cost)
    path = _trace_path(accumulated)
    deviations = _deviations(cost, path)
    return Alignment(tuple(map(tuple, path.tolist())), float(accumulated[-1, -1]), tuple(deviations.tolist()))


__all__ = [
    "Alignment",
    "BACKENDS",
    "METRICS",
    "align",
    "batch_dtw",
    "cdist_dtw",
    "discounted_suffix",
    "dtw",
    "dtw_path",
    "dtw_path_from_cost",
    "local_cost_matrix",
    "turn_deviations",
]
