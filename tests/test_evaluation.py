"""evaluate(out=...) writes strict JSON, and never a partial batch."""

import json
import math

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.errors import ScenarioError
from dialogue_gym.evaluation import evaluate, load_trajectories
from dialogue_gym.scenarios.sead.game import SeadGame


def test_trajectories_are_written_as_strict_json(tmp_path):
    out = tmp_path / "run.jsonl"
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 3, out=out, batch_size=2)
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        json.loads(line, parse_constant=lambda name: pytest.fail(f"bare {name} in the JSONL"))
    assert [t.to_dict() for t in load_trajectories(out)] == [t.to_dict() for t in trajectories]


def test_a_non_finite_number_is_refused_and_no_partial_batch_is_written(tmp_path, monkeypatch):
    recorded = SeadGame.trajectory

    def with_a_nan_in_the_second_episode(game):
        trajectory = recorded(game)
        if game.seed == 1:
            trajectory.reward_terms["agent/probe"] = math.nan
        return trajectory

    monkeypatch.setattr(SeadGame, "trajectory", with_a_nan_in_the_second_episode)
    out = tmp_path / "run.jsonl"
    with pytest.raises(ScenarioError, match=r"trajectory\['reward_terms'\]\['agent/probe'\] = nan .*seed 1\)"):
        evaluate("SEAD-Outbound-v0", "sop", 2, out=out, batch_size=2)
    assert out.read_text() == ""
