"""Scripted rollout throughput of SEAD-Outbound-v0: agent turns per second on one core.

    python benchmarks/scripted_throughput.py [--episodes 3000]

Every row plays scripted agent vs. scripted user (each agent turn includes the user's reply),
measured side by side in one run. Target: >= 20,000 agent turns/s for the batched engine.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.driver import role_seed
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.agents import SopAgent

TARGET = 20_000


def engine(agent: str, episodes: int) -> tuple[int, float]:
    start = time.perf_counter()
    trajectories = evaluate("SEAD-Outbound-v0", agent, episodes, seed=0)
    return sum(len(t.turns_of("agent")) for t in trajectories), time.perf_counter() - start


def single(episodes: int, unwrapped: bool) -> tuple[int, float]:
    env = gym.make("SEAD-Outbound-v0")
    env = env.unwrapped if unwrapped else env
    agent, turns = SopAgent(), 0
    start = time.perf_counter()
    for seed in range(episodes):
        observation, info = env.reset(seed=seed)
        memory = agent.start({}, role_seed(seed, "agent", ("agent", "user")))
        done = False
        while not done:
            observation, _, done, _, info = env.step(agent.act(observation, info, memory))
            turns += 1
    return turns, time.perf_counter() - start


def vector(episodes: int, num_envs: int = 32) -> tuple[int, float]:
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=num_envs)
    agent = SopAgent()
    observations, _ = envs.reset(seed=0)
    turns = finished = 0
    start = time.perf_counter()
    while finished < episodes:
        actions = [agent.act({"turn": int(observations["turn"][i])}, {}, None) for i in range(num_envs)]
        observations, _, terminations, _, _ = envs.step(actions)
        finished += int(terminations.sum())
        turns += num_envs
    return turns, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=3000)
    args = parser.parse_args()
    evaluate("SEAD-Outbound-v0", "sop", 200, seed=1)  # warm caches and imports
    rows = [
        ("engine (dialogue_gym.evaluation), sop agent", *engine("sop", args.episodes)),
        ("engine (dialogue_gym.evaluation), adaptive agent", *engine("adaptive", args.episodes)),
        ("gym.make env.unwrapped, sop agent", *single(args.episodes, unwrapped=True)),
        ("gym.make with default wrappers, sop agent", *single(args.episodes, unwrapped=False)),
        ("gym.make_vec num_envs=32, sop agent", *vector(args.episodes)),
    ]
    base = rows[0][1] / rows[0][2]
    print(f"{'path':52s} {'agent turns':>11s} {'seconds':>8s} {'turns/s':>9s} {'vs engine':>9s}")
    for name, turns, seconds in rows:
        rate = turns / seconds
        print(f"{name:52s} {turns:11d} {seconds:8.2f} {rate:9.0f} {rate / base:9.2f}")
    verdict = "meets" if base >= TARGET else "misses"
    print(f"\nengine throughput {base:,.0f} agent turns/s/core {verdict} the {TARGET:,} target")


if __name__ == "__main__":
    main()
