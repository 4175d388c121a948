"""Supervised bootstrap of a causal-LM support agent (RL-ADA's DA0 is SFT-initialised on tool-routing
demonstrations): record a teacher's (observation, action) pairs, as rows of the SFT phase every LM
trainer shares (:func:`trainers.common.sft.sft_lm`, the loss on the agent's own tokens only)."""

from __future__ import annotations

from typing import Any, Sequence


class DemoRecorder:
    """Plays like ``teacher`` and records every (chat messages, action text) pair it produced."""

    def __init__(self, teacher: Any):
        self.teacher = teacher

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"inner": self.teacher.start(profile, seed), "pairs": []}

    def act_batch(self, observations, infos, memories) -> list[str]:
        texts = self.teacher.act_batch(observations, infos, [m["inner"] for m in memories])
        for observation, text, memory in zip(observations, texts, memories):
            memory["pairs"].append([list(observation["messages"]), text])
        return texts

    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"pairs": memory["pairs"]}


def demonstration_rows(pairs: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """One call's recorded (chat messages, action) pairs as the prompt-completion rows of the shared SFT
    phase (:func:`trainers.common.sft.sft_lm`, which packs a call's rows into one sequence): the prompt is
    what the agent saw, the completion the teacher's action as the agent's own message."""
    return [
        {"prompt": [{"role": m["role"], "content": m["content"]} for m in messages], "completion": [{"role": "assistant", "content": said}]}
        for messages, said in pairs
    ]
