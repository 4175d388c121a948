"""Sentence-level understanding shared by every scripted counterpart and heuristic judge.

A counterpart that reacts to keywords can be topped by a word salad. Each scenario's recogniser
(``scenarios/<x>/acts.py`` or its equivalent) therefore first asks this module what a turn *is*:

- :func:`sentences` splits a turn into sentences (linear scan; bounded by the caller's text limit);
- :func:`read_sentence` says whether a sentence is one a person would understand
  (:class:`Reading`): enough real words, a function word (a sentence, not a list of nouns), not a
  keyword list, not one word over and over; otherwise why not (``reason``);
- :func:`is_known_word` is the lexicon test behind "made-up words": an English word list (the
  ``english-words`` package, GCIDE) with simple inflections, plus each scenario's own vocabulary;
- :func:`content_words` and :func:`near_repeat` compare turns by the real content words they carry,
  so two fresh made-up words do not make a repeated turn new;
- :func:`is_real_question` tells a question that asks something from ``?``, ``And?`` or "What do you
  mean?".

Everything here is a pure function of the text (and the scenario's extra vocabulary), memoised for
short texts, so the scripted path stays at thousands of turns per second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from dialogue_gym.scenarios.common import memoise_short_texts

FUNCTION_WORDS: frozenset[str] = frozenset(
    """a an the this that these those my your our their his her its i you we they he she it me us them
    is are was were be been being am do does did have has had will would can could should may might must shall
    to of in on at for with from by about as into over under after before than then so and or but if because
    not no yes please what which who whom whose when where why how there here any some all each every""".split()
)
"""Closed-class words: a sentence has at least one; a keyword list usually has none."""

MODERN_WORDS: frozenset[str] = frozenset(
    """ok okay app apps online email emails sms wechat whatsapp website click clicks login logout
    password pin paypal smartphone phone phones text texts upload download uploaded downloaded
    checkout refund refunds refunded unblock unblocked voucher vouchers anytime anyway""".split()
)
"""Everyday words the 1913 dictionary lacks."""

MIN_WORDS = 3
"""A sentence has at least this many words (``"Sure."`` and ``"Thanks!"`` are replies, not statements)."""
MAX_UNKNOWN_SHARE = 0.25
"""More than this share of unknown words and the sentence is not understood (made-up words)."""
MAX_WORD_REPEATS = 3
"""One word more often than this in a sentence and it is babble."""
MIN_FUNCTION_SHARE = 0.12
"""Fewer closed-class words than this share of a long sentence and it is a keyword list."""

_TOKEN = re.compile(r"[a-z]+(?:['-][a-z]+)*|\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"(?:[!?\n;]|\.(?!\d))+")
"""Sentence ends; a full stop inside a number ("4.6") is not one."""
_CLITICS = frozenset({"s", "ll", "re", "ve", "d", "m", "t"})
_SUFFIXES = ("'s", "ies", "es", "s", "ed", "ing", "ly", "er", "est")


@lru_cache(maxsize=1)
def _dictionary() -> frozenset[str]:
    from english_words import get_english_words_set

    return frozenset(get_english_words_set(["gcide"], lower=True, alpha=True))


@lru_cache(maxsize=65536)
def is_known_word(word: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether ``word`` (lower case) is a real word: a number, a function word, a dictionary word or
    a simple inflection of one, an everyday modern word, or in the scenario's ``extra`` vocabulary."""
    if word[:1].isdigit() or word in FUNCTION_WORDS or word in MODERN_WORDS or word in extra:
        return True
    dictionary = _dictionary()
    if word in dictionary:
        return True
    parts = re.split(r"['-]", word)
    if len(parts) > 1:
        return all(is_known_word(part, extra) for part in parts if part and part not in _CLITICS)
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            stem = word[: -len(suffix)]
            if stem in dictionary or stem + "e" in dictionary or stem + "y" in dictionary or stem in extra:
                return True
            if len(stem) >= 3 and stem[-1] == stem[-2] and stem[:-1] in dictionary:
                return True
    return False


@memoise_short_texts(maxsize=16384)
def tokens(text: str) -> tuple[str, ...]:
    """Lower-case word and number tokens of ``text``."""
    return tuple(_TOKEN.findall(text.lower()))


@memoise_short_texts(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The sentences of ``text`` (split at ``.``, ``!``, ``?``, ``;`` and newlines), each keeping a
    final ``?`` so questions stay recognisable; empty pieces are dropped."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.end()].strip()
        if tokens(piece):
            pieces.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tokens(tail):
        pieces.append(tail)
    return tuple(pieces)


@dataclass(frozen=True)
class Reading:
    """What a person makes of one sentence."""

    words: tuple[str, ...]
    unknown: tuple[str, ...]
    """Words that are not real words (made up, or gibberish)."""
    understood: bool
    reason: str | None
    """Why not understood: ``"too_short"``, ``"made_up_words"``, ``"no_function_word"``,
    ``"keyword_list"`` or ``"babble"``; ``None`` when understood."""
    question: bool


def read_sentence(sentence: str, extra: frozenset[str] = frozenset()) -> Reading:
    """Read one sentence: is it one a person would understand?

    ``extra`` is the scenario's own vocabulary (product and place names) counted as real words.
    Memoised for short sentences only, so hostile text cannot pin megabytes in the cache.
    """
    return _read(sentence, extra)


def is_function_word(word: str) -> bool:
    """Whether ``word`` is a closed-class word or a contraction of one (``"it's"``, ``"we're"``,
    ``"that's"``: a sentence written with contractions is still a sentence)."""
    return word in FUNCTION_WORDS or word.split("'", 1)[0] in FUNCTION_WORDS


@memoise_short_texts(maxsize=65536)
def _read(sentence: str, extra: frozenset[str]) -> Reading:
    words = tokens(sentence)
    unknown = tuple(w for w in words if not is_known_word(w, extra))
    question = sentence.rstrip().endswith("?")
    reason: str | None = None
    function_count = sum(1 for w in words if is_function_word(w))
    if len(words) < MIN_WORDS:
        reason = "too_short"
    elif len(unknown) > MAX_UNKNOWN_SHARE * len(words):
        reason = "made_up_words"
    elif function_count == 0:
        reason = "no_function_word"
    elif len(words) >= 8 and function_count < MIN_FUNCTION_SHARE * len(words):
        reason = "keyword_list"
    elif max(words.count(w) for w in set(words)) > MAX_WORD_REPEATS:
        reason = "babble"
    elif sentence.count(",") >= 4 and sentence.count(",") >= len(words) // 3:
        reason = "keyword_list"
    return Reading(words, unknown, reason is None, reason, question)


def understood_sentences(text: str, extra: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The sentences of ``text`` a person would understand, in order."""
    return tuple(s for s in sentences(text) if read_sentence(s, extra).understood)


def content_words(text: str, extra: frozenset[str] = frozenset()) -> frozenset[str]:
    """The real, non-function words of ``text``: what a turn says, with made-up filler removed."""
    return _content_words(text, extra)


@memoise_short_texts(maxsize=16384)
def _content_words(text: str, extra: frozenset[str]) -> frozenset[str]:
    """Memoised: near-repeat checks compare every turn with every earlier one."""
    return frozenset(w for w in tokens(text) if w not in FUNCTION_WORDS and is_known_word(w, extra))


def near_repeat(text: str, earlier: Iterable[str], extra: frozenset[str] = frozenset()) -> float:
    """The highest overlap (Jaccard on :func:`content_words`, 0..1) of ``text`` with any earlier turn.

    Made-up words are dropped before comparing, so padding a repeated turn with fresh gibberish does
    not make it new; a turn with no real content words repeats nothing (0.0).
    """
    return highest_overlap(content_words(text, extra), (content_words(other, extra) for other in earlier))


def highest_overlap(words: frozenset[str], earlier: Iterable[frozenset[str]]) -> float:
    """:func:`near_repeat` on content words already worked out: the highest Jaccard overlap of
    ``words`` with any of ``earlier`` (0.0 when ``words`` is empty; ``earlier`` is then not read)."""
    if not words:
        return 0.0
    best = 0.0
    size = len(words)
    for theirs in earlier:
        if theirs:
            shared = len(words & theirs)
            overlap = shared / (size + len(theirs) - shared)  # the union's size, without building it
            if overlap > best:
                best = overlap
    return best


VAGUE_WORDS: frozenset[str] = frozenset(
    """mean meant more else tell say said go on really sure so well right okay ok hmm huh thing things
    something anything everything stuff that's what's it's elaborate again explain else about exactly""".split()
)
"""Words of questions that ask nothing in particular ("Could you tell me more?", "What do you mean?")."""


def is_real_question(sentence: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether ``sentence`` is an understood question that asks about something: it ends with ``?``
    and carries at least one real content word that is not vague (``"And?"``, ``"Why?"``, ``"What do
    you mean?"`` and ``"Could you tell me more?"`` are not)."""
    reading = read_sentence(sentence, extra)
    if not reading.question or not reading.understood:
        return False
    return any(w not in VAGUE_WORDS for w in content_words(sentence, extra))
