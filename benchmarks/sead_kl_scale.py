"""How far RL moved the LM from its SFT clone, on the scale of the GRPO surrogate (issue 41 item 2): what
``kl_coef`` must be set against.

On the sampled turns of one saved decision-point iteration of a run folder (``--run``, ``--iteration``:
its ``trajectories.jsonl``, G = 8 copies per point), for each ``--checkpoint`` it prints the per-token k3
estimate of KL(policy || SFT) that ``grpo_loss`` adds times ``kl_coef``, and the mean |log ratio| of the
two models, both at the rollout temperature; and, for the same tokens, the mean |advantage| the surrogate
weights them by. The k3 term's gradient per token is ``kl_coef * (1 - exp(ref - new))``, about ``kl_coef`` x
the log ratio, so ``kl_coef`` x |log ratio| beside the mean |advantage| says how hard the KL pulls back
against how hard the surrogate pushes. One torch thread; no updates.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a SEAD decision-point run folder (trajectories.jsonl)")
    parser.add_argument("--iteration", type=int, required=True, help="the iteration whose sampled turns are scored")
    parser.add_argument("--sft", required=True, help="the SFT checkpoint (the KL reference)")
    parser.add_argument("--checkpoint", action="append", required=True, help="an RL checkpoint (repeatable)")
    parser.add_argument("--temperature", type=float, default=2.0, help="the rollout temperature (the preset's 2.0)")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--kl-coefs", default="0.05,0.2,1", help="kl_coef values to print the pull of")
    parser.add_argument("--json", type=Path, help="also save the rows here")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from trainers.common.rundir import RunDir
    from trainers.grpo.decision_point import group_samples
    from trainers.grpo.lm import (
        CausalLMPolicy,
        GRPOConfig,
        build_batch,
        pack_turns,
        token_logprobs,
    )

    done = RunDir(args.run).completed_episodes(args.iteration)
    if not done:
        raise SystemExit(f"{args.run} holds no trajectories of iteration {args.iteration}; pass an iteration it saved.")
    samples, _ = group_samples([done[e] for e in sorted(done)], args.group_size, "agent")
    tokens = sum(len(s.completion_ids) for s in samples)
    advantage = sum(abs(s.advantages[0]) * len(s.advantages) for s in samples) / tokens
    config = GRPOConfig(kl_coef=0.0, temperature=args.temperature)
    reference = CausalLMPolicy(args.sft, config)
    sequences = pack_turns(samples)

    def scores(model, chunk):
        ids, attention, mask, _, _ = build_batch(chunk, reference._pad)
        with torch.no_grad():
            return token_logprobs(model, ids, attention, args.temperature), mask

    rows = []
    for checkpoint in args.checkpoint:
        policy = CausalLMPolicy(checkpoint, config)
        k3 = gap = 0.0
        for start in range(0, len(sequences), 16):
            new, mask = scores(policy.model, sequences[start : start + 16])
            ref, _ = scores(reference.model, sequences[start : start + 16])
            delta = ref - new
            k3 += float(((torch.exp(delta) - delta - 1) * mask).sum())
            gap += float((delta.abs() * mask).sum())
        rows.append({"checkpoint": checkpoint, "k3_kl_per_token": k3 / tokens, "mean_abs_log_ratio": gap / tokens})
    coefs = [float(c) for c in args.kl_coefs.split(",")]
    print(f"{len(samples)} sampled turns ({tokens} tokens) of {args.run} iteration {args.iteration}, T = {args.temperature:g}; "
          f"mean |advantage| per token {advantage:.3f}; load average {os.getloadavg()[0]:.2f}\n")
    print("| checkpoint | k3 KL per token | mean abs log ratio | " + " | ".join(f"pull at kl_coef {c:g}" for c in coefs) + " |")
    print("|---|---|---|" + "---|" * len(coefs))
    for row in rows:
        pulls = " | ".join(f"{c * row['mean_abs_log_ratio']:.4f}" for c in coefs)
        print(f"| {row['checkpoint']} | {row['k3_kl_per_token']:.4f} | {row['mean_abs_log_ratio']:.4f} | {pulls} |")
    result = {"run": str(args.run), "iteration": args.iteration, "sft": args.sft, "temperature": args.temperature, "tokens": tokens,
              "mean_abs_advantage": advantage, "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
