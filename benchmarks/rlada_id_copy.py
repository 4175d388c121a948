"""Does RL-ADA's scratch agent clone copy the caller's account id? (issue 41 item 5: why the clone routes nothing).

    python benchmarks/rlada_id_copy.py [--calls 1000] [--sft-steps 300] [--copy-steps 0] [--held-out 60] [--out DIR]

The keyword router opens each call with ``lookup_account`` on the id of the system prompt's first line
("caller ID matched account ACC-914547"); a clone that does not copy those six digits gets
``account_not_found`` and can pass nothing. This builds ``cpu-lm-scratch``'s scratch agent model
(:func:`trainers.rlada.train.scratch_shape`), optionally trains it first for ``--copy-steps`` steps of the
trainer's copy warm-up (:mod:`trainers.rlada.id_copy`: an id, amount or card of the first sentence
copied into a JSON reply past distractor sentences and ids: does a copying head form at all, and how
fast?), then clones the router
on ``--calls`` calls with the trainer's SFT phase and settings (``trainers.common.sft.sft_lm``) and scores
every ``lookup_account`` of ``--held-out`` calls on other seeds:

* ``greedy id``: the clone's greedy reply holds the caller's id;
* ``forced digits``: teacher-forced, the share of the id's digits that are the clone's top token (chance 0.1);
* ``forced ids``: teacher-forced, the share of ids with all six digits right.

The copy warm-up's own held-out accuracy is printed after it (token share of the replies, and whole
replies right).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

TRAIN_STREAM, HELD_OUT_STREAM = 101, 202
"""Seed streams of the cloned and the scored calls (apart from the trainer's own)."""


def score_lookups(folder: Path, calls: Sequence[Sequence[Sequence[Any]]]) -> dict[str, float]:
    """Greedy and teacher-forced id copying of the model in ``folder`` at every ``lookup_account`` of ``calls``."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return score_model(tokenizer, transformers.AutoModelForCausalLM.from_pretrained(folder).eval(), calls)


def score_model(tokenizer: Any, model: Any, calls: Sequence[Sequence[Sequence[Any]]]) -> dict[str, float]:
    """:func:`score_lookups` of a loaded causal LM (``generate`` and ``model(ids).logits``)."""
    import torch

    lookups = greedy = digits_right = digits = ids_right = 0
    for pairs in calls:
        for messages, said in pairs:
            wanted = re.search(r'"account_id": "ACC-(\d{6})"', said)
            if wanted is None:
                continue
            lookups += 1
            prompt = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
            asked = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                out = model.generate(asked, max_new_tokens=48, do_sample=False, pad_token_id=tokenizer.pad_token_id)
            got = re.search(r"ACC-(\d{6})", tokenizer.decode(out[0, asked.shape[1]:], skip_special_tokens=True))
            greedy += got is not None and got.group(1) == wanted.group(1)
            full = tokenizer(prompt + said, add_special_tokens=False, return_tensors="pt")["input_ids"][0]
            with torch.no_grad():
                top = model(full[None]).logits[0].argmax(-1)
            # The reply's first six single-digit tokens: the id (digits=True makes each digit a token).
            positions = [i for i in range(asked.shape[1], len(full)) if re.fullmatch(r"\d", tokenizer.decode([int(full[i])]))][:6]
            hits = [int(top[i - 1]) == int(full[i]) for i in positions]
            digits, digits_right, ids_right = digits + len(hits), digits_right + sum(hits), ids_right + (len(hits) == 6 and all(hits))
    return {"lookups": lookups, "greedy id": greedy / max(1, lookups), "forced digits": digits_right / max(1, digits), "forced ids": ids_right / max(1, lookups)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="router calls cloned (the preset's --sft-episodes is 200)")
    parser.add_argument("--sft-steps", type=int, default=None, help="SFT steps (default: the preset's --sft-epochs)")
    parser.add_argument("--copy-steps", type=int, default=0, help="synthetic copy steps before SFT (0: none)")
    parser.add_argument("--held-out", type=int, default=60, help="calls on other seeds whose lookups are scored")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="folder for the models (default: a temporary one)")
    args = parser.parse_args(argv)

    import torch

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import sft_lm
    from trainers.rlada.config import build_config
    from trainers.rlada.sft import demonstration_rows
    from trainers.rlada.id_copy import warm_up_copying
    from trainers.rlada.train import router_calls, router_text, scratch_shape

    torch.set_num_threads(1)
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at the start; torch threads 1", flush=True)
    out = Path(args.out or tempfile.mkdtemp(prefix="rlada-id-copy-"))
    config = build_config("cpu-lm-scratch", seed=args.seed, sft_episodes=args.calls)
    sft_steps = config.sft_epochs if args.sft_steps is None else args.sft_steps
    model = out / "model"
    build_tiny_chat_model(model, **scratch_shape(config, "agent"))
    train = router_calls(config, "agent", args.calls, TRAIN_STREAM)
    if args.copy_steps:
        started = time.time()
        warmed = warm_up_copying(str(model), out / "copied", args.copy_steps, router_text(config, "agent"), args.seed)
        model = out / "copied"
        print(
            f"copy warm-up: {args.copy_steps} steps in {time.time() - started:.0f} s, held-out tokens {warmed['copy/heldout_tokens']:.3f}, "
            f"replies {warmed['copy/heldout_replies']:.3f}", flush=True,
        )
    started = time.time()
    clone = sft_lm(
        model, [demonstration_rows(pairs) for pairs in train], out / "clone", epochs=1, learning_rate=config.sft_learning_rate,
        seed=config.seed, batch_size=config.sft_batch_size, accumulation=1, max_steps=sft_steps,
    )
    print(f"SFT: {sft_steps} steps in {time.time() - started:.0f} s, last losses {[round(loss, 3) for _, loss in clone['sft/curve'][-3:]]}", flush=True)
    scores = score_lookups(out / "clone", router_calls(config, "agent", args.held_out, HELD_OUT_STREAM))
    print(json.dumps({"calls": args.calls, "copy steps": args.copy_steps, "sft steps": sft_steps, **scores}))
    print(f"load average {os.getloadavg()[0]:.2f} at the end; models in {out}")


if __name__ == "__main__":
    main()
