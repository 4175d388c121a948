"""The SEAD seeds CLI's bounds (issue 43 item 6, trainers/sead/seeds.py, __main__.py): ``--iterations 0`` (evaluate
each seed's untrained policy) is a valid run, handed to every seed's job as 0, not the preset's count; and
``python -m trainers.sead`` exits with the status main returns."""

from __future__ import annotations

import pytest

from trainers.sead import seeds


class Started(Exception):
    """Raised by the stand-in pool: the CLI got as far as training the seeds."""


def test_zero_iterations_is_accepted_and_reaches_every_seed(monkeypatch):
    jobs = []

    class Pool:
        def __init__(self, max_workers):
            assert max_workers == 1

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            return False

        def map(self, function, items):
            jobs.extend(items)
            raise Started

    monkeypatch.setattr(seeds, "ProcessPoolExecutor", Pool)
    with pytest.raises(Started):
        seeds.main(["--seeds", "2", "--iterations", "0", "--eval-episodes", "5", "--workers", "1", "--out", "never-written"])
    assert jobs == [("cpu-strategy-plus", 0, 0, 5, "never-written"), ("cpu-strategy-plus", 1, 0, 5, "never-written")]


def test_the_trainers_module_command_exits_with_mains_status():
    # python -m trainers.sead: a configuration error is one line on stderr and exit status 2, as main returns
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "trainers.sead", "--batch-size", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "batch_size must be >= 1, got 0" in done.stderr
