"""The scripted user simulator: the embedded, weight-free default user of SEAD-Outbound.

Two layers (DESIGN "Scores follow quality"): the recogniser (:mod:`dialogue_gym.scenarios.sead.acts`)
says what the owner understood of the agent's turn, and the dynamics here move (c, e, tr) with
stochastic rules that follow SEAD's reference role-play rules (SPEC section 1):

* it only does the operation with cooperation >= 3, and only by being walked through it: each step
  (open the app, tap 'get more exposure', claim the credit) given as an understood instruction, in
  order, one step a turn; success is rolled when the claim step lands, never on a later turn;
* with cooperation <= 1 or emotion == 0 it hangs up, unless the agent's last turn improved things;
* trust falls when the caller evades (silence, questions that ask nothing, echoing its words),
  sounds robotic (monologues, repetition) or makes no sense (made-up words, keyword strings); after
  ``nonsense_limit`` such turns it hangs up;
* a concern (one of its behaviors) left unresolved for more than 3 rounds makes it hang up.

What helps depends on the user: an upset user needs empathy before a pitch, a sceptical one needs
evidence, a busy one short turns, each behavior its own answer; hearing the same act again helps
less and less (``saturation``); pressure and repetition backfire. It voices its state (irritation,
doubt, readiness) with noise: hesitations and attention lapses. ``data/UNDERSTANDING.md`` says what
it understands and why.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from dialogue_gym.scenarios.sead.acts import OFF_SCRIPT, STEPS, VOCABULARY, Recognition, analyze
from dialogue_gym.scenarios.sead.data import Behavior, BehaviorLibrary
from dialogue_gym.scenarios.sead.game import MIN_COOPERATION_TO_ACT, SILENCE
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.scenarios.sead.prompts import caller_words
from dialogue_gym.scenarios.sead.state import TOP_COOPERATION, TOP_EMOTION, TOP_TRUST
from dialogue_gym.scenarios.understanding import content_words, highest_overlap
from dialogue_gym.simulators.base import ScriptedPolicy


@dataclass(frozen=True)
class UserDynamics:
    """Probabilities and thresholds of the scripted user; tune here, never in the rules."""

    lapse: float = 0.04
    long_turn_words: int = 40
    long_turn_lapse: float = 0.15
    repeat_similarity: float = 0.6
    """:func:`~dialogue_gym.scenarios.understanding.near_repeat` at or above this is "you already said that"."""
    echo_share: float = 0.8
    """A turn whose content words come from the owner's last line at this share is an echo, not an answer."""
    echo_min_words: int = 3
    """An echo has at least this many content words ("No fees." after "hidden fees?" is an answer)."""
    nonsense_limit: int = 3
    """Turns that make no sense, evade or echo before the owner hangs up."""
    saturation: tuple[float, ...] = (1.0, 0.5, 0.25)
    """How much the n-th hearing of an act still moves the state (0 after the last entry)."""
    patience_rounds: int = 3
    ignored_question: float = 0.5
    """Chance that trust drops (half of it: emotion too) when the caller's next turn does not answer
    the concern just raised."""
    ignored_readiness: float = 0.4
    """Chance that emotion drops when the owner asked what to do and the caller gives no step."""
    pushed: float = 0.2
    """Chance that trust drops (besides emotion) when told to do the operation before agreeing."""
    max_voice_turn: int = 5
    act_probability: tuple[float, float] = (0.7, 0.9)
    step_success: tuple[float, float] = (0.95, 0.6)
    """Chance the owner manages a step: usually, or when not good with apps and not told simply."""
    steps_per_turn: int = 2
    """Operation steps the owner follows from one turn ("Open the app and tap 'get more exposure'")."""
    grumpy_hangup: float = 0.1
    floor_hangup: float = 0.5
    let_go: float = 0.35
    open_concern_factor: float = 0.5
    filler_penalty: float = 0.3
    hesitation: float = 0.15


STEP_DONE: dict[str, str] = {"open_app": "Okay, the app is open.", "tap_entry": "Okay, I tapped 'get more exposure'."}
"""What the owner says after doing a step (the claim step ends the call or asks again)."""
STEP_STUCK = "Hmm, where is that? I can't find it."
CLAIM_STUCK = "Hmm, wait, let me look at this screen again."
COMPLETED = "Okay, I got the SMS and the pop-up. It's done."


@dataclass
class UserMemory:
    rng: random.Random
    behaviors: tuple[Behavior, ...]
    categories: frozenset[str]
    voice_at: dict[str, int]
    open: dict[str, int] = field(default_factory=dict)
    voiced: set[str] = field(default_factory=set)
    agent_words: list[frozenset[str]] = field(default_factory=list)
    """The content words of everything the caller said, for near-repeat checks (worked out once each)."""
    last_reply: str = ""
    """The owner's own last words (an echo of them is not an answer)."""
    heard: dict[str, int] = field(default_factory=dict)
    """How often each act has landed (effects saturate)."""
    nonsense: int = 0
    repeat_ok: bool = False
    """The owner asked to hear the last turn again (it missed it)."""
    step_again: bool = False
    """The owner could not do a step and waits to hear it again (a repeat of it is no repetition)."""
    interested: bool = False
    identity_checked: bool = False
    heard_cost: bool = False
    heard_rules: bool = False
    steps_done: int = 0
    """Operation steps the owner has done, in order (``len(STEPS)`` = claimed)."""
    claiming: bool = False
    asked_next: bool = False
    """The owner just asked what to do (a turn without a step ignores it)."""


_BUSY = "Progress_Expediting"
_FILLER = frozenset({"empathy", "greeting", "respect_time", "simplify"})
_CONFUSED = "Communication_and_Comprehension"
_OPERATIONAL = "Operational_Concerns"


def _clamp(c: int, e: int, tr: int) -> tuple[int, int, int]:
    # Comparisons, not min/max: two clamps a turn, and the builtin calls were most of their cost.
    c = 0 if c < 0 else TOP_COOPERATION if c > TOP_COOPERATION else c
    e = 0 if e < 0 else TOP_EMOTION if e > TOP_EMOTION else e
    tr = 0 if tr < 0 else TOP_TRUST if tr > TOP_TRUST else tr
    return c, e, tr


def _one(rng: random.Random, options: tuple[str, ...]) -> str:
    return options[rng.randrange(len(options))]


def echoes(utterance: str, owner_line: str, share: float, min_words: int) -> bool:
    """Whether ``utterance`` is the owner's own line handed back: at least ``min_words`` content
    words, and at least ``share`` of them taken from ``owner_line``."""
    return words_echo(content_words(utterance, VOCABULARY), owner_line, share, min_words)


def words_echo(mine: frozenset[str], owner_line: str, share: float, min_words: int) -> bool:
    """:func:`echoes` of an utterance whose content words ``mine`` are already worked out (the owner
    reads them for its near-repeat check first)."""
    if len(mine) < min_words:
        return False
    return len(mine & content_words(owner_line, VOCABULARY)) >= share * len(mine)


class ScriptedUser(ScriptedPolicy):
    """Seeded scripted user. ``act`` returns the tagged user record the game parses."""

    def __init__(self, library: BehaviorLibrary, dynamics: UserDynamics | None = None):
        self.library = library
        self.dynamics = dynamics or UserDynamics()

    def start(self, profile: dict[str, Any], seed: int) -> UserMemory:
        rng = random.Random(seed)
        behaviors = tuple(self.library[b] for b in profile["behaviors"])
        voice_at = {b.id: 1 if b.category == _BUSY else rng.randint(1, self.dynamics.max_voice_turn) for b in behaviors}
        return UserMemory(rng=rng, behaviors=behaviors, categories=frozenset(b.category for b in behaviors), voice_at=voice_at)

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: UserMemory) -> str:
        d = self.dynamics
        rng = memory.rng
        utterance = caller_words(observation["messages"][-1]["content"])
        turn = int(observation["turn"])
        c, e, tr = observation["state"].tolist()
        start = (c, e, tr)
        recognition = analyze("" if utterance.strip() == SILENCE else utterance)
        silent = recognition.silent
        said: list[str] = []

        def chance(p: float) -> int:
            return int(rng.random() < p)

        categories = memory.categories
        lapse_p = d.lapse + (d.long_turn_lapse if recognition.words > d.long_turn_words else 0.0)
        if rng.random() < lapse_p:
            memory.repeat_ok = True
            said.append("Sorry, I missed that. What did you say?")
            return self._finish(memory, rng, said, (c, e, tr), start, turn, lapse=True)

        just_asked = [behavior_id for behavior_id, age in memory.open.items() if age == 0]
        asked_again = memory.repeat_ok or (memory.step_again and bool(recognition.steps))
        words = content_words(utterance, VOCABULARY)
        repeated = not asked_again and highest_overlap(words, memory.agent_words) >= d.repeat_similarity
        echo = words_echo(words, memory.last_reply, d.echo_share, d.echo_min_words)
        memory.agent_words.append(words)
        memory.repeat_ok = False
        memory.step_again = memory.step_again and not recognition.steps
        acts = frozenset() if (repeated or echo) else recognition.acts - {OFF_SCRIPT}
        evasive = not acts and recognition.vague_questions > 0

        if silent:
            tr -= chance(0.3)
            said.append("Hello? Are you still there?")
        elif recognition.confusing:
            tr -= chance(0.5)
            e -= chance(0.3)
            said.append(_one(rng, ("What are you talking about?", "Sorry, that makes no sense to me.")))
        elif echo:
            tr -= chance(0.5)
            e -= chance(0.3)
            said.append("Why are you repeating what I say?")
        elif evasive:
            tr -= chance(0.4)
            said.append("What do you mean? You called me.")
        if silent or recognition.confusing or echo or evasive:
            memory.nonsense += 1
            if memory.nonsense >= d.nonsense_limit:
                said.append("I can't follow you at all. Goodbye.")
                return self._emit(memory, rng, said, _clamp(c, e, tr), status=-1)
        if repeated:
            e -= chance(0.6)
            tr -= chance(0.3)
            said.append("You already said that.")
        if recognition.monologue:
            tr -= chance(0.6)
            e -= chance(0.3)
            said.append("You sound like you're reading a script.")
        elif not acts and not said:
            tr -= chance(0.3)
            said.append("What is this about?")
        if "pressure" in acts:
            e -= chance(0.6)
            tr -= chance(0.4)
            c -= chance(0.3)
            said.append("Don't push me.")
        if "deny_ai" in acts:
            tr -= chance(0.5)
        if "closing" in acts and c < MIN_COOPERATION_TO_ACT:
            said.append("Okay then, bye.")
            return self._emit(memory, rng, said, _clamp(c, e, tr), status=-1)
        if "guide" in acts and c < MIN_COOPERATION_TO_ACT:
            e -= chance(0.4)
            tr -= chance(d.pushed)
            said.append("Hold on, I haven't agreed to anything.")
        if "value" in acts and e <= 1 and "empathy" not in acts:
            e -= chance(0.5)
        if _BUSY in categories and recognition.words > 30:
            e -= chance(0.5)
        if _CONFUSED in categories and recognition.words > 35:
            tr -= chance(0.3)

        if acts:
            fresh = {act: self._freshness(memory, act) for act in acts}
            resolved_now = False
            if turn <= 2 and acts & {"greeting", "self_intro"}:
                e += chance(0.3)
            if "identity_check" in acts:
                memory.identity_checked = True
            for behavior_id in list(memory.open):
                if self.library[behavior_id].resolved_by & acts:
                    del memory.open[behavior_id]
                    resolved_now = True
                    tr += chance(0.6)
                    c += chance(0.35)
                    said.append(_one(rng, ("Okay, that answers it.", "Alright, fair enough.", "I see.")))
            if "empathy" in acts:
                e += chance((0.8 if e <= 1 else 0.15) * fresh["empathy"])
            if "evidence" in acts:
                if tr <= 2:
                    tr += chance(0.7 * fresh["evidence"])
                else:
                    c += chance(0.3 * fresh["evidence"])
            if "value" in acts and (e >= 2 or "empathy" in acts):
                if not memory.interested:
                    gained = chance(0.6)
                    c += gained
                    memory.interested = bool(gained) or memory.interested
                else:
                    c += chance((0.25 if tr >= 3 else 0.1) * fresh["value"])
            if "cost" in acts and not memory.heard_cost:
                memory.heard_cost = True
                tr += chance(0.3)
                c += chance(0.3)
            if "rules" in acts and not memory.heard_rules:
                memory.heard_rules = True
                tr += chance(0.3)
                c += chance(0.2)
            if "respect_time" in acts and _BUSY in categories:
                e += chance(0.5 * fresh["respect_time"])
            if "guide" in acts and c >= MIN_COOPERATION_TO_ACT:
                self._follow(memory, rng, recognition, acts, tr, said)
            if acts <= _FILLER and turn > 1 and e >= 2 and not resolved_now:
                c -= chance(d.filler_penalty)
                said.append("So what is this about?")
        if any(behavior_id in memory.open for behavior_id in just_asked):
            tr -= chance(d.ignored_question)
            e -= chance(d.ignored_question / 2)
            said.append("You didn't answer my question.")
        if memory.asked_next and not recognition.steps:
            e -= chance(d.ignored_readiness)
            said.append("I asked you what to do.")
        memory.asked_next = False
        if turn == 2 and not memory.identity_checked:
            tr -= 1
            said.append("Who are you even looking for?")
        return self._finish(memory, rng, said, (c, e, tr), start, turn)

    def _freshness(self, memory: UserMemory, act: str) -> float:
        """How much hearing ``act`` once more still moves the owner (``saturation``), counting it."""
        times = memory.heard.get(act, 0)
        memory.heard[act] = times + 1
        saturation = self.dynamics.saturation
        return saturation[times] if times < len(saturation) else 0.0

    def _follow(self, memory: UserMemory, rng: random.Random, recognition: Recognition, acts: frozenset[str], tr: int, said: list[str]) -> None:
        """Do the operation steps the caller just gave, in order from the next one due, at most
        ``steps_per_turn`` of them (the owner is doing them on the phone while listening)."""
        if STEPS[memory.steps_done] not in recognition.steps:
            ahead = any(STEPS.index(step) > memory.steps_done for step in recognition.steps)
            said.append("Wait, I haven't done the first part yet." if ahead else "I did that already.")
            return
        if tr < 2:
            said.append("I'm not sure I trust this enough to do it.")
            return
        usual, unhandy = self.dynamics.step_success
        needs_help = _OPERATIONAL in memory.categories and "simplify" not in acts
        for _ in range(self.dynamics.steps_per_turn):
            due = STEPS[memory.steps_done]
            if due not in recognition.steps:
                return
            if rng.random() >= (unhandy if needs_help else usual):
                memory.step_again = True
                said.append(STEP_STUCK)
                return
            if due == STEPS[-1]:
                memory.claiming = True
                return
            memory.steps_done += 1
            said.append(STEP_DONE[due])

    def _finish(self, memory, rng, said, state, start, turn, lapse=False) -> str:
        d = self.dynamics
        c, e, tr = _clamp(*state)
        claiming, memory.claiming = memory.claiming, False
        for behavior_id in list(memory.open):
            memory.open[behavior_id] += 1
            if lapse:
                continue
            if (tr >= 3 or c >= MIN_COOPERATION_TO_ACT) and e >= 2 and rng.random() < d.let_go:
                del memory.open[behavior_id]
                continue
            tr -= int(rng.random() < 0.25)
            e -= int(rng.random() < 0.1)
        for behavior in memory.behaviors:
            due = memory.voice_at[behavior.id] <= turn and behavior.id not in memory.voiced
            if due and not memory.open:
                memory.open[behavior.id] = 0
                memory.voiced.add(behavior.id)
        c, e, tr = _clamp(c, e, tr)
        if any(age > d.patience_rounds for age in memory.open.values()):
            said.append("I asked you already. Forget it.")
            return self._emit(memory, rng, said, (c, e, tr), status=-1)
        improved = c > start[0] or e > start[1] or tr > start[2]
        worsened = c < start[0] or e < start[1] or tr < start[2]
        at_floor = c <= 1 or e == 0
        if at_floor and not lapse and (worsened or (not improved and rng.random() < d.floor_hangup)):
            said.append(_one(rng, ("I'm not interested. Goodbye.", "I don't have time for this.")))
            return self._emit(memory, rng, said, (c, e, tr), status=-1)
        if e == 1 and not improved and rng.random() < d.grumpy_hangup:
            said.append("That's enough, I'm hanging up.")
            return self._emit(memory, rng, said, (c, e, tr), status=-1)
        if claiming and c >= MIN_COOPERATION_TO_ACT:
            low, high = d.act_probability
            distracted = d.open_concern_factor if memory.open else 1.0
            if rng.random() < (low if c == MIN_COOPERATION_TO_ACT else high) * distracted:
                memory.steps_done = len(STEPS)
                said.append(COMPLETED)
                return self._emit(memory, rng, said, (c, e, tr), status=1)
            memory.step_again = True
            said.append(CLAIM_STUCK)
        self._voice(memory, rng, said, (c, e, tr))
        return self._emit(memory, rng, said, (c, e, tr), status=0)

    def _voice(self, memory: UserMemory, rng: random.Random, said: list[str], state) -> None:
        c, e, tr = state
        for behavior_id in memory.open:
            said.append(_one(rng, self.library[behavior_id].lines))
        if memory.open:
            return
        if c >= MIN_COOPERATION_TO_ACT and tr >= 2 and rng.random() < 0.8:
            memory.asked_next = True
            said.append("Alright, so what do I need to do?" if memory.steps_done == 0 else "Okay, what's next?")
        elif tr <= 2 and rng.random() < 0.5:
            said.append("I'm not sure I believe this.")
        elif c <= 2 and rng.random() < 0.5:
            said.append(_one(rng, ("Hmm, why would I need this?", "I'm not really interested.")))
        if e <= 1 and rng.random() < 0.7:
            said.insert(0, _one(rng, ("Ugh.", "Look,", "Honestly, this is annoying.")))

    def _emit(self, memory: UserMemory, rng: random.Random, said: list[str], state, status: int) -> str:
        if not said:
            said.append(_one(rng, ("Uh-huh.", "Okay.", "Go on.")))
        if rng.random() < self.dynamics.hesitation:
            said.insert(0, "Uh,")
        think = f"open concerns: {sorted(memory.open)}; steps done: {memory.steps_done}/{len(STEPS)}; nonsense turns: {memory.nonsense}"
        reply = " ".join(said)
        memory.last_reply = reply
        return render_user_output(reply, state, status, think)
