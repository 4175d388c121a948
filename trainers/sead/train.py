"""SEAD's four-phase self-evolving loop (paper 000; SPEC section 1), CleanRL style: one file, top to bottom.

Each iteration:
  1. Profile Controller samples a batch of initial user profiles (curriculum);
  2. the agent policy talks to the fixed user (scripted or LLM) -> trajectories, appended as they finish;
  3. GRPO: A_i = R_i - mean(R) (or group standardisation), one policy update;
  4. Mistake Analysis: per-state completion rates update the controller.
With ``user_training="joint"`` (paper Table 3, "Train URM") the owner is a trainable policy too
(trainers/sead/joint_user.py): step 3 also updates it on the same dialogues with its adversarial
reward, and its checkpoint is committed beside the agent's.
Then the iteration is committed: policy checkpoint, then ``state/progress.json`` (controller state
+ iteration) in one atomic write. ``--resume RUN_DIR`` after a crash or ``kill -9`` continues from the
last commit: completed trajectories of the interrupted iteration are kept (not replayed) and the
controller continues exactly.
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.curriculum import ProfileController
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.metrics.core import invalid_action_rate
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory
from trainers.common import RunDir, RunFolderError
from trainers.common.baselines import best_baseline, fair_baselines
from trainers.common.cli import config_from_cli, run_main
from trainers.common.rundir import STATE_FIX
from trainers.grpo.policy import advantages_for
from trainers.sead.config import SeadTrainConfig, build_config, parser

KEEP_CHECKPOINTS = 2


def make_policy_for(config: SeadTrainConfig, run: RunDir, checkpoint: Path | None):
    """The trainable agent policy, fresh or from a checkpoint."""
    if config.policy == "strategy":
        from trainers.grpo.strategy import StrategyPolicy

        return StrategyPolicy.load(checkpoint) if checkpoint else StrategyPolicy(config.learning_rate)
    if config.policy == "strategy-plus":
        from trainers.sead.strategy_plus import StrategyPlusPolicy

        return StrategyPlusPolicy.load(checkpoint) if checkpoint else StrategyPlusPolicy(config.learning_rate, entropy_coef=config.entropy_coef)
    from trainers.grpo.lm import CausalLMPolicy, GRPOConfig

    model = config.model
    if model == "tiny":
        from dialogue_gym.backends.tiny import build_tiny_chat_model

        model = str(run.path / "tiny_model")
        if not Path(model, "config.json").exists():
            build_tiny_chat_model(model, seed=config.seed)
    grpo = GRPOConfig(
        learning_rate=config.learning_rate, kl_coef=config.kl_coef, clip_eps=config.clip_eps,
        lora_rank=config.lora_rank, temperature=config.temperature, max_new_tokens=config.max_new_tokens,
    )
    return CausalLMPolicy(model, grpo, device=config.device, checkpoint=str(checkpoint) if checkpoint else None, seed=config.seed)


class _Finished:
    """Start source of one game during a batch: hands the game's trajectory over the moment it ends."""

    def __init__(self, index: int, on_done):
        self.index, self.on_done = index, on_done

    def next_options(self) -> dict[str, Any]:
        return {}

    def episode_finished(self, trajectory: Trajectory) -> None:
        self.on_done(self.index, trajectory)


def play(games, driver, profiles, seeds, policy, on_done) -> None:
    """Phase 2: the dialogues of ``profiles`` in lockstep; ``on_done(index, trajectory)`` as each one ends.
    A trainable user (one that keeps a ``record``: joint training) also leaves its moves in ``meta["user_record"]``."""
    memories: list[dict[str, Any]] = []
    user_record = getattr(driver.policies["user"], "record", None)

    def finished(index: int, trajectory: Trajectory) -> None:
        trajectory.learner = "agent"
        trajectory.meta = {"learner_record": policy.record(memories[index]["agent"])}
        if user_record is not None:
            trajectory.meta["user_record"] = user_record(memories[index]["user"])
        on_done(index, trajectory)

    for index, (game, profile, seed) in enumerate(zip(games, profiles, seeds)):
        game.start_source = _Finished(index, finished)
        game.reset(seed=seed, options={"profile": profile})
    memories.extend(driver.start(game) for game in games)
    driver.advance(games, memories)


def iteration_metrics(iteration: int, trajectories: list[Trajectory], controller: ProfileController, update: dict) -> dict[str, Any]:
    rewards = [t.rewards.get("agent", 0.0) for t in trajectories]
    return {
        "iteration": iteration,
        "episode/cr": sead_metrics.cr(trajectories),
        "episode/mean_reward": float(np.mean(rewards)),
        "episode/turns": sead_metrics.att_all(trajectories).mean,
        "episode/upa": sead_metrics.upa(trajectories),
        "episode/invalid_action_rate": invalid_action_rate(trajectories),
        "curriculum/ideal_fraction": controller.ideal_fraction(),
        "curriculum/weight_entropy": controller.weight_entropy(),
        "curriculum/seen_states": int((controller.counts > 0).sum()),
        **update,
    }


PROGRESS_FIELDS = {"iteration": int, "checkpoint": str, "controller": dict}
JOINT_PROGRESS_FIELDS = {**PROGRESS_FIELDS, "user_checkpoint": str}
"""A joint run's progress record also points at the trained user's checkpoint."""
USER_CHECKPOINT = "user"
"""The trained user's checkpoint: this subfolder of the agent's checkpoint of the same iteration."""
PLAN_FIELDS = {"iteration": int, "profiles": list, "controller": dict}
PLAN_FIX = "delete it and resume: the plan is drawn again, identically, from state/progress.json"
EVAL_FIELDS = {"cr": (int, float), "cr_low": (int, float), "cr_high": (int, float), "episodes": int}
BASELINE_FIELDS = {**EVAL_FIELDS, "agent": str, "cr_per_agent": dict}


def restore_controller(run: RunDir, name: str, controller: ProfileController, state: dict[str, Any], fix: str = STATE_FIX) -> None:
    """Load the controller state saved in ``state/<name>.json``; a wrong one names the file and field."""
    try:
        controller.load_state_dict(state)
    except ConfigError as exc:
        raise RunFolderError(f"{run.state_path(name)}: field 'controller': {exc} {fix[0].upper()}{fix[1:]}.") from exc


def load_plan(run: RunDir, controller: ProfileController, iteration: int) -> list[dict[str, Any]] | None:
    """The profiles of ``iteration`` drawn before a crash (the controller put back to just after the
    draw), or None when the saved plan belongs to another iteration."""
    plan = run.load_state("plan", PLAN_FIELDS, PLAN_FIX)
    if plan is None or plan["iteration"] != iteration:
        return None
    profiles = plan["profiles"]
    if len(profiles) != controller.batch_size or not all(isinstance(p, dict) for p in profiles):
        raise RunFolderError(
            f"{run.state_path('plan')}: field 'profiles' must hold {controller.batch_size} profile objects (batch_size), "
            f"got {len(profiles)} entries; {PLAN_FIX}."
        )
    restore_controller(run, "plan", controller, plan["controller"], PLAN_FIX)
    return profiles


def train(config: SeadTrainConfig, resume: bool = False) -> RunDir:
    # Everything the config can get wrong fails here, before the run folder is touched.
    controller = ProfileController(
        mode=config.curriculum, batch_size=config.batch_size, n_max=config.n_max, smoothing=config.smoothing, seed=config.seed
    )
    sead_config = SeadConfig(max_agent_turns=config.max_agent_turns)
    games = [SeadGame(sead_config) for _ in range(config.batch_size)]
    user = make_policy("user", config.user, games[0].library, config.user_backend, config.user_sampling)
    run = RunDir.resume(config.resolved_run_dir()) if resume else RunDir.create(config.resolved_run_dir(), config.to_dict())
    with run:
        _train(config, run, controller, games, user)
    return run


def _train(config: SeadTrainConfig, run: RunDir, controller: ProfileController, games: list[SeadGame], user: Any) -> None:
    joint = config.user_training == "joint"
    progress = run.load_state("progress", JOINT_PROGRESS_FIELDS if joint else PROGRESS_FIELDS)
    start, checkpoint, user_checkpoint = 0, None, None
    if progress is not None:
        if progress["iteration"] < 0:
            raise RunFolderError(f"{run.state_path('progress')}: field 'iteration' must be >= 0, got {progress['iteration']}; {STATE_FIX}.")
        restore_controller(run, "progress", controller, progress["controller"])
        start, checkpoint = progress["iteration"] + 1, run.checkpoint_path("progress", "checkpoint", progress["checkpoint"])
        if joint:
            user_checkpoint = run.checkpoint_path("progress", "user_checkpoint", progress["user_checkpoint"])
        run.truncate_metrics_after(progress["iteration"])
    policy = make_policy_for(config, run, checkpoint)
    trained_user = None
    if joint:
        from trainers.sead.joint_user import JointUser

        trained_user = JointUser.load(user_checkpoint, user) if user_checkpoint else JointUser(user, config.learning_rate)
    driver = CounterpartDriver({"agent": policy, "user": trained_user or user}, learner=None)
    if config.eval_episodes and config.before_and_baselines and start == 0 and run.load_state("eval_before", EVAL_FIELDS) is None:
        run.save_state("eval_before", held_out_evaluation(config, policy, "held-out before"))

    bar = tqdm(range(start, config.iterations), initial=start, total=config.iterations, desc="SEAD", file=sys.stderr)
    for iteration in bar:
        started = time.perf_counter()
        # Phase 1: the batch's profiles, fixed once drawn so an interrupted iteration replays the same plan.
        profiles = load_plan(run, controller, iteration)
        if profiles is None:
            profiles = controller.sample()
            run.save_state("plan", {"iteration": iteration, "profiles": profiles, "controller": controller.state_dict()})
        # Phase 2: dialogues; keep those finished before a crash, play the rest.
        done = run.completed_episodes(iteration) if iteration == start else {}
        missing = [e for e in range(len(profiles)) if e not in done]
        if missing:

            def keep(index: int, trajectory: Trajectory) -> None:
                run.append_trajectories([(missing[index], trajectory)], iteration)
                done[missing[index]] = trajectory

            seeds = [mix_seed(config.seed, iteration, e) for e in missing]
            play(games[: len(missing)], driver, [profiles[e] for e in missing], seeds, policy, keep)
        trajectories = [done[e] for e in range(len(profiles))]
        # Phase 3: GRPO on the agent.
        rewards = [t.rewards.get("agent", 0.0) for t in trajectories]
        update = policy.update([t.meta["learner_record"] for t in trajectories], advantages_for(rewards, config.advantage))
        if trained_user is not None:
            # The same dialogues train the owner, on the game's adversarial user reward.
            from trainers.sead.joint_user import collapse_shares

            user_records = [t.meta["user_record"] for t in trajectories]
            user_rewards = [t.rewards.get("user", 0.0) for t in trajectories]
            update = {**update, **collapse_shares(user_records), "user/mean_reward": float(np.mean(user_rewards)),
                      **trained_user.update(user_records, advantages_for(user_rewards, config.advantage))}
        # Phase 4: Mistake Analysis.
        controller.update(trajectories)
        # Commit: checkpoint first, then the progress record that points at it.
        name = f"checkpoints/iter_{iteration:04d}"
        policy.save(run.path / name)
        committed = {"iteration": iteration, "checkpoint": name, "controller": controller.state_dict()}
        if trained_user is not None:
            trained_user.save(run.path / name / USER_CHECKPOINT)
            committed["user_checkpoint"] = f"{name}/{USER_CHECKPOINT}"
        row = iteration_metrics(iteration, trajectories, controller, update)
        row["time/seconds"] = time.perf_counter() - started
        run.append_metrics(row)
        run.save_state("progress", committed)
        for old in sorted((run.path / "checkpoints").glob("iter_*"))[:-KEEP_CHECKPOINTS]:
            shutil.rmtree(old, ignore_errors=True)
        bar.set_postfix(cr=f"{row['episode/cr']:.2f}", ideal=f"{row['curriculum/ideal_fraction']:.2f}")
    bar.close()

    if config.eval_episodes and run.load_state("eval", EVAL_FIELDS) is None:
        run.save_state("eval", held_out_evaluation(config, policy, "held-out after"))
    if config.eval_episodes and config.before_and_baselines and run.load_state("eval_baseline", BASELINE_FIELDS) is None:
        run.save_state("eval_baseline", baseline_evaluation(config))
    if config.plots:
        from trainers.sead.plots import plot_run

        plot_run(run)


def held_out_evaluation(config: SeadTrainConfig, policy: Any, label: str) -> dict[str, Any]:
    """CR on the fixed held-out profile set (stratified over the 120 states, eval_seed), a trainable
    policy played greedily: before training, after it, and for the scripted baselines alike."""
    greedy = getattr(policy, "greedy", None)
    if greedy is not None:
        policy.greedy = True
    try:
        with tqdm(total=config.eval_episodes, desc=label, file=sys.stderr) as bar:
            trajectories = evaluate(
                "SEAD-Outbound-v0", policy, config.eval_episodes, seed=config.eval_seed, on_episode=lambda _: bar.update(1),
                env_kwargs={"max_agent_turns": config.max_agent_turns, "user": config.user, "user_backend": config.user_backend},
            )
    finally:
        if greedy is not None:
            policy.greedy = greedy
    low, high = sead_metrics.cr_interval(trajectories)
    summary = sead_metrics.summary(trajectories)
    return {"cr": summary["cr"], "cr_low": low, "cr_high": high, "episodes": len(trajectories),
            **{k: v for k, v in summary.items() if isinstance(v, float) and not math.isnan(v)}}


def baseline_evaluation(config: SeadTrainConfig) -> dict[str, Any]:
    """The best fair scripted agent's held-out result (the bar a trained policy should clear), and every one's CR."""
    results = {name: held_out_evaluation(config, agent, f"baseline {name}") for name, agent in fair_baselines("SEAD-Outbound-v0").items()}
    best, _ = best_baseline({name: result["cr"] for name, result in results.items()}, lambda cr: -cr)
    return {"agent": best, **results[best], "cr_per_agent": {name: result["cr"] for name, result in results.items()}}


def _with_interval(evaluation: dict[str, Any]) -> str:
    return f"{evaluation['cr']:.3f} [{evaluation['cr_low']:.3f}, {evaluation['cr_high']:.3f}]"


def main(argv: list[str] | None = None) -> int:
    cli = parser()

    def run_from_cli() -> int:
        config, resume = config_from_cli(cli, build_config, argv)
        run = train(config, resume=resume)
        evaluation = run.load_state("eval", EVAL_FIELDS)
        if evaluation:
            before, baseline = run.load_state("eval_before", EVAL_FIELDS), run.load_state("eval_baseline", BASELINE_FIELDS)
            print(
                f"held-out CR {_with_interval(before) + ' -> ' if before else ''}{_with_interval(evaluation)} over {evaluation['episodes']} episodes"
                + (f"; best scripted baseline {baseline['agent']} {_with_interval(baseline)}" if baseline else "")
            )
        print(f"run folder: {run.path}")
        return 0

    return run_main(cli.prog, run_from_cli)
