"""Dialogue acts of an assistant utterance: what the scripted users react to and the heuristic judge reads.

Keyword patterns, deliberately transparent (as SEAD's analyzer): an agent can read exactly what counts.
"""

from __future__ import annotations

import re

from dialogue_gym.scenarios.common import memoise_short_texts

_PATTERNS: dict[str, str] = {
    "greeting": r"\b(hello|hi|welcome|good (morning|afternoon|evening))\b",
    "answer": r"(\d|\b(we have|we offer|we handle|available|depends on|starts? from|includes?|takes about|is free|are free|can be|passes|are done|runs? from|lasts?|next to|quoted)\b)",
    "contact_request": r"\b(phone|number|contact|wechat|call you back|reach you|leave your|share your)\b",
    "empathy": r"\b(i understand|understandable|sorry|no worries|no pressure|happy to help|take your time|fair question)\b",
    "benefit": r"(\bfree\b|\bdiscount|\boffer\b|\bpromotion|% off|\btrial\b|\bgift\b|\bsave\b|\bgood news\b)",
    "urgency": r"\b(today only|ends today|limited|hurry|last chance|right now|don't miss|only a few|act now)\b",
}

ACTS: tuple[str, ...] = (*_PATTERNS, "probe", "none")
"""Every act the analyzer can emit; ``probe`` is a question that is not a contact request, ``none`` means no act."""

_COMPILED = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _PATTERNS.items())


@memoise_short_texts(maxsize=16384)
def analyze(utterance: str) -> frozenset[str]:
    """The set of acts in ``utterance`` (``{"none"}`` when there is none)."""
    found = {name for name, pattern in _COMPILED if pattern.search(utterance)}
    if "?" in utterance and "contact_request" not in found:
        found.add("probe")
    return frozenset(found or {"none"})
