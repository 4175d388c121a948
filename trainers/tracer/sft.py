"""Stage 1: supervised fine-tuning on the reference sessions rendered in TRACER's output format.

Every reference session is replayed through the game itself (its assistant turns and its user turns,
the latter rendered as ``<think>rationale</think><intent_level>z</intent_level><reply>text</reply>``),
so each training example is exactly what the simulator will see and say in an RL episode: the user
observation before the turn, and the turn. The strategy policy learns the levels from those
observations' features; a language model learns the rendered turns with TRL's ``SFTTrainer``, each
session packed into one pre-tokenized sequence with the loss on its user turns only (:func:`pack_session`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from dialogue_gym.errors import DependencyNotInstalled
from dialogue_gym.scenarios.tracer.data import ReferenceSession
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.parsing import render_user_output


def replay(game: TracerGame, session: ReferenceSession) -> Iterator[tuple[dict[str, Any], dict[str, Any], str, int]]:
    """``(observation, info, rendered user turn, its level)`` before each user turn of ``session`` (until the
    game ends: a game with a lower turn limit than the session stops early)."""
    game.reset(seed=0, options={"session_id": session.session_id})
    for turn in session.turns[1:]:
        if game.done:
            return
        if turn.role == "user":
            text = render_user_output(turn.text, int(turn.intent_level), turn.rationale or "")
            yield game.observe("user"), game.info("user"), text, int(turn.intent_level)
        else:
            text = turn.text
        game.step(text)


def strategy_samples(policy: Any, game: TracerGame, sessions: Sequence[ReferenceSession] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and reference levels of every user turn of ``sessions`` (default: all of ``game``'s)."""
    rows, levels = [], []
    for session in game.references.sessions if sessions is None else sessions:
        for observation, info, _, level in replay(game, session):
            rows.append(policy.context(observation, info, {"profile": game.episode_profile()}))
            levels.append(level)
    return np.array(rows), np.array(levels, dtype=np.int64)


def lm_sessions(game: TracerGame, sessions: Sequence[ReferenceSession] | None = None) -> list[list[dict[str, Any]]]:
    """Conversational prompt-completion rows (TRL's format), one list per session of ``sessions``
    (default: all of ``game``'s), in turn order."""
    return [
        [{"prompt": observation["messages"], "completion": [{"role": "assistant", "content": text}]} for observation, _, text, _ in replay(game, session)]
        for session in (game.references.sessions if sessions is None else sessions)
    ]


def _chat_ids(tokenizer: Any, messages: Sequence[dict[str, str]], generation_prompt: bool) -> list[int]:
    """Token ids of ``messages`` as the transformers backend renders a prompt (template text, no added specials)."""
    text = tokenizer.apply_chat_template(list(messages), add_generation_prompt=generation_prompt, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def pack_session(rows: Sequence[dict[str, Any]], tokenizer: Any) -> list[dict[str, list[int]]]:
    """Pre-tokenized SFT rows (``input_ids``, ``completion_mask``) training the same tokens as ``rows``.

    Within a session every prompt extends the previous prompt and completion (the simulator's prompts
    only grow at the end), so the last row's conversation holds every earlier one: one sequence with the
    mask on each turn's completion gives every turn the same context and loss as its own row, at a
    fraction of the tokens (causal attention: a token never sees what follows it). Where the chat
    template does not render prefixes stably (some templates rewrite earlier turns), each row is
    returned on its own."""
    spans = []
    for row in rows:
        prompt = _chat_ids(tokenizer, row["prompt"], generation_prompt=True)
        full = _chat_ids(tokenizer, [*row["prompt"], *row["completion"]], generation_prompt=False)
        spans.append((prompt, full))
    whole = spans[-1][1] if spans else []
    if all(full[: len(prompt)] == prompt and whole[: len(full)] == full for prompt, full in spans):
        mask = [0] * len(whole)
        for prompt, full in spans:
            mask[len(prompt) : len(full)] = [1] * (len(full) - len(prompt))
        return [{"input_ids": whole, "completion_mask": mask}] if spans else []
    return [{"input_ids": full, "completion_mask": [0] * len(prompt) + [1] * (len(full) - len(prompt))} for prompt, full in spans]


SFT_BATCH = 4
"""Sequences (packed sessions) per SFT step, accumulated one at a time: sessions differ in length by up
to 2x, and padding them into one tensor would cost more than the batching gains on a CPU."""
SFT_SAVES = 10
"""Checkpoints the SFT stage writes over its run (``checkpoint-*`` in its folder, the last one kept), so a
killed run resumes from the latest instead of starting the epoch again."""


def sft_lm(model: str, sessions: Sequence[Sequence[dict[str, Any]]], output_dir: str | Path, epochs: int, learning_rate: float, seed: int) -> dict[str, Any]:
    """Fine-tune ``model`` (a folder, or "smollm2") with TRL's SFTTrainer on the prompt-completion rows
    of ``sessions`` (one list per session, packed by :func:`pack_session`); save model and tokenizer to
    ``output_dir``. Resumes from the newest ``checkpoint-*`` left there by a killed run. Returns the final
    loss, the sizes, and ``sft/curve``: ``[step, training loss]`` of every step."""
    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise DependencyNotInstalled("trl", "train", "The SFT stage of the lm policy") from exc
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    loaded, cuda = TransformersBackend(model), _cuda()
    examples = [example for rows in sessions for example in pack_session(rows, loaded.tokenizer)]
    args = SFTConfig(
        output_dir=str(output_dir), num_train_epochs=epochs, learning_rate=learning_rate, per_device_train_batch_size=1, gradient_accumulation_steps=SFT_BATCH,
        lr_scheduler_type="cosine", warmup_steps=0.1, logging_steps=1, save_strategy="steps", save_steps=1 / SFT_SAVES,
        save_total_limit=1, report_to=[], seed=seed, data_seed=seed, max_length=None, completion_only_loss=True, use_cpu=not cuda,
        # TRL's defaults (bf16 autocast, gradient checkpointing) are for GPUs; on a CPU without bf16 units
        # autocast is emulated and many times slower than float32, and a small model's activations fit.
        bf16=cuda, gradient_checkpointing=cuda,
    )
    trainer = SFTTrainer(model=loaded.model, args=args, train_dataset=Dataset.from_list(examples), processing_class=loaded.tokenizer)
    saved = sorted(Path(output_dir).glob("checkpoint-*"))
    result = trainer.train(resume_from_checkpoint=bool(saved))
    trainer.save_model(str(output_dir))
    loaded.tokenizer.save_pretrained(str(output_dir))
    for checkpoint in Path(output_dir).glob("checkpoint-*"):
        shutil.rmtree(checkpoint, ignore_errors=True)
    curve = [[entry["step"], entry["loss"]] for entry in trainer.state.log_history if "loss" in entry]
    return {
        "sft/loss": float(result.training_loss), "sft/rows": float(sum(map(len, sessions))), "sft/sequences": float(len(examples)),
        "sft/tokens": float(sum(len(e["input_ids"]) for e in examples)), "sft/steps": float(trainer.state.global_step), "sft/curve": curve,
    }


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()
