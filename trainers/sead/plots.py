"""Plots of a SEAD run: CR and ideal-band fraction per iteration, CR heatmaps first vs last iteration."""

from __future__ import annotations

import numpy as np

from dialogue_gym.errors import DependencyNotInstalled
from dialogue_gym.metrics.sead import per_state_cr
from dialogue_gym.scenarios.sead.state import STATE_DIMS
from trainers.common import RunDir


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise DependencyNotInstalled("matplotlib", "plots", "Plotting a training run") from exc
    return plt


def plot_run(run: RunDir) -> list[str]:
    plt = _pyplot()
    rows = run.read_metrics()
    iterations = [r["iteration"] for r in rows]
    written = []
    for key, label, name in (
        ("episode/cr", "completion rate (training batch)", "cr_per_iteration.png"),
        ("curriculum/ideal_fraction", "ideal-band fraction of played states", "ideal_fraction.png"),
    ):
        figure, axis = plt.subplots(figsize=(6, 3.5))
        axis.plot(iterations, [r[key] for r in rows], marker=".")
        axis.set_xlabel("iteration")
        axis.set_ylabel(label)
        axis.set_ylim(0, 1)
        axis.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(run.path / "plots" / name, dpi=110)
        plt.close(figure)
        written.append(name)
    by_iteration: dict[int, list] = {}
    for trajectory_iteration, _, trajectory in run.trajectory_records():
        by_iteration.setdefault(trajectory_iteration, []).append(trajectory)
    if by_iteration:
        first, last = min(by_iteration), max(by_iteration)
        window = max(1, len(by_iteration) // 5)
        early = [t for i in sorted(by_iteration)[:window] for t in by_iteration[i]]
        late = [t for i in sorted(by_iteration)[-window:] for t in by_iteration[i]]
        figure, axes = plt.subplots(2, STATE_DIMS[1], figsize=(12, 6), squeeze=False, constrained_layout=True)
        for row, (label, trajectories) in enumerate(((f"iterations {first}..{first + window - 1}", early), (f"iterations {last - window + 1}..{last}", late))):
            rates = per_state_cr(trajectories)
            for emotion in range(STATE_DIMS[1]):
                axis = axes[row][emotion]
                image = axis.imshow(np.ma.masked_invalid(rates[:, emotion, :]), vmin=0, vmax=1, cmap="viridis", origin="lower")
                axis.set_title(f"{label}\nemotion {emotion}", fontsize=8)
                axis.set_xlabel("trust")
                axis.set_ylabel("cooperation")
        figure.colorbar(image, ax=axes, shrink=0.6, label="CR")
        figure.savefig(run.path / "plots" / "cr_heatmaps_first_vs_last.png", dpi=110)
        plt.close(figure)
        written.append("cr_heatmaps_first_vs_last.png")
    return written


def plot_seed_curves(curves: dict[int, list[float]], held_out: dict[int, float], references: dict[str, float], path, title: str, window: int = 10) -> None:
    """Training CR per iteration of every seed (a ``window``-iteration moving average over the raw
    batch CR), each seed's held-out CR at its last iteration, and the scripted agents' held-out CR
    as horizontal lines (``oracle`` reads the hidden state: an upper bound, not a baseline)."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(7, 4))
    for seed, curve in sorted(curves.items()):
        smoothed = np.convolve(curve, np.ones(window) / window, mode="valid") if len(curve) >= window else np.asarray(curve)
        line = axis.plot(range(len(curve) - len(smoothed), len(curve)), smoothed, linewidth=1, label=f"seed {seed} (training, {window}-it. mean)")[0]
        if seed in held_out:
            axis.plot([len(curve) - 1], [held_out[seed]], marker="o", color=line.get_color())
    styles = {"oracle": ("black", "--"), "adaptive": ("black", "-."), "sop": ("gray", ":")}
    for name, (color, style) in styles.items():
        if name in references:
            axis.axhline(references[name], color=color, linestyle=style, label=f"{name}{'*' if name == 'oracle' else ''} held-out {references[name]:.3f}")
    axis.set_xlabel("iteration (dots: held-out CR after training)")
    axis.set_ylabel("completion rate")
    axis.set_ylim(0, 1)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
