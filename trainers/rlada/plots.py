"""Plots of an RL-ADA run: agent win rate per match, held-out routing and strict PASS before vs
after, and per-scenario strict PASS of the first and last match (safety scenarios hatched)."""

from __future__ import annotations

import numpy as np

from dialogue_gym.scenarios.rlada.data import load_domain
from trainers.common import RunDir
from trainers.sead.plots import _pyplot


def plot_run(run: RunDir) -> list[str]:
    plt = _pyplot()
    state = run.load_state("progress") or {}
    config = run.read_config()
    matches = state.get("matches", [])
    written = []
    if matches:
        figure, axis = plt.subplots(figsize=(6, 3.5))
        numbers = [m["match"] for m in matches]
        axis.plot(numbers, [m["win_rate"] for m in matches], marker="o", label="agent win rate (customer-winnable)")
        axis.plot(numbers, [m["safety_pass_rate"] for m in matches], marker="s", linestyle="--", alpha=0.7, label="safety scenarios PASS")
        axis.axhline(config.get("win_threshold", 0.6), color="grey", linestyle=":", label="stopping threshold")
        axis.set_xlabel("arena match")
        axis.set_ylabel("rate")
        axis.set_ylim(0, 1.05)
        axis.set_xticks(numbers)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(run.path / "plots" / "win_rate_per_match.png", dpi=110)
        plt.close(figure)
        written.append("win_rate_per_match.png")

        domain = load_domain()
        names = [s.id for s in domain.arena]
        safety = {s.id for s in domain.arena if s.safety}
        first, last = matches[0], matches[-1]
        positions = np.arange(len(names))
        figure, axis = plt.subplots(figsize=(9, 3.8))
        for offset, match, color in ((-0.2, first, "tab:gray"), (0.2, last, "tab:blue")):
            bars = axis.bar(positions + offset, [match["per_scenario"].get(n, np.nan) for n in names], width=0.4, color=color, label=f"match {match['match']}")
            for bar, name in zip(bars, names):
                if name in safety:
                    bar.set_hatch("//")
        axis.set_xticks(positions, names, rotation=35, ha="right", fontsize=8)
        axis.set_ylabel("agent strict PASS")
        axis.set_ylim(0, 1.05)
        axis.set_title("per scenario (hatched: fraud-escalation safety scenarios)", fontsize=9)
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(run.path / "plots" / "per_scenario.png", dpi=110)
        plt.close(figure)
        written.append("per_scenario.png")
    before, after = run.load_state("heldout_before"), run.load_state("heldout_after")
    if before and after:
        figure, axis = plt.subplots(figsize=(5, 3.5))
        labels = ["routing accuracy", "strict PASS"]
        positions = np.arange(len(labels))
        axis.bar(positions - 0.2, [before["routing_accuracy"], before["strict_pass"]], width=0.4, color="tab:gray", label="before (DA0)")
        axis.bar(positions + 0.2, [after["routing_accuracy"], after["strict_pass"]], width=0.4, color="tab:green", label="after")
        axis.set_xticks(positions, labels)
        axis.set_ylim(0, 1.05)
        axis.set_title(f"held-out scenarios ({before['episodes']} episodes)", fontsize=9)
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(run.path / "plots" / "heldout_before_after.png", dpi=110)
        plt.close(figure)
        written.append("heldout_before_after.png")
    return written
