"""``python -m trainers.tracer`` passes the trainer's exit status on (issue 43 item 6, trainers/tracer/__main__.py):
a bad setting is one line on stderr and exit status 2, with no run folder made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_module_entry_point_exits_2_with_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "trainers.tracer", "--group-size", "0", "--run-dir", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and done.stderr == "python -m trainers.tracer: error: group_size must be a positive int, got 0.\n"
    assert not (tmp_path / "run").exists()
