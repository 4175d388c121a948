"""OT-DTW and W1-Turns on fixtures where the right formula and the plausible wrong ones differ.

The first fixtures had equal-length diagonal paths and equal-mean groups, so OT-DTW normalised by the
longer session instead of the path, or W1-Turns replaced by a difference of mean turn counts, gave
the same numbers. Here: a non-diagonal optimal path longer than either session, unequal group sizes,
turn-count distributions with equal means, and an OT plan that is neither uniform nor nearest-neighbour.
Every expected number is worked out in the comments.
"""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.metrics import tracer
from dialogue_gym.types import Outcome, Trajectory, Turn

X, Y = (1.0, 0.0), (0.0, 1.0)


class TwoWords:
    """An embedder with exactly known geometry: "x" and "y" are orthogonal unit vectors, so the
    cosine distance is 0 between equal replies and 1 between different ones."""

    def embed(self, texts):
        return np.array([{"x": X, "y": Y}[text] for text in texts]).reshape(len(texts), 2)


def session(group, session_id, simulated, real, outcome="dropout"):
    """A trajectory whose user replies are ``simulated`` and whose paired reference session replied ``real``."""
    turns = []
    for text in simulated:
        turns += [Turn("assistant", "hello", "hello"), Turn("user", text, text, {"intent_level": 2}, (2,))]
    reference = {
        "session_id": session_id, "group_id": group, "intents": [2] * len(real), "outcome": outcome,
        "replies": list(real), "synthetic": True,
    }
    return Trajectory("TRACER-UserSim-v0", 0, {}, turns, Outcome.HANGUP, {"user": 0.0}, meta={"reference": reference})


def test_semantic_dtw_divides_by_the_path_length_not_the_longer_session():
    # [x, y, x] vs [y, x, y]: local costs [[1,0,1],[0,1,0],[1,0,1]]; optimal path (0,0),(0,1),(1,2),(2,2)
    # with cost 1 + 0 + 0 + 1 = 2 and 4 steps -> 2 / 4 = 0.5. By the longer session: 2 / 3; by both: 2 / 6.
    a = TwoWords().embed(["x", "y", "x"])
    b = TwoWords().embed(["y", "x", "y"])
    assert tracer.semantic_dtw(a, b) == 0.5


def test_semantic_dtw_of_unequal_lengths():
    # [x, x] vs [x, y, y]: costs [[0,1,1],[0,1,1]]; D00=0 D01=1 D02=2 / D10=0 D11=1 D12=2; traceback from
    # (1,2): diagonal D01=1 ties (i,j-1)=D11=1 -> (0,1) -> (0,0): 3 steps, cost 2 -> 2/3 (= by max length
    # here; by the shorter session it would be 1).
    assert tracer.semantic_dtw(TwoWords().embed(["x", "x"]), TwoWords().embed(["x", "y", "y"])) == pytest.approx(2 / 3)


def test_ot_dtw_by_hand():
    trajectories = [
        # group a: one simulated, one real session -> the OT cost is their semantic DTW, 0.5 (above).
        session("a", "a1", ["x", "y", "x"], ["y", "x", "y"]),
        # group b: three simulated sessions (mass 1/3 each) against two real ones (mass 1/2 each).
        # costs sim -> (real [x], real [y]): [x] -> (0, 1), [x] -> (0, 1), [y] -> (1, 0).
        # Optimal plan: real [x] takes 1/2 from the two [x] sessions (free); real [y] takes 1/3 from
        # [y] (free) and the last 1/6 from an [x] session at cost 1 -> OT = 1/6.
        # (Mean over all pairs: 3/6 = 1/2; nearest real per simulated session: 0.)
        session("b", "b1", ["x"], ["x"]),
        session("b", "b1", ["x"], ["x"]),
        session("b", "b2", ["y"], ["y"]),
    ]
    assert tracer.ot_dtw(trajectories[:1], TwoWords()) == 0.5
    assert tracer.ot_dtw(trajectories[1:], TwoWords()) == pytest.approx(1 / 6)
    # mean over groups: (0.5 + 1/6) / 2 = 1/3 (with max-length normalisation it would be (2/3 + 1/6) / 2 = 5/12)
    assert tracer.ot_dtw(trajectories, TwoWords()) == pytest.approx(1 / 3)


def test_w1_turns_is_not_a_difference_of_means():
    trajectories = [
        # group a: simulated turn counts {2, 2, 8} (3 rollouts), real {3, 5} (2 distinct sessions, one counted
        # once although it has two rollouts). Both means are 4, so a difference of means gives 0.
        # CDFs: F_sim = 2/3 on [2, 8), F_real = 1/2 on [3, 5), 1 from 5.
        # W1 = integral |F_sim - F_real| = (2/3)(3-2) + (2/3-1/2)(5-3) + (1-2/3)(8-5) = 2/3 + 1/3 + 1 = 2.
        session("a", "a1", ["x"] * 2, ["x"] * 3),
        session("a", "a1", ["x"] * 2, ["x"] * 3),
        session("a", "a2", ["x"] * 8, ["x"] * 5),
        # group b: simulated {4} against real {4} -> 0.
        session("b", "b1", ["x"] * 4, ["x"] * 4),
    ]
    assert tracer.w1_turns(trajectories[:3]) == pytest.approx(2.0)
    # mean over groups, not pooled: (2 + 0) / 2 = 1. (Pooled {2,2,8,4} vs {3,5,4}: a different number.)
    assert tracer.w1_turns(trajectories) == pytest.approx(1.0)


def test_w1_turns_with_a_single_real_session_is_the_mean_absolute_gap():
    # simulated {1, 5} against real {3}: W1 = mean |t - 3| = 2, while the means are equal (3 and 3).
    trajectories = [session("a", "a1", ["x"], ["x"] * 3), session("a", "a1", ["x"] * 5, ["x"] * 3)]
    assert tracer.w1_turns(trajectories) == pytest.approx(2.0)
