"""``dialogue-gym export``: recorded runs as Hugging Face datasets, and back."""

import hashlib
import json
import sys

import pytest

datasets = pytest.importorskip("datasets")

import dialogue_gym
from dialogue_gym.cli import main
from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.evaluation import evaluate, load_trajectories
from dialogue_gym.integrations.datasets import build_rows, export, trajectories_from_dataset
from envs_registry import REGISTRY

RUNS = {entry.id: entry.agents[:2] for entry in REGISTRY}
EPISODES = 6 * sum(len(agents) for agents in RUNS.values())
"""Every id's first two agents, 6 episodes each: 72 rows for six ids, one per played episode."""


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    """Every id, its first two baseline agents, 6 episodes each (same seeds: same start states)."""
    path = tmp_path_factory.mktemp("run") / "run.jsonl"
    for entry in REGISTRY:
        for agent in RUNS[entry.id]:
            evaluate(entry.id, agent, 6, seed=3, learner=entry.default_learner, out=path, append=True)
    return path


def test_rollouts_round_trip_through_load_from_disk(run_file, tmp_path, capsys):
    assert main(["export", str(run_file), "--format", "rollouts", "-o", str(tmp_path / "ds")]) == 0
    assert f"{EPISODES} rollouts rows written" in capsys.readouterr().out
    loaded = datasets.load_from_disk(str(tmp_path / "ds"))
    original = load_trajectories(run_file)
    assert [t.to_dict() for t in trajectories_from_dataset(loaded)] == [t.to_dict() for t in original]
    for row, trajectory in zip(loaded, original):
        canonical = json.dumps(trajectory.to_dict(), sort_keys=True, separators=(",", ":"))
        assert row["source_hash"] == hashlib.sha256(canonical.encode()).hexdigest()
        assert row["version"] == dialogue_gym.__version__ and row["env_kwargs"] == "{}"
        assert row["env_id"] == trajectory.meta["env_id"] and row["seed"] == trajectory.seed
        assert row["reward"] == trajectory.rewards[trajectory.learner]


def test_sft_messages_are_the_learners_chat_and_hold_nothing_privileged(run_file):
    trajectories = load_trajectories(run_file)
    rows = build_rows(trajectories, "sft")
    assert len(rows) == len(trajectories)
    for row, trajectory in zip(rows, trajectories):
        messages = row["messages"]
        assert messages[0]["role"] == "system"
        # the learner's raw outputs are its assistant turns, in order, after any scripted opening
        assistant = [m["content"] for m in messages if m["role"] == "assistant"]
        raws = [turn.raw for turn in trajectory.turns_of(row["learner"])]
        assert raws and assistant[len(assistant) - len(raws) :] == raws
        assert {item["name"]: item["value"] for item in row["reward_terms"]} == trajectory.reward_terms
        if row["env_id"] == "RLADA-Banking-v0":  # the hidden intent and target tool stay out of the agent's chat
            chat = json.dumps(messages)
            assert trajectory.profile["intent"] not in chat and trajectory.profile["tool"] not in chat.split("Tools")[0]


def test_preference_pairs_the_best_and_worst_dialogue_of_each_start_state(run_file):
    trajectories = load_trajectories(run_file)
    rows = build_rows(trajectories, "preference")
    # a run of two agents over the same seeds: the start state of a dialogue is its (id, seed)
    by_start = {}
    for trajectory in trajectories:
        by_start.setdefault((trajectory.meta["env_id"], trajectory.seed), []).append(trajectory.rewards[trajectory.learner])
    expected = {start: (max(r), min(r)) for start, r in by_start.items() if max(r) > min(r)}
    assert {(row["env_id"], row["seed"]): (row["chosen_reward"], row["rejected_reward"]) for row in rows} == expected
    assert len(rows) == len(expected) > 0
    chats = {json.dumps(m) for m in (row["messages"] for row in build_rows(trajectories, "sft"))}
    for row in rows:
        assert row["prompt"][0]["role"] == "system"
        assert row["chosen"][0]["role"] == row["rejected"][0]["role"] == "assistant"
        assert json.dumps(row["prompt"] + row["chosen"]) in chats and json.dumps(row["prompt"] + row["rejected"]) in chats
        assert row["chosen_source_hash"] != row["rejected_source_hash"]


def test_a_start_state_whose_dialogues_tie_gives_no_pair(run_file):
    trajectories = [t for t in load_trajectories(run_file) if t.meta["env_id"] == "SEAD-Outbound-v0"]
    same_agent = [t for t in trajectories if t.meta["agent"] == "sop"]
    assert build_rows(same_agent + same_agent, "preference") == []  # each start twice, equal rewards


def test_parquet_export_loads_with_datasets(run_file, tmp_path):
    export(run_file, "sft", tmp_path / "pq", parquet=True)
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "pq" / "sft.parquet"), split="train")
    assert len(loaded) == EPISODES == 72 and loaded.column_names[:3] == ["env_id", "env_kwargs", "learner"]


def test_a_record_the_env_kwargs_do_not_replay_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "short.jsonl"
    evaluate("SEAD-Outbound-v0", "sop", 2, seed=0, env_kwargs={"max_agent_turns": 1}, out=path)
    with pytest.raises(ConfigError, match=r"does not replay.*--env-kwargs"):
        export(path, "sft", tmp_path / "ds")
    assert len(export(path, "sft", tmp_path / "ds", env_kwargs={"max_agent_turns": 1})) == 2


def test_bad_arguments_are_typed_errors(run_file, tmp_path, capsys):
    with pytest.raises(ConfigError, match="format='dpo' is not supported"):
        export(run_file, "dpo", tmp_path / "a")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ConfigError, match="not an empty folder"):
        export(run_file, "sft", tmp_path / "full")
    with pytest.raises(ConfigError, match="env_kwargs must be JSON data"):
        export(run_file, "sft", tmp_path / "b", env_kwargs={"user": object()})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a trajectory"}\n')
    assert main(["export", str(bad), "--format", "sft", "-o", str(tmp_path / "c")]) == 2
    assert "line 1: not a trajectory record" in capsys.readouterr().err


def test_missing_datasets_names_the_extra(run_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'dialogue_gym\[datasets\]'"):
        export(run_file, "sft", tmp_path / "ds")
