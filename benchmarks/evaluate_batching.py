"""Backend calls and batch fill of ``evaluate`` with an LLM-played SEAD user: continuous batching vs fixed groups.

    python benchmarks/evaluate_batching.py [--episodes 1200] [--batch-size 32] [--agent sop]

The user is played by a canned backend whose reply is a function of the request's seed (four ways to
go on, one to hang up), so every episode is the same however it is batched and episodes end after
different numbers of replies. Prints the backend calls ``evaluate`` made, their mean fill, the calls
fixed groups of ``batch_size`` played in lockstep would have made (one user call per round while
any episode of the group runs: the sum over groups of the group's longest episode, in user replies)
and the lower bound ``ceil(requests / batch_size)``, and checks that the trajectories equal those of
one-at-a-time play (``batch_size=1``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any, Sequence

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.backends.base import GenerationOutput
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.seeding import mix_seed

REPLIES = (
    render_user_output("Go on.", (2, 2, 2), 0),
    render_user_output("Tell me more.", (3, 2, 3), 0),
    render_user_output("Hmm, and then?", (2, 2, 3), 0),
    render_user_output("OK.", (3, 2, 2), 0),
    render_user_output("No thanks, bye.", (1, 1, 1), -1),
)


class SeedKeyedCounting:
    """Answers each request with ``REPLIES[mix_seed(request seed) % 5]`` and records each call's size."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def generate(self, requests: Sequence[Any]) -> list[GenerationOutput]:
        self.sizes.append(len(requests))
        return [GenerationOutput(REPLIES[mix_seed(request.sampling.seed) % len(REPLIES)], finish_reason="stop") for request in requests]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--agent", default="sop")
    args = parser.parse_args(argv)

    backend = SeedKeyedCounting()
    clock = time.perf_counter()
    trajectories = evaluate(
        "SEAD-Outbound-v0", args.agent, args.episodes, env_kwargs={"user": "llm", "user_backend": backend}, batch_size=args.batch_size
    )
    seconds = time.perf_counter() - clock
    alone = evaluate("SEAD-Outbound-v0", args.agent, args.episodes, env_kwargs={"user": "llm", "user_backend": SeedKeyedCounting()}, batch_size=1)
    replies = [len(t.turns_of("user")) for t in trajectories]
    groups = range(0, len(replies), args.batch_size)
    row = {
        "episodes": args.episodes,
        "requests": sum(backend.sizes),
        "calls": len(backend.sizes),
        "mean_fill": sum(backend.sizes) / len(backend.sizes) / args.batch_size,
        "fixed_group_calls": sum(max(replies[first : first + args.batch_size]) for first in groups),
        "lower_bound": math.ceil(sum(backend.sizes) / args.batch_size),
        "seconds": seconds,
        "identical_to_one_at_a_time": json.dumps([t.to_dict() for t in trajectories]) == json.dumps([t.to_dict() for t in alone]),
    }
    row["fixed_group_fill"] = row["requests"] / row["fixed_group_calls"] / args.batch_size
    print(
        f"{args.episodes} episodes, agent={args.agent}, batch_size={args.batch_size}: {row['requests']} user requests in "
        f"{row['calls']} backend calls (mean fill {row['mean_fill']:.1%}); fixed groups in lockstep: {row['fixed_group_calls']} "
        f"calls ({row['fixed_group_fill']:.1%}); lower bound {row['lower_bound']}; evaluate took {seconds:.2f}s; "
        f"identical to one at a time: {row['identical_to_one_at_a_time']}"
    )
    return row


if __name__ == "__main__":
    main()
