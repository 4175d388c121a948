"""Supervised bootstrap of a causal-LM support agent (RL-ADA's DA0 is SFT-initialised on tool-routing
demonstrations): record a teacher's (observation, action) pairs, then maximise the action's
log-likelihood under the policy, on the policy's own tokens only."""

from __future__ import annotations

import random
from typing import Any, Sequence

from trainers.grpo.lm import TurnSample, build_batch, token_logprobs


class DemoRecorder:
    """Plays like ``teacher`` and records every (chat messages, action text) pair it produced."""

    def __init__(self, teacher: Any):
        self.teacher = teacher

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"inner": self.teacher.start(profile, seed), "pairs": []}

    def act_batch(self, observations, infos, memories) -> list[str]:
        texts = self.teacher.act_batch(observations, infos, [m["inner"] for m in memories])
        for observation, text, memory in zip(observations, texts, memories):
            memory["pairs"].append([list(observation["messages"]), text])
        return texts

    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"pairs": memory["pairs"]}


def lm_supervised_steps(policy: Any, pairs: Sequence[Sequence[Any]], steps: int, rng: random.Random, batch: int = 8) -> dict[str, float]:
    """``steps`` optimizer steps of teacher forcing on random mini-batches of ``pairs``; returns the last mean NLL per token."""
    import torch

    tokenizer = policy.tokenizer
    eos = tokenizer.eos_token_id
    samples = []
    for messages, target in pairs:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt_ids = list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        completion = list(tokenizer(target, add_special_tokens=False)["input_ids"]) + ([eos] if eos is not None else [])
        samples.append(TurnSample(prompt_ids, completion, [0.0] * len(completion), [1.0] * len(completion)))
    loss_value = float("nan")
    if not samples:
        return {"sft/nll": loss_value, "sft/pairs": 0.0}
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    policy.model.train()
    for _ in range(steps):
        chunk = [samples[rng.randrange(len(samples))] for _ in range(min(batch, len(samples)))]
        input_ids, attention, mask, _, _ = (t.to(policy.device) for t in build_batch(chunk, pad))
        policy.optimizer.zero_grad()
        logprobs = token_logprobs(policy.model, input_ids, attention, 1.0)
        loss = -(logprobs * mask).sum() / mask.sum().clamp(min=1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), policy.config.max_grad_norm)
        policy.optimizer.step()
        loss_value = float(loss.detach())
    policy.model.eval()
    return {"sft/nll": loss_value, "sft/pairs": float(len(samples))}
