"""Run files for the viewer's tests: played ones, and a hostile record with every flag set."""

from __future__ import annotations

import json

from dialogue_gym.evaluation import Evaluator
from envs_registry import REGISTRY

HOSTILE_TEXT = 'ok </script><script>alert(1)</script> <img src=x onerror="alert(2)"> <!-- ]]> \ud800 & \u2028 end'
"""Dialogue text no page may run or choke on: a script end, markup, a lone surrogate, a JavaScript line separator."""


def play(env_id: str, path, agents=None, episodes: int = 2) -> None:
    """A run file as `dialogue-gym eval ENV_ID --out` writes it (without the metric summary)."""
    entry = next(e for e in REGISTRY if e.id == env_id)
    first = Evaluator(env_id, (agents or entry.agents)[0], learner=entry.default_learner)
    for evaluator in [first, *(first.for_agent(name) for name in (agents or entry.agents)[1:])]:
        evaluator.run(episodes, 0, out=path)


def hostile_record(**changes) -> dict:
    """A SEAD record with :data:`HOSTILE_TEXT`, an invalid action, a turn failing every health check, markup in
    its agent name, profile and meta; ``changes`` replace top-level fields."""
    turns = [
        {"role": "agent", "raw": f"<response>{HOSTILE_TEXT}</response>", "text": HOSTILE_TEXT, "parsed": {"estimate": [1, 1, 1]},
         "state": [1, 2, 3], "invalid": "missing <trust_score> </script>", "token_ids": None, "logprobs": None},
        {"role": "user", "raw": "fine", "text": "fine", "state": [2, 2, 3],
         "parsed": {"health": {"format_ok": False, "repaired": ["reply"], "role_reversal": ["how can I help you"], "rule_violations": ["state jump"]}}},
    ]
    record = {
        "scenario": "SEAD-Outbound-v0", "seed": 7, "profile": {"state": [1, 2, 3], "behaviors": ["<b>TS4</b>"]}, "turns": turns,
        "outcome": "hangup", "rewards": {"agent": -0.5, "user": 1.0}, "reward_terms": {"agent/invalid": -0.5}, "learner": "agent",
        "meta": {"agent": "<img src=x onerror=alert(3)>", "env_id": "SEAD-Outbound-v0", "start": 3, "repeat": 0, "judge": "</script>"},
    }
    record.update(changes)
    return record


def write_jsonl(path, records) -> None:
    # json.dumps escapes a lone surrogate as \ud800, as Trajectory.to_json writes it
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
