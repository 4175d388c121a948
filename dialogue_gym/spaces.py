"""Gymnasium spaces for text: a role's utterance and a chat history.

Gymnasium's ``Text`` space only admits a fixed character set; model output can be any Unicode,
so these spaces accept any ``str`` (up to a length) and sample short random English-like text.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from gymnasium.spaces import Space

_SAMPLE_WORDS = (
    "hello", "yes", "no", "owner", "credit", "free", "app", "call", "price", "time", "sure",
    "why", "trust", "busy", "later", "thanks", "okay", "what", "exposure", "robot", "cost",
)


class Utterance(Space[str]):
    """Any string of at most ``max_length`` characters: a role's raw output."""

    def __init__(self, max_length: int = 4096, seed: int | np.random.Generator | None = None):
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        count = int(self.np_random.integers(1, 13))
        return " ".join(_SAMPLE_WORDS[int(i)] for i in self.np_random.integers(len(_SAMPLE_WORDS), size=count))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"Utterance(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Utterance) and other.max_length == self.max_length


class ChatMessages(Space[list]):
    """A chat history: a list of ``{"role": ..., "content": ...}`` dicts, ready for ``apply_chat_template``."""

    def __init__(
        self,
        roles: Sequence[str] = ("system", "user", "assistant"),
        max_messages: int = 256,
        seed: int | np.random.Generator | None = None,
    ):
        self.roles = tuple(roles)
        self.max_messages = max_messages
        self._utterance = Utterance()
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def seed(self, seed: int | None = None) -> list[int]:
        seeds = super().seed(seed)
        self._utterance.seed(int(self.np_random.integers(2**31)))
        return seeds

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, str]]:
        count = int(self.np_random.integers(1, 6))
        return [
            {"role": self.roles[int(self.np_random.integers(len(self.roles)))], "content": self._utterance.sample()}
            for _ in range(count)
        ]

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, (list, tuple))
            and len(x) <= self.max_messages
            and all(
                isinstance(m, dict) and m.get("role") in self.roles and isinstance(m.get("content"), str) for m in x
            )
        )

    def __repr__(self) -> str:
        return f"ChatMessages(roles={self.roles})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ChatMessages) and other.roles == self.roles and other.max_messages == self.max_messages
