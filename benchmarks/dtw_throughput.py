"""DTW throughput of dialogue_gym.metrics.dtw against tslearn, with dtaidistance as a peer.

    python benchmarks/dtw_throughput.py [--pairs 10000] [--repeats 25]

Intent trajectories: lengths 3-15, integer values 0-5 (TRACER's). Two tables, every row timed end to
end from its input (packing and checks included), best of ``--repeats`` runs after a warm-up call
(tslearn, the reference, runs once), and compared with tslearn bit for bit:

1. ``batch_dtw``: ``--pairs`` pairs ``(a[k], b[k])``, local cost ``|a - b|``; reference: tslearn's
   ``dtw_path_from_metric(a, b, metric="cityblock")`` once per pair, as code that needs TRACER's cost
   would call it. The numba rows take the same pairs as Python lists, as a list of 1-D NumPy arrays and
   as :class:`PackedSequences` built from NumPy ``(values, offsets)`` arrays.
2. ``cdist_dtw``: every pair ``i < j`` of ``N`` sequences (``N (N - 1) / 2`` close to ``--pairs``),
   reported as ``sqrt`` of the ``"sqeuclidean"`` cost so that it equals tslearn's ``cdist_dtw``;
   dtaidistance's C ``distance_matrix_fast`` (same definition) runs beside it when installed
   (``pip install dtaidistance``; it is not a dependency of dialogue_gym).

Targets: the numba kernel on one thread >= 5,000,000 pairs/s end to end from NumPy input
(``PackedSequences``); on all threads >= 1.8x that; from Python lists and from lists of NumPy arrays
>= 0.5 of the packed rate at the same thread count (issue 45: packing happens in compiled code);
every row equal to tslearn. Torch and BLAS are
pinned to one thread, numba's threads are set per row (``n_jobs``), and the machine's load
(``os.getloadavg``) is printed before and after: on shared cores, rerun when the load is low. With
more runnable processes than cores, GNU OpenMP's default wait policy (numba's ``omp`` layer, and
dtaidistance's parallel rows) makes each threaded call wait for a descheduled thread; the printed
``OMP_WAIT_POLICY`` says which policy a run had.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time
from typing import Callable, Iterator

import numba
import numpy as np

from dialogue_gym.metrics.dtw import PackedSequences, batch_dtw, cdist_dtw

TARGET_ONE_THREAD = 5_000_000
TARGET_SPEEDUP = 1.8


TARGET_END_TO_END = 0.5
"""batch_dtw from Python lists and from lists of NumPy arrays: at least this share of its packed-input rate."""


def make_sequences(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 6, size=n).astype(np.float64) for n in rng.integers(3, 16, size=count)]


def packed_arrays(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The ``(values, offsets)`` arrays a caller holding its data in NumPy would pass."""
    return np.concatenate(seqs), np.concatenate([[0], np.cumsum([len(s) for s in seqs])])


def best_seconds(run: Callable[[], np.ndarray], repeats: int, warm_up: Callable[[], object] | None = None) -> tuple[np.ndarray, float]:
    """The result and the best wall time of ``repeats`` runs, after a warm-up call (compiles, imports):
    ``warm_up``, or ``run`` itself."""
    result = (warm_up or run)()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return result, best


@contextlib.contextmanager
def pinned_threads() -> Iterator[list[str]]:
    """One thread for BLAS and torch while the tables run (restored after); yields what was set, to print."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        settings = [f"BLAS {info['internal_api']} {info['num_threads']}" for info in threadpool_info() if info["user_api"] == "blas"]
        try:
            import torch
        except ImportError:
            yield [*settings, "torch not installed"]
            return
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield [*settings, f"torch {torch.get_num_threads()}"]
        finally:
            torch.set_num_threads(before)


def paired_rows(count: int, repeats: int, threads: int) -> list[dict]:
    a, b = make_sequences(count, 0), make_sequences(count, 1)
    lists_a, lists_b = [s.tolist() for s in a], [s.tolist() for s in b]
    (values_a, offsets_a), (values_b, offsets_b) = packed_arrays(a), packed_arrays(b)
    reference, reference_seconds = best_seconds(
        lambda: batch_dtw(a, b, backend="tslearn"), 1, warm_up=lambda: batch_dtw(a[:8], b[:8], backend="tslearn")
    )
    runs = [
        ("tslearn dtw_path_from_metric, per pair", 1, None),
        ("batch_dtw numpy wavefront", 1, lambda: batch_dtw(a, b, backend="numpy")),
        ("batch_dtw torch wavefront", 1, lambda: batch_dtw(a, b, backend="torch")),
    ]
    for n_jobs in sorted({1, threads}):
        runs += [
            ("batch_dtw numba, Python lists", n_jobs, lambda n=n_jobs: batch_dtw(lists_a, lists_b, n_jobs=n)),
            ("batch_dtw numba, list of NumPy arrays", n_jobs, lambda n=n_jobs: batch_dtw(a, b, n_jobs=n)),
            (
                "batch_dtw numba, PackedSequences",
                n_jobs,
                lambda n=n_jobs: batch_dtw(PackedSequences(values_a, offsets_a), PackedSequences(values_b, offsets_b), n_jobs=n),
            ),
        ]
    try:
        from dtaidistance import dtw as dtaidistance

        runs.append((
            "dtaidistance distance_fast, per pair",
            1,
            lambda: np.array([dtaidistance.distance_fast(x, y, inner_dist="euclidean", use_pruning=False) for x, y in zip(a, b)]),
        ))
    except ImportError:
        pass
    rows = [{"path": runs[0][0], "threads": 1, "seconds": reference_seconds, "equal": True}]
    for path, n_jobs, run in runs[1:]:
        costs, seconds = best_seconds(run, repeats)
        rows.append({"path": path, "threads": n_jobs, "seconds": seconds, "equal": bool(np.array_equal(costs, reference))})
    for row in rows:
        row.update(pairs=count, rate=count / row["seconds"], ratio=reference_seconds / row["seconds"])
    return rows


def matrix_rows(count: int, repeats: int, threads: int) -> list[dict]:
    from tslearn.metrics import cdist_dtw as tslearn_cdist_dtw

    size = round((1 + math.sqrt(1 + 8 * count)) / 2)
    seqs = make_sequences(size, 2)
    upper = np.triu_indices(size, k=1)
    reference, reference_seconds = best_seconds(lambda: tslearn_cdist_dtw(seqs), 1, warm_up=lambda: tslearn_cdist_dtw(seqs[:4]))
    runs = [(f"cdist_dtw numba, n_jobs={n}", n, lambda n=n: np.sqrt(cdist_dtw(seqs, metric="sqeuclidean", n_jobs=n))) for n in sorted({1, threads})]
    try:
        from dtaidistance import dtw as dtaidistance

        runs += [
            ("dtaidistance distance_matrix_fast", 1, lambda: dtaidistance.distance_matrix_fast(seqs, parallel=False)),
            ("dtaidistance distance_matrix_fast, parallel", threads, lambda: dtaidistance.distance_matrix_fast(seqs, parallel=True)),
        ]
    except ImportError:
        pass
    rows = [{"path": "tslearn cdist_dtw", "threads": 1, "seconds": reference_seconds, "equal": True}]
    for path, n_jobs, run in runs:
        matrix, seconds = best_seconds(run, repeats)
        rows.append({"path": path, "threads": n_jobs, "seconds": seconds, "equal": bool(np.array_equal(matrix[upper], reference[upper]))})
    for row in rows:
        row.update(pairs=upper[0].size, rate=upper[0].size / row["seconds"], ratio=reference_seconds / row["seconds"])
    return rows


def threading_layer() -> str:
    try:
        return f"{numba.threading_layer()} layer"
    except ValueError:  # numba names its layer once a parallel region has run; with one thread none has
        return "no parallel region run"


def print_table(title: str, rows: list[dict]) -> None:
    print(f"\n{title}\n{'path':46s} {'threads':>7s} {'seconds':>9s} {'pairs/s':>12s} {'vs tslearn':>10s} {'== tslearn':>10s}")
    for row in rows:
        print(
            f"{row['path']:46s} {row['threads']:7d} {row['seconds']:9.5f} {row['rate']:12,.0f} {row['ratio']:10.1f} {str(row['equal']):>10s}"
        )


def main(argv: list[str] | None = None) -> dict[str, list[dict]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=25)
    args = parser.parse_args(argv)
    threads = numba.config.NUMBA_NUM_THREADS
    with pinned_threads() as settings:
        load_before = os.getloadavg()
        tables = {"batch_dtw": paired_rows(args.pairs, args.repeats, threads), "cdist_dtw": matrix_rows(args.pairs, args.repeats, threads)}
        load_after = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs; load average (1, 5, 15 min) {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} before, "
        f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} after\n"
        f"threads: {', '.join(settings)}, numba up to {threads} ({threading_layer()}, "
        f"OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', 'unset')}) as each row says"
    )
    print_table(f"batch_dtw: {args.pairs:,} pairs (a[k], b[k]), lengths 3-15, values 0-5, cost |a - b|", tables["batch_dtw"])
    print_table(f"cdist_dtw: {tables['cdist_dtw'][0]['pairs']:,} pairs i < j, sqrt of the squared cost", tables["cdist_dtw"])

    packed = {row["threads"]: row["rate"] for row in tables["batch_dtw"] if row["path"] == "batch_dtw numba, PackedSequences"}
    speedup = packed[threads] / packed[1]
    print(
        f"\nnumba, one thread, from NumPy input (PackedSequences): {packed[1]:,.0f} pairs/s "
        f"({'meets' if packed[1] >= TARGET_ONE_THREAD else 'misses'} {TARGET_ONE_THREAD:,})\n"
        f"numba, {threads} threads: {packed[threads]:,.0f} pairs/s, {speedup:.2f}x one thread "
        f"({'meets' if speedup >= TARGET_SPEEDUP else 'misses'} {TARGET_SPEEDUP}x)"
    )
    for n_jobs in sorted(packed):
        rates = {row["path"]: row["rate"] for row in tables["batch_dtw"] if row["threads"] == n_jobs}
        shares = [(form, rates[f"batch_dtw numba, {form}"] / packed[n_jobs]) for form in ("Python lists", "list of NumPy arrays")]
        print(f"numba, {n_jobs} thread{'s' if n_jobs > 1 else ''}, end to end: " + ", ".join(
            f"from {form} {share:.2f} of the packed rate" for form, share in shares
        ) + f" ({'meets' if min(share for _, share in shares) >= TARGET_END_TO_END else 'misses'} {TARGET_END_TO_END})")
    if not all(row["equal"] for rows in tables.values() for row in rows):
        raise SystemExit("a row disagrees with tslearn")
    return tables


if __name__ == "__main__":
    main()
