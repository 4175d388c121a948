"""``python -m trainers.tracer`` and ``python -m trainers.rlada`` pass the trainer's exit status on (issue 43
item 6, trainers/{tracer,rlada}/__main__.py): a bad setting is one line on stderr and exit status 2, with no
run folder made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("trainer", "message"),
    [("tracer", "group_size must be >= 1, got 0."), ("rlada", "group_size must be >= 1, got 0.")],  # one wording for one bad setting
)
def test_the_module_entry_point_exits_2_with_one_line(tmp_path, trainer, message):
    done = subprocess.run(
        [sys.executable, "-m", f"trainers.{trainer}", "--group-size", "0", "--run-dir", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2 and done.stderr == f"python -m trainers.{trainer}: error: {message}\n"
    assert not (tmp_path / "run").exists()
