"""A training run saved for the docs (``docs/results/training/*``, made by ``tools/docs_tables.py --train``)
records the trainer's command; that command, parsed by today's trainer, must still build the config the
run was made with, so a preset's values cannot drift from the runs the docs report (issue 43 item 6:
trainers/*/config.py presets). Also each trainer's default run folder."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

SAVED = sorted(
    path.parent for path in (Path(__file__).resolve().parents[2] / "docs" / "results" / "training").glob("*/run.json")
    if (path.parent / "config.json").exists() and "arguments" in json.loads(path.read_text())
)


def test_there_are_saved_runs_with_their_commands():
    assert {json.loads((folder / "run.json").read_text())["trainer"] for folder in SAVED} >= {"rlada", "tracer"}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("folder", SAVED, ids=[folder.name for folder in SAVED])
def test_a_saved_runs_command_still_builds_its_config(folder):
    made = json.loads((folder / "run.json").read_text())
    module = importlib.import_module(f"trainers.{made['trainer']}.config")
    arguments = vars(module.parser().parse_args(made["arguments"]))
    arguments.pop("resume")
    rebuilt = json.loads(json.dumps(module.build_config(**arguments).to_dict()))
    saved = json.loads((folder / "config.json").read_text())
    rebuilt.pop("run_dir"), saved.pop("run_dir")  # where it ran (a worktree), not what it trained
    # A field added since the run was made must build at its default (a new field's default is the old behaviour).
    defaults = type(module.build_config())()
    later = {name: rebuilt.pop(name) for name in set(rebuilt) - set(saved)}
    assert later == {name: getattr(defaults, name) for name in later}
    assert rebuilt == saved


@pytest.mark.parametrize(
    "trainer, expected",
    [("sead", "runs/sead-cpu-strategy-full-seed3"), ("rlada", "runs/rlada-cpu-strategy-seed3"), ("tracer", "runs/tracer-cpu-strategy-seed3")],
)
def test_the_default_run_folder_names_the_preset_and_seed_and_an_explicit_one_wins(trainer, expected):
    module = importlib.import_module(f"trainers.{trainer}.config")
    assert module.build_config(seed=3).resolved_run_dir() == expected
    assert module.build_config(seed=3, run_dir="mine").resolved_run_dir() == "mine"
