"""Train one SEAD preset over several seeds and compare it with the scripted agents on the held-out set.

    python -m trainers.sead.seeds --preset cpu-strategy-plus --seeds 5 [--iterations N] [--out runs/sead-seeds]

Trains seeds 0..N-1 (a finished seed's run folder is reused), evaluates every registered agent of
SEAD-Outbound-v0 (``random``, ``sop``, ``adaptive``, and the privileged upper bound ``oracle*``) on the
same held-out profiles (``eval_seed``), and prints each seed's held-out CR, their mean with a 95%
Student-t interval across seeds, and whether that interval lies above the best fair baseline. It also
checks that the trained agents hold a real conversation: how often the owner did not understand a
turn, heard a monologue or a near-repeat, or complained (:func:`conversation_audit`), beside the
same figures for ``adaptive``. Writes ``seeds.json`` and ``training_curve.png`` (training CR per
iteration of every seed, its held-out CR, and the held-out ``adaptive`` and ``oracle*`` lines).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean
from typing import Any, Sequence

import gymnasium as gym

from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.game import is_privileged
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.scenarios.sead.acts import VOCABULARY, analyze
from dialogue_gym.scenarios.sead.scripted_user import UserDynamics
from dialogue_gym.scenarios.understanding import near_repeat
from dialogue_gym.types import Trajectory
from envs_registry import get
from trainers.common import RunDir
from trainers.common.cli import run_main
from trainers.common.sweep import resumes
from trainers.common.stats import t_interval
from trainers.sead.config import PRESETS, SeadTrainConfig, build_config
from trainers.sead.train import EVAL_FIELDS, make_policy_for, train

ENV_ID = "SEAD-Outbound-v0"

COMPLAINTS: dict[str, tuple[str, ...]] = {
    "not_understood": ("What are you talking about?", "that makes no sense to me"),
    "repeated": ("You already said that.",),
    "monologue": ("reading a script",),
    "echo": ("Why are you repeating what I say?",),
    "evasive": ("What do you mean? You called me.",),
    "off_topic": ("What is this about?",),
    "pushed": ("Don't push me.", "I haven't agreed to anything"),
    "ignored": ("You didn't answer my question.", "I asked you what to do."),
}
"""What the scripted owner says when a turn fails as conversation (``scripted_user.py``), by kind."""


def conversation_audit(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Per agent turn: the share the owner's recogniser did not understand or heard as a monologue
    (:func:`~dialogue_gym.scenarios.sead.acts.analyze`), the share that repeat an earlier turn of the
    call at the owner's threshold (``UserDynamics.repeat_similarity``), and per owner reply the share
    with each complaint of :data:`COMPLAINTS`; plus the invalid-action rate and, over all agent turns,
    the share of distinct utterances and that of the most frequent one (a policy collapsed onto one line
    has a low first and a high second)."""
    threshold = UserDynamics().repeat_similarity
    turns = confusing = monologues = repeats = replies = invalid = 0
    complaints = dict.fromkeys(COMPLAINTS, 0)
    utterances: Counter[str] = Counter()
    for trajectory in trajectories:
        earlier: list[str] = []
        for turn in trajectory.turns:
            if turn.role == "agent":
                recognition = analyze(turn.text)
                turns += 1
                confusing += bool(recognition.confusing)
                monologues += recognition.monologue
                repeats += near_repeat(turn.text, earlier, VOCABULARY) >= threshold
                invalid += turn.invalid is not None
                earlier.append(turn.text)
                utterances[turn.text] += 1
            else:
                replies += 1
                for kind, phrases in COMPLAINTS.items():
                    complaints[kind] += any(phrase in turn.text for phrase in phrases)
    per_turn = max(1, turns)
    return {
        "agent_turns": turns, "turn:not_understood": confusing / per_turn, "turn:monologue": monologues / per_turn,
        "turn:near_repeat": repeats / per_turn, "turn:invalid": invalid / per_turn,
        "turn:distinct_share": len(utterances) / per_turn, "turn:top_share": max(utterances.values(), default=0) / per_turn,
        **{f"owner:{kind}": count / max(1, replies) for kind, count in complaints.items()},
    }


def _train_seed(job: tuple[str, int, int | None, int, str]) -> tuple[int, SeadTrainConfig]:
    preset, seed, iterations, eval_episodes, out = job
    overrides: dict[str, Any] = {"seed": seed, "eval_episodes": eval_episodes, "run_dir": str(Path(out) / f"seed{seed}"),
                                 "plots": False, "before_and_baselines": False}
    if iterations is not None:
        overrides["iterations"] = iterations
    config = build_config(preset, **overrides)
    train(config, resume=resumes(config, "pass the --preset, --iterations and --eval-episodes it was started with, or another --out"))
    return seed, config


def _held_out(policy: Any, config: SeadTrainConfig) -> list[Trajectory]:
    """``policy``'s held-out episodes (greedy where it can be), as the trainer's held-out evaluation plays them."""
    if hasattr(policy, "greedy"):
        policy.greedy = True
    return evaluate(ENV_ID, policy, config.eval_episodes, seed=config.eval_seed,
                    env_kwargs={"max_agent_turns": config.max_agent_turns, "user": config.user, "user_backend": config.user_backend})


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m trainers.sead.seeds", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--preset", default="cpu-strategy-plus", help=f"one of {', '.join(PRESETS)}")
    cli.add_argument("--seeds", type=int, default=5)
    cli.add_argument("--iterations", type=int, default=None, help="default: the preset's")
    cli.add_argument("--eval-episodes", type=int, default=1200)
    cli.add_argument("--out", default="runs/sead-seeds")
    cli.add_argument("--workers", type=int, default=2)
    args = cli.parse_args(argv)
    return run_main(cli.prog, lambda: _seeds(args))


def _seeds(args: argparse.Namespace) -> int:
    for name, minimum in (("seeds", 2), ("eval_episodes", 1), ("workers", 1)):
        if getattr(args, name) < minimum:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= {minimum}, got {getattr(args, name)}.")
    if args.iterations is not None and args.iterations < 0:
        raise ConfigError(f"--iterations must be >= 0, got {args.iterations}.")
    config = build_config(args.preset, eval_episodes=args.eval_episodes)
    jobs = [(args.preset, seed, args.iterations, args.eval_episodes, args.out) for seed in range(args.seeds)]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        runs = sorted(pool.map(_train_seed, jobs))

    environment = gym.make(ENV_ID, disable_env_checker=True).unwrapped
    agents = {name: environment.make_role_policy("agent", name) for name in get(ENV_ID).agents}
    references = {name: _held_out(agent, config) for name, agent in agents.items()}
    reference_cr = {name: sead_metrics.cr(trajectories) for name, trajectories in references.items()}
    fair = {name: cr for name, cr in reference_cr.items() if not is_privileged(agents[name])}
    best = max(fair, key=fair.get)

    per_seed, curves, audits = [], {}, {}
    for seed, seed_config in runs:
        run = RunDir(seed_config.run_dir)
        per_seed.append(run.load_state("eval", EVAL_FIELDS)["cr"])
        curves[seed] = [row["episode/cr"] for row in run.read_metrics()]
        checkpoint = run.path / run.load_state("progress")["checkpoint"]
        audits[seed] = conversation_audit(_held_out(make_policy_for(seed_config, run, checkpoint), config))
    low, high = t_interval(per_seed)
    audits_reference = {name: conversation_audit(references[name]) for name in ("sop", "adaptive")}

    print(f"\n{args.preset}: held-out CR over {args.eval_episodes} profiles (eval_seed {config.eval_seed}), {args.seeds} seeds")
    print("per seed: " + " ".join(f"{cr:.3f}" for cr in per_seed))
    print(f"mean {mean(per_seed):.3f}, 95% t-interval [{low:.3f}, {high:.3f}]")
    print("same held-out set: " + ", ".join(f"{name}{'*' if is_privileged(agents[name]) else ''} {cr:.3f}" for name, cr in reference_cr.items()))
    verdict = "above" if low > fair[best] else "NOT above"
    print(f"the interval is {verdict} the best fair baseline, {best} {fair[best]:.3f}")
    columns = {**{f"seed {s}": audit for s, audit in audits.items()}, **audits_reference}
    print("\nconversation audit (turn:* per agent turn, owner:* per owner reply):")
    print(f"{'':22s}" + "".join(f"{label:>10s}" for label in columns))
    for key in next(iter(columns.values())):
        print(f"{key:22s}" + "".join(f"{audit[key]:10.3f}" if isinstance(audit[key], float) else f"{audit[key]:10d}" for audit in columns.values()))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "preset": args.preset, "eval_episodes": args.eval_episodes, "eval_seed": config.eval_seed,
        "per_seed": per_seed, "mean": mean(per_seed), "low": low, "high": high, "references": reference_cr,
        "best_fair_baseline": best, "interval_above_best_fair_baseline": bool(low > fair[best]),
        "conversation_audit": {**{f"seed{s}": a for s, a in audits.items()}, **audits_reference},
    }
    (out / "seeds.json").write_text(json.dumps(summary, indent=2))
    from trainers.sead.plots import plot_seed_curves

    plot_seed_curves(curves, dict(zip([s for s, _ in runs], per_seed)), reference_cr, out / "training_curve.png", args.preset)
    print(f"\nwritten: {out / 'seeds.json'}, {out / 'training_curve.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
