"""RL-ADA's recogniser: what the customer makes of an agent turn, what counts as a customer turn a
person understands, and which factual claims an agent turn makes.

Every reader here sits on :mod:`dialogue_gym.scenarios.understanding` (sentences, the lexicon of
real words, near-repeats, real questions), so a turn is read as sentences, never as a bag of
keywords. ``data/UNDERSTANDING.md`` documents what each reader understands and why.

* :func:`read_agent_turn` classifies one spoken agent turn for the scripted customer: a real,
  on-topic ``question`` (it earns disclosure as far as the customer's concealment allows), a
  ``statement`` (acknowledged), or one of :data:`CONFUSING` kinds (not understood, content-free,
  an echo of the customer, a near-repeat of the agent's own earlier turn, off topic, a monologue),
  which earn confusion and, past the customer's patience, a hang-up.
* :func:`customer_turn_understood` says whether a customer turn is one a person would understand
  (the customer's format, realism and concealment credit need it).
* :func:`misdirection` reads a customer turn against its own problem (an asserted problem another
  tool serves, a side worry, or a disclosure of its own problem): the customer's adversarial credit
  needs a customer that tells the truth about its problem.
* :func:`told_problem` reads the customer's story before the agent acted against its own problem (a cue
  of its own tools or a sign of its family's problem, beside at most :data:`MAX_SIDE_PROBLEMS` others):
  a side worry is camouflage only in a story that also tells the customer's own problem.
* :func:`spoken_claims` lists the claims of fact in an agent turn (claim patterns of
  ``data/judge.json`` in declarative sentences that are not negated and not offers) and
  :func:`quoted_values` the amounts and ids it states; the judge checks both against the tool results.

All readers are pure functions of bounded text and are memoised, so the scripted path stays fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from dialogue_gym.scenarios.common import MIN_GATE_CHARS, bound_text, memoise_short_texts
from dialogue_gym.scenarios.rlada.cues import cue_hits
from dialogue_gym.scenarios.rlada.data import CONFUSING_KINDS, Domain, Intent
from dialogue_gym.scenarios.understanding import (
    VAGUE_WORDS,
    content_words,
    is_real_question,
    near_repeat,
    read_sentence,
    sentences,
    tokens,
)

CONFUSING = CONFUSING_KINDS
"""Agent-turn kinds that confuse the customer: no disclosure, and they use up its patience."""
ECHO_OVERLAP = 0.6
"""A turn sharing at least this share of content words (Jaccard) with a customer line copies it."""
REPEAT_OVERLAP = 0.75
"""A turn sharing at least this share with an earlier turn of the same speaker is a near-repeat."""
ON_TOPIC_SHARE = 0.75
"""At least this share of a question's non-vague content words must be words of a bank call
(:func:`call_language`) for it to count as a question about the call, not an off-topic one."""
MAX_QUESTIONS = 2
"""More real questions than this in one agent turn is an interrogation, not a clarifying question."""
MAX_SENTENCES = 5
"""More sentences than this in one agent turn is a monologue."""
NEGATION_WINDOW = 2
"""A claim preceded within this many words by a negator (``not``, ``never``, ``can't``) is not claimed."""
OFFER_GAP = 6
"""A claim at most this many words after an offer (``I can``, ``would you like me to``) or a promise
(``I'll``, ``let me``) of the agent's, with no have/has/is/was and no asserting verb (``confirm``)
between, is that offer or promise, not a claim that it already happened."""

MAX_CACHED_CALL_CHARS = 4000
"""Agent turn plus the call so far, in characters, up to which :func:`read_agent_turn` is memoised."""

_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_DOT = "\u2024"
_NEGATORS = frozenset({"not", "never", "no", "cannot", "unable", "without"})
_OFFER = re.compile(r"\b(?:i can|i could|would you like me to|do you want me to|shall i|should i|we can|i'd be happy to)\b")
_PROMISE = re.compile(r"\b(?:i'll|i will|let me|i'm going to|i am going to|i'm about to|we'll|we will)\b")
_AUXILIARIES = frozenset({"have", "has", "had", "been", "is", "was", "are", "were", "i've", "we've", "it's", "already"})
_ASSERTING = frozenset({"confirm", "confirmed", "assure", "guarantee", "promise", "see", "tell", "say", "report", "inform"})
_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)|\b(\d[\d,]*(?:\.\d+)?)\s?(?:dollars|usd|bucks)\b", re.IGNORECASE)
# The next three patterns are written to begin with the character class every match begins with (an
# upper-case letter, a digit), its lookbehind moved after that character: they match exactly what
# r"\b[A-Z]{2,5}-\d{3,}\b", r"(?<![\w$.,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{3,}(?:\.\d+)?)(?![\w-])" and
# r"(?<![A-Za-z_\d.])\d+(?:,\d{3})*(?:\.\d+)?" match, but a pattern that begins with an assertion is
# tried at every position of a text, while one that begins with a class skips to the characters of that
# class in C. RL-ADA's judge reads every tool result, tool call and customer turn with them (texts with
# fresh amounts, dates and ids each episode, so memoising misses): 2-3x faster per text (RL-ADA
# transcripts and tool results, one process; tests/scenarios/rlada/test_rlada_fast_paths.py holds the
# equality on every scripted text and on random and hostile texts).
ID_PATTERN = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z]{1,4}-\d{3,}\b")
"""Ids the bank hands out (``DSP-123456``, ``HUM-004211``, ``CARD-0042``, ``ACC-123456``): two to five
upper-case letters not preceded by a word character, a hyphen, three or more digits, a word boundary."""
_LONG_NUMBER = re.compile(r"(\d(?<![\w$.,-]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d{2,}(?:\.\d+)?))(?![\w-])")
_NUMBER = re.compile(r"\d(?<![A-Za-z_\d.]\d)\d*(?:,\d{3})*(?:\.\d+)?")


# -- vocabulary -------------------------------------------------------------------------------------
@lru_cache(maxsize=16)
def vocabulary(domain: Domain) -> frozenset[str]:
    """The scenario's own words, counted as real words: every word of its bank data (merchants, names,
    places), customer phrasing and lexicon topic words (``Netflix``, ``Chipotle``, ``contactless``)."""
    words: set[str] = set()

    def collect(value: Any) -> None:
        if isinstance(value, str):
            words.update(w for w in tokens(value) if not w[:1].isdigit())
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)

    collect(domain.bank)
    collect(domain.customer)
    for intent in domain.intents:
        collect(intent.direct)
        collect(intent.vague)
        collect(list(intent.phrasing.values()))
    return frozenset(words)


@lru_cache(maxsize=16)
def topic_words(domain: Domain) -> frozenset[str]:
    """Words that make a question about the call (``customer.json["understanding"]["topic_words"]``)."""
    return frozenset(domain.customer["understanding"]["topic_words"])


@lru_cache(maxsize=16)
def call_language(domain: Domain) -> frozenset[str]:
    """The words a bank support call is made of: the scenario's own words (:func:`vocabulary`), the
    topic words, ``customer.json["understanding"]["service_words"]`` and the words of the agent's
    prompt and tool descriptions. "Does your card like jazz music?" is mostly outside it."""
    words = set(vocabulary(domain)) | topic_words(domain) | set(domain.customer["understanding"]["service_words"])
    for tool in domain.tools:
        words.update(w for w in tokens(f"{tool.name.replace('_', ' ')} {tool.description}") if not w[:1].isdigit())
    return frozenset(words)


def _in_call_language(question: str, heard_words: frozenset[str], domain: Domain) -> bool:
    """Whether a real question asks about the call: a topic word or a word of the customer's, and at
    least :data:`ON_TOPIC_SHARE` of its non-vague content words in the call's language."""
    extra = vocabulary(domain)
    words = [w for w in content_words(question, extra) if w not in VAGUE_WORDS]
    if not words or not any(w in topic_words(domain) or w in heard_words for w in words):
        return False
    language = call_language(domain) | heard_words
    return sum(w in language for w in words) >= ON_TOPIC_SHARE * len(words)


def split_sentences(text: str) -> tuple[str, ...]:
    """:func:`~dialogue_gym.scenarios.understanding.sentences`, without splitting at a decimal point
    (``$1,234.50`` stays one amount)."""
    return _split(bound_text(text)[0])


@memoise_short_texts(maxsize=16384)
def _split(text: str) -> tuple[str, ...]:
    return tuple(piece.replace(_DOT, ".") for piece in sentences(_DECIMAL.sub(_DOT, text)))


# -- the customer's reading of an agent turn -------------------------------------------------------
@dataclass(frozen=True)
class AgentTurn:
    """What the customer makes of one spoken agent turn."""

    kind: str
    """``question``, ``statement``, or one of :data:`CONFUSING`."""
    reason: str | None = None
    """Why a confusing turn confuses (e.g. ``made_up_words``, ``keyword_list``, ``vague_question``)."""

    @property
    def confusing(self) -> bool:
        return self.kind in CONFUSING


def read_agent_turn(text: str, heard: Iterable[str], said: Iterable[str], domain: Domain) -> AgentTurn:
    """Classify an agent turn; ``heard`` are the customer's lines so far, ``said`` the agent's earlier
    spoken turns (both as the customer heard them)."""
    key = (bound_text(text)[0], tuple(heard), tuple(said))
    if sum(map(len, key[1] + key[2]), len(key[0])) <= MAX_CACHED_CALL_CHARS:
        return _read_agent_turn_cached(*key, domain)
    return _read_agent_turn(*key, domain)


def _read_agent_turn(text: str, heard: tuple[str, ...], said: tuple[str, ...], domain: Domain) -> AgentTurn:
    extra = vocabulary(domain)
    parts = split_sentences(text)
    if not parts:
        return AgentTurn("not_understood", "empty")
    readings = [read_sentence(part, extra) for part in parts]
    broken = [r.reason for r in readings if not r.understood and r.reason != "too_short"]
    if broken:
        return AgentTurn("not_understood", broken[0])
    understood = [part for part, r in zip(parts, readings) if r.understood]
    if not understood:
        return AgentTurn("content_free", "filler")
    if len(parts) > MAX_SENTENCES:
        return AgentTurn("monologue", "sentences")
    if heard and near_repeat(text, heard, extra) >= ECHO_OVERLAP:
        return AgentTurn("echo", "copies the customer")
    if said and near_repeat(text, said, extra) >= REPEAT_OVERLAP:
        return AgentTurn("repeat", "said before")
    questions = [part for part, r in zip(parts, readings) if r.understood and r.question]
    real = [q for q in questions if is_real_question(q, extra)]
    if len(real) > MAX_QUESTIONS:
        return AgentTurn("monologue", "questions")
    if real:
        heard_words = content_words(" ".join(heard), extra)
        if all(_in_call_language(q, heard_words, domain) for q in real):
            return AgentTurn("question")
        return AgentTurn("off_topic", "asks about something else")
    if questions:
        return AgentTurn("content_free", "vague_question")
    return AgentTurn("statement")


_read_agent_turn_cached = lru_cache(maxsize=16384)(_read_agent_turn)
"""Scripted calls repeat whole exchanges, so a short call's reading is memoised; a long (hostile) one
is read afresh so the cache cannot pin megabytes of text."""


# -- the customer's own turns ------------------------------------------------------------------------
def customer_turn_understood(text: str, domain: Domain) -> bool:
    """Whether a person understands a turn: it has words, and every sentence is understood or a short
    reply of real words (``"Okay, thanks."``); made-up words, a keyword list or babble anywhere, or a
    bare ``"?"``, and it is not."""
    return _customer_understood(bound_text(text)[0], domain)


@memoise_short_texts(maxsize=16384)
def _customer_understood(text: str, domain: Domain) -> bool:
    readings = [read_sentence(part, vocabulary(domain)) for part in split_sentences(text)]
    return bool(readings) and all(r.understood or (r.reason == "too_short" and not r.unknown) for r in readings)


def repeats_itself(text: str, earlier: Iterable[str], domain: Domain) -> bool:
    """Whether a turn near-repeats (:data:`REPEAT_OVERLAP`) an earlier turn of the same speaker."""
    return near_repeat(bound_text(text)[0], tuple(earlier), vocabulary(domain)) >= REPEAT_OVERLAP


# -- claims of fact in an agent turn -----------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """One claim of fact: the judge.json claim ``name``, its ``kind`` and ``target``, the words
    matched, the sentence they stand in, and whether it is a ``fact`` (it happened) or the agent's
    own ``promise`` (``I'll open a dispute``: kept when the tool succeeds later in the call)."""

    name: str
    kind: str
    target: str
    matched: str
    sentence: str
    mode: str = "fact"


def _mode(prefix: str) -> str | None:
    """How the words before a claim frame it: ``None`` (negated, or an offer), ``promise`` or ``fact``."""
    words = tokens(prefix)
    if any(w in _NEGATORS or w.endswith("n't") for w in words[-NEGATION_WINDOW:]):
        return None
    lowered = prefix.lower()
    framings = [(m.end(), "offer") for m in _OFFER.finditer(lowered)] + [(m.end(), "promise") for m in _PROMISE.finditer(lowered)]
    if not framings:
        return "fact"
    end, framing = max(framings)
    between = tokens(lowered[end:])
    if len(between) <= OFFER_GAP and not any(w in _AUXILIARIES or w in _ASSERTING for w in between):
        return None if framing == "offer" else "promise"
    return "fact"


def spoken_claims(text: str, domain: Domain) -> tuple[Claim, ...]:
    """The claims in ``text``: every claim pattern of ``data/judge.json`` that matches a declarative
    sentence (questions ask, they claim nothing) where it is neither negated (``I haven't refunded``)
    nor an offer (``I can request a refund``); the agent's promises (``I'll open a dispute``) are
    claims of mode ``promise``."""
    return _spoken_claims(bound_text(text)[0], domain)


@memoise_short_texts(maxsize=16384)
def _spoken_claims(text: str, domain: Domain) -> tuple[Claim, ...]:
    found = []
    gates = claim_gates(domain)
    for sentence in split_sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        lowered = sentence.lower() if sentence.isascii() else None
        for (name, kind, target, pattern), (words, folded) in zip(domain.claims, gates):
            if words is not None and not _may_match(words, folded, sentence, lowered):
                continue
            for match in pattern.finditer(sentence):
                mode = _mode(sentence[: match.start()])
                if mode is not None:
                    found.append(Claim(name, kind, target, match.group(0), sentence, mode))
    return tuple(found)


@lru_cache(maxsize=16)
def claim_gates(domain: Domain) -> tuple[tuple[tuple[str, ...] | None, bool], ...]:
    """:func:`required_words` of each claim pattern of ``domain``, in order, and whether it ignores case.

    :func:`_spoken_claims` searches a claim pattern only in sentences that hold one of its words: the
    claim patterns begin with a word boundary and an alternation of words, which the engine tries at
    every position of every sentence and which no single required run rules out
    (:func:`~dialogue_gym.scenarios.common.matching_patterns` gates only on one run). The judge reads
    every spoken agent turn, fresh amounts and ids in most, so memoising misses; gated, a turn's claims
    are read 2x faster (83 distinct agent turns of scripted calls, one process)."""
    return tuple((required_words(pattern), bool(pattern.flags & re.IGNORECASE)) for *_, pattern in domain.claims)


def required_words(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Runs of at least ``MIN_GATE_CHARS`` plain ASCII characters one of which every match of
    ``pattern`` contains (lower-cased when it ignores case), or None when its parse shows none: the
    first such run of the top-level sequence, or of a group in it (one without flags of its own), or
    of an item repeated at least once, or of every alternative of an alternation (then one per
    alternative); zero-width items are stepped over. A bytes pattern (the only kind with locale-dependent
    case) is not read."""
    if not isinstance(pattern.pattern, str):
        return None
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse as parser  # type: ignore[no-redef]
    try:
        items = list(parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # a parser of another Python version: no gate, search every sentence
        return None
    words = _sequence_words(items, parser)
    if words is None or not pattern.flags & re.IGNORECASE:
        return words
    return tuple(dict.fromkeys(word.lower() for word in words))


def _sequence_words(items: list[Any], parser: Any) -> tuple[str, ...] | None:
    """:func:`required_words` of one parsed sequence (``parser``: ``re``'s parser module)."""
    run: list[str] = []
    for opcode, argument in [*items, (None, None)]:
        if opcode == parser.LITERAL and argument < 128:
            run.append(chr(argument))
            continue
        if len(run) >= MIN_GATE_CHARS:
            return ("".join(run),)
        run = []
        words = None
        if opcode == parser.SUBPATTERN and not argument[1] and not argument[2]:
            words = _sequence_words(list(argument[3]), parser)
        elif opcode == parser.BRANCH:
            alternatives = [_sequence_words(list(branch), parser) for branch in argument[1]]
            if all(found is not None for found in alternatives):
                words = tuple(dict.fromkeys(word for found in alternatives for word in found))
        elif opcode in (parser.MAX_REPEAT, parser.MIN_REPEAT) and argument[0] >= 1:
            words = _sequence_words(list(argument[2]), parser)
        if words is not None:
            return words
    return None


def _may_match(words: tuple[str, ...], folded: bool, text: str, lowered: str | None) -> bool:
    """Whether ``text`` holds one of a pattern's :func:`required_words` (``lowered``: ``text``
    lower-cased when it is ASCII, else None). A pattern that ignores case is checked on ASCII texts
    only, where ignoring case is lower-casing; on others it may match (``K``, the Kelvin sign, is a ``k``)."""
    if folded:
        return lowered is None or any(word in lowered for word in words)
    return any(word in text for word in words)


def number_value(text: str) -> float | None:
    """A written number (``1,234.50``) as a float rounded to cents, or None when it is not one."""
    if text.isascii() and text.isdigit() and len(text) < 16:
        # Most numbers the judge reads are runs of ASCII digits (dates, ids, card digits in tool
        # results): below 1e15 such a float is whole, so it is its own cents and finite, and the general
        # path's replace and round change nothing; skipping them reads a get_transactions result's
        # numbers 1.2x faster (200 results, best of 5, one process;
        # tests/scenarios/rlada/test_rlada_fast_paths.py holds the equality).
        return float(text)
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return round(value, 2) if value == value and abs(value) < 1e15 else None


@dataclass(frozen=True)
class Values:
    """Amounts, ids and long numbers a text states."""

    amounts: tuple[float, ...]
    ids: tuple[str, ...]
    numbers: tuple[float, ...]


def quoted_values(text: str) -> Values:
    """The money amounts (``$42.80``, ``25,000 dollars``), ids (``DSP-123456``) and other numbers of
    three or more digits (ticket numbers, card digits, years) stated in ``text``."""
    return _quoted_values(bound_text(text)[0])


@memoise_short_texts(maxsize=16384)
def _quoted_values(text: str) -> Values:
    amounts = []
    spans = []
    for match in _MONEY.finditer(text):
        value = number_value(match.group(1) or match.group(2))
        if value is not None:
            amounts.append(value)
        spans.append(match.span())
    ids = tuple(ID_PATTERN.findall(text))
    stripped = ID_PATTERN.sub(" ", text)
    numbers = []
    for match in _LONG_NUMBER.finditer(stripped):
        if not any(start <= match.start() < end for start, end in spans):
            value = number_value(match.group(1))
            if value is not None:
                numbers.append(value)
    return Values(tuple(amounts), ids, tuple(numbers))


def evidence_numbers(text: str) -> frozenset[float]:
    """Every number written in ``text`` (tool results as JSON, the customer's words), for checking
    the values an agent states."""
    return _evidence_numbers(bound_text(text)[0])


@memoise_short_texts(maxsize=16384)
def _evidence_numbers(text: str) -> frozenset[float]:
    # Each distinct written number read once: tool results repeat dates, ids and amounts. _NUMBER has
    # no groups, so findall gives each whole match (in C, not a Python loop over match objects).
    return frozenset(v for v in map(number_value, set(_NUMBER.findall(text))) if v is not None)


# -- whether a customer turn tells the truth about its problem ----------------------------------------
HEDGES = re.compile(
    r"\b(?:maybe|might|perhaps|possibly|wonder(?:ing)?|whether|if|whatever|not sure|unsure|worr\w*|afraid|think|guess|"
    r"seems?|could|or something|know|understand|check|want(?:ed)? to|need to|would like|like to)\b",
    re.IGNORECASE,
)
"""Words that make a clause a worry, an inquiry or a request ("maybe I was charged twice", "I want to
know what's pending", "I'd like to move some money") rather than an assertion that something happened."""
_CLAUSE = re.compile(r",|;|\b(?:and|but|so|then|plus)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Misdirection:
    """How a customer turn points away from its own problem (``data/UNDERSTANDING.md``).

    ``asserted``: a clause states as fact a problem another tool serves ("my card was declined" from a
    caller whose card is fine): a problem the customer does not have. ``worried``: the other tools'
    cues stand only in worries or questions ("maybe I was charged twice?"), the side worries of
    contextual camouflage. ``disclosed``: the turn states its own problem as the agent could act on
    it (its own tool leads the turn's cues alone)."""

    asserted: bool
    worried: bool
    disclosed: bool


def own_tools(intent: Intent, domain: Domain) -> frozenset[str]:
    """The tools the customer's problem points at: its intent's tool, and every tool whose cues the
    customer's own descriptions of its problem carry (its ``direct``, ``vague``, ``hint`` and
    ``camouflage_followup`` lines, which hold no side worries), so the lexicon's overlaps ("I need to
    order a new card" is a card cue for an escalation intent) never make a truthful line a false one."""
    return _own_tools(intent.name, domain)


@lru_cache(maxsize=1024)
def _own_tools(name: str, domain: Domain) -> frozenset[str]:
    from dialogue_gym.scenarios.rlada.customers import family_lines  # customers reads agent turns with this module


    intent = domain.intent(name)
    tools = {intent.tool}
    lines = (*intent.direct, *intent.vague, *family_lines(domain, intent, "hint"), *family_lines(domain, intent, "camouflage_followup"))
    for line in lines:
        tools.update(tool for tool, hits in cue_hits(line, domain).items() if hits)
    return frozenset(tools)


def misdirection(text: str, intent: Intent, domain: Domain) -> Misdirection:
    """Read a customer turn against its own problem: clause by clause, a clause with cues of a tool
    outside :func:`own_tools` and none of the intent's tool is an assertion of another problem unless
    it is hedged (:data:`HEDGES`) or stands in a question."""
    return _misdirection(bound_text(text)[0], intent.name, domain)


@memoise_short_texts(maxsize=16384)
def _misdirection(text: str, name: str, domain: Domain) -> Misdirection:
    intent = domain.intent(name)
    mine = own_tools(intent, domain)
    asserted = worried = False
    for sentence in split_sentences(text):
        question = sentence.rstrip().endswith("?")
        for clause in _CLAUSE.split(sentence):
            hits = cue_hits(clause, domain)
            elsewhere = any(hits[tool] for tool in hits if tool not in mine)
            if not elsewhere or hits[intent.tool]:
                continue
            if question or HEDGES.search(clause):
                worried = True
            else:
                asserted = True
    hits = cue_hits(text, domain)
    best = max(hits.values())
    disclosed = best > 0 and hits[intent.tool] == best and sum(1 for value in hits.values() if value == best) == 1
    return Misdirection(asserted, worried and not asserted, disclosed)


# -- whether the customer told its problem before the agent acted -----------------------------------
MAX_SIDE_PROBLEMS = 2
"""A story may point at up to this many other problems beside its own (other tools by their cues, other
families by their signs): contextual camouflage's side worries. More is a recital of every problem,
which tells none (the scripted customers' stories point at two other tools and one other family at most)."""


def problem_signs(text: str, domain: Domain) -> frozenset[str]:
    """The families whose problem signs (``lexicon.json["problem_signs"]``) ``text`` carries."""
    return _problem_signs(bound_text(text)[0], domain)


@memoise_short_texts(maxsize=16384)
def _problem_signs(text: str, domain: Domain) -> frozenset[str]:
    # any_pattern_matches(patterns, text) family by family, through the gates of sign_gates.
    lowered = text.lower() if text.isascii() else None
    found: set[str] = set()
    for family, pattern, words, folded in sign_gates(domain):
        if family in found:
            continue
        if words is not None:
            hay = lowered if folded else text
            if hay is not None:
                for word in words:
                    if word in hay:
                        break
                else:
                    continue
        if pattern.search(text):
            found.add(family)
    return frozenset(found)


@lru_cache(maxsize=16)
def sign_gates(domain: Domain) -> tuple[tuple[str, re.Pattern[str], tuple[str, ...] | None, bool], ...]:
    """``(family, pattern, required_words, ignores case)`` of every problem-sign pattern of ``domain``,
    family by family in order.

    :func:`_problem_signs` searches a pattern only in a text that holds one of its
    :func:`required_words` (lower-cased, for a pattern that ignores case, when the text is ASCII, as
    :func:`_may_match` checks), in one loop over all 131 patterns: family by family through
    :func:`~dialogue_gym.scenarios.common.any_pattern_matches`, whose gate is one literal run a pattern
    (none for an alternation of words, which are then searched in every text), a fresh customer line's
    signs took 1.7x as long (336 distinct lines of scripted calls, one process). Every episode's story
    is read for them at its end, with the episode's amounts and merchants, so memoising misses."""
    return tuple(
        (family, pattern, required_words(pattern), bool(pattern.flags & re.IGNORECASE))
        for family, patterns in domain.signs.items()
        for pattern in patterns
    )


def told_problem(story: Iterable[str], intent: Intent, domain: Domain) -> bool:
    """Whether ``story`` (the customer's understood turns before the agent acted) told the customer's
    own problem, plainly or buried: a cue of one of its :func:`own_tools` or a sign of its family's
    problem, in a story that points at no more than :data:`MAX_SIDE_PROBLEMS` other tools and other
    families. A side worry is camouflage only beside the customer's own story; a story of side worries
    alone tells a problem the customer does not have."""
    story = tuple(bound_text(text)[0] for text in story)
    tools = {tool for text in story for tool, hits in cue_hits(text, domain).items() if hits}
    families = frozenset().union(*(problem_signs(text, domain) for text in story))
    mine = own_tools(intent, domain)
    own = bool(tools & mine) or intent.family in families
    return own and len(tools - mine) <= MAX_SIDE_PROBLEMS and len(families - {intent.family}) <= MAX_SIDE_PROBLEMS
