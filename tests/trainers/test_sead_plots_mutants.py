"""What SEAD's plots draw (issue 43 item 6, trainers/sead/plots.py), read off the plotted data rather
than the images: each per-iteration curve plots its own metric, the heatmaps compare the first and the
last fifth of the iterations, and a seed's training curve is a moving mean."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib.axes import Axes  # noqa: E402

from trainers.sead import plots  # noqa: E402


@pytest.fixture
def plotted(monkeypatch):
    """Every ``Axes.plot`` call's (x, y), in order."""
    calls = []
    original = Axes.plot

    def plot(self, *args, **kwargs):
        calls.append((list(args[0]), list(args[1])))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", plot)
    return calls


def test_the_run_plots_draw_each_metric_and_the_first_and_last_fifth(tmp_path, plotted, monkeypatch):
    (tmp_path / "plots").mkdir()
    rows = [{"iteration": i, "episode/cr": i / 10, "curriculum/ideal_fraction": 1 - i / 10} for i in range(10)]
    records = [(i, e, f"t{i}-{e}") for i in range(10) for e in range(2)]
    run = SimpleNamespace(path=tmp_path, read_metrics=lambda: rows, trajectory_records=lambda: iter(records))
    heatmaps = []
    monkeypatch.setattr(plots, "per_state_cr", lambda trajectories: heatmaps.append(trajectories) or np.full((5, 4, 6), 0.5))
    written = plots.plot_run(run)
    assert written == ["cr_per_iteration.png", "ideal_fraction.png", "cr_heatmaps_first_vs_last.png"]
    assert all((tmp_path / "plots" / name).exists() for name in written)
    assert plotted == [(list(range(10)), [i / 10 for i in range(10)]), (list(range(10)), [1 - i / 10 for i in range(10)])]
    # 10 iterations: a window of 2, iterations 0-1 against 8-9
    assert heatmaps == [["t0-0", "t0-1", "t1-0", "t1-1"], ["t8-0", "t8-1", "t9-0", "t9-1"]]


def test_a_seeds_training_curve_is_its_moving_mean(tmp_path, plotted):
    curve = [0.0, 0.2, 0.4, 0.6, 0.8]
    plots.plot_seed_curves({0: curve}, {0: 0.5}, {"adaptive": 0.6}, tmp_path / "curve.png", "title", window=2)
    (x, y), (dot_x, dot_y) = plotted
    assert x == [1, 2, 3, 4] and y == pytest.approx([0.1, 0.3, 0.5, 0.7])  # the mean of each 2 iterations, at the later one
    assert (dot_x, dot_y) == ([4], [0.5])  # the held-out CR at the last iteration
    assert (tmp_path / "curve.png").exists()
