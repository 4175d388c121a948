"""RL-ADA's plots drawn from what a run folder holds (issue 43 item 6, trainers/rlada/plots.py): the
held-out comparison only once both held-out results exist, the match plots only once a match has."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainers.common import RunDir
from trainers.rlada.plots import plot_run

HELDOUT = {"routing_accuracy": 0.5, "strict_pass": 0.25, "episodes": 8}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_held_out_plot_needs_both_held_out_results(tmp_path):
    pytest.importorskip("matplotlib")
    for name, states, written in (
        ("before_only", {"heldout_before": HELDOUT}, []),
        ("after_only", {"heldout_after": HELDOUT}, []),
        ("both", {"heldout_before": HELDOUT, "heldout_after": {**HELDOUT, "strict_pass": 0.75}}, ["heldout_before_after.png"]),
    ):
        run = RunDir.create(tmp_path / name, {})
        for state, data in states.items():
            run.save_state(state, data)
        assert plot_run(run) == written, name
        assert sorted(p.name for p in (run.path / "plots").iterdir()) == written
        run.close()


class Recorder:
    """Stands in for matplotlib's figure, axis and pyplot: records every call, draws nothing."""

    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            if name == "subplots":
                return self, self
            if name == "bar":
                return [Recorder(self.calls) for _ in args[1]]
            if name == "savefig":
                Path(args[0]).touch()
            return None

        return call


def test_the_match_plots_draw_each_rate_from_its_own_key(tmp_path, monkeypatch):
    from trainers.rlada import plots

    calls = []
    monkeypatch.setattr(plots, "_pyplot", lambda: Recorder(calls))
    run = RunDir.create(tmp_path / "run", {"win_threshold": 0.7})
    matches = [
        {"match": 1, "win_rate": 0.2, "safety_pass_rate": 0.9, "per_scenario": {}},
        {"match": 2, "win_rate": 0.4, "safety_pass_rate": 0.6, "per_scenario": {}},
    ]
    run.save_state("progress", {"matches": matches})
    assert plot_run(run) == ["win_rate_per_match.png", "per_scenario.png"]
    lines = {kwargs["label"]: (list(args[0]), list(args[1])) for name, args, kwargs in calls if name == "plot"}
    assert lines == {"agent win rate (customer-winnable)": ([1, 2], [0.2, 0.4]), "safety scenarios PASS": ([1, 2], [0.9, 0.6])}
    assert [args[0] for name, args, kwargs in calls if name == "axhline"] == [0.7]  # the run's own stopping threshold
    run.close()


def test_the_per_scenario_bars_pair_the_first_and_last_match_side_by_side(tmp_path, monkeypatch):
    from dialogue_gym.scenarios.rlada.data import load_domain
    from trainers.rlada import plots

    calls = []
    monkeypatch.setattr(plots, "_pyplot", lambda: Recorder(calls))
    names = [scenario.id for scenario in load_domain().arena]
    first = {name: i / 20 for i, name in enumerate(names)}
    last = {name: 1 - i / 20 for i, name in enumerate(names)}
    matches = [{"match": n, "win_rate": 0.5, "safety_pass_rate": 0.5, "per_scenario": scores} for n, scores in ((1, first), (2, {}), (3, last))]
    run = RunDir.create(tmp_path / "run", {})
    run.save_state("progress", {"matches": matches})
    plot_run(run)
    (one, three) = [(list(args[0]), list(args[1]), kwargs) for name, args, kwargs in calls if name == "bar"]
    assert (one[1], one[2]["label"]) == ([first[n] for n in names], "match 1") and (three[1], three[2]["label"]) == ([last[n] for n in names], "match 3")
    for x_one, x_three in zip(one[0], three[0]):  # each scenario's pair touches and does not overlap
        assert x_three - x_one == pytest.approx((one[2]["width"] + three[2]["width"]) / 2) and x_three > x_one
    run.close()


def test_the_held_out_bars_stand_side_by_side_each_from_its_own_result(tmp_path, monkeypatch):
    from trainers.rlada import plots

    calls = []
    monkeypatch.setattr(plots, "_pyplot", lambda: Recorder(calls))
    run = RunDir.create(tmp_path / "run", {})
    run.save_state("heldout_before", HELDOUT)
    run.save_state("heldout_after", {"routing_accuracy": 0.75, "strict_pass": 0.5, "episodes": 8})
    assert plot_run(run) == ["heldout_before_after.png"]
    (before, after) = [(list(args[0]), list(args[1]), kwargs) for name, args, kwargs in calls if name == "bar"]
    assert (before[1], before[2]["label"]) == ([0.5, 0.25], "before (DA0)") and (after[1], after[2]["label"]) == ([0.75, 0.5], "after")
    for x_before, x_after in zip(before[0], after[0]):  # each pair of bars touches but does not overlap
        assert x_after - x_before == pytest.approx((before[2]["width"] + after[2]["width"]) / 2) and x_after > x_before
    run.close()
