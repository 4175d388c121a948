"""SEAD's curriculum ablation (paper Table 3) with the CPU strategy policy.

    python -m trainers.sead.ablate --seeds 5 [--iterations 150] [--modes full released ...] [--out runs/sead-ablation]

Trains one agent per (curriculum mode, seed) — ``full`` (the paper's formula 1 - |CR(s) - 0.5|),
``released`` (the reweighting of SEAD's public code: per-dimension value weights, extremes excluded;
``ProfileController(mode="released")``), ``uniform`` ("w/o MA") and ``unstructured`` ("w/o MA + w/o
PS"), plus ``joint`` (the paper's Config 1, "w/o MA + w/o PS + Train URM": the ``unstructured``
curriculum with the owner trained jointly on the adversarial user reward, ``user_training="joint"``,
trainers/sead/joint_user.py) — and
prints two held-out completion rates with a 95% interval across seeds (Student t), plus a plot:

* ``uniform``: the trainer's own held-out evaluation, CR on the fixed profile set (``eval_episodes``
  starts stratified over the 120 states, ``eval_seed``; never the training curriculum).
* ``hard``: the same held-out episodes, each weighted by the difficulty of its initial state s,
  w(s) = 1 - CR_adaptive(s), so CR_hard = sum_i w(s_i) 1[success_i] / sum_i w(s_i). CR_adaptive(s) is
  the best fair scripted agent (``adaptive``) on state s, measured on a separate reference set
  (``REFERENCE_EPISODES`` starts at ``eval_seed + REFERENCE_SEED_OFFSET``, whose reset seeds do not
  overlap the held-out ones), so the weights do not select on the held-out episodes' own luck; they
  are written to ``hard_weights.json``. Weighting every state (rather than keeping a subset below a
  threshold) keeps all 1,200 episodes in the estimate; the hardest states (cooperation 0) weigh ~0.9,
  the easiest ~0. A trained policy's per-state held-out outcomes come from replaying its final
  checkpoint on the held-out set (``state/eval_states.json``), checked to reproduce the trainer's CR.

Every row, ``joint`` included, is evaluated against the fixed scripted owner: the question is how good
an agent each training produces. For ``joint`` it also prints the trained owner's collapse: the share of
training calls it ended itself by hanging up or by accepting arbitrarily in the last ``TAIL_ITERATIONS``
iterations, and the training CR of the first and last ``TAIL_ITERATIONS`` iterations (for every row).

The ``released`` row trains with ``n_max = released_n_max(iterations)``: its 24 states (cooperation
1-3, emotion 1-2, trust 1-4) hold only 24 x 200 = 4,800 dialogues, fewer than 150 iterations x 60, so
with the SPEC's 200 the run stops at iteration 80 (every state capped); the cap is raised to the next
hundred above iterations x 60 / 24 (400 for 150 iterations). The paper has no separate number for the
released curriculum (its 52.0 is the SEAD row, whichever weighting produced it), so its paper column is "-".

Finished runs in ``--out`` are reused (a run folder started with other settings is refused; a field
added to the trainer config since the run counts at its default, which is what the run did);
``--workers`` trains that many runs at once.
"""

from __future__ import annotations

import argparse
import json
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean
from typing import Any, Sequence

from dialogue_gym.errors import ConfigError
from trainers.common import RunDir, RunFolderError
from trainers.common.cli import run_main
from trainers.common.sweep import resumes
from trainers.common.stats import shown
from trainers.common.stats import summary as stats_summary
from trainers.sead.config import SeadTrainConfig, build_config
from trainers.sead.train import EVAL_FIELDS, make_policy_for, train

MODES = ("full", "released", "uniform", "unstructured", "joint")
PAPER = {"full": 52.0, "released": None, "uniform": 45.8, "unstructured": 40.5, "joint": 35.2}
PAPER_ORDERINGS = (("full", "uniform"), ("released", "uniform"), ("uniform", "unstructured"), ("unstructured", "joint"), ("full", "joint"))
"""The paper's Table 3 orderings (better, worse), checked on both held-out evaluations: its adjacent rows,
and SEAD against the trained user (the ablation's point); ``released`` stands in for the paper's SEAD
row as ``full`` does."""
JOINT_CURRICULUM = "unstructured"
"""The ``joint`` row's curriculum: the paper's Config 1 is "w/o MA + w/o PS + Train URM", so the row
differs from ``unstructured`` (Config 2) only by the trained owner."""
TAIL_ITERATIONS = 10
"""Iterations at each end of a run over which the training CR and the owner's collapse are averaged."""
COLLAPSE_METRICS = ("user/hang_up_share", "user/accept_share", "user/deviated_share")
REFERENCE_EPISODES = 3600
"""Starts of the reference set that measures CR_adaptive(s) for the hard weighting (30 per state)."""
REFERENCE_SEED_OFFSET = 100_000
"""The reference set's seed is eval_seed + this: its reset seeds (seed + start) miss the held-out ones."""
RELEASED_STATES = 3 * 2 * 4
"""Initial states the released curriculum draws by default (the extremes of each dimension excluded)."""
EVAL_STATES_FIELDS = {"cr": (int, float), "successes": list, "episodes": list}


def released_n_max(iterations: int, batch_size: int = 60, spec_n_max: int = 200) -> int:
    """The released row's n_max: the SPEC's unless its 24 states cannot hold the run, then the next hundred above."""
    needed = iterations * batch_size / RELEASED_STATES
    return spec_n_max if needed <= spec_n_max else math.ceil(needed / 100) * 100


def _config(mode: str, seed: int, iterations: int, eval_episodes: int, out: str) -> SeadTrainConfig:
    overrides: dict[str, Any] = {"curriculum": mode}
    if mode == "released":
        overrides["n_max"] = released_n_max(iterations)
    if mode == "joint":
        overrides.update(curriculum=JOINT_CURRICULUM, user_training="joint")
    return build_config(
        "cpu-strategy", seed=seed, iterations=iterations, eval_episodes=eval_episodes,
        run_dir=str(Path(out) / f"{mode}-seed{seed}"), plots=False, before_and_baselines=False, **overrides,
    )


def _held_out_by_state(config: SeadTrainConfig, agent: Any) -> tuple[list[int], list[int]]:
    """Per initial state (120, lexicographic): successes and episodes of ``agent`` on the held-out set."""
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.scenarios.sead.state import ALL_STATES, state_index
    from dialogue_gym.types import Outcome

    trajectories = evaluate(
        "SEAD-Outbound-v0", agent, config.eval_episodes, seed=config.eval_seed,
        env_kwargs={"max_agent_turns": config.max_agent_turns, "user": config.user, "user_backend": config.user_backend},
    )
    successes, episodes = [0] * len(ALL_STATES), [0] * len(ALL_STATES)
    for trajectory in trajectories:
        index = state_index(tuple(trajectory.profile["state"]))
        episodes[index] += 1
        successes[index] += trajectory.outcome is Outcome.SUCCESS
    return successes, episodes


def training_summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Training CR over the first and last TAIL_ITERATIONS iterations and, for a joint run, the owner's
    collapse shares over the last ones (only where the run records them: a fixed owner never deviates)."""
    first, last = rows[:TAIL_ITERATIONS], rows[-TAIL_ITERATIONS:]
    summary = {"train_cr_first": mean(r["episode/cr"] for r in first) if first else math.nan,
               "train_cr_last": mean(r["episode/cr"] for r in last) if last else math.nan}
    for name in COLLAPSE_METRICS:
        values = [r[name] for r in last if name in r]
        if values:
            summary[name] = mean(values)
    return summary


def _one(job: tuple[str, int, int, int, str]) -> tuple[str, int, float, list[int], list[int], dict[str, float]]:
    mode, seed, iterations, eval_episodes, out = job
    config = _config(mode, seed, iterations, eval_episodes, out)
    run = train(config, resume=resumes(config, "pass the --iterations and --eval-episodes it was started with, or another --out"))
    cr = run.load_state("eval", EVAL_FIELDS)["cr"]
    by_state = run.load_state("eval_states", EVAL_STATES_FIELDS)
    if by_state is None:
        progress = run.load_state("progress")
        checkpoint = run.checkpoint_path("progress", "checkpoint", progress["checkpoint"]) if progress else None
        policy = make_policy_for(config, run, checkpoint)
        if hasattr(policy, "greedy"):
            policy.greedy = True  # as the trainer's held-out evaluation plays it
        successes, episodes = _held_out_by_state(config, policy)
        if sum(successes) / sum(episodes) != cr:
            raise RunFolderError(
                f"{run.path}: replaying the final checkpoint on the held-out set gives CR {sum(successes) / sum(episodes):.4f}, "
                f"not the saved {cr:.4f} (state/eval.json): the policy or the game changed since the run; train it again in another --out."
            )
        by_state = {"cr": cr, "successes": successes, "episodes": episodes}
        with RunDir.resume(run.path) as locked:
            locked.save_state("eval_states", by_state)
    return mode, seed, cr, by_state["successes"], by_state["episodes"], training_summary(run.read_metrics())


def hard_weights(eval_seed: int, out: Path) -> list[float]:
    """w(s) = 1 - CR_adaptive(s) per initial state, from the reference set (cached in ``out/hard_weights.json``)."""
    path = out / "hard_weights.json"
    settings = {"agent": "adaptive", "episodes": REFERENCE_EPISODES, "seed": eval_seed + REFERENCE_SEED_OFFSET}
    if path.exists():
        saved = json.loads(path.read_text())
        if {k: saved.get(k) for k in settings} == settings:
            return saved["weights"]
    from trainers.common.baselines import fair_baselines

    reference = build_config("cpu-strategy", eval_episodes=REFERENCE_EPISODES, eval_seed=settings["seed"])
    successes, episodes = _held_out_by_state(reference, fair_baselines("SEAD-Outbound-v0")["adaptive"])
    rates = [s / n for s, n in zip(successes, episodes)]
    weights = [1.0 - rate for rate in rates]
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**settings, "cr_adaptive": rates, "weights": weights}))
    return weights


def weighted_cr(successes: Sequence[int], episodes: Sequence[int], weights: Sequence[float]) -> float:
    """sum_s w(s) successes(s) / sum_s w(s) episodes(s): every episode weighted by its state's w
    (NaN when no episode has weight, possible only on a held-out set far smaller than the 120 states)."""
    total = sum(w * n for w, n in zip(weights, episodes))
    return sum(w * s for w, s in zip(weights, successes)) / total if total > 0 else math.nan


def welch_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The Welch t-interval of mean(a) - mean(b) for independent runs; ``(nan, nan)`` below 2 runs each."""
    from statistics import variance

    from scipy.stats import t

    if len(a) < 2 or len(b) < 2:
        return (math.nan, math.nan)
    va, vb = variance(a) / len(a), variance(b) / len(b)
    difference = mean(a) - mean(b)
    if va + vb == 0:
        return (difference, difference)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t.ppf(0.5 + confidence / 2, dof) * math.sqrt(va + vb)
    return (difference - half, difference + half)


def ordering_verdict(better: Sequence[float], worse: Sequence[float]) -> str:
    """``holds`` (the difference's interval is above 0), ``holds in the mean only`` or ``does not hold``."""
    low, _ = welch_interval(better, worse)
    if mean(better) <= mean(worse):
        return "does not hold"
    return "holds" if low > 0 else "holds in the mean only"


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m trainers.sead.ablate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--seeds", type=int, default=5)
    cli.add_argument("--iterations", type=int, default=150)
    cli.add_argument("--eval-episodes", type=int, default=1200)
    cli.add_argument("--modes", nargs="+", default=list(MODES), help=f"curricula to train and report (default: all of {', '.join(MODES)})")
    cli.add_argument("--out", default="runs/sead-ablation")
    cli.add_argument("--workers", type=int, default=2)
    args = cli.parse_args(argv)
    return run_main(cli.prog, lambda: _ablate(args))


def _ablate(args: argparse.Namespace) -> int:
    for name, minimum in (("seeds", 1), ("iterations", 0), ("eval_episodes", 1), ("workers", 1)):
        if getattr(args, name) < minimum:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= {minimum}, got {getattr(args, name)}.")
    unknown = [mode for mode in args.modes if mode not in MODES]
    if unknown:
        raise ConfigError(f"--modes {' '.join(unknown)}: not an ablation curriculum; use some of {', '.join(MODES)}.")
    modes = [mode for mode in MODES if mode in args.modes]
    jobs = [(mode, seed, args.iterations, args.eval_episodes, args.out) for mode in modes for seed in range(args.seeds)]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = sorted(pool.map(_one, jobs))
    eval_seed = build_config("cpu-strategy").eval_seed
    weights = hard_weights(eval_seed, Path(args.out))
    summary: dict[str, Any] = {}
    for mode in modes:
        runs = [r for r in results if r[0] == mode]
        hard = [weighted_cr(successes, episodes, weights) for _, _, _, successes, episodes, _ in runs]
        training = [r[5] for r in runs]
        summary[mode] = {
            **stats_summary([cr for _, _, cr, _, _, _ in runs]), "hard": stats_summary(hard), "paper": PAPER[mode],
            "n_max": _config(mode, 0, args.iterations, args.eval_episodes, args.out).n_max,
            "training": {name: stats_summary([t[name] for t in training]) for name in training[0]},
        }
    print(f"\nheld-out CR after {args.iterations} iterations, {args.seeds} seeds, {args.eval_episodes} held-out episodes each;")
    print(f"hard: the same episodes weighted by 1 - CR_adaptive of their initial state ({REFERENCE_EPISODES} reference starts)\n")
    print(f"{'curriculum':14s} {'uniform, 95% CI':>22s}  {'hard, 95% CI':>22s}  {'per seed (uniform)':34s} paper (Qwen-14B)")
    for mode in modes:
        row, paper = summary[mode], PAPER[mode]
        print(
            f"{mode:14s} {shown(row):>22s}  {shown(row['hard']):>22s}  {' '.join(f'{v:.3f}' for v in row['per_seed']):34s} "
            + (f"{paper:.1f}%" if paper is not None else "-  (no separate number: the paper's SEAD row is 52.0)")
        )
    print(f"\ntraining CR (against the training owner), mean of the first and last {TAIL_ITERATIONS} iterations, 95% CI across seeds:")
    for mode in modes:
        training = summary[mode]["training"]
        print(f"{mode:14s} first {shown(training['train_cr_first'])}  last {shown(training['train_cr_last'])}")
        if mode == "joint":
            print(
                f"{'':14s} trained owner, calls it ended itself in the last {TAIL_ITERATIONS} iterations: hang-up "
                f"{shown(training['user/hang_up_share'])}, arbitrary acceptance {shown(training['user/accept_share'])}; "
                f"calls with any deviation from the scripted owner {shown(training['user/deviated_share'])}"
            )
    orderings = _orderings(summary)
    print()
    for line in orderings:
        print(line)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ablation.json").write_text(json.dumps({**summary, "orderings": orderings}, indent=2))
    _plot(summary, modes, out / "ablation.png")
    print(f"\nwritten: {out / 'ablation.json'}, {out / 'ablation.png'}, {out / 'hard_weights.json'}")
    return 0


def _orderings(summary: dict[str, Any]) -> list[str]:
    """The paper's orderings among the modes present, per held-out evaluation, with the Welch interval of the difference."""
    lines = []
    for better, worse in PAPER_ORDERINGS:
        if better not in summary or worse not in summary:
            continue
        for evaluation in ("uniform", "hard"):
            a, b = (summary[m]["per_seed"] if evaluation == "uniform" else summary[m]["hard"]["per_seed"] for m in (better, worse))
            low, high = welch_interval(a, b)
            lines.append(
                f"paper order {better} > {worse} ({evaluation}): {ordering_verdict(a, b)}; "
                f"difference {mean(a) - mean(b):+.3f} [{low:+.3f}, {high:+.3f}] (Welch 95%)"
            )
    return lines


def _plot(summary: dict, modes: list[str], path: Path) -> None:
    from trainers.sead.plots import _pyplot

    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.5))
    width = 0.38
    for offset, evaluation, colour in ((-width / 2, "uniform", "tab:blue"), (width / 2, "hard", "tab:red")):
        entries = [summary[m] if evaluation == "uniform" else summary[m]["hard"] for m in modes]
        means = [entry["mean"] for entry in entries]
        errors = [[entry["mean"] - entry["low"] for entry in entries], [entry["high"] - entry["mean"] for entry in entries]]
        errors = [[0 if math.isnan(e) else e for e in side] for side in errors]
        axis.bar([i + offset for i in range(len(modes))], means, width, yerr=errors, capsize=5, color=colour, label=f"held-out, {evaluation}")
    axis.set_xticks(range(len(modes)), modes)
    axis.set_ylabel("held-out completion rate")
    axis.set_ylim(0, 1)
    axis.legend(loc="upper right", fontsize=8)
    axis.set_title("SEAD curriculum ablation (CPU strategy policy)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    raise SystemExit(main())
