"""Torch's intra-op thread count for a trainer: the one asked for, or the faster of one thread and all
cores on a quick probe (on a loaded machine, 2 threads have run 2.5x slower than one)."""

from __future__ import annotations

import os
import time
from typing import Any

PROBE_SIZE = (4096, 128)
"""Rows and width of the probe's matrix products: a small model's layer over a batch of sequences."""
PROBE_REPEATS = 5


def probe_seconds(threads: int) -> float:
    """The best of PROBE_REPEATS timings of a forward-and-backward-sized matrix workload on ``threads`` threads."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(*PROBE_SIZE, generator=generator)
        w = torch.randn(PROBE_SIZE[1], 4 * PROBE_SIZE[1], generator=generator)
        best = float("inf")
        for _ in range(PROBE_REPEATS):
            started = time.perf_counter()
            (x @ w @ w.T).sum()
            best = min(best, time.perf_counter() - started)
        return best
    finally:
        torch.set_num_threads(previous)


def choose_threads(requested: int) -> tuple[int, str]:
    """Set torch's thread count: ``requested`` when > 0, else the faster of 1 and ``os.cpu_count()`` on
    :func:`probe_seconds`. Returns the count and a line saying how it was chosen (for the log)."""
    import torch

    if requested > 0:
        torch.set_num_threads(requested)
        return requested, f"torch threads: {requested} (--threads)"
    cores = os.cpu_count() or 1
    timings = {n: probe_seconds(n) for n in sorted({1, cores})}
    chosen = min(timings, key=timings.get)
    torch.set_num_threads(chosen)
    measured = ", ".join(f"{n} thread{'s' if n > 1 else ''} {seconds * 1000:.1f} ms" for n, seconds in timings.items())
    return chosen, f"torch threads: {chosen} (measured per probe: {measured}; --threads N to fix it)"


RESUME_LINE = "torch threads: {threads} (chosen when this run started, kept on resume: another count sums in another order, so the resumed run would differ from an uninterrupted one in the 7th digit)"


def run_threads(run: Any, requested: int) -> tuple[int, str]:
    """Torch's thread count for the trainer run in ``run`` (a :class:`~trainers.common.rundir.RunDir`):
    ``requested`` when > 0, else the count its ``state/threads.json`` holds (the run is resumed), else
    :func:`choose_threads`' probe; recorded in ``state/threads.json`` with the line saying how it was chosen. A resumed run keeps the count it
    started with because CPU matrix products split their sums by thread, so a count the probe picks
    afresh (1 on a loaded machine, all cores on an idle one) changes results by about 1e-7 relative."""
    import torch

    saved = run.load_state("threads", {"threads": int}) if requested <= 0 else None
    if saved is not None and saved["threads"] > 0:
        threads, line = saved["threads"], RESUME_LINE.format(threads=saved["threads"])
        torch.set_num_threads(threads)
    else:
        threads, line = choose_threads(requested)
        run.save_state("threads", {"threads": threads, "chosen": line})
    return threads, line
