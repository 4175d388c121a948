"""A trainer's run folder: everything written so a crash or ``kill -9`` at any point can resume.

Layout::

    RUN_DIR/config.json          the trainer config (written once)
    RUN_DIR/trajectories.jsonl   one Trajectory per line, appended and flushed (fsync) as produced
    RUN_DIR/metrics.jsonl        one dict per iteration, appended and flushed
    RUN_DIR/metrics.csv          the same, rewritten from metrics.jsonl
    RUN_DIR/state/<name>.json    state snapshots (controller, progress), replaced atomically
    RUN_DIR/checkpoints/...      policy checkpoints (trainer-specific)
    RUN_DIR/plots/*.png          plots

Trajectory records carry ``iteration`` and ``episode`` (its index in the iteration's fixed plan).
A resumed run keeps every completed trajectory of the interrupted iteration
(:meth:`completed_episodes`) and plays only the missing episodes; metrics rows of iterations
after the last committed state are dropped (:meth:`truncate_metrics_after`).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Iterable

from dialogue_gym.errors import ConfigError
from dialogue_gym.types import Trajectory


def _fsync_append(path: Path, lines: Iterable[str]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read records; a torn last line (the process died mid-write) is ignored."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            records.append(json.loads(line))
    return records


class RunDir:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        for sub in ("state", "checkpoints", "plots"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)

    # -- config ----------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    def write_config(self, config: dict[str, Any]) -> None:
        self.write_json(self.config_path, config)

    def read_config(self) -> dict[str, Any]:
        if not self.config_path.exists():
            raise ConfigError(f"{self.path} is not a run folder (no config.json); pass the folder a trainer created.")
        return json.loads(self.config_path.read_text(encoding="utf-8"))

    # -- atomic JSON state --------------------------------------------------------
    @staticmethod
    def write_json(path: Path, data: Any) -> None:
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)

    def save_state(self, name: str, data: Any) -> None:
        self.write_json(self.path / "state" / f"{name}.json", data)

    def load_state(self, name: str) -> Any | None:
        path = self.path / "state" / f"{name}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    # -- append-only records ----------------------------------------------------------
    @property
    def trajectories_path(self) -> Path:
        return self.path / "trajectories.jsonl"

    def append_trajectories(self, trajectories: Iterable[tuple[int, Trajectory]], iteration: int) -> None:
        """Append ``(episode, trajectory)`` pairs of ``iteration`` and fsync."""
        _fsync_append(
            self.trajectories_path,
            (json.dumps({"iteration": iteration, "episode": e, **t.to_dict()}) for e, t in trajectories),
        )

    def read_trajectories(self, up_to_iteration: int | None = None) -> list[Trajectory]:
        """Every completed trajectory (of iterations <= ``up_to_iteration``), first record per episode."""
        seen: set[tuple[int, int]] = set()
        trajectories = []
        for record in _read_jsonl(self.trajectories_path):
            key = (record["iteration"], record["episode"])
            if key in seen or (up_to_iteration is not None and record["iteration"] > up_to_iteration):
                continue
            seen.add(key)
            trajectories.append(Trajectory.from_dict(record))
        return trajectories

    def completed_episodes(self, iteration: int) -> dict[int, Trajectory]:
        """Episode index -> trajectory for the episodes of ``iteration`` already on disk."""
        completed: dict[int, Trajectory] = {}
        for record in _read_jsonl(self.trajectories_path):
            if record["iteration"] == iteration:
                completed.setdefault(record["episode"], Trajectory.from_dict(record))
        return completed

    def append_metrics(self, row: dict[str, Any]) -> None:
        _fsync_append(self.path / "metrics.jsonl", [json.dumps(row)])
        rows = self.read_metrics()
        columns = list(dict.fromkeys(key for r in rows for key in r))
        with open(self.path / "metrics.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)

    def read_metrics(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / "metrics.jsonl")

    def truncate_metrics_after(self, iteration: int) -> None:
        """Drop metrics rows of iterations after ``iteration`` (rows written before a crash, not committed)."""
        path = self.path / "metrics.jsonl"
        if not path.exists():
            return
        kept = [r for r in _read_jsonl(path) if r.get("iteration", -1) <= iteration]
        temporary = path.with_name("metrics.jsonl.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in kept)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
