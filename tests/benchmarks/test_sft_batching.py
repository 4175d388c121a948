"""benchmarks/sft_batching.py times an SFT step padded against accumulated, through the trainer's own sft_lm."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sft_batching.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_sft_batching", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_padding_share_is_the_added_tokens_over_the_real_ones():
    # [3, 5] pads to 2 x 5 (2 added), [2, 2] adds none, the last group [4] alone none: 2 over 16 real tokens.
    assert load().padding_share([3, 5, 2, 2, 4], 2) == pytest.approx(2 / 16)
    assert load().padding_share([7, 7, 7], 3) == 0.0


@pytest.mark.slow
def test_both_layouts_are_timed_on_the_tiny_model(tiny_model_dir, monkeypatch, capsys):
    pytest.importorskip("trl")
    bench = load()
    monkeypatch.setattr(sys, "argv", ["sft_batching.py", "--model", str(tiny_model_dir), "--steps", "1", "--repeats", "2", "--threads", "1", "--lora-rank", "2", "--lora-layers", "1"])
    bench.main()
    out = capsys.readouterr().out
    lines = [line.strip().split(":")[0] for line in out.splitlines() if line.strip().startswith(("padded:", "accumulated:"))]
    assert lines == ["padded", "accumulated", "accumulated", "padded"]  # alternating, so drift weighs on both
    assert "padded / accumulated" in out and out.startswith("load before:") and "load after:" in out
