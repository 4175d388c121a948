"""Rollouts on Ray actors vs in-process, side by side in one run.

    python benchmarks/ray_rollouts.py [--episodes 4800] [--agent adaptive] [--workers 1,2] [--num-cpus 2]
                                      [--user scripted|tiny] [--max-agent-turns 15]

Plays the same fixed evaluation run (episode ``i`` seeded ``seed + i``) with
:func:`dialogue_gym.evaluation.evaluate` in this process and with
:func:`dialogue_gym.distributed.collect_rollouts` on a local ``ray.init(num_cpus=...)`` with W workers,
checks that the trajectories are identical, and prints episodes/s and the speed-up over in-process.
Ray's start-up (``ray.init``) is timed apart; worker start-up (imports, building env and policies)
is part of each Ray row. ``--user tiny`` plays the user with the tiny random ``transformers`` model,
where generation rather than the env dominates.

Each Ray worker plays a batch of episodes at once (``--batch-size``, 32 in flight, a slot refilled as
its episode ends), not one env. Beside the wall times (which the machine's load stretches) it counts
CPU seconds, the measure the load distorts least: in-process per episode (``c_in``); per Ray worker
its start-up (imports, building the env and policies: ``S``) and its cost per episode (``c_act``,
serialising included), from :meth:`~dialogue_gym.distributed.RolloutWorker.usage`; and the driver's
per episode (``c_drv``: dealing, receiving and rebuilding trajectories). With one worker per core on
C cores a run of E episodes takes about ``S + E * c_act / C + E * c_drv`` (the driver rebuilds the
trajectories after the workers finish) against ``E * c_in`` in-process, so Ray beats in-process from
``C > E * c_act / (E * (c_in - c_drv) - S)`` cores: the crossover it prints, measured at the worker
counts run (1-2 on a 2-core machine) and extrapolated beyond them, and for long runs (E large)
``c_act / (c_in - c_drv)``. Ray's own daemons (raylet, GCS) are not counted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from typing import Any, Sequence

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.distributed import collect_rollouts
from dialogue_gym.distributed.ray_rollouts import import_ray
from dialogue_gym.evaluation import evaluate


def env_kwargs_for(user: str, max_agent_turns: int) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"max_agent_turns": max_agent_turns}
    if user == "tiny":
        from dialogue_gym.backends.tiny import build_tiny_chat_model

        model = build_tiny_chat_model(tempfile.mkdtemp(prefix="dialogue_gym_tiny_"))
        kwargs.update(user="llm", user_backend={"name": "transformers", "model": str(model), "max_new_tokens": 16})
    return kwargs


def crossover(episodes: int, in_process_cpu: float, worker_startup: float, worker_per_episode: float, driver_per_episode: float) -> dict[str, float]:
    """From how many cores (one worker each) Ray beats in-process for a run of ``episodes``, and for
    long runs; ``inf`` when the driver's own share per episode (or the start-up) already costs more
    than playing in-process."""
    margin = episodes * (in_process_cpu - driver_per_episode) - worker_startup
    run = episodes * worker_per_episode / margin if margin > 0 else math.inf
    long_runs = worker_per_episode / (in_process_cpu - driver_per_episode) if in_process_cpu > driver_per_episode else math.inf
    return {"run": run, "long_runs": long_runs,
            "run_cores": math.floor(run) + 1 if math.isfinite(run) else math.inf,
            "long_run_cores": math.floor(long_runs) + 1 if math.isfinite(long_runs) else math.inf}


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=4800)
    parser.add_argument("--agent", default="adaptive")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2, help="CPUs given to the local Ray")
    parser.add_argument("--user", default="scripted", choices=["scripted", "tiny"])
    parser.add_argument("--max-agent-turns", type=int, default=15)
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32, help="episodes each worker (and in-process) plays at once")
    args = parser.parse_args(argv)
    kwargs = env_kwargs_for(args.user, args.max_agent_turns)
    ray = import_ray()
    print(f"{os.cpu_count()} CPUs; load average (1/5/15 min) before: " + "/".join(f"{x:.2f}" for x in os.getloadavg()))

    start, cpu = time.perf_counter(), time.process_time()
    reference = evaluate("SEAD-Outbound-v0", args.agent, args.episodes, env_kwargs=kwargs, batch_size=args.batch_size)
    rows = [{"path": "in-process evaluate()", "seconds": time.perf_counter() - start, "identical": True,
             "driver_cpu": time.process_time() - cpu, "load": os.getloadavg()[0]}]
    expected = json.dumps([t.to_dict() for t in reference])

    start = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    try:
        for workers in (int(w) for w in args.workers.split(",")):
            usage: list[dict[str, float]] = []
            start, cpu = time.perf_counter(), time.process_time()
            collected = collect_rollouts(
                "SEAD-Outbound-v0", args.agent, args.episodes, env_kwargs=kwargs, num_workers=workers,
                chunk_size=args.chunk_size, batch_size=args.batch_size, usage=usage,
            )
            seconds, driver_cpu = time.perf_counter() - start, time.process_time() - cpu
            rows.append({
                "path": f"Ray, {workers} worker{'s' if workers > 1 else ''}", "seconds": seconds, "driver_cpu": driver_cpu,
                "identical": json.dumps([t.to_dict() for t in collected]) == expected, "usage": usage, "load": os.getloadavg()[0],
            })
    finally:
        ray.shutdown()

    base = rows[0]["seconds"]
    print(f"{args.episodes} episodes, agent={args.agent}, user={args.user}, max_agent_turns={args.max_agent_turns}, "
          f"{args.batch_size} episodes in flight per worker; local Ray with num_cpus={args.num_cpus} "
          f"(ray.init took {ray_start:.1f}s, not counted below)")
    print(f"{'path':24s} {'seconds':>8s} {'episodes/s':>11s} {'speed-up':>9s} {'driver cpu ms/ep':>16s} "
          f"{'worker start cpu s':>18s} {'worker cpu ms/ep':>16s} {'identical':>10s} {'load':>5s}")
    for row in rows:
        row["episodes_per_s"] = args.episodes / row["seconds"]
        row["speedup"] = base / row["seconds"]
        usage = row.get("usage")
        if usage:
            row["worker_startup"] = sum(u["total"] - u["play"] for u in usage) / len(usage)
            row["worker_per_episode"] = sum(u["play"] for u in usage) / sum(u["episodes"] for u in usage)
            start_s, per_ep = f"{row['worker_startup']:18.2f}", f"{1000 * row['worker_per_episode']:16.3f}"
        else:
            start_s, per_ep = f"{'-':>18s}", f"{'-':>16s}"
        print(f"{row['path']:24s} {row['seconds']:8.2f} {row['episodes_per_s']:11.1f} {row['speedup']:9.2f} "
              f"{1000 * row['driver_cpu'] / args.episodes:16.3f} {start_s} {per_ep} {str(row['identical']):>10s} {row['load']:5.2f}")
    ray_rows = [row for row in rows if row.get("usage")]
    if ray_rows:
        in_process = rows[0]["driver_cpu"] / args.episodes
        startup = sum(row["worker_startup"] for row in ray_rows) / len(ray_rows)
        per_episode = sum(row["worker_per_episode"] for row in ray_rows) / len(ray_rows)
        driver = sum(row["driver_cpu"] for row in ray_rows) / len(ray_rows) / args.episodes
        cross = crossover(args.episodes, in_process, startup, per_episode, driver)
        counts = ",".join(str(len(row["usage"])) for row in ray_rows)
        print(f"\nCPU per episode: in-process {1000 * in_process:.3f} ms; on a Ray worker {1000 * per_episode:.3f} ms "
              f"({per_episode / in_process:.2f}x) plus {1000 * driver:.3f} ms in the driver; worker start-up {startup:.2f} s")
        print(f"crossover (one worker per core; measured with {counts} worker(s), extrapolated beyond): Ray beats in-process "
              f"from {cross['run_cores']} cores for runs of {args.episodes} episodes, from {cross['long_run_cores']} cores for long runs")
        rows.append({"path": "crossover", **cross})
    print("load average (1/5/15 min) after: " + "/".join(f"{x:.2f}" for x in os.getloadavg()))
    return rows


if __name__ == "__main__":
    main()
