"""Stage 1: supervised fine-tuning on the reference sessions rendered in TRACER's output format.

Every reference session is replayed through the game itself (its assistant turns and its user turns,
the latter rendered as ``<think>rationale</think><intent_level>z</intent_level><reply>text</reply>``),
so each training example is exactly what the simulator will see and say in an RL episode: the user
observation before the turn, and the turn. The strategy policy learns the levels from those
observations' features; a language model learns the rendered turn with TRL's ``SFTTrainer``
(conversational prompt-completion data, loss on the completion only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

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


def sessions_for(game: TracerGame, count: int) -> tuple[ReferenceSession, ...]:
    sessions = game.references.sessions
    return sessions[:count] if count else sessions


def strategy_samples(policy: Any, game: TracerGame, count: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and reference levels of every user turn of the first ``count`` sessions (0: all)."""
    rows, levels = [], []
    for session in sessions_for(game, count):
        for observation, info, _, level in replay(game, session):
            rows.append(policy.context(observation, info, {"profile": game.episode_profile()}))
            levels.append(level)
    return np.array(rows), np.array(levels, dtype=np.int64)


def lm_dataset(game: TracerGame, count: int = 0) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows for TRL's SFTTrainer."""
    return [
        {"prompt": observation["messages"], "completion": [{"role": "assistant", "content": text}]}
        for session in sessions_for(game, count)
        for observation, _, text, _ in replay(game, session)
    ]


def sft_lm(model: str, rows: list[dict[str, Any]], output_dir: str | Path, epochs: int, learning_rate: float, seed: int) -> dict[str, float]:
    """Fine-tune ``model`` on ``rows`` with TRL's SFTTrainer; save model and tokenizer to ``output_dir``."""
    try:
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise DependencyNotInstalled("trl", "train", "The SFT stage of the lm policy") from exc
    tokenizer = AutoTokenizer.from_pretrained(model)
    args = SFTConfig(
        output_dir=str(output_dir), num_train_epochs=epochs, learning_rate=learning_rate, per_device_train_batch_size=8,
        lr_scheduler_type="cosine", warmup_steps=0.1, logging_steps=1, save_strategy="no", report_to=[], seed=seed,
        max_length=2048, use_cpu=not _cuda(),
    )
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(model), args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    result = trainer.train()
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return {"sft/loss": float(result.training_loss), "sft/samples": float(len(rows)), "sft/steps": float(trainer.state.global_step)}


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()
