"""SEAD's curriculum ablation (paper Table 3) with the CPU strategy policy.

    python -m trainers.sead.ablate --seeds 5 [--iterations 150] [--out runs/sead-ablation]

Trains one agent per (curriculum mode, seed) — ``full``, ``uniform`` ("w/o MA") and
``unstructured`` ("w/o MA + w/o PS") — and prints the final completion rate on the fixed held-out
profile set (never the training curriculum) with a 95% interval across seeds (Student t), plus a plot.
"""

from __future__ import annotations

import argparse
import json
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean, stdev

from dialogue_gym.errors import ConfigError
from trainers.common import RunDir
from trainers.common.cli import run_main
from trainers.sead.config import build_config
from trainers.sead.train import EVAL_FIELDS, train

MODES = ("full", "uniform", "unstructured")
PAPER = {"full": 52.0, "uniform": 45.8, "unstructured": 40.5}


def _one(job: tuple[str, int, int, int, str]) -> tuple[str, int, float]:
    mode, seed, iterations, eval_episodes, out = job
    config = build_config(
        "cpu-strategy", curriculum=mode, seed=seed, iterations=iterations, eval_episodes=eval_episodes,
        run_dir=str(Path(out) / f"{mode}-seed{seed}"), plots=False, before_and_baselines=False,
    )
    resume = (Path(config.run_dir) / "config.json").exists()
    if resume and RunDir(config.run_dir).read_config() != config.to_dict():
        raise ConfigError(
            f"{config.run_dir} holds a run with other settings than --iterations {iterations} --eval-episodes {eval_episodes}; "
            "pass the settings it was started with, or another --out."
        )
    run = train(config, resume=resume)
    return mode, seed, run.load_state("eval", EVAL_FIELDS)["cr"]


def t_interval(values: list[float]) -> tuple[float, float]:
    from scipy.stats import t

    if len(values) < 2:
        return (math.nan, math.nan)
    half = t.ppf(0.975, len(values) - 1) * stdev(values) / math.sqrt(len(values))
    return (mean(values) - half, mean(values) + half)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m trainers.sead.ablate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--seeds", type=int, default=5)
    cli.add_argument("--iterations", type=int, default=150)
    cli.add_argument("--eval-episodes", type=int, default=1200)
    cli.add_argument("--out", default="runs/sead-ablation")
    cli.add_argument("--workers", type=int, default=2)
    args = cli.parse_args(argv)
    return run_main(cli.prog, lambda: _ablate(args))


def _ablate(args: argparse.Namespace) -> int:
    for name, minimum in (("seeds", 1), ("iterations", 0), ("eval_episodes", 1), ("workers", 1)):
        if getattr(args, name) < minimum:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= {minimum}, got {getattr(args, name)}.")
    jobs = [(mode, seed, args.iterations, args.eval_episodes, args.out) for mode in MODES for seed in range(args.seeds)]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = list(pool.map(_one, jobs))
    table = {mode: [cr for m, _, cr in sorted(results) if m == mode] for mode in MODES}
    summary = {}
    print(f"\nheld-out CR after {args.iterations} iterations, {args.seeds} seeds, {args.eval_episodes} held-out episodes each\n")
    print(f"{'curriculum':14s} {'mean':>6s} {'95% CI':>17s}   per seed        (paper, Qwen-14B)")
    for mode in MODES:
        values = table[mode]
        low, high = t_interval(values)
        summary[mode] = {"mean": mean(values), "low": low, "high": high, "per_seed": values}
        print(f"{mode:14s} {mean(values):6.3f}  [{low:6.3f}, {high:6.3f}]   {' '.join(f'{v:.3f}' for v in values)}   ({PAPER[mode]:.1f}%)")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "ablation.json").write_text(json.dumps(summary, indent=2))
    _plot(summary, Path(args.out) / "ablation.png")
    print(f"\nwritten: {Path(args.out) / 'ablation.json'}, {Path(args.out) / 'ablation.png'}")
    return 0


def _plot(summary: dict, path: Path) -> None:
    from trainers.sead.plots import _pyplot

    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5, 3.5))
    means = [summary[m]["mean"] for m in MODES]
    errors = [[summary[m]["mean"] - summary[m]["low"] for m in MODES], [summary[m]["high"] - summary[m]["mean"] for m in MODES]]
    errors = [[0 if math.isnan(e) else e for e in side] for side in errors]
    axis.bar(MODES, means, yerr=errors, capsize=6, color=["tab:green", "tab:blue", "tab:gray"])
    axis.set_ylabel("held-out completion rate")
    axis.set_ylim(0, 1)
    axis.set_title("SEAD curriculum ablation (CPU strategy policy)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    raise SystemExit(main())
