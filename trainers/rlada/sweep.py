"""RL-ADA's stopping rule and isolation-gym mix, measured over seeds (paper 003, sections 3.5-3.6).

    python -m trainers.rlada.sweep --seeds 3 [--workers 1] [--out runs/rlada-sweep] [--overrides JSON]

Runs the ``cpu-strategy`` co-evolution once per (setting, seed) in a 2 x 2 design: the paper's
stopping rule (>= 3 matches, win rate >= 0.60 twice with the last change <= 0.05, or 8 matches) or no
early stop (min_matches = max_matches: always the cap), and gym starts drawn 70:30 (the paper) or
50:50 from the weaker side's failures and successes. Prints the final agent's held-out strict PASS
(``state/heldout_after.json``: the 12 fixed held-out scenarios) as mean [95% t-interval across seeds]
with the per-seed values, its per-seed difference to the paper's setting, and the matches played.
One run folder per (setting, seed) under --out: a rerun resumes them; sweep.json holds the table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from trainers.common.cli import run_main
from trainers.common.stats import shown, summary
from trainers.common.sweep import add_sweep_flags, check_sweep_flags, resumes, run_sweep, write_summary
from trainers.rlada.config import RladaTrainConfig, build_config
from trainers.rlada.train import HELDOUT_FIELDS, load_progress, train

PAPER_SETTING = "stop-rule, 70:30"
SETTINGS = {
    PAPER_SETTING: {"early_stop": True, "failure_fraction": 0.7},
    "no-early-stop, 70:30": {"early_stop": False, "failure_fraction": 0.7},
    "stop-rule, 50:50": {"early_stop": True, "failure_fraction": 0.5},
    "no-early-stop, 50:50": {"early_stop": False, "failure_fraction": 0.5},
}


def config_of(setting: str, seed: int, out: str, overrides: dict) -> RladaTrainConfig:
    """The run of ``setting``: no early stop is ``min_matches = max_matches`` (the cap, 8 unless overridden)."""
    choice = SETTINGS[setting]
    max_matches = overrides.get("max_matches", RladaTrainConfig.max_matches)
    rule = {} if choice["early_stop"] else {"min_matches": max_matches}
    return build_config(
        "cpu-strategy",
        **{**overrides, **rule, "failure_fraction": choice["failure_fraction"], "seed": seed, "run_dir": str(Path(out) / _folder(setting, seed)), "plots": False},
    )


def _folder(setting: str, seed: int) -> str:
    return setting.replace(", ", "-").replace(":", "") + f"-seed{seed}"


def _one(job: tuple[str, int, str, dict]) -> dict[str, float]:
    config = config_of(*job)
    run = train(config, resume=resumes(config))
    progress = load_progress(run)
    after = run.load_state("heldout_after", HELDOUT_FIELDS)
    return {"strict_pass": after["strict_pass"], "routing": after["routing_accuracy"], "matches": len(progress["matches"])}


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m trainers.rlada.sweep", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_sweep_flags(cli, seeds=3, out="runs/rlada-sweep")
    args = cli.parse_args(argv)
    return run_main(cli.prog, lambda: _sweep(args))


def _sweep(args: argparse.Namespace) -> int:
    check_sweep_flags(args, swept=("min_matches", "failure_fraction", "plots"))
    results = run_sweep(_one, config_of, SETTINGS, args)
    seeds = range(args.seeds)
    table: dict[str, dict] = {}
    for setting in SETTINGS:
        table[setting] = {name: summary([results[setting, seed][name] for seed in seeds]) for name in ("strict_pass", "matches")}
        if setting != PAPER_SETTING:
            table[setting]["minus_paper"] = summary([results[setting, seed]["strict_pass"] - results[PAPER_SETTING, seed]["strict_pass"] for seed in seeds])
    cap = config_of(PAPER_SETTING, 0, args.out, args.overrides).max_matches
    print(f"\nRL-ADA cpu-strategy, {args.seeds} seeds, match cap {cap}; final agent's held-out strict PASS, mean [95% t-interval]\n")
    print(f"{'setting':22s} {'strict PASS':>22s} {'minus paper setting':>22s} {'matches':>16s}   per seed (strict PASS / matches)")
    for setting, entry in table.items():
        difference = shown(entry["minus_paper"]) if "minus_paper" in entry else "-"
        per_seed = ", ".join(f"{v:.3f}/{m:.0f}" for v, m in zip(entry["strict_pass"]["per_seed"], entry["matches"]["per_seed"]))
        print(f"{setting:22s} {shown(entry['strict_pass']):>22s} {difference:>22s} {shown(entry['matches'], 1):>16s}   {per_seed}")
    path = write_summary(args.out, {"seeds": args.seeds, "overrides": args.overrides, "settings": SETTINGS, "results": table})
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
