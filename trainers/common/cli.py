"""Command lines generated from a trainer's frozen config dataclass: ``--field value`` for every
field, plus ``--resume RUN_DIR`` (which rebuilds the config saved in the run folder).

Configuration errors end the command with one line ``<prog>: error: <message>`` on stderr and exit
status 2, as ``dialogue-gym`` and argparse do (:func:`run_main`)."""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import math
import sys
import textwrap
from dataclasses import MISSING, fields
from typing import Any, Callable, Sequence

from dialogue_gym.errors import ConfigError, DialogueGymError
from dialogue_gym.inputs import json_option
from trainers.common.rundir import FieldKind, RunDir, RunFolderError, has_kind


def boolean(text: str) -> bool:
    """``true`` or ``false`` (any case) and nothing else: a typo such as ``flase`` is an error, not a value."""
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {text!r}: use true or false")


def _json(text: str) -> Any:
    """JSON text; text that is not JSON, or nests deeper than the inputs' bound, is argparse's error line."""
    try:
        return json_option(text, "the value")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def json_object(text: str) -> dict:
    value = _json(text)
    if not isinstance(value, dict):
        raise ValueError(text)
    return value


def optional_json_object(text: str) -> dict | None:
    return None if text.lower() == "none" else json_object(text)


def optional_str(text: str) -> str | None:
    return None if text.lower() == "none" else text


def float_triple(text: str) -> tuple[float, float, float]:
    value = _json(text)
    if not (isinstance(value, list) and len(value) == 3 and all(has_kind(v, (int, float)) for v in value)):
        raise ValueError(text)
    return tuple(float(v) for v in value)


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


CONVERTERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": finite_float,
    "bool": boolean,
    "dict": json_object,
    "dict | None": optional_json_object,
    "str | None": optional_str,
    "tuple[float, float, float]": float_triple,
}
KINDS: dict[str, FieldKind] = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "str": str,
    "dict": dict,
    "dict | None": (dict, type(None)),
    "str | None": (str, type(None)),
    "tuple[float, float, float]": (list, tuple),
}


def field_docs(config_class: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (the string literal that follows its annotation)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(config_class)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for field_node, doc_node in zip(body, body[1:]):
        if (
            isinstance(field_node, ast.AnnAssign) and isinstance(field_node.target, ast.Name)
            and isinstance(doc_node, ast.Expr) and isinstance(doc_node.value, ast.Constant) and isinstance(doc_node.value.value, str)
        ):
            docs[field_node.target.id] = " ".join(doc_node.value.value.split())
    return docs


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    if value is None or value == "":
        return "none" if value is None else "''"
    return str(value)


def config_parser(
    config_class: type, prog: str, description: str, presets: dict[str, dict[str, Any]] | None = None,
    choices: dict[str, Sequence[Any]] | None = None,
) -> argparse.ArgumentParser:
    """``--field value`` for every field of ``config_class``, its help the field's docstring, its choices
    (``choices[name]``; the preset names for ``preset``), its default and what each preset sets it to."""
    presets, choices = presets or {}, {**(choices or {}), **({"preset": tuple(presets)} if presets else {})}
    docs = field_docs(config_class)
    cli = argparse.ArgumentParser(prog=prog, description=description)
    cli.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run from its folder (with the config saved there)")
    choices.update({spec.name: (True, False) for spec in fields(config_class) if str(spec.type) == "bool" and spec.name not in choices})
    for spec in fields(config_class):
        default = spec.default if spec.default is not MISSING else spec.default_factory()  # type: ignore[misc]
        parts = [docs.get(spec.name, f"See {config_class.__name__}.{spec.name}."), f"Default: {_shown(default)}"]
        overridden = [f"{name} {_shown(values[spec.name])}" for name, values in presets.items() if spec.name in values]
        if overridden:
            parts.append("(preset " + ", ".join(overridden) + ")")
        cli.add_argument(
            "--" + spec.name.replace("_", "-"),
            type=CONVERTERS.get(str(spec.type), str),
            default=argparse.SUPPRESS,
            metavar="{" + ",".join(_shown(c) for c in choices[spec.name]) + "}" if spec.name in choices else spec.name.upper(),
            help=" ".join(parts).replace("%", "%%"),
        )
    return cli


def config_from_cli(parser: argparse.ArgumentParser, build_config: Callable[..., Any], argv: Sequence[str] | None) -> tuple[Any, bool]:
    """``(config, resume)``: the config of ``--resume RUN_DIR`` (as saved there), or one built from the flags."""
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume", None)
    if resume is None:
        return build_config(**args), False
    if args:
        flags = sorted("--" + name.replace("_", "-") for name in args)
        raise ConfigError(f"--resume continues with the config saved in {resume}/config.json and takes no other options; drop {flags}.")
    run = RunDir(resume)
    saved = run.read_config()
    try:
        return build_config(**{**saved, "run_dir": resume}), True
    except RunFolderError:
        raise
    except ConfigError as exc:
        raise RunFolderError(f"{run.config_path}: {exc} Fix that field, or start again with another --run-dir.") from exc


def _check_kinds(config_class: type, values: dict[str, Any]) -> None:
    for spec in fields(config_class):
        kind = KINDS.get(str(spec.type))
        if spec.name not in values or kind is None:
            continue
        value = values[spec.name]
        if not has_kind(value, kind):
            raise ConfigError(f"{spec.name} must be {spec.type} (finite if a number), got {value!r:.80} ({type(value).__name__}).")
        if str(spec.type).startswith("tuple[float") and not (len(value) == 3 and all(has_kind(v, (int, float)) for v in value)):
            raise ConfigError(f"{spec.name} must be three finite numbers, got {value!r:.80}.")


def preset_values(config_class: type, presets: dict[str, dict[str, Any]], preset: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``config_class`` for ``preset`` with ``overrides`` on top; names an
    unknown preset or option and lists the accepted ones, and a value of the wrong type."""
    if not isinstance(preset, str) or preset not in presets:
        raise ConfigError(f"preset={preset!r} is unknown; use one of {sorted(presets)}.")
    names = {f.name for f in fields(config_class)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ConfigError(f"Unknown trainer option(s) {unknown}; options are {sorted(names)}.")
    values = {**presets[preset], **overrides, "preset": preset}
    _check_kinds(config_class, values)
    return values


def require_range(config: Any, names: Sequence[str], low: float, high: float = math.inf) -> None:
    """Each named field of ``config`` within ``[low, high]``."""
    for name in names:
        value = getattr(config, name)
        if not low <= value <= high:
            bounds = f">= {low}" if high == math.inf else f"in [{low}, {high}]"
            raise ConfigError(f"{name} must be {bounds}, got {value!r}.")


def run_main(prog: str, main: Callable[[], int]) -> int:
    """``main()``, with a configuration or run-folder error reported as one line on stderr and exit status 2."""
    try:
        return main()
    except DialogueGymError as exc:
        message = " ".join(str(exc).split())
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
