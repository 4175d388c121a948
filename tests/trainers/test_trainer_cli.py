"""The trainer command lines: a configuration error is one line ``<prog>: error: <message>`` on stderr
with exit status 2 (as ``dialogue-gym``), and nothing is written before the whole config is valid."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainers.common import RunDir
from trainers.rlada import train as rlada_train
from trainers.sead import ablate
from trainers.sead import train as sead_train
from trainers.tracer import train as tracer_train

ROOT = Path(__file__).resolve().parents[2]
MAINS = {
    "python -m trainers.sead": sead_train.main,
    "python -m trainers.tracer": tracer_train.main,
    "python -m trainers.rlada": rlada_train.main,
}


def _one_line_error(capsys, prog: str) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"{prog}: error: "), captured.err
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(
    "prog, argv, message",
    [
        ("python -m trainers.sead", ["--preset", "cpu-strategyy"], "preset='cpu-strategyy' is unknown; use one of"),
        ("python -m trainers.sead", ["--batch-size", "0"], "batch_size must be >= 1, got 0"),
        ("python -m trainers.sead", ["--n-max", "0"], "n_max must be >= 1, got 0"),
        ("python -m trainers.sead", ["--smoothing", "laplace"], "smoothing='laplace'; use None or 'beta'"),
        ("python -m trainers.sead", ["--user", "robot"], "user='robot' is not a known user policy"),
        ("python -m trainers.sead", ["--user", "llm"], "user='llm' needs user_backend"),
        ("python -m trainers.sead", ["--advantage", "ppo"], "advantage='ppo'"),
        ("python -m trainers.sead", ["--temperature", "0"], "temperature must be > 0, got 0.0"),
        ("python -m trainers.tracer", ["--preset", "gpu"], "preset='gpu' is unknown"),
        ("python -m trainers.tracer", ["--group-size", "0"], "group_size must be >= 1, got 0"),
        ("python -m trainers.tracer", ["--rho", "1.5"], "rho must be"),
        ("python -m trainers.tracer", ["--assistant", "robot"], "assistant='robot' is not a known assistant policy"),
        ("python -m trainers.tracer", ["--sessions-file", "/nowhere/sessions.jsonl"], "/nowhere/sessions.jsonl"),
        ("python -m trainers.rlada", ["--preset", "cpu"], "preset='cpu' is unknown"),
        ("python -m trainers.rlada", ["--min-matches", "5", "--max-matches", "4"], "need 1 <= min_matches <= max_matches, got 5 and 4"),
        ("python -m trainers.rlada", ["--max-agent-turns", "0"], "max_agent_turns must be >= 1, got 0"),
        ("python -m trainers.rlada", ["--win-threshold", "1.5"], r"win_threshold must be in [0, 1], got 1.5"),
    ],
)
def test_a_bad_config_is_one_line_and_exit_2_and_writes_nothing(tmp_path, capsys, prog, argv, message):
    folder = tmp_path / "run"
    assert MAINS[prog]([*argv, "--run-dir", str(folder)]) == 2
    assert message in _one_line_error(capsys, prog)
    assert not folder.exists(), "nothing is written before the whole config is valid"


@pytest.mark.parametrize("prog", sorted(MAINS))
def test_an_existing_run_folder_is_one_line_and_exit_2(tmp_path, capsys, prog):
    with RunDir.create(tmp_path / "run", {"preset": "cpu-strategy"}) as run:
        run.append_metrics({"iteration": 0})
    config = (run.path / "config.json").read_text()
    assert MAINS[prog](["--run-dir", str(run.path)]) == 2
    assert f"{run.path} already holds a run; pass --resume {run.path} or choose another --run-dir." in _one_line_error(capsys, prog)
    assert (run.path / "config.json").read_text() == config, "the existing run's config is kept"


@pytest.mark.parametrize("prog", sorted(MAINS))
def test_a_bad_resume_is_one_line_and_exit_2(tmp_path, capsys, prog):
    missing = tmp_path / "typo"
    assert MAINS[prog](["--resume", str(missing)]) == 2
    assert f"{missing} is not a run folder (no such folder)" in _one_line_error(capsys, prog)
    assert not missing.exists()


def test_resume_takes_no_other_options(tmp_path, capsys):
    with RunDir.create(tmp_path / "run", {"preset": "cpu-strategy"}):
        pass
    assert sead_train.main(["--resume", str(tmp_path / "run"), "--iterations", "10"]) == 2
    assert "--resume continues with the config saved in" in _one_line_error(capsys, "python -m trainers.sead")
    assert json.loads((tmp_path / "run" / "config.json").read_text()) == {"preset": "cpu-strategy"}


def test_flag_values_are_checked_by_the_parser(capsys):
    for argv in (["--plots", "maybe"], ["--learning-rate", "nan"], ["--user-backend", "[1]"]):
        with pytest.raises(SystemExit) as exit_:
            sead_train.main(argv)
        assert exit_.value.code == 2 and "invalid" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [
    ("--user-backend", "[" * 20_000 + "]" * 20_000),
    ("--user-backend", '{"a": ' * 20_000 + "1" + "}" * 20_000),
    ("--user-backend", '{"model": ' + "9" * 5_000 + "}"),
], ids=["deep-list", "deep-object", "5000-digits"])
def test_a_json_flag_nested_deep_is_the_parsers_error_line_not_a_traceback(capsys, flag, value):
    with pytest.raises(SystemExit) as exit_:
        sead_train.main([flag, value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err and "RecursionError" not in err
    assert err.splitlines()[-1].startswith(f"python -m trainers.sead: error: argument {flag}: the value ")
    assert len(err.splitlines()[-1]) < 300


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["--workers", "0"], "--workers must be >= 1, got 0"),
        (["--eval-episodes", "0"], "--eval-episodes must be >= 1, got 0"),
    ],
)
def test_ablation_config_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    assert ablate.main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert message in _one_line_error(capsys, "python -m trainers.sead.ablate")
    assert not (tmp_path / "out").exists()


def test_ablation_refuses_a_folder_started_with_other_settings(tmp_path, capsys):
    args = ["--seeds", "1", "--iterations", "1", "--eval-episodes", "4", "--out", str(tmp_path), "--workers", "1"]
    assert ablate.main(args) == 0
    capsys.readouterr()
    assert ablate.main([*args[:2], "--iterations", "2", *args[4:]]) == 2
    error = _one_line_error(capsys, "python -m trainers.sead.ablate")
    assert "holds a run with other settings (iterations 1 there, 2 now); pass the --iterations and --eval-episodes it was started with" in error


def test_the_module_entry_point_exits_2_with_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "trainers.sead", "--batch-size", "0", "--run-dir", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and done.stderr == "python -m trainers.sead: error: batch_size must be >= 1, got 0.\n"
    assert not (tmp_path / "run").exists()
