"""Dialogue-act analyzer: which moves an agent utterance makes.

Keyword patterns, deliberately simple and transparent: the scripted simulator reacts to these acts,
and an agent can read exactly what counts. Surface tricks do not pay off because the simulator
also reacts to *how many* acts are crammed into one turn, to repetition and to pressure.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dialogue_gym.scenarios.common import memoise_short_texts

_PATTERNS: dict[str, str] = {
    "greeting": r"\b(hello|hi|hey|good (morning|afternoon|evening))\b",
    "self_intro": r"\b(my name is|this is \w+ (from|at|with)|calling from|i'm calling from|i am calling from)\b",
    "identity_check": r"\b(owner|manager|person in charge|in charge of|the boss)\b",
    "value": r"\b(free (ad|advertising)?\s?credit|exposure|more customers|more orders|visibility|attract|boost)\b",
    "evidence": r"(\b\d{2,3},?000\b|\b500k\b|\b4\.6\b|\brating\b|\bdata show|\bother restaurants\b|\bon average\b|\bper cent\b|%)",
    "cost": r"\b(no (hidden )?(fee|fees|cost|costs|charge|charges)|nothing to pay|costs? you nothing|free of charge|won't be charged|not be charged)\b",
    "rules": r"\b(pay[- ]per[- ]click|switch (it )?off|turn (it )?off|stop it anytime|any ?time|no date limit|no deadline|end of the year|year end)\b",
    "confirm": r"\b(700|to confirm|just to confirm|again, it's|that's right)\b",
    "empathy": r"\b(i understand|understand(able)?|sorry|i hear you|appreciate|no worries|fair question|totally fair|makes sense that)\b",
    "respect_time": r"\b(quick(ly)?|brief(ly)?|one minute|a minute|won't take long|keep it short|short version)\b",
    "simplify": r"\b(simply|in short|put simply|in other words|basically|step by step)\b",
    "guide": r"\b(open (the|your) (merchant )?(back-?office )?app|tap|get more exposure|claim (it|the credit)|you should see|sms|pop-?up)\b",
    "pressure": r"\b(must|have to|right now|immediately|last chance|hurry|don't miss|only today|act now|you need to)\b",
    "closing": r"\b(goodbye|bye|have a (nice|good|great) day|thanks? (you )?for your time)\b",
    "ai_disclosure": r"\b(i'm|i am) (an? )?(ai|virtual|automated|digital) (assistant|agent)\b",
    "deny_ai": r"\b(i'm|i am) (a )?(real|human)( person)?\b|\bnot a (robot|machine|bot)\b",
}

ACTS: frozenset[str] = frozenset(_PATTERNS) | {"off_script"}
"""Every act the analyzer can emit; ``off_script`` means no recognised act."""

_COMPILED = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _PATTERNS.items())


@memoise_short_texts(maxsize=8192)
def analyze(utterance: str) -> frozenset[str]:
    """Return the set of dialogue acts in ``utterance`` (``{"off_script"}`` when none)."""
    found = frozenset(name for name, pattern in _COMPILED if pattern.search(utterance))
    return found or frozenset({"off_script"})


_WORD = re.compile(r"[a-z0-9']+")


@memoise_short_texts(maxsize=8192)
def words(utterance: str) -> frozenset[str]:
    return frozenset(_WORD.findall(utterance.lower()))


@lru_cache(maxsize=65536)
def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (1.0 for identical utterances)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
