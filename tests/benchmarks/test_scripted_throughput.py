"""The scripted-throughput benchmark counts only learner turns actually taken, plays every ID with each of
its roles as the learner, and prints the thread settings and load it ran under."""

import importlib.util
from pathlib import Path

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from envs_registry import REGISTRY

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "scripted_throughput.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_scripted_throughput", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_sub_env_being_autoreset_takes_no_turn():
    # max_agent_turns=1: every episode is one agent turn. Step 1 plays and ends all 3, step 2 only resets
    # them (NEXT_STEP autoreset), step 3 plays and ends all 3 again: 6 turns, not 3 envs x 3 steps = 9.
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=3, max_agent_turns=1)
    row = load().play_vector(envs, episodes=6)
    assert (row["steps"], row["episodes"], row["turns"]) == (3, 6, 6)


def test_vector_turns_are_the_turns_in_the_episodes_played():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=4, max_agent_turns=3, keep_trajectories=None)
    row = load().play_vector(envs, episodes=20)
    finished = envs.unwrapped.pop_trajectories()
    running = [game.trajectory() for game in envs.unwrapped.games if not game.done]
    assert row["episodes"] == len(finished) >= 20
    assert row["turns"] == sum(len(t.turns_of("agent")) for t in finished + running)
    assert row["turns"] < row["steps"] * 4  # some sub-env was being reset on some step


def test_every_id_is_played_with_each_of_its_roles_as_the_learner():
    players = load().learner_players()
    assert sorted((env_id, learner) for env_id, learner, _ in players) == sorted(
        (entry.id, role) for entry in REGISTRY for role in entry.roles
    )
    assert ("RLADA-Banking-v0", "customer", "scripted") in players and ("SEAD-Outbound-v0", "agent", "sop") in players
    firsts = {}
    for env_id, learner, _ in players:
        firsts.setdefault(env_id, learner)
    assert firsts == {entry.id: entry.default_learner for entry in REGISTRY}


def test_tiny_run_prints_both_tables_with_threads_and_load(capsys):
    import torch

    threads_before = torch.get_num_threads()
    tables = load().main(["--episodes", "4", "--sizes", "1,2"])
    assert len(tables["engine"]) == sum(len(entry.roles) for entry in REGISTRY) == 12
    assert all(row["episodes"] == 4 and row["turns"] > 0 and row["seconds"] > 0 for row in tables["engine"])
    paths = [row["path"] for row in tables["sead"]]
    assert paths == ["gym.make env.unwrapped", "gym.make with default wrappers", "gym.make_vec num_envs=1", "gym.make_vec num_envs=2"]
    assert all(row["episodes"] >= 4 and row["turns"] >= 4 for row in tables["sead"])
    printed = capsys.readouterr().out
    assert "load average (1, 5, 15 min)" in printed and "OMP_NUM_THREADS=" in printed and "torch 1" in printed
    assert "RLADA-Customer-v0      customer" in printed and "learner turns" in printed
    assert torch.get_num_threads() == threads_before  # pinned only while the tables ran


COMPARE = BENCHMARK.parent / "compare_revisions.py"


def load_compare():
    spec = importlib.util.spec_from_file_location("benchmark_compare_revisions", COMPARE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # checks HEAD out and plays every audit player in both trees (48 s on a fresh clone)
def test_comparing_with_head_finds_the_same_episodes_and_prints_every_row(capsys):
    module = load_compare()
    # HEAD against this tree: the suite runs on a clean checkout in CI, where both play the same episodes.
    if module.subprocess.run(["git", "-C", str(module.ROOT), "diff", "--quiet", "HEAD", "--", "dialogue_gym", "envs_registry"]).returncode:
        pytest.skip("the package differs from HEAD in this checkout")
    assert module.main(["HEAD", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "the same episodes" in out and out.count("sha256") == 2
    rows = [line for line in out.splitlines() if line.startswith(("SEAD", "TRACER", "DMBench", "RLADA"))]
    assert len(rows) == sum(len(entry.roles) for entry in REGISTRY) + 1 + len(module.VECTOR_SIZES)
    assert all(float(row.split()[-1]) > 0 for row in rows)


def test_other_episodes_exit_1_and_the_ratio_is_this_tree_over_the_revision(monkeypatch, capsys):
    module = load_compare()

    def fake_run_in(tree, mode, *args):
        mine = tree == module.ROOT
        if mode == "fingerprint":
            return {"SEAD-Outbound-v0": "mine" if mine else "theirs", "TRACER-UserSim-v0": "same"}
        if mode == "rows":
            return ["SEAD-Outbound-v0 agent"]
        return 300.0 if mine else 100.0

    monkeypatch.setattr(module, "run_in", fake_run_in)
    assert module.main(["HEAD", "--quick", "--fingerprint-episodes", "1"]) == 1
    out = capsys.readouterr().out
    assert "THE EPISODES DIFFER (SEAD-Outbound-v0)" in out
    assert out.splitlines()[-1].split() == ["SEAD-Outbound-v0", "agent", "100", "300", "3.00"]


def test_the_fingerprints_compare_the_ids_both_trees_register():
    """A new id (a -v1 version) in one tree is named and left out; the rest must match id by id."""
    import hashlib

    module = load_compare()
    same, lines = module.compared({"abc123": {"A-v0": "1", "B-v0": "2"}, "this tree": {"A-v0": "1", "B-v0": "2", "B-v1": "3"}})
    expected = hashlib.sha256(b"A-v0 1\nB-v0 2\n").hexdigest()
    assert same and lines == [
        f"trajectories of every audit player of the 2 ids in both trees, abc123: sha256 {expected}",
        f"trajectories of every audit player of the 2 ids in both trees, this tree: sha256 {expected}",
        "only this tree has B-v1 (not compared)",
        "the same episodes",
    ]
    same, lines = module.compared({"abc123": {"A-v0": "1", "B-v0": "2"}, "this tree": {"A-v0": "1", "B-v0": "9"}})
    assert not same and lines[-1] == "THE EPISODES DIFFER (B-v0)"
    # an id's fingerprint moved onto another id's name is no match either
    same, _ = module.compared({"abc123": {"A-v0": "1", "B-v0": "2"}, "this tree": {"A-v0": "2", "B-v0": "1"}})
    assert not same


def test_instructions_are_per_learner_turn_less_the_warm_up_and_the_ratio_is_the_revision_over_this_tree(monkeypatch, capsys):
    module = load_compare()
    counted = []

    def fake_callgrind_count(tree, mode, row, episodes, warmup):
        counted.append((tree == module.ROOT, row, episodes, warmup))
        per_turn = 1_000 if tree == module.ROOT else 1_500
        turns = 40 if episodes != "0" else 0
        return 7_000_000 + per_turn * turns, turns  # warm-up alone: 7M in both trees

    def fake_run_in(tree, mode, *args):
        return {"fingerprint": {"SEAD-Outbound-v0": "same"}, "rows": ["SEAD-Outbound-v0 agent", "SEAD gym.make unwrapped", "SEAD gym.make_vec K=1"]}[mode]

    monkeypatch.setattr(module, "callgrind_count", fake_callgrind_count)
    monkeypatch.setattr(module, "run_in", fake_run_in)
    monkeypatch.setattr(module.shutil, "which", lambda name: "/usr/bin/valgrind")
    assert module.main(["HEAD", "--instructions", "--fingerprint-episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].split() == ["SEAD-Outbound-v0", "agent", "1,500", "1,000", "1.500"]
    assert "SEAD gym." not in out  # the engine rows only
    # per tree: one run to fill numba's caches, the warm-up alone, then warm-up and episodes (300 after 200 by default)
    assert [c[2:] for c in counted] == [("0", "200"), ("0", "200"), ("300", "200")] * 2
    monkeypatch.setattr(module.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="not on PATH; install valgrind"):
        module.main(["HEAD", "--instructions", "--fingerprint-episodes", "0", "--episodes", "5"])


def test_rows_select_by_any_of_their_texts():
    module = load_compare()
    rows = ["SEAD-Outbound-v0 agent", "TRACER-UserSim-v0 user", "RLADA-Banking-v0 agent", "SEAD gym.make_vec K=1"]
    assert module.selected(rows, None) == rows
    assert module.selected(rows, "SEAD, RLADA-Banking") == ["SEAD-Outbound-v0 agent", "RLADA-Banking-v0 agent", "SEAD gym.make_vec K=1"]
    with pytest.raises(SystemExit, match="--rows 'DM' matches no row; the rows are"):
        module.selected(rows, "DM")


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("valgrind") is None, reason="counting instructions needs valgrind")
def test_instruction_counts_of_one_row_are_positive_and_repeat_within_a_tenth_of_a_percent():
    module = load_compare()
    counts = [module.instructions(module.ROOT, "SEAD-Outbound-v0 agent", 6, 2) for _ in range(2)]
    assert counts[0] > 10_000 and abs(counts[0] - counts[1]) <= 0.001 * counts[0]
