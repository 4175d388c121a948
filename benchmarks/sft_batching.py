"""Time of one SFT step: calls padded into one forward pass against one call a pass with accumulation.

    python benchmarks/sft_batching.py [--model smollm2|PATH] [--calls 4] [--steps 4] [--repeats 2]
                                      [--threads 2] [--lora-rank 16] [--lora-layers 10]

Phase ``sft`` of the SEAD trainer sees ``sft_batch_size`` x ``sft_accumulation`` of the expert's calls per
optimizer step. Two layouts of the same ``--calls`` calls a step are timed through
:func:`trainers.common.sft.sft_lm`, the code phase ``sft`` runs (TRL's SFTTrainer, its collator's padding):

* ``padded``: ``--calls`` calls padded to the longest into one forward pass (batch size = calls,
  accumulation 1);
* ``accumulated``: one call a pass, ``--calls`` passes accumulated (batch size 1, accumulation = calls).

Both train the same calls (``adaptive`` on SEAD-Outbound-v0, the trainer's expert) in the same order: the
sampler's seed is the same, and step i takes the same ``--calls`` calls in either layout. Per layout and repeat, two
runs in fresh folders train 1 and 1 + ``--steps`` steps; their difference over ``--steps`` is the time of a
step without the model's loading, the trainer's setup and the final save. The layouts alternate
(padded, accumulated, accumulated, padded, ...) so that a drift of the machine's speed weighs on both.

Printed: the machine's load before and after, each run's seconds, each layout's seconds per step (mean over
repeats) and the ratio padded / accumulated, the calls' lengths in tokens, and how many more tokens padding
``--calls`` consecutive calls of the file to their longest takes (an estimate: the trainer shuffles them).
``--model`` is a plain transformers folder or "smollm2" (converted from the PyPI package's GGUF file into a
temporary folder first, about a minute).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="a plain transformers model folder, or smollm2")
    parser.add_argument("--calls", type=int, default=4, help="the expert's calls per optimizer step")
    parser.add_argument("--steps", type=int, default=4, help="timed optimizer steps per run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="torch's intra-op threads")
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--lora-layers", type=int, default=10)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from trainers.common.sft import conversation_rows, expert_dataset, pack_session, sft_lm

    print(f"load before: {' '.join(f'{value:.2f}' for value in os.getloadavg())}; torch threads {args.threads}")
    with tempfile.TemporaryDirectory(prefix="sft-batching-") as scratch:
        folder = Path(scratch)
        model = args.model
        if model == "smollm2":
            from trainers.sead.train import save_plain_model

            model = str(folder / "model")
            save_plain_model("smollm2", Path(model))
        calls = args.calls * (args.steps + 1)
        chats = expert_dataset("SEAD-Outbound-v0", "adaptive", calls, 0, folder / "expert")["messages"]
        sessions = [conversation_rows(chat) for chat in chats]
        layouts = {"padded": (args.calls, 1), "accumulated": (1, args.calls)}
        order = [name for repeat in range(args.repeats) for name in (("padded", "accumulated") if repeat % 2 == 0 else ("accumulated", "padded"))]
        per_step: dict[str, list[float]] = {name: [] for name in layouts}
        for index, name in enumerate(order):
            batch_size, accumulation = layouts[name]
            seconds = []
            for steps in (1, 1 + args.steps):
                start = time.perf_counter()
                sft_lm(
                    model, sessions, folder / f"{index}-{name}-{steps}", epochs=1, learning_rate=1e-3, seed=0, batch_size=batch_size,
                    accumulation=accumulation, max_steps=steps, lora_rank=args.lora_rank, lora_layers=args.lora_layers,
                )
                seconds.append(time.perf_counter() - start)
            per_step[name].append((seconds[1] - seconds[0]) / args.steps)
            print(f"{name:>11}: {seconds[0]:6.1f} s for 1 step, {seconds[1]:6.1f} s for {1 + args.steps}: {per_step[name][-1]:5.1f} s a step")
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        lengths = [sum(len(sequence["input_ids"]) for sequence in pack_session(rows, tokenizer)) for rows in sessions]
    print(f"load after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    mean = {name: sum(values) / len(values) for name, values in per_step.items()}
    print(f"seconds a step: padded {mean['padded']:.1f}, accumulated {mean['accumulated']:.1f}; padded / accumulated {mean['padded'] / mean['accumulated']:.2f}")
    print(
        f"calls of {min(lengths)}-{max(lengths)} tokens (mean {sum(lengths) / len(lengths):.0f}); padded to the longest of each "
        f"{args.calls} in a row (the file's order; the trainer shuffles), they take {padding_share(lengths, args.calls):.0%} more tokens"
    )


def padding_share(lengths: list[int], group: int) -> float:
    """Padded tokens over real ones when ``lengths`` are padded to their group's longest, ``group`` at a time in order."""
    groups = [lengths[start : start + group] for start in range(0, len(lengths), group)]
    return sum(max(chunk) * len(chunk) - sum(chunk) for chunk in groups) / sum(lengths)


if __name__ == "__main__":
    main()
