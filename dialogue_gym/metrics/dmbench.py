"""DM-Bench metrics (paper 002, section 6; SPEC section 2): conversion rate (CR), conversion turns
(CT), response quality (RQ) and its four dimensions per agent, and the Spearman rank correlation of
CR and RQ across agents. Pure functions of ``DMBench-Assistant-v0`` trajectories; RQ is read from the
judge's scores in ``meta["response_quality"]`` (recorded by the env's judge, or added later in one
batch by :func:`rescore`, e.g. with an LLM judge).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

from dialogue_gym.metrics.core import (
    _require,
    exact_mean,
    cr,
    cr_interval,
    invalid_action_rate,
    split_failures,
    tokens_per_dialogue,
)
from dialogue_gym.scenarios.tracer.judges import DIMENSIONS
from dialogue_gym.types import Outcome, Trajectory


def conversion_turns(trajectories: Sequence[Trajectory]) -> float:
    """CT: mean user turns of the sessions that converted (NaN when none did)."""
    turns = [len(t.turns_of("user")) for t in _require(trajectories) if t.outcome is Outcome.SUCCESS]
    return exact_mean(turns)


def response_quality(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Mean judge score per dimension and ``rq`` over the trajectories that have one (NaN-skipping)."""
    scored = [t.meta["response_quality"] for t in _require(trajectories) if "response_quality" in t.meta]
    result = {}
    for name in (*DIMENSIONS, "rq"):
        values = [s[name] for s in scored if isinstance(s.get(name), (int, float)) and not math.isnan(s[name])]
        result[name] = exact_mean(values)
    return result


def rescore(trajectories: Sequence[Trajectory], judge: Any) -> list[Trajectory]:
    """Copies of ``trajectories`` with ``meta["response_quality"]`` from ``judge`` (anything with
    ``score_batch``; an LLM judge scores them all in one backend batch)."""
    trajectories = list(_require(trajectories))
    items = [([(turn.role, turn.text) for turn in t.turns], t.profile.get("merchant", {})) for t in trajectories]
    scores = judge.score_batch(items)
    return [
        dataclasses.replace(t, meta={**t.meta, "response_quality": {**score, "judge": getattr(judge, "name", type(judge).__name__)}})
        for t, score in zip(trajectories, scores)
    ]


def summary(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Every DM-Bench metric of one agent; computed over the completed episodes."""
    trajectories, header = split_failures(trajectories)
    low, high = cr_interval(trajectories)
    return {
        **header,
        "cr": cr(trajectories),
        "cr_low": low,
        "cr_high": high,
        "conversion_turns": conversion_turns(trajectories),
        "user_turns": exact_mean(len(t.turns_of("user")) for t in trajectories),
        **response_quality(trajectories),
        "invalid_action_rate": invalid_action_rate(trajectories, "assistant"),
        "tokens_per_dialogue": tokens_per_dialogue(trajectories, "assistant"),
    }


COLUMNS = (
    ("cr", "CR"), ("cr_low", "CR lo95"), ("cr_high", "CR hi95"), ("conversion_turns", "CT"), ("rq", "RQ"),
    ("accuracy", "acc"), ("helpfulness", "help"), ("informativeness", "info"), ("empathy", "emp"),
    ("user_turns", "turns"), ("invalid_action_rate", "invalid"), ("tokens_per_dialogue", "tokens/dlg"),
    ("backend_failures", "failed"),
)


def spearman(summaries: dict[str, dict[str, Any]], x: str = "cr", y: str = "rq") -> tuple[float, float, int]:
    """Spearman's rho (and its p-value) between metric ``x`` and ``y`` across agents, and the number of
    agents with both; NaN below three agents."""
    from scipy.stats import spearmanr

    pairs = [(s[x], s[y]) for s in summaries.values() if not (math.isnan(s[x]) or math.isnan(s[y]))]
    if len(pairs) < 3:
        return math.nan, math.nan, len(pairs)
    result = spearmanr([p[0] for p in pairs], [p[1] for p in pairs])
    return float(result.statistic), float(result.pvalue), len(pairs)


def report(results: dict[str, Sequence[Trajectory]]) -> str:
    """The cross-agent line of the DM-Bench report: Spearman rho(CR, RQ)."""
    rho, p, n = spearman({agent: summary(trajectories) for agent, trajectories in results.items()})
    if n < 3:
        return f"Spearman rho(CR, RQ) needs at least 3 agents with both scores; got {n}."
    return f"Spearman rho(CR, RQ) across {n} agents: {rho:.3f} (p = {p:.3f})"
