"""The LLM-throughput and Ray benchmarks run (tiny model / few episodes) and measure what they claim."""

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vector_llm_benchmark_batches_and_plays_the_same_dialogues(tiny_model_dir):
    bench = load("vector_llm_throughput")
    from dialogue_gym.backends import TransformersBackend

    model = TransformersBackend(str(tiny_model_dir), max_new_tokens=8, temperature=0.0, batch_size=64)
    rows = bench.compare(model, [1, 4], max_agent_turns=2)
    assert [row["n"] for row in rows] == [1, 4]
    for row in rows:
        # 2 user turns per dialogue: one backend call per step batched, one per request otherwise
        assert (row["batched_calls"], row["single_calls"]) == (2, 2 * row["n"])
        assert row["same_dialogues"] and row["batched_dps"] > 0 and row["single_dps"] > 0


@pytest.mark.slow
def test_ray_benchmark_reproduces_the_in_process_run():
    pytest.importorskip("ray")
    rows = load("ray_rollouts").main(["--episodes", "60", "--workers", "1,2", "--num-cpus", "2", "--chunk-size", "16"])
    assert [row["path"] for row in rows] == ["in-process evaluate()", "Ray, 1 worker", "Ray, 2 workers"]
    assert all(row["identical"] for row in rows)


def test_hostile_input_benchmark_steps_every_shape_of_oversized_action():
    bench = load("hostile_input")
    shapes = bench.shapes(30_000)
    assert set(shapes) == {"plain text", "open tags", "nested JSON", "huge number", "huge field"}
    assert all(len(action) >= 30_000 for action in shapes.values())
    for action in shapes.values():  # every shape steps (the timing itself is the benchmark's job)
        bench.slowest_step_ms("SEAD-Outbound-v0", "agent", action, repeats=1)
