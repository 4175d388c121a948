"""Per-episode parts of each id's headline metrics, so a run can be resampled without its transcripts.

A headline metric of a run is a ratio of sums over its episodes, ``sum(numerator) / sum(denominator)``
(:func:`~dialogue_gym.metrics.core.ratio_of_sums`): a rate or a mean over episodes has denominator 1
for an episode it counts and 0 for one it leaves out (a backend failure; a failed call, for ATT(succ));
a mean over turns (SEAD's UPA, RL-ADA's concealment) has the episode's turn count. A bootstrap resample
or a paired comparison then only sums these pairs, and a results file stores two numbers per episode
and metric. Each function equals the scenario summary's value of the same key on any set of episodes
(``tests/metrics/test_episodes.py``); ``customer_win`` (1 - strict PASS) is the one key no summary has.

The registry names each id's function (``Entry.episode_scores``) and the key that is the learner's
per-episode success (``Entry.pass_metric``, which pass^k counts). Set-level metrics (F1, Group-dPCR,
W1-Turns, OT-DTW, the Wilson bounds) are not sums over episodes and are not here.
"""

from __future__ import annotations

import math
from typing import Sequence

from dialogue_gym.metrics import dmbench as dmbench_metrics
from dialogue_gym.metrics import rlada as rlada_metrics
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.metrics import tracer as tracer_metrics
from dialogue_gym.types import Outcome, Trajectory

Scores = dict[str, tuple[float, float]]
"""metric key -> (numerator, denominator) of one episode."""

LABELS = {"customer_win": "cust win"}
"""Labels of headline keys that no summary's ``COLUMNS`` names."""


def _counted(value: float, weight: float = 1.0) -> tuple[float, float]:
    """An episode's (numerator, denominator) for a value it contributes with ``weight``; a NaN value
    (the metric is undefined for this episode) leaves the episode out."""
    return (0.0, 0.0) if not weight or math.isnan(value) else (float(value) * weight, float(weight))


def _left_out(keys: Sequence[str]) -> Scores:
    return {key: (0.0, 0.0) for key in keys}


SEAD_KEYS = ("cr", "att_success", "att_all", "upa", "ei", "ti", "ci")


def sead(trajectory: Trajectory) -> Scores:
    """CR, ATT over successes and over all, UPA (weighted by the episode's scored agent turns), EI / TI / CI."""
    if trajectory.outcome is Outcome.BACKEND_FAILURE:
        return _left_out(SEAD_KEYS)
    one = [trajectory]
    success = float(trajectory.outcome is Outcome.SUCCESS)
    turns = float(sead_metrics.agent_turns(trajectory))
    scored_turns = len(sead_metrics._estimated_turns(one))
    return {
        "cr": (success, 1.0),
        "att_success": (turns * success, success),
        "att_all": (turns, 1.0),
        "upa": _counted(sead_metrics.upa(one), scored_turns),
        "ei": _counted(sead_metrics.ei(one).mean),
        "ti": _counted(sead_metrics.ti(one).mean),
        "ci": _counted(sead_metrics.ci(one).mean),
    }


TRACER_KEYS = ("acc", "pcr", "reward", "intent_dtw", "user_turns")


def tracer(trajectory: Trajectory) -> Scores:
    """ACC (the simulated outcome equals the paired real one), PCR, reward, intent DTW, user turns."""
    if trajectory.outcome is Outcome.BACKEND_FAILURE:
        return _left_out(TRACER_KEYS)
    one = [trajectory]
    return {
        "acc": _counted(tracer_metrics.acc(one)),
        "pcr": _counted(tracer_metrics.pcr(one)),
        "reward": _counted(tracer_metrics.mean_reward(one)),
        "intent_dtw": _counted(tracer_metrics.intent_dtw(one)),
        "user_turns": (float(len(trajectory.turns_of("user"))), 1.0),
    }


DMBENCH_KEYS = ("cr", "conversion_turns", "rq", "user_turns")


def dmbench(trajectory: Trajectory) -> Scores:
    """CR, conversion turns (over the sessions that converted), RQ (over the judged ones), user turns."""
    if trajectory.outcome is Outcome.BACKEND_FAILURE:
        return _left_out(DMBENCH_KEYS)
    one = [trajectory]
    success = float(trajectory.outcome is Outcome.SUCCESS)
    user_turns = float(len(trajectory.turns_of("user")))
    return {
        "cr": (success, 1.0),
        "conversion_turns": (user_turns * success, success),
        "rq": _counted(dmbench_metrics.response_quality(one)["rq"]),
        "user_turns": (user_turns, 1.0),
    }


RLADA_AGENT_KEYS = ("strict_pass", "routing_accuracy", "agent_reward", "escalation_rate", "wrong_escalation_rate", "hallucination_rate")


def rlada_agent(trajectory: Trajectory) -> Scores:
    """Strict PASS, routing, the agent's reward, escalation and wrong escalation, hallucination."""
    if trajectory.outcome is Outcome.BACKEND_FAILURE:
        return _left_out(RLADA_AGENT_KEYS)
    one = [trajectory]
    return {
        "strict_pass": _counted(rlada_metrics.strict_pass_rate(one)),
        "routing_accuracy": _counted(rlada_metrics.routing_accuracy(one)),
        "agent_reward": _counted(rlada_metrics.mean_reward(one, "agent")),
        "escalation_rate": _counted(rlada_metrics.escalation_rate(one)),
        "wrong_escalation_rate": _counted(rlada_metrics.wrong_escalation_rate(one)),
        "hallucination_rate": _counted(1.0 - rlada_metrics.component_rate(one, "consistency")),
    }


RLADA_CUSTOMER_KEYS = ("customer_win", "customer_reward", "strict_pass", "routing_accuracy", "concealment")


def rlada_customer(trajectory: Trajectory) -> Scores:
    """The customer's win (the agent missed strict PASS), its reward, the agent's PASS and routing, and
    concealment (weighted by the episode's spoken customer turns)."""
    if trajectory.outcome is Outcome.BACKEND_FAILURE:
        return _left_out(RLADA_CUSTOMER_KEYS)
    one = [trajectory]
    passed = rlada_metrics.strict_pass_rate(one)
    spoken = sum(1 for turn in trajectory.turns_of("customer") if turn.text)
    return {
        "customer_win": _counted(1.0 - passed),
        "customer_reward": _counted(rlada_metrics.mean_reward(one, "customer")),
        "strict_pass": _counted(passed),
        "routing_accuracy": _counted(rlada_metrics.routing_accuracy(one)),
        "concealment": _counted(rlada_metrics.customer_turn_rate(one, "concealment"), spoken),
    }
