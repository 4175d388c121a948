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


@pytest.fixture
def figures(monkeypatch):
    """The figures the plots close, kept open to be read."""
    import matplotlib.pyplot as plt

    kept, close = [], plt.close
    monkeypatch.setattr(plt, "close", kept.append)
    yield kept
    for figure in kept:
        close(figure)


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[16:24]
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")


def test_the_run_plots_axes_and_heatmap_panels(tmp_path, figures, monkeypatch):
    (tmp_path / "plots").mkdir()
    rows = [{"iteration": i, "episode/cr": 0.5, "curriculum/ideal_fraction": 0.5} for i in range(10)]
    records = [(i, 0, f"t{i}") for i in range(10)]
    run = SimpleNamespace(path=tmp_path, read_metrics=lambda: rows, trajectory_records=lambda: iter(records))
    rates = np.arange(120, dtype=float).reshape(5, 4, 6) / 120  # a different rate in every state
    monkeypatch.setattr(plots, "per_state_cr", lambda trajectories: rates)
    plots.plot_run(run)
    curves, heatmaps = figures[:2], figures[2]
    assert all(figure.axes[0].get_ylim() == (0.0, 1.0) for figure in curves)  # rates on a fixed 0-1 scale
    assert len(heatmaps.axes) == 9
    panels = heatmaps.axes[:8]  # 2 rows (first, last) x 4 emotions, then the colour bar
    assert [axis.get_title() for axis in panels[:4:3]] == ["iterations 0..1\nemotion 0", "iterations 0..1\nemotion 3"]
    assert [axis.get_title() for axis in panels[4::3]] == ["iterations 8..9\nemotion 0", "iterations 8..9\nemotion 3"]
    for k, axis in enumerate(panels):
        image = axis.get_images()[0]
        assert image.get_clim() == (0, 1) and image.origin == "lower"
        assert np.array_equal(image.get_array(), rates[:, k % 4, :])  # cooperation up, trust across, one emotion a panel
    assert heatmaps.get_constrained_layout()
    # 12 x 6 inches at 110 dpi; the curves 6 x 3.5
    assert _png_size(tmp_path / "plots" / "cr_heatmaps_first_vs_last.png") == (1320, 660)
    assert _png_size(tmp_path / "plots" / "cr_per_iteration.png") == (660, 385)


def test_the_seed_curves_default_to_a_10_iteration_mean_and_a_small_legend(tmp_path, plotted, figures):
    plots.plot_seed_curves({0: [0.1 * i for i in range(12)]}, {}, {"adaptive": 0.6}, tmp_path / "curve.png", "title")
    (x, y), = plotted
    assert x == [9, 10, 11] and y == pytest.approx([0.45, 0.55, 0.65])
    legend = figures[0].axes[0].get_legend()
    assert [text.get_fontsize() for text in legend.get_texts()] == [7, 7]
