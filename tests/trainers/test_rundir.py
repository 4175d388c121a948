"""Run folders under damage: torn last lines are cut on resume and replayed, damaged records are
skipped when read, every corrupt state file is named with its field and fix, a second process is
locked out, and a wrong --resume path creates nothing."""

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dialogue_gym.errors import DialogueGymError
from trainers.common import RunDir, RunFolderError
from trainers.common.rundir import LOCK_FILE
from trainers.sead import train as sead_train
from trainers.sead.config import build_config

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(iterations=2, batch_size=4, eval_episodes=0, plots=False, max_agent_turns=4)


class Crash(Exception):
    """Stands for the process dying in the middle of a write."""


def _trajectory(seed: int):
    from dialogue_gym.types import Trajectory

    return Trajectory(scenario="SEAD-Outbound-v0", seed=seed, profile={"state": [1, 1, 1]})


def _records(folder: Path) -> list[tuple[int, int]]:
    return [(json.loads(line)["iteration"], json.loads(line)["episode"]) for line in (folder / "trajectories.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A finished two-iteration SEAD run."""
    return sead_train.train(build_config(run_dir=str(tmp_path_factory.mktemp("reference") / "run"), **SMALL))


@pytest.fixture
def committed(reference, tmp_path):
    """A copy of ``reference`` whose config asks for one more iteration: resuming it plays iteration 2."""
    folder = tmp_path / "run"
    shutil.copytree(reference.path, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "run_dir": str(folder), "iterations": 3}))
    return folder


def test_a_torn_last_line_is_cut_on_resume_logged_and_its_episode_replayed(reference, tmp_path, monkeypatch, caplog):
    real_append, appended = RunDir.append_trajectories, []

    def dying_append(self, trajectories, iteration):
        pairs = list(trajectories)
        if len(appended) == 5:  # iteration 1: write half of the record, then die
            line = json.dumps({"iteration": iteration, "episode": pairs[0][0], **pairs[0][1].to_dict()})
            with open(self.trajectories_path, "a", encoding="utf-8") as handle:
                handle.write(line[: len(line) // 2])
            raise Crash()
        appended.append(pairs)
        real_append(self, pairs, iteration)

    config = build_config(run_dir=str(tmp_path / "torn"), **SMALL)
    monkeypatch.setattr(RunDir, "append_trajectories", dying_append)
    with pytest.raises(Crash):
        sead_train.train(config)
    monkeypatch.setattr(RunDir, "append_trajectories", real_append)
    path = tmp_path / "torn" / "trajectories.jsonl"
    whole = len(path.read_bytes().rsplit(b"\n", 1)[0]) + 1
    assert not path.read_bytes().endswith(b"\n")

    with caplog.at_level(logging.WARNING, logger="trainers.common.rundir"):
        sead_train.train(config, resume=True)
    assert f"{path}: removed a torn last record" in caplog.text and f"from byte offset {whole}" in caplog.text
    assert sorted(_records(tmp_path / "torn")) == [(i, e) for i in range(2) for e in range(4)], "none lost, none twice"
    assert path.read_bytes()[:whole] == reference.trajectories_path.read_bytes()[:whole]
    assert RunDir(tmp_path / "torn").read_trajectories() == reference.read_trajectories(), "the torn episode was played again, identically"


def test_torn_tails_of_both_jsonl_files_are_cut_and_appends_start_on_a_fresh_line(tmp_path, caplog):
    with RunDir.create(tmp_path / "run", {}) as run:
        run.append_trajectories([(0, _trajectory(0))], iteration=0)
        run.append_metrics({"iteration": 0, "x": 1})
    whole = run.trajectories_path.stat().st_size
    with open(run.trajectories_path, "ab") as handle:
        handle.write(b'{"iteration": 0, "episode": 1, "scenario": "SEA')
    with open(run.path / "metrics.jsonl", "ab") as handle:
        handle.write(b"\x00\x00\x00")  # what a power cut can leave
    with caplog.at_level(logging.WARNING, logger="trainers.common.rundir"), RunDir.resume(run.path) as resumed:
        resumed.append_trajectories([(1, _trajectory(1))], iteration=0)
        resumed.append_metrics({"iteration": 1, "x": 2})
    assert f"byte offset {whole}" in caplog.text and "metrics.jsonl: removed a torn last record (3 bytes" in caplog.text
    assert sorted(run.completed_episodes(0)) == [0, 1]
    assert [row["x"] for row in run.read_metrics()] == [1, 2]


def test_reading_skips_damaged_records_with_a_warning_naming_line_and_offset(tmp_path, caplog):
    good = json.dumps({"iteration": 0, "episode": 0, **_trajectory(0).to_dict()}).encode()
    lines = [
        good,
        b'{"iteration": 0, "episo' + good,  # a record appended onto a torn one (what today's code leaves)
        b"[" * 100_000,
        b"1" * 5_000,
        b'["a", "list"]',
        json.dumps({"iteration": "0", "episode": 1, **_trajectory(1).to_dict()}).encode(),
        json.dumps({"iteration": 0, "episode": 2, "scenario": "x"}).encode(),  # no profile
        b'{"iteration": 0, "episode": 4, "scenario": "\xff\xfe"}',  # not UTF-8
        json.dumps({"iteration": 0, "episode": 3, **_trajectory(3).to_dict()}).encode(),
    ]
    (tmp_path / "trajectories.jsonl").write_bytes(b"\n".join(lines) + b"\n" + good[:40])
    with caplog.at_level(logging.WARNING, logger="trainers.common.rundir"):
        run = RunDir(tmp_path)
        assert sorted(run.completed_episodes(0)) == [0, 3]
        assert [t.seed for t in run.read_trajectories()] == [0, 3]
    offset = len(good) + 1
    assert f"line 2 (byte offset {offset}): skipped a damaged record" in caplog.text
    for number in range(3, 9):
        assert f"line {number} (byte offset" in caplog.text
    assert "line 10" not in caplog.text, "the torn tail is not a damaged record: its writer may still be writing"


def _progress(folder: Path) -> dict:
    return json.loads((folder / "state" / "progress.json").read_text())


def _counts_of_length(length):
    def corrupt(progress):
        progress["controller"]["counts"] = progress["controller"]["counts"][:length]
        return progress

    return corrupt


@pytest.mark.parametrize(
    "content, message",
    [
        ("", r"progress\.json is not valid JSON \(Expecting value at line 1 column 1\); the trainer alone writes this file"),
        ('{"iteration": 1, "check', r"progress\.json is not valid JSON \(Unterminated string"),
        ("[" * 100_000, r"progress\.json is not valid JSON \(RecursionError"),
        ("[1, 2]", r"progress\.json must hold a JSON object, got list"),
        (lambda p: {k: v for k, v in p.items() if k != "checkpoint"}, r"progress\.json: field 'checkpoint' is missing; .*another --run-dir"),
        (lambda p: {**p, "iteration": "1"}, r"progress\.json: field 'iteration' must be int, got '1' \(str\)"),
        (lambda p: {**p, "iteration": True}, r"progress\.json: field 'iteration' must be int, got True \(bool\)"),
        (lambda p: {**p, "iteration": -5}, r"progress\.json: field 'iteration' must be >= 0, got -5"),
        (lambda p: {**p, "checkpoint": "checkpoints/iter_0042"}, r"progress\.json: field 'checkpoint' names checkpoints/iter_0042, which does not exist"),
        (lambda p: {**p, "checkpoint": "../../../etc"}, r"progress\.json: field 'checkpoint' must name a checkpoint inside the run folder"),
        (_counts_of_length(119), r"progress\.json: field 'controller': load_state_dict: field 'counts' must hold 120 numbers \(one per initial state\), got 119"),
        (lambda p: {**p, "controller": {**p["controller"], "rng": [3, [1, 2], None]}}, r"progress\.json: field 'controller': load_state_dict: field 'rng' is not a random\.Random state"),
    ],
)
def test_a_corrupt_progress_file_is_named_with_its_field_and_fix(committed, content, message):
    path = committed / "state" / "progress.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content(_progress(committed))))
    config = build_config(**json.loads((committed / "config.json").read_text()))
    with pytest.raises(RunFolderError, match=message):
        sead_train.train(config, resume=True)


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda plan: "{not json", r"plan\.json is not valid JSON .*; delete it and resume: the plan is drawn again, identically"),
        (lambda plan: {**plan, "profiles": plan["profiles"][:1]}, r"plan\.json: field 'profiles' must hold 4 profile objects \(batch_size\), got 1 entries; delete it"),
        (lambda plan: {**plan, "controller": {**plan["controller"], "successes": [2.0] * 120}}, r"plan\.json: field 'controller': load_state_dict: field 'successes' exceeds 'counts' at state 0 \(2 successes of 0 dialogues\)"),
    ],
)
def test_a_corrupt_plan_is_named_and_deleting_it_resumes_identically(committed, monkeypatch, corrupt, message):
    config = build_config(**json.loads((committed / "config.json").read_text()))
    monkeypatch.setattr(sead_train, "play", crash)
    with pytest.raises(Crash):  # draw iteration 2's plan, then stop
        sead_train.train(config, resume=True)
    monkeypatch.undo()
    path = committed / "state" / "plan.json"
    plan = json.loads(path.read_text())
    assert plan["iteration"] == 2
    broken = corrupt(plan)
    path.write_text(broken if isinstance(broken, str) else json.dumps(broken))
    with pytest.raises(RunFolderError, match=message):
        sead_train.train(config, resume=True)
    path.unlink()
    sead_train.train(config, resume=True)
    assert json.loads(path.read_text()) == plan, "the plan is drawn again identically"


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"preset": "cpu-strategy", "seed": ', r"config\.json is not valid JSON \(Expecting value"),
        ('"cpu-strategy"', r"config\.json must hold a JSON object, got str"),
        ('{"seed": "zero"}', r"config\.json: seed must be int \(finite if a number\), got 'zero' \(str\)\. Fix that field"),
        ('{"batch_size": 0}', r"config\.json: batch_size must be >= 1, got 0\. Fix that field"),
        ('{"iters": 3}', r"config\.json: Unknown trainer option\(s\) \['iters'\]"),
        ('{"learning_rate": NaN}', r"config\.json: learning_rate must be float \(finite if a number\), got nan"),
    ],
)
def test_a_corrupt_config_is_named_by_the_resume_cli(tmp_path, capsys, content, message):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(content)
    assert sead_train.main(["--resume", str(folder)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("python -m trainers.sead: error: ")
    assert __import__("re").search(message, error), error
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"], "nothing written"


def test_a_second_process_is_locked_out_while_the_run_lives(tmp_path):
    run = RunDir.create(tmp_path / "run", {"preset": "cpu-strategy", "run_dir": str(tmp_path / "run")})
    assert (run.path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    pattern = rf"{run.path} is in use by another trainer process \(PID {os.getpid()}, lock .*run\.lock\); wait for it"
    with pytest.raises(RunFolderError, match=pattern):
        RunDir.resume(run.path)  # a second open of the lock file conflicts even in this process
    with pytest.raises(RunFolderError, match=pattern):
        RunDir.create(run.path, {})
    other = subprocess.run(
        [sys.executable, "-m", "trainers.sead", "--resume", str(run.path)], cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert other.returncode == 2 and f"in use by another trainer process (PID {os.getpid()}" in other.stderr
    assert other.stderr.count("\n") == 1 and "Traceback" not in other.stderr
    run.close()
    RunDir.resume(run.path).close()


def crash(*args):
    raise Crash()


def test_the_lock_is_released_when_training_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(sead_train, "play", crash)
    config = build_config(run_dir=str(tmp_path / "run"), **SMALL)
    with pytest.raises(Crash):
        sead_train.train(config)
    RunDir.resume(tmp_path / "run").close()


@pytest.mark.parametrize("make", ["missing", "empty", "file"])
def test_resume_on_a_wrong_path_creates_nothing_and_says_so_in_one_line(tmp_path, capsys, make):
    target = tmp_path / "somewhere" / "run"
    if make == "empty":
        target.mkdir(parents=True)
    elif make == "file":
        target.parent.mkdir()
        target.write_text("not a folder")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    assert sead_train.main(["--resume", str(target)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{target} is not a run folder" in error
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    with pytest.raises(RunFolderError, match="is not a run folder"):
        RunDir.resume(target)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_run_folder_errors_are_library_errors():
    assert issubclass(RunFolderError, DialogueGymError)
