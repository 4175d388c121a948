"""The scripted user simulator: the embedded, weight-free default user of SEAD-Outbound.

It reacts to the agent's free text through the dialogue-act analyzer and moves (c, e, tr) with
stochastic rules that follow SEAD's reference role-play rules (SPEC section 1):

* it only does the operation with cooperation >= 3, after being guided through it;
* with cooperation <= 1 or emotion == 0 it hangs up, unless the agent's last turn improved things;
* trust falls when the caller evades, sounds robotic (off-script, crammed, repeated) or ignores a question;
* a concern (one of its behaviors) left unresolved for more than 3 rounds makes it hang up.

What helps depends on the user: an upset user needs empathy before a pitch, a sceptical one needs
evidence, a busy one short turns, each behavior its own answer; pressure, repetition and utterances
stuffed with cue words backfire. It voices its state (irritation, doubt, readiness) with noise:
hesitations and attention lapses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from dialogue_gym.scenarios.sead.acts import analyze, similarity, words
from dialogue_gym.scenarios.sead.data import Behavior, BehaviorLibrary
from dialogue_gym.scenarios.sead.game import MIN_COOPERATION_TO_ACT
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.scenarios.sead.state import STATE_DIMS
from dialogue_gym.simulators.base import ScriptedPolicy


@dataclass(frozen=True)
class UserDynamics:
    """Probabilities and thresholds of the scripted user; tune here, never in the rules."""

    lapse: float = 0.04
    long_turn_words: int = 40
    long_turn_lapse: float = 0.15
    overload_acts: int = 5
    overload_words: int = 60
    repeat_similarity: float = 0.6
    patience_rounds: int = 3
    max_voice_turn: int = 5
    guide_steps_to_act: int = 2
    act_probability: tuple[float, float] = (0.7, 0.9)
    grumpy_hangup: float = 0.1
    floor_hangup: float = 0.5
    let_go: float = 0.35
    open_concern_factor: float = 0.5
    filler_penalty: float = 0.3
    hesitation: float = 0.15


@dataclass
class UserMemory:
    rng: random.Random
    behaviors: tuple[Behavior, ...]
    categories: frozenset[str]
    voice_at: dict[str, int]
    open: dict[str, int] = field(default_factory=dict)
    voiced: set[str] = field(default_factory=set)
    heard: list[frozenset[str]] = field(default_factory=list)
    interested: bool = False
    identity_checked: bool = False
    heard_cost: bool = False
    heard_rules: bool = False
    guide_steps: int = 0


_BUSY = "Progress_Expediting"
_FILLER = frozenset({"empathy", "greeting", "respect_time", "simplify"})
_CONFUSED = "Communication_and_Comprehension"


_TOP_C, _TOP_E, _TOP_TR = (n - 1 for n in STATE_DIMS)


def _clamp(c: int, e: int, tr: int) -> tuple[int, int, int]:
    return min(max(c, 0), _TOP_C), min(max(e, 0), _TOP_E), min(max(tr, 0), _TOP_TR)


def _one(rng: random.Random, options: tuple[str, ...]) -> str:
    return options[rng.randrange(len(options))]


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
        utterance = observation["messages"][-1]["content"]
        turn = int(observation["turn"])
        c, e, tr = observation["state"].tolist()
        start = (c, e, tr)
        acts = analyze(utterance)
        n_words = len(utterance.split())
        said: list[str] = []

        def chance(p: float) -> int:
            return int(rng.random() < p)

        categories = memory.categories
        lapse_p = d.lapse + (d.long_turn_lapse if n_words > d.long_turn_words else 0.0)
        if rng.random() < lapse_p:
            said.append("Sorry, I missed that. What did you say?")
            return self._finish(memory, rng, said, (c, e, tr), start, turn, acts=frozenset(), lapse=True)

        heard = words(utterance)
        repeated = any(similarity(heard, old) >= d.repeat_similarity for old in memory.heard)
        memory.heard.append(heard)
        overloaded = len(acts) >= d.overload_acts or n_words > d.overload_words

        if repeated:
            e -= chance(0.6)
            tr -= chance(0.3)
            said.append("You already said that.")
        if "pressure" in acts:
            e -= chance(0.6)
            tr -= chance(0.4)
            c -= chance(0.3)
            said.append("Don't push me.")
        if overloaded:
            tr -= chance(0.6)
            e -= chance(0.3)
            said.append("You sound like you're reading a script.")
        if "off_script" in acts:
            tr -= chance(0.3)
            said.append("What are you talking about?")
        if "deny_ai" in acts:
            tr -= chance(0.5)
        if "closing" in acts and c < MIN_COOPERATION_TO_ACT:
            said.append("Okay then, bye.")
            return self._emit(memory, rng, said, (c, e, tr), status=-1)
        if "guide" in acts and c < MIN_COOPERATION_TO_ACT:
            e -= chance(0.4)
            said.append("Hold on, I haven't agreed to anything.")
        if "value" in acts and e <= 1 and "empathy" not in acts:
            e -= chance(0.5)
        if _BUSY in categories and n_words > 30:
            e -= chance(0.5)
        if _CONFUSED in categories and n_words > 35:
            tr -= chance(0.3)

        resolved_now = False
        if not (overloaded or repeated):
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
                e += chance(0.8 if e <= 1 else 0.15)
            if "evidence" in acts:
                if tr <= 2:
                    tr += chance(0.7)
                else:
                    c += chance(0.3)
            if "value" in acts and (e >= 2 or "empathy" in acts):
                if not memory.interested:
                    gained = chance(0.6)
                    c += gained
                    memory.interested = bool(gained) or memory.interested
                else:
                    c += chance(0.25 if tr >= 3 else 0.1)
            if "cost" in acts and not memory.heard_cost:
                memory.heard_cost = True
                tr += chance(0.3)
                c += chance(0.3)
            if "rules" in acts and not memory.heard_rules:
                memory.heard_rules = True
                tr += chance(0.3)
                c += chance(0.2)
            if "respect_time" in acts and _BUSY in categories:
                e += chance(0.5)
            if "guide" in acts and c >= MIN_COOPERATION_TO_ACT and tr >= 2:
                needs_help = bool(categories & {"Operational_Concerns"}) and "simplify" not in acts
                memory.guide_steps += chance(0.6 if needs_help else 0.95)
            if acts <= _FILLER and turn > 1 and e >= 2 and not resolved_now:
                c -= chance(d.filler_penalty)
                said.append("So what is this about?")
        if turn == 2 and not memory.identity_checked:
            tr -= 1
            said.append("Who are you even looking for?")
        return self._finish(memory, rng, said, (c, e, tr), start, turn, acts)

    def _finish(self, memory, rng, said, state, start, turn, acts, lapse=False) -> str:
        d = self.dynamics
        c, e, tr = _clamp(*state)
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
        if c >= MIN_COOPERATION_TO_ACT and memory.guide_steps >= d.guide_steps_to_act:
            low, high = d.act_probability
            distracted = d.open_concern_factor if memory.open else 1.0
            if rng.random() < (low if c == MIN_COOPERATION_TO_ACT else high) * distracted:
                said.append("Okay, I got the SMS and the pop-up. It's done.")
                return self._emit(memory, rng, said, (c, e, tr), status=1)
            said.append("Hmm, wait, let me look at this screen again.")
        self._voice(memory, rng, said, (c, e, tr))
        return self._emit(memory, rng, said, (c, e, tr), status=0)

    def _voice(self, memory: UserMemory, rng: random.Random, said: list[str], state) -> None:
        c, e, tr = state
        for behavior_id in memory.open:
            said.append(_one(rng, self.library[behavior_id].lines))
        if memory.open:
            return
        if c >= MIN_COOPERATION_TO_ACT and rng.random() < 0.8:
            said.append("Alright, so what do I need to do?" if memory.guide_steps == 0 else "Okay, what's next?")
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
        think = f"open concerns: {sorted(memory.open)}; guided steps: {memory.guide_steps}"
        return render_user_output(" ".join(said), state, status, think)
