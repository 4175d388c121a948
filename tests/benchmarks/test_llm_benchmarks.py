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


def test_vector_llm_benchmark_batches_reuses_prefixes_and_plays_the_same_dialogues(tiny_model_dir):
    bench = load("vector_llm_throughput")
    from dialogue_gym.backends import TransformersBackend

    model = TransformersBackend(str(tiny_model_dir), max_new_tokens=8, temperature=0.0, batch_size=64)
    rows = bench.compare(model, [1, 3], turns=[2])
    assert [(row["turns"], row["n"]) for row in rows] == [(2, 1), (2, 3)]
    for row in rows:
        # one backend call per step batched, one per request otherwise; a turn is a learner move that was played
        assert row["batched_calls"] == row["learner_turns"] // row["n"] and row["single_calls"] == row["requests"]
        assert row["n"] <= row["learner_turns"] <= 2 * row["n"] and row["requests"] == row["learner_turns"]
        assert row["same_dialogues"] and row["batched_turns_per_s"] > 0 and row["single_turns_per_s"] > 0
        assert 0 < row["orchestration"] <= 1 and row["tokens_per_s"] > 0
        assert 0 < row["prefill_per_request"] < row["prompt_per_request"]
        # the cache-off run plays the same dialogues, so the same decode steps, timed apart
        assert row["same_without_cache"] and row["decode_steps"][0] == row["decode_steps"][1] > 0
        assert row["decode_ms_cache_on"] > 0 and row["decode_ms_cache_off"] > 0 and row["cache_wall_gain"] > 0
        assert model.prefix_cache and "forward" not in vars(model.model)  # both put back
    # the bare model's ceiling: a whole request's gain is a mix of the prefill and decode gains
    bound = bench.ceiling(model, rows[-1])
    assert (bound["context"], bound["prefill"]) == (round(rows[-1]["prompt_per_request"]), round(rows[-1]["prefill_per_request"]))
    assert bound["generated"] == round(rows[-1]["generated_per_request"]) and bound["generated"] >= 1
    low, high = sorted((bound["prefill_gain"], bound["decode_gain"]))
    assert 0 < low <= bound["ratio"] <= high
    # the cache changes how much is encoded, never what is played
    full = TransformersBackend(str(tiny_model_dir), max_new_tokens=8, temperature=0.0, batch_size=64, prefix_cache=False)
    full_play = bench.play(bench.Batched(full), 1, 2)
    assert full_play["transcripts"] == rows[0]["transcripts"]
    assert full_play["prefilled_tokens"] == full_play["prompt_tokens"] == rows[0]["prompt_per_request"] * rows[0]["requests"]


def test_vector_llm_benchmark_times_decode_on_off_off_on_and_averages_each_mode(tiny_model_dir):
    bench = load("vector_llm_throughput")
    from dialogue_gym.backends import TransformersBackend

    model = TransformersBackend(str(tiny_model_dir), max_new_tokens=4, temperature=0.0, batch_size=64)
    runs, timed_play = [], bench.timed_play

    def spy(model, n, turns, prefix_cache):
        before = model.prefix_cache_stats()["cached_tokens"]
        played, timer = timed_play(model, n, turns, prefix_cache)
        runs.append((prefix_cache, model.prefix_cache_stats()["cached_tokens"] - before, timer.decode_ms))
        return played, timer

    bench.timed_play = spy
    row = bench.measure(model, 2, 1)
    # a drift of the machine's speed weighs on both modes alike: on, off, off, on, each mode the mean of its runs
    assert [on for on, _, _ in runs] == [True, False, False, True]
    assert [cached > 0 for _, cached, _ in runs] == [True, False, False, True]  # the cache really on / off
    assert row["decode_ms_runs"] == [ms for _, _, ms in runs] and all(ms > 0 for ms in row["decode_ms_runs"])
    assert row["decode_ms_cache_on"] == pytest.approx((runs[0][2] + runs[3][2]) / 2)
    assert row["decode_ms_cache_off"] == pytest.approx((runs[1][2] + runs[2][2]) / 2)
    assert model.prefix_cache


def test_vector_llm_benchmark_pins_threads():
    import torch

    bench = load("vector_llm_throughput")
    before = torch.get_num_threads()
    try:
        pinned = bench.pin_threads(1)
        assert pinned["torch_threads"] == torch.get_num_threads() == 1
        assert all(pinned[variable] == "1" for variable in bench.THREAD_VARIABLES)
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_ray_benchmark_reproduces_the_in_process_run():
    pytest.importorskip("ray")
    rows = load("ray_rollouts").main(["--episodes", "60", "--workers", "1,2", "--num-cpus", "2", "--chunk-size", "16"])
    assert [row["path"] for row in rows] == ["in-process evaluate()", "Ray, 1 worker", "Ray, 2 workers", "crossover"]
    assert all(row["identical"] for row in rows[:3])
    assert all(0 < row["worker_per_episode"] and 0 < row["worker_startup"] for row in rows[1:3])


def test_ray_crossover_counts_the_cores_that_beat_in_process():
    crossover = load("ray_rollouts").crossover
    # 10,000 episodes: in-process 10 s of CPU; Ray 2 s start-up, 13 s in workers, 2 s in the driver:
    # C cores take 2 + 13 / C + 2 s, under 10 s from C > 13 / 6 = 2.17; long runs 1.3 / (1 - 0.2) = 1.625
    cross = crossover(10_000, 0.001, 2.0, 0.0013, 0.0002)
    assert cross["run"] == pytest.approx(13 / 6) and cross["run_cores"] == 3
    assert cross["long_runs"] == pytest.approx(1.625) and cross["long_run_cores"] == 2
    # 1,000 episodes: 1 s in-process cannot pay for 2 s of start-up on any number of cores
    short = crossover(1_000, 0.001, 2.0, 0.0013, 0.0002)
    assert short["run"] == short["run_cores"] == float("inf") and short["long_run_cores"] == 2
    # a driver that spends as much per episode as playing in-process: never
    assert crossover(10_000, 0.001, 0.0, 0.0005, 0.001)["long_runs"] == float("inf")


def test_hostile_input_benchmark_steps_every_shape_of_oversized_action():
    bench = load("hostile_input")
    shapes = bench.shapes(30_000)
    assert set(shapes) == {"plain text", "open tags", "nested JSON", "huge number", "huge field"}
    assert all(len(action) >= 30_000 for action in shapes.values())
    for action in shapes.values():  # every shape steps (the timing itself is the benchmark's job)
        bench.slowest_step_ms("SEAD-Outbound-v0", "agent", action, repeats=1)


def test_decode_gap_is_read_against_the_spread_of_one_modes_runs():
    bench = load("vector_llm_throughput")
    # runs in the order on, off, off, on (the saved SmolLM2 row at N = 32): on = (280.2 + 267.9) / 2 = 274.05,
    # off = (274.5 + 272.4) / 2 = 273.45, gap 0.6; the on runs differ by 12.3, the off runs by 2.1
    row = {"decode_ms_runs": [280.2, 274.5, 272.4, 267.9], "decode_ms_cache_on": 274.05, "decode_ms_cache_off": 273.45}
    gap, spread = bench.decode_gap_and_spread(row)
    assert gap == pytest.approx(0.6) and spread == pytest.approx(12.3)
    # the off runs' spread counts too: here it is the larger one (|150 - 170| = 20 against |160 - 161| = 1)
    row = {"decode_ms_runs": [160.0, 150.0, 170.0, 161.0], "decode_ms_cache_on": 160.5, "decode_ms_cache_off": 160.0}
    assert bench.decode_gap_and_spread(row) == pytest.approx((0.5, 20.0))


def test_decode_verdict_is_missed_only_by_a_gap_beyond_the_runs_spread():
    bench = load("vector_llm_throughput")
    saved = {"decode_ms_runs": [280.2, 274.5, 272.4, 267.9], "decode_ms_cache_on": 274.05, "decode_ms_cache_off": 273.45}
    faster = {"decode_ms_runs": [150.0, 160.0, 161.0, 152.0], "decode_ms_cache_on": 151.0, "decode_ms_cache_off": 160.5}
    # on runs 170 and 172, off runs 160 and 161: 11 ms slower where one mode's runs differ by 2 at most
    slower = {"decode_ms_runs": [170.0, 160.0, 161.0, 172.0], "decode_ms_cache_on": 171.0, "decode_ms_cache_off": 160.5}
    edge = {"decode_ms_runs": [162.0, 160.0, 158.0, 162.0], "decode_ms_cache_on": 162.0, "decode_ms_cache_off": 159.0}  # gap 3 > spread 2
    tie = {"decode_ms_runs": [163.0, 160.0, 157.0, 163.0], "decode_ms_cache_on": 163.0, "decode_ms_cache_off": 160.0}  # gap 3 == spread 3
    assert bench.decode_no_slower([saved, faster]) and bench.decode_no_slower([tie])
    assert not bench.decode_no_slower([saved, slower]) and not bench.decode_no_slower([edge])
