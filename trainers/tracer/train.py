"""TRACER's two-stage training of a user simulator (paper 002, section 4; SPEC section 2), top to bottom.

Stage 1 (SFT, optional): fit the policy to the reference sessions rendered in the output format.
Stage 2 (RL), each iteration:
  1. evaluate on the reference sessions every ``eval_every`` iterations (Group-dPCR, intent DTW, ...);
  2. draw ``sessions_per_iteration`` reference sessions and play ``group_size`` rollouts of each against
     the fixed assistant (episodes appended to trajectories.jsonl as each chunk finishes);
  3. rewards R = l1 R_fmt + l2 R_final + l3 R_traj come from the env; GRPO-standardise them within each
     reference's group, then modulate per user turn by the DTW deviation suffix c_t
     (A~ = A (1 - l_adv sign(A) tanh(gamma c_t))) and take one policy step;
  4. commit: checkpoint, metrics row, then ``state/progress.json`` (atomic).
``--resume RUN_DIR`` continues after a crash or ``kill -9``: finished episodes of the interrupted
iteration are kept, only the missing ones are played, and everything else is recomputed exactly.
"""

from __future__ import annotations

import itertools
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from tqdm import tqdm

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import tracer as tracer_metrics
from dialogue_gym.rewards.tracer import turn_advantages
from dialogue_gym.scenarios.tracer.data import ReferenceSession, ReferenceSet
from dialogue_gym.scenarios.tracer.game import TracerConfig, TracerGame
from dialogue_gym.scenarios.tracer.policies import make_policy
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory
from trainers.common import RunDir, RunFolderError
from trainers.common.baselines import best_baseline, fair_baselines
from trainers.common.cli import config_from_cli, run_main
from trainers.common.rundir import STATE_FIX
from trainers.tracer.config import TracerTrainConfig, build_config, parser
from trainers.tracer.policy import IntentPolicy
from trainers.common.sft import sft_lm
from trainers.tracer.sft import lm_sessions, strategy_samples

KEEP_CHECKPOINTS = 2
EVAL_METRICS = ("pcr", "real_pcr", "acc", "f1", "group_dpcr", "w1_turns", "intent_dtw", "user_turns", "reward")


def env_kwargs(config: TracerTrainConfig) -> dict[str, Any]:
    """The TracerConfig fields the trainer sets (the rest keep their defaults)."""
    return {
        "max_user_turns": config.max_user_turns, "sessions_file": config.sessions_file, "reward_weights": list(config.reward_weights),
        "alpha": config.alpha, "beta": config.beta, "eta_flat": config.eta_flat, "rho": config.rho,
    }


def make_learner(config: TracerTrainConfig, checkpoint: Path | None, base_model: str | None):
    """The trainable user policy, fresh or from a checkpoint (``base_model``: the lm's reference weights)."""
    if config.policy == "strategy":
        return IntentPolicy.load(checkpoint) if checkpoint else IntentPolicy(config.learning_rate)
    from trainers.grpo.lm import CausalLMPolicy, GRPOConfig

    grpo = GRPOConfig(
        learning_rate=config.learning_rate, kl_coef=config.kl_coef, clip_eps=config.clip_eps, lora_rank=config.lora_rank,
        temperature=config.temperature, max_new_tokens=config.max_new_tokens,
    )
    return CausalLMPolicy(base_model, grpo, device=config.device, checkpoint=str(checkpoint) if checkpoint else None, seed=config.seed)


def base_model_path(config: TracerTrainConfig, run: RunDir) -> str:
    """The lm policy's starting weights: ``config.model``, or the "tiny" or "scratch" model built in the
    run folder (whole or not at all)."""
    if config.model not in ("tiny", "scratch"):
        return config.model
    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.atomic import saved_folder

    path = run.path / f"{config.model}_model"
    if not (path / "config.json").exists():
        shape = {"seed": config.seed}
        if config.model == "scratch":
            from trainers.sead.config import SCRATCH_MODEL

            shape.update(SCRATCH_MODEL, num_hidden_layers=SCRATCH_LAYERS, corpus=training_text(config))
        saved_folder(path, lambda folder: build_tiny_chat_model(folder, **shape))
    return str(path)


SCRATCH_LAYERS = 4
"""Depth of ``model="scratch"``: SEAD's cpu-lm-scratch depth (4 layers fitted its expert where 2 underfit)."""


def training_text(config: TracerTrainConfig) -> list[str]:
    """Every message of the training sessions as the user LM sees and says them (its prompts and its
    rendered turns): the corpus the scratch model's tokenizer learns its sentences from. Held-out
    sessions stay out, so their new sentences cost what they would cost a model never shown them."""
    game = TracerGame(TracerConfig(sessions_file=config.sessions_file))
    train_ids, _ = split_sessions(game.references, config.heldout_per_group)
    rows = [row for session in lm_sessions(game, [game.references[i] for i in train_ids]) for row in session]
    return [message["content"] for row in rows for message in (*row["prompt"], *row["completion"])]


def split_sessions(references: ReferenceSet, heldout_per_group: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(training ids, evaluation ids)`` in file order: the last ``heldout_per_group`` sessions of every
    group only evaluate; with 0 every session does both."""
    if not heldout_per_group:
        return references.ids, references.ids
    groups = references.groups()
    smallest = min(len(sessions) for sessions in groups.values())
    if heldout_per_group >= smallest:
        raise ConfigError(
            f"heldout_per_group={heldout_per_group} leaves no training session in a group of {smallest} sessions; use at most {smallest - 1}."
        )
    held_out = {s.session_id for sessions in groups.values() for s in sessions[-heldout_per_group:]}
    return tuple(i for i in references.ids if i not in held_out), tuple(i for i in references.ids if i in held_out)


def spread(sessions: Sequence[ReferenceSession], count: int) -> list[ReferenceSession]:
    """The first ``count`` of ``sessions`` taken from the groups in turn (first of each group, then the
    second, ...), so a small SFT set still covers every group; 0: all, in their order."""
    if not count:
        return list(sessions)
    groups: dict[str, list[ReferenceSession]] = {}
    for session in sessions:
        groups.setdefault(session.group_id, []).append(session)
    in_turn = [s for rank in itertools.zip_longest(*groups.values()) for s in rank if s is not None]
    return in_turn[:count]


def supervised_stage(config: TracerTrainConfig, run: RunDir, game: TracerGame, sessions: Sequence[ReferenceSession]) -> dict[str, Any]:
    """Stage 1 on whole reference sessions (``game`` keeps the default turn limit); returns the state
    record (metrics and the checkpoint the RL stage starts from)."""
    name = "checkpoints/sft"
    if config.policy == "strategy":
        policy = IntentPolicy(config.learning_rate)
        x, levels = strategy_samples(policy, game, sessions)
        metrics = policy.fit(x, levels, config.sft_epochs, config.sft_learning_rate, seed=config.seed)
        policy.save(run.path / name)
    else:
        batching = {"batch_size": config.sft_batch_size, "accumulation": 1} if config.sft_batch_size else {}
        metrics = sft_lm(
            base_model_path(config, run), lm_sessions(game, sessions), run.path / name, config.sft_epochs, config.sft_learning_rate, config.seed,
            max_steps=config.sft_steps or -1, **batching,
        )
    return {**metrics, "checkpoint": name, "sessions": len(sessions)}


def episode_plan(config: TracerTrainConfig, iteration: int, session_ids: Sequence[str]) -> list[tuple[str, int]]:
    """``(session id, seed)`` of every episode of ``iteration``: G rollouts of each drawn session."""
    rng = random.Random(mix_seed(config.seed, iteration))
    drawn = rng.sample(list(session_ids), min(config.sessions_per_iteration, len(session_ids)))
    return [
        (session_id, mix_seed(config.seed, iteration, index * config.group_size + g))
        for index, session_id in enumerate(drawn)
        for g in range(config.group_size)
    ]


def play(pool: list[TracerGame], driver: CounterpartDriver, learner: Any, plan: Sequence[tuple[str, int]]) -> list[Trajectory]:
    """Play ``plan``'s episodes in lockstep; each trajectory carries the learner's record in ``meta``."""
    games = pool[: len(plan)]
    for game, (session_id, seed) in zip(games, plan):
        game.reset(seed=seed, options={"session_id": session_id})
    memories = [driver.start(game) for game in games]
    driver.advance(games, memories)
    trajectories = []
    for game, memory in zip(games, memories):
        trajectory = game.trajectory()
        trajectory.learner = "user"
        trajectory.meta = {**trajectory.meta, "learner_record": learner.record(memory["user"])}
        trajectories.append(trajectory)
    return trajectories


def advantages_of(trajectories: Sequence[Trajectory], config: TracerTrainConfig) -> list[np.ndarray]:
    """Per-user-turn advantages: GRPO within each reference session's group, modulated by c_t."""
    rewards = [t.rewards.get("user", 0.0) for t in trajectories]
    suffixes = [t.meta["alignment"]["suffix"] for t in trajectories]
    groups = [t.meta["reference"]["session_id"] for t in trajectories]
    return turn_advantages(rewards, suffixes, groups, l_adv=config.l_adv, gamma=config.gamma)


def update(policy: Any, trajectories: Sequence[Trajectory], advantages: Sequence[np.ndarray]) -> dict[str, float]:
    records = [t.meta["learner_record"] for t in trajectories]
    if isinstance(policy, IntentPolicy):
        return policy.update(records, advantages)
    from trainers.grpo.lm import TurnSample

    samples = [
        TurnSample(turn["prompt_ids"], turn["completion_ids"], turn["logprobs"], [float(a)] * len(turn["completion_ids"]))
        for record, per_turn in zip(records, advantages)
        for turn, a in zip(record["turns"], per_turn)
        if turn["completion_ids"]
    ]
    return policy.step(samples)


def evaluation_episodes(config: TracerTrainConfig, policy: Any, session_ids: Sequence[str], label: str | None = None) -> list[Trajectory]:
    """``policy``'s rollouts of the evaluation sessions (fixed seeds: every call compares like with
    like); ``label`` shows a progress bar."""
    if config.eval_sessions:
        session_ids = list(session_ids)[:: max(1, len(session_ids) // config.eval_sessions)][: config.eval_sessions]
    episodes = len(session_ids) * config.eval_rollouts
    with tqdm(total=episodes, desc=label, disable=label is None, file=sys.stderr) as bar:
        return evaluate(
            "TRACER-UserSim-v0", policy, episodes, seed=config.eval_seed, learner="user", batch_size=config.eval_batch,
            on_episode=lambda _: bar.update(1),
            env_kwargs={**env_kwargs(config), "sessions": list(session_ids), "assistant": config.assistant, "assistant_backend": config.assistant_backend},
        )


def evaluation(config: TracerTrainConfig, policy: Any, session_ids: Sequence[str], full: bool = False, label: str | None = None) -> dict[str, Any]:
    """TRACER's metrics of ``policy`` over the evaluation sessions; ``full`` adds OT-DTW."""
    summary = tracer_metrics.summary(evaluation_episodes(config, policy, session_ids, label), embedder="hashing" if full else None)
    return summary if full else {name: summary[name] for name in EVAL_METRICS}


def saved_evaluation(config: TracerTrainConfig, run: RunDir, name: str, policy: Callable[[], Any], session_ids: Sequence[str], label: str) -> list[Trajectory]:
    """The full evaluation ``name`` (state ``<name>.json``), its episodes kept in ``state/<name>_episodes.json``
    for paired comparisons; played (by the policy ``policy()`` makes) only when not saved yet, so a
    resumed run reuses it without loading anything."""
    episodes = run.load_state(f"{name}_episodes")
    if episodes is not None and run.load_state(name, {}) is not None:
        return [Trajectory.from_dict(e) for e in episodes]
    trajectories = evaluation_episodes(config, policy(), session_ids, label)
    run.save_state(f"{name}_episodes", [t.to_dict() for t in trajectories])
    run.save_state(name, tracer_metrics.summary(trajectories, embedder="hashing"))
    return trajectories


def untuned_policy(config: TracerTrainConfig, run: RunDir) -> Any:
    """The policy before any training: the base model, or a fresh strategy policy."""
    if config.policy == "strategy":
        return IntentPolicy(config.learning_rate)
    return make_learner(config, None, base_model_path(config, run))


def sft_policy(config: TracerTrainConfig, run: RunDir, sft: dict[str, Any]) -> Any:
    """The policy stage 1 produced, as the RL stage starts from it."""
    checkpoint = run.path / sft["checkpoint"]
    return make_learner(config, None, str(checkpoint)) if config.policy == "lm" else make_learner(config, checkpoint, None)


PAIRED_CHANGES = (("eval_change_sft", "untuned -> SFT"), ("eval_change_rl", "SFT -> RL"), ("eval_change", "untuned -> trained"))
"""The paired changes a run with ``eval_before`` reports (state file, what lies between its two ends);
the first two only when both stages ran."""


def rollout_metrics(trajectories: Sequence[Trajectory], advantages: Sequence[np.ndarray]) -> dict[str, float]:
    terms = [t.meta.get("tracer_reward", {}) for t in trajectories]
    return {
        "episode/reward": float(np.mean([t.rewards.get("user", 0.0) for t in trajectories])),
        **{f"episode/{name}": float(np.mean([term.get(name, np.nan) for term in terms])) for name in ("r_fmt", "r_final", "r_traj", "dtw_cost")},
        "episode/pcr": tracer_metrics.pcr(trajectories),
        "episode/turns": float(np.mean([len(t.turns_of("user")) for t in trajectories])),
        "episode/invalid_action_rate": tracer_metrics.invalid_action_rate(trajectories, "user"),
        "advantage/turn_mean_abs": float(np.mean(np.abs(np.concatenate(advantages)))),
    }


PROGRESS_FIELDS = {"iteration": int, "checkpoint": str}
SFT_FIELDS = {"checkpoint": str}


def train(config: TracerTrainConfig, resume: bool = False) -> RunDir:
    # Everything the config can get wrong fails here, before the run folder is touched.
    game_config = TracerConfig(**env_kwargs(config))
    template = TracerGame(game_config)
    assistant = make_policy("assistant", config.assistant, config.assistant_backend)
    run = RunDir.resume(config.resolved_run_dir()) if resume else RunDir.create(config.resolved_run_dir(), config.to_dict())
    with run:
        if config.policy == "lm":
            from trainers.common.threads import run_threads

            print(run_threads(run, config.threads)[1], file=sys.stderr)
        _train(config, run, template, assistant)
    return run


def _train(config: TracerTrainConfig, run: RunDir, template: TracerGame, assistant: Any) -> None:
    train_ids, eval_ids = split_sessions(template.references, config.heldout_per_group)
    before = None
    if config.eval_before:
        before = saved_evaluation(config, run, "eval_before", lambda: untuned_policy(config, run), eval_ids, "untuned evaluation")
    sft = run.load_state("sft", SFT_FIELDS)
    if sft is not None:
        run.checkpoint_path("sft", "checkpoint", sft["checkpoint"])
    if config.sft_epochs and sft is None:
        game = TracerGame(TracerConfig(sessions_file=config.sessions_file))
        sft = supervised_stage(config, run, game, spread([game.references[i] for i in train_ids], config.sft_sessions))
        run.save_state("sft", sft)
    tuned = None
    if before is not None and sft is not None and config.iterations:
        # Both stages' effects, paired: the SFT model plays the same sessions and seeds as the untuned one.
        tuned = saved_evaluation(config, run, "eval_sft", lambda: sft_policy(config, run, sft), eval_ids, "SFT evaluation")
    progress = run.load_state("progress", PROGRESS_FIELDS)
    start, checkpoint = 0, None
    if progress is not None:
        if progress["iteration"] < 0:
            raise RunFolderError(f"{run.state_path('progress')}: field 'iteration' must be >= 0, got {progress['iteration']}; {STATE_FIX}.")
        start, checkpoint = progress["iteration"] + 1, run.checkpoint_path("progress", "checkpoint", progress["checkpoint"])
        run.truncate_metrics_after(progress["iteration"])
    base_model = None
    if config.policy == "lm":  # the SFT model is the RL start and the KL reference
        base_model = str(run.path / sft["checkpoint"]) if sft else base_model_path(config, run)
    elif checkpoint is None and sft:
        checkpoint = run.path / sft["checkpoint"]
    policy = make_learner(config, checkpoint, base_model)
    driver = CounterpartDriver({"assistant": assistant, "user": policy}, learner=None)
    pool = [template.spawn() for _ in range(config.rollout_batch)]

    bar = tqdm(range(start, config.iterations), initial=start, total=config.iterations, desc="TRACER", file=sys.stderr)
    for iteration in bar:
        started = time.perf_counter()
        row: dict[str, Any] = {"iteration": iteration}
        if iteration % config.eval_every == 0:
            row.update({f"eval/{k}": v for k, v in evaluation(config, policy, eval_ids).items()})
        plan = episode_plan(config, iteration, train_ids)
        done = run.completed_episodes(iteration) if iteration == start else {}
        missing = [e for e in range(len(plan)) if e not in done]
        for chunk_start in range(0, len(missing), config.rollout_batch):
            chunk = missing[chunk_start : chunk_start + config.rollout_batch]
            played = play(pool, driver, policy, [plan[e] for e in chunk])
            run.append_trajectories(zip(chunk, played), iteration)
            done.update(zip(chunk, played))
        trajectories = [done[e] for e in range(len(plan))]
        advantages = advantages_of(trajectories, config)
        row.update(rollout_metrics(trajectories, advantages))
        row.update(update(policy, trajectories, advantages))
        name = f"checkpoints/iter_{iteration:04d}"
        policy.save(run.path / name)
        row["time/seconds"] = time.perf_counter() - started
        run.append_metrics(row)
        run.save_state("progress", {"iteration": iteration, "checkpoint": name})
        for old in sorted((run.path / "checkpoints").glob("iter_*"))[:-KEEP_CHECKPOINTS]:
            shutil.rmtree(old, ignore_errors=True)
        bar.set_postfix(reward=f"{row['episode/reward']:.3f}", dtw=f"{row['episode/dtw_cost']:.2f}")
    bar.close()

    after = saved_evaluation(config, run, "eval", lambda: policy, eval_ids, "final evaluation")
    if before is not None and run.load_state("eval_change", {}) is None:
        run.save_state("eval_change", tracer_metrics.paired_change(before, after, seed=config.seed))
    if tuned is not None and run.load_state("eval_change_rl", {}) is None:
        run.save_state("eval_change_sft", tracer_metrics.paired_change(before, tuned, seed=config.seed))
        run.save_state("eval_change_rl", tracer_metrics.paired_change(tuned, after, seed=config.seed))
    if run.load_state("eval_baselines", {}) is None:
        baselines = fair_baselines("TRACER-UserSim-v0")
        run.save_state("eval_baselines", {name: evaluation(config, name, eval_ids, label=f"baseline {name}") for name in baselines})
    if config.plots:
        plot_run(run)


def curves(run: RunDir) -> dict[str, list[tuple[int, float]]]:
    """(iteration, value) series of the evaluation metrics, the final evaluation appended last."""
    rows = run.read_metrics()
    final = run.load_state("eval", {}) or {}
    last = rows[-1]["iteration"] + 1 if rows else 0
    series: dict[str, list[tuple[int, float]]] = {}
    for name in EVAL_METRICS:
        points = [(r["iteration"], r[f"eval/{name}"]) for r in rows if f"eval/{name}" in r]
        if name in final:
            points.append((last, final[name]))
        series[name] = points
    return series


def plot_run(run: RunDir) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    series = curves(run)
    figure, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for axis, name, label in zip(axes, ("group_dpcr", "intent_dtw", "pcr"), ("Group-dPCR (lower is better)", "intent DTW cost vs reference", "PCR")):
        if series[name]:
            axis.plot(*zip(*series[name]), marker="o")
        if name == "pcr" and series["real_pcr"]:
            axis.axhline(series["real_pcr"][-1][1], color="grey", linestyle="--", label="reference")
            axis.legend()
        axis.set_title(label)
        axis.set_xlabel("iteration")
    figure.tight_layout()
    figure.savefig(run.path / "plots" / "eval_curves.png", dpi=100)
    plt.close(figure)
    rows = run.read_metrics()
    if rows:
        figure, axis = plt.subplots(figsize=(5, 3.6))
        axis.plot([r["iteration"] for r in rows], [r["episode/reward"] for r in rows])
        axis.set_title("mean TRACER reward of the rollouts")
        axis.set_xlabel("iteration")
        figure.tight_layout()
        figure.savefig(run.path / "plots" / "reward.png", dpi=100)
        plt.close(figure)
    plot_supervised(run, plt)


def plot_supervised(run: RunDir, plt: Any) -> None:
    """``plots/sft.png``: the SFT loss per step, and the untuned against the tuned policy on the evaluation
    sessions (with the paired change's interval) when both were evaluated."""
    curve = (run.load_state("sft", {}) or {}).get("sft/curve")
    change = run.load_state("eval_change", {})
    if not curve and not change:
        return
    figure, axes = plt.subplots(1, 1 + len(tracer_metrics.PAIRED_METRICS), figsize=(15, 3.6))
    if curve:
        axes[0].plot(*zip(*curve), marker=".")
    axes[0].set_title("SFT training loss")
    axes[0].set_xlabel("step")
    for axis, name in zip(axes[1:], tracer_metrics.PAIRED_METRICS):
        if change:
            values = change[name]
            axis.bar(["untuned", "tuned"], [values["before"], values["after"]], color=["grey", "tab:blue"])
            axis.set_title(f"{name} (lower is better)\nchange {values['change']:+.3f} [{values['change_low']:+.3f}, {values['change_high']:+.3f}]")
    figure.tight_layout()
    figure.savefig(run.path / "plots" / "sft.png", dpi=100)
    plt.close(figure)


def summary(run: RunDir) -> list[str]:
    """What a finished run prints: each evaluation metric from its first to its last evaluation beside the
    best scripted baseline, then the paired changes (:data:`PAIRED_CHANGES`). Read from the run folder's
    files only, so ``tools/docs_tables.py`` renders a saved run's files with it."""
    lines, series = [], curves(run)
    baselines = run.load_state("eval_baselines", {}) or {}
    real = (run.load_state("eval", {}) or {}).get("real_pcr")
    closeness = {"group_dpcr": lambda v: v, "intent_dtw": lambda v: v, "pcr": lambda v: abs(v - real) if real is not None else -v}
    for name, label in (("group_dpcr", "Group-dPCR"), ("intent_dtw", "intent DTW cost"), ("pcr", "PCR")):
        points = series[name]
        if points:
            beside = ""
            if baselines:
                best, value = best_baseline({agent: scores[name] for agent, scores in baselines.items()}, closeness[name])
                beside = f"; best scripted baseline {best} {value:.3f}" + (f" (real {real:.3f})" if name == "pcr" and real is not None else "")
            start = f"{points[0][1]:.3f} (iteration {points[0][0]}) -> " if len(points) > 1 else ""
            lines.append(f"{label}: {start}{points[-1][1]:.3f} (after training){beside}")
    for state, phase in PAIRED_CHANGES:
        for name, values in (run.load_state(state, {}) or {}).items():
            lines.append(
                f"{name} {phase}: {values['before']:.3f} -> {values['after']:.3f}, change {values['change']:+.3f} "
                f"[{values['change_low']:+.3f}, {values['change_high']:+.3f}] (paired over groups)"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    cli = parser()

    def run_from_cli() -> int:
        config, resume = config_from_cli(cli, build_config, argv)
        run = train(config, resume=resume)
        for line in summary(run):
            print(line)
        print(f"run folder: {run.path}")
        return 0

    return run_main(cli.prog, run_from_cli)
