"""Trainer CLIs run as child processes, and killed mid-run with SIGKILL, for the resume tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_trainer(module: str, args: list[str]) -> subprocess.Popen:
    """``python -m module *args`` from the repository root, output discarded."""
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def trajectory_lines(run_dir: Path) -> int:
    """Episodes appended to the run folder's trajectories.jsonl so far."""
    path = run_dir / "trajectories.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def kill_after(process: subprocess.Popen, run_dir: Path, lines: int, timeout: float = 120) -> None:
    """SIGKILL ``process`` as soon as its run folder holds ``lines`` episodes (or it ended, or ``timeout`` passed)."""
    deadline = time.time() + timeout
    while trajectory_lines(run_dir) < lines and process.poll() is None and time.time() < deadline:
        time.sleep(0.002)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def kill_when(process: subprocess.Popen, path: Path, timeout: float = 300) -> None:
    """SIGKILL ``process`` as soon as ``path`` exists (or it ended, or ``timeout`` passed)."""
    deadline = time.time() + timeout
    while not path.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.002)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
