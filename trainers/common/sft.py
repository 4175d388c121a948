"""The ``sft`` phase every LM trainer shares: behaviour cloning of a fair scripted expert's dialogues.

The expert plays through :func:`~dialogue_gym.evaluation.evaluate`; its run is turned into training rows
by the export path (:func:`dialogue_gym.integrations.datasets.export`, what ``dialogue-gym export
--format sft`` writes), so there is one writer of SFT data. Each row's chat is cut into
prompt-completion rows, one per learner turn (:func:`conversation_rows`), packed into one sequence per
dialogue (:func:`pack_session`), and trained with TRL's ``SFTTrainer`` (:func:`sft_lm`), the loss on the
learner's own tokens only.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.errors import DependencyNotInstalled
from dialogue_gym.evaluation import evaluate


def expert_dataset(env_id: str, expert: Any, episodes: int, seed: int, folder: str | Path, env_kwargs: dict[str, Any] | None = None) -> Any:
    """``episodes`` dialogues of ``expert`` (a policy or an agent name) on ``env_id`` from ``seed``: the run
    written to ``folder/expert.jsonl`` and exported as the ``sft`` dataset ``folder/sft`` (reused when a
    killed run left it complete). Returns the ``datasets.Dataset``."""
    from dialogue_gym.integrations.datasets import _datasets, export

    folder = Path(folder)
    out = folder / "sft"
    if (out / "dataset_info.json").exists():
        return _datasets().load_from_disk(str(out))
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / "expert.jsonl"
    run.unlink(missing_ok=True)
    evaluate(env_id, expert, episodes, seed=seed, out=str(run), env_kwargs=env_kwargs)
    partial = folder / "sft.partial"
    shutil.rmtree(partial, ignore_errors=True)
    export(run, "sft", partial, env_kwargs=env_kwargs)
    partial.rename(out)  # the dataset appears whole or not at all
    return _datasets().load_from_disk(str(out))


def conversation_rows(messages: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """TRL's conversational prompt-completion rows of one chat: one per ``assistant`` message, its prompt
    every message before it."""
    return [
        {"prompt": list(messages[:index]), "completion": [message]}
        for index, message in enumerate(messages)
        if message["role"] == "assistant"
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


def sft_lm(
    model: str, sessions: Sequence[Sequence[dict[str, Any]]], output_dir: str | Path, epochs: int, learning_rate: float, seed: int,
    *, batch_size: int = 1, accumulation: int = SFT_BATCH, max_steps: int = -1,
) -> dict[str, Any]:
    """Fine-tune ``model`` (a folder, or "smollm2") with TRL's SFTTrainer on the prompt-completion rows
    of ``sessions`` (one list per session, packed by :func:`pack_session`); save model and tokenizer to
    ``output_dir``. Each optimizer step sees ``batch_size`` x ``accumulation`` sequences (padded
    together ``batch_size`` at a time: a small model runs a padded batch faster than its rows one by
    one, a large one the other way round); ``max_steps`` > 0 stops there instead of after ``epochs``.
    Resumes from the newest ``checkpoint-*`` left there by a killed run. Returns the final loss, the
    sizes, and ``sft/curve``: ``[step, training loss]`` of every step."""
    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise DependencyNotInstalled("trl", "train", "The SFT stage of the lm policy") from exc
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    loaded, cuda = TransformersBackend(model), _cuda()
    examples = [example for rows in sessions for example in pack_session(rows, loaded.tokenizer)]
    args = SFTConfig(
        output_dir=str(output_dir), num_train_epochs=epochs, learning_rate=learning_rate, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation, max_steps=max_steps,
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
