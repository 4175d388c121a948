"""The SEAD ablation's training summary on a run longer than two tails (issue 43 item 6,
trainers/sead/ablate.py): "last" is the last TAIL_ITERATIONS iterations, not all after the first ones."""

from __future__ import annotations

import pytest

from trainers.sead import ablate


def test_the_last_tail_is_the_last_ten_iterations_of_a_25_iteration_run():
    rows = [{"episode/cr": i / 10, "user/accept_share": 1.0 if i >= 20 else 0.0} for i in range(25)]
    # first: iterations 0-9, cr mean 0.45; last: iterations 15-24, cr mean 1.95, accepted in 20-24: 5 of 10
    assert ablate.training_summary(rows) == pytest.approx({"train_cr_first": 0.45, "train_cr_last": 1.95, "user/accept_share": 0.5})


def test_a_run_shorter_than_a_tail_summarises_all_its_iterations_in_both():
    rows = [{"episode/cr": 0.2}, {"episode/cr": 0.6}]
    assert ablate.training_summary(rows) == pytest.approx({"train_cr_first": 0.4, "train_cr_last": 0.4})


def test_the_welch_interval_needs_two_runs_on_each_side():
    for a, b in (([0.5], [0.4, 0.6]), ([0.4, 0.6], [0.5]), ([0.5], [0.5])):
        low, high = ablate.welch_interval(a, b)
        assert low != low and high != high  # NaN
    # two runs each are enough: a = [1, 3], b = [0, 0]: var(a) / 2 = 1, dof 1, half = t(0.975, 1) * 1 = 12.706205
    assert ablate.welch_interval([1.0, 3.0], [0.0, 0.0]) == pytest.approx((2 - 12.706205, 2 + 12.706205), abs=1e-5)


def test_the_cli_defaults_are_the_documented_run(monkeypatch):
    # the module's usage line: --seeds 5 [--iterations 150] [--modes ...] [--out runs/sead-ablation], 1,200 held-out episodes
    parsed = []
    monkeypatch.setattr(ablate, "_ablate", lambda args: parsed.append(vars(args)) or 0)
    assert ablate.main([]) == 0
    assert parsed == [{"seeds": 5, "iterations": 150, "eval_episodes": 1200, "modes": list(ablate.MODES), "out": "runs/sead-ablation", "workers": 2}]


def _row(values, low, high):
    return {"per_seed": values, "mean": sum(values) / len(values), "low": low, "high": high}


SUMMARY = {
    "full": {**_row([0.6, 0.7, 0.8], 0.45, 0.9), "hard": _row([0.6, 0.7, 0.8], 0.45, 0.95)},
    "uniform": {**_row([0.4, 0.5, 0.6], 0.25, 0.75), "hard": _row([0.3, 0.4, 0.5], 0.15, 0.65)},
}


def test_an_ordering_line_states_the_difference_and_its_welch_interval():
    # uniform: 0.7 - 0.5 = +0.200, var 0.01 / 3 each side, dof 4: half = t(0.975, 4) * sqrt(0.02 / 3) = 0.226694
    # hard: 0.7 - 0.4 = +0.300, the same half width
    assert ablate._orderings(SUMMARY) == [
        "paper order full > uniform (uniform): holds in the mean only; difference +0.200 [-0.027, +0.427] (Welch 95%)",
        "paper order full > uniform (hard): holds; difference +0.300 [+0.073, +0.527] (Welch 95%)",
    ]


def test_the_ablation_plot_puts_each_modes_two_bars_side_by_side(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    bars = []
    original = Axes.bar
    monkeypatch.setattr(Axes, "bar", lambda self, x, height, *args, **kwargs: bars.append((list(x), list(height), kwargs["yerr"])) or original(self, x, height, *args, **kwargs))
    ablate._plot(SUMMARY, ["full", "uniform"], tmp_path / "ablation.png")
    # bars 0.38 wide: uniform to the left of each mode's tick, hard to the right; error bars from the interval's ends
    (x_uniform, h_uniform, err_uniform), (x_hard, h_hard, err_hard) = bars
    assert x_uniform == pytest.approx([-0.19, 0.81]) and x_hard == pytest.approx([0.19, 1.19])
    assert h_uniform == pytest.approx([0.7, 0.5]) and h_hard == pytest.approx([0.7, 0.4])
    assert [e for side in err_uniform for e in side] == pytest.approx([0.25, 0.25, 0.2, 0.25])  # [below], [above] per mode
    header = (tmp_path / "ablation.png").read_bytes()[16:24]  # the PNG's width and height: 6 x 3.5 inches at 110 dpi
    assert (int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")) == (660, 385)
