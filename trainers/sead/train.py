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

import json
import math
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.backends.transformers_backend import SMOLLM2_ALIASES
from dialogue_gym.curriculum import ProfileController
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.metrics.core import invalid_action_rate
from dialogue_gym.results import compare, results_of
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory
from trainers.common import RunDir, RunFolderError
from trainers.common.baselines import best_baseline, fair_baselines
from trainers.common.atomic import folder_problem, saved_folder
from trainers.common.cli import config_from_cli, run_main
from trainers.common.rundir import STATE_FIX
from trainers.grpo.policy import advantages_for
from trainers.common.play import play_games
from trainers.grpo.decision_point import DecisionPointSeat, draw_points, group_samples, play_groups, rescore_greedy
from trainers.sead.config import SCRATCH_MODEL, SeadTrainConfig, build_config, parser

ENV_ID = "SEAD-Outbound-v0"
KEEP_CHECKPOINTS = 2
SFT_STREAM, POINT_STREAM, SAMPLE_STREAM, DAGGER_STREAM = 1, 2, 3, 4
"""Seed streams of their own: the expert's SFT dialogues (``mix_seed(seed, SFT_STREAM)``, so disjoint
from the eval_seed sequence), per decision-point iteration the turns drawn and the LM's samples, and
per DAgger round the starts the LM plays."""


def base_model(config: SeadTrainConfig, run: RunDir) -> str:
    """The lm policy's starting weights: the SFT checkpoint once phase ``sft`` has run, else the
    configured model ("tiny" and "scratch" are built in the run folder: scratch by phase sft; "smollm2"
    is converted from its GGUF file into the run folder once, :func:`save_plain_model`)."""
    sft = run.load_state("sft", SFT_FIELDS)
    if sft is not None:
        return str(run.checkpoint_path("sft", "checkpoint", sft["checkpoint"]))
    if config.model in ("tiny", "scratch", *SMOLLM2_ALIASES):
        model = run.path / f"{config.model}_model"
        if config.model == "tiny" and not (model / "config.json").exists():
            from dialogue_gym.backends.tiny import build_tiny_chat_model

            saved_folder(model, lambda folder: build_tiny_chat_model(folder, seed=config.seed))
        if config.model in SMOLLM2_ALIASES and not (model / "config.json").exists():
            saved_folder(model, lambda folder: save_plain_model(config.model, folder))
        problem = folder_problem(model)
        if problem is not None:
            raise RunFolderError(f"{problem}; delete {model} and resume: it is built again.")
        return str(model)
    return config.model


def save_plain_model(model: str, folder: Path) -> None:
    """Save ``model`` (e.g. "smollm2", a GGUF file) as a plain transformers folder: its GGUF tensors are
    dequantized and its tokenizer rebuilt from the GGUF vocabulary on every load, 70 s on the 2-core
    machine under load where the saved folder loads in 0.6 s, and a run loads its base model up to
    three times (the untrained evaluation, SFT, the RL phase without SFT). Same weights and token ids
    (tests/trainers/test_sead_smollm2.py)."""
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    loaded = TransformersBackend(model)
    loaded.model.save_pretrained(str(folder))
    loaded.tokenizer.save_pretrained(str(folder))


def make_policy_for(config: SeadTrainConfig, run: RunDir, checkpoint: Path | None, model: str | None = None):
    """The trainable agent policy, fresh or from a checkpoint (an lm policy starts from ``model``,
    default :func:`base_model`)."""
    if config.policy == "strategy":
        from trainers.grpo.strategy import StrategyPolicy

        return StrategyPolicy.load(checkpoint) if checkpoint else StrategyPolicy(config.learning_rate)
    if config.policy == "strategy-plus":
        from trainers.sead.strategy_plus import StrategyPlusPolicy

        return StrategyPlusPolicy.load(checkpoint) if checkpoint else StrategyPlusPolicy(config.learning_rate, entropy_coef=config.entropy_coef)
    from trainers.grpo.lm import CausalLMPolicy, GRPOConfig

    grpo = GRPOConfig(
        learning_rate=config.learning_rate, kl_coef=config.kl_coef, clip_eps=config.clip_eps,
        lora_rank=config.lora_rank, lora_layers=config.lora_layers, temperature=config.temperature, max_new_tokens=config.max_new_tokens,
    )
    model = model or base_model(config, run)
    return CausalLMPolicy(model, grpo, device=config.device, checkpoint=str(checkpoint) if checkpoint else None, seed=config.seed)


def play(games, driver, profiles, seeds, policy, on_done) -> None:
    """Phase 2: the dialogues of ``profiles`` in lockstep; ``on_done(index, trajectory)`` as each one ends.
    A trainable user (one that keeps a ``record``: joint training) also leaves its moves in ``meta["user_record"]``."""
    user_record = getattr(driver.policies["user"], "record", None)

    def finished(index: int, trajectory: Trajectory, memories: dict[str, Any]) -> None:
        trajectory.learner = "agent"
        trajectory.meta = {"learner_record": policy.record(memories["agent"])}
        if user_record is not None:
            trajectory.meta["user_record"] = user_record(memories["user"])
        on_done(index, trajectory)

    play_games(games, driver, [(seed, {"profile": profile}) for profile, seed in zip(profiles, seeds)], finished)


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
SFT_FIELDS = {"checkpoint": str, "sft/loss": (int, float), "sft/steps": (int, float)}
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


def eval_env_kwargs(config: SeadTrainConfig) -> dict[str, Any]:
    return {"max_agent_turns": config.max_agent_turns, "user": config.user, "user_backend": config.user_backend}


def sft_phase(config: SeadTrainConfig, run: RunDir) -> None:
    """Phase ``sft``: the expert's dialogues (exported as ``sft`` rows into ``sft/``), the scratch
    model built on their text, the untrained model's held-out result, then behaviour cloning into
    ``checkpoints/sft`` and ``dagger_rounds`` DAgger rounds (:func:`dagger_round`); committed by
    ``state/sft.json``. With held-out evaluation on, the expert's own held-out dialogues
    (``results/teacher.json``) give the teacher-forced agreement after each stage
    (``results/agreement.json``, :func:`~trainers.common.sft.teacher_forced_agreement`). Each step is
    kept, so a killed phase resumes."""
    from trainers.common.sft import conversation_rows, expert_dataset, sft_lm

    chats = expert_dataset(ENV_ID, config.sft_expert, config.sft_episodes, mix_seed(config.seed, SFT_STREAM), run.path / "sft", eval_env_kwargs(config))["messages"]
    model = base_model(config, run)
    if config.model == "scratch" and not Path(model).exists():
        from dialogue_gym.backends.tiny import build_tiny_chat_model

        partial = Path(f"{model}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        build_tiny_chat_model(partial, seed=config.seed, corpus=[message["content"] for chat in chats for message in chat], **scratch_shape(config))
        partial.rename(model)  # whole or absent: a kill while it is written leaves only the partial folder
    if config.eval_episodes and config.before_and_baselines and run.load_state("eval_untrained", EVAL_FIELDS) is None:
        untrained = make_policy_for(config, run, None, model)
        run.save_state("eval_untrained", held_out_evaluation(config, untrained, "held-out untrained", run, "untrained"))
    held_out = teacher_chats(config, run) if config.eval_episodes else None
    # As many of the expert's training dialogues as held-out ones: agreement on both tells a clone that
    # has not fit its data (both low: more steps or capacity) from one that does not generalise (only the
    # held-out one low: more or other data).
    fitted = chats[: len(held_out)] if held_out is not None else None
    sessions = [conversation_rows(chat) for chat in chats]
    checkpoint = run.path / "checkpoints" / "sft"
    metrics = sft_lm(
        model, sessions, checkpoint, epochs=1, learning_rate=config.sft_learning_rate,
        seed=config.seed, batch_size=config.sft_batch_size, accumulation=config.sft_accumulation, max_steps=config.sft_steps, lora_rank=config.lora_rank, lora_layers=config.lora_layers,
    )
    stages = [{"stage": "sft", "steps": metrics["sft/steps"], **agreement_of(config, run, checkpoint, held_out, fitted)}]
    for round_ in range(config.dagger_rounds):
        checkpoint, dagger = dagger_round(config, run, round_, checkpoint, sessions)
        stages.append({"stage": f"dagger_{round_}", **dagger, **agreement_of(config, run, checkpoint, held_out, fitted)})
    if held_out is not None:
        (run.path / "results" / "agreement.json").write_text(json.dumps({"expert": config.sft_expert, "stages": stages}, indent=1))
    last = stages[-1]
    run.save_state("sft", {
        "checkpoint": str(checkpoint.relative_to(run.path)), **metrics, "sft/stages": stages,
        **{f"sft/{key}": last[key] for key in ("agreement", "utterance_agreement", "agreement_per_turn") if key in last},
    })


def scratch_shape(config: SeadTrainConfig) -> dict[str, Any]:
    """The arguments of ``build_tiny_chat_model`` for ``model="scratch"``: SCRATCH_MODEL with the configured depth."""
    return {**SCRATCH_MODEL, "num_hidden_layers": config.scratch_layers}


def teacher_chats(config: SeadTrainConfig, run: RunDir) -> list[list[dict[str, str]]]:
    """The expert's held-out dialogues (the held-out starts, saved as ``results/teacher.json``) as the
    chats it saw: the states the teacher-forced agreement is measured on, and the teacher's CR beside
    the clone's on the same starts."""
    from dialogue_gym.integrations.datasets import build_rows

    expert = make_policy("agent", config.sft_expert, SeadGame(SeadConfig(max_agent_turns=config.max_agent_turns)).library)
    trajectories = held_out_trajectories(config, expert, f"held-out {config.sft_expert}")  # scripted: replayed in seconds
    if not (run.path / "results" / "teacher.json").exists():
        save_results(config, run, "teacher", {config.sft_expert: trajectories})
    return [row["messages"] for row in build_rows(trajectories, "sft", eval_env_kwargs(config))]


def agreement_of(config: SeadTrainConfig, run: RunDir, checkpoint: Path, held_out: list | None, fitted: list | None = None) -> dict[str, Any]:
    """Teacher-forced agreement of the model in ``checkpoint`` on the expert's held-out states (empty
    without them); with ``fitted`` (chats it was trained on) also ``train_agreement``,
    ``train_utterance_agreement``, ``train_agreement_per_turn``, ``train_turns_per_turn`` and
    ``train_turns`` on those."""
    if held_out is None:
        return {}
    from trainers.common.sft import teacher_forced_agreement

    policy = make_policy_for(config, run, None, str(checkpoint))
    result = teacher_forced_agreement(policy.model, policy.tokenizer, held_out, config.max_new_tokens, utterance_end=UTTERANCE_END)
    if fitted:
        train = teacher_forced_agreement(policy.model, policy.tokenizer, fitted, config.max_new_tokens, utterance_end=UTTERANCE_END)
        result.update({f"train_{key}": train[key] for key in ("agreement", "utterance_agreement", "agreement_per_turn", "turns_per_turn", "turns")})
    return result


UTTERANCE_END = "</response>"
"""The tag that closes what the agent says in SEAD's turn format (the scores follow it)."""


def dagger_round(config: SeadTrainConfig, run: RunDir, round_: int, checkpoint: Path, sessions: list[list[dict[str, Any]]]) -> tuple[Path, dict[str, Any]]:
    """One DAgger round: the model in ``checkpoint`` plays ``dagger_episodes`` training starts greedily
    (as it is evaluated) while the expert labels every state it reaches (:class:`ExpertLabels`); the
    labelled states of this and every earlier round (``sft/dagger_<r>.jsonl``) join the expert's
    ``sessions`` (repeated to ``dagger_share`` of the rows, :func:`~trainers.common.dagger.weighted_mix`) and
    the model trains ``dagger_steps`` more steps on them (at ``dagger_learning_rate``) into
    ``checkpoints/sft_dagger_<r>``. A finished round (its checkpoint saved) is not played again."""
    from trainers.common.dagger import ExpertLabels, label_agreement, weighted_mix
    from trainers.common.sft import sft_lm

    rows_path, out = run.path / "sft" / f"dagger_{round_}.jsonl", run.path / "checkpoints" / f"sft_dagger_{round_}"
    if not rows_path.exists():
        policy = make_policy_for(config, run, None, str(checkpoint))
        expert = make_policy("agent", config.sft_expert, SeadGame(SeadConfig(max_agent_turns=config.max_agent_turns)).library)
        seat = ExpertLabels(policy, expert)
        policy.greedy = True
        evaluate(ENV_ID, seat, config.dagger_episodes, seed=mix_seed(config.seed, DAGGER_STREAM, round_), env_kwargs=eval_env_kwargs(config))
        partial = rows_path.with_suffix(".partial")
        partial.write_text("".join(json.dumps(session) + "\n" for session in seat.sessions))
        partial.rename(rows_path)  # whole or absent
    labelled = [[json.loads(line) for line in (run.path / "sft" / f"dagger_{r}.jsonl").read_text().splitlines()] for r in range(round_ + 1)]
    played = labelled[-1]
    learning_rate = config.dagger_learning_rate or config.sft_learning_rate
    rows = [[{"prompt": row["prompt"], "completion": row["completion"]} for row in session] for round_rows in labelled for session in round_rows]
    mix, repeats = weighted_mix(sessions, rows, config.dagger_share)
    if not (out / "config.json").exists():
        sft_lm(
            str(checkpoint), mix, out, epochs=1, learning_rate=learning_rate, seed=config.seed + 1 + round_,
            batch_size=config.sft_batch_size, accumulation=config.sft_accumulation, max_steps=config.dagger_steps, lora_rank=config.lora_rank, lora_layers=config.lora_layers,
        )
    labelled_states = sum(map(len, rows))
    return out, {
        "steps": config.dagger_steps, "learning_rate": learning_rate, "on_policy_agreement": label_agreement(played), "on_policy_turns": sum(map(len, played)),
        "labelled_states": labelled_states, "labelled_repeats": repeats, "labelled_share": labelled_states * repeats / max(1, sum(map(len, mix))),
    }


def decision_point_step(
    config: SeadTrainConfig, run: RunDir, iteration: int, profiles: list[dict[str, Any]], policy: Any, prefix: Any,
    seat: DecisionPointSeat, user: Any, games: list[SeadGame],
) -> tuple[list[Trajectory], dict[str, Any]]:
    """Phases 2 and 3 with ``rl_mode="decision_point"``: a decision point per profile (SPEC) cut from a
    dialogue of ``prefix`` (the expert, or the LM playing greedily as it is evaluated), G sampled turns
    each, one GRPO step on the sampled turns. The iteration's games are appended as one record set; a
    resumed iteration reuses them when complete and otherwise replays them identically."""
    total = len(profiles) * config.group_size
    done = run.completed_episodes(iteration)
    if len(done) == total:
        trajectories = [done[e] for e in range(total)]
    else:
        starts = [(mix_seed(config.seed, iteration, e), {"profile": profile}) for e, profile in enumerate(profiles)]
        rng = random.Random(mix_seed(config.seed, iteration, POINT_STREAM))
        policy.greedy = prefix is policy
        try:
            points = draw_points(games, {"agent": prefix, "user": user}, "agent", starts, rng)
        finally:
            policy.greedy = False
        trajectories = play_groups(
            games, seat, {"user": user}, "agent", points, config.group_size, mix_seed(config.seed, iteration, SAMPLE_STREAM), config.greedy_copy,
        )
        run.append_trajectories(enumerate(trajectories), iteration)
    if config.greedy_copy:
        rescore_greedy(trajectories, policy.score)
    samples, rollout = group_samples(trajectories, config.group_size, "agent", config.pool_same_turn, config.over_greedy)
    return trajectories, {**rollout, **policy.step(samples)}


def train(config: SeadTrainConfig, resume: bool = False) -> RunDir:
    # Everything the config can get wrong fails here, before the run folder is touched.
    controller = ProfileController(
        mode=config.curriculum, batch_size=config.batch_size, n_max=config.n_max, smoothing=config.smoothing, seed=config.seed
    )
    sead_config = SeadConfig(max_agent_turns=config.max_agent_turns)
    games = [SeadGame(sead_config) for _ in range(config.batch_size * (config.group_size if config.rl_mode == "decision_point" else 1))]
    user = make_policy("user", config.user, games[0].library, config.user_backend, config.user_sampling)
    run = RunDir.resume(config.resolved_run_dir()) if resume else RunDir.create(config.resolved_run_dir(), config.to_dict())
    with run:
        if config.policy == "lm":
            from trainers.common.threads import run_threads

            print(run_threads(run, config.threads)[1], file=sys.stderr)
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
    elif config.policy == "lm" and config.sft_steps and run.load_state("sft", SFT_FIELDS) is None:
        sft_phase(config, run)
    policy = make_policy_for(config, run, checkpoint)
    seat = prefix = None
    if config.rl_mode == "decision_point":
        prefix = policy if config.prefix == "lm" else make_policy("agent", config.sft_expert, games[0].library)
        continuation = policy if config.continuation == "lm" else make_policy("agent", config.continuation, games[0].library)
        seat = DecisionPointSeat(policy, continuation)
    trained_user = None
    if joint:
        from trainers.sead.joint_user import JointUser

        trained_user = JointUser.load(user_checkpoint, user) if user_checkpoint else JointUser(user, config.learning_rate)
    driver = CounterpartDriver({"agent": policy, "user": trained_user or user}, learner=None)
    if config.eval_episodes and config.before_and_baselines and start == 0 and run.load_state("eval_before", EVAL_FIELDS) is None:
        run.save_state("eval_before", held_out_evaluation(config, policy, "held-out before", run, "before"))
    # A language model is also evaluated sampling as in its rollouts: RL moves the tail of the distribution
    # before it moves the argmax (issue 41), which greedy decoding alone does not see.
    sampled = config.policy == "lm" and config.eval_episodes and config.before_and_baselines
    if sampled and start == 0 and run.load_state("eval_before_sampled", EVAL_FIELDS) is None:
        run.save_state("eval_before_sampled", held_out_evaluation(config, policy, "held-out before, sampled", run, "before_sampled", greedy=False))

    bar = tqdm(range(start, config.iterations), initial=start, total=config.iterations, desc="SEAD", file=sys.stderr)
    for iteration in bar:
        started = time.perf_counter()
        # Phase 1: the batch's profiles, fixed once drawn so an interrupted iteration replays the same plan.
        profiles = load_plan(run, controller, iteration)
        if profiles is None:
            profiles = controller.sample()
            run.save_state("plan", {"iteration": iteration, "profiles": profiles, "controller": controller.state_dict()})
        if seat is not None:
            trajectories, update = decision_point_step(config, run, iteration, profiles, policy, prefix, seat, user, games)
        else:
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
        run.save_state("eval", held_out_evaluation(config, policy, "held-out after", run, "after"))
    if sampled and run.load_state("eval_sampled", EVAL_FIELDS) is None:
        run.save_state("eval_sampled", held_out_evaluation(config, policy, "held-out after, sampled", run, "after_sampled", greedy=False))
    if config.eval_episodes and config.before_and_baselines and run.load_state("eval_baseline", BASELINE_FIELDS) is None:
        run.save_state("eval_baseline", baseline_evaluation(config, run))
    if config.plots:
        from trainers.sead.plots import plot_run

        plot_run(run)


def held_out_evaluation(
    config: SeadTrainConfig, policy: Any, label: str, run: RunDir | None = None, name: str | None = None, greedy: bool = True,
) -> dict[str, Any]:
    """CR on the fixed held-out profile set (stratified over the 120 states, eval_seed), a trainable
    policy played greedily (``greedy=False``: sampling as in its rollouts): before training, after it,
    and for the scripted baselines alike. With ``run`` and ``name`` the episodes are also saved as
    ``results/<name>.json`` in the ``eval --save`` format, so any two of a run's evaluations compare
    with ``dialogue-gym compare``."""
    trajectories = held_out_trajectories(config, policy, label, greedy)
    if run is not None and name is not None:
        save_results(config, run, name, {name: trajectories})
    return held_out_summary(trajectories)


def held_out_trajectories(config: SeadTrainConfig, policy: Any, label: str, greedy: bool = True) -> list[Trajectory]:
    """The held-out episodes of ``policy``, greedy or sampled; an lm policy is told it is evaluated
    (``evaluating``: nothing trains on these turns, so sampled ones may use its prefix cache too)."""
    was = getattr(policy, "greedy", None)
    was_evaluating = getattr(policy, "evaluating", None)
    if was is not None:
        policy.greedy = greedy
    if was_evaluating is not None:
        policy.evaluating = True
    try:
        with tqdm(total=config.eval_episodes, desc=label, file=sys.stderr) as bar:
            trajectories = evaluate(
                ENV_ID, policy, config.eval_episodes, seed=config.eval_seed, on_episode=lambda _: bar.update(1),
                env_kwargs=eval_env_kwargs(config),
            )
    finally:
        if was is not None:
            policy.greedy = was
        if was_evaluating is not None:
            policy.evaluating = was_evaluating
    return trajectories


def held_out_summary(trajectories: list[Trajectory]) -> dict[str, Any]:
    """CR with its Wilson interval, the scenario summary and the conversation audit (collapse onto one
    line, near-repeats, invalid turns) of held-out ``trajectories``."""
    from trainers.sead.seeds import conversation_audit  # seeds imports this module

    low, high = sead_metrics.cr_interval(trajectories)
    summary = sead_metrics.summary(trajectories)
    return {"cr": summary["cr"], "cr_low": low, "cr_high": high, "episodes": len(trajectories),
            **{k: v for k, v in summary.items() if isinstance(v, float) and not math.isnan(v)}, "audit": conversation_audit(trajectories)}


def save_results(config: SeadTrainConfig, run: RunDir, name: str, runs: dict[str, list[Trajectory]]) -> Path:
    path = run.path / "results" / f"{name}.json"
    path.parent.mkdir(exist_ok=True)
    provenance = {
        "env_kwargs": eval_env_kwargs(config), "learner": "agent", "episodes": config.eval_episodes, "repeats": 1, "seed": config.eval_seed,
        "trainer": "trainers.sead", "run_dir": str(run.path), "config": config.to_dict(),
    }
    return results_of(ENV_ID, runs, provenance).save(path)


def baseline_evaluation(config: SeadTrainConfig, run: RunDir | None = None) -> dict[str, Any]:
    """The best fair scripted agent's held-out result (the bar a trained policy should clear), and every
    one's CR; with ``run``, all of them saved as ``results/baselines.json``."""
    runs = {name: held_out_trajectories(config, agent, f"baseline {name}") for name, agent in fair_baselines(ENV_ID).items()}
    if run is not None:
        save_results(config, run, "baselines", runs)
    results = {name: held_out_summary(trajectories) for name, trajectories in runs.items()}
    best, _ = best_baseline({name: result["cr"] for name, result in results.items()}, lambda cr: -cr)
    return {"agent": best, **results[best], "cr_per_agent": {name: result["cr"] for name, result in results.items()}}


PAIRED = (("untrained", "before", "SFT"), ("teacher", "before", "SFT model vs its teacher"), ("before", "after", "RL"), ("teacher", "after", "RL model vs the teacher"),
          ("before_sampled", "after_sampled", "RL, sampled at the rollout temperature"))
"""The paired changes a run reports: (A, B, what lies between them), each a results/<name>.json."""


def paired_changes(run: RunDir) -> list[str]:
    """One line per phase whose both ends were evaluated: the CR change on the same held-out starts, with
    its 95% paired bootstrap interval (what ``dialogue-gym compare A B`` prints)."""
    from dialogue_gym.results import Results

    lines = []
    for a, b, phase in PAIRED:
        paths = [run.path / "results" / f"{name}.json" for name in (a, b)]
        if all(path.exists() for path in paths):
            row = next(row for row in compare(*map(Results.load, paths)) if row["key"] == "cr")
            lines.append(
                f"{phase}: CR {row['a']:.3f} -> {row['b']:.3f}, change {row['difference']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}] "
                f"(paired over the same starts; dialogue-gym compare {paths[0]} {paths[1]})"
            )
    return lines


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
        for line in paired_changes(run):
            print(line)
        print(f"run folder: {run.path}")
        return 0

    return run_main(cli.prog, run_from_cli)
