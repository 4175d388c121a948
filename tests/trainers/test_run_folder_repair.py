"""No run folder needs hand repair (issue 43, item 1): files are written whole or not at all, a full
disk is a typed error that leaves nothing partial, a cut-short TRL checkpoint is removed with one line,
every corrupt file is one line naming it and the fix (exit 2), and a run killed in any phase, or stopped
by a full disk, resumes to the same bytes as an uninterrupted one (the SFT loss included)."""

import contextlib
import csv
import errno
import io
import json
import logging
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from trainers.common import DiskFullError, RunDir, RunFolderError, atomic
from trainers.common.atomic import folder_problem, latest_complete_checkpoint, saved_folder, write_text
from trainers.sead import train as sead_train
from trainers.sead.config import build_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trainer_runs import start_trainer  # noqa: E402

SMALL = dict(iterations=2, batch_size=4, eval_episodes=0, plots=False, max_agent_turns=4)


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


# -- writes: whole or not at all ---------------------------------------------------------------------------
def test_a_full_disk_keeps_the_old_file_leaves_no_temporary_and_says_the_disk_is_full(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    write_text(path, '{"old": 1}')
    monkeypatch.setattr(atomic.os, "fsync", _no_space)
    with pytest.raises(DiskFullError, match=f"The disk is full: writing {path} failed .*Free space on that disk"):
        write_text(path, '{"new": 2}')
    assert path.read_text() == '{"old": 1}' and sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_saved_folder_replaces_the_old_one_whole_or_not_at_all(tmp_path, monkeypatch):
    folder = tmp_path / "iter_0001"
    saved_folder(folder, lambda out: (out / "a.json").write_text("1"))
    saved_folder(folder, lambda out: (out / "b.json").write_text("2"))
    assert sorted(p.name for p in folder.iterdir()) == ["b.json"]

    def half_then_full(out):
        (out / "c.json").write_text("3")
        _no_space()

    with pytest.raises(DiskFullError):
        saved_folder(folder, half_then_full)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iter_0001"] and sorted(p.name for p in folder.iterdir()) == ["b.json"]


def test_an_unexplained_write_failure_on_a_full_disk_is_disk_full(tmp_path, monkeypatch):
    """torch.save says only ``unexpected pos`` when the disk fills; the free space decides."""
    error = RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")
    assert atomic.disk_full_error(tmp_path / "optimizer.pt", error) is None
    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10, 10, 0))
    full = atomic.disk_full_error(tmp_path / "optimizer.pt", error)
    assert isinstance(full, DiskFullError) and "The disk is full" in str(full) and "unexpected pos" in str(full)
    assert atomic.disk_full_error(tmp_path / "x", KeyboardInterrupt()) is None


def test_a_full_disk_during_a_strategy_run_exits_2_in_one_line_and_resumes_to_the_same_files(tmp_path, monkeypatch, capsys):
    reference = sead_train.train(build_config(run_dir=str(tmp_path / "reference"), **SMALL)).path
    folder = tmp_path / "full"
    real_fsync, calls = atomic.os.fsync, []

    def fill_up(descriptor):  # the disk fills while the first iteration's checkpoint is written
        calls.append(descriptor)
        if len(calls) >= 3:
            _no_space()
        real_fsync(descriptor)

    monkeypatch.setattr(atomic.os, "fsync", fill_up)
    args = ["--iterations", "2", "--batch-size", "4", "--eval-episodes", "0", "--plots", "false", "--max-agent-turns", "4"]
    assert sead_train.main([*args, "--run-dir", str(folder)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(err) == 1 and err[0].startswith("python -m trainers.sead: error: The disk is full: writing ") and "--resume" in err[0]
    assert not [p for p in folder.rglob("*") if p.name.endswith((".tmp", ".partial", ".old"))]
    monkeypatch.setattr(atomic.os, "fsync", real_fsync)
    assert sead_train.main(["--resume", str(folder)]) == 0
    for name in ("trajectories.jsonl", "state/progress.json", "checkpoints/iter_0001/strategy.json"):
        assert (folder / name).read_bytes() == (reference / name).read_bytes(), name
    rows = [{k: v for k, v in json.loads(line).items() if k != "time/seconds"} for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert rows == [{k: v for k, v in json.loads(line).items() if k != "time/seconds"} for line in (reference / "metrics.jsonl").read_text().splitlines()]


# -- reads: a damaged file is one line naming it and the fix ----------------------------------------------------
@pytest.mark.parametrize("name", ["checkpoints/iter_0001/strategy.json", "state/progress.json", "metrics.csv"])
def test_a_truncated_file_of_a_strategy_run_is_one_line_and_exit_2(tmp_path, capsys, name):
    folder = sead_train.train(build_config(run_dir=str(tmp_path / "run"), **{**SMALL, "iterations": 2})).path
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "iterations": 3}))
    _truncate(folder / name)
    code = sead_train.main(["--resume", str(folder)])
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    if name == "metrics.csv":  # rewritten from metrics.jsonl, never read
        assert code == 0
        return
    assert code == 2 and len(err) == 1 and str(folder / name) in err[0] and ("restore" in err[0] or "start again" in err[0])


CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def test_safetensors_torch_json_and_template_files_are_checked_whole(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    folder = tmp_path / "model"
    folder.mkdir()
    save_file({"w": torch.ones(64)}, folder / "model.safetensors")
    torch.save({"step": torch.ones(64)}, folder / "optimizer.pt")
    (folder / "config.json").write_text('{"a": 1}')
    (folder / "chat_template.jinja").write_text(CHATML)
    assert folder_problem(folder) is None
    for name, says in (
        ("model.safetensors", "is truncated or damaged"), ("optimizer.pt", "not a whole torch archive"), ("config.json", "not valid JSON"),
        ("chat_template.jinja", "not a whole Jinja template"),
    ):
        broken = tmp_path / f"broken-{name}"
        shutil.copytree(folder, broken)
        _truncate(broken / name)
        assert f"{broken / name} " in folder_problem(broken) and says in folder_problem(broken)
    (folder / "model.safetensors").unlink()
    assert "has no weights file" in folder_problem(folder)


def test_cut_short_trl_checkpoints_are_removed_with_one_line_each(tmp_path, caplog):
    for step in (2, 4, 10):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-10" / "trainer_state.json").unlink()
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text("{")
    with caplog.at_level(logging.WARNING, logger="trainers.common.atomic"):
        assert latest_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2"]
    lines = caplog.text.strip().splitlines()
    assert len(lines) == 2 and "checkpoint-10 has no trainer_state.json" in lines[0] and "resuming from checkpoint-2" in lines[1]


def test_a_checkpoint_the_progress_record_names_is_checked_before_it_loads(tmp_path):
    folder = sead_train.train(build_config(run_dir=str(tmp_path / "run"), **SMALL)).path
    (folder / "checkpoints/iter_0001/strategy.json").write_text('{"features": ')
    with pytest.raises(RunFolderError, match=r"strategy.json is truncated or damaged .*state/progress.json names it \('checkpoint'\)"):
        RunDir(folder).checkpoint_path("progress", "checkpoint", "checkpoints/iter_0001")


# -- the LM pipeline: kill -9 in each phase, and a full disk while TRL saves: the same bytes after the resume ---------
LM_ARGS = [
    "--preset", "cpu-lm-scratch", "--sft-steps", "4", "--sft-episodes", "12", "--sft-batch-size", "4", "--dagger-rounds", "1",
    "--dagger-episodes", "4", "--dagger-steps", "2", "--iterations", "2", "--batch-size", "2", "--group-size", "2",
    "--eval-episodes", "4", "--max-agent-turns", "3", "--max-new-tokens", "8", "--plots", "false", "--threads", "1",
]
"""Every phase at its smallest: SFT (4 steps, a checkpoint each step), one DAgger round (2 steps), two
decision-point GRPO iterations, the held-out evaluations. ``--threads 1`` because the killed run and the
reference are separate processes: the probe may pick another thread count in each, and a CPU matrix
product summed over another split differs in the 7th digit (a resume keeps its run's count itself)."""


def _progress_iteration(folder: Path) -> int | None:
    path = folder / "state" / "progress.json"
    return json.loads(path.read_text())["iteration"] if path.exists() else None


KILL_IN = {
    # phase: (kill as soon as this holds, what the folder shows afterwards: the kill came inside that phase)
    "sft": (lambda f: (f / "checkpoints/sft/checkpoint-2/trainer_state.json").exists(), lambda f: not (f / "checkpoints/sft/model.safetensors").exists()),
    "dagger": (
        lambda f: (f / "checkpoints/sft_dagger_0/checkpoint-1/trainer_state.json").exists(),
        lambda f: (f / "checkpoints/sft/model.safetensors").exists() and not (f / "state/sft.json").exists(),
    ),
    "rl": (lambda f: _progress_iteration(f) == 0, lambda f: (f / "state/sft.json").exists() and _progress_iteration(f) == 0),
    "eval": (lambda f: _progress_iteration(f) == 1, lambda f: not (f / "state/eval_baseline.json").exists()),
}


def _kill_once(process, holds, timeout: float = 600) -> None:
    """SIGKILL ``process`` as soon as ``holds()``; fails when the process ended first or ``timeout`` passed."""
    deadline = time.time() + timeout
    while process.poll() is None and time.time() < deadline:
        with contextlib.suppress(OSError, ValueError, KeyError):  # a file the trainer is renaming into place
            if holds():
                break
        time.sleep(0.002)
    assert process.poll() is None, f"the trainer ended (exit {process.returncode}) before the kill point"
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL


def _files(folder: Path) -> dict[str, Path]:
    return {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "run.lock"}


def _without_time(path: Path) -> list:
    if path.suffix == ".csv":
        return [{k: v for k, v in row.items() if k != "time/seconds"} for row in csv.DictReader(io.StringIO(path.read_text()))]
    return [{k: v for k, v in json.loads(line).items() if k != "time/seconds"} for line in path.read_text().splitlines()]


WRITTEN_WHEN = re.compile(rb'"(started|finished|seconds|git_revision|git_dirty)": [^,\n]*')
"""A result's provenance fields that say when it was written, how long it took, and the checkout's commit
then (a commit made while the test runs moves it)."""


def _same_bytes(folder: Path, reference: Path) -> None:
    """The resumed run's folder holds the reference's files and each has the same bytes, but for
    ``run.lock`` (the PID), the metrics' ``time/seconds`` column, the order of the lines of TRL's model
    card (README.md: its tags come from a set, in an order that varies per process) and :data:`WRITTEN_WHEN`."""
    ours, theirs = _files(folder), _files(reference)
    assert sorted(ours) == sorted(theirs)
    for name, path in theirs.items():
        if name in ("metrics.jsonl", "metrics.csv"):
            assert _without_time(ours[name]) == _without_time(path), name
        elif path.name == "README.md":
            assert sorted(ours[name].read_text().splitlines()) == sorted(path.read_text().splitlines()), name
        else:
            assert WRITTEN_WHEN.sub(b"", ours[name].read_bytes()) == WRITTEN_WHEN.sub(b"", path.read_bytes()), name


@pytest.fixture(scope="module")
def lm_runs(tmp_path_factory):
    """The uninterrupted reference run, and the folder path every killed run reuses: the same path puts
    the same bytes into config.json and TRL's training_args.bin, which hold it."""
    pytest.importorskip("trl")
    base = tmp_path_factory.mktemp("lm")
    assert start_trainer("trainers.sead", [*LM_ARGS, "--run-dir", str(base / "run")]).wait(timeout=900) == 0
    (base / "run").rename(base / "reference")
    return base / "run", base / "reference"


@pytest.mark.slow
@pytest.mark.parametrize("phase", list(KILL_IN))
def test_a_kill_in_each_phase_resumes_to_the_same_bytes(lm_runs, phase):
    folder, reference = lm_runs
    shutil.rmtree(folder, ignore_errors=True)
    kill_point, inside = KILL_IN[phase]
    _kill_once(start_trainer("trainers.sead", [*LM_ARGS, "--run-dir", str(folder)]), lambda: kill_point(folder))
    assert inside(folder), f"killed inside {phase}"
    assert start_trainer("trainers.sead", ["--resume", str(folder)]).wait(timeout=900) == 0
    _same_bytes(folder, reference)
    sft = json.loads((folder / "state" / "sft.json").read_text())
    assert len(sft["sft/curve"]) == 4 and sft["sft/loss"] == sum(loss for _, loss in sft["sft/curve"]) / 4  # every step, not the resumed ones


@pytest.mark.slow
def test_a_full_disk_while_sft_saves_a_checkpoint_exits_2_and_resumes_to_the_same_bytes(lm_runs, monkeypatch, capsys):
    import torch

    folder, reference = lm_runs
    shutil.rmtree(folder, ignore_errors=True)
    real_save, saves = torch.save, []

    def full_at_the_third(obj, target, *args, **kwargs):  # torch says only "unexpected pos" when the disk fills
        saves.append(target)
        if len(saves) == 3:
            Path(target).write_bytes(b"PK\x03\x04 half")
            monkeypatch.setattr(atomic.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10, 10, 0))
            raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")
        return real_save(obj, target, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_at_the_third)
    previous = torch.get_num_threads()
    try:
        assert sead_train.main([*LM_ARGS, "--run-dir", str(folder)]) == 2
    finally:
        torch.set_num_threads(previous)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m trainers.sead: error: The disk is full: writing ") and "unexpected pos" in err
    assert not [p for p in folder.rglob("*") if p.name.endswith((".tmp", ".partial"))]
    assert all(folder_problem(c, ("trainer_state.json",)) is None for c in (folder / "checkpoints" / "sft").glob("checkpoint-*"))
    monkeypatch.undo()
    assert start_trainer("trainers.sead", ["--resume", str(folder)]).wait(timeout=900) == 0
    _same_bytes(folder, reference)
