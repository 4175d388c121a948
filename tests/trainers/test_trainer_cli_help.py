"""The trainer command lines document themselves: --help shows each field's docstring, default,
choices and preset values; booleans take only true / false; each trainer prints before -> after
with the best fair scripted baseline beside it."""

import argparse
import re
from dataclasses import fields

import pytest

from trainers.common.cli import boolean, field_docs
from trainers.rlada import config as rlada_config
from trainers.sead import config as sead_config
from trainers.sead import train as sead_train
from trainers.tracer import config as tracer_config

CONFIGS = {"sead": sead_config, "tracer": tracer_config, "rlada": rlada_config}


def _help(module) -> str:
    return " ".join(module.parser().format_help().split())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_field_has_a_docstring_and_a_default_in_help(name):
    module = CONFIGS[name]
    config_class = module.build_config().__class__
    docs = field_docs(config_class)
    assert set(docs) == {spec.name for spec in fields(config_class)}
    text = _help(module)
    presets = {
        "sead": "{cpu-strategy,cpu-strategy-plus,cpu-strategy-plus-long,cpu-tiny-lm,cpu-lm-scratch,cpu-smollm2,gpu-lm}",
        "tracer": "{cpu-strategy,cpu-tiny-lm,cpu-smollm2,cpu-lm-scratch,gpu-lm}",
        "rlada": "{cpu-strategy,cpu-tiny-lm,cpu-lm-scratch,gpu-lm}",
    }
    assert f"[--preset {presets[name]}]" in text
    assert text.count("Default: ") == len(fields(config_class))
    assert "--plots {true,false}" in text and "Write PNG plots (needs matplotlib). Default: true" in text


def test_sead_help_shows_choices_docstrings_and_what_presets_set():
    text = _help(sead_config)
    assert "--advantage {batch_mean,group_standardized}" in text and "--curriculum {full,uniform,unstructured,released}" in text
    assert "Outer iterations of the four-phase loop. Default: 150 (preset cpu-strategy-plus 450, cpu-strategy-plus-long 900, cpu-tiny-lm 2, cpu-lm-scratch 30, cpu-smollm2 4, gpu-lm 20)" in text
    assert re.search(r"--smoothing \{none,beta\}.*Default: none", text)


def test_rlada_help_shows_advantage_kinds_and_policy_choices():
    text = _help(rlada_config)
    assert "--advantage {batch_mean,group_standardized}" in text and "--agent-policy {strategy,lm}" in text


@pytest.mark.parametrize("text, value", [("true", True), ("False", False), ("TRUE", True)])
def test_booleans_are_true_or_false(text, value):
    assert boolean(text) is value


@pytest.mark.parametrize("text", ["flase", "yes", "1", "0", "no", ""])
def test_anything_else_is_not_a_boolean(text):
    with pytest.raises(argparse.ArgumentTypeError, match=f"invalid boolean value {text!r}: use true or false"):
        boolean(text)


def test_sead_prints_held_out_before_and_after_with_the_best_scripted_baseline(tmp_path, capsys):
    argv = ["--iterations", "2", "--batch-size", "10", "--eval-episodes", "120", "--plots", "false", "--run-dir", str(tmp_path / "run")]
    assert sead_train.main(argv) == 0
    captured = capsys.readouterr()
    line = next(line for line in captured.out.splitlines() if line.startswith("held-out CR"))
    assert re.fullmatch(
        r"held-out CR \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] -> \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] over 120 episodes; "
        r"best scripted baseline (sop|random|adaptive) \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]",
        line,
    ), line
    assert "oracle" not in line  # an oracle reads the hidden state: an upper bound, not a baseline
    for label in ("held-out before", "held-out after", "baseline adaptive"):
        assert re.search(rf"{label}: 100%\|[^|]*\| 120/120", captured.err), label  # bars with totals


def test_tracer_prints_each_curve_with_the_best_scripted_baseline(tmp_path, capsys):
    from trainers.tracer import train as tracer_train

    argv = [
        "--iterations", "1", "--sessions-per-iteration", "2", "--group-size", "2", "--eval-sessions", "8", "--eval-rollouts", "1",
        "--plots", "false", "--run-dir", str(tmp_path / "run"),
    ]
    assert tracer_train.main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"Group-dPCR: \d\.\d{3} \(iteration 0\) -> \d\.\d{3} \(after training\); best scripted baseline \w+ \d\.\d{3}", printed)
    assert re.search(r"PCR: .*; best scripted baseline \w+ \d\.\d{3} \(real \d\.\d{3}\)", printed)
