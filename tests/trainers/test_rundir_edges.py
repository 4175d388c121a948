"""Run folder behaviours pinned by hand (issue 43, item 6: rundir.py's surviving mutants): the lock
file's mode and PID, which leftovers make a folder "hold a run", checkpoint names that point outside
the folder, the first record per episode, strict JSON records, and the metrics cut after a crash."""

from __future__ import annotations

import json
import math
import os
import stat

import pytest

from dialogue_gym.types import Trajectory
from trainers.common import RunDir, RunFolderError
from trainers.common.rundir import LOCK_FILE


def _trajectory(seed: int, **rewards: float) -> Trajectory:
    return Trajectory(scenario="SEAD-Outbound-v0", seed=seed, profile={"state": [1, 1, 1]}, rewards=dict(rewards))


def test_the_lock_file_is_readable_by_all_and_executable_by_none(tmp_path):
    previous = os.umask(0)  # the mode passed to open() shows as is
    try:
        run = RunDir.create(tmp_path / "run", {})
    finally:
        os.umask(previous)
    try:
        assert stat.S_IMODE((run.path / LOCK_FILE).stat().st_mode) == 0o644
    finally:
        run.close()


def test_a_lock_held_elsewhere_names_the_pid_written_in_the_lock_file(tmp_path):
    run = RunDir.create(tmp_path / "run", {})
    try:
        (run.path / LOCK_FILE).write_text("4194304\n")  # the largest PID Linux hands out
        with pytest.raises(RunFolderError, match=r"\(PID 4194304, lock "):
            RunDir.resume(run.path)
        (run.path / LOCK_FILE).write_text("")
        with pytest.raises(RunFolderError, match=r"\(PID unknown, lock "):
            RunDir.resume(run.path)
    finally:
        run.close()


def test_create_accepts_an_existing_folder_with_empty_subfolders(tmp_path):
    folder = tmp_path / "run"
    for sub in ("state", "checkpoints", "plots"):
        (folder / sub).mkdir(parents=True)
    with RunDir.create(folder, {"a": 1}) as run:
        assert run.read_config() == {"a": 1}
        assert not run.holds_run()


@pytest.mark.parametrize("leftover", ["trajectories.jsonl", "metrics.jsonl", "state/progress.json"])
def test_create_refuses_a_folder_with_records_or_state(tmp_path, leftover):
    folder = tmp_path / "run"
    (folder / "state").mkdir(parents=True)
    (folder / leftover).write_text("")
    assert RunDir(folder).holds_run()
    with pytest.raises(RunFolderError, match="already holds a run; pass --resume"):
        RunDir.create(folder, {})
    assert not (folder / "config.json").exists()


def test_a_state_folder_without_json_holds_no_run(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "notes.txt").write_text("x")
    assert not RunDir(tmp_path).holds_run()


@pytest.mark.parametrize("name", ["", 5, None, "../outside", "checkpoints/../../outside"])
def test_a_checkpoint_name_must_be_a_path_inside_the_run_folder(tmp_path, name):
    run = RunDir(tmp_path / "run")
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    with pytest.raises(RunFolderError, match=r"progress\.json: field 'checkpoint' must name a checkpoint inside the run folder"):
        run.checkpoint_path("progress", "checkpoint", name)


def test_an_absolute_checkpoint_name_is_refused_even_when_it_exists(tmp_path):
    run = RunDir(tmp_path / "run")
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(RunFolderError, match="must name a checkpoint inside the run folder"):
        run.checkpoint_path("progress", "checkpoint", str(tmp_path / "run" / "checkpoints"))


def test_a_checkpoint_inside_the_folder_is_returned(tmp_path):
    run = RunDir(tmp_path / "run")
    (tmp_path / "run" / "checkpoints" / "policy-3").mkdir(parents=True)
    assert run.checkpoint_path("progress", "checkpoint", "checkpoints/policy-3") == tmp_path / "run" / "checkpoints" / "policy-3"


def test_read_trajectories_keeps_the_first_record_per_episode_up_to_an_iteration(tmp_path):
    with RunDir.create(tmp_path / "run", {}) as run:
        run.append_trajectories([(0, _trajectory(10)), (1, _trajectory(11))], iteration=0)
        run.append_trajectories([(0, _trajectory(12))], iteration=0)  # a replayed episode: the first record counts
        run.append_trajectories([(0, _trajectory(20)), (1, _trajectory(21))], iteration=1)
        run.append_trajectories([(0, _trajectory(30))], iteration=2)
        assert [t.seed for t in run.read_trajectories()] == [10, 11, 20, 21, 30]
        assert [t.seed for t in run.read_trajectories(up_to_iteration=1)] == [10, 11, 20, 21]
        assert [t.seed for t in run.read_trajectories(up_to_iteration=0)] == [10, 11]
        assert {e: t.seed for e, t in run.completed_episodes(0).items()} == {0: 10, 1: 11}


def test_a_trajectory_with_a_nan_reward_is_refused_not_written_as_invalid_json(tmp_path):
    with RunDir.create(tmp_path / "run", {}) as run:
        with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
            run.append_trajectories([(0, _trajectory(1, agent=math.nan))], iteration=0)
        text = run.trajectories_path.read_text() if run.trajectories_path.exists() else ""
        assert "NaN" not in text


def test_truncate_metrics_after_keeps_rows_up_to_and_including_the_iteration(tmp_path):
    with RunDir.create(tmp_path / "run", {}) as run:
        for iteration in range(4):
            run.append_metrics({"iteration": iteration, "loss": iteration / 2})
        with open(run.path / "metrics.jsonl", "a") as handle:
            handle.write(json.dumps({"iteration": "1", "loss": 9.0}) + "\n")  # not an int: dropped
            handle.write(json.dumps({"loss": 9.0}) + "\n")  # no iteration: dropped
        run.truncate_metrics_after(1)
        assert run.read_metrics() == [{"iteration": 0, "loss": 0.0}, {"iteration": 1, "loss": 0.5}]


def test_truncate_metrics_after_creates_no_file_in_a_run_without_metrics(tmp_path):
    with RunDir.create(tmp_path / "run", {}) as run:
        run.truncate_metrics_after(3)
        assert not (run.path / "metrics.jsonl").exists()


def test_create_makes_the_missing_parent_folders(tmp_path):
    with RunDir.create(tmp_path / "runs" / "sead" / "seed0", {"seed": 0}) as run:
        assert run.read_config() == {"seed": 0} and (run.path / "state").is_dir()
