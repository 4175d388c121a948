"""Deterministic seed derivation (SplitMix64), cheap enough for thousands of episodes per second."""

from __future__ import annotations

_MASK64 = (1 << 64) - 1


def mix_seed(*parts: int) -> int:
    """A 63-bit seed that is a pure function of the integer ``parts``, well spread for nearby inputs."""
    z = 0
    for part in parts:
        z = (z ^ int(part)) * 0x9E3779B97F4A7C15 + 1 & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        z ^= z >> 31
    return z >> 1
