"""Sealed evaluation: episode seeds from a secret drawn when the run starts and revealed when it ends.

Default evaluation is reproducible from ``--seed`` and therefore *open-book*: the library's code is
public, so an in-process scripted or search policy can rebuild the game from a public seed (or invert
the seed its ``start`` gets) and read the hidden state of its copy. Published numbers are *sealed*:

- the run draws a fresh 128-bit secret (:func:`secrets.token_bytes`) and derives every seed it plays
  from it with a keyed one-way function (BLAKE2b keyed with the secret): the order of the starts,
  the starts' options, each episode's reset seed and the seed each role's policy gets in ``start``;
- nothing a policy is handed depends on the secret except through that function, so it can neither
  invert a seed nor enumerate the seeds a run will play;
- the secret is written into the results (``provenance["secret"]``) only when the run has ended, and
  ``--unseal SECRET`` (``Seal.parse``) plays the very same episodes again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from dialogue_gym.errors import ConfigError

SECRET_BYTES = 16
"""128 bits: no policy can enumerate the secrets."""
_SECRET_TEXT = re.compile(rf"[0-9a-f]{{{2 * SECRET_BYTES}}}")


@dataclass(frozen=True)
class Seal:
    """The secret of one sealed run and the seeds derived from it."""

    secret: bytes

    @classmethod
    def draw(cls) -> Seal:
        """A fresh secret from the operating system's randomness."""
        return cls(secrets.token_bytes(SECRET_BYTES))

    @classmethod
    def parse(cls, text: Any, flag: str = "--unseal") -> Seal:
        """The seal of a finished run from its secret as written in its results (32 hexadecimal digits)."""
        if not isinstance(text, str) or not _SECRET_TEXT.fullmatch(text.strip().lower()):
            shown = f"{text!r:.60}" if isinstance(text, str) else f"{type(text).__name__}: {text!r:.60}"
            raise ConfigError(
                f"{flag} needs the secret of a sealed run: {2 * SECRET_BYTES} hexadecimal digits, got {shown}. Copy "
                "provenance['secret'] from the run's results (`dialogue-gym eval --sealed --save results.json`) "
                "or the secret the run printed when it ended."
            )
        return cls(bytes.fromhex(text.strip()))

    @property
    def hex(self) -> str:
        """The secret as it is written into the results and read back by :meth:`parse`."""
        return self.secret.hex()

    def __repr__(self) -> str:
        # a repr (a traceback, a log line, a policy printing what it can reach) must not reveal the secret
        return "Seal(<secret>)"

    def seed(self, *parts: str | int) -> int:
        """A 63-bit seed, a keyed one-way function of ``parts``: without the secret, knowing any number
        of these seeds tells nothing of the others."""
        digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), key=self.secret, digest_size=8).digest()
        return int.from_bytes(digest, "big") >> 1

    @property
    def run_seed(self) -> int:
        """What a sealed run uses where an open run uses ``--seed``: the order of the starts and their options."""
        return self.seed("run")

    def episode_seed(self, start: int, repeat: int) -> int:
        """The reset seed of ``repeat`` of ``start``."""
        return self.seed("episode", start, repeat)

    def role_seed(self, episode_seed: int, role_index: int) -> int:
        """The seed a role's policy gets in ``start`` (an open run's :func:`~dialogue_gym.envs.driver.role_seed`
        can be inverted to the episode seed; this one cannot)."""
        return self.seed("role", episode_seed, role_index)
