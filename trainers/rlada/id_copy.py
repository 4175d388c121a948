"""The copy warm-up of RL-ADA's scratch agent (issue 41): before it clones the keyword router, the model
learns on synthetic lines to repeat a value of its prompt in a JSON reply.

Why: the router opens each call with ``lookup_account`` on the caller's account id from the system
prompt's first line, and a scratch clone that does not copy those six digits gets
``account_not_found`` and can pass nothing; cloning alone never formed a copying head (docs/training.md,
"TRACER's user LM and RL-ADA's agent from scratch"). These lines formed one in 2,000 steps when
``benchmarks/rlada_id_copy.py`` trained them in a bare loop of its own (constant rate, no chat template);
through this phase (the shared SFT phase) the same 2,000 steps came out weaker in the preset's saved run.

A line's first sentence holds an account id, a card id or an amount; the reply repeats it after 2-7 of
the router's own sentences and up to two distractor values of the other kinds, so copying the right
value (not the nearest, not a memorised one) is the only way to the reply.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Sequence

COPY_BATCH = 32
"""Lines per optimizer step."""
COPY_LEARNING_RATE = 1e-3
"""AdamW rate, constant after a 10% warm-up: the constant rate at which the benchmark's bare loop formed a
copying head (cloning's cosine decay would spend half the steps at low rates before the head forms)."""
HELD_OUT_LINES = 200
"""Lines on their own seeds whose replies the phase scores after training."""
LINES_STREAM, HELD_OUT_STREAM = 1, 2
"""Seed streams of the training and the held-out lines."""


def _digits(rng: random.Random, count: int) -> str:
    return "".join(str(rng.randrange(10)) for _ in range(count))


def copy_line(rng: random.Random, sentences: Sequence[str], names: Sequence[str]) -> tuple[str, str]:
    """One synthetic ``(prompt, reply)``: the first sentence holds a value that the JSON reply repeats,
    after 2-7 of ``sentences`` and up to two distractor values of the other kinds."""
    kind = rng.randrange(3)
    account, card, amount = _digits(rng, 6), _digits(rng, 4), f"{rng.randrange(1, 999)}.{_digits(rng, 2)}"
    first = (
        f"The caller is {rng.choice(names)}; caller ID matched account ACC-{account}.",
        f"The card on file is CARD-{card}.",
        f"I was charged ${amount} twice.",
    )[kind]
    distractors = [f"e.g. ACC-{_digits(rng, 6)}.", f"Card CARD-{_digits(rng, 4)} is active.", f"A payment of ${rng.randrange(1, 999)}.{_digits(rng, 2)} posted."]
    middle = [*rng.sample(list(sentences), rng.randrange(2, 8)), *rng.sample(distractors, rng.randrange(0, 3))]
    rng.shuffle(middle)
    reply = (f'{{"account_id": "ACC-{account}"}}', f'{{"card_id": "CARD-{card}"}}', f'{{"amount": {amount}}}')[kind]
    return " ".join([first, *middle]), reply


def copy_material(texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """The sentences (10 to 160 characters, no account id) and the callers' names of ``texts`` (what the
    router and its customer said), sorted: what :func:`copy_line` builds its lines from."""
    sentences = sorted({s.strip() for text in texts for s in re.split(r"(?<=[.?!])\s+", text) if 10 < len(s.strip()) < 160 and "ACC-" not in s})
    names = sorted({match.group(1) for text in texts for match in re.finditer(r"The caller is ([^;]+);", text)})
    return sentences, names


def copy_sessions(count: int, sentences: Sequence[str], names: Sequence[str], rng: random.Random) -> list[list[dict[str, Any]]]:
    """``count`` copy lines as sessions of the shared SFT phase: one prompt-completion row each, the line
    as the system message (where a call's account id stands), the reply as the agent's."""
    sessions = []
    for _ in range(count):
        prompt, reply = copy_line(rng, sentences, names)
        sessions.append([{"prompt": [{"role": "system", "content": prompt}], "completion": [{"role": "assistant", "content": reply}]}])
    return sessions


def warm_up_copying(model: str, output_dir: str | Path, steps: int, texts: Sequence[str], seed: int) -> dict[str, Any]:
    """Train ``model`` for ``steps`` steps of :data:`COPY_BATCH` fresh copy lines built from ``texts``
    (the shared SFT phase with ``seed``: resumable, saved to ``output_dir``), then score :data:`HELD_OUT_LINES` lines on
    other seeds. Returns ``copy/loss``, ``copy/steps``, ``copy/curve`` and ``copy/heldout_tokens`` /
    ``copy/heldout_replies`` (share of reply tokens, and of whole replies, that are the top token)."""
    from dialogue_gym.seeding import mix_seed
    from trainers.common.sft import sft_lm

    sentences, names = copy_material(texts)
    sessions = copy_sessions(steps * COPY_BATCH, sentences, names, random.Random(mix_seed(seed, LINES_STREAM)))
    trained = sft_lm(
        model, sessions, output_dir, epochs=1, learning_rate=COPY_LEARNING_RATE, seed=seed, batch_size=COPY_BATCH,
        accumulation=1, max_steps=steps, schedule="constant_with_warmup",
    )
    held_out = copy_sessions(HELD_OUT_LINES, sentences, names, random.Random(mix_seed(seed, HELD_OUT_STREAM)))
    tokens, replies = held_out_copying(output_dir, held_out)
    return {
        "copy/loss": trained["sft/loss"], "copy/steps": trained["sft/steps"], "copy/curve": trained["sft/curve"],
        "copy/heldout_tokens": tokens, "copy/heldout_replies": replies,
    }


def held_out_copying(folder: str | Path, sessions: Sequence[Sequence[dict[str, Any]]]) -> tuple[float, float]:
    """:func:`copy_accuracy` of the model in ``folder`` on ``sessions`` (rows as :func:`copy_sessions`'s),
    each rendered as the SFT phase trains it, right-padded in one batch (as TRL pads: the positions the
    model was trained at)."""
    import torch
    import transformers

    from trainers.common.sft import pack_session

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    packed = [sequence for rows in sessions for sequence in pack_session(rows, tokenizer)]
    width, pad = max(len(p["input_ids"]) for p in packed), tokenizer.pad_token_id
    inputs = torch.tensor([p["input_ids"] + [pad] * (width - len(p["input_ids"])) for p in packed])
    targets = torch.tensor([
        [t if m else -100 for t, m in zip(p["input_ids"], p["completion_mask"])] + [-100] * (width - len(p["input_ids"])) for p in packed
    ])
    with torch.no_grad():  # no attention mask needed: a real token never attends to the padding after it
        logits = model(input_ids=inputs).logits
    return copy_accuracy(logits, targets)


def copy_accuracy(logits: Any, targets: Any) -> tuple[float, float]:
    """``(share of reply tokens that are the top token, share of replies with every token so)`` of
    labels ``targets`` (-100 outside the replies) under the model's ``logits``."""
    predicted, wanted = logits[:, :-1].argmax(-1), targets[:, 1:]  # the logits at i predict token i + 1
    scored = wanted != -100
    right = (predicted == wanted) & scored
    return right.sum().item() / scored.sum().item(), (right | ~scored).all(1).float().mean().item()
