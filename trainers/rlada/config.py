"""Configuration of the RL-ADA co-evolution trainer: one frozen dataclass, one docstring per field,
named presets, and a CLI generated from the dataclass."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

from dialogue_gym.errors import ConfigError
from trainers.common.cli import config_parser, preset_values, require_range
from trainers.grpo.policy import ADVANTAGES

POLICIES = ("strategy", "lm")
SIDES = ("agent", "customer")
CHOICES: dict[str, tuple[Any, ...]] = {"agent_policy": POLICIES, "customer_policy": POLICIES, "advantage": ADVANTAGES}
"""The accepted values of the fields that take one of a few (checked by _check, listed by --help)."""


@dataclass(frozen=True)
class RladaTrainConfig:
    preset: str = "cpu-strategy"
    """Named starting point (see PRESETS); explicit fields override it."""
    run_dir: str = ""
    """Output folder (default: runs/rlada-<preset>-seed<seed>)."""
    seed: int = 0
    """Seeds every episode, the gyms' start sampling and the policies."""
    # -- arena and stopping rule (RL-ADA section 3.4-3.6) --------------------------------------
    episodes_per_scenario: int = 18
    """Arena match: this many episodes of each of the 10 arena scenarios (RL-ADA: 18, i.e. 180 per match)."""
    min_matches: int = 3
    """Stopping rule: never stop before this many matches."""
    max_matches: int = 8
    """Stopping rule: stop after this many matches whatever the win rate."""
    win_threshold: float = 0.6
    """Stopping rule: the agent's win rate must reach this ..."""
    patience: int = 2
    """... in this many consecutive matches ..."""
    stability_epsilon: float = 0.05
    """... with the last inter-match change at most this."""
    weaker_threshold: float = 0.5
    """After a match the agent is the weaker side (and goes to its isolation gym) when its win rate is below this, else the customer is."""
    # -- isolation gym (RL-ADA section 3.5) ------------------------------------------------------
    gym_iterations: int = 12
    """GRPO iterations per isolation-gym cycle of the weaker side (the other side is frozen)."""
    gym_starts: int = 16
    """Episode starts per gym iteration, drawn from the recent match transcripts."""
    group_size: int = 4
    """Rollouts per start (a GRPO group: the same scenario, bank and facts, different seeds)."""
    failure_fraction: float = 0.7
    """Share of gym starts drawn from the weaker side's failures (RL-ADA: 70:30 failures:successes)."""
    recent_matches: int = 1
    """How many recent matches' transcripts form the gym's start pool."""
    advantage: str = "batch_mean"
    """batch_mean (A_i = R_i - mean R over the iteration) or group_standardized (GRPO, groups = starts)."""
    # -- bootstrap (RL-ADA section 3.2) ------------------------------------------------------------
    copy_steps: int = 0
    """lm agent: steps of a synthetic copy warm-up before SFT (lines whose reply repeats an id or amount of
    the prompt, :mod:`trainers.rlada.id_copy`): a scratch model cloned without it never copies the caller's
    account id (0 = none)."""
    sft_episodes: int = 400
    """DA0's supervised bootstrap: keyword-router demonstrations on the 78-intent taxonomy (0 skips it)."""
    sft_epochs: int = 3
    """Passes over the demonstrations (strategy agent; few, so the policy keeps exploring) or optimizer steps (LM agent)."""
    sft_learning_rate: float = 5e-3
    """lm agent: peak rate of the cloning schedule (cosine, 10% warm-up; the SFT phase SEAD and TRACER share),
    apart from the RL rate: SEAD's and TRACER's scratch-model cloning rate; a pretrained model's preset sets its own."""
    sft_batch_size: int = 16
    """lm agent: calls (each one packed sequence of its turns) per cloning step."""
    warmup_agent_iterations: int = 10
    """GRPO warm-up of DA0 against the scripted customer on the taxonomy (Banking77 vocabulary), before the first match."""
    warmup_customer_iterations: int = 6
    """CA0: GRPO of the customer against the frozen DA0 on the arena scenarios (no SFT)."""
    warmup_batch: int = 64
    """Episodes per warm-up iteration."""
    # -- policies ---------------------------------------------------------------------------------
    agent_policy: str = "strategy"
    """strategy (CPU softmax over ask / route) or lm (a causal language model emitting the JSON actions)."""
    customer_policy: str = "strategy"
    """strategy (CPU softmax over concealment styles) or lm."""
    agent_learning_rate: float = 3.0
    """Strategy: gradient step; lm: AdamW learning rate."""
    customer_learning_rate: float = 3.0
    """As agent_learning_rate, for the customer."""
    agent_model: str = ""
    """lm agent: local model folder, "smollm2", "tiny" (a random tiny model built in the run folder) or
    "scratch" (a random model of SEAD's SCRATCH_MODEL shape whose tokenizer is trained on the keyword
    router's dialogues, so every recurring sentence and action is one token)."""
    customer_model: str = ""
    """lm customer: as agent_model."""
    device: str = "cpu"
    """lm policies: torch device."""
    threads: int = 0
    """lm policies: torch's intra-op threads; 0 picks the faster of 1 and all cores on a quick probe
    (logged, saved in state/threads.json and kept on resume)."""
    lora_rank: int = 0
    """lm policies: LoRA rank via peft (0 = full fine-tuning)."""
    agent_kl_coef: float = 0.01
    """lm agent: weight of the KL to its frozen reference."""
    customer_kl_coef: float = 0.05
    """RL-ADA's CA gym uses a tighter KL (beta 0.05) to keep the customer natural-sounding."""
    clip_eps: float = 0.2
    """lm policies: PPO-style ratio clipping."""
    temperature: float = 1.0
    """lm policies: rollout temperature."""
    agent_max_new_tokens: int = 160
    """lm agent: tokens per action."""
    customer_max_new_tokens: int = 64
    """lm customer: tokens per turn."""
    max_agent_turns: int = 12
    """Agent actions per call."""
    # -- evaluation --------------------------------------------------------------------------------
    heldout_repeats: int = 4
    """Held-out evaluation: each of the 12 fixed scenarios this many times (greedy agent, scripted customer at the scenario's level)."""
    eval_seed: int = 10_000
    """Seed of the held-out episodes (disjoint from training seeds)."""
    plots: bool = True
    """Write PNG plots (needs matplotlib)."""

    def resolved_run_dir(self) -> str:
        return self.run_dir or f"runs/rlada-{self.preset}-seed{self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PRESETS: dict[str, dict[str, Any]] = {
    "cpu-strategy": {},
    "cpu-tiny-lm": {
        "agent_policy": "lm", "agent_model": "tiny", "agent_learning_rate": 1e-4, "agent_max_new_tokens": 24, "sft_learning_rate": 1e-4,
        "episodes_per_scenario": 1, "min_matches": 2, "max_matches": 2, "gym_iterations": 1, "gym_starts": 2, "group_size": 2,
        "sft_episodes": 4, "sft_epochs": 1, "warmup_agent_iterations": 1, "warmup_customer_iterations": 1, "warmup_batch": 4,
        "max_agent_turns": 3, "heldout_repeats": 1, "temperature": 1.0,
    },
    # An agent LM trained from scratch on 2 CPU cores (issue 41, item 5): a copy warm-up, behaviour cloning
    # of the keyword router (sft_epochs optimizer steps), GRPO warm-up, then matches against the strategy customer with
    # gyms between them; strict PASS on the held-out scenarios after the warm-up and at the end, paired.
    "cpu-lm-scratch": {
        "agent_policy": "lm", "agent_model": "scratch", "agent_learning_rate": 1e-3, "agent_kl_coef": 0.0, "agent_max_new_tokens": 32,
        "copy_steps": 2000, "sft_episodes": 1000, "sft_epochs": 300, "warmup_agent_iterations": 3, "warmup_customer_iterations": 2, "warmup_batch": 16,
        "group_size": 4, "episodes_per_scenario": 2, "min_matches": 2, "max_matches": 2, "gym_iterations": 2, "gym_starts": 4,
        "heldout_repeats": 2, "temperature": 1.0,
    },
    "gpu-lm": {
        "agent_policy": "lm", "agent_model": "/models/Qwen2.5-3B-Instruct", "customer_policy": "lm",
        "customer_model": "/models/Qwen2.5-7B-Instruct", "device": "cuda", "lora_rank": 16, "agent_learning_rate": 5e-6,
        "sft_learning_rate": 5e-6, "customer_learning_rate": 2e-6, "gym_iterations": 20, "gym_starts": 16, "group_size": 4, "sft_episodes": 600,
        "sft_epochs": 60, "warmup_agent_iterations": 10, "warmup_customer_iterations": 10, "warmup_batch": 32, "heldout_repeats": 1,
    },
}
"""``cpu-strategy``: both sides are strategy policies (a full co-evolution on a CPU in minutes).
``cpu-tiny-lm``: a random tiny causal LM as the agent (plumbing check). ``cpu-lm-scratch``: an agent LM
trained from scratch, SFT then RL. ``gpu-lm``: RL-ADA's setting,
a 3B agent and a 7B customer with LoRA on one GPU (set the model folders)."""


def _check(config: RladaTrainConfig) -> RladaTrainConfig:
    for side in SIDES:
        policy, model = getattr(config, f"{side}_policy"), getattr(config, f"{side}_model")
        if policy not in POLICIES:
            raise ConfigError(f"{side}_policy={policy!r}; use one of {POLICIES}.")
        if policy == "lm" and not model:
            raise ConfigError(f"{side}_policy='lm' needs {side}_model=... (a local folder, 'smollm2', 'tiny' or 'scratch').")
    if config.agent_policy == "lm" and config.sft_episodes and not config.sft_epochs:
        raise ConfigError(
            f"sft_epochs=0 with sft_episodes={config.sft_episodes}: an LM agent's bootstrap takes sft_epochs optimizer steps; "
            "set --sft-epochs N (N >= 1), or --sft-episodes 0 to skip the bootstrap."
        )
    if config.copy_steps and config.agent_policy != "lm":
        raise ConfigError(
            f"copy_steps={config.copy_steps} with agent_policy={config.agent_policy!r}: the copy warm-up trains a language model; "
            "set --agent-policy lm, or --copy-steps 0."
        )
    if config.advantage not in CHOICES["advantage"]:
        raise ConfigError(f"advantage={config.advantage!r}; use group_standardized or batch_mean.")
    if not 0.0 <= config.failure_fraction <= 1.0:
        raise ConfigError(f"failure_fraction must be in [0, 1], got {config.failure_fraction!r}.")
    if not 1 <= config.min_matches <= config.max_matches:
        raise ConfigError(f"need 1 <= min_matches <= max_matches, got {config.min_matches} and {config.max_matches}.")
    require_range(config, ("episodes_per_scenario", "gym_starts", "group_size", "patience", "recent_matches", "warmup_batch", "heldout_repeats", "sft_batch_size"), 1)
    require_range(config, ("max_agent_turns", "agent_max_new_tokens", "customer_max_new_tokens"), 1)
    require_range(config, ("copy_steps", "gym_iterations", "sft_episodes", "sft_epochs", "warmup_agent_iterations", "warmup_customer_iterations"), 0)
    require_range(config, ("lora_rank", "agent_kl_coef", "customer_kl_coef", "stability_epsilon", "threads"), 0)
    require_range(config, ("win_threshold", "weaker_threshold", "clip_eps"), 0, 1)
    for name in ("agent_learning_rate", "customer_learning_rate", "sft_learning_rate", "temperature"):
        if getattr(config, name) <= 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(config, name)!r}.")
    return config


def build_config(preset: str = "cpu-strategy", **overrides: Any) -> RladaTrainConfig:
    return _check(RladaTrainConfig(**preset_values(RladaTrainConfig, PRESETS, preset, overrides)))


def parser() -> argparse.ArgumentParser:
    """A CLI generated from the dataclass: --field value for every field, plus --resume."""
    return config_parser(
        RladaTrainConfig, "python -m trainers.rlada", "RL-ADA co-evolution: arena matches, isolation gyms, stopping rule.", PRESETS, CHOICES
    )
