"""Command lines generated from a trainer's frozen config dataclass: ``--field value`` for every
field, plus ``--resume RUN_DIR`` (which rebuilds the config saved in the run folder)."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from typing import Any, Callable

from trainers.common.rundir import RunDir

CONVERTERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "bool": lambda text: text.lower() in ("1", "true", "yes"),
    "dict": json.loads,
    "dict | None": json.loads,
    "str | None": lambda text: None if text.lower() == "none" else text,
    "tuple[float, float, float]": lambda text: tuple(json.loads(text)),
}


def config_parser(config_class: type, prog: str, description: str) -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(prog=prog, description=description)
    cli.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run from its folder")
    for spec in fields(config_class):
        cli.add_argument(
            "--" + spec.name.replace("_", "-"),
            type=CONVERTERS.get(str(spec.type), str),
            default=argparse.SUPPRESS,
            help=f"{spec.type} (see {config_class.__name__}.{spec.name})",
        )
    return cli


def config_from_cli(parser: argparse.ArgumentParser, build_config: Callable[..., Any], argv: list[str] | None) -> tuple[Any, bool]:
    """``(config, resume)``: the config of ``--resume RUN_DIR`` (as saved there), or one built from the flags."""
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume", None)
    if resume:
        return build_config(**{**RunDir(resume).read_config(), "run_dir": resume}), True
    return build_config(**args), False


def preset_values(config_class: type, presets: dict[str, dict[str, Any]], preset: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``config_class`` for ``preset`` with ``overrides`` on top; names an
    unknown preset or option and lists the accepted ones."""
    from dialogue_gym.errors import ConfigError

    if preset not in presets:
        raise ConfigError(f"preset={preset!r} is unknown; use one of {sorted(presets)}.")
    names = {f.name for f in fields(config_class)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ConfigError(f"Unknown trainer option(s) {unknown}; options are {sorted(names)}.")
    return {**presets[preset], **overrides, "preset": preset}
