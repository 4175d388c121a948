"""Configuration of the SEAD trainer: one frozen dataclass, one docstring per field, named presets."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from dialogue_gym.errors import ConfigError
from trainers.common.cli import config_parser, preset_values, require_range
from trainers.grpo.policy import ADVANTAGES

CHOICES: dict[str, tuple[Any, ...]] = {
    "curriculum": ("full", "uniform", "unstructured", "released"),
    "smoothing": (None, "beta"),
    "advantage": ADVANTAGES,
    "policy": ("strategy", "strategy-plus", "lm"),
    "user": ("scripted", "llm"),
    "user_training": ("fixed", "joint"),
    "rl_mode": ("dialogue", "decision_point"),
    "sft_expert": ("adaptive", "sop"),
    "continuation": ("adaptive", "sop", "lm"),
    "prefix": ("expert", "lm"),
}
"""The accepted values of the fields that take one of a few (checked by build_config, listed by --help)."""


@dataclass(frozen=True)
class SeadTrainConfig:
    preset: str = "cpu-strategy"
    """Named starting point (see PRESETS); explicit fields override it."""
    run_dir: str = ""
    """Output folder (default: runs/sead-<preset>-<curriculum>-seed<seed>)."""
    seed: int = 0
    """Seeds the curriculum, every episode and the policy's initialisation."""
    iterations: int = 150
    """Outer iterations of the four-phase loop."""
    batch_size: int = 60
    """Profiles (dialogues) per iteration; SEAD's GRPO group."""
    curriculum: str = "full"
    """ProfileController mode: full | uniform | unstructured | released (SEAD's public-code curriculum)."""
    n_max: int = 200
    """Dialogues per initial state over the run before the state is capped."""
    smoothing: str | None = None
    """Completion-rate smoothing of the controller: None or "beta"."""
    advantage: str = "batch_mean"
    """batch_mean (SEAD: A_i = R_i - mean R) or group_standardized."""
    policy: str = "strategy"
    """strategy (CPU softmax over dialogue moves), strategy-plus (the same over richer features and
    more moves, trainers/sead/strategy_plus.py) or lm (a causal language model)."""
    learning_rate: float = 2.0
    """Step size (strategy: gradient ascent step; lm: AdamW learning rate, SEAD uses 1e-6)."""
    entropy_coef: float = 0.0
    """strategy-plus policy: weight of the entropy bonus in each update (0 = plain policy gradient)."""
    model: str = ""
    """lm policy: local model folder, "smollm2", "tiny" (a random tiny model built in the run folder) or
    "scratch" (a random model of SCRATCH_MODEL's shape whose tokenizer is trained on the expert's dialogues)."""
    device: str = "cpu"
    """lm policy: torch device."""
    threads: int = 0
    """lm policy: torch's intra-op threads; 0 picks the faster of 1 and all cores on a quick probe (logged)."""
    lora_rank: int = 0
    """lm policy: LoRA rank via peft (0 = full fine-tuning), in phase sft and its DAgger rounds (the adapters
    merged into the saved model) and in phase rl."""
    lora_layers: int = 0
    """lm policy with LoRA: adapt only the model's top ``lora_layers`` decoder layers (0 = all), so each
    step backpropagates through those alone (about 2x faster for SmolLM2's top 10 of 30)."""
    kl_coef: float = 0.001
    """lm policy: weight of the KL to the frozen reference (SEAD reference code: 0.001)."""
    clip_eps: float = 0.2
    """lm policy: PPO-style ratio clipping."""
    temperature: float = 1.2
    """lm policy: rollout temperature (SEAD reference code: 1.2)."""
    max_new_tokens: int = 96
    """lm policy: tokens per agent turn."""
    sft_steps: int = 0
    """lm policy, phase ``sft``: optimizer steps of behaviour cloning on the expert's dialogues before RL (0 skips it)."""
    sft_episodes: int = 2000
    """lm policy: the expert's dialogues played for phase ``sft`` (and the scratch model's tokenizer corpus),
    exported through ``dialogue-gym export --format sft``'s writer."""
    sft_expert: str = "adaptive"
    """The fair scripted agent cloned by phase ``sft``; also the prefix policy of decision points."""
    sft_learning_rate: float = 3e-3
    """Phase ``sft``: AdamW learning rate (cosine schedule, 10% warm-up)."""
    sft_batch_size: int = 16
    """Phase ``sft``: dialogues (one packed sequence each) padded together into one forward pass; an optimizer
    step sees ``sft_batch_size`` x ``sft_accumulation`` of them."""
    sft_accumulation: int = 1
    """Phase ``sft`` and its DAgger rounds: forward passes accumulated per optimizer step. On a CPU, one dialogue
    a pass (``sft_batch_size`` 1) with accumulation skips the padding a batch of calls of unequal length costs."""
    dagger_rounds: int = 0
    """Phase ``sft``: DAgger rounds after behaviour cloning: the model plays ``dagger_episodes`` training starts
    greedily, the sft expert labels every state it reaches, and the model trains ``dagger_steps`` more steps on
    the expert's dialogues plus every state labelled so far (trainers/common/dagger.py)."""
    dagger_episodes: int = 200
    """Phase ``sft``: dialogues the model plays per DAgger round."""
    dagger_steps: int = 200
    """Phase ``sft``: optimizer steps of each DAgger round."""
    dagger_learning_rate: float = 0.0
    """Phase ``sft``: peak AdamW learning rate of each DAgger round (a fresh cosine schedule, 10% warm-up);
    0 uses ``sft_learning_rate``. A round restarts from a clone that behaviour cloning's schedule left at a
    rate near 0: a restart at the cloning peak can undo part of the fit (issue 41)."""
    dagger_share: float = 0.0
    """Phase ``sft``: the share of a DAgger round's training rows (learner turns) that are labelled states: the
    labelled sessions are repeated until they make up about this share of the mix with the expert's dialogues
    (:func:`trainers.common.dagger.weighted_mix`). 0 takes each labelled session once (the plain aggregate:
    200 played starts are about a tenth of the rows beside 2,000 expert dialogues)."""
    scratch_layers: int = 2
    """``model="scratch"``: transformer layers of the model built from scratch (the rest of its shape is SCRATCH_MODEL)."""
    rl_mode: str = "dialogue"
    """lm policy, phase ``rl``: dialogue (SEAD's GRPO over whole dialogues) or decision_point (SPEC
    "Decision-point GRPO": batch_size points per iteration, group_size sampled turns each)."""
    group_size: int = 8
    """decision_point: G, the LM turns sampled at each point (SPEC: 8)."""
    prefix: str = "expert"
    """decision_point: whose dialogue each point is cut from: the sft expert, or the LM itself playing
    greedily as it is evaluated (on-policy states; the SPEC's option)."""
    continuation: str = "adaptive"
    """decision_point: who plays the learner's turns after the sampled one: a fair scripted agent or "lm"."""
    pool_same_turn: bool = False
    """decision_point: train on each copy's reward pooled with the copies of its group that sampled the same
    turn (trainers/grpo/decision_point.py pooled_rewards): with an LM continuation, copies that said the same
    can end differently, and pooling leaves a group informative only where its sampled turns differ. A scripted
    continuation plays on identically after the same turn, so there it changes nothing."""
    greedy_copy: bool = False
    """decision_point: copy 0 of every group decodes the point's turn greedily (the turn held-out greedy
    evaluation plays there) and the other G - 1 sample at the rollout temperature, so a group's advantages
    say which sampled turns did better or worse than the current argmax: the comparison that must move
    for greedy CR to move (issue 41)."""
    over_greedy: bool = False
    """decision_point with greedy_copy: each copy's advantage is how much its reward beat the greedy copy's,
    or 0 (trainers/grpo/decision_point.py over_greedy_advantages): only turns that beat the argmax train."""
    user: str = "scripted"
    """Who plays the user: scripted or llm."""
    user_training: str = "fixed"
    """fixed (SEAD: the owner is never trained) or joint (paper Table 3 "Train URM": the scripted owner
    becomes a trainable policy, trainers/sead/joint_user.py, updated each iteration on the same
    dialogues with the game's adversarial user reward; held-out evaluation stays against the fixed owner)."""
    user_backend: dict | None = None
    """Backend spec of the LLM user, e.g. {"name": "transformers", "model": "smollm2"}."""
    user_sampling: dict = field(default_factory=lambda: {"temperature": 0.9, "top_p": 0.95})
    """Sampling of the LLM user (SEAD: temperature 0.9, top_p 0.95)."""
    max_agent_turns: int = 15
    """T_max of the calls."""
    eval_episodes: int = 1200
    """Held-out evaluation after training (fixed stratified profiles, eval_seed); 0 skips it."""
    eval_seed: int = 10_000
    """Seed of the held-out profile set (disjoint from training seeds)."""
    before_and_baselines: bool = True
    """Also evaluate, on the same held-out set, the policy before training and the fair scripted
    baselines: printed as before -> after, with the best baseline beside it (3 more held-out runs)."""
    plots: bool = True
    """Write PNG plots (needs matplotlib)."""

    def resolved_run_dir(self) -> str:
        return self.run_dir or f"runs/sead-{self.preset}-{self.curriculum}-seed{self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SCRATCH_MODEL: dict[str, Any] = {"vocab_size": 2048, "hidden_size": 128, "num_attention_heads": 4, "whole_sentences": True}
"""Shape of ``model="scratch"``: with every recurring sentence one token (whole_sentences), this size
takes 0.46 s a step of 16 dialogues on 2 idle cores and clones adaptive to a per-token completion loss
of about 0.2 in 400 steps (held-out CR 0.146 against adaptive's 0.588; 0.008 after 100 steps). With 4 layers
(cpu-lm-scratch) a step took 1.6-2.4 s at one torch thread on a loaded 2-core machine, and 800 steps reach a
loss of 0.10 and CR 0.487."""

PRESETS: dict[str, dict[str, Any]] = {
    "cpu-strategy": {},
    "cpu-strategy-plus": {"policy": "strategy-plus", "iterations": 450, "n_max": 400, "entropy_coef": 0.03},
    # Half the step over twice the iterations (n_max doubled with them): a seed that finds a habit early
    # commits to it half as fast, which narrows the spread across seeds.
    "cpu-strategy-plus-long": {"policy": "strategy-plus", "iterations": 900, "n_max": 800, "entropy_coef": 0.03, "learning_rate": 1.0},
    "cpu-tiny-lm": {
        "policy": "lm", "model": "tiny", "iterations": 2, "batch_size": 4, "max_agent_turns": 3,
        "max_new_tokens": 16, "learning_rate": 1e-4, "eval_episodes": 8, "temperature": 1.0,
    },
    # A 4-layer Llama whose tokenizer learns the expert's sentences, cloned from adaptive (phase sft: 800 steps;
    # 4 layers and 800 steps reach agreement 0.676 and greedy CR 0.487 beside adaptive's 0.588, where 2 layers
    # and 400 steps reached 0.435 and 0.237; docs/training.md),
    # then decision-point GRPO (phase rl); every phase's held-out evaluation on the same 240 starts. RL at 3e-4:
    # the trivial-reward check (tests/trainers/test_grpo_trivial_reward.py, docs/training.md) moves greedy
    # decoding in 3 iterations, where the old 1e-5 does not move it in 15. Decision points are cut from the
    # clone's own greedy dialogues (prefix "lm": the states it reaches when evaluated; issue 41) and adaptive
    # finishes each copy (deterministic given the seed and the history: a reward difference comes from the sampled
    # turn alone, where an LM continuation also adds its own luck and costs 3-4x as long). The rollout temperature
    # is 2.0: on 32 points of the 1,800-step clone, G = 8 copies differ in reward at 3% of points at T = 1, 28%
    # at 1.5 and 88% at 2.0 (benchmarks/sead_informative_groups.py, docs/training.md); the sharp clone's samples
    # at T = 1 are mostly its greedy turn again.
    "cpu-lm-scratch": {
        "policy": "lm", "model": "scratch", "scratch_layers": 4, "sft_steps": 800, "sft_learning_rate": 5e-3, "rl_mode": "decision_point", "prefix": "lm", "iterations": 30,
        "batch_size": 32, "group_size": 8, "learning_rate": 3e-4, "temperature": 2.0, "max_new_tokens": 24, "eval_episodes": 240, "kl_coef": 0.0,
    },
    # SmolLM2-135M-Instruct on 2 CPU cores (issue 41 item 5): LoRA SFT on the expert, then decision-point GRPO with
    # LoRA, every phase's held-out evaluation on the same starts. Sized from measurements on this machine: a
    # SEAD call is about 1,000 SmolLM2 tokens (an agent turn 57 on average, 80 at most, of which the score tags take
    # about 40), and one SFT step of 4 calls took 309 s at one thread under load 7 (docs/presets.md). The 4 calls
    # of a step go one a pass, accumulated: 18.8 s a step against 35.1 s padded into one pass (two threads,
    # benchmarks/sft_batching.py, docs/results/benchmarks/sft_batching.txt).
    "cpu-smollm2": {
        "policy": "lm", "model": "smollm2", "lora_rank": 16, "lora_layers": 10, "sft_steps": 96, "sft_batch_size": 1, "sft_accumulation": 4,
        "sft_episodes": 384, "sft_learning_rate": 1e-3,
        "rl_mode": "decision_point", "prefix": "lm", "iterations": 4, "batch_size": 4, "group_size": 4, "learning_rate": 1e-4, "temperature": 1.0,
        "max_new_tokens": 96, "eval_episodes": 40, "kl_coef": 0.0,
    },
    # The same pipeline at GPU batch sizes (benchmarks/gpu_lm_check.sh, about 8 minutes on one H100):
    # SmolLM2-135M-Instruct fully fine-tuned, or --model /local/folder for a larger instruct model.
    "gpu-lm": {
        "policy": "lm", "model": "smollm2", "device": "cuda", "sft_steps": 300, "sft_batch_size": 32, "sft_learning_rate": 5e-5,
        "rl_mode": "decision_point", "iterations": 20, "batch_size": 60, "group_size": 8, "learning_rate": 1e-6, "temperature": 1.0,
        "max_new_tokens": 96, "eval_episodes": 240,
    },
}


def build_config(preset: str = "cpu-strategy", **overrides: Any) -> SeadTrainConfig:
    config = SeadTrainConfig(**preset_values(SeadTrainConfig, PRESETS, preset, overrides))
    if config.curriculum not in CHOICES["curriculum"]:
        raise ConfigError(f"curriculum={config.curriculum!r}; use full, uniform, unstructured or released.")
    if config.policy not in CHOICES["policy"]:
        raise ConfigError(f"policy={config.policy!r}; use strategy, strategy-plus or lm.")
    if config.policy == "lm" and not config.model:
        raise ConfigError("policy='lm' needs model=... (a local folder, 'smollm2', 'tiny' or 'scratch').")
    for name in ("rl_mode", "sft_expert", "continuation", "prefix"):
        if getattr(config, name) not in CHOICES[name]:
            raise ConfigError(f"{name}={getattr(config, name)!r}; use one of {', '.join(map(repr, CHOICES[name]))}.")
    if config.policy != "lm" and (config.sft_steps or config.rl_mode != "dialogue"):
        raise ConfigError(
            f"sft_steps={config.sft_steps} and rl_mode={config.rl_mode!r} train a language model; pass policy=lm "
            "(with model=...), or leave sft_steps=0 and rl_mode='dialogue' for the strategy policies."
        )
    if config.model == "scratch" and not config.sft_steps:
        raise ConfigError("model='scratch' is a random model; pass sft_steps > 0 so phase sft teaches it the expert's dialogues first.")
    if config.advantage not in CHOICES["advantage"]:
        raise ConfigError(f"advantage={config.advantage!r}; use batch_mean or group_standardized.")
    if config.user_training not in CHOICES["user_training"]:
        raise ConfigError(f"user_training={config.user_training!r}; use fixed or joint.")
    if config.user_training == "joint" and config.user != "scripted":
        raise ConfigError(f"user_training='joint' trains the scripted owner, got user={config.user!r}; pass user=scripted.")
    if config.smoothing not in CHOICES["smoothing"]:
        raise ConfigError(f"smoothing={config.smoothing!r}; use None or 'beta'.")
    if config.greedy_copy and (config.rl_mode != "decision_point" or config.group_size < 2):
        raise ConfigError(
            f"greedy_copy=True with rl_mode={config.rl_mode!r} and group_size={config.group_size}: the greedy copy is one of a "
            "decision point's G copies; pass rl_mode='decision_point' and group_size >= 2 (it needs sampled copies to compare with)."
        )
    if config.over_greedy and not config.greedy_copy:
        raise ConfigError("over_greedy=True scores each copy against the group's greedy copy; pass greedy_copy=True with it.")
    require_range(config, ("batch_size", "n_max", "max_agent_turns", "max_new_tokens", "sft_episodes", "sft_batch_size", "sft_accumulation", "group_size", "dagger_episodes", "dagger_steps", "scratch_layers"), 1)
    require_range(config, ("iterations", "eval_episodes", "lora_rank", "lora_layers", "kl_coef", "entropy_coef", "sft_steps", "dagger_rounds", "threads", "dagger_learning_rate"), 0)
    require_range(config, ("clip_eps",), 0, 1)
    if not 0 <= config.dagger_share < 1:
        raise ConfigError(
            f"dagger_share={config.dagger_share!r} is not a share of a DAgger round's rows below 1 (the expert's dialogues stay in the mix); "
            "pass a value in [0, 1), e.g. 0.5 for half the rows labelled states, or 0 for each labelled session once."
        )
    for name in ("learning_rate", "temperature", "sft_learning_rate"):
        if getattr(config, name) <= 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(config, name)!r}.")
    return config


def parser() -> argparse.ArgumentParser:
    """A CLI generated from the dataclass: --field value for every field, plus --resume."""
    return config_parser(SeadTrainConfig, "python -m trainers.sead", "SEAD self-evolving training (four-phase loop).", PRESETS, CHOICES)
