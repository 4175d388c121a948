"""Helpers every scenario's data loaders and output parsers share.

Limits on model output (every parser applies them before any regex or JSON work, so that one step
costs time linear in at most ``MAX_ACTION_CHARS`` characters whatever the model emits):

- ``MAX_ACTION_CHARS``: characters of one action read by a parser; the rest is dropped and the
  action is flagged (:func:`bound_text`).
- ``MAX_JSON_DEPTH``: nesting of arrays and objects accepted in a JSON action; deeper JSON is
  rejected by a linear bracket scan before ``json.loads`` sees it (:func:`safe_json_loads`).
- ``MAX_JSON_INT_DIGITS``: digits of a JSON integer; longer ones are rejected (Python's own
  limit would raise ``ValueError`` at 4,300 digits). Non-finite numbers (``NaN``, ``Infinity``,
  ``1e999``) are rejected too.
- ``MAX_TAG_NAME_CHARS``: characters of a tag name read by :func:`scan_tags` (longer names are text).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.types import finite_number


def read_json(path: Path) -> Any:
    """A scenario data file; errors name the file and, for bad JSON or bytes that are not UTF-8, the line.
    A FIFO or device is refused unopened (reading one would wait for a writer)."""
    from dialogue_gym.inputs import read_utf8  # inputs imports this module

    text = read_utf8(path, "pass an existing UTF-8 JSON file.", ScenarioError)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg}). Fix the syntax at that line.") from exc


def require(entry: dict[str, Any], field: str, kind: type, where: str) -> Any:
    """``entry[field]``, which must be a ``kind`` (non-empty for str, list and dict); errors name ``where``."""
    if field not in entry:
        raise ScenarioError(f"{where}: missing field {field!r}. Add it ({kind.__name__}).")
    value = entry[field]
    if not isinstance(value, kind) or (kind in (str, list, dict) and not value):
        raise ScenarioError(f"{where}: field {field!r} must be a non-empty {kind.__name__}, got {value!r}.")
    return value


def to_int(value: object) -> int | None:
    """An integer read from model output (int, integral float or numeric string), else None."""
    kind = type(value)
    if kind is int:
        return value
    if kind is str:
        try:
            return int(value)
        except ValueError:
            return None
    if kind is float and value.is_integer():
        return int(value)
    return None


def clean_utterance(text: str, problems: list[str], max_chars: int) -> str:
    """Collapse whitespace; flag an empty utterance and truncate (and flag) one over ``max_chars``."""
    utterance = " ".join(text.split())
    if not utterance:
        problems.append("empty utterance")
    if len(utterance) > max_chars:
        problems.append(f"utterance of {len(utterance)} characters exceeds max_utterance_chars={max_chars}; truncated")
        utterance = utterance[:max_chars]
    return utterance


MAX_ACTION_CHARS = 20_000
"""Characters of one model output that a parser reads; longer output is truncated and flagged."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of JSON arrays/objects accepted in model output."""
MAX_JSON_INT_DIGITS = 100
"""Longest JSON integer (in digits) accepted in model output."""

# One token per JSON string (skipped: brackets inside strings do not nest) or bracket. The string
# alternatives start with disjoint characters, so matching never backtracks: linear time.
_JSON_NESTING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


class _RejectedNumber(ValueError):
    """A JSON number that model output may not carry (non-finite, or too many digits)."""


def bound_text(text: str) -> tuple[str, bool]:
    """``text`` cut to ``MAX_ACTION_CHARS`` characters, and whether anything was cut."""
    if len(text) <= MAX_ACTION_CHARS:
        return text, False
    return text[:MAX_ACTION_CHARS], True


def truncation_problem(length: int, other: str | None = None) -> str:
    """The ``problem`` text for an action of ``length`` characters cut by :func:`bound_text`, followed
    by ``other`` (what parsing its head found wrong), if any."""
    cut = f"output of {length} characters exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}; only the first {MAX_ACTION_CHARS} were read"
    return f"{cut}; {other}" if other else cut


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``text`` nests arrays/objects deeper than ``limit`` (brackets inside strings do not count)."""
    if text.count("[") + text.count("{") <= limit:
        # No deeper than its opening brackets: a text with few (every tool call a scripted agent writes)
        # needs no token scan, which was 2% of a scripted RL-ADA episode.
        return False
    depth = 0
    for token in _JSON_NESTING_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif bracket in ("]", "}"):
            depth -= 1
    return False


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _RejectedNumber(f"number {literal[:40]!r} is not finite")
    return value


def _bounded_int(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise _RejectedNumber(f"integer of {digits} digits exceeds MAX_JSON_INT_DIGITS={MAX_JSON_INT_DIGITS}")
    return int(literal)


def _reject_constant(name: str) -> float:
    raise _RejectedNumber(f"non-finite number {name}")


def safe_json_loads(text: str) -> tuple[Any, str | None]:
    """``(value, None)`` for bounded, finite JSON; ``(None, problem)`` for anything else. Never raises.

    Rejects text over ``MAX_ACTION_CHARS``, nesting over ``MAX_JSON_DEPTH`` (checked before parsing,
    so ``json.loads`` cannot recurse deeply), ``NaN``/``Infinity``/overflowing floats and integers
    over ``MAX_JSON_INT_DIGITS`` digits."""
    if not isinstance(text, str):
        return None, f"JSON input must be a str, got {type(text).__name__}"
    if len(text) > MAX_ACTION_CHARS:
        return None, f"JSON of {len(text)} characters exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}"
    if json_depth_exceeds(text):
        return None, f"JSON nested deeper than MAX_JSON_DEPTH={MAX_JSON_DEPTH}"
    try:
        value = json.loads(
            text, parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_reject_constant
        )
    except _RejectedNumber as exc:
        return None, f"JSON rejected: {exc}"
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
    except (ValueError, RecursionError, TypeError) as exc:
        return None, f"malformed JSON ({type(exc).__name__}: {str(exc)[:200]})"
    return value, None


MAX_TAG_NAME_CHARS = 64
"""Longest tag name :func:`scan_tags` recognises; a longer ``<name>`` is plain text."""
MAX_CACHED_TEXT_CHARS = 4096
"""Parsers memoise outputs up to this length only, so a cache of N entries holds at most N x this many characters."""

_TAG_TOKEN = re.compile(r"<(/?)(\w{1,%d})>" % MAX_TAG_NAME_CHARS)


@dataclass(frozen=True)
class TagSpan:
    """One ``<name>content</name>`` found by :func:`scan_tags`; ``start``/``end`` bound the whole span."""

    name: str
    content: str
    start: int
    end: int


def scan_tags(text: str) -> list[TagSpan]:
    r"""The ``<name>...</name>`` spans of ``text``, left to right, in linear time.

    Each opening tag is closed by the first matching closing tag after it; the content is kept
    verbatim (tags inside it included, so tags inside tags never nest further) and scanning resumes
    after the closing tag. This is what ``re.findall(r"<(\w+)>(.*?)</\1>", text, re.DOTALL)`` finds,
    which costs quadratic time on many unclosed tags; here every tag is looked at a bounded number
    of times."""
    closings: dict[str, list[tuple[int, int]]] = {}
    openings: list[tuple[str, int, int]] = []
    for token in _TAG_TOKEN.finditer(text):
        slash, name = token.groups()
        if slash:
            closings.setdefault(name, []).append(token.span())
        else:
            openings.append((name, *token.span()))
    next_closing = dict.fromkeys(closings, 0)
    spans: list[TagSpan] = []
    resume = 0
    for name, start, content_start in openings:
        if start < resume or name not in closings:
            continue
        candidates = closings[name]
        position = next_closing[name]
        while position < len(candidates) and candidates[position][0] < content_start:
            position += 1
        next_closing[name] = position
        if position == len(candidates):
            continue
        content_end, resume = candidates[position]
        spans.append(TagSpan(name, text[content_start:content_end], start, resume))
    return spans


def tag_fields(spans: list[TagSpan]) -> dict[str, str]:
    """``{name: stripped content}`` of ``spans`` (a repeated tag keeps its last content)."""
    return {span.name: span.content.strip() for span in spans}


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for problem messages that quote model output."""
    try:
        text = repr(value)
    except ValueError:  # it holds an int beyond Python's 4,300-digit str limit
        return f"<{type(value).__name__} holding an int of over 4,300 digits>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


Parser = TypeVar("Parser", bound=Callable[..., Any])


def memoise_short_texts(maxsize: int) -> Callable[[Parser], Parser]:
    """Memoise a parser ``f(text, *args)`` for texts of at most ``MAX_CACHED_TEXT_CHARS`` characters.

    Scripted policies repeat their lines, so memoising keeps an env step in microseconds; long
    (hostile) texts are parsed afresh so the cache cannot pin megabytes of model output."""

    def decorate(parse: Parser) -> Parser:
        cached = lru_cache(maxsize=maxsize)(parse)

        def parse_memoised(text: str, *args: Any) -> Any:
            if len(text) <= MAX_CACHED_TEXT_CHARS:
                return cached(text, *args)
            return parse(text, *args)

        parse_memoised.__doc__ = parse.__doc__
        parse_memoised.__name__ = parse.__name__
        parse_memoised.__qualname__ = parse.__qualname__
        parse_memoised.__wrapped__ = parse
        parse_memoised.cache_clear = cached.cache_clear
        parse_memoised.cache_info = cached.cache_info
        return parse_memoised  # type: ignore[return-value]

    return decorate


MIN_GATE_CHARS = 3
"""Shortest literal run worth checking before a regex search (shorter ones rarely rule a pattern out)."""
_GATES: dict[int, tuple[tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], str | None, bool], ...]]] = {}
_MAX_GATE_SETS = 256


def _required_literal(pattern: re.Pattern[str]) -> tuple[str | None, bool]:
    """``(run, folded)``: the longest run of plain characters every match of ``pattern`` contains
    (consecutive top-level literals of its parse), lower-cased when the pattern ignores case, or
    ``None`` when it has none of :data:`MIN_GATE_CHARS` ASCII characters or its flags make case
    folding locale-dependent."""
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse as parser  # type: ignore[no-redef]
    if pattern.flags & re.LOCALE or not isinstance(pattern.pattern, str):
        return None, False
    try:
        items = list(parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # a parser of another Python version: search without a gate
        return None, False
    best, run = "", []
    for opcode, argument in [*items, (None, None)]:
        if opcode == parser.LITERAL and argument < 128:
            run.append(chr(argument))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(best) < MIN_GATE_CHARS:
        return None, False
    folded = bool(pattern.flags & re.IGNORECASE)
    return (best.lower() if folded else best), folded


def _gated(patterns: Sequence[re.Pattern[str]]) -> tuple[tuple[re.Pattern[str], str | None, bool], ...]:
    """Each pattern with its required literal; kept per tuple of patterns (a tuple cannot change under
    its id while the entry holds it), worked out afresh for any other sequence."""
    if not isinstance(patterns, tuple):
        return tuple((pattern, *_required_literal(pattern)) for pattern in patterns)
    entry = _GATES.get(id(patterns))
    if entry is None or entry[0] is not patterns:
        if len(_GATES) >= _MAX_GATE_SETS:
            _GATES.clear()
        entry = (patterns, tuple((pattern, *_required_literal(pattern)) for pattern in patterns))
        _GATES[id(patterns)] = entry
    return entry[1]


def _found(patterns: Sequence[re.Pattern[str]], text: str) -> Iterator[re.Pattern[str]]:
    """The patterns that ``search`` finds in ``text``, in order, each searched only past its gate (see
    :func:`matching_patterns`)."""
    lowered = text.lower() if text.isascii() else None
    for pattern, literal, folded in _gated(patterns):
        if literal is not None:
            if folded:
                if lowered is not None and literal not in lowered:
                    continue
            elif literal not in text:
                continue
        if pattern.search(text):
            yield pattern


def matching_patterns(patterns: Sequence[re.Pattern[str]], text: str) -> list[re.Pattern[str]]:
    """The patterns of ``patterns`` that ``search`` finds in ``text``, in order: exactly
    ``[p for p in patterns if p.search(text)]``, faster.

    A pattern whose match must contain a run of plain characters is searched only when ``text``
    contains that run: case-sensitively as it is, or, for a pattern that ignores case, lower-cased
    when ``text`` is ASCII (where ignoring case is lower-casing; other texts are always searched)."""
    return list(_found(patterns, text))


def any_pattern_matches(patterns: Sequence[re.Pattern[str]], text: str) -> bool:
    """``any(p.search(text) for p in patterns)``, with the gates of :func:`matching_patterns`."""
    return next(_found(patterns, text), None) is not None


def config_number(name: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    """A scenario config's number: finite, not a bool, within ``[low, high]`` where given."""
    if not finite_number(value):
        raise ConfigError(f"{name} must be a finite number, got {short_repr(value)}.")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(f"{name} must be in [{low}, {high}], got {short_repr(value)}.")
    return float(value)


def check_max_utterance_chars(value: Any) -> int:
    """The ``max_utterance_chars`` config field: an int no larger than what a parser reads."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ACTION_CHARS:
        raise ConfigError(
            f"max_utterance_chars must be an int 1-{MAX_ACTION_CHARS} (MAX_ACTION_CHARS, what a parser reads), got {value!r}."
        )
    return value
