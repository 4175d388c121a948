"""RL-ADA's plots drawn from what a run folder holds (issue 43 item 6, trainers/rlada/plots.py): the
held-out comparison only once both held-out results exist, the match plots only once a match has."""

from __future__ import annotations

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
