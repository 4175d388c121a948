"""``dialogue-gym``: list environments, evaluate agents.

    dialogue-gym list
    dialogue-gym eval SEAD-Outbound-v0 --agent random,sop,adaptive,oracle --episodes 1200 --seed 0 [--out run.jsonl]
    dialogue-gym eval TRACER-UserSim-v0 --agent scripted,random,flat,eager,reluctant --episodes 400
    dialogue-gym eval DMBench-Assistant-v0 --agent sop,consultative,empathetic,pushy,random --episodes 400
    dialogue-gym eval SEAD-Outbound-v0 --agent sop,adaptive --episodes 1200 --repeats 3 --save results.json
    dialogue-gym eval SEAD-Outbound-v0 --agent sop,adaptive --episodes 1200 --sealed --isolate --save results.json
    dialogue-gym eval SEAD-Outbound-v0 --agent myagent:MyAgent --agent-kwargs '{"patience": 3}' --sealed --isolate
    dialogue-gym eval SEAD-Outbound-v0 --agent llm,adaptive --agent-backend '{"name": "transformers", "model": "smollm2"}'
    dialogue-gym compare sop.json adaptive.json
    dialogue-gym verify run.jsonl results.json
    dialogue-gym audit SEAD-Outbound-v0 [--episodes 600] [--sealed | --unseal SECRET]
    dialogue-gym export run.jsonl --format sft|preference|rollouts -o DIR [--env-kwargs JSON] [--parquet]
    dialogue-gym serve SEAD-Outbound-v0 [--port 8000] [--env-kwargs JSON] [--host 0.0.0.0 --token TOKEN] [--sealed]
    dialogue-gym --version
    dialogue-gym view run.jsonl [-o report.html]
    dialogue-gym fidelity SEAD-Outbound-v0 --role user --backend JSON [--agent adaptive] [--episodes 8]

``audit`` plays the id's degenerate and blind policies beside its fair baselines and exits 1 when any
of them beats its bound (see :mod:`dialogue_gym.audit`).

``eval`` works for every registered id: the registry entry names the learner role's baseline agents,
the metric summary, the columns printed and an optional report after the table, and the per-episode
headline metrics that get bootstrap intervals (and pass^k with ``--repeats``). Agent names and env
keywords are all checked before the first episode. ``--save`` writes the results with their
provenance (:mod:`dialogue_gym.results`); ``compare A.json B.json`` prints B - A per headline metric
with a paired bootstrap interval.

By default ``eval`` and ``audit`` are *open-book*: reproducible from ``--seed``, so an in-process
scripted or search policy could rebuild the game from the library's public code. ``--sealed`` draws
a fresh secret that every seed comes from and prints it (and saves it in the provenance) only when
the run has ended; ``--unseal SECRET`` plays that run again (a replay, not a sealed run). ``--isolate``
plays each agent in a process of its own that speaks JSON lines (:mod:`dialogue_gym.agents`):
``sandbox`` (the default of a bare ``--isolate``) under bubblewrap, or ``process``, a plain process
that can still read this one's memory. ``--agent module:Class`` evaluates your own policy class,
built with ``--agent-kwargs``; isolated, it is imported only in the agent's process. Published
numbers should be sealed and sandboxed; the results' provenance records both.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import re
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from tqdm import tqdm

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.agents.process import LEVELS, Limits
from dialogue_gym.errors import ConfigError, DialogueGymError
from dialogue_gym.evaluation import RUN_FILE_FIX, Evaluator, check_output_path, coverage_note, make_learner_env, sealing_of
from dialogue_gym.fidelity import add_command as add_fidelity_command
from dialogue_gym.verify import add_command as add_verify_command
from dialogue_gym.health import UNHEALTHY_THRESHOLD, benchmark_split, format_health, summary_with_health, with_format_column
from dialogue_gym.inputs import json_option
from dialogue_gym.metrics.episodes import LABELS as EPISODE_LABELS
from dialogue_gym.reporting import PRIVILEGED_MARK, PRIVILEGED_NOTE, format_table, terminal_safe
from dialogue_gym.results import AgentResult, Results, check_save_suffix, compare, few_starts_note, now, setting, software
from dialogue_gym.sealing import Seal
from envs_registry import REGISTRY, Entry, get, resolve


def cmd_list(_: argparse.Namespace) -> int:
    rows = [
        {"name": e.id, "roles": ", ".join(e.roles), "learner": e.default_learner, "module": e.pettingzoo_module, "agents": ",".join(e.agents)}
        for e in REGISTRY
    ]
    columns = [("roles", "roles"), ("learner", "default learner"), ("module", "PettingZoo module"), ("agents", "baseline agents")]
    print(format_table(rows, columns, "id"))
    return 0


def _json_object(text: str | None, flag: str) -> dict:
    value = json_option(text, flag) if text else {}
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} must be a JSON object like '{{\"key\": 1}}', got {text!r:.80}.")
    return value


def _agent_names(text: str | None, default: str, baselines: Sequence[str]) -> list[str]:
    if text is None:
        return [default]
    names = [name.strip() for name in text.split(",")]
    if "" in names:
        raise ConfigError(f"--agent {text!r} has an empty name; separate names by single commas, e.g. {','.join(baselines[:2])!r}.")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"--agent {text!r} names {repeated} more than once; each agent is one row of the table.")
    return names


LLM_AGENT = "llm"
"""The ``--agent`` name of a language model as the learner, played through ``--agent-backend``."""
BACKEND_EXAMPLE = """'{"name": "transformers", "model": "smollm2"}'"""


def _agents(names: Sequence[str], kwargs_text: str | None) -> dict[str, Any]:
    """Each ``--agent`` name as the evaluator takes it: a registered name, or for ``module:Class`` the
    class spec with ``--agent-kwargs`` (which only such agents take)."""
    kwargs = _json_object(kwargs_text, "--agent-kwargs")
    classes = [name for name in names if ":" in name]
    if kwargs_text is not None and not classes:
        raise ConfigError(
            f"--agent-kwargs are the keyword arguments of an agent given as module:Class; --agent {','.join(names)!r} names none. "
            "Drop --agent-kwargs or name your class, e.g. --agent myagent:MyAgent."
        )
    return {name: {"class": name, "kwargs": kwargs} if name in classes else name for name in names}


def _agent_backend(text: str | None, names: Sequence[str]) -> dict | None:
    """The backend spec of ``--agent-backend`` for the agent named ``llm``, or ConfigError naming the fix."""
    if text is None:
        if LLM_AGENT in names:
            raise ConfigError(f"--agent {LLM_AGENT} needs --agent-backend, the JSON spec of its model, e.g. --agent-backend {BACKEND_EXAMPLE}.")
        return None
    if LLM_AGENT not in names:
        raise ConfigError(
            f"--agent-backend is the model of the agent named {LLM_AGENT!r}; add {LLM_AGENT} to --agent "
            f"(e.g. --agent {LLM_AGENT},{names[0]}) or drop it."
        )
    return _json_object(text, "--agent-backend")


def _at_least(value: int, flag: str, minimum: int) -> int:
    if value < minimum:
        raise ConfigError(f"{flag} must be >= {minimum}, got {value}.")
    return value


def _labels(entry: Entry) -> dict[str, str]:
    return {**EPISODE_LABELS, **dict(resolve(entry.columns))}


def _interval(estimate: dict[str, float]) -> str:
    if math.isnan(estimate["low"]):
        return f"{estimate['value']:.3f}"
    return f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


def headline_table(agents: Sequence[AgentResult], labels: dict[str, str], pass_label: str | None) -> str:
    """One row per headline metric (and pass^k for k >= 2; pass^1 is the pass metric's own row), one
    column per agent: value [bootstrap interval]."""
    keys = [key for key in dict.fromkeys(key for agent in agents for key in agent.headline) if key != "pass^1"]
    rows = [
        {
            "name": f"{key} ({pass_label})" if key.startswith("pass^") and pass_label else labels.get(key, key),
            **{agent.name + PRIVILEGED_MARK * agent.privileged: _interval(agent.headline[key]) if key in agent.headline else "" for agent in agents},
        }
        for key in keys
    ]
    return format_table(rows, [(agent.name + PRIVILEGED_MARK * agent.privileged,) * 2 for agent in agents], "metric")


def cmd_eval(args: argparse.Namespace) -> int:
    started, clock = now(), time.perf_counter()
    entry = get(args.env_id)
    env_kwargs = _json_object(args.env_kwargs, "--env-kwargs")
    metric_kwargs = _json_object(args.metric_kwargs, "--metric-kwargs")
    summary, columns = resolve(entry.summary), with_format_column(resolve(entry.columns))
    try:
        inspect.signature(summary).bind([], **metric_kwargs)
    except TypeError as exc:
        raise ConfigError(f"--metric-kwargs {sorted(metric_kwargs)} do not fit {entry.summary}{inspect.signature(summary)}.") from exc
    _at_least(args.episodes, "--episodes", 1)
    _at_least(args.repeats, "--repeats", 1)
    _at_least(args.bootstrap, "--bootstrap", 0)
    if args.out:
        check_output_path(args.out, append=args.append, name="--out")
    if args.save:
        check_save_suffix(args.save)
        check_output_path(args.save, append=True, name="--save")
    learner = args.learner or entry.default_learner
    names = _agent_names(args.agent, entry.agents[0], entry.agents)
    agent_backend = _agent_backend(args.agent_backend, names)
    specs = _agents(names, args.agent_kwargs)
    limits = Limits.of(_json_object(args.agent_limits, "--agent-limits"))
    # Every agent name and env keyword is checked here, before the first episode and the first progress bar.
    unhealthy_threshold = UNHEALTHY_THRESHOLD if args.invalid_on_unhealthy else None
    seal = sealing_of(args.sealed, args.unseal, args.seed)

    def backend_of(name: str) -> dict | None:
        return agent_backend if name == LLM_AGENT else None

    first = Evaluator(
        args.env_id, specs[names[0]], learner=learner, env_kwargs=env_kwargs, agent_backend=backend_of(names[0]),
        unhealthy_threshold=unhealthy_threshold, seal=seal, isolate=args.isolate, agent_limits=limits, agent_logs=args.agent_logs,
    )
    evaluators = [first, *(first.for_agent(specs[name], backend_of(name)) for name in names[1:])]
    episode_scores = resolve(entry.episode_scores) if entry.episode_scores else lambda trajectory: {}
    results, agents, health, logs = {}, [], {}, {}
    for evaluator in evaluators:
        logs[evaluator.agent_name] = evaluator.isolated.log if evaluator.isolated is not None else None
        try:
            with tqdm(total=args.episodes * args.repeats, desc=evaluator.agent_name, disable=args.quiet, file=sys.stderr) as bar:
                trajectories = evaluator.run(
                    args.episodes, args.seed, repeats=args.repeats, out=args.out, on_episode=lambda _: bar.update(1)
                )
        finally:
            evaluator.close()
        results[evaluator.agent_name] = trajectories
        row = summary_with_health(trajectories, summary, invalid_on_unhealthy=args.invalid_on_unhealthy, **metric_kwargs)
        health[evaluator.agent_name] = (len(trajectories), row.pop("counterpart_health"), row.pop("health_warnings"))
        counted = benchmark_split(trajectories)[0] if args.invalid_on_unhealthy else trajectories
        agent = AgentResult.from_trajectories(evaluator.agent_name, counted, row, episode_scores)
        agent.compute_headline(entry.pass_metric, args.repeats, args.bootstrap)
        agents.append(agent)
    repeats = f" x {args.repeats} repeats" if args.repeats > 1 else ""
    print(f"\n{args.env_id}: {args.episodes} episodes per agent{repeats}, {seeding(seal, args.seed, args.unseal)}, {ISOLATION[args.isolate]}\n")
    for name, trajectories in results.items():
        problems = [problem for trajectory in trajectories for problem in trajectory.meta.get("agent_problems", [])]
        if problems:
            print(terminal_safe(
                f"WARNING: {name}: {len(problems)} moves refused at the agent boundary and played as invalid moves "
                f"(first: {problems[0]['problem']}); "
                + (f"its log: {logs[name]}" if logs[name] is not None and logs[name].exists() else "it printed nothing")
            ), file=sys.stderr)
    note = coverage_note(first.strata, args.episodes, first.run_seed(args.seed), f"evaluation strata of {args.env_id}")
    if note:
        print(f"{note}\n")
    public = first.environment.game.public_targets() if seal else None
    if public:
        print(f"note: sealed, but {public}\n")
    rows = [{"name": agent.name + PRIVILEGED_MARK * agent.privileged, **agent.summary} for agent in agents]
    print(format_table(rows, columns, "agent"))
    if any(agent.privileged for agent in agents):
        print(PRIVILEGED_NOTE)
    extra = resolve(entry.report)(results) if entry.report else None
    if extra:
        print(f"\n{extra}")
    for name, (played, block, warnings) in health.items():
        table = format_health(block, f"counterpart health, {name}")
        if table:
            print(f"\n{table}")
        for warning in warnings:
            print(f"WARNING: {name}: {warning}", file=sys.stderr)
        agent_row = next(agent.summary for agent in agents if agent.name == name)
        if agent_row["unhealthy_excluded"] or agent_row["unhealthy_provoked"]:
            print(f"{name}: {agent_row['unhealthy_excluded']} of {played} episodes left out (a counterpart failed its health checks); "
                  f"{agent_row['unhealthy_provoked']} the agent provoked were counted")
    if any(agent.headline for agent in agents) and (args.bootstrap or args.repeats > 1):
        labels = _labels(entry)
        how = f"95% percentile bootstrap intervals over the {args.episodes} starts ({args.bootstrap} resamples, seed 0)" if args.bootstrap else "no intervals (--bootstrap 0)"
        passes = f"; pass^k: the chance that k plays of a start all succeed ({labels.get(entry.pass_metric, entry.pass_metric)})" if args.repeats > 1 else ""
        print(f"\nHeadline metrics, {how}{passes}:\n")
        print(headline_table(agents, labels, labels.get(entry.pass_metric, entry.pass_metric)))
        few = few_starts_note(args.episodes) if args.bootstrap else None
        if few:
            print(few)
    if args.out:
        print(f"\ntrajectories {'appended' if args.append else 'written'} to {args.out}")
    if args.save:
        provenance = {
            "env_id": args.env_id, "env_kwargs": env_kwargs, "learner": learner, "agents": names, "agent_backend": agent_backend,
            "episodes": args.episodes, "repeats": args.repeats, "seed": None if seal else args.seed,
            "sealed": seal is not None and args.unseal is None, "replay": args.unseal is not None, "secret": seal.hex if seal else None,
            "public_targets": public, "isolation": args.isolate, "isolated": args.isolate != "none",
            "agent_kwargs": _json_object(args.agent_kwargs, "--agent-kwargs") or None,
            "agent_limits": asdict(limits) if args.isolate != "none" else None,
            "strata": len(first.strata), "strata_played_equally": not note, "metric_kwargs": metric_kwargs,
            "invalid_on_unhealthy": args.invalid_on_unhealthy,
            "bootstrap": {"resamples": args.bootstrap, "seed": 0, "confidence": 0.95, "unit": "start"},
            "command": "dialogue-gym " + shlex.join(args.argv), **software(),
            "started": started, "finished": now(), "seconds": round(time.perf_counter() - clock, 3),
        }
        print(f"results saved to {Results(provenance, agents).save(args.save)}")
        for problem in provenance["bytecode_problems"]:
            print(terminal_safe(f"WARNING: {problem}; the run may not have run the package's sources (recorded in the results)"), file=sys.stderr)
    if seal is not None:
        print(f"sealed run ended; its secret: {seal.hex} (`--unseal {seal.hex}` plays the same episodes)")
    return 0


ISOLATION = {
    "none": "agents in this process (open-book: publish sandboxed runs, --isolate)",
    "process": "each agent in a plain process of its own (--isolate process: weaker, it can read this process's memory and files)",
    "sandbox": "each agent in a bubblewrap sandbox of its own (--isolate sandbox)",
}
"""How each isolation level is shown in a run's header."""


def seeding(seal: Seal | None, seed: int, unseal: str | None = None) -> str:
    """How a run's episodes were seeded, for its header."""
    if seal is None:
        return f"seed {seed} (open-book: reproducible from the seed; publish sealed runs, --sealed)"
    if unseal is not None:
        return "a replay of a sealed run (--unseal: its secret is public, so this run is not sealed)"
    return "sealed (seeds from a secret printed when the run ends)"


def cmd_compare(args: argparse.Namespace) -> int:
    _at_least(args.bootstrap, "--bootstrap", 1)
    a, b = Results.load(args.a), Results.load(args.b)
    rows = compare(a, b, args.agent_a, args.agent_b, resamples=args.bootstrap)
    first, second = a.agent(args.agent_a, "A"), b.agent(args.agent_b, "B")
    labels = _labels(get(a.provenance["env_id"]))
    table = [
        {
            "name": labels.get(row["key"], row["key"]), "a": row["a"], "b": row["b"], "difference": f"{row['difference']:+.3f}",
            "interval": f"[{row['low']:+.3f}, {row['high']:+.3f}]", "significant": "yes" if row["significant"] else "no",
        }
        for row in rows
    ]
    provenance = a.provenance
    repeats = f" x {provenance['repeats']} repeats" if provenance["repeats"] > 1 else ""
    seeds = "sealed, one secret" if provenance.get("sealed") else f"seed {provenance['seed']}"
    header = (  # names and seeds come from the files: escaped, they cannot drive the terminal
        f"{provenance['env_id']}: B = {second.name} ({args.b}) minus A = {first.name} ({args.a}), paired over the same "
        f"{provenance['episodes']} starts{repeats} and seeds ({seeds}); 95% percentile bootstrap "
        f"intervals over starts ({args.bootstrap} resamples, seed 0)"
    )
    print(f"\n{terminal_safe(header)}\n")
    columns = [("a", f"A {first.name}"), ("b", f"B {second.name}"), ("difference", "B - A"), ("interval", "95% CI"), ("significant", "significant")]
    print(format_table(table, columns, "metric"))
    print("\nsignificant: the interval excludes 0 (each metric on its own; no correction for comparing several).")
    few = few_starts_note(provenance["episodes"])
    if few:
        print(few)
    for key in ("env_kwargs", "metric_kwargs", "agent_kwargs"):  # agent_kwargs: two settings of one module:Class have one name
        if a.provenance.get(key) != b.provenance.get(key):
            print(terminal_safe(f"note: the runs differ in {key}: {a.provenance.get(key)} vs {b.provenance.get(key)}"))
    settings = setting(a.provenance), setting(b.provenance)
    for key in settings[0]:
        if settings[0][key] != settings[1][key]:
            print(terminal_safe(
                f"WARNING: the runs differ in setting, {key}: A {settings[0][key]} vs B {settings[1][key]}; "
                "part of the difference may be the setting's, not the agents'"
            ))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from dialogue_gym.audit import MIN_EPISODES, audit_record, probe_policies, run_audit, unaudited_roles

    started, clock = now(), time.perf_counter()
    entry = get(args.env_id)
    if entry.audits is None:
        audited = [e.id for e in REGISTRY if e.audits]
        raise ConfigError(f"{args.env_id} declares no exploit audit yet; audited ids: {audited}.")
    if args.episodes < MIN_EPISODES:
        print(f"warning: the audit's bounds are stated for >= {MIN_EPISODES} episodes, got {args.episodes}", file=sys.stderr)
    seal = sealing_of(args.sealed, args.unseal, args.seed)
    env_kwargs = _json_object(args.env_kwargs, "--env-kwargs")
    agents = _agents(_agent_names(args.agent, "", entry.agents) if args.agent is not None else [], args.agent_kwargs)
    limits = Limits.of(_json_object(args.agent_limits, "--agent-limits"))
    if args.save:
        if Path(args.save).suffix.lower() != ".json":
            raise ConfigError(f"--save {args.save!r}: an audit is saved as JSON; pass a path ending in .json.")
        check_output_path(args.save, append=True, name="--save")
    print(f"{args.env_id}: {seeding(seal, args.seed, args.unseal)}, {ISOLATION[args.isolate]}")
    failed, records = 0, []
    for audit in resolve(entry.audits)():
        public = make_learner_env(audit.env_id, audit.learner, {**audit.env_kwargs, **env_kwargs}).game.public_targets() if seal else None
        if public:
            print(f"note: sealed, but {public}")
        players = len({*audit.fair_order, audit.baseline, *audit.ceiling}) + len(audit.policies) + len(probe_policies(audit)) + len(agents)
        refused: dict[str, list[dict]] = {}

        def played(name: str, trajectories: list, refused: dict[str, list[dict]] = refused) -> None:
            problems = [problem for trajectory in trajectories for problem in trajectory.meta.get("agent_problems", [])]
            if problems:
                refused[name] = problems

        with tqdm(total=players, desc=f"audit {audit.learner}", disable=args.quiet, file=sys.stderr) as bar:
            scores, rows = run_audit(
                audit, args.episodes, args.seed, progress=lambda name: bar.set_postfix_str(name) or bar.update(1), seal=seal, probes=True,
                env_kwargs=env_kwargs, agents=agents, isolate=args.isolate, agent_limits=limits, agent_logs=args.agent_logs, on_played=played,
            )
        for name, problems in refused.items():
            print(terminal_safe(
                f"WARNING: {name}: {len(problems)} moves refused at the agent boundary and played as invalid moves (first: {problems[0]['problem']})"
            ), file=sys.stderr)
        records.append(audit_record(audit, scores, rows, args.episodes))
        print(f"\n{records[-1]['table']}")
        failed += records[-1]["failed"]
    for role in unaudited_roles(entry.audits):
        print(f"\nnot audited: {role.env_id}, learner {role.learner!r}: {role.reason}")
    print(f"\n{failed} bound(s) broken" if failed else "\nevery bound holds")
    if args.save:
        provenance = {
            "env_id": args.env_id, "env_kwargs": env_kwargs, "episodes": args.episodes, "seed": None if seal else args.seed,
            "sealed": seal is not None and args.unseal is None, "replay": args.unseal is not None, "secret": seal.hex if seal else None,
            "isolation": args.isolate, "agents": sorted(agents), "agent_kwargs": _json_object(args.agent_kwargs, "--agent-kwargs") or None,
            "unaudited": [f"{role.env_id} {role.learner}: {role.reason}" for role in unaudited_roles(entry.audits)],
            "command": "dialogue-gym " + shlex.join(args.argv), **software(),
            "started": started, "finished": now(), "seconds": round(time.perf_counter() - clock, 3),
        }
        Path(args.save).write_text(json.dumps({"provenance": provenance, "audits": records, "failed": failed}, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        print(f"audit saved to {args.save}")
    if seal is not None:
        print(f"sealed audit ended; its secret: {seal.hex} (`--unseal {seal.hex}` plays the same episodes)")
    return 1 if failed else 0


def _check_run_file(path: str) -> None:
    """``path`` is a file holding at least one non-blank line (records are read by the export)."""
    from dialogue_gym.inputs import regular_file

    source = regular_file(path, RUN_FILE_FIX)  # a FIFO is named, not opened (reading one waits for a writer)
    try:
        with open(source, "rb") as handle:
            if not any(line.strip() for line in handle):
                raise ConfigError(f"{path}: the run file holds no trajectory (it is empty); {RUN_FILE_FIX}")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the run file ({exc.strerror or exc}); {RUN_FILE_FIX}") from exc


def _check_dataset_folder(out: str) -> None:
    """The nearest existing folder of ``out`` is a folder this process can write."""
    existing = Path(out).absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        from dialogue_gym.inputs import kind_of

        kind = kind_of(existing.stat().st_mode).replace("a regular file", "a file")
        raise ConfigError(f"-o {out!r}: {str(existing)!r} is {kind}, so the dataset folder cannot be made there; pass a new folder path.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"-o {out!r}: the folder {str(existing)!r} is not writable; pass a folder you can write.")


def cmd_export(args: argparse.Namespace) -> int:
    from dialogue_gym.integrations.datasets import export

    env_kwargs = _json_object(args.env_kwargs, "--env-kwargs")
    _check_run_file(args.run_file)
    _check_dataset_folder(args.out)
    try:
        dataset = export(args.run_file, args.format, args.out, env_kwargs=env_kwargs, parquet=args.parquet)
    except OSError as exc:
        raise ConfigError(f"-o {args.out!r}: cannot write the dataset ({exc.strerror or exc}); pass a new folder on a writable disk.") from exc
    print(f"{len(dataset)} {args.format} rows written to {args.out}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from dialogue_gym.integrations.openenv_server import serve

    serve(
        args.env_id, host=args.host, port=args.port, learner=args.learner, env_kwargs=_json_object(args.env_kwargs, "--env-kwargs"),
        max_sessions=args.max_sessions, idle_timeout=args.idle_timeout, token=args.token, sealed=args.sealed, unseal=args.unseal,
    )
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from dialogue_gym.viewer import write_view

    path, count = write_view(args.run_file, args.out, per_iteration=args.per_iteration, sample_seed=args.sample_seed)
    print(f"{count} dialogues written to {path} ({path.stat().st_size / 1e6:.1f} MB); open it in a browser")
    return 0


def add_sealing_flags(command: argparse.ArgumentParser) -> None:
    sealing = command.add_mutually_exclusive_group()
    sealing.add_argument(
        "--sealed", action="store_true",
        help="seed every episode from a fresh secret, revealed only when the run ends (what published numbers use)",
    )
    sealing.add_argument(
        "--unseal", metavar="SECRET", default=None, help="play the sealed run with this secret again (default: none; an open run from --seed)"
    )


def add_isolation_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--isolate", nargs="?", const="sandbox", default="none", choices=LEVELS,
        help="play each agent in a process of its own that speaks JSON lines: sandbox (the default of a bare --isolate; "
             "bubblewrap: no network, no view of this process, read-only files) or process (a plain process, weaker); "
             "with --sealed: the benchmark setting (default: none, in this process)",
    )
    command.add_argument(
        "--agent-limits", default=None,
        help='JSON object of limits of an isolated agent, e.g. \'{"call_seconds": 30}\' (default: call_seconds 60, start_seconds 120, '
             'cpu_seconds 3600, memory_mb 8192, file_mb 64, processes 64)',
    )
    command.add_argument(
        "--agent-logs", default=None, help="folder for the isolated agents' logs, what they print (default: a temporary file per agent, removed if it printed nothing)"
    )


def plain_text(docstring: str) -> str:
    """A docstring as a terminal shows it: reST's ``literals``, *emphasis* and :role:`targets` as plain text."""
    text = re.sub(r":[\w:]+:`~?([^`]+)`", r"\1", docstring)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"\1", text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialogue-gym", description=plain_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dialogue-gym {dialogue_gym.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="registered environment ids and their roles").set_defaults(run=cmd_list)
    evaluation = commands.add_parser("eval", help="evaluate one or more agents and print metrics")
    evaluation.add_argument("env_id")
    evaluation.add_argument(
        "--agent", default=None, help="agent name(s), comma-separated (e.g. random,sop,adaptive,oracle); default: the id's first baseline"
    )
    evaluation.add_argument("--learner", default=None, help="the role the agents play (default: the id's default learner)")
    evaluation.add_argument(
        "--agent-backend", default=None,
        help=f"JSON backend spec of the agent named {LLM_AGENT} (a language model in the learner role), e.g. {BACKEND_EXAMPLE} (default: none; needed by {LLM_AGENT})",
    )
    evaluation.add_argument(
        "--episodes", type=int, default=120,
        help="starts per agent, in a seeded stratified order (default: 120); a multiple of the id's strata plays each equally often",
    )
    evaluation.add_argument("--seed", type=int, default=0, help="seed of an open-book run (default: 0)")
    add_sealing_flags(evaluation)
    add_isolation_flags(evaluation)
    evaluation.add_argument(
        "--agent-kwargs", default=None, help='JSON object of keyword arguments for the agents given as module:Class, e.g. \'{"patience": 3}\' (default: none)'
    )
    evaluation.add_argument(
        "--repeats", type=int, default=1, help="play each start this many times with different seeds; reports pass^k (default: 1)"
    )
    evaluation.add_argument("--out", default=None, help="write trajectories to this JSONL file (refused if it exists, unless --append; default: not written)")
    evaluation.add_argument("--append", action="store_true", help="let --out add to an existing file")
    evaluation.add_argument(
        "--save", default=None,
        help="write the table, headline intervals, per-episode scores and provenance to this .json (or .csv: the table only); overwritten (default: not saved)",
    )
    evaluation.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals; 0: none (default: 1000)")
    evaluation.add_argument("--env-kwargs", default=None, help="JSON object of env keyword arguments (default: {}, the registry's defaults)")
    evaluation.add_argument("--metric-kwargs", default=None, help='JSON object passed to the metric summary, e.g. {"embedder": "minilm"} (default: {})')
    evaluation.add_argument(
        "--invalid-on-unhealthy", action="store_true",
        help=f"leave out of the metrics the episodes in which a counterpart failed its health checks on more than "
             f"{UNHEALTHY_THRESHOLD * 100:g}%% of its turns (never those the agent provoked)",
    )
    evaluation.add_argument("--quiet", action="store_true", help="no progress bar")
    evaluation.set_defaults(run=cmd_eval)
    comparison = commands.add_parser("compare", help="paired difference of two saved runs (eval --save X.json), with bootstrap intervals")
    comparison.add_argument("a", help="results JSON of A")
    comparison.add_argument("b", help="results JSON of B (the table shows B - A)")
    comparison.add_argument("--agent-a", default=None, help="the agent of A to compare (needed when A holds several; default: its only agent)")
    comparison.add_argument("--agent-b", default=None, help="the agent of B to compare (needed when B holds several; default: its only agent)")
    comparison.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    comparison.set_defaults(run=cmd_compare)
    audit = commands.add_parser("audit", help="play degenerate and blind policies against the fair baselines; exit 1 if one beats its bound")
    audit.add_argument("env_id")
    audit.add_argument("--episodes", type=int, default=600, help="episodes per policy (default: 600)")
    audit.add_argument("--seed", type=int, default=0, help="seed of an open-book audit (default: 0)")
    audit.add_argument(
        "--env-kwargs", default=None,
        help="JSON object of env keyword arguments for the audited runs only (a private sessions_file, say); the probes do not know them (default: {})",
    )
    add_sealing_flags(audit)
    add_isolation_flags(audit)
    audit.add_argument(
        "--agent", default=None,
        help="your own agent(s), comma-separated (module:Class or registered names), played beside the audit's policies and held "
             "to the probes' bound (default: none)",
    )
    audit.add_argument(
        "--agent-kwargs", default=None, help='JSON object of keyword arguments for the agents given as module:Class, e.g. \'{"patience": 3}\' (default: none)'
    )
    audit.add_argument(
        "--save", default=None,
        help="write every audited role's rows and table, and the provenance, to this .json (docs pages render it; overwritten; default: not saved)",
    )
    audit.add_argument("--quiet", action="store_true", help="no progress bar")
    audit.set_defaults(run=cmd_audit)
    export = commands.add_parser("export", help="write a recorded run (JSONL) as a Hugging Face dataset: sft, preference or rollouts")
    export.add_argument("run_file", metavar="RUN.jsonl", help="trajectories, e.g. from `dialogue-gym eval --out`")
    export.add_argument(
        "--format", required=True, choices=("sft", "preference", "rollouts"),
        help="sft: the learner's chats; preference: best and worst dialogue of each start as TRL pairs; rollouts: whole trajectories (required)",
    )
    export.add_argument("-o", "--out", required=True, help="a new folder for the dataset")
    export.add_argument("--env-kwargs", default=None, help="JSON object of the env keyword arguments the run was played with (default: {})")
    export.add_argument("--parquet", action="store_true", help="write OUT/<format>.parquet instead of an Arrow dataset")
    export.set_defaults(run=cmd_export)
    serving = commands.add_parser("serve", help="serve an id as an OpenEnv environment (one session per WebSocket client)")
    serving.add_argument("env_id")
    serving.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only); any other needs --token or $DIALOGUE_GYM_TOKEN",
    )
    serving.add_argument("--port", type=int, default=8000, help="TCP port to listen on, 1-65535 (default: 8000)")
    serving.add_argument("--learner", default=None, help="the role clients play (default: the id's default learner)")
    serving.add_argument("--env-kwargs", default=None, help="JSON object of env keyword arguments for every session (default: {})")
    serving.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions at most (default: 64)")
    serving.add_argument("--idle-timeout", type=float, default=300.0, help="seconds after which an idle session is closed (default: 300)")
    serving.add_argument(
        "--token", default=None,
        help="require 'Authorization: Bearer TOKEN' on every request (default: $DIALOGUE_GYM_TOKEN); needed for a --host beyond loopback",
    )
    add_sealing_flags(serving)
    serving.set_defaults(run=cmd_serve)
    viewing = commands.add_parser("view", help="write a recorded run (JSONL) as one self-contained HTML page to read its dialogues")
    viewing.add_argument(
        "run_file", metavar="RUN.jsonl|RUN_DIR", help="trajectories, e.g. from `dialogue-gym eval --out`, or a trainer's run folder (filtered by iteration)",
    )
    viewing.add_argument("-o", "--out", default=None, help="the HTML file to write, overwritten (default: RUN.html beside RUN.jsonl or RUN_DIR)")
    viewing.add_argument(
        "--per-iteration", type=int, default=20, metavar="N",
        help="a trainer's run folder: at most N dialogues of each iteration on the page, a seeded sample (default 20)",
    )
    viewing.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the seed of that sample, stated on the page (default 0)")
    viewing.set_defaults(run=cmd_view)
    add_fidelity_command(commands)
    add_verify_command(commands)
    for command in commands._choices_actions:  # `dialogue-gym VERB --help` opens with what VERB does
        subparser = commands.choices[command.dest]
        subparser.description = subparser.description or command.help
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.run(args)
    except DialogueGymError as exc:
        print(f"dialogue-gym: error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
