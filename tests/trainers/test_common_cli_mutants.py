"""The trainers' shared command-line and sweep helpers pinned by value (issue 43 item 6): each flag
converter's accepted and refused texts, the help text a config field gets, ``--resume``, presets and
ranges (trainers/common/cli.py); the sweep's flag checks, field defaults, resume check and job order
(trainers/common/sweep.py). Pure functions on a small config: fast, no training."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, field

import pytest

from dialogue_gym.errors import ConfigError
from trainers.common import RunDir, RunFolderError, cli, sweep


@dataclass(frozen=True)
class Toy:
    """A stand-in trainer config (annotations as strings, as the trainers' configs have them)."""

    steps: int = 3
    """How many steps."""
    rate: float = 0.5
    """The rate, in %."""
    greedy: bool = False
    name: str | None = None
    """An optional name."""
    extra: dict = field(default_factory=lambda: {"a": (1, 2)})
    """Extra settings."""
    scale: tuple[float, float, float] = (1.0, 2.0, 3.0)
    run_dir: str = "runs/toy"
    preset: str = "tiny"
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def test_flag_converters_accept_their_texts_and_refuse_the_rest():
    assert cli.json_object('{"a": 1}') == {"a": 1}
    with pytest.raises(ValueError):
        cli.json_object("[1]")  # JSON, but not an object
    with pytest.raises(argparse.ArgumentTypeError):
        cli.json_object("{not json")
    assert cli.optional_json_object("None") is None and cli.optional_json_object("NONE") is None
    assert cli.optional_json_object('{"b": 2}') == {"b": 2}
    assert cli.optional_str("none") is None and cli.optional_str("nonesuch") == "nonesuch"
    assert cli.float_triple("[1, 2.5, -3]") == (1.0, 2.5, -3.0)
    for bad in ("[1, 2]", "[1, 2, 3, 4]", "[1, 2, true]", '[1, 2, "3"]', '{"a": 1}'):
        with pytest.raises(ValueError):
            cli.float_triple(bad)
    assert cli.finite_float("1e3") == 1000.0 and cli.finite_float("-0.25") == -0.25
    for bad in ("nan", "inf", "-inf"):
        with pytest.raises(ValueError):
            cli.finite_float(bad)


def test_values_are_shown_as_they_are_typed_on_the_command_line():
    assert [cli._shown(v) for v in (True, False, None, "", "x", 3, 0.5)] == ["true", "false", "none", "''", "x", "3", "0.5"]
    assert cli._shown({"a": [1, 2]}) == '{"a": [1, 2]}' and cli._shown((1.0, 2.0)) == "[1.0, 2.0]"


def test_field_docs_are_the_string_under_each_field():
    docs = cli.field_docs(Toy)
    assert docs == {"steps": "How many steps.", "rate": "The rate, in %.", "name": "An optional name.", "extra": "Extra settings."}
    assert cli.field_docs(int) == {}  # no source to read: no docs, no error


def test_the_parser_has_a_flag_per_field_with_its_doc_default_presets_and_choices():
    parser = cli.config_parser(Toy, "toy", "A toy.", presets={"tiny": {"steps": 1}, "big": {"steps": 9, "greedy": True}})
    assert vars(parser.parse_args([])) == {"resume": None}  # an unset flag is absent, so the preset's value stands
    args = vars(parser.parse_args(["--steps", "4", "--rate", "0.25", "--greedy", "TRUE", "--name", "None", "--extra", '{"b": 1}',
                                   "--scale", "[0, 1, 2]", "--run-dir", "elsewhere"]))
    assert args == {"resume": None, "steps": 4, "rate": 0.25, "greedy": True, "name": None, "extra": {"b": 1},
                    "scale": (0.0, 1.0, 2.0), "run_dir": "elsewhere"}
    text = " ".join(parser.format_help().split())
    assert "--steps STEPS How many steps. Default: 3 (preset tiny 1, big 9)" in text
    assert "--greedy {true,false} See Toy.greedy. Default: false (preset big true)" in text
    assert "The rate, in %. Default: 0.5" in text  # a % in a docstring is printed, not taken as a format
    assert "--preset {tiny,big}" in text and "--extra EXTRA Extra settings. Default: {\"a\": [1, 2]}" in text
    with pytest.raises(SystemExit):
        parser.parse_args(["--rate", "nan"])


def test_resume_rebuilds_the_saved_config_and_takes_no_other_flag(tmp_path):
    parser = cli.config_parser(Toy, "toy", "A toy.")
    def build(**values):
        if values.get("steps", 0) < 0:
            raise ConfigError("steps must be >= 0, got -1.")
        return values

    assert cli.config_from_cli(parser, build, ["--steps", "2"]) == ({"steps": 2}, False)
    folder = tmp_path / "run"
    folder.mkdir()
    RunDir(folder).write_config({"steps": 5, "run_dir": "moved-from"})
    assert cli.config_from_cli(parser, build, ["--resume", str(folder)]) == ({"steps": 5, "run_dir": str(folder)}, True)
    with pytest.raises(ConfigError, match=r"takes no other options; drop \['--rate', '--steps'\]"):
        cli.config_from_cli(parser, build, ["--resume", str(folder), "--steps", "1", "--rate", "1"])
    RunDir(folder).write_config({"steps": -1})
    with pytest.raises(RunFolderError, match=r"config.json: steps must be >= 0, got -1. Fix that field"):
        cli.config_from_cli(parser, build, ["--resume", str(folder)])


def test_preset_values_layer_the_overrides_on_the_preset_and_check_kinds():
    presets = {"tiny": {"steps": 1, "rate": 0.1}, "big": {"steps": 9}}
    assert cli.preset_values(Toy, presets, "tiny", {"rate": 0.2}) == {"steps": 1, "rate": 0.2, "preset": "tiny"}
    with pytest.raises(ConfigError, match=r"preset='huge' is unknown; use one of \['big', 'tiny'\]"):
        cli.preset_values(Toy, presets, "huge", {})
    with pytest.raises(ConfigError, match=r"Unknown trainer option\(s\) \['speed', 'steps_'\]"):
        cli.preset_values(Toy, presets, "tiny", {"steps_": 1, "speed": 2})
    for name, bad in (("steps", True), ("steps", 1.0), ("rate", math.inf), ("greedy", 1), ("extra", []), ("name", 3)):
        with pytest.raises(ConfigError, match=f"^{name} must be "):
            cli.preset_values(Toy, presets, "tiny", {name: bad})
    with pytest.raises(ConfigError, match=r"scale must be three finite numbers, got \[1, 2\]"):
        cli.preset_values(Toy, presets, "tiny", {"scale": [1, 2]})
    assert cli.preset_values(Toy, presets, "big", {"rate": 1, "name": None, "scale": [0, 0, 1]})["rate"] == 1  # an int is a float


def test_ranges_include_their_bounds_and_say_which_they_are():
    config = Toy(steps=0, rate=1.0)
    cli.require_range(config, ["steps", "rate"], 0, 1)  # both bounds allowed
    with pytest.raises(ConfigError, match=r"^rate must be in \[0, 0.5\], got 1.0.$"):
        cli.require_range(config, ["steps", "rate"], 0, 0.5)
    with pytest.raises(ConfigError, match=r"^steps must be >= 1, got 0.$"):
        cli.require_range(config, ["steps"], 1)


def test_run_main_turns_a_gym_error_into_one_line_and_exit_2(capsys):
    def fails():
        raise RunFolderError("the folder\n  is   damaged")

    assert cli.run_main("toy", fails) == 2
    assert capsys.readouterr().err == "toy: error: the folder is damaged\n"
    assert cli.run_main("toy", lambda: 0) == 0


def _sweep_args(**values):
    return argparse.Namespace(**{"seeds": 2, "workers": 1, "overrides": {}, "out": "out", **values})


def test_sweep_flags_need_one_seed_and_worker_and_no_override_of_what_the_sweep_sets():
    sweep.check_sweep_flags(_sweep_args(seeds=1, workers=1, overrides={"steps": 2}), ["rate"])
    for name in ("seeds", "workers"):
        with pytest.raises(ConfigError, match=f"--{name} must be >= 1, got 0"):
            sweep.check_sweep_flags(_sweep_args(**{name: 0}), ["rate"])
    overrides = {"rate": 1, "seed": 1, "run_dir": "x", "preset": "big", "steps": 2}
    with pytest.raises(ConfigError, match=r"--overrides sets \['preset', 'rate', 'run_dir', 'seed'\]"):
        sweep.check_sweep_flags(_sweep_args(overrides=overrides), ["rate"])
    parser = argparse.ArgumentParser()
    sweep.add_sweep_flags(parser, 5, "sweeps/toy")
    assert vars(parser.parse_args([])) == {"seeds": 5, "out": "sweeps/toy", "workers": 2, "overrides": {}}


def test_field_defaults_are_every_default_as_json_reads_it_back():
    assert sweep.field_defaults(Toy) == {
        "steps": 3, "rate": 0.5, "greedy": False, "name": None, "extra": {"a": [1, 2]}, "scale": [1.0, 2.0, 3.0],
        "run_dir": "runs/toy", "preset": "tiny", "seed": 0,
    }


def test_a_run_folder_resumes_only_with_the_same_settings(tmp_path):
    config = Toy(run_dir=str(tmp_path / "run"))
    assert sweep.resumes(config) is False  # nothing there yet
    (tmp_path / "run").mkdir()
    saved = json.loads(json.dumps(config.to_dict()))
    del saved["greedy"]  # a field added after that run began counts at its default
    RunDir(config.run_dir).write_config(saved)
    assert sweep.resumes(config) is True
    RunDir(config.run_dir).write_config({**saved, "rate": 0.25, "steps": 4})
    with pytest.raises(RunFolderError, match=r"other settings \(rate 0.25 there, 0.5 now; steps 4 there, 3 now\); the fix\.$"):
        sweep.resumes(config, fix="the fix")
    assert sweep.resumes(Toy(run_dir=config.run_dir, rate=0.25, steps=4)) is True
    with pytest.raises(RunFolderError, match=r"greedy False there, True now"):
        sweep.resumes(Toy(run_dir=config.run_dir, rate=0.25, steps=4, greedy=True))


def test_a_sweep_checks_every_folder_before_it_trains_and_returns_results_by_setting_and_seed(tmp_path):
    built = []

    def config_of(setting, seed, out, overrides):
        built.append((setting, seed))
        return Toy(run_dir=f"{out}/{setting}-seed{seed}", seed=seed, **overrides)

    args = _sweep_args(seeds=2, out=str(tmp_path), overrides={"steps": 7})
    results = sweep.run_sweep(repr, config_of, ["a", "b"], args)
    assert built == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert results == {(s, n): repr((s, n, str(tmp_path), {"steps": 7})) for s in ("a", "b") for n in (0, 1)}
    (tmp_path / "b-seed1").mkdir()
    RunDir(tmp_path / "b-seed1").write_config({**Toy(run_dir=str(tmp_path / "b-seed1"), seed=1).to_dict(), "steps": 7, "rate": 9.0})
    with pytest.raises(RunFolderError, match="rate 9.0 there"):
        sweep.run_sweep(_must_not_train, config_of, ["a", "b"], args)
    assert sweep.run_all(abs, [-3, 2, -1], workers=2) == [3, 2, 1]  # results in job order
    path = sweep.write_summary(str(tmp_path / "new" / "sweep"), {"k": 1})  # the --out folder and its parents are made
    assert path == tmp_path / "new" / "sweep" / "sweep.json" and json.loads(path.read_text()) == {"k": 1}
    sweep.write_summary(str(tmp_path / "new" / "sweep"), {"k": 2})  # a rerun rewrites it in the existing folder
    assert json.loads(path.read_text()) == {"k": 2}


def _must_not_train(job):
    raise AssertionError(f"trained {job} before every folder was checked")
