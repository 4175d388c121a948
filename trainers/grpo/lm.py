"""The causal-LM policy of the GRPO core: generation with its current weights, token-level GRPO.

Multi-turn accounting: each learner turn is one :class:`TurnSample` whose prompt ids and completion
ids and logprobs are exactly those of generation (no re-tokenisation drift). The loss covers
completion tokens only — the learner's own tokens, across all its turns — each weighted by its
advantage (constant per trajectory for SEAD; modulated per turn for TRACER), with PPO-style ratio
clipping and a k3 KL estimate to a frozen reference policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.backends import GenerationRequest, SamplingParams
from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.seeding import mix_seed


@dataclass(frozen=True)
class GRPOConfig:
    learning_rate: float = 1e-6
    """AdamW learning rate (SEAD: 1e-6)."""
    kl_coef: float = 0.001
    """Weight of the KL to the reference policy (SEAD reference code: 0.001); 0 skips the reference."""
    clip_eps: float = 0.2
    """Ratio clipping of the surrogate."""
    max_grad_norm: float = 1.0
    """Gradient clipping."""
    micro_batch_size: int = 8
    """Sequences per forward/backward pass (a sequence packs the consecutive turns of one dialogue, see pack_turns)."""
    lora_rank: int = 0
    """LoRA rank via peft (0: full fine-tuning); lora_alpha is 2 x rank, so adapters are scaled by 2."""
    lora_layers: int = 0
    """With LoRA, adapt only the decoder's top ``lora_layers`` layers (0: all; trainers.common.sft.lora_config)."""
    temperature: float = 1.2
    """Rollout temperature; logprobs are of the temperature-scaled distribution on both sides of the ratio."""
    max_new_tokens: int = 96
    """Tokens per learner turn."""


@dataclass
class TurnSample:
    """One learner turn: what the model saw, what it generated, and the advantage of each generated token."""

    prompt_ids: list[int]
    completion_ids: list[int]
    old_logprobs: list[float]
    advantages: list[float]


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise DependencyNotInstalled("torch", "train", "The causal-LM policy") from exc
    return torch


@dataclass
class PackedTurns:
    """Turn samples that share one forward pass: ``ids`` is the last turn's prompt and completion, and
    every earlier turn's prompt and completion is a prefix of it, so each completion token sees exactly
    the context it was generated in. ``starts[i]`` is where ``turns[i]``'s completion begins in ``ids``."""

    ids: list[int]
    turns: list[TurnSample]
    starts: list[int]


def pack_turns(samples: Sequence[TurnSample]) -> list[PackedTurns]:
    """Consecutive ``samples`` joined wherever a turn's prompt begins with the previous turn's prompt and
    completion token for token (a multi-turn dialogue whose prompts only grow at the end): a dialogue
    of T turns costs one sequence of its final length instead of T prompts re-encoded. The loss is the
    same (causal attention: no token sees what follows it); a turn that does not extend the previous
    one (another dialogue, a rewritten history) starts a new sequence."""
    packed: list[PackedTurns] = []
    for sample in samples:
        ids = sample.prompt_ids + sample.completion_ids
        last = packed[-1] if packed else None
        if last is not None and len(sample.prompt_ids) >= len(last.ids) and sample.prompt_ids[: len(last.ids)] == last.ids:
            last.ids = ids
            last.turns.append(sample)
            last.starts.append(len(sample.prompt_ids))
        else:
            packed.append(PackedTurns(ids, [sample], [len(sample.prompt_ids)]))
    return packed


def build_batch(samples: Sequence[TurnSample | PackedTurns], pad_id: int):
    """Right-padded tensors: input ids, attention mask, and per-position completion mask, old logprobs
    and advantages aligned with the *predicted* token (position i predicts token i + 1)."""
    torch = _torch()
    rows = [s if isinstance(s, PackedTurns) else PackedTurns(s.prompt_ids + s.completion_ids, [s], [len(s.prompt_ids)]) for s in samples]
    length = max(len(r.ids) for r in rows)
    size = (len(rows), length)
    input_ids = torch.full(size, pad_id, dtype=torch.long)
    attention = torch.zeros(size, dtype=torch.long)
    mask = torch.zeros(size, dtype=torch.float32)
    old = torch.zeros(size, dtype=torch.float32)
    advantages = torch.zeros(size, dtype=torch.float32)
    for row, packed in enumerate(rows):
        input_ids[row, : len(packed.ids)] = torch.tensor(packed.ids)
        attention[row, : len(packed.ids)] = 1
        for sample, first in zip(packed.turns, packed.starts):
            if not (len(sample.completion_ids) == len(sample.old_logprobs) == len(sample.advantages)):
                raise ConfigError(
                    f"TurnSample {row}: completion_ids ({len(sample.completion_ids)}), old_logprobs ({len(sample.old_logprobs)}) "
                    f"and advantages ({len(sample.advantages)}) must have one entry per generated token."
                )
            if first < 1:
                raise ConfigError(
                    f"TurnSample {row}: prompt_ids is empty, so its first generated token has no position that predicts it. "
                    "Pass the tokenized prompt the model generated from (a chat template always renders at least one token)."
                )
            start = first - 1  # logits at start predict the first completion token
            end = start + len(sample.completion_ids)
            mask[row, start:end] = 1.0
            old[row, start:end] = torch.tensor(sample.old_logprobs, dtype=torch.float32)
            advantages[row, start:end] = torch.tensor(sample.advantages, dtype=torch.float32)
    return input_ids, attention, mask, old, advantages


def token_logprobs(model, input_ids, attention, temperature: float):
    """Log-probability of each next token under ``model`` (position i scores token i + 1; last is 0)."""
    torch = _torch()
    logits = model(input_ids=input_ids, attention_mask=attention).logits.float() / temperature
    scores = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    return torch.nn.functional.pad(scores, (0, 1))


def grpo_loss(new, old, reference, advantages, mask, clip_eps: float, kl_coef: float):
    """Token-level clipped surrogate + k3 KL, averaged over learner tokens only."""
    torch = _torch()
    ratio = torch.exp(new - old)
    surrogate = -torch.minimum(ratio * advantages, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    per_token = surrogate
    kl = torch.zeros_like(new)
    if reference is not None:
        delta = reference - new
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + kl_coef * kl
    tokens = mask.sum().clamp(min=1)
    clipped = ((ratio - 1).abs() > clip_eps).float()
    with torch.no_grad():
        stats = {
            "loss/kl": float((kl * mask).sum() / tokens),
            "loss/clip_fraction": float((clipped * mask).sum() / tokens),
            "loss/ratio_mean": float((ratio * mask).sum() / tokens),
        }
    return (per_token * mask).sum() / tokens, stats


class CausalLMPolicy:
    """A trainable agent/user policy backed by a causal LM (transformers; LoRA via peft optional).

    Generation goes through :class:`~dialogue_gym.backends.transformers_backend.TransformersBackend`
    over the live weights, so token ids and logprobs come straight from sampling.
    """

    def __init__(self, model: str, config: GRPOConfig | None = None, *, device: str = "cpu", checkpoint: str | None = None, seed: int = 0):
        torch = _torch()
        from dialogue_gym.backends.transformers_backend import TransformersBackend

        self.config = config or GRPOConfig()
        lora = self.config.lora_rank > 0
        weights = checkpoint if checkpoint and not lora else model
        loader = TransformersBackend(weights, device=device, temperature=self.config.temperature, top_p=1.0, max_new_tokens=self.config.max_new_tokens)
        self.tokenizer, self.model, self.device = loader.tokenizer, loader.model, loader.device
        if lora:
            try:
                import peft
            except ImportError as exc:
                raise DependencyNotInstalled("peft", "train", "LoRA training") from exc
            if checkpoint:
                self.model = peft.PeftModel.from_pretrained(self.model, checkpoint, is_trainable=True)
            else:
                from trainers.common.sft import lora_config

                self.model = peft.get_peft_model(self.model, lora_config(self.model, self.config.lora_rank, self.config.lora_layers))
        self.reference = None
        if self.config.kl_coef > 0 and not lora:  # with LoRA the reference is the base model, adapters disabled
            self.reference = TransformersBackend(model, device=device).model.eval()
            for parameter in self.reference.parameters():
                parameter.requires_grad_(False)
        # ``seed`` only draws for requests without their own seed (act_batch always gives one). No prefix
        # cache: its reuse changes floating-point rounding, and the logprobs recorded here are the
        # denominator of the GRPO ratio, recomputed without a cache in ``step``; plain generation keeps
        # the two within rounding (tests/trainers/test_grpo_lm.py bounds the gap).
        self.backend = TransformersBackend(
            self.model, tokenizer=self.tokenizer, device=device, temperature=self.config.temperature,
            top_p=1.0, max_new_tokens=self.config.max_new_tokens, seed=seed, prefix_cache=False,
        )
        self.greedy = False
        """Set by held-out evaluation: act with greedy decoding (temperature 0) instead of sampling."""
        self.evaluating = False
        """Set by held-out evaluation: nothing trains on these turns, so sampled ones also go to the prefix-cached backend."""
        self._cached_backend = None
        self.optimizer = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=self.config.learning_rate)
        if checkpoint and Path(checkpoint, "optimizer.pt").exists():
            self.optimizer.load_state_dict(torch.load(Path(checkpoint, "optimizer.pt"), weights_only=True))
        self._pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id

    # -- acting ---------------------------------------------------------------------------
    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"seed": seed, "turns": [], "chat": None}

    def generate(self, requests: Sequence[GenerationRequest]):
        self.model.eval()
        return (self.cached_backend() if self.greedy or self.evaluating else self.backend).generate(requests)

    def cached_backend(self):
        """The backend of play whose logprobs nothing divides by (greedy play: held-out evaluation, DAgger's
        played starts, a decision point's prefix; and sampled held-out evaluation), with the prefix cache,
        so each turn encodes only what follows the dialogue's previous turn and the system prompt once.
        Measured: SmolLM2 playing SEAD with 8 and 32 dialogues of 3 turns ran 2.12x and 2.26x faster in wall
        time with the cache (``benchmarks/vector_llm_throughput.py``, docs/performance.md), and a SEAD call
        has about 7 agent turns of a 1,000-token dialogue, each re-encoded from its start without the cache.
        Its outputs equal the uncached backend's except at near-ties (TransformersBackend;
        tests/trainers/test_grpo_lm_greedy_cache.py): a sampled turn draws from the row's own seeded
        uniforms either way. The cache empties itself when a training step changes the weights. Every
        request states its temperature, so this backend's own default (greedy) never decides."""
        if self._cached_backend is None:
            from dialogue_gym.backends.transformers_backend import TransformersBackend

            self._cached_backend = TransformersBackend(
                self.model, tokenizer=self.tokenizer, device=str(self.device), temperature=0.0, top_p=1.0,
                max_new_tokens=self.config.max_new_tokens, prefix_cache=True,
            )
        return self._cached_backend

    def act_batch(self, observations, infos, memories) -> list[str]:
        requests = [
            GenerationRequest(
                tuple(o["messages"]), SamplingParams(temperature=0.0 if self.greedy or m.get("greedy") else self.config.temperature, seed=mix_seed(m["seed"], int(o["turn"]))),
                self._own_ids_prompt(o["messages"], m),
            )
            for o, m in zip(observations, memories)
        ]
        outputs = self.generate(requests)
        for output, observation, request, memory in zip(outputs, observations, requests, memories):
            memory["turns"].append({
                "prompt_ids": output.prompt_token_ids, "completion_ids": output.token_ids, "logprobs": output.logprobs,
                "own_ids": request.prompt_ids is not None,
            })
            memory["chat"] = (list(observation["messages"]), output.text)
        return [output.text for output in outputs]

    def _own_ids_prompt(self, messages: Sequence[dict[str, str]], memory: dict[str, Any]) -> tuple[int, ...] | None:
        """The next turn's prompt as token ids: the previous turn's prompt and the ids it generated, as
        sampled, then the tokens of what the policy heard since (the template's end of its turn, the
        counterpart's reply, the opening of its next turn). Decoding and re-encoding a turn can give other
        ids (1.2% of sampled SEAD turns of the scratch model), and then the model would be conditioned on,
        and trained in the context of, tokens it never produced. None on the first turn, where the chat
        does not show the previous turn as it was said (the game cut or rewrote it, or rewrote the
        history), or where the chat template renders the earlier chat differently once more follows: the
        prompt is then rendered from the messages."""
        if not memory["turns"]:
            return None
        from dialogue_gym.integrations.common import heard_tokens

        seen, said = memory["chat"]
        if len(messages) <= len(seen) or list(messages[: len(seen)]) != seen or messages[len(seen)].get("content") != said:
            return None
        last = memory["turns"][-1]
        ended_with_eos = bool(last["completion_ids"]) and last["completion_ids"][-1] == self.tokenizer.eos_token_id
        between = heard_tokens(self.tokenizer, seen, said, messages, ended_with_eos)
        return None if between is None else tuple(last["prompt_ids"] + last["completion_ids"] + between)

    # -- learning -------------------------------------------------------------------------
    def score(self, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> list[float]:
        """The logprob of each of ``completion_ids`` after ``prompt_ids`` under the current weights at the
        rollout temperature (what :meth:`step` recomputes as the ratio's numerator)."""
        torch = _torch()
        sample = TurnSample(list(prompt_ids), list(completion_ids), [0.0] * len(completion_ids), [0.0] * len(completion_ids))
        input_ids, attention, _, _, _ = (t.to(self.device) for t in build_batch([sample], self._pad))
        self.model.eval()
        with torch.no_grad():
            scores = token_logprobs(self.model, input_ids, attention, self.config.temperature)
        start = len(prompt_ids) - 1
        return [float(x) for x in scores[0, start : start + len(completion_ids)]]

    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"turns": memory["turns"]}

    def update(self, records: Sequence[dict[str, Any]], advantages: Sequence[float]) -> dict[str, float]:
        """SEAD's GRPO: every learner token of trajectory i gets A_i."""
        samples = [
            TurnSample(t["prompt_ids"], t["completion_ids"], t["logprobs"], [float(a)] * len(t["completion_ids"]))
            for record, a in zip(records, advantages)
            for t in record["turns"]
            if t["completion_ids"]
        ]
        return self.step(samples)

    def step(self, samples: Sequence[TurnSample]) -> dict[str, float]:
        """One optimizer step over ``samples`` (packed by :func:`pack_turns`; gradients accumulated over micro-batches)."""
        torch = _torch()
        if not samples:
            return {"loss/total": math.nan}
        self.model.train()
        self.optimizer.zero_grad()
        total_tokens = sum(len(s.completion_ids) for s in samples)
        metrics: dict[str, float] = {"loss/total": 0.0, "loss/kl": 0.0, "loss/clip_fraction": 0.0, "loss/ratio_mean": 0.0}
        size, sequences = self.config.micro_batch_size, pack_turns(samples)
        for start in range(0, len(sequences), size):
            chunk = sequences[start : start + size]
            input_ids, attention, mask, old, advantages = (t.to(self.device) for t in build_batch(chunk, self._pad))
            new = token_logprobs(self.model, input_ids, attention, self.config.temperature)
            reference = None
            if self.config.kl_coef > 0:
                with torch.no_grad():
                    if self.reference is not None:
                        reference = token_logprobs(self.reference, input_ids, attention, self.config.temperature)
                    else:
                        with self.model.disable_adapter():
                            reference = token_logprobs(self.model, input_ids, attention, self.config.temperature)
            loss, parts = grpo_loss(new, old, reference, advantages, mask, self.config.clip_eps, self.config.kl_coef)
            weight = float(mask.sum()) / max(1, total_tokens)
            (loss * weight).backward()
            metrics["loss/total"] += float(loss.detach()) * weight
            for key, value in parts.items():
                metrics[key] += value * weight
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.model.eval()
        metrics["loss/learner_tokens"] = float(total_tokens)
        return metrics

    def save(self, directory: str | Path) -> None:
        """Weights (or LoRA adapters), tokenizer and optimizer state, so a resumed run continues the same
        optimisation; the folder appears whole or not at all (:func:`trainers.common.atomic.saved_folder`)."""
        from trainers.common.atomic import saved_folder

        def write(folder: Path) -> None:
            self.model.save_pretrained(str(folder))
            self.tokenizer.save_pretrained(str(folder))
            _torch().save(self.optimizer.state_dict(), folder / "optimizer.pt")

        saved_folder(directory, write)
