"""The cue lexicon (``data/lexicon.json``) applied to customer speech: which tools a text points
at, how well a customer turn conceals its intent, whether it is grounded in the episode's facts.

One lexicon serves three readers, so they agree by construction: the keyword-router baseline
routes on these cues, the customer's concealment reward counts the cues of its *true* tool, and
the CPU strategy agent of the trainer uses them as its features.

The patterns read at most ``MAX_ACTION_CHARS`` characters of a text, and the loader refuses
unbounded gaps (``.*``) in them (:mod:`.data`), so a cue check is linear in a bounded text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Sequence

from dialogue_gym.scenarios.common import bound_text, matching_patterns, memoise_short_texts
from dialogue_gym.scenarios.rlada.data import Domain, Intent


def cue_hits(text: str, domain: Domain) -> dict[str, int]:
    """Number of distinct cues of each tool found in ``text``."""
    return dict(_cue_hits(bound_text(text)[0], domain))


@memoise_short_texts(maxsize=32768)
def _cue_hits(text: str, domain: Domain) -> tuple[tuple[str, int], ...]:
    return tuple(group_hits(domain.cues, _flattened_cues(domain), text).items())


PatternGroupsFlat = tuple[tuple[re.Pattern[str], ...], dict[int, tuple[str, ...]]]


def flatten_groups(groups: dict[str, Sequence[re.Pattern[str]]]) -> PatternGroupsFlat:
    """``(patterns, owners)``: each distinct pattern object of ``groups`` once, in the order first met,
    and by its id the group of every place it stands in (twice in one group: that group twice), so
    :func:`group_hits` counts what counting group by group counts."""
    owners: dict[int, list[str]] = {}
    patterns = []
    for name, group in groups.items():
        for pattern in group:
            if id(pattern) not in owners:
                owners[id(pattern)] = []
                patterns.append(pattern)
            owners[id(pattern)].append(name)
    return tuple(patterns), {key: tuple(names) for key, names in owners.items()}


@lru_cache(maxsize=16)
def _flattened_cues(domain: Domain) -> PatternGroupsFlat:
    return flatten_groups(domain.cues)


def group_hits(groups: dict[str, Sequence[re.Pattern[str]]], flat: PatternGroupsFlat, text: str) -> dict[str, int]:
    """``{group: len(matching_patterns(group's patterns, text))}`` for ``groups`` (``flat``: its
    :func:`flatten_groups`), in the groups' order, from ONE :func:`matching_patterns` pass over all
    their patterns: group by group, the text was lower-cased and the gates looked up once per group
    (a tool's cues), which made a cue reading of a fresh customer line 2.3x slower (81 distinct
    lines of RL-ADA customers, one process). Every customer turn of every episode is read this way,
    and the lines carry each episode's amounts and merchants, so memoising misses."""
    patterns, owners = flat
    hits = dict.fromkeys(groups, 0)
    for pattern in matching_patterns(patterns, text):
        for name in owners[id(pattern)]:
            hits[name] += 1
    return hits


def active_cues(text: str, domain: Domain) -> tuple[int, ...]:
    """Indices into :attr:`Domain.cue_names` of the cues present in ``text``."""
    return _active_cues(bound_text(text)[0], domain)


@memoise_short_texts(maxsize=32768)
def _active_cues(text: str, domain: Domain) -> tuple[int, ...]:
    active, index = [], 0
    for patterns in domain.cues.values():
        found = set(map(id, matching_patterns(patterns, text)))
        for pattern in patterns:
            if id(pattern) in found:
                active.append(index)
            index += 1
    return tuple(active)


def context_cues(text: str, domain: Domain) -> tuple[str, ...]:
    """Names of the context cues (story details that point at no tool by themselves) present in ``text``."""
    return _context_cues(bound_text(text)[0], domain)


@memoise_short_texts(maxsize=32768)
def _context_cues(text: str, domain: Domain) -> tuple[str, ...]:
    return tuple(name for name, pattern in domain.context if pattern.search(text))


def names_intent(text: str, intent: Intent, tools: tuple[str, ...]) -> bool:
    """Whether ``text`` names the intent label or a tool (what a customer must never do)."""
    return _names_intent(text, intent.name, intent.phrase, tuple(tools))


@memoise_short_texts(maxsize=16384)
def _names_intent(text: str, name: str, phrase: str, tools: tuple[str, ...]) -> bool:
    # Memoised: a customer turn is checked twice (its concealment score and its record).
    lowered = re.sub(r"[^a-z0-9_ ]+", " ", text.lower())
    spaced = f" {' '.join(lowered.split())} "
    if f" {phrase} " in spaced or name in lowered:
        return True
    return any(tool in lowered or f" {tool.replace('_', ' ')} " in spaced for tool in tools)


def concealment(text: str, intent: Intent, domain: Domain) -> float:
    """1 when a turn carries no explicit cue of the intent's tool, 0.5 with one cue, 0 with more
    (or when it names the intent or a tool)."""
    if names_intent(text, intent, domain.tool_names):
        return 0.0
    hits = cue_hits(text, domain)[intent.tool]
    return 1.0 if hits == 0 else 0.5 if hits == 1 else 0.0


def fact_strings(facts: dict[str, Any]) -> dict[str, str]:
    """The episode's facts as the strings a customer would say (amounts as ``$42.80``)."""
    rendered = {key: str(value) for key, value in facts.items()}
    if "amount" in facts:
        rendered["amount"] = f"${float(facts['amount']):,.2f}"
    return rendered


def grounded(text: str, facts: dict[str, Any]) -> bool:
    """Whether ``text`` mentions one of the episode's identifying facts (merchant, amount, day, card digits, payee)."""
    lowered = text.lower()
    rendered = fact_strings(facts)
    keys = ("merchant", "amount", "day", "last4", "person", "atm")
    if any(rendered.get(key) and rendered[key].lower() in lowered for key in keys):
        return True
    amount = facts.get("amount")
    return amount is not None and f"{float(amount):.2f}".rstrip("0").rstrip(".") in lowered
