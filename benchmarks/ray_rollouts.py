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
"""

from __future__ import annotations

import argparse
import json
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


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=4800)
    parser.add_argument("--agent", default="adaptive")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2, help="CPUs given to the local Ray")
    parser.add_argument("--user", default="scripted", choices=["scripted", "tiny"])
    parser.add_argument("--max-agent-turns", type=int, default=15)
    parser.add_argument("--chunk-size", type=int, default=None)
    args = parser.parse_args(argv)
    kwargs = env_kwargs_for(args.user, args.max_agent_turns)
    ray = import_ray()

    start = time.perf_counter()
    reference = evaluate("SEAD-Outbound-v0", args.agent, args.episodes, env_kwargs=kwargs)
    rows = [{"path": "in-process evaluate()", "seconds": time.perf_counter() - start, "identical": True}]
    expected = json.dumps([t.to_dict() for t in reference])

    start = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    try:
        for workers in (int(w) for w in args.workers.split(",")):
            start = time.perf_counter()
            collected = collect_rollouts(
                "SEAD-Outbound-v0", args.agent, args.episodes, env_kwargs=kwargs, num_workers=workers, chunk_size=args.chunk_size
            )
            rows.append(
                {
                    "path": f"Ray, {workers} worker{'s' if workers > 1 else ''}",
                    "seconds": time.perf_counter() - start,
                    "identical": json.dumps([t.to_dict() for t in collected]) == expected,
                }
            )
    finally:
        ray.shutdown()

    base = rows[0]["seconds"]
    print(f"{args.episodes} episodes, agent={args.agent}, user={args.user}, max_agent_turns={args.max_agent_turns}; "
          f"local Ray with num_cpus={args.num_cpus} (ray.init took {ray_start:.1f}s, not counted below)")
    print(f"{'path':24s} {'seconds':>8s} {'episodes/s':>11s} {'speed-up':>9s} {'identical':>10s}")
    for row in rows:
        row["episodes_per_s"] = args.episodes / row["seconds"]
        row["speedup"] = base / row["seconds"]
        print(f"{row['path']:24s} {row['seconds']:8.2f} {row['episodes_per_s']:11.1f} {row['speedup']:9.2f} {str(row['identical']):>10s}")
    return rows


if __name__ == "__main__":
    main()
