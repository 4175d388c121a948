"""DTW throughput of dialogue_gym.metrics.batch_dtw's backends against tslearn, on one core.

    python benchmarks/dtw_throughput.py [--pairs 10000] [--repeats 3]

Pairs of intent trajectories: lengths 3-15, integer values 0-5 (TRACER's), local cost |a - b|.
Every backend runs on the same pairs in one run, side by side, and must equal tslearn's
``dtw_path_from_metric(a, b, metric="cityblock")`` cost exactly. The reference row calls tslearn once
per pair, as code that needs TRACER's cost (and path) would. Target: the fastest backend >= 200x
that reference; a compiled kernel should pass 1,000,000 pairs/s per core.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dialogue_gym.metrics.dtw import batch_dtw

TARGET_RATIO = 200
TARGET_PAIRS_PER_SECOND = 1_000_000


def make_pairs(count: int, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 16, size=(2, count))
    a = [rng.integers(0, 6, size=n).astype(np.float64) for n in lengths[0]]
    b = [rng.integers(0, 6, size=n).astype(np.float64) for n in lengths[1]]
    return a, b


def timed(backend: str, a: list, b: list, repeats: int) -> tuple[np.ndarray, float]:
    """Best wall time of ``repeats`` runs (after one warm-up call that also compiles / imports)."""
    batch_dtw(a[:8], b[:8], backend=backend)
    best, costs = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        costs = batch_dtw(a, b, backend=backend)
        best = min(best, time.perf_counter() - start)
    return costs, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    a, b = make_pairs(args.pairs)
    reference, reference_seconds = timed("tslearn", a, b, 1)
    rows = [("tslearn dtw_path_from_metric(cityblock), per pair", reference_seconds, True)]
    for backend in ("numpy", "torch", "numba"):
        if backend == "torch" and torch is None:
            continue
        costs, seconds = timed(backend, a, b, args.repeats)
        rows.append((f"batch_dtw(backend={backend!r})", seconds, bool(np.array_equal(costs, reference))))
    print(f"{args.pairs} pairs, lengths 3-15, values 0-5, one core\n")
    print(f"{'path':52s} {'seconds':>8s} {'pairs/s':>12s} {'vs tslearn':>10s} {'== tslearn':>10s}")
    for name, seconds, equal in rows:
        print(f"{name:52s} {seconds:8.4f} {args.pairs / seconds:12,.0f} {reference_seconds / seconds:10.1f} {str(equal):>10s}")
    fastest = min(rows[1:], key=lambda row: row[1])
    ratio = reference_seconds / fastest[1]
    rate = args.pairs / fastest[1]
    print(
        f"\nfastest: {fastest[0]} at {rate:,.0f} pairs/s, {ratio:.0f}x tslearn "
        f"({'meets' if ratio >= TARGET_RATIO else 'misses'} the {TARGET_RATIO}x target; "
        f"{'meets' if rate >= TARGET_PAIRS_PER_SECOND else 'misses'} {TARGET_PAIRS_PER_SECOND:,} pairs/s)"
    )
    if not all(equal for _, _, equal in rows):
        raise SystemExit("a backend disagrees with tslearn")


if __name__ == "__main__":
    main()
