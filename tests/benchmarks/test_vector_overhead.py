"""The vector overhead benchmark times both vector envs and their plain loops side by side and prints
the load; its null game and null env play what they say."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "vector_overhead.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_vector_overhead", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_prints_both_overheads_their_ratio_and_the_load(capsys):
    row = load().main(["--envs", "4", "--steps", "20", "--repeats", "1"])
    out = capsys.readouterr().out
    assert {"gym_overhead", "ours_overhead", "ratio", "sead_vector", "sead_sync"} <= set(row)
    assert "gymnasium SyncVectorEnv" in out and "dialogue_gym DialogueVectorEnv" in out and "overhead ratio" in out
    assert "load average (1/5/15 min) before" in out and "after" in out


def test_null_game_ends_after_ten_learner_moves_in_both_vector_envs():
    module = load()
    ours = module.DialogueVectorEnv(module.NullGame, 2, "learner", {"counterpart": module.Ok()})
    ours.reset(seed=0)
    ends = [bool(ours.step(["hi", "hi"])[2][0]) for _ in range(11)]
    assert ends == [False] * 9 + [True, False]
    gym_vector = module.gym.vector.SyncVectorEnv([module.NullEnv, module.NullEnv])
    gym_vector.reset(seed=0)
    ends = [bool(gym_vector.step(["hi", "hi"])[2][0]) for _ in range(11)]
    assert ends == [False] * 9 + [True, False]
    assert np.array_equal(ours.step(["hi", "hi"])[1], [1.0, 1.0])
