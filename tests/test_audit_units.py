"""The audit's small helpers pinned by hand (issue 43, item 6: audit.py's mutants)."""

from __future__ import annotations

import random

from dialogue_gym.audit import made_up_word

SYLLABLES = ("ka", "lo", "vex", "dri", "mun", "zor", "pel", "quo", "tas", "rin", "bre", "nuv")


def split(word: str) -> list[str]:
    """The syllables of a made-up word: each syllable starts with a letter of its own, so there is one way."""
    by_letter = {syllable[0]: syllable for syllable in SYLLABLES}
    parts = []
    while word:
        parts.append(by_letter[word[0]])
        assert word.startswith(parts[-1])
        word = word[len(parts[-1]):]
    return parts


def test_a_made_up_word_is_two_or_three_syllables_and_both_lengths_occur():
    rng = random.Random(0)
    lengths = [len(split(made_up_word(rng))) for _ in range(200)]
    assert set(lengths) == {2, 3}
