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
