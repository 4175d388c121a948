"""How faithfully does an LLM play a role? The scripted counterpart and the LLM one, side by side.

``dialogue-gym fidelity <ENV_ID> --role user --backend '<spec>'`` plays the same fixed evaluation
starts (the stratified order of :func:`~dialogue_gym.evaluation.evaluate`, so the same profiles,
sessions and seeds) against the same agents twice: once with the scripted policy in ``role`` and once
with the model. It reports, per agent and side by side:

- outcome rates, overall and per initial state (SEAD: the owner's state; TRACER / DM-Bench: the
  reference session's first intent level; RL-ADA: the concealment level);
- turn counts (the learner's, the counterpart's);
- the hidden-state trajectories (SEAD: cooperation / emotion / trust; TRACER: intent levels; RL-ADA:
  the customer's per-turn concealment) and the DTW between the two plays of each start (city-block
  cost, also per step of the optimal path);
- the health rates of every role (:mod:`dialogue_gym.health`), with a loud warning for a role that
  fails on more than 10% of its turns;
- for TRACER's user, the paper's fidelity metrics against the reference sessions (PCR, ACC, F1,
  Group-dPCR, W1-Turns, OT-DTW, intent DTW);
- for ``--role judge``: how far the model's scores lie from the scripted judge's on the same calls.

``--plot PATH`` draws the mean state trajectories and the health rates of both sides.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.health import RATES, format_health, health_summary, health_warnings
from dialogue_gym.inputs import json_option
from dialogue_gym.metrics.core import exact_mean
from dialogue_gym.types import Outcome, Trajectory

SIDES = ("scripted", "llm")
JUDGE_ROLE = "judge"
TRACER_FIDELITY = ("pcr", "real_pcr", "acc", "f1", "group_dpcr", "w1_turns", "ot_dtw", "intent_dtw")


@dataclass(frozen=True)
class Family:
    """What the report reads from one scenario family's trajectories."""

    state: str
    """What the state trajectory is (a column label)."""
    states: Callable[[Trajectory], list]
    """The hidden-state sequence of an episode."""
    initial: Callable[[Trajectory], str]
    """The episode's initial-state key (the rows of the per-state table)."""
    judge_score: Callable[[Trajectory], float | None]
    """The judge's score of the episode (None when unscored)."""
    dimensions: tuple[str, ...] = ("",)


def _sead_states(trajectory: Trajectory) -> list:
    return [list(trajectory.profile["state"]), *(list(turn.state) for turn in trajectory.turns_of("user"))]


def _tracer_states(trajectory: Trajectory) -> list:
    return [int(turn.parsed["intent_level"]) for turn in trajectory.turns_of("user")]


def _rlada_states(trajectory: Trajectory) -> list:
    return [float(turn.parsed["concealment"]) for turn in trajectory.turns_of("customer")]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


@lru_cache(maxsize=1)
def _families() -> dict[str, Family]:
    sead = Family(
        "owner state (c, e, tr)", _sead_states, lambda t: "c{}/e{}/tr{}".format(*t.profile["state"]), lambda t: None,
        ("cooperation", "emotion", "trust"),
    )
    tracer = Family(
        "intent level", _tracer_states, lambda t: f"z0={t.meta['reference']['intents'][0]}",
        lambda t: _number(t.meta.get("response_quality", {}).get("rq")),
    )
    rlada = Family(
        "customer concealment", _rlada_states, lambda t: str(t.profile["concealment"]),
        lambda t: _number(t.meta.get("verdict", {}).get("score")),
    )
    return {"SEAD-Outbound-v0": sead, "TRACER-UserSim-v0": tracer, "DMBench-Assistant-v0": tracer, "RLADA-Banking-v0": rlada}


def family_of(trajectory: Trajectory) -> Family:
    families = _families()
    if trajectory.scenario not in families:
        raise ConfigError(f"fidelity reads {sorted(families)} trajectories, got one of {trajectory.scenario!r}.")
    return families[trajectory.scenario]


# -- who plays what -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setup:
    """The two plays of one fidelity check: the learner role, and the env kwargs of each side."""

    env_id: str
    role: str
    learner: str
    default_agent: str
    sides: dict[str, dict[str, Any]]


def setup(env_id: str, role: str, backend: Any, sampling: dict[str, Any] | None = None, env_kwargs: dict[str, Any] | None = None) -> Setup:
    """Which role learns and what each side's env kwargs are; errors name the roles that can be checked."""
    from envs_registry import get, resolve

    entry = get(env_id)
    views = resolve(entry.entry_point)
    game_class = views.game_class
    config_fields = {f.name for f in fields(game_class.config_class)}
    checkable = [*game_class.roles, *([JUDGE_ROLE] if "judge" in config_fields else [])]
    if role not in checkable:
        raise ConfigError(f"--role {role!r} is not a role of {env_id}; check one of {checkable}.")
    base = dict(env_kwargs or {})
    clash = sorted(set(base) & {role, f"{role}_backend", f"{role}_sampling", "learner"})
    if clash:
        raise ConfigError(f"--env-kwargs set {clash}, which the fidelity check sets itself for the two sides; leave them out.")
    if role == JUDGE_ROLE:
        learner = views.default_learner
        default_judge = game_class.config_class.judge
        scripted = {"judge": default_judge if default_judge != "none" else "heuristic"}
        llm = {"judge": "llm", "judge_backend": backend}
        if sampling:
            if "judge_sampling" not in config_fields:
                raise ConfigError(f"{env_id}'s judge takes no sampling settings; leave out --sampling (the LLM judge decodes greedily).")
            llm["judge_sampling"] = sampling
    else:
        learner = next(r for r in game_class.roles if r != role) if role == views.default_learner else views.default_learner
        scripted = {role: views.default_players[role]}
        llm = {role: "llm", f"{role}_backend": backend, **({f"{role}_sampling": sampling} if sampling else {})}
    return Setup(env_id, role, learner, views.default_players[learner], {"scripted": {**base, **scripted}, "llm": {**base, **llm}})


def play(
    plan: Setup,
    agents: Sequence[str],
    episodes: int,
    seed: int = 0,
    *,
    batch_size: int = 8,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> dict[str, dict[str, list[Trajectory]]]:
    """``{agent: {"scripted": trajectories, "llm": trajectories}}``: each agent against both sides."""
    from dialogue_gym.evaluation import evaluate

    results: dict[str, dict[str, list[Trajectory]]] = {}
    for agent in agents:
        results[agent] = {
            side: evaluate(
                plan.env_id, agent, episodes, seed, learner=plan.learner, env_kwargs=plan.sides[side], batch_size=batch_size,
                on_episode=on_episode,
            )
            for side in SIDES
        }
    return results


# -- the numbers -----------------------------------------------------------------------------------------
def outcome_rates(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Share of episodes per outcome (every outcome listed, 0 when none ended so)."""
    counts = Counter(t.outcome.value if t.outcome is not None else "none" for t in trajectories)
    return {outcome.value: counts.get(outcome.value, 0) / len(trajectories) for outcome in Outcome} if trajectories else {}


def turn_counts(trajectories: Sequence[Trajectory], counterpart: str) -> dict[str, float]:
    """Mean turns per episode: the learner's and the checked counterpart's."""
    if not trajectories:
        return {"learner": math.nan, "counterpart": math.nan}
    learner = trajectories[0].learner
    return {
        "learner": exact_mean(len(t.turns_of(learner)) for t in trajectories),
        "counterpart": exact_mean(len(t.turns_of(counterpart)) for t in trajectories),
    }


def per_initial_state(pairs: Sequence[tuple[Trajectory, Trajectory]]) -> list[dict[str, Any]]:
    """Success rate per initial state on each side, rows sorted by state key."""
    groups: dict[str, list[tuple[Trajectory, Trajectory]]] = defaultdict(list)
    for scripted, llm in pairs:
        groups[family_of(scripted).initial(scripted)].append((scripted, llm))
    return [
        {
            "name": key,
            "episodes": len(group),
            "scripted": exact_mean(s.outcome is Outcome.SUCCESS for s, _ in group),
            "llm": exact_mean(m.outcome is Outcome.SUCCESS for _, m in group),
        }
        for key, group in sorted(groups.items())
    ]


def trajectory_dtw(pairs: Sequence[tuple[Trajectory, Trajectory]]) -> dict[str, float]:
    """DTW (city-block local cost) between the two plays' state trajectories of each start: the mean
    cost, the mean cost per step of the optimal path, and the number of pairs with a trajectory on both sides."""
    from dialogue_gym.metrics.dtw import dtw_path

    costs, per_step = [], []
    for scripted, llm in pairs:
        family = family_of(scripted)
        a, b = family.states(scripted), family.states(llm)
        if not a or not b:
            continue
        path, cost = dtw_path(a, b)
        costs.append(cost)
        per_step.append(cost / len(path))
    return {
        "mean": exact_mean(costs),
        "per_step": exact_mean(per_step),
        "pairs": len(costs),
    }


def judge_agreement(pairs: Sequence[tuple[Trajectory, Trajectory]]) -> dict[str, float]:
    """Mean |LLM score - scripted score| over the starts both judges scored, and their mean scores."""
    scored = [
        (family_of(s).judge_score(s), family_of(m).judge_score(m)) for s, m in pairs
    ]
    both = [(s, m) for s, m in scored if s is not None and m is not None]
    if not both:
        return {"pairs": 0, "mean_abs_gap": math.nan, "scripted": math.nan, "llm": math.nan}
    return {
        "pairs": len(both),
        "mean_abs_gap": exact_mean(abs(m - s) for s, m in both),
        "scripted": exact_mean(s for s, _ in both),
        "llm": exact_mean(m for _, m in both),
    }


def paired(scripted: Sequence[Trajectory], llm: Sequence[Trajectory]) -> list[tuple[Trajectory, Trajectory]]:
    """The two plays of each start, matched by episode seed (the same start and seed on both sides)."""
    by_seed = {t.seed: t for t in llm}
    return [(t, by_seed[t.seed]) for t in scripted if t.seed in by_seed]


def tracer_fidelity(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """TRACER's fidelity metrics (paper 002, section 5.1) of one side against the reference sessions."""
    from dialogue_gym.metrics.tracer import summary

    numbers = summary(list(trajectories))
    return {name: numbers[name] for name in TRACER_FIDELITY}


def report(plan: Setup, results: dict[str, dict[str, list[Trajectory]]]) -> dict[str, Any]:
    """Every number of the check (JSON-serialisable), per agent, and the warnings for unhealthy LLM-played roles."""
    agents: dict[str, Any] = {}
    warnings: list[str] = []
    for agent, sides in results.items():
        pairs = paired(sides["scripted"], sides["llm"])
        health = {side: health_summary(sides[side]) for side in SIDES}
        checked = {role: rates for role, rates in health["llm"].items() if role == plan.role}
        warnings += [f"{agent}: {message}" for message in health_warnings(checked)]
        entry: dict[str, Any] = {
            "outcomes": {side: outcome_rates(sides[side]) for side in SIDES},
            "health": health,
        }
        if plan.role == JUDGE_ROLE:
            entry["judge"] = judge_agreement(pairs)
        else:
            entry["turns"] = {side: turn_counts(sides[side], plan.role) for side in SIDES}
            entry["per_initial_state"] = per_initial_state(pairs)
            entry["trajectory_dtw"] = trajectory_dtw(pairs)
            entry["mean_states"] = {side: mean_state_trajectory(sides[side]) for side in SIDES}
            if pairs:
                family = family_of(pairs[0][0])
                entry["state"] = {"what": family.state, "dimensions": list(family.dimensions)}
            if plan.role == "user" and sides["scripted"] and sides["scripted"][0].scenario in ("TRACER-UserSim-v0", "DMBench-Assistant-v0"):
                entry["tracer"] = {side: tracer_fidelity(sides[side]) for side in SIDES}
        agents[agent] = entry
    return {"env_id": plan.env_id, "role": plan.role, "learner": plan.learner, "agents": agents, "warnings": warnings}


def mean_state_trajectory(trajectories: Sequence[Trajectory]) -> list[list[float]]:
    """Per turn index, the mean state over the episodes still running at that index (``[d values]`` each)."""
    by_step: dict[int, list[list[float]]] = defaultdict(list)
    for trajectory in trajectories:
        for step, value in enumerate(family_of(trajectory).states(trajectory)):
            by_step[step].append(value if isinstance(value, list) else [value])
    return [[exact_mean(column) for column in zip(*by_step[step])] for step in sorted(by_step)]


# -- text and picture ------------------------------------------------------------------------------------
def format_report(numbers: dict[str, Any], episodes: int) -> str:
    from dialogue_gym.reporting import format_table

    role, lines = numbers["role"], []
    lines.append(
        f"{numbers['env_id']}: the {role} role, scripted vs LLM, {episodes} episodes per agent and side (learner: {numbers['learner']})"
    )
    for agent, entry in numbers["agents"].items():
        lines.append(f"\n## agent {agent}\n")
        outcomes = [{"name": side, **entry["outcomes"][side]} for side in SIDES]
        columns = [(name, name) for name in entry["outcomes"]["scripted"]]
        if "turns" in entry:
            for row in outcomes:
                row.update({f"{key} turns": value for key, value in entry["turns"][row["name"]].items()})
            columns += [("learner turns", "learner turns"), ("counterpart turns", f"{role} turns")]
        lines.append(format_table(outcomes, columns, "side"))
        if "per_initial_state" in entry:
            lines.append("\nsuccess rate per initial state:\n")
            lines.append(format_table(entry["per_initial_state"], [("episodes", "episodes"), ("scripted", "scripted"), ("llm", "LLM")], "initial state"))
            dtw = entry["trajectory_dtw"]
            lines.append(
                f"\nstate trajectories, scripted vs LLM on the same start: DTW {dtw['mean']:.3f} (per path step {dtw['per_step']:.3f}) over {dtw['pairs']} pairs"
            )
        if "judge" in entry:
            judge = entry["judge"]
            lines.append(
                f"\njudge scores on the same calls: scripted mean {judge['scripted']:.3f}, LLM mean {judge['llm']:.3f}, "
                f"mean |gap| {judge['mean_abs_gap']:.3f} over {judge['pairs']} calls"
            )
        if "tracer" in entry:
            rows = [{"name": side, **entry["tracer"][side]} for side in SIDES]
            lines.append("\nTRACER fidelity against the reference sessions:\n")
            lines.append(format_table(rows, [(name, name) for name in TRACER_FIDELITY], "side"))
        for side in SIDES:
            block = format_health(entry["health"][side], f"\nhealth, {side} side")
            if block:
                lines.append(block)
    for warning in numbers["warnings"]:
        lines.append(f"\nWARNING: {warning}")
    return "\n".join(lines)


def plot(numbers: dict[str, Any], path: str | Path) -> Path:
    """Mean state trajectory per turn (or the judge's scores) and the checked role's health rates, both sides."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise DependencyNotInstalled("matplotlib", "train", "dialogue-gym fidelity --plot") from exc
    agents = list(numbers["agents"])
    figure, axes = plt.subplots(len(agents), 2, figsize=(11, 3.6 * len(agents)), squeeze=False)
    for row, agent in enumerate(agents):
        entry = numbers["agents"][agent]
        left, right = axes[row]
        if "mean_states" in entry:
            for side, style in zip(SIDES, ("-", "--")):
                series = np.array(entry["mean_states"][side])
                if series.size:
                    for dimension in range(series.shape[1]):
                        label = entry.get("state", {}).get("dimensions", [""])[dimension] if series.shape[1] > 1 else ""
                        left.plot(series[:, dimension], style, marker="o", label=f"{side} {label}".strip())
            left.set_xlabel("counterpart turn")
            left.set_ylabel(f"mean {entry.get('state', {}).get('what', 'state')}")
            left.set_title(f"{agent}: state trajectories")
            left.legend(fontsize=7)
        else:
            judge = entry["judge"]
            left.bar(["scripted", "LLM"], [judge["scripted"], judge["llm"]])
            left.set_title(f"{agent}: mean judge score")
        rates = [name for name in RATES]
        positions = np.arange(len(rates))
        for offset, side in zip((-0.2, 0.2), SIDES):
            values = [entry["health"][side].get(numbers["role"], {}).get(name, math.nan) for name in rates]
            right.bar(positions + offset, values, width=0.4, label=side)
        right.set_xticks(positions, [name.replace("_rate", "") for name in rates], rotation=20, fontsize=8)
        right.set_ylim(0, 1)
        right.set_title(f"{agent}: health of the {numbers['role']} role")
        right.legend(fontsize=7)
    figure.suptitle(f"{numbers['env_id']}: scripted vs LLM {numbers['role']}")
    figure.tight_layout()
    target = Path(path)
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target


# -- command line ----------------------------------------------------------------------------------------
def _json_object(text: str | None, flag: str) -> dict[str, Any]:
    value = json_option(text, flag) if text else {}
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} must be a JSON object like '{{\"name\": \"transformers\", \"model\": \"smollm2\"}}', got {text!r:.80}.")
    return value


def cmd_fidelity(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from dialogue_gym.backends import make_backend

    if args.episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {args.episodes}.")
    spec = _json_object(args.backend, "--backend")
    sampling = _json_object(args.sampling, "--sampling") or None
    env_kwargs = _json_object(args.env_kwargs, "--env-kwargs")
    setup(args.env_id, args.role, spec, sampling, env_kwargs)  # a wrong id or role fails before the model loads
    # One model for every agent and side: built here, handed to the envs as an object.
    plan = setup(args.env_id, args.role, make_backend(spec), sampling, env_kwargs)
    agents = (args.agent or plan.default_agent).split(",")
    with tqdm(total=2 * len(agents) * args.episodes, desc="fidelity", disable=args.quiet, file=sys.stderr) as bar:
        results = play(plan, agents, args.episodes, args.seed, batch_size=args.batch_size, on_episode=lambda _: bar.update(1))
    numbers = report(plan, results)
    print(format_report(numbers, args.episodes))
    if args.plot:
        print(f"\nplot written to {plot(numbers, args.plot)}")
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1, default=float))
        print(f"numbers written to {args.json}")
    return 0


def add_command(commands: Any) -> None:
    """Register ``fidelity`` on the CLI's subparsers."""
    parser = commands.add_parser("fidelity", help="play the same starts with the scripted and the LLM-played role; compare them side by side")
    parser.add_argument("env_id")
    parser.add_argument("--role", required=True, help="the role the model plays: a counterpart role of the id, or 'judge'")
    parser.add_argument("--backend", required=True, help='backend spec (JSON), e.g. \'{"name": "transformers", "model": "smollm2"}\'')
    parser.add_argument("--agent", default=None, help="the learner role's policies, comma-separated (default: the id's default player of that role)")
    parser.add_argument("--episodes", type=int, default=8, help="starts per agent and side, in the stratified evaluation order (default: 8)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the starts, the same on both sides (default: 0)")
    parser.add_argument("--sampling", default=None, help='JSON sampling of the model, e.g. \'{"temperature": 0, "max_new_tokens": 160}\' (default: the backend\'s own)')
    parser.add_argument("--env-kwargs", default=None, help='JSON env keyword arguments for both sides, e.g. \'{"max_agent_turns": 3}\' (default: {})')
    parser.add_argument("--batch-size", type=int, default=8, help="episodes played in lockstep (one backend batch per step; default: 8)")
    parser.add_argument("--plot", default=None, help="write the picture (PNG) here (default: none)")
    parser.add_argument("--json", default=None, help="write every number (JSON) here (default: none)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=cmd_fidelity)
