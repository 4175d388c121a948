"""A trainer's run folder: everything written so a crash or ``kill -9`` at any point can resume.

Layout::

    RUN_DIR/config.json          the trainer config (written once)
    RUN_DIR/run.lock             held (flock) by the one process training in the folder; holds its PID
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

A trainer opens its folder with :meth:`RunDir.create` (a new run) or :meth:`RunDir.resume`; both
take the folder's lock for the life of the run, and ``resume`` cuts a torn last line (the process
died mid-write) off the JSONL files so the next record starts on a line of its own; that episode
is then played again. ``RunDir(path)`` alone only reads. Every JSON file is read through one
loader that names the file, the field and the fix (:class:`RunFolderError`).
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from dialogue_gym.errors import ConfigError, DialogueGymError
from dialogue_gym.types import Trajectory
from trainers.common import atomic
from trainers.common.atomic import disk_full_guard

logger = logging.getLogger(__name__)

LOCK_FILE = "run.lock"
JSONL_FILES = ("trajectories.jsonl", "metrics.jsonl")
SUBFOLDERS = ("state", "checkpoints", "plots")
STATE_FIX = "the trainer alone writes this file, so it was damaged or edited; restore it from a copy, or start again with another --run-dir"
CHECKPOINT_FIX = (
    "the trainer writes checkpoints whole, so it was damaged afterwards; restore that folder from a copy, "
    "or start again with another --run-dir"
)


class RunFolderError(ConfigError):
    """A run folder is missing, in use, or holds a corrupt or inconsistent file; the message names
    the folder or file, the field, and the fix."""


FieldKind = type | tuple[type, ...]


def _kind_name(kind: FieldKind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("null" if k is type(None) else k.__name__ for k in kinds)


def has_kind(value: Any, kind: FieldKind) -> bool:
    """``isinstance`` where a bool is no int and a number must be finite."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    if isinstance(value, float) and float in kinds and not math.isfinite(value):
        return False
    return isinstance(value, kinds)


def read_json_file(path: Path, fix: str = STATE_FIX) -> Any:
    """The JSON value in ``path``; any unreadable or invalid content raises :class:`RunFolderError` naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RunFolderError(f"{path} is missing; {fix}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"Cannot read {path} ({exc}); {fix}.") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunFolderError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); {fix}.") from exc
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        raise RunFolderError(f"{path} is not valid JSON ({type(exc).__name__}: {str(exc)[:120]}); {fix}.") from exc


def read_checkpoint_json(path: str | os.PathLike[str], fields: dict[str, FieldKind]) -> dict[str, Any]:
    """The JSON object a policy saved in ``path`` with ``fields`` of those kinds; a missing, truncated or
    damaged file raises :class:`RunFolderError` naming it and the fix."""
    return check_fields(Path(path), read_json_file(Path(path), CHECKPOINT_FIX), fields, CHECKPOINT_FIX)


def check_fields(path: Path, record: Any, fields: dict[str, FieldKind], fix: str = STATE_FIX) -> dict[str, Any]:
    """``record`` if it is a JSON object whose ``fields`` are present with the given kinds."""
    if not isinstance(record, dict):
        raise RunFolderError(f"{path} must hold a JSON object, got {type(record).__name__}; {fix}.")
    for name, kind in fields.items():
        if name not in record:
            raise RunFolderError(f"{path}: field {name!r} is missing; {fix}.")
        if not has_kind(record[name], kind):
            raise RunFolderError(f"{path}: field {name!r} must be {_kind_name(kind)}, got {record[name]!r:.80} ({type(record[name]).__name__}); {fix}.")
    return record


def _fsync_append(path: Path, lines: Iterable[str]) -> None:
    """Append ``lines`` and fsync; a full disk raises DiskFullError (a torn last line is cut on resume)."""
    with disk_full_guard(path), open(path, "a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _jsonl_records(path: Path) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(line number, byte offset, record)`` of every complete line. A torn last line (no newline:
    the writer died mid-write, or is still writing) is not a record; a damaged complete line is
    skipped with a warning naming the file, line and byte offset."""
    if not path.exists():
        return
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):
                return
            try:
                record = json.loads(raw)
                if not isinstance(record, dict):
                    raise ValueError(f"a JSON {type(record).__name__}, not an object")
            except (ValueError, RecursionError) as exc:
                logger.warning("%s line %d (byte offset %d): skipped a damaged record (%s)", path, number, offset, str(exc)[:120])
            else:
                yield number, offset, record
            offset += len(raw)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [record for _, _, record in _jsonl_records(path)]


def truncate_torn_tail(path: Path) -> int | None:
    """Cut a last line that has no newline off ``path``; returns the byte offset it started at (None if whole)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with open(path, "r+b") as handle:
        end = handle.seek(0, os.SEEK_END)
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return None
        keep, position = 0, end
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            newline = handle.read(position - start).rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            position = start
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    logger.warning(
        "%s: removed a torn last record (%d bytes from byte offset %d; the previous process stopped mid-write); "
        "its episode is played again", path, end - keep, keep,
    )
    return keep


def _lock(folder: Path) -> int:
    """An open descriptor of ``folder``'s lock file, exclusively locked, with this process's PID in it."""
    path = folder / LOCK_FILE
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunFolderError(f"Cannot open the lock file {path} ({exc}); the run folder must be writable.") from exc
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(descriptor)
        raise RunFolderError(
            f"{folder} is in use by another trainer process (PID {holder}, lock {path}); "
            f"wait for it to finish or stop it, then pass --resume {folder}."
        ) from exc
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
    return descriptor


class RunDir:
    """The files of one run. ``RunDir(path)`` reads; :meth:`create` and :meth:`resume` open it for
    training (locked until :meth:`close`, or the end of a ``with`` block)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lock: int | None = None

    @classmethod
    def create(cls, path: str | os.PathLike[str], config: dict[str, Any]) -> RunDir:
        """A new run in ``path`` (created if needed) with ``config`` saved; refuses a folder that holds a run."""
        run = cls(path)
        try:
            run.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunFolderError(f"Cannot create the run folder {run.path} ({exc}); choose another --run-dir.") from exc
        run._lock = _lock(run.path)
        try:
            if run.holds_run():
                raise RunFolderError(f"{run.path} already holds a run; pass --resume {run.path} or choose another --run-dir.")
            for sub in SUBFOLDERS:
                (run.path / sub).mkdir(exist_ok=True)
            run.write_config(config)
        except BaseException:
            run.close()
            raise
        return run

    @classmethod
    def resume(cls, path: str | os.PathLike[str]) -> RunDir:
        """The run in ``path``, locked, with torn last lines cut off; creates nothing when ``path`` is no run folder."""
        run = cls(path)
        run.read_config()
        run._lock = _lock(run.path)
        try:
            for sub in SUBFOLDERS:
                (run.path / sub).mkdir(exist_ok=True)
            for name in JSONL_FILES:
                truncate_torn_tail(run.path / name)
        except BaseException:
            run.close()
            raise
        return run

    def close(self) -> None:
        """Release the lock (a no-op for a read-only RunDir)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def holds_run(self) -> bool:
        """Whether anything beyond the config was written: records or state."""
        state = self.path / "state"
        return any((self.path / name).exists() for name in JSONL_FILES) or (state.is_dir() and any(state.glob("*.json")))

    # -- config ----------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    def write_config(self, config: dict[str, Any]) -> None:
        self.write_json(self.config_path, config)

    def read_config(self) -> dict[str, Any]:
        if not self.path.is_dir():
            problem = "it is a file" if self.path.exists() else "no such folder"
            raise RunFolderError(f"{self.path} is not a run folder ({problem}); pass the folder a trainer created (it holds config.json).")
        if not self.config_path.exists():
            raise RunFolderError(f"{self.path} is not a run folder (no config.json); pass the folder a trainer created.")
        return check_fields(self.config_path, read_json_file(self.config_path), {})

    # -- atomic JSON state --------------------------------------------------------
    @staticmethod
    def write_json(path: Path, data: Any) -> None:
        """``data`` as the whole of ``path`` or not at all (temporary file, fsync, rename)."""
        atomic.write_json(path, data)

    def save_state(self, name: str, data: Any) -> None:
        self.write_json(self.path / "state" / f"{name}.json", data)

    def state_path(self, name: str) -> Path:
        return self.path / "state" / f"{name}.json"

    def load_state(self, name: str, fields: dict[str, FieldKind] | None = None, fix: str = STATE_FIX) -> Any | None:
        """The saved state ``name`` (None if never saved); with ``fields``, a JSON object holding them
        with those kinds. Corrupt content raises :class:`RunFolderError` naming the file, field and ``fix``."""
        path = self.state_path(name)
        if not path.exists():
            return None
        data = read_json_file(path, fix)
        return check_fields(path, data, fields, fix) if fields is not None else data

    def checkpoint_path(self, state_name: str, field: str, name: Any) -> Path:
        """The checkpoint ``name`` recorded in the state file's ``field``: a path inside the run folder that exists."""
        source = self.state_path(state_name)
        relative = Path(name) if isinstance(name, str) and name else None
        if relative is None or relative.is_absolute() or ".." in relative.parts:
            raise RunFolderError(f"{source}: field {field!r} must name a checkpoint inside the run folder, got {name!r}; {STATE_FIX}.")
        if not (self.path / relative).exists():
            raise RunFolderError(
                f"{source}: field {field!r} names {name}, which does not exist in {self.path}; restore that checkpoint, or start again with another --run-dir."
            )
        problem = atomic.folder_problem(self.path / relative)
        if problem is not None:
            raise RunFolderError(f"{problem}; {source} names it ({field!r}): {CHECKPOINT_FIX}.")
        return self.path / relative

    # -- append-only records ----------------------------------------------------------
    @property
    def trajectories_path(self) -> Path:
        return self.path / "trajectories.jsonl"

    def append_trajectories(self, trajectories: Iterable[tuple[int, Trajectory]], iteration: int) -> None:
        """Append ``(episode, trajectory)`` pairs of ``iteration`` and fsync."""
        _fsync_append(
            self.trajectories_path,
            (json.dumps({"iteration": iteration, "episode": e, **t.to_dict()}, allow_nan=False) for e, t in trajectories),
        )

    def trajectory_records(self) -> Iterator[tuple[int, int, Trajectory]]:
        """``(iteration, episode, trajectory)`` of every readable record, in file order; a record
        without int ``iteration``/``episode`` or not a trajectory is skipped with a warning."""
        path = self.trajectories_path
        for number, offset, record in _jsonl_records(path):
            iteration, episode = record.get("iteration"), record.get("episode")
            try:
                if not (has_kind(iteration, int) and has_kind(episode, int)):
                    raise ValueError(f"needs int 'iteration' and 'episode', got {iteration!r:.40} and {episode!r:.40}")
                trajectory = Trajectory.from_dict(record)
            except (KeyError, TypeError, ValueError, DialogueGymError) as exc:
                logger.warning("%s line %d (byte offset %d): skipped a damaged record (%s: %s)", path, number, offset, type(exc).__name__, str(exc)[:120])
                continue
            yield iteration, episode, trajectory

    def read_trajectories(self, up_to_iteration: int | None = None) -> list[Trajectory]:
        """Every completed trajectory (of iterations <= ``up_to_iteration``), first record per episode."""
        seen: set[tuple[int, int]] = set()
        trajectories = []
        for iteration, episode, trajectory in self.trajectory_records():
            if (iteration, episode) in seen or (up_to_iteration is not None and iteration > up_to_iteration):
                continue
            seen.add((iteration, episode))
            trajectories.append(trajectory)
        return trajectories

    def completed_episodes(self, iteration: int) -> dict[int, Trajectory]:
        """Episode index -> trajectory for the episodes of ``iteration`` already on disk."""
        completed: dict[int, Trajectory] = {}
        for record_iteration, episode, trajectory in self.trajectory_records():
            if record_iteration == iteration:
                completed.setdefault(episode, trajectory)
        return completed

    def append_metrics(self, row: dict[str, Any]) -> None:
        _fsync_append(self.path / "metrics.jsonl", [json.dumps(row)])
        rows = self.read_metrics()
        columns = list(dict.fromkeys(key for r in rows for key in r))
        table = io.StringIO(newline="")
        writer = csv.DictWriter(table, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        atomic.write_text(self.path / "metrics.csv", table.getvalue())

    def read_metrics(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / "metrics.jsonl")

    def truncate_metrics_after(self, iteration: int) -> None:
        """Drop metrics rows of iterations after ``iteration`` (rows written before a crash, not committed)."""
        path = self.path / "metrics.jsonl"
        if not path.exists():
            return
        kept = [r for r in _read_jsonl(path) if has_kind(r.get("iteration"), int) and r["iteration"] <= iteration]
        atomic.write_text(path, "".join(json.dumps(r) + "\n" for r in kept))
