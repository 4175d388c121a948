"""Recogniser of SEAD-Outbound: what the restaurant owner makes of one agent turn.

The scripted owner reacts to *what was said*, so this module turns an agent turn into a
:class:`Recognition` in two steps (see ``data/UNDERSTANDING.md`` for the owner's side):

1. :func:`dialogue_gym.scenarios.understanding.read_sentence` reads every sentence. A sentence of
   made-up words, a keyword list, a run of nouns without a function word or babble is *not
   understood*: it carries nothing and makes the turn confusing. A short reply ("Sure.", "Hi!")
   carries only social acts (:data:`SHORT_ACTS`); two or more short fragments that name cues
   ("No fees. Tap. SMS.") are a keyword list read aloud and confusing too.
2. Each understood sentence is matched against transparent act patterns (:data:`ACTS`): an act
   counts only when an understood sentence carries it. The operation steps (:data:`STEPS`) count
   only as instructions (``"Open your merchant app"``), never inside an offer ("Would you like to
   claim it?").

A turn has limits: more than :data:`MAX_ACTS_PER_TURN` acts, :data:`MAX_SENTENCES_PER_TURN`
sentences or :data:`MAX_WORDS_PER_TURN` words is a monologue, and nothing in it lands. Questions that
ask nothing ("?", "And?", "Could you tell me more?") are counted, so the owner can hear evasion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dialogue_gym.scenarios.common import memoise_short_texts
from dialogue_gym.scenarios.understanding import Reading, is_real_question, read_sentence, sentences

VOCABULARY: frozenset[str] = frozenset({"foodmap", "alex", "sms", "pop-up", "popup", "back-office", "backoffice"})
"""The campaign's own words, counted as real words by the sentence reader."""

_PATTERNS: dict[str, str] = {
    "greeting": r"\b(hello|hi|hey|good (morning|afternoon|evening))\b",
    "self_intro": r"\b(my name is|this is \w+ (from|at|with)|calling from|i'm calling from|i am calling from)\b",
    "identity_check": r"\b(owner|manager|person in charge|in charge of|the boss)\b",
    "value": r"\b(free (ad |advertising )?credit|(?<!get more )exposure|more customers|more orders|visibility|attract|boost)\b",
    "evidence": r"(\b\d{2,3},?000\b|\b500k\b|\b4\.6\b|\brating\b|\bdata show|\bother restaurants\b|\bon average\b|\bper cent\b|%)",
    "cost": r"\b(no (hidden )?(fee|fees|cost|costs|charge|charges)|nothing to pay|costs? you nothing|free of charge|won't be charged|not be charged)\b",
    "rules": r"\b(pay[- ]per[- ]click|switch (it )?off|turn (it )?off|stop it anytime|any ?time|no date limit|no deadline|end of the year|year end)\b",
    "confirm": r"\b(700|to confirm|just to confirm|again, it's|that's right)\b",
    "empathy": r"\b(i understand|understand(able)?|sorry|i hear you|appreciate|no worries|fair question|totally fair|makes sense that)\b",
    "respect_time": r"\b(quick(ly)?|brief(ly)?|one minute|a minute|won't take long|keep it short|short version)\b",
    "simplify": r"\b(simply|in short|put simply|in other words|basically|step by step)\b",
    "pressure": r"\b(must|have to|right now|immediately|last chance|hurry|don't miss|only today|act now|you need to)\b",
    "closing": r"\b(goodbye|bye|have a (nice|good|great) day|thanks? (you )?for your time)\b",
    "ai_disclosure": r"\b(i'm|i am) (an? )?(ai|virtual|automated|digital) (assistant|agent)\b",
    "deny_ai": r"\b(i'm|i am) (a )?(real|human)( person)?\b|\bnot a (robot|machine|bot)\b",
}

STEPS: tuple[str, ...] = ("open_app", "tap_entry", "claim")
"""The operation, in order (SPEC section 1, SOP stage 2): open the merchant back-office app, tap the
'get more exposure' entry, claim the credit (confirmed by an SMS and a pop-up)."""

_STEP_PATTERNS: dict[str, str] = {
    "open_app": r"\bopen\b[^.!?]{0,40}\bapp\b",
    "tap_entry": r"\b(tap|press|click|select|touch|hit|go to|find)\b[^.!?]{0,30}\bget more exposure\b",
    "claim": r"\bclaim\b[^.!?]{0,30}\b(credit|it|button|offer)\b",
}
_READINESS = re.compile(r"\b(claim|try|set (it|this) up|walk you through|get (it )?started|activate)", re.IGNORECASE)
_OFFER = re.compile(r"\b(would you like|do you want|shall i|should i|want me to|ready to|interested in|may i|can i walk)\b", re.IGNORECASE)
"""A step inside an offer or a readiness question is not an instruction."""

GUIDE = "guide"
"""The act of giving an operation step (any of :data:`STEPS`)."""
ASK_READINESS = "ask_readiness"
"""Asking whether the owner is ready to claim ("Would you like to claim it now?")."""
OFF_SCRIPT = "off_script"
"""No recognised act: small talk, or nothing understood."""

ACTS: frozenset[str] = frozenset(_PATTERNS) | {GUIDE, ASK_READINESS, OFF_SCRIPT}
"""Every act the recogniser can emit (behavior files name them under ``resolved_by``)."""

SHORT_ACTS: frozenset[str] = frozenset({"greeting", "closing", "empathy"})
"""What a reply shorter than a sentence ("Hi!", "Sorry.", "Goodbye.") can carry."""

MAX_ACTS_PER_TURN = 4
"""More distinct acts than this in one turn is a monologue (the opening greets, introduces,
apologises and checks identity: four)."""
MAX_SENTENCES_PER_TURN = 4
"""More sentences than this in one turn is a monologue: a phone call is not a brochure."""
MAX_WORDS_PER_TURN = 60
"""More words than this in one turn is a monologue."""
MAX_FRAGMENTS = 1
"""More cue-bearing fragments than this ("No fees. Tap. SMS.") is a keyword list read aloud."""
MAX_UNKNOWN_WORDS = 1
"""More made-up words than this in one sentence and the owner does not follow it, whatever their
share: the campaign's names are in :data:`VOCABULARY`, so two unknown words are not a name."""
MIN_WORDS_PER_ACT = 4
"""A sentence carrying two or more acts (greetings, introductions, apologies and goodbyes do not
count, see :data:`SOCIAL_ACTS`; the operation steps count as one, ``guide``: "Open the app and tap
'get more exposure'" is one instruction) needs this many words per act (real words: made-up ones add nothing); fewer is cue words strung together ("owner open the app
anytime 700"), not a statement."""
SOCIAL_ACTS: frozenset[str] = frozenset({"greeting", "self_intro", "empathy", "closing"})
"""Social acts ride along with what a sentence says ("Hello, this is Alex from FoodMap, sorry to
bother you" is one greeting, not three claims)."""

_COMPILED = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _PATTERNS.items())
_COMPILED_STEPS = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _STEP_PATTERNS.items())


@dataclass(frozen=True)
class Recognition:
    """What the owner understood of one agent turn."""

    acts: frozenset[str]
    """The acts that land: carried by understood sentences, none on a monologue; ``{"off_script"}``
    when nothing landed."""
    steps: tuple[str, ...]
    """Operation steps given as instructions in understood sentences (empty on a monologue)."""
    carried: frozenset[str]
    """Every act the understood sentences carried, before the monologue rule."""
    understood: int
    """Understood sentences."""
    confusing: tuple[str, ...]
    """Why parts of the turn were not understood (``read_sentence`` reasons, ``"keyword_fragments"``);
    empty when everything said made sense."""
    vague_questions: int
    """Questions that ask nothing ("?"-only turns are silence, not questions)."""
    words: int
    monologue: bool

    @property
    def silent(self) -> bool:
        """Nothing was said (no word at all)."""
        return self.words == 0


def _sentence_acts(sentence: str) -> tuple[frozenset[str], tuple[str, ...]]:
    acts = frozenset(name for name, pattern in _COMPILED if pattern.search(sentence))
    if _OFFER.search(sentence):
        return (acts | {ASK_READINESS} if _READINESS.search(sentence) else acts), ()
    steps = tuple(name for name, pattern in _COMPILED_STEPS if pattern.search(sentence))
    return (acts | {GUIDE} if steps else acts), steps


def _not_understood(reading: Reading, acts: frozenset[str]) -> str | None:
    """Why the owner does not follow a sentence (``None`` when it does): the shared reader's reason,
    two made-up words, or cue words strung together (``"crammed"``)."""
    if not reading.understood:
        return reading.reason
    if len(reading.unknown) > MAX_UNKNOWN_WORDS:
        return "made_up_words"
    units = len(acts - SOCIAL_ACTS)
    if units >= 2 and len(reading.words) - len(reading.unknown) < MIN_WORDS_PER_ACT * units:
        return "crammed"
    return None


@memoise_short_texts(maxsize=8192)
def analyze(utterance: str) -> Recognition:
    """Recognise one agent turn (the caller bounds its length; the game reads at most
    ``max_utterance_chars``). Pure and memoised for short texts."""
    carried: set[str] = set()
    steps: list[str] = []
    confusing: list[str] = []
    understood = fragments = vague = words = 0
    for sentence in sentences(utterance):
        reading = read_sentence(sentence, VOCABULARY)
        words += len(reading.words)
        acts, sentence_steps = _sentence_acts(sentence)
        reason = _not_understood(reading, acts)
        if reading.question and not is_real_question(sentence, VOCABULARY) and not acts:
            vague += 1
        if reason is None:
            understood += 1
            carried |= acts
            steps.extend(step for step in sentence_steps if step not in steps)
        elif reason == "too_short":
            carried |= acts & SHORT_ACTS
            fragments += bool(acts - SHORT_ACTS)
        else:
            confusing.append(reason)
    if fragments > MAX_FRAGMENTS:
        confusing.append("keyword_fragments")
    monologue = len(carried) > MAX_ACTS_PER_TURN or understood > MAX_SENTENCES_PER_TURN or words > MAX_WORDS_PER_TURN
    landed = frozenset() if monologue else frozenset(carried)
    return Recognition(
        acts=landed or frozenset({OFF_SCRIPT}),
        steps=() if monologue else tuple(steps),
        carried=frozenset(carried),
        understood=understood,
        confusing=tuple(confusing),
        vague_questions=vague,
        words=words,
        monologue=monologue,
    )
