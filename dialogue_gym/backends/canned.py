"""A backend that replays fixed replies: deterministic, instant, no dependencies.

Use it in tests and offline demos wherever a real model is not the point.
"""

from __future__ import annotations

import time
import zlib
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


class LatencyBackend:
    """A stand-in for a batched GPU engine: each call of up to ``max_batch`` requests answers after a
    fixed ``latency`` (seconds; a call of ``n`` requests takes ``ceil(n / max_batch)`` of them), with
    canned replies. What a rollout loop does around generation can be timed against it with no model.

    Args:
        replies: the texts to answer with (at least one), e.g. a learner's replies in its real format.
        latency: seconds per call of up to ``max_batch`` requests (default 0.05: a 50 ms GPU turn).
        max_batch: the most requests one ``latency`` serves (default 64).

    The reply to a request is ``replies[h % len(replies)]`` with ``h`` a hash of its messages
    (:meth:`reply_index`), so a
    prompt gets the same reply whatever call, batch or position it comes in: rollouts that batch the
    same prompts differently play the same dialogues. The wait is ``time.sleep`` (the GIL is released,
    as a GPU engine waiting on its kernels releases it). :attr:`busy_seconds` sums the latency served
    (``calls * latency`` for calls of up to ``max_batch``), :attr:`calls` and :attr:`requests` count.
    """

    name = "latency"

    def __init__(self, replies: Sequence[str], latency: float = 0.05, max_batch: int = 64) -> None:
        self._canned = CannedBackend(replies)
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not 0 <= latency < float("inf"):
            raise ConfigError(f"LatencyBackend: latency must be a finite number of seconds >= 0, got {latency!r}.")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ConfigError(f"LatencyBackend: max_batch must be a positive int, got {max_batch!r}.")
        self.replies = self._canned.replies
        self.latency = float(latency)
        self.max_batch = max_batch
        self.busy_seconds = 0.0
        self.calls = 0
        self.requests = 0

    @property
    def spec(self) -> dict[str, Any]:
        """The JSON-serialisable spec that :func:`dialogue_gym.backends.make_backend` accepts."""
        return {"name": self.name, "replies": list(self.replies), "latency": self.latency, "max_batch": self.max_batch}

    def reply_index(self, request: GenerationRequest) -> int:
        """Which reply ``request`` gets: a pure function of its messages (CRC-32 of the number of
        messages and the last one, which is what grows turn by turn: hashing whole prompts of several
        KB took a millisecond or more of each 50 ms call, time no GPU engine spends on it)."""
        messages = request.messages
        last = messages[-1] if messages else {}
        text = f"{len(messages)}\0{last.get('role', '')}\0{last.get('content', '')}"
        return zlib.crc32(text.encode("utf-8", "surrogatepass")) % len(self.replies)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]:
        requests = list(requests)
        outputs = []
        for request in requests:
            index = self.reply_index(request)
            outputs.append(GenerationOutput(text=self.replies[index], finish_reason="stop", meta={"backend": self.name, "index": index}))
        seconds = self.latency * -(-len(requests) // self.max_batch)
        time.sleep(seconds)
        self.busy_seconds += seconds
        self.calls += 1
        self.requests += len(requests)
        return outputs

    def __repr__(self) -> str:
        return f"LatencyBackend(replies=<{len(self.replies)} replies>, latency={self.latency}, max_batch={self.max_batch})"
