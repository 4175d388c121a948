"""cpu-strategy-plus's two-step walkthrough and concern tracking, and the seeds CLI's conversation
audit, pinned by hand (issue 43 item 6: trainers/sead/strategy_plus.py, trainers/sead/seeds.py)."""

from __future__ import annotations

from dialogue_gym.scenarios.sead.agents import PHRASES
from dialogue_gym.types import Trajectory, Turn
from trainers.sead import seeds
from trainers.sead.strategy_plus import (
    FEATURES_PLUS,
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
