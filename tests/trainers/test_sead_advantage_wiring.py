"""The SEAD trainer uses SEAD's GRPO baseline by default (SPEC §1: A_i = R_i - mean_j R_j, not a
standardisation; the formulas are in tests/rewards/test_advantage_formulas.py): the advantages its
policy update receives are checked against the rewards of the dialogues it played."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.grpo.strategy import StrategyPolicy
from trainers.sead import train as sead_train
from trainers.sead.config import build_config


def test_the_sead_trainer_updates_with_batch_mean_advantages_by_default(tmp_path, monkeypatch):
    """The dialogues' rewards are overwritten with known values as they finish (an untrained policy may
    win none, which would hide the baseline), so the check does not depend on the simulator."""
    kinds, received = [], []
    original_for, original_update, original_play = sead_train.advantages_for, StrategyPolicy.update, sead_train.play

    def advantages_for(rewards, kind, groups=None):
        kinds.append(kind)
        return original_for(rewards, kind, groups)

    def update(self, records, advantages):
        received.append(np.asarray(advantages, dtype=float))
        return original_update(self, records, advantages)

    def play(games, driver, profiles, seeds, policy, on_done):
        def scored(index, trajectory):
            trajectory.rewards = {**trajectory.rewards, "agent": float(index % 3 == 0)}
            on_done(index, trajectory)

        original_play(games, driver, profiles, seeds, policy, scored)

    monkeypatch.setattr(sead_train, "advantages_for", advantages_for)
    monkeypatch.setattr(StrategyPolicy, "update", update)
    monkeypatch.setattr(sead_train, "play", play)
    sead_train.train(build_config("cpu-strategy", iterations=1, batch_size=12, eval_episodes=0, plots=False, run_dir=str(tmp_path / "run")))
    assert kinds == ["batch_mean"], "SPEC §1: the SEAD trainer's default baseline is the batch mean"
    # rewards 1 for episodes 0, 3, 6, 9 and 0 for the other 8: mean 1/3 -> A = 2/3 or -1/3
    # (standardised: std = sqrt(2)/3 -> 1.414 or -0.707)
    expected = [2 / 3 if e % 3 == 0 else -1 / 3 for e in range(12)]
    assert len(received) == 1 and received[0] == pytest.approx(expected, abs=1e-12)
