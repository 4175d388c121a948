"""An LLM-backed role policy: the observation's chat messages go to a backend as one batch."""

from __future__ import annotations

from typing import Any, Sequence

from dialogue_gym.backends import GenerationRequest, SamplingParams, make_backend


class LLMPolicy:
    """Plays a role with a text-generation backend.

    The game already renders each role's prompt (system message with persona / SOP, history), so
    this policy only batches the requests; the game's parser reads (and repairs or flags) the output.
    ``backend`` is a backend object or a JSON spec such as ``{"name": "transformers", "model": "smollm2"}``.
    """

    def __init__(self, backend: Any, sampling: dict[str, Any] | None = None):
        self.backend = make_backend(backend)
        self.sampling = SamplingParams(**(sampling or {}))
        self.last_outputs: list[Any] = []

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        return seed

    def act_batch(
        self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]
    ) -> list[str]:
        requests = []
        for observation, seed in zip(observations, memories):
            sampling = self.sampling
            if sampling.seed is None and seed is not None:
                sampling = SamplingParams(**{**sampling.__dict__, "seed": int(seed) + observation["turn"]})
            requests.append(GenerationRequest(messages=tuple(observation["messages"]), sampling=sampling))
        self.last_outputs = self.backend.generate(requests)
        return [output.text for output in self.last_outputs]
