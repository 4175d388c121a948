"""Configuration of the TRACER trainer: one frozen dataclass, one docstring per field, named presets.
The dataclass doubles as the CLI (``python -m trainers.tracer --field value``)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

from dialogue_gym.errors import ConfigError
from trainers.common.cli import config_parser, preset_values, require_range

CHOICES: dict[str, tuple[Any, ...]] = {"policy": ("strategy", "lm"), "assistant": ("sop", "llm")}
"""The accepted values of the fields that take one of a few (listed by --help)."""


@dataclass(frozen=True)
class TracerTrainConfig:
    preset: str = "cpu-strategy"
    """Named starting point (see PRESETS); explicit fields override it."""
    run_dir: str = ""
    """Output folder (default: runs/tracer-<preset>-seed<seed>)."""
    seed: int = 0
    """Seeds the session plan, every rollout and the policy's initialisation."""
    policy: str = "strategy"
    """strategy (a softmax intent-dynamics user policy in NumPy) or lm (a causal LM in TRACER's format)."""
    sessions_file: str | None = None
    """Reference sessions (JSONL); default: the packaged SYNTHETIC sample."""
    sft_epochs: int = 0
    """Stage 1: supervised epochs on the reference sessions in the output format (0 skips it)."""
    sft_learning_rate: float = 0.05
    """Stage 1 step size (strategy: Adam on the log-likelihood; lm: TRL SFTTrainer's learning rate)."""
    sft_sessions: int = 0
    """Reference sessions used by stage 1 (0: all)."""
    sft_steps: int = 0
    """lm policy: stage 1 stops after this many optimizer steps (0: after sft_epochs epochs)."""
    sft_batch_size: int = 0
    """lm policy: sessions per stage-1 step, padded together (0: one at a time, accumulated over SFT_BATCH of trainers/common/sft.py)."""
    heldout_per_group: int = 0
    """Sessions of every reference group (its last ones) kept out of SFT and RL and used only to evaluate
    (0: every session trains and evaluates, as the strategy presets' in-distribution numbers)."""
    eval_before: bool = False
    """Also evaluate the untuned policy (before SFT and RL) on the evaluation sessions and seeds, and report
    the paired change of Group-dPCR, intent DTW and W1-Turns with bootstrap intervals over groups."""
    iterations: int = 60
    """Stage 2: RL iterations (0: stop after SFT)."""
    sessions_per_iteration: int = 16
    """Reference sessions (prompts) per RL iteration."""
    group_size: int = 8
    """G: rollouts per reference session; advantages are standardised within each group (paper: 8)."""
    learning_rate: float = 0.05
    """Stage 2 step size (strategy: Adam; lm: AdamW, paper scale ~1e-6)."""
    l_adv: float = 0.2
    """Strength of the deviation-aware advantage modulation (0 turns it off; paper: 0.2)."""
    gamma: float = 0.5
    """Sensitivity of the modulation to the deviation suffix c_t (paper: 0.5)."""
    rho: float = 0.4
    """Discount of the deviation suffix c_t = sum_k rho^k d_{t+k} (paper: 0.4)."""
    reward_weights: tuple[float, float, float] = (0.2, 0.5, 0.3)
    """(l1, l2, l3) of R_fmt, R_final, R_traj."""
    alpha: float = 1.0
    """R_traj sensitivity."""
    beta: float = 1.0
    """R_traj length-mismatch weight."""
    eta_flat: float = 0.2
    """R_traj factor for a flat simulation of a varying reference."""
    max_user_turns: int = 15
    """Turn limit of a simulated session."""
    rollout_batch: int = 64
    """Episodes played in lockstep (and appended to trajectories.jsonl) at a time."""
    assistant: str = "sop"
    """The fixed assistant: sop (scripted) or llm."""
    assistant_backend: dict | None = None
    """Backend spec when assistant is llm."""
    model: str = ""
    """lm policy: local model folder, "smollm2", "tiny" (a random tiny model built in the run folder) or
    "scratch" (a random model of SEAD's SCRATCH_MODEL shape whose tokenizer is trained on the training
    sessions' text, so every recurring sentence is one token)."""
    device: str = "cpu"
    """lm policy: torch device."""
    threads: int = 0
    """lm policy: torch's intra-op threads; 0 picks the faster of 1 and all cores on a quick probe (logged,
    saved in state/threads.json and kept on resume)."""
    lora_rank: int = 0
    """lm policy: LoRA rank via peft (0 = full fine-tuning)."""
    kl_coef: float = 0.001
    """lm policy: weight of the KL to the frozen reference (the SFT model)."""
    clip_eps: float = 0.2
    """lm policy: PPO-style ratio clipping."""
    temperature: float = 1.0
    """lm policy: rollout temperature (paper: 1.0 for RL)."""
    max_new_tokens: int = 128
    """lm policy: tokens per user turn."""
    eval_every: int = 5
    """Evaluate on the reference sessions every this many iterations (before the update), and after the last."""
    eval_sessions: int = 0
    """Reference sessions in each evaluation (0: all)."""
    eval_rollouts: int = 2
    """Rollouts per reference session in each evaluation."""
    eval_batch: int = 32
    """Evaluation episodes played in lockstep (one batched generation per turn for an lm policy)."""
    eval_seed: int = 10_000
    """Seed of the evaluation rollouts (the same every time, so curves compare like with like)."""
    plots: bool = True
    """Write PNG plots (needs matplotlib)."""

    def resolved_run_dir(self) -> str:
        return self.run_dir or f"runs/tracer-{self.preset}-seed{self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PRESETS: dict[str, dict[str, Any]] = {
    "cpu-strategy": {},
    "cpu-tiny-lm": {
        "policy": "lm", "model": "tiny", "sft_epochs": 1, "sft_learning_rate": 1e-3, "sft_sessions": 8, "iterations": 2,
        "sessions_per_iteration": 2, "group_size": 2, "learning_rate": 1e-4, "max_user_turns": 3, "max_new_tokens": 24,
        "eval_every": 1, "eval_sessions": 4, "eval_rollouts": 1, "rollout_batch": 8,
    },
    # SmolLM2-135M-Instruct on 2 CPU cores, SFT only (an RL iteration of the LM does not fit the 90
    # minutes): one training session of every group, one packed sequence each; the untuned and the tuned
    # model both play 20 held-out sessions (the last of every other group) with the same seeds, 10 at a
    # time (at 32 in lockstep the transformers backend's per-session cost was 2.6x that of 8).
    "cpu-smollm2": {
        "policy": "lm", "model": "smollm2", "sft_epochs": 1, "sft_learning_rate": 2e-4, "sft_sessions": 40, "heldout_per_group": 1,
        "iterations": 0, "eval_before": True, "eval_sessions": 20, "eval_rollouts": 1, "eval_batch": 10, "max_new_tokens": 64,
        "temperature": 1.0,
    },
    # A user LM trained from scratch on 2 CPU cores (issue 41, item 5): SFT on the training sessions (the
    # last session of every group held out), then GRPO at the rate that moved SEAD's scratch clone
    # (trainers/sead/config.py); the untuned, SFT and RL models play the same 40 held-out sessions twice,
    # and the run reports the paired changes of Group-dPCR, intent DTW and W1-Turns between them.
    "cpu-lm-scratch": {
        "policy": "lm", "model": "scratch", "sft_epochs": 1, "sft_steps": 300, "sft_batch_size": 16, "sft_learning_rate": 5e-3,
        "heldout_per_group": 1, "eval_before": True, "eval_rollouts": 2, "eval_batch": 40, "iterations": 10, "sessions_per_iteration": 4,
        "group_size": 4, "learning_rate": 3e-4, "max_new_tokens": 48, "temperature": 1.0, "eval_every": 5, "rollout_batch": 16,
    },
    "gpu-lm": {
        "policy": "lm", "model": "/path/to/Qwen2.5-7B-Instruct", "device": "cuda", "sft_epochs": 2, "sft_learning_rate": 1e-5,
        "iterations": 300, "sessions_per_iteration": 4, "group_size": 8, "learning_rate": 1e-6, "max_new_tokens": 256,
        "eval_every": 25, "eval_rollouts": 1, "rollout_batch": 32,
    },
}


def build_config(preset: str = "cpu-strategy", **overrides: Any) -> TracerTrainConfig:
    values = preset_values(TracerTrainConfig, PRESETS, preset, overrides)
    if "reward_weights" in values:
        values["reward_weights"] = tuple(values["reward_weights"])
    config = TracerTrainConfig(**values)
    if config.policy not in CHOICES["policy"]:
        raise ConfigError(f"policy={config.policy!r}; use strategy or lm.")
    if config.policy == "lm" and not config.model:
        raise ConfigError("policy='lm' needs model=... (a local folder, 'smollm2', 'tiny' or 'scratch').")
    if not 0.0 <= config.l_adv <= 1.0:
        raise ConfigError(f"l_adv must be in [0, 1], got {config.l_adv!r}.")
    # The kinds (an int, not a bool) were checked by preset_values; the ranges word their errors as SEAD's and RL-ADA's do.
    require_range(config, ("sessions_per_iteration", "group_size", "rollout_batch", "eval_every", "eval_rollouts", "eval_batch", "max_new_tokens"), 1)
    require_range(config, ("iterations", "sft_epochs", "sft_sessions", "heldout_per_group", "eval_sessions", "lora_rank", "kl_coef", "gamma", "threads", "sft_steps", "sft_batch_size"), 0)
    require_range(config, ("clip_eps",), 0, 1)
    for name in ("learning_rate", "sft_learning_rate", "temperature"):
        if getattr(config, name) <= 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(config, name)!r}.")
    return config


def parser() -> argparse.ArgumentParser:
    """A CLI generated from the dataclass: ``--field value`` for every field, plus ``--resume RUN_DIR``."""
    return config_parser(
        TracerTrainConfig, "python -m trainers.tracer",
        "TRACER: SFT on reference sessions, then multi-turn RL with deviation-aware advantages.", PRESETS, CHOICES,
    )
