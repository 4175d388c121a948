"""The ``sft`` phase every LM trainer shares: behaviour cloning of a fair scripted expert's dialogues.

The expert plays through :func:`~dialogue_gym.evaluation.evaluate`; its run is turned into training rows
by the export path (:func:`dialogue_gym.integrations.datasets.export`, what ``dialogue-gym export
--format sft`` writes), so there is one writer of SFT data. Each row's chat is cut into
prompt-completion rows, one per learner turn (:func:`conversation_rows`), packed into one sequence per
dialogue (:func:`pack_session`), and trained with TRL's ``SFTTrainer`` (:func:`sft_lm`), the loss on the
learner's own tokens only.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.evaluation import evaluate
from trainers.common.atomic import DiskFullError, disk_full_guard, fsync_tree, latest_complete_checkpoint, write_json
from trainers.common.rundir import RunFolderError


def expert_dataset(env_id: str, expert: Any, episodes: int, seed: int, folder: str | Path, env_kwargs: dict[str, Any] | None = None) -> Any:
    """``episodes`` dialogues of ``expert`` (a policy or an agent name) on ``env_id`` from ``seed``: the run
    written to ``folder/expert.jsonl`` and exported as the ``sft`` dataset ``folder/sft`` (reused when a
    killed run left it complete). Returns the ``datasets.Dataset``."""
    from dialogue_gym.integrations.datasets import export

    folder = Path(folder)
    out = folder / "sft"
    if (out / "dataset_info.json").exists():
        return _load_dataset(out)
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / "expert.jsonl"
    run.unlink(missing_ok=True)
    evaluate(env_id, expert, episodes, seed=seed, out=str(run), env_kwargs=env_kwargs)
    partial = folder / "sft.partial"
    shutil.rmtree(partial, ignore_errors=True)
    export(run, "sft", partial, env_kwargs=env_kwargs)
    fsync_tree(partial)
    partial.rename(out)  # the dataset appears whole or not at all
    return _load_dataset(out)


def _load_dataset(folder: Path) -> Any:
    """The dataset saved in ``folder``; a truncated or damaged one is a RunFolderError naming it and the fix."""
    from dialogue_gym.integrations.datasets import _datasets

    try:
        return _datasets().load_from_disk(str(folder))
    except Exception as exc:  # ArrowInvalid, JSONDecodeError, OSError, ...: whatever the damage, the fix is the same
        raise RunFolderError(
            f"The SFT dataset {folder} is truncated or damaged ({type(exc).__name__}: {' '.join(str(exc).split())[:120]}); "
            "delete that folder and resume: the expert's dialogues are played and exported again."
        ) from exc


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
    fraction of the tokens (causal attention: a token never sees what follows it). A row whose prompt
    does not extend the previous row's conversation (a DAgger row, whose history holds what the learner
    said rather than the label; a template that rewrites earlier turns) starts a new sequence."""
    sequences: list[dict[str, list[int]]] = []
    for row in rows:
        prompt = _chat_ids(tokenizer, row["prompt"], generation_prompt=True)
        full = _chat_ids(tokenizer, [*row["prompt"], *row["completion"]], generation_prompt=False)
        last = sequences[-1] if sequences else None
        if last is not None and full[: len(prompt)] == prompt and prompt[: len(last["input_ids"])] == last["input_ids"]:
            last["completion_mask"] += [0] * (len(prompt) - len(last["input_ids"])) + [1] * (len(full) - len(prompt))
            last["input_ids"] = full
        else:
            sequences.append({"input_ids": full, "completion_mask": [0] * len(prompt) + [1] * (len(full) - len(prompt))})
    return sequences


SFT_BATCH = 4
"""Sequences (packed sessions) per SFT step, accumulated one at a time: sessions differ in length by up
to 2x, and padding them into one tensor would cost more than the batching gains on a CPU."""
SFT_SAVES = 10
"""Checkpoints the SFT stage writes over its run (``checkpoint-*`` in its folder, the last one kept), so a
killed run resumes from the latest instead of starting the epoch again."""


def plain_head_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
    """The summed next-token cross-entropy of ``inputs["labels"]`` (-100 where not scored) from the model's
    full logits, over ``num_items_in_batch`` (the scored tokens of the whole accumulated step, as TRL and
    ``Trainer`` count them) or, without it, this batch's scored tokens: TRL's SFT loss, computed plainly."""
    import torch

    outputs = model(**{key: value for key, value in inputs.items() if key != "labels"}, use_cache=False)
    targets = inputs["labels"][:, 1:]  # the logits at i predict token i + 1
    summed = torch.nn.functional.cross_entropy(
        outputs.logits[:, :-1].flatten(0, 1).float(), targets.flatten(), ignore_index=-100, reduction="sum"
    )
    count = (targets != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return summed / torch.as_tensor(count).clamp(min=1)


def _plain_head_sft_trainer() -> type:
    """TRL's SFTTrainer with :func:`plain_head_loss` in place of its fused LM head, for CPU runs.

    Why: TRL projects through the LM head in tiles with a backward of its own, which spares a GPU the
    ``(batch, length, vocabulary)`` logits; on a CPU, for the 4-layer scratch models (hidden size 128,
    vocabulary 2,048), that head took 52% of each SFT step (py-spy) and a step of RL-ADA's copy warm-up ran
    1.6 s through it against 0.93 s in a plain loop over the same lines (20 steps of 32, one thread).
    The logits of a CPU batch fit easily, and a CPU run is one process (TRL's
    scaling across ranks does not arise). It logs the loss only (no token accuracy or entropy, which
    nothing here reads). A test checks that both heads give the same loss."""
    from trl import SFTTrainer

    class PlainHeadSFTTrainer(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if return_outputs:  # evaluation asks for the logits: TRL's own path gives them
                return super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
            return plain_head_loss(model, inputs, num_items_in_batch)

    return PlainHeadSFTTrainer


def sft_lm(
    model: str, sessions: Sequence[Sequence[dict[str, Any]]], output_dir: str | Path, epochs: int, learning_rate: float, seed: int,
    *, batch_size: int = 1, accumulation: int = SFT_BATCH, max_steps: int = -1, lora_rank: int = 0, lora_layers: int = 0,
    schedule: str = "cosine",
) -> dict[str, Any]:
    """Fine-tune ``model`` (a folder, or "smollm2") with TRL's SFTTrainer on the prompt-completion rows
    of ``sessions`` (one list per session, packed by :func:`pack_session`); save model and tokenizer to
    ``output_dir``. Each optimizer step sees ``batch_size`` x ``accumulation`` sequences (padded
    together ``batch_size`` at a time: a small model runs a padded batch faster than its rows one by
    one, a large one the other way round); ``max_steps`` > 0 stops there instead of after ``epochs``.
    ``lora_rank`` > 0 trains LoRA adapters on every linear layer (alpha 2 x rank, as the RL phase's) and
    saves the model with them merged in, so every later phase loads a plain model folder; ``lora_layers``
    > 0 adapts only the decoder's top ``lora_layers`` layers (:func:`lora_config`). ``schedule`` is the
    learning rate's after a 10% warm-up (a transformers scheduler name: "cosine", "constant_with_warmup").
    Resumes from the newest ``checkpoint-*`` left there by a killed run. Returns the final loss, the
    sizes, and ``sft/curve``: ``[step, training loss]`` of every step."""
    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise DependencyNotInstalled("trl", "train", "The SFT stage of the lm policy") from exc
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    inputs = {
        "model": str(model), "sessions": _digest(sessions), "epochs": epochs, "learning_rate": learning_rate, "seed": seed,
        "batch_size": batch_size, "accumulation": accumulation, "max_steps": max_steps,
        # Only when set: a full fine-tune's record stays the one runs made before LoRA existed, so they resume.
        **({"lora_rank": lora_rank} if lora_rank else {}),
        **({"lora_layers": lora_layers} if lora_layers else {}),
        **({"schedule": schedule} if schedule != "cosine" else {}),
    }
    finished = finished_sft(output_dir, inputs)
    if finished is not None:
        return finished
    loaded, cuda = TransformersBackend(model), _cuda()
    examples = [example for rows in sessions for example in pack_session(rows, loaded.tokenizer)]
    args = SFTConfig(
        output_dir=str(output_dir), num_train_epochs=epochs, learning_rate=learning_rate, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation, max_steps=max_steps,
        lr_scheduler_type=schedule, warmup_steps=0.1, logging_steps=1, save_strategy="steps", save_steps=1 / SFT_SAVES,
        save_total_limit=1, report_to=[], seed=seed, data_seed=seed, max_length=None, completion_only_loss=True, use_cpu=not cuda,
        # TRL's defaults (bf16 autocast, gradient checkpointing) are for GPUs; on a CPU without bf16 units
        # autocast is emulated and many times slower than float32, and a small model's activations fit.
        bf16=cuda, gradient_checkpointing=cuda,
    )
    trainer = (SFTTrainer if cuda else _plain_head_sft_trainer())(
        model=loaded.model, args=args, train_dataset=Dataset.from_list(examples), processing_class=loaded.tokenizer,
        peft_config=lora_config(loaded.model, lora_rank, lora_layers) if lora_rank else None,
    )
    # A checkpoint-N that a kill or a full disk cut short is removed (one warning line), and training
    # resumes from the complete one before it.
    resume = latest_complete_checkpoint(output_dir)
    try:
        with disk_full_guard(output_dir):
            result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
            if lora_rank:
                trainer.model.merge_and_unload().save_pretrained(str(output_dir))
            else:
                trainer.save_model(str(output_dir))
            loaded.tokenizer.save_pretrained(str(output_dir))
    except DiskFullError:
        latest_complete_checkpoint(output_dir)  # frees what the cut-short checkpoint took
        raise
    curve = [[entry["step"], entry["loss"]] for entry in trainer.state.log_history if "loss" in entry]
    # The mean over every step's logged loss (the history resumes with the checkpoint), not TRL's
    # training_loss, which averages only the steps of the last (resumed) session.
    loss = sum(value for _, value in curve) / len(curve) if curve else float(result.training_loss)
    metrics = {
        "sft/loss": float(loss), "sft/rows": float(sum(map(len, sessions))), "sft/sequences": float(len(examples)),
        "sft/tokens": float(sum(len(e["input_ids"]) for e in examples)), "sft/steps": float(trainer.state.global_step), "sft/curve": curve,
    }
    fsync_tree(Path(output_dir))
    write_json(Path(output_dir) / SFT_FINISHED, {"inputs": inputs, "metrics": metrics})
    for checkpoint in Path(output_dir).glob("checkpoint-*"):
        shutil.rmtree(checkpoint, ignore_errors=True)
    return metrics


def lora_config(model: Any, rank: int, top_layers: int = 0) -> Any:
    """peft's LoraConfig of every phase that trains adapters: rank ``rank``, alpha 2 x rank, on every
    linear layer of the decoder, or with ``top_layers`` > 0 only of its last ``top_layers`` layers.
    Backpropagation then stops at the lowest adapted layer: a LoRA step of SmolLM2 (30 layers) on one
    1,067-token SEAD call took 15.2 s with every layer adapted and 7.4 s with the top 10, on one idle
    core (6.6 s and 4.1 s with two threads)."""
    try:
        import peft
    except ImportError as exc:
        raise DependencyNotInstalled("peft", "train", "LoRA fine-tuning (lora_rank > 0)") from exc
    if not top_layers:
        return peft.LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear", task_type="CAUSAL_LM")
    layers = int(model.config.num_hidden_layers)
    if not 0 < top_layers <= layers:
        raise ConfigError(f"lora_layers={top_layers}, but the model has {layers} decoder layers; pass 1 to {layers}, or 0 to adapt them all.")
    linear = _torch().nn.Linear
    # The linear layers inside the numbered decoder layers ("model.layers.12.mlp.up_proj"): not the head.
    targets = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, linear) and re.search(r"\.layers\.\d+\.", name)})
    return peft.LoraConfig(
        r=rank, lora_alpha=2 * rank, target_modules=targets, layers_to_transform=list(range(layers - top_layers, layers)), task_type="CAUSAL_LM",
    )


SFT_FINISHED = "sft_finished.json"
"""Written into an SFT stage's folder once its model is saved whole: what it was trained on and the
stage's metrics. A run killed or crashed after this (in the agreement, a DAgger round or an
evaluation) resumes without training the model again (an hour of CPU for the 1,800-step clone)."""


def finished_sft(output_dir: str | Path, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The metrics of an SFT stage already finished in ``output_dir`` on the same ``inputs``, or None
    (not finished, or finished on other inputs: then it trains again)."""
    marker = Path(output_dir) / SFT_FINISHED
    try:
        saved = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("inputs") != inputs:
        return None
    for checkpoint in Path(output_dir).glob("checkpoint-*"):  # left by a kill between the marker and their removal
        shutil.rmtree(checkpoint, ignore_errors=True)
    print(f"sft: {output_dir} already holds this stage's model ({SFT_FINISHED}); not training it again", file=sys.stderr)
    return saved["metrics"]


def _digest(sessions: Sequence[Sequence[dict[str, Any]]]) -> str:
    return hashlib.sha256(json.dumps(sessions, sort_keys=True, ensure_ascii=True, default=str).encode()).hexdigest()


AGREEMENT_BATCH = 16
"""Most dialogues per forward pass of :func:`teacher_forced_agreement`."""
AGREEMENT_LOGITS = 2**26
"""Most logits (rows x padded length x vocabulary) one forward pass of :func:`teacher_forced_agreement`
may hold, 256 MB of float32. A pass returns every position's logits over the whole vocabulary: SmolLM2's
49,152 tokens over 16 padded SEAD calls of up to 1,600 tokens are 5 GB, and its 80-call agreement took 14
min on the 2-core machine where a call's forward pass takes about 1 s. The scratch model's passes stay
at AGREEMENT_BATCH rows."""


def agreement_batches(lengths: Sequence[int], vocab: int) -> list[range]:
    """Consecutive runs of the dialogues of ``lengths`` (token counts) scored in one forward pass each:
    at most AGREEMENT_BATCH, and as many as keep rows x longest x ``vocab`` within AGREEMENT_LOGITS (one
    dialogue alone may exceed it)."""
    batches: list[range] = []
    first = 0
    while first < len(lengths):
        end, longest = first + 1, lengths[first]
        while end < len(lengths) and end - first < AGREEMENT_BATCH and (end - first + 1) * max(longest, lengths[end]) * vocab <= AGREEMENT_LOGITS:
            longest = max(longest, lengths[end])
            end += 1
        batches.append(range(first, end))
        first = end
    return batches


def turn_spans(tokenizer: Any, messages: Sequence[dict[str, str]]) -> tuple[list[int], list[tuple[int, int]]]:
    """The token ids of the whole chat ``messages`` and, per ``assistant`` message, the span ``(start,
    end)`` of its completion in them: its content and the end-of-turn token (what greedy decoding must
    produce before it stops), without what the template adds after that. Raises ConfigError where the
    template does not render the chat's prefixes stably (then no single sequence scores every turn)."""
    whole = _chat_ids(tokenizer, messages, generation_prompt=False)
    spans = []
    for row in conversation_rows(messages):
        prompt = _chat_ids(tokenizer, row["prompt"], generation_prompt=True)
        full = _chat_ids(tokenizer, [*row["prompt"], *row["completion"]], generation_prompt=False)
        if whole[: len(full)] != full or full[: len(prompt)] != prompt:
            raise ConfigError(
                f"The chat template of {type(tokenizer).__name__} renders a prefix of this chat differently from the whole chat "
                f"(at its assistant turn {len(spans)}), so teacher-forced scoring of one sequence would show the model another history; "
                "score with a template that only appends (a ChatML-style one)."
            )
        end = full.index(tokenizer.eos_token_id, len(prompt)) + 1 if tokenizer.eos_token_id in full[len(prompt) :] else len(full)
        spans.append((len(prompt), end))
    return whole, spans


def teacher_forced_agreement(
    model: Any, tokenizer: Any, chats: Sequence[Sequence[dict[str, str]]], max_new_tokens: int, utterance_end: str | None = None,
) -> dict[str, Any]:
    """How often ``model`` says the teacher's turn, with the history as the teacher saw it.

    Each chat of the teacher (its system prompt, what it heard, what it said) is one forward pass; a
    learner turn agrees when the model's most likely next token is the teacher's at every position of
    the turn, its end-of-turn token included, and the turn fits in ``max_new_tokens``: exactly when
    greedy decoding from that history says the teacher's turn token for token. Returns
    ``agreement`` (over all turns), ``agreement_per_turn`` and ``turns_per_turn`` (by 0-based learner
    turn), ``too_long`` (the share of turns longer than ``max_new_tokens``) and ``turns``. With
    ``utterance_end`` (a tag of the turn's format, e.g. SEAD's ``</response>``, one token or several) also
    ``utterance_agreement`` and ``utterance_agreement_per_turn``: the turn agrees up to and including
    that token (what was said, whatever the rest of the turn estimates)."""
    if utterance_end is not None and (not isinstance(utterance_end, str) or not utterance_end):
        raise ConfigError(f"utterance_end={utterance_end!r} is not a tag of the turn format; pass e.g. '</response>', or None.")
    torch = _torch()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    agree: list[list[bool]] = []
    said_agree: list[list[bool]] = []
    too_long = 0
    model.eval()
    encoded = [turn_spans(tokenizer, chat) for chat in chats]
    # The logits' width; a duck-typed model without a transformers config is scored AGREEMENT_BATCH at a time.
    vocab = getattr(getattr(model, "config", None), "vocab_size", None) or 1
    for rows in agreement_batches([len(ids) for ids, _ in encoded], vocab):
        batch = encoded[rows.start : rows.stop]
        length = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), length), pad, dtype=torch.long)
        attention = torch.zeros((len(batch), length), dtype=torch.long)
        for row, (ids, _) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            attention[row, : len(ids)] = 1
        with torch.no_grad():
            predicted = model(input_ids=input_ids.to(model.device), attention_mask=attention.to(model.device)).logits.argmax(-1).cpu()
        for row, (ids, spans) in enumerate(batch):
            for turn, (start, end) in enumerate(spans):
                fits = end - start <= max_new_tokens
                too_long += not fits
                hits = [p == t for p, t in zip(predicted[row, start - 1 : end - 1].tolist(), ids[start:end])]
                if len(agree) <= turn:
                    agree.append([])
                    said_agree.append([])
                agree[turn].append(fits and all(hits))
                if utterance_end is not None:
                    stop = utterance_stop(tokenizer, ids[start:end], utterance_end)
                    said_agree[turn].append(stop <= max_new_tokens and all(hits[:stop]))
    turns = sum(map(len, agree))
    result = {
        "agreement": sum(map(sum, agree)) / max(1, turns), "agreement_per_turn": [sum(a) / len(a) for a in agree],
        "turns_per_turn": [len(a) for a in agree], "too_long": too_long / max(1, turns), "turns": turns,
    }
    if utterance_end is not None:
        result["utterance_agreement"] = sum(map(sum, said_agree)) / max(1, turns)
        result["utterance_agreement_per_turn"] = [sum(a) / len(a) for a in said_agree]
    return result


def utterance_stop(tokenizer: Any, turn_ids: Sequence[int], utterance_end: str) -> int:
    """How many of a turn's tokens it takes to say ``utterance_end``: the shortest prefix whose text
    holds the tag (all of them if none does). Found in the decoded text, not as one token id, because a
    pretrained tokenizer splits a tag such as ``</response>`` into several tokens (SmolLM2: 5), and
    how it splits depends on the text before it."""
    for count in range(1, len(turn_ids) + 1):
        if utterance_end in tokenizer.decode(turn_ids[:count]):
            return count
    return len(turn_ids)


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise DependencyNotInstalled("torch", "train", "Teacher-forced agreement") from exc
    return torch


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()
