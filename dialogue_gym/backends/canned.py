"""A backend that replays fixed replies: deterministic, instant, no dependencies.

Use it in tests and offline demos wherever a real model is not the point.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import BackendError, ConfigError
from .base import GenerationOutput, GenerationRequest


class CannedBackend:
    """Returns ``replies`` in order, one per request, across calls.

    Args:
        replies: the texts to return, in order (at least one).
        cycle: when the replies are used up, start again from the first (``True``), or raise
            :class:`~dialogue_gym.errors.BackendError` (``False``).

    Outputs have ``finish_reason="stop"``, no token ids or logprobs, and
    ``meta={"backend": "canned", "index": i}`` where ``i`` is the position of the reply in
    ``replies``. :meth:`reset` starts again from the first reply.
    """

    name = "canned"

    def __init__(self, replies: Sequence[str], cycle: bool = True) -> None:
        if isinstance(replies, (str, bytes)) or not isinstance(replies, Sequence):
            raise ConfigError(
                f"CannedBackend: replies must be a list of strings, got {type(replies).__name__} {replies!r}; "
                "pass e.g. replies=['Hello!', 'Goodbye.']."
            )
        if len(replies) == 0:
            raise ConfigError("CannedBackend: replies is empty (got []); pass at least one reply, e.g. replies=['Hello!'].")
        bad = [r for r in replies if not isinstance(r, str)]
        if bad:
            raise ConfigError(f"CannedBackend: every reply must be a str, got {bad[0]!r} ({type(bad[0]).__name__}).")
        if not isinstance(cycle, bool):
            raise ConfigError(f"CannedBackend: cycle must be True or False, got {cycle!r}.")
        self.replies: list[str] = list(replies)
        self.cycle = cycle
        self._next = 0

    @property
    def spec(self) -> dict[str, Any]:
        """The JSON-serialisable spec that :func:`dialogue_gym.backends.make_backend` accepts."""
        return {"name": self.name, "replies": list(self.replies), "cycle": self.cycle}

    def reset(self) -> None:
        """Start again from the first reply."""
        self._next = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]:
        requests = list(requests)
        if not self.cycle and self._next + len(requests) > len(self.replies):
            raise BackendError(
                f"CannedBackend: asked for {len(requests)} more replies but only "
                f"{len(self.replies) - self._next} of {len(self.replies)} are left (cycle=False); "
                "give more replies, call reset(), or use cycle=True."
            )
        outputs = []
        for _ in requests:
            index = self._next % len(self.replies)
            self._next += 1
            outputs.append(
                GenerationOutput(
                    text=self.replies[index],
                    finish_reason="stop",
                    meta={"backend": self.name, "index": index},
                )
            )
        return outputs

    def __repr__(self) -> str:
        return f"CannedBackend(replies=<{len(self.replies)} replies>, cycle={self.cycle})"
