"""Run files for the viewer's tests: played ones, a hostile record with every flag set, and a trainer's run folder."""

from __future__ import annotations

import json
from pathlib import Path

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


def training_folder(path: Path, iterations: int, per_iteration: int, config: dict | None = None, order=None) -> Path:
    """A run folder as trainers write it: config.json and trajectories.jsonl with ``iteration``/``episode``
    and the trainer's ``learner_record`` in ``meta``; iteration ``i``'s episode ``e`` has reward ``i + e / 100``."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config if config is not None else {"preset": "cpu-lm-scratch", "policy": "lm", "model": "scratch"}))
    records = [
        hostile_record(
            iteration=i, episode=e, learner="agent", outcome="success" if e % 2 else "hangup", rewards={"agent": i + e / 100},
            meta={"learner_record": {"prompt_ids": list(range(50))}, "decision_point": {"turn": 1}},
        )
        for i in range(iterations) for e in range(per_iteration)
    ]
    write_jsonl(path / "trajectories.jsonl", order(records) if order else records)
    return path
