"""cpu-strategy-plus's two-step walkthrough and concern tracking, and the seeds CLI's conversation
audit, pinned by hand (issue 43 item 6: trainers/sead/strategy_plus.py, trainers/sead/seeds.py)."""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.scenarios.sead.agents import PHRASES
from dialogue_gym.types import Trajectory, Turn
from trainers.sead import seeds
from trainers.sead.strategy_plus import (
    FEATURES_PLUS,
    MOVES_PLUS,
    StrategyPlusPolicy,
    features_plus,
    render_plus,
    step_after_next,
)


def _heard(memory, turn, line):
    observation = {"turn": turn, "messages": [{"role": "user", "content": line}]}
    return {FEATURES_PLUS[i] for i in features_plus(observation, memory)}


def test_guide2_gives_two_steps_plainly_then_rephrased_when_it_has_to_give_them_again():
    memory = StrategyPlusPolicy().start({}, seed=0)
    plain = f"{PHRASES['guide'][0]} {PHRASES['guide'][1]}"
    again = f"{PHRASES['guide_again'][0]} {PHRASES['guide_again'][1]}"
    # the owner confirmed nothing in between: each step's phrasing alternates plain, rephrased, plain
    assert [render_plus("guide2", memory) for _ in range(3)] == [plain, again, plain]
    assert memory["last"] == "guide2" and memory["steps_given"] is True


def test_the_step_after_next_is_none_once_the_next_step_is_the_last():
    assert step_after_next({"steps_done": 1}) == PHRASES["guide"][2]
    assert step_after_next({"steps_done": 2}) is None
    memory = StrategyPlusPolicy().start({}, seed=0)
    memory["steps_done"] = 2
    assert render_plus("guide2", memory) == PHRASES["guide"][2]  # only the claim is left to give


def test_confirming_one_step_after_another_is_not_a_concern_said_again():
    memory = StrategyPlusPolicy().start({}, seed=0)
    _heard(memory, 0, "(call)")
    render_plus("guide2", memory)
    first = _heard(memory, 1, "Okay, the app is open.")
    render_plus("guide2", memory)
    second = _heard(memory, 2, "Okay, I tapped 'get more exposure'.")
    assert "cue:guide" in first and "cue:guide" in second  # the owner asks for the next step both times
    assert "concern_again" not in second  # progress, not an unanswered concern


def test_near_repeats_are_counted_within_a_call_only():
    line = "There are no hidden fees; the credit is free of charge."
    calls = [Trajectory("SEAD-Outbound-v0", seed, {}, [Turn("agent", line, line), Turn("user", "", "Okay.")]) for seed in (0, 1)]
    audit = seeds.conversation_audit(calls)
    # the same line once in each of two calls: nobody heard it twice
    assert audit["agent_turns"] == 2 and audit["turn:near_repeat"] == 0.0
    assert audit["turn:distinct_share"] == 1 / 2 and audit["turn:top_share"] == 2 / 2 and audit["turn:invalid"] == 0.0
    assert seeds.conversation_audit([])["turn:near_repeat"] == 0.0 and seeds.conversation_audit([])["agent_turns"] == 0


def test_the_estimate_reads_ready_at_cooperation_3_and_doubtful_at_trust_2():
    memory = StrategyPlusPolicy().start({}, seed=0)
    memory["estimate"] = [3, 2, 3]  # nothing heard yet at turn 0: the estimate stays as it is
    assert _heard(memory, 0, "(call)") == {"bias", "first_turn", "steps_0", "estimate:ready"}
    memory = StrategyPlusPolicy().start({}, seed=0)
    memory["estimate"] = [1, 1, 2]
    assert _heard(memory, 0, "(call)") == {"bias", "first_turn", "steps_0", "estimate:upset", "estimate:doubtful", "estimate:unwilling"}


def test_two_pitch_pairs_said_are_counted_and_other_moves_are_not():
    memory = StrategyPlusPolicy().start({}, seed=0)
    render_plus("empathy", memory)
    assert memory.get("pairs_said", 0) == 0
    render_plus("value+evidence", memory)
    render_plus("cost+rules", memory)
    assert memory["pairs_said"] == 2
    assert "pairs_said_2+" in _heard(memory, 1, "Okay.")


class Draw:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


def test_a_draw_past_the_cumulative_total_picks_the_last_move():
    policy = StrategyPlusPolicy()
    memory = policy.start({}, seed=0)
    policy.act({"turn": 0, "messages": [{"role": "user", "content": "(call)"}]}, memory)
    memory["rng"] = Draw(2.0)  # past the total, as float rounding of the cumulative sum can leave a draw
    policy.act({"turn": 1, "messages": [{"role": "user", "content": "Okay."}]}, memory)
    assert memory["steps"][-1][1] == len(MOVES_PLUS) - 1


def test_the_entropy_bonus_is_averaged_over_the_episodes():
    weights = np.random.default_rng(0).normal(size=(len(FEATURES_PLUS), len(MOVES_PLUS)))
    record = {"steps": [[[0, 3], 1]]}
    one, two = (StrategyPlusPolicy(learning_rate=1.0, weights=weights, entropy_coef=1.0) for _ in range(2))
    one.update([record], [0.0])  # a zero advantage: only the entropy bonus moves the weights
    two.update([record, record], [0.0, 0.0])
    assert np.abs(one.weights - weights).sum() > 0
    assert two.weights == pytest.approx(one.weights)  # the same episode twice is the same mean bonus


def test_the_seeds_cli_defaults_are_the_documented_run(monkeypatch):
    # the module's usage line: --preset cpu-strategy-plus --seeds 5 [--out runs/sead-seeds], on the 1,200 held-out profiles
    parsed = []
    monkeypatch.setattr(seeds, "_seeds", lambda args: parsed.append(vars(args)) or 0)
    assert seeds.main([]) == 0
    assert parsed == [{"preset": "cpu-strategy-plus", "seeds": 5, "iterations": None, "eval_episodes": 1200, "out": "runs/sead-seeds", "workers": 2}]


def test_the_seeds_cli_refuses_negative_iterations_before_training(capsys):
    assert seeds.main(["--seeds", "2", "--iterations", "-1", "--workers", "1", "--out", "never-written"]) == 2
    assert "--iterations must be >= 0, got -1." in capsys.readouterr().err
