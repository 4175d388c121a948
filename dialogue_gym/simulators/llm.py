"""An LLM-backed role policy: the observation's chat messages go to a backend as one batch."""

from __future__ import annotations

import re
from typing import Any, Sequence

from dialogue_gym.backends import GenerationRequest, SamplingParams, make_backend
from dialogue_gym.errors import BackendError, ConfigError

_CLOSING_TAG = re.compile(r"</(\w+)>")


def restore_closing_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` with a closing-tag stop string written back where the backend cut it off.

    Backends end an output *before* a stop string and drop it (as OpenAI-compatible servers do). A
    role whose format ends in a tag (``</status>``) is stopped at that tag, so the record ends where
    it should instead of running on; the tag belongs to the record, so it is put back when the text
    ends inside the tag it closes (an opening ``<status>`` after the last ``</status>``)."""
    for candidate in stop:
        closing = _CLOSING_TAG.fullmatch(candidate)
        if closing is None:
            continue
        opening = f"<{closing.group(1)}>"
        if text.rfind(opening) > text.rfind(candidate):
            return text.rstrip() + candidate
    return text


class LLMPolicy:
    """Plays a role with a text-generation backend.

    The game already renders each role's prompt (system message with persona / SOP, history), so
    this policy only batches the requests; the game's parser reads (and repairs or flags) the output.
    ``backend`` is a backend object or a JSON spec such as ``{"name": "transformers", "model": "smollm2"}``.
    ``sampling`` are :class:`~dialogue_gym.backends.SamplingParams` fields; a closing-tag ``stop``
    string is written back into the text it ended (:func:`restore_closing_stop`).

    A backend may give up on single requests (``GenerationOutput.error``, after its bounded retries).
    :meth:`act_batch_with_errors` returns those causes beside the texts, and the env driver aborts the
    affected episodes with them; :meth:`act_batch` raises :class:`~dialogue_gym.errors.BackendError`
    instead, so a failed generation is never played as an empty move.
    """

    def __init__(self, backend: Any, sampling: dict[str, Any] | None = None):
        self.backend = make_backend(backend)
        sampling = dict(sampling or {})
        stop = sampling.get("stop", ())
        if isinstance(stop, str) or not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) and s for s in stop):
            raise ConfigError(f"sampling['stop'] must be a list of non-empty strings, got {stop!r}.")
        try:
            self.sampling = SamplingParams(**{**sampling, "stop": tuple(stop)})
        except TypeError as exc:
            raise ConfigError(f"sampling={sampling!r} has an unknown field ({exc}); use max_new_tokens, temperature, top_p, seed, stop.") from exc
        self.last_outputs: list[Any] = []

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        return seed

    def act_batch_with_errors(
        self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]
    ) -> tuple[list[str], list[str | None]]:
        """``(texts, errors)`` for each observation, in order; ``errors[i]`` is ``None`` unless the backend
        failed request ``i`` (then ``texts[i]`` is ``""`` and must not be played)."""
        requests = []
        for observation, seed in zip(observations, memories):
            sampling = self.sampling
            if sampling.seed is None and seed is not None:
                sampling = SamplingParams(**{**sampling.__dict__, "seed": int(seed) + observation["turn"]})
            requests.append(GenerationRequest(messages=tuple(observation["messages"]), sampling=sampling))
        self.last_outputs = self.backend.generate(requests)
        if len(self.last_outputs) != len(requests):
            raise BackendError(
                f"{type(self.backend).__name__}.generate returned {len(self.last_outputs)} outputs for "
                f"{len(requests)} requests; a backend must return exactly one output per request, in order."
            )
        errors = [getattr(output, "error", None) for output in self.last_outputs]
        stop = self.sampling.stop
        texts = [restore_closing_stop(output.text, stop) if error is None else "" for output, error in zip(self.last_outputs, errors)]
        return texts, errors

    def act_batch(
        self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]
    ) -> list[str]:
        texts, errors = self.act_batch_with_errors(observations, infos, memories)
        failed = [(i, error) for i, error in enumerate(errors) if error is not None]
        if failed:
            raise BackendError(
                f"LLMPolicy: the backend failed {len(failed)} of {len(texts)} requests (first: request "
                f"{failed[0][0]}: {failed[0][1]}). Play through the env driver (gym.make / make_vec / evaluate), "
                "which ends such episodes with outcome 'backend_failure', or use act_batch_with_errors()."
            )
        return texts
