"""The GPU-speed rollout benchmark runs its three rows on one id with a short latency, prints a line
ending in ``efficiency X.XX`` per row and the load, and finds the pipelined transcripts identical."""

import importlib.util
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_speed_rollouts.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_gpu_speed_rollouts", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_report_efficiency_and_identical_transcripts(capsys):
    tables = load().main(["--rounds", "3", "--latency", "0.002", "--envs", "8", "--batch", "8", "--ids", "SEAD-Outbound-v0", "--repeats", "1"])
    out = capsys.readouterr().out
    rows = tables["SEAD-Outbound-v0"]
    assert [(row["envs"], row["groups"]) for row in rows] == [(8, None), (8, 2), (16, 2)]
    assert all(row["same"] for row in rows)
    assert all(0 < row["efficiency"] <= 1.0 + 1e-9 for row in rows)
    assert [line.split()[-2] for line in out.splitlines() if line.startswith("SEAD-Outbound-v0")] == ["efficiency"] * 3
    assert "load average (1/5/15 min) before" in out and "after" in out
