"""``dialogue-gym``: list environments, evaluate agents.

    dialogue-gym list
    dialogue-gym eval SEAD-Outbound-v0 --agent random,sop,adaptive,oracle --episodes 1200 --seed 0 [--out run.jsonl]
    dialogue-gym eval TRACER-UserSim-v0 --agent scripted,random,flat,eager,reluctant --episodes 400
    dialogue-gym eval DMBench-Assistant-v0 --agent sop,consultative,empathetic,pushy,random --episodes 400
    dialogue-gym audit SEAD-Outbound-v0 [--episodes 600]

``audit`` plays the id's degenerate and blind policies beside its fair baselines and exits 1 when any
of them beats its bound (see :mod:`dialogue_gym.audit`).

``eval`` works for every registered id: the registry entry names the learner role's baseline agents,
the metric summary, the columns printed and an optional report after the table.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from typing import Sequence

from tqdm import tqdm

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.errors import ConfigError, DialogueGymError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.reporting import PRIVILEGED_MARK, PRIVILEGED_NOTE, format_table
from envs_registry import REGISTRY, get, resolve


def cmd_list(_: argparse.Namespace) -> int:
    rows = [
        {"name": e.id, "roles": ", ".join(e.roles), "learner": e.default_learner, "module": e.pettingzoo_module, "agents": ",".join(e.agents)}
        for e in REGISTRY
    ]
    columns = [("roles", "roles"), ("learner", "default learner"), ("module", "PettingZoo module"), ("agents", "baseline agents")]
    print(format_table(rows, columns, "id"))
    return 0


def _json_object(text: str | None, flag: str) -> dict:
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{flag} must be a JSON object, got {text!r} ({exc.msg}).") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} must be a JSON object like '{{\"key\": 1}}', got {text!r}.")
    return value


def cmd_eval(args: argparse.Namespace) -> int:
    entry = get(args.env_id)
    env_kwargs = _json_object(args.env_kwargs, "--env-kwargs")
    metric_kwargs = _json_object(args.metric_kwargs, "--metric-kwargs")
    summary, columns = resolve(entry.summary), resolve(entry.columns)
    try:
        inspect.signature(summary).bind([], **metric_kwargs)
    except TypeError as exc:
        raise ConfigError(f"--metric-kwargs {sorted(metric_kwargs)} do not fit {entry.summary}{inspect.signature(summary)}.") from exc
    learner = args.learner or entry.default_learner
    rows, results, any_privileged = [], {}, False
    for agent in (args.agent or entry.agents[0]).split(","):
        with tqdm(total=args.episodes, desc=agent, disable=args.quiet, file=sys.stderr) as bar:
            trajectories = evaluate(
                args.env_id, agent, args.episodes, args.seed, learner=learner, env_kwargs=env_kwargs, out=args.out,
                on_episode=lambda _: bar.update(1),
            )
        results[agent] = trajectories
        marked = any(t.meta.get("privileged") for t in trajectories)
        any_privileged = any_privileged or marked
        rows.append({"name": agent + PRIVILEGED_MARK * marked, **summary(trajectories, **metric_kwargs)})
    print(f"\n{args.env_id}: {args.episodes} episodes per agent, seed {args.seed}\n")
    print(format_table(rows, columns, "agent"))
    if any_privileged:
        print(PRIVILEGED_NOTE)
    extra = resolve(entry.report)(results) if entry.report else None
    if extra:
        print(f"\n{extra}")
    if args.out:
        print(f"\ntrajectories appended to {args.out}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from dialogue_gym.audit import MIN_EPISODES, format_audit, run_audit, unaudited_roles

    entry = get(args.env_id)
    if entry.audits is None:
        audited = [e.id for e in REGISTRY if e.audits]
        raise ConfigError(f"{args.env_id} declares no exploit audit yet; audited ids: {audited}.")
    if args.episodes < MIN_EPISODES:
        print(f"warning: the audit's bounds are stated for >= {MIN_EPISODES} episodes, got {args.episodes}", file=sys.stderr)
    failed = 0
    for audit in resolve(entry.audits)():
        with tqdm(desc=f"audit {audit.learner}", disable=args.quiet, file=sys.stderr) as bar:
            _, rows = run_audit(audit, args.episodes, args.seed, progress=lambda name: bar.set_postfix_str(name) or bar.update(1))
        print(f"\n{format_audit(audit, rows, args.episodes)}")
        failed += sum(not row.passed for row in rows)
    for role in unaudited_roles(entry.audits):
        print(f"\nnot audited: {role.env_id}, learner {role.learner!r}: {role.reason}")
    print(f"\n{failed} bound(s) broken" if failed else "\nevery bound holds")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialogue-gym", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="registered environment ids and their roles").set_defaults(run=cmd_list)
    evaluation = commands.add_parser("eval", help="evaluate one or more agents and print metrics")
    evaluation.add_argument("env_id")
    evaluation.add_argument(
        "--agent", default=None, help="agent name(s), comma-separated (e.g. random,sop,adaptive,oracle); default: the id's first baseline"
    )
    evaluation.add_argument("--learner", default=None, help="the role the agents play (default: the id's default learner)")
    evaluation.add_argument("--episodes", type=int, default=120)
    evaluation.add_argument("--seed", type=int, default=0)
    evaluation.add_argument("--out", default=None, help="append trajectories to this JSONL file")
    evaluation.add_argument("--env-kwargs", default=None, help="JSON object of env keyword arguments")
    evaluation.add_argument("--metric-kwargs", default=None, help='JSON object passed to the metric summary, e.g. {"embedder": "minilm"}')
    evaluation.add_argument("--quiet", action="store_true", help="no progress bar")
    evaluation.set_defaults(run=cmd_eval)
    audit = commands.add_parser("audit", help="play degenerate and blind policies against the fair baselines; exit 1 if one beats its bound")
    audit.add_argument("env_id")
    audit.add_argument("--episodes", type=int, default=600, help="episodes per policy (default: 600)")
    audit.add_argument("--seed", type=int, default=0)
    audit.add_argument("--quiet", action="store_true", help="no progress bar")
    audit.set_defaults(run=cmd_audit)
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
