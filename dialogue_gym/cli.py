"""``dialogue-gym``: list environments, evaluate agents.

    dialogue-gym list
    dialogue-gym eval SEAD-Outbound-v0 --agent random,sop,adaptive,oracle --episodes 1200 --seed 0 [--out run.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

import numpy as np
from tqdm import tqdm

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.errors import DialogueGymError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as sead_metrics
from envs_registry import REGISTRY, get

COLUMNS = (
    ("cr", "CR"), ("cr_low", "CR lo95"), ("cr_high", "CR hi95"), ("att_success", "ATT(succ)"),
    ("att_all", "ATT(all)"), ("upa", "UPA"), ("ei", "EI"), ("ti", "TI"), ("ci", "CI"),
    ("invalid_action_rate", "invalid"), ("tokens_per_dialogue", "tokens/dlg"),
)


def _format_table(rows: list[dict], columns: Sequence[tuple[str, str]], first: str) -> str:
    header = [first, *(label for _, label in columns)]
    body = [[row["name"], *(f"{row[key]:.3f}" if isinstance(row[key], float) else str(row[key]) for key, _ in columns)] for row in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    render = lambda line: "| " + " | ".join(cell.ljust(width) for cell, width in zip(line, widths)) + " |"  # noqa: E731
    return "\n".join([render(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(render, body)])


def _spread(trajectories) -> dict:
    rates = sead_metrics.per_state_cr(trajectories).ravel()
    rates = rates[~np.isnan(rates)]
    quantiles = np.quantile(rates, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {key: float(value) for key, value in zip(("min", "p10", "median", "p90", "max"), quantiles)}


def cmd_list(_: argparse.Namespace) -> int:
    rows = [{"name": e.id, "roles": ", ".join(e.roles), "learner": e.default_learner, "module": e.pettingzoo_module} for e in REGISTRY]
    print(_format_table(rows, [("roles", "roles"), ("learner", "default learner"), ("module", "PettingZoo module")], "id"))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    get(args.env_id)
    env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    rows, spreads = [], []
    for agent in args.agent.split(","):
        with tqdm(total=args.episodes, desc=agent, disable=args.quiet, file=sys.stderr) as bar:
            trajectories = evaluate(
                args.env_id, agent, args.episodes, args.seed, env_kwargs=env_kwargs, out=args.out,
                on_episode=lambda _: bar.update(1),
            )
        rows.append({"name": agent, **sead_metrics.summary(trajectories)})
        spreads.append({"name": agent, **_spread(trajectories)})
    print(f"\n{args.env_id}: {args.episodes} episodes per agent, seed {args.seed}\n")
    print(_format_table(rows, COLUMNS, "agent"))
    print("\nCompletion rate per initial state (spread over the 5 x 4 x 6 grid):\n")
    print(_format_table(spreads, [(k, k) for k in ("min", "p10", "median", "p90", "max")], "agent"))
    if args.out:
        print(f"\ntrajectories appended to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialogue-gym", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="registered environment ids and their roles").set_defaults(run=cmd_list)
    evaluation = commands.add_parser("eval", help="evaluate one or more agents and print metrics")
    evaluation.add_argument("env_id")
    evaluation.add_argument("--agent", default="sop", help="agent name(s), comma-separated (e.g. random,sop,adaptive,oracle)")
    evaluation.add_argument("--episodes", type=int, default=120)
    evaluation.add_argument("--seed", type=int, default=0)
    evaluation.add_argument("--out", default=None, help="append trajectories to this JSONL file")
    evaluation.add_argument("--env-kwargs", default=None, help="JSON object of env keyword arguments")
    evaluation.add_argument("--quiet", action="store_true", help="no progress bar")
    evaluation.set_defaults(run=cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except DialogueGymError as exc:
        print(f"dialogue-gym: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
