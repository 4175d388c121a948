"""The jointly trained SEAD owner (trainers/sead/joint_user.py) and the trainer's user_training="joint"."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.sead.data import DEFAULT_BEHAVIORS_FILE, load_behaviors
from dialogue_gym.scenarios.sead.parsing import parse_user_output, render_user_output
from dialogue_gym.scenarios.sead.scripted_user import COMPLETED, ScriptedUser
from dialogue_gym.scenarios.sead.state import UserState
from dialogue_gym.types import Outcome
from trainers.common import RunDir
from trainers.sead.config import build_config
from trainers.sead.joint_user import FEATURES, HANG_UP_LINE, MOVES, JointUser, apply_move, collapse_shares
from trainers.sead.train import train
from trainer_runs import kill_after, start_trainer, trajectory_lines

SCRIPTED = ScriptedUser(load_behaviors(DEFAULT_BEHAVIORS_FILE))


def test_the_untrained_owner_plays_the_scripted_owner_95_per_cent_of_turns():
    # bias logit of play = ln(4 * 0.95 / 0.05) = ln 76, the other four 0: p(play) = 76 / (76 + 4)
    probabilities = JointUser(SCRIPTED, 1.0).probabilities([FEATURES.index("bias")])
    assert probabilities[MOVES.index("play")] == pytest.approx(0.95)
    assert probabilities[MOVES.index("hang_up")] == pytest.approx(0.0125)


def test_one_update_by_hand():
    user = JointUser(SCRIPTED, 1.0, weights=np.zeros((len(FEATURES), len(MOVES))))
    records = [{"steps": [[[0, 1], 0]], "moves": ["play"]}, {"steps": [[[0], 3]], "moves": ["hang_up"]}]
    user.update(records, [1.0, -1.0])
    # uniform p = 0.2 on 5 moves; dialogue 1 (A = +1) moved play with features 0 and 1, dialogue 2 (A = -1)
    # moved hang_up with feature 0; gradient (onehot - p) * A summed, then / 2 dialogues.
    assert user.weights[0] == pytest.approx([0.5, 0.0, 0.0, -0.5, 0.0])
    assert user.weights[1] == pytest.approx([0.4, -0.1, -0.1, -0.1, -0.1])
    assert not user.weights[2:].any()


def _scripted_record(state, status=0, reply="Hmm, why would I need this?"):
    return render_user_output(reply, state, status, "open concerns: []")


@pytest.mark.parametrize(
    "move, scripted_status, expected_state, expected_status",
    [
        ("play", 0, (1, 2, 3), 0),
        ("cool", 0, (0, 1, 2), 0),
        ("warm", 0, (2, 3, 4), 0),
        ("hang_up", 0, (1, 2, 3), -1),
        ("accept", 0, (3, 2, 3), 1),  # cooperation raised to the game's minimum for acting
    ],
)
def test_each_move_rewrites_the_scripted_record(move, scripted_status, expected_state, expected_status):
    record = apply_move(move, _scripted_record((1, 2, 3), scripted_status), UserState(1, 2, 3))
    parsed = parse_user_output(record, UserState(1, 2, 3))
    assert (tuple(parsed.state), parsed.status) == (expected_state, expected_status) and parsed.problem is None
    expected_reply = {"hang_up": f"Hmm, why would I need this? {HANG_UP_LINE}", "accept": COMPLETED}.get(move, "Hmm, why would I need this?")
    assert parsed.reply == expected_reply


def test_a_colder_owner_at_the_minimum_does_not_complete_and_states_stay_in_range():
    done = _scripted_record((3, 0, 0), status=1, reply=COMPLETED)
    parsed = parse_user_output(apply_move("cool", done, UserState(3, 0, 0)), UserState(3, 0, 0))
    assert (tuple(parsed.state), parsed.status) == ((2, 0, 0), 0)
    top = _scripted_record((4, 3, 5))
    assert tuple(parse_user_output(apply_move("warm", top, UserState(4, 3, 5)), UserState(4, 3, 5)).state) == (4, 3, 5)


def test_collapse_shares_by_hand():
    records = [{"moves": ["play", "hang_up"]}, {"moves": ["cool", "play"]}, {"moves": ["accept"]}, {"moves": ["play"]}]
    assert collapse_shares(records) == {"user/hang_up_share": 0.25, "user/accept_share": 0.25, "user/deviated_share": 0.75}
    assert collapse_shares([{"moves": ["hang_up"]}]) == {"user/hang_up_share": 1.0, "user/accept_share": 0.0, "user/deviated_share": 1.0}
    assert collapse_shares([]) == {"user/hang_up_share": 0.0, "user/accept_share": 0.0, "user/deviated_share": 0.0}


def test_save_and_load(tmp_path):
    user = JointUser(SCRIPTED, 0.7)
    user.weights[3, 2] = -1.5
    user.save(tmp_path / "user")
    loaded = JointUser.load(tmp_path / "user", SCRIPTED)
    assert loaded.learning_rate == 0.7 and np.array_equal(loaded.weights, user.weights)
    with pytest.raises(ConfigError, match="holds no joint_user.json; pass the folder JointUser.save wrote"):
        JointUser.load(tmp_path, SCRIPTED)
    with pytest.raises(ConfigError, match=r"weights must have shape \(\d+, 5\), got \(2, 2\)"):
        JointUser(SCRIPTED, 1.0, weights=np.zeros((2, 2)))
    with pytest.raises(ConfigError, match="learning_rate must be > 0, got 0"):
        JointUser(SCRIPTED, 0)


def test_config_errors():
    with pytest.raises(ConfigError, match="user_training='adversarial'; use fixed or joint"):
        build_config(user_training="adversarial")
    with pytest.raises(ConfigError, match="user_training='joint' trains the scripted owner, got user='llm'; pass user=scripted"):
        build_config(user_training="joint", user="llm", user_backend={"name": "echo"})


def _short(tmp_path, name, user_training):
    return build_config(
        "cpu-strategy", iterations=2, batch_size=30, eval_episodes=0, plots=False, before_and_baselines=False,
        user_training=user_training, run_dir=str(tmp_path / name),
    )


def test_joint_training_applies_the_owners_moves_and_trains_it(tmp_path):
    joint = train(_short(tmp_path, "joint", "joint"))
    fixed = train(_short(tmp_path, "fixed", "fixed"))
    trajectories = joint.read_trajectories()
    moves = [t.meta["user_record"]["moves"] for t in trajectories]
    assert all(len(m) == sum(turn.role == "user" for turn in t.turns) for m, t in zip(moves, trajectories))
    ended_by = {m[-1] for m in moves if m}
    assert ended_by - {"play"}, "60 dialogues at p(play) = 0.95 a turn: some end on a deviation"
    for record, trajectory in zip(moves, trajectories):
        if record and record[-1] == "hang_up":
            assert trajectory.outcome is Outcome.HANGUP and trajectory.turns[-1].text.endswith(HANG_UP_LINE)
        if record and record[-1] == "accept":
            assert trajectory.outcome is Outcome.SUCCESS and trajectory.turns[-1].text == COMPLETED
    assert [t.outcome for t in trajectories] != [t.outcome for t in fixed.read_trajectories()]
    assert all("user_record" not in t.meta for t in fixed.read_trajectories())
    progress = joint.load_state("progress")
    assert progress["user_checkpoint"] == f"{progress['checkpoint']}/user"
    trained = JointUser.load(joint.path / progress["user_checkpoint"], SCRIPTED)
    assert not np.allclose(trained.weights, JointUser(SCRIPTED, 2.0).weights), "the owner was updated"
    rows = joint.read_metrics()
    assert all(0 <= row["user/hang_up_share"] <= 1 and not math.isnan(row["user/entropy"]) for row in rows)
    assert "user/hang_up_share" not in fixed.read_metrics()[0]


@pytest.mark.parametrize("kill_after_lines", [40, 100])
def test_a_joint_run_resumes_after_kill_exactly(tmp_path, kill_after_lines):
    common = ["--iterations", "5", "--batch-size", "30", "--eval-episodes", "0", "--plots", "false", "--user-training", "joint"]
    reference = tmp_path / "reference"
    assert start_trainer("trainers.sead", [*common, "--run-dir", str(reference)]).wait(timeout=120) == 0
    killed = tmp_path / "killed"
    process = start_trainer("trainers.sead", [*common, "--run-dir", str(killed)])
    kill_after(process, killed, kill_after_lines)
    assert trajectory_lines(killed) < 5 * 30, "the run finished before it could be killed"
    assert start_trainer("trainers.sead", ["--resume", str(killed)]).wait(timeout=120) == 0
    done, expected = RunDir(killed), RunDir(reference)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "time/seconds"} for r in rows]  # noqa: E731
    assert strip(done.read_metrics()) == strip(expected.read_metrics())
    progress = done.load_state("progress")
    assert progress == expected.load_state("progress")
    user = json.loads((killed / progress["user_checkpoint"] / "joint_user.json").read_text())
    assert user == json.loads((reference / progress["user_checkpoint"] / "joint_user.json").read_text())
    records = [json.loads(line) for line in (killed / "trajectories.jsonl").read_text().splitlines()]
    assert sorted((r["iteration"], r["episode"]) for r in records) == [(i, e) for i in range(5) for e in range(30)]
