"""How long one step takes when a role emits a 1 MB action, for every registered ID and role.

    python benchmarks/hostile_input.py [--megabytes 1] [--repeats 3]

Each row steps the env once with a 1 MB action of one shape (plain text, an open tag repeated,
deep JSON nesting, a tool call with a huge number, the role's own format with a huge field) and
reports the slowest of ``--repeats`` steps beside an ordinary action's step time, measured in the
same run. Target: every 1 MB action steps in under 50 ms. Model output is bounded before parsing
(``dialogue_gym.scenarios.common.MAX_ACTION_CHARS``), so the step time should not grow with the size.
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym

import dialogue_gym  # noqa: F401
from envs_registry import REGISTRY

TARGET_MS = 50.0
ORDINARY = "Hello, could you tell me a little more about what you need today?"


def shapes(size: int) -> dict[str, str]:
    return {
        "plain text": ("refund my card now please " * (size // 26 + 1))[:size],
        "open tags": ("<response>" * (size // 10 + 1))[:size],
        "nested JSON": "[" * (size // 2) + "]" * (size // 2),
        "huge number": '{"action_type": "tool_call", "content": "transfer_funds", "tool_args": {"amount": '
        + "9" * size + "}}",
        "huge field": "<think>" + "x" * size + "</think><intent_level>3</intent_level><reply>ok</reply>"
        "<cooperation>2</cooperation><emotion>2</emotion><trust>3</trust><status>0</status>",
    }


def slowest_step_ms(env_id: str, learner: str, action: str, repeats: int) -> float:
    env = gym.make(env_id, learner=learner)
    slowest = 0.0
    for seed in range(repeats):
        env.reset(seed=seed)
        start = time.perf_counter()
        env.step(action)
        slowest = max(slowest, (time.perf_counter() - start) * 1000)
    return slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    size = int(args.megabytes * 1_000_000)
    print(f"machine load (1/5/15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"{'env':22s} {'role':10s} {'action':12s} {'ordinary ms':>11s} {'1 MB ms':>8s}")
    worst = 0.0
    for entry in REGISTRY:
        for role in entry.roles:
            ordinary = slowest_step_ms(entry.id, role, ORDINARY, args.repeats)
            for name, action in shapes(size).items():
                elapsed = slowest_step_ms(entry.id, role, action, args.repeats)
                worst = max(worst, elapsed)
                print(f"{entry.id:22s} {role:10s} {name:12s} {ordinary:11.2f} {elapsed:8.2f}")
    verdict = "meets" if worst < TARGET_MS else "misses"
    print(f"\nslowest 1 MB step {worst:.1f} ms {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
