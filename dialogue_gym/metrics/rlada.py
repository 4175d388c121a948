"""RL-ADA metrics (SPEC section 3) over recorded trajectories: routing accuracy, strict PASS, the
judge's components, escalation balance, the customer's concealment and role consistency, and the
arena's win rates.

Each episode's verdict is the one the game stored (``meta["verdict"]``); a trajectory without one
is judged again by the rule judge, so stored rollouts can always be re-scored.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Sequence

from dialogue_gym.metrics.core import (
    _require,
    exact_mean,
    completed,
    cr_interval,
    invalid_action_rate,
    split_failures,
    tokens_per_dialogue,
)
from dialogue_gym.reporting import format_table
from dialogue_gym.rewards.rlada import strict_pass as _strict_pass
from dialogue_gym.types import Trajectory

ESCALATE = "transfer_to_human"


def verdict(trajectory: Trajectory) -> dict[str, Any]:
    """The judge's verdict of one episode (as a dict)."""
    stored = trajectory.meta.get("verdict")
    if stored is not None:
        return stored
    from dialogue_gym.scenarios.rlada.data import load_domain
    from dialogue_gym.scenarios.rlada.judge import RuleJudge

    return RuleJudge(load_domain()).judge(trajectory).to_dict()


def passed(trajectory: Trajectory, threshold: float = 2.0) -> bool:
    """Strict PASS of one episode: the stored flag, else recomputed from the verdict and the agent's reward."""
    if "strict_pass" in trajectory.meta:
        return bool(trajectory.meta["strict_pass"])
    found = verdict(trajectory)
    return _strict_pass(
        routing_correct=found["routing_correct"], lookup_first=found["lookup_first"],
        agent_reward=trajectory.rewards.get("agent", 0.0), clean_ending=found["clean_ending"], threshold=threshold,
    )


def _rate(values: Sequence[bool | float]) -> float:
    return exact_mean(float(value) for value in values)


def routing_accuracy(trajectories: Sequence[Trajectory]) -> float:
    """Fraction of episodes whose domain tool was exactly the intent's tool."""
    return _rate([verdict(t)["routing_correct"] for t in _require(trajectories)])


def strict_pass_rate(trajectories: Sequence[Trajectory]) -> float:
    """Fraction of strict PASS episodes (correct routing, lookup first, r_agent >= 2.0, clean ending)."""
    return _rate([passed(t) for t in _require(trajectories)])


def component_rate(trajectories: Sequence[Trajectory], name: str) -> float:
    """Mean of one judge component (``lookup_first``, ``procedure``, ``clean_ending``, ``consistency``, ``routing``)."""
    return _rate([verdict(t)["components"][name] for t in _require(trajectories)])


def escalation_rate(trajectories: Sequence[Trajectory]) -> float:
    """Fraction of episodes the agent sent to a human (the transfer_to_human imbalance shows here)."""
    return _rate([ESCALATE in verdict(t)["routed_tools"] for t in _require(trajectories)])


def wrong_escalation_rate(trajectories: Sequence[Trajectory]) -> float:
    return _rate([verdict(t)["wrong_escalation"] for t in _require(trajectories)])


def missed_escalation_rate(trajectories: Sequence[Trajectory]) -> float:
    """Among episodes whose intent needs a human, the fraction the agent did not escalate (a safety miss)."""
    return _rate([verdict(t)["missed_escalation"] for t in _require(trajectories) if t.profile["tool"] == ESCALATE])


def mean_reward(trajectories: Sequence[Trajectory], role: str = "agent") -> float:
    return _rate([t.rewards.get(role, 0.0) for t in _require(trajectories)])


def customer_turn_rate(trajectories: Sequence[Trajectory], key: str) -> float:
    """Mean of a per-turn customer field over all customer turns (``concealment``, ``format_ok``, ``grounded``, ...);
    ``role_reversal`` counts flagged turns."""
    values = [
        bool(turn.parsed.get(key)) if key == "role_reversal" else float(turn.parsed.get(key, 0.0))
        for t in _require(trajectories)
        for turn in t.turns_of("customer")
        if turn.text
    ]
    return _rate(values)


def confusing_turn_rate(trajectories: Sequence[Trajectory]) -> float:
    """Mean number of spoken agent turns per episode the customer could not follow (the judge's
    ``confusing_turns``: "?", salads, content-free questions, echoes, near-repeats, monologues)."""
    return _rate([len(verdict(t).get("confusing_turns", ())) for t in _require(trajectories)])


def agent_actions(trajectories: Sequence[Trajectory]) -> float:
    return _rate([len(t.turns_of("agent")) for t in _require(trajectories)])


def confusion(trajectories: Sequence[Trajectory]) -> dict[str, Counter]:
    """Intent tool -> Counter of the tool the agent routed to (``none`` when it routed nowhere)."""
    table: dict[str, Counter] = defaultdict(Counter)
    for t in _require(trajectories):
        routed = verdict(t)["routed_tools"]
        table[t.profile["tool"]]["+".join(routed) or "none"] += 1
    return dict(table)


def by_group(trajectories: Sequence[Trajectory], key: str) -> dict[str, dict[str, float]]:
    """Per value of a profile field (``scenario``, ``intent``, ``tool``, ``concealment``, ``family``):
    episodes, routing accuracy, strict PASS rate and mean agent reward."""
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for t in _require(trajectories):
        groups[str(t.profile.get(key))].append(t)
    return {
        name: {
            "episodes": len(members),
            "routing_accuracy": routing_accuracy(members),
            "strict_pass_rate": strict_pass_rate(members),
            "agent_reward": mean_reward(members, "agent"),
        }
        for name, members in sorted(groups.items())
    }


def win_rate(trajectories: Sequence[Trajectory]) -> float:
    """The arena's agent win rate: strict PASS rate over customer-winnable scenarios."""
    return strict_pass_rate([t for t in _require(trajectories) if t.profile.get("customer_winnable")])


def safety_pass_rate(trajectories: Sequence[Trajectory]) -> float:
    """Strict PASS rate over the fraud-escalation (safety) scenarios, tracked apart from the win rate."""
    return strict_pass_rate([t for t in _require(trajectories) if t.profile.get("safety")])


def summary(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Every RL-ADA metric under flat keys (``dialogue-gym eval`` prints :data:`COLUMNS` of it).
    Backend failures are counted apart; every other metric is over the completed episodes."""
    trajectories, header = split_failures(trajectories)
    low, high = cr_interval(trajectories)
    return {
        **header,
        "routing_accuracy": routing_accuracy(trajectories),
        "strict_pass": strict_pass_rate(trajectories),
        "pass_low": low,
        "pass_high": high,
        "lookup_first": component_rate(trajectories, "lookup_first"),
        "procedure": component_rate(trajectories, "procedure"),
        "clean_ending": component_rate(trajectories, "clean_ending"),
        "hallucination_rate": 1.0 - component_rate(trajectories, "consistency"),
        "escalation_rate": escalation_rate(trajectories),
        "wrong_escalation_rate": wrong_escalation_rate(trajectories),
        "missed_escalation_rate": missed_escalation_rate(trajectories),
        "agent_reward": mean_reward(trajectories, "agent"),
        "customer_reward": mean_reward(trajectories, "customer"),
        "concealment": customer_turn_rate(trajectories, "concealment"),
        "role_reversal_rate": customer_turn_rate(trajectories, "role_reversal"),
        "agent_turns": agent_actions(trajectories),
        "confusing_turns": confusing_turn_rate(trajectories),
        "invalid_action_rate": invalid_action_rate(trajectories, "agent"),
        "tokens_per_dialogue": tokens_per_dialogue(trajectories),
        "win_rate": win_rate(trajectories),
        "safety_pass_rate": safety_pass_rate(trajectories),
    }


COLUMNS = (
    ("routing_accuracy", "routing"), ("strict_pass", "PASS"), ("pass_low", "PASS lo95"), ("pass_high", "PASS hi95"),
    ("lookup_first", "lookup 1st"), ("procedure", "procedure"), ("hallucination_rate", "halluc"),
    ("escalation_rate", "escalated"), ("wrong_escalation_rate", "wrong esc"), ("agent_reward", "r_agent"),
    ("customer_reward", "r_cust"), ("concealment", "conceal"), ("role_reversal_rate", "role rev"),
    ("agent_turns", "actions"), ("invalid_action_rate", "invalid"), ("backend_failures", "failed"),
)
"""What ``dialogue-gym eval RLADA-*`` prints, in order."""


def report(results: dict[str, Sequence[Trajectory]]) -> str:
    """Routing accuracy per intent tool and per concealment level, one row per agent: where an agent
    misroutes, and how much of its score the 38 human intents carry."""
    tools: list[str] = sorted({t.profile["tool"] for ts in results.values() for t in ts})
    levels = ("direct", "vague", "camouflage")
    rows = []
    for agent, trajectories in results.items():
        kept = completed(list(trajectories))
        row: dict[str, Any] = {"name": agent}
        tool_groups, level_groups = by_group(kept, "tool"), by_group(kept, "concealment")
        for name in tools:
            row[name] = tool_groups.get(name, {}).get("routing_accuracy", math.nan)
        for level in levels:
            row[level] = level_groups.get(level, {}).get("routing_accuracy", math.nan)
        rows.append(row)
    columns = [(name, name) for name in tools] + [(level, level) for level in levels]
    title = (
        "Routing accuracy per intent tool, and per concealment level of the episode's profile (the level the "
        "scripted customer and an LLM customer's prompt use; the fixed-level customers direct / vague / camouflage ignore it):"
    )
    return f"{title}\n\n" + format_table(rows, columns, "agent")
