"""Rollouts at GPU speed: how much of the wall time the learner's backend is busy, env work in turn with
generation and hidden behind it.

    python benchmarks/gpu_speed_rollouts.py [--quick] [--rounds 150] [--latency 0.05] [--batch 64] [--envs 64]

Every id plays with its default learner and its default (scripted) counterparts, judges and rewards,
``--envs`` K = 64 sub-envs (``gym.make_vec``). The learner is a stand-in for a GPU engine,
:class:`~dialogue_gym.backends.canned.LatencyBackend`: each call of up to ``--batch`` 64 requests answers
after ``--latency`` 50 ms, with the replies the id's default scripted agent gave in 20 evaluation
episodes (so of the learner's real length and format), each prompt always getting the same reply.
Per id, three rows of ``--rounds`` rounds (every sub-env stepped once a round):

* ``sequential K=64``: generate for all K, then ``step`` all K (:func:`~dialogue_gym.envs.pipeline.sequential_steps`);
* ``pipelined K=64``: two groups of 32, one group stepped while the other's batch generates
  (:func:`~dialogue_gym.envs.pipeline.pipelined_steps`); ``same`` says whether its transcripts (every
  sub-env's actions, rewards, terminations and observations, and every finished episode) equal the
  sequential row's;
* ``pipelined K=128``: two groups of a full batch each (``2 * --batch`` sub-envs).

Each row is played ``--repeats`` (2) times, the same episodes each time, and the run with the highest
efficiency is shown (other work on shared cores only ever lowers it). Columns: learner turns (moves actually played: a sub-env being autoreset plays none that step), backend
calls and their fill (requests per call over ``--batch``), wall seconds, learner turns per second, env
milliseconds per round (wall minus backend busy time, the sequential rows only), the CPU milliseconds the
stepping thread spent per round (``time.thread_time``: the env's own work, which the load does not
stretch; pipelining can hide it while one group's share stays under the latency), and ``efficiency``:
the backend's busy time (the latency it served) over the wall time. The load average is printed before,
after and on each row: on shared cores the env's share grows with the load.

With a fixed cost per call, two half batches cost the backend twice one full batch: ``pipelined K=64``
keeps the backend busy but half full, so compare learner turns per second too; ``K=128`` is the shape
that fills both. ``--quick`` plays 40 rounds a row (about 2 minutes at load 4 on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Sequence

TARGET = 0.9
QUICK_ROUNDS = 40
HARVEST_EPISODES = 20


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def learner_replies(entry: Any) -> list[str]:
    """The texts the id's default agent played as the learner in a few evaluation episodes, sorted."""
    from dialogue_gym.evaluation import evaluate

    trajectories = evaluate(entry.id, entry.agents[0], HARVEST_EPISODES, learner=entry.default_learner)
    return sorted({turn.raw for t in trajectories for turn in t.turns if turn.role == entry.default_learner})


def acting(backend: Any):
    """The learner: one backend call for a batch of observations, one reply per sub-env."""
    from dialogue_gym.backends import GenerationRequest

    def act(observations: Any) -> list[str]:
        return [output.text for output in backend.generate([GenerationRequest(messages=tuple(m)) for m in observations["messages"]])]

    return act


def play(env_id: str, replies: list[str], num_envs: int, rounds: int, latency: float, batch: int, groups: int | None, seed: int) -> dict[str, Any]:
    """One row: ``rounds`` rounds of ``num_envs`` sub-envs, sequential (``groups=None``) or pipelined."""
    import gymnasium as gym
    import numpy as np

    from dialogue_gym.backends.canned import LatencyBackend
    from dialogue_gym.envs.pipeline import pipelined_steps, sequential_steps

    backend = LatencyBackend(replies, latency=latency, max_batch=batch)
    envs = gym.make_vec(env_id, num_envs=num_envs, keep_trajectories=None)
    steps = (sequential_steps(envs, acting(backend), rounds, seed=seed) if groups is None
             else pipelined_steps(envs, acting(backend), rounds, groups=groups, seed=seed))
    resetting = np.zeros(num_envs, dtype=bool)
    learner_turns = 0
    record: dict[int, list[Any]] = {index: [] for index in range(num_envs)}
    start, cpu = time.perf_counter(), time.thread_time()
    for step in steps:
        learner_turns += int((~resetting[step.indices]).sum())
        resetting[step.indices] = step.terminations
        for k, index in enumerate(step.indices):
            record[index].append((step.actions[k], float(step.rewards[k]), bool(step.terminations[k]),
                                  step.observations["messages"][k][-1]["content"]))
    seconds, cpu = time.perf_counter() - start, time.thread_time() - cpu
    finished = sorted((t.seed, tuple(turn.raw for turn in t.turns)) for t in envs.unwrapped.pop_trajectories())
    envs.close()
    return {"envs": num_envs, "groups": groups, "rounds": rounds, "learner_turns": learner_turns, "seconds": seconds,
            "busy": backend.busy_seconds, "calls": backend.calls, "fill": backend.requests / (backend.calls * batch),
            "efficiency": backend.busy_seconds / seconds, "turns_per_s": learner_turns / seconds,
            "env_ms_per_round": 1000 * (seconds - backend.busy_seconds) / rounds, "env_cpu_ms_per_round": 1000 * cpu / rounds,
            "transcript": (record, finished), "load": os.getloadavg()[0]}


def format_row(env_id: str, name: str, row: dict[str, Any], same: str) -> str:
    env_ms = f"{row['env_ms_per_round']:7.1f}" if row["groups"] is None else f"{'-':>7s}"
    return (f"{env_id:22s} {name:17s} {row['learner_turns']:7d} {row['calls']:5d} {row['fill']:5.2f} {row['seconds']:7.2f} "
            f"{row['turns_per_s']:8.0f} {env_ms} {row['env_cpu_ms_per_round']:7.1f} {same:>5s} {row['load']:5.2f}  efficiency {row['efficiency']:.2f}")


def main(argv: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=150, help="rounds a row (every sub-env stepped once a round)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per backend call of up to --batch requests")
    parser.add_argument("--batch", type=int, default=64, help="requests one latency serves")
    parser.add_argument("--envs", type=int, default=64, help="K, the sub-envs of the sequential and first pipelined rows")
    parser.add_argument("--ids", default=None, help="comma-separated ids (default: every registered id)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each row; the most efficient one is shown")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} rounds a row")
    args = parser.parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else args.rounds

    import dialogue_gym  # noqa: F401  (registers the ids)
    from envs_registry import REGISTRY

    entries = [e for e in REGISTRY if args.ids is None or e.id in args.ids.split(",")]
    print(f"{os.cpu_count()} CPUs; load average (1/5/15 min) before: {load()}")
    print(f"backend: {args.latency * 1000:.0f} ms per call of up to {args.batch} requests (LatencyBackend); "
          f"{rounds} rounds a row, best of {args.repeats} runs; default learner and counterparts of each id")
    print(f"{'env id':22s} {'path':17s} {'turns':>7s} {'calls':>5s} {'fill':>5s} {'seconds':>7s} {'turns/s':>8s} "
          f"{'env ms':>7s} {'cpu ms':>7s} {'same':>5s} {'load':>5s}")
    tables: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        replies = learner_replies(entry)
        play(entry.id, replies, args.envs, 3, 0.0, args.batch, None, seed=10**6)  # warm-up: imports, first parses
        def best(num_envs: int, groups: int | None) -> dict[str, Any]:
            runs = [play(entry.id, replies, num_envs, rounds, args.latency, args.batch, groups, seed=0) for _ in range(args.repeats)]
            return max(runs, key=lambda row: row["efficiency"])

        sequential, pipelined, full = best(args.envs, None), best(args.envs, 2), best(2 * args.batch, 2)
        same = sequential["transcript"] == pipelined["transcript"]
        print(format_row(entry.id, f"sequential K={args.envs}", sequential, ""))
        print(format_row(entry.id, f"pipelined K={args.envs}", pipelined, str(same)))
        print(format_row(entry.id, f"pipelined K={2 * args.batch}", full, ""), flush=True)
        for row in (sequential, pipelined, full):
            row["same"] = same
            del row["transcript"]
        tables[entry.id] = [sequential, pipelined, full]
    print(f"load average (1/5/15 min) after: {load()}")
    half = min(rows[1]["efficiency"] for rows in tables.values())
    full = min(rows[2]["efficiency"] for rows in tables.values())
    gains = [rows[2]["turns_per_s"] / rows[0]["turns_per_s"] for rows in tables.values()]
    identical = all(rows[1]["same"] for rows in tables.values())
    print(f"pipelined K={args.envs} efficiency >= {TARGET} on every id: {'met' if half >= TARGET else 'MISSED'} (lowest {half:.2f}); "
          f"transcripts identical to sequential on every id: {identical}")
    print(f"pipelined K={2 * args.batch} (full batches): lowest efficiency {full:.2f}; learner turns/s {min(gains):.2f}-{max(gains):.2f}x "
          f"sequential K={args.envs}'s")
    return tables


if __name__ == "__main__":
    main()
