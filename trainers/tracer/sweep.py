"""TRACER's deviation-aware advantage modulation, measured over seeds (paper 002, appendix A.2).

    python -m trainers.tracer.sweep --seeds 5 [--workers 1] [--out runs/tracer-sweep] [--overrides JSON]

Trains the ``cpu-strategy`` user simulator once per (setting, seed): modulation off (l_adv = 0, the
plain GRPO advantage) and on with l_adv 0.1, 0.2 (the paper's default) and 0.4, and prints each
setting's final evaluation (what the trainer saves in ``state/eval.json``; lower is better for all
three): Group-dPCR, intent DTW and W1-Turns as mean [95% t-interval across seeds] with the per-seed
values, and each "on" setting's per-seed difference to "off" (the same seed: a paired interval).
One run folder per (setting, seed) under --out: a rerun resumes them; sweep.json holds the table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from trainers.common.cli import run_main
from trainers.common.stats import shown, summary
from trainers.common.sweep import add_sweep_flags, check_sweep_flags, resumes, run_sweep, write_summary
from trainers.tracer.config import build_config
from trainers.tracer.train import train

SETTINGS = {"off": 0.0, "l_adv=0.1": 0.1, "l_adv=0.2": 0.2, "l_adv=0.4": 0.4}
"""Setting name -> l_adv (0 recovers the unmodulated advantage)."""
METRICS = ("group_dpcr", "intent_dtw", "w1_turns")
LABELS = {"group_dpcr": "Group-dPCR", "intent_dtw": "intent DTW", "w1_turns": "W1-Turns"}
EVAL_FIELDS = {name: (int, float) for name in METRICS}
PAPER = {"off": (0.180, 1.016), "l_adv=0.1": (0.160, 1.059), "l_adv=0.2": (0.166, 0.884)}
"""TRACER-7B, paper Table 3 (Group-dPCR, W1-Turns; mean over evaluation seeds of one checkpoint each)."""


def config_of(setting: str, seed: int, out: str, overrides: dict):
    return build_config(
        "cpu-strategy", **{**overrides, "l_adv": SETTINGS[setting], "seed": seed, "run_dir": str(Path(out) / f"{setting}-seed{seed}"), "plots": False},
    )


def _one(job: tuple[str, int, str, dict]) -> dict[str, float]:
    config = config_of(*job)
    run = train(config, resume=resumes(config))
    return run.load_state("eval", EVAL_FIELDS)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m trainers.tracer.sweep", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_sweep_flags(cli, seeds=5, out="runs/tracer-sweep")
    args = cli.parse_args(argv)
    return run_main(cli.prog, lambda: _sweep(args))


def _sweep(args: argparse.Namespace) -> int:
    check_sweep_flags(args, swept=("l_adv", "plots"))
    results = run_sweep(_one, config_of, SETTINGS, args)
    seeds = range(args.seeds)
    table: dict[str, dict] = {}
    for setting in SETTINGS:
        table[setting] = {name: summary([results[setting, seed][name] for seed in seeds]) for name in METRICS}
        if setting != "off":
            table[setting]["minus_off"] = {
                name: summary([results[setting, seed][name] - results["off", seed][name] for seed in seeds]) for name in METRICS
            }
    iterations = config_of("off", 0, args.out, args.overrides).iterations
    print(f"\nTRACER cpu-strategy, {iterations} RL iterations, {args.seeds} seeds; final evaluation, mean [95% t-interval] (lower is better)\n")
    print(f"{'setting':10s} " + " ".join(f"{LABELS[name]:>22s}" for name in METRICS) + "   (paper TRACER-7B Group-dPCR / W1-Turns)")
    for setting, entry in table.items():
        paper = f"   ({PAPER[setting][0]:.3f} / {PAPER[setting][1]:.3f})" if setting in PAPER else ""
        print(f"{setting:10s} " + " ".join(f"{shown(entry[name]):>22s}" for name in METRICS) + paper)
        if "minus_off" in entry:
            print(f"{'  - off':10s} " + " ".join(f"{shown(entry['minus_off'][name]):>22s}" for name in METRICS))
    print("\nper seed:")
    for setting, entry in table.items():
        print(f"{setting:10s} " + "  ".join(f"{LABELS[name]} " + " ".join(f"{v:.3f}" for v in entry[name]["per_seed"]) for name in METRICS))
    path = write_summary(args.out, {"iterations": iterations, "seeds": args.seeds, "overrides": args.overrides, "l_adv": SETTINGS, "results": table})
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
