"""What every seeds-and-settings sweep shares: its common flags, one run folder per (setting, seed)
that a rerun resumes, and the refusal of a folder that holds a run with other settings."""

from __future__ import annotations

import argparse
import dataclasses
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

from dialogue_gym.errors import ConfigError
from trainers.common import RunDir, RunFolderError
from trainers.common.cli import json_object


def add_sweep_flags(cli: argparse.ArgumentParser, seeds: int, out: str) -> None:
    cli.add_argument("--seeds", type=int, default=seeds, help=f"independent runs (seeds 0..N-1) per setting. Default: {seeds}")
    cli.add_argument("--out", default=out, help=f"folder of the runs and of sweep.json; a rerun resumes the runs there. Default: {out}")
    cli.add_argument("--workers", type=int, default=2, help="runs trained at a time (processes). Default: 2")
    cli.add_argument(
        "--overrides", type=json_object, default={}, metavar="JSON",
        help="trainer config fields set in every run, as a JSON object, e.g. '{\"iterations\": 10}'. Default: {}",
    )


def check_sweep_flags(args: argparse.Namespace, swept: Sequence[str]) -> None:
    """Counts of at least 1, and no override of a field the sweep itself varies (or places)."""
    for name in ("seeds", "workers"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name} must be >= 1, got {getattr(args, name)}.")
    taken = sorted(set(args.overrides) & {*swept, "seed", "run_dir", "preset"})
    if taken:
        raise ConfigError(f"--overrides sets {taken}, which the sweep sets itself for each run; drop them from --overrides.")


def field_defaults(config: Any) -> dict[str, Any]:
    """The default of every field of the config dataclass ``config``, as its JSON reads back."""
    values = {}
    for spec in dataclasses.fields(config):
        if spec.default is not dataclasses.MISSING:
            values[spec.name] = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            values[spec.name] = spec.default_factory()
    return json.loads(json.dumps(values))


def resumes(config: Any, fix: str = "rerun with the --overrides it was started with, or pass another --out") -> bool:
    """Whether ``config``'s run folder already holds its run (to resume or read); refuses one that holds a
    run with other settings, naming the fields that differ. A field the saved config lacks (added to the
    trainer since that run began) counts at its default: the behaviour the run had before it existed."""
    run = RunDir(config.run_dir)
    if not run.config_path.exists():
        return False
    saved = {**field_defaults(config), **run.read_config()}
    wanted = json.loads(json.dumps(config.to_dict()))  # tuples read back as lists
    differing = sorted(name for name in {*saved, *wanted} if saved.get(name) != wanted.get(name))
    if differing:
        there = "; ".join(f"{name} {saved.get(name)!r} there, {wanted.get(name)!r} now" for name in differing)
        raise RunFolderError(
            f"{config.run_dir} holds a run with other settings ({there}); {fix}."
        )
    return True


def run_all(train_one: Callable[[Any], Any], jobs: Sequence[Any], workers: int) -> list[Any]:
    """``train_one(job)`` for every job, ``workers`` processes at a time, results in job order."""
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(train_one, jobs))


def run_sweep(
    train_one: Callable[[Any], Any], config_of: Callable[..., Any], settings: Sequence[str], args: argparse.Namespace
) -> dict[tuple[str, int], Any]:
    """Every (setting, seed) job of a sweep, ``{(setting, seed): train_one(job)}``; each job is
    ``(setting, seed, out, overrides)``. Every config is built and every folder checked (:func:`resumes`)
    before anything trains, so a mismatched folder stops the sweep before its first run."""
    jobs = [(setting, seed, args.out, args.overrides) for setting in settings for seed in range(args.seeds)]
    for job in jobs:
        resumes(config_of(*job))
    return dict(zip(((setting, seed) for setting, seed, _, _ in jobs), run_all(train_one, jobs, args.workers)))


def write_summary(out: str, data: dict[str, Any]) -> Path:
    path = Path(out) / "sweep.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    RunDir.write_json(path, data)
    return path
