"""CPU-only smoke run of the verl agent loops, without verl: every id and role plays dialogues with a tiny
random chat model behind a local stand-in of verl's rollout server (the same ``generate`` contract:
prompt token ids in, generated ids and logprobs out), and prints what each loop would hand verl.

    python recipes/verl/cpu_smoke.py [--dialogues 2] [--max-turn-tokens 16]

Checks the env side of a verl run (agent loop configs, rows, token and mask assembly, rewards) in seconds
on a laptop, before a GPU is involved; benchmarks/gpu_verl_check.sh is the GPU step.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from types import SimpleNamespace

SHORT = {"SEAD-Outbound-v0": {"max_agent_turns": 3}, "TRACER-UserSim-v0": {"max_user_turns": 3}, "DMBench-Assistant-v0": {"max_user_turns": 3},
         "RLADA-Banking-v0": {"max_agent_turns": 3}, "RLADA-Customer-v0": {"max_agent_turns": 3}}


class LocalRolloutServer:
    """verl's ``server_manager.generate`` on a transformers model: sampled ids and their logprobs."""

    def __init__(self, model, seed: int = 0):
        self.model, self.seed = model, seed

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        import torch

        torch.manual_seed(hash((self.seed, request_id, len(prompt_ids))) % 2**31)
        inputs = torch.tensor([prompt_ids])
        with torch.no_grad():
            out = self.model.generate(inputs, attention_mask=torch.ones_like(inputs), do_sample=True, temperature=float(sampling_params.get("temperature", 1.0)),
                                      max_new_tokens=int(sampling_params["max_tokens"]), output_scores=True, return_dict_in_generate=True)
        ids = out.sequences[0, len(prompt_ids):].tolist()
        logprobs = [torch.log_softmax(score[0], -1)[i].item() for score, i in zip(out.scores, ids)]
        return SimpleNamespace(token_ids=ids, log_probs=logprobs, stop_reason="completed", extra_fields={})


def smoke(dialogues: int = 2, max_turn_tokens: int = 16, response_length: int = 512) -> list[dict]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from dialogue_gym.integrations.verl import (
        agent_loop_configs,
        dataset_rows,
        play_dialogue,
    )

    folder = build_tiny_chat_model(tempfile.mkdtemp(prefix="verl_smoke_"))
    tokenizer, model = AutoTokenizer.from_pretrained(str(folder)), AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    server = LocalRolloutServer(model)
    report = []
    for loop in agent_loop_configs(SHORT, max_turn_tokens):
        rows = dataset_rows(loop["env_id"], dialogues, seed=7, learner=loop["learner"], env_kwargs=loop["env_kwargs"])

        async def run(rows=rows, loop=loop):
            return await asyncio.gather(*(
                play_dialogue(server, tokenizer, loop["env_id"], episode=row["extra_info"]["env_episode"], seed=row["extra_info"]["env_seed"],
                              learner=loop["learner"], env_kwargs=loop["env_kwargs"], sampling_params={"temperature": 1.0},
                              response_length=response_length, max_turn_tokens=loop["max_turn_tokens"], request_id=f"{loop['name']}#{k}", raw_prompt=row["prompt"])
                for k, row in enumerate(rows)))

        for out in asyncio.run(run()):
            report.append({"loop": loop["name"], "prompt": len(out.prompt_ids), "response": len(out.response_ids), "learner_tokens": sum(out.response_mask),
                           "reward": out.reward, "outcome": out.outcome, "stopped": out.stopped})
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=2)
    parser.add_argument("--max-turn-tokens", type=int, default=16)
    args = parser.parse_args(argv)
    for row in smoke(args.dialogues, args.max_turn_tokens):
        print(" ".join(f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
