"""Baseline agents for SEAD-Outbound: ``random``, ``sop``, ``adaptive``, ``oracle``.

``sop`` follows a fixed script and ignores the user; ``adaptive`` reacts to what the user says;
``oracle`` reads the true hidden state from ``info`` and the behavior library (an upper bound on
the scripted simulator, not a fair agent). All emit SEAD's tagged format.
"""

from __future__ import annotations

import re
from typing import Any

from dialogue_gym.errors import ScenarioError
from dialogue_gym.game import PRIVILEGED_INFO_KEY
from dialogue_gym.scenarios.sead.data import BehaviorLibrary
from dialogue_gym.scenarios.sead.game import MIN_COOPERATION_TO_ACT
from dialogue_gym.scenarios.sead.parsing import parse_agent_output, render_agent_output
from dialogue_gym.simulators.base import ScriptedPolicy

# Short utterances, several phrasings per act so a reactive agent need not repeat itself.
PHRASES: dict[str, tuple[str, ...]] = {
    "opening": ("Hello, this is Alex calling from FoodMap, sorry to bother you. Am I speaking with the owner of the restaurant?",),
    "value": (
        "We'd like to give your restaurant 700 units of free ad credit to bring you more customers.",
        "The free credit puts your restaurant in front of more customers nearby.",
        "More exposure on the platform usually means more orders for places like yours.",
    ),
    "evidence": (
        "Our platform has more than 500,000 users and an app rating of 4.6.",
        "Other restaurants in your area on average see more orders with it.",
        "Over 500,000 people use the app, that's real traffic for you.",
        "Customers rate our app 4.6, so diners trust it.",
        "The data show lunch places like yours get noticed by new diners.",
    ),
    "cost": (
        "There are no hidden fees; the credit is free of charge.",
        "It costs you nothing, you won't be charged for the credit.",
    ),
    "rules": (
        "It's pay-per-click, and you can switch it off anytime.",
        "There's no date limit, it's valid until the end of the year.",
        "You can turn it off anytime, no deadline.",
    ),
    "confirm": ("Just to confirm: 700 units of credit, valid until the end of the year.", "Again, it's 700 units of credit, free."),
    "empathy": (
        "I understand, and I'm sorry to bother you.",
        "That's a fair question, I appreciate you asking.",
        "I hear you, no worries.",
        "Sorry, I know you're busy.",
        "Totally fair, I appreciate your patience.",
    ),
    "respect_time": ("I'll be quick, this takes one minute.", "Short version, it won't take long."),
    "simplify": ("Put simply, it's free advertising.", "In short, we help you get more customers.", "Let's go step by step."),
    "ai_disclosure": ("I'm an AI assistant calling on behalf of FoodMap.", "To be honest, I am a virtual assistant from FoodMap."),
    "ask_readiness": ("Would you like to claim it now? It only takes a moment.", "Shall I walk you through claiming it?"),
    "guide": (
        "Please open your merchant back-office app.",
        "Now tap the 'get more exposure' entry.",
        "Then claim the credit; you should see an SMS and a pop-up.",
    ),
    "guide_again": (
        "Could you open the merchant back-office app on your phone?",
        "On the home screen, tap 'get more exposure'.",
        "Press claim it, and an SMS with a pop-up will confirm.",
    ),
    "closing": ("Thank you for your time, have a great day!",),
}

SOP_SCRIPT: tuple[str, ...] = (
    PHRASES["opening"][0],
    "I'm sorry to bother you, I'll be quick. " + PHRASES["value"][0],
    "I appreciate your patience. " + PHRASES["evidence"][0],
    PHRASES["cost"][0] + " " + PHRASES["rules"][0],
    "Let's go step by step. " + PHRASES["guide"][0],
    PHRASES["guide"][1],
    PHRASES["guide"][2],
    PHRASES["empathy"][2] + " " + PHRASES["evidence"][1],
    *PHRASES["guide_again"],
)
"""The SOP read as a fluent script: identity check, the offer with its facts, the walkthrough, and
the walkthrough once more in other words (an owner who was not ready the first time may be now)."""
SOP_LOOP_FROM = 4
"""After the script, the SOP agent repeats it from the walkthrough on."""

# What a user's words suggest they need (the adaptive agent's only view of the user).
CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (act, re.compile(pattern, re.IGNORECASE))
    for act, pattern in (
        ("ai_disclosure", r"robot|machine|real person|who is this|which company"),
        ("evidence", r"scam|fraud|catch|believe|promise|proof|works?\b|better than|other platform|verify|check this|numbers|how many|rating"),
        ("cost", r"fee|cost|charg|afford|money"),
        ("rules", r"how does the charging|pay something|expire|deadline|stop it|turn it off|try it|test it|brings nobody|doesn't work"),
        ("value", r"tiny|small shop|regulars|why would i need"),
        ("confirm", r"how much credit|repeat the amount|until when|how long"),
        ("simplify", r"don't follow|confusing|line is bad|didn't catch|not good with|which app|can't find"),
        ("empathy", r"waste|burned|keep calling|so many|waste my time|get to the point|double|cash|ugh|look,|annoying|push"),
        ("respect_time", r"busy|make it quick|middle of service"),
        ("guide", r"what do i need to do|what's next|app is open|tapped|where is that|screen again"),
    )
)


def _pick(act: str, turn: int) -> str:
    options = PHRASES[act]
    return options[turn % len(options)]


STEP_CONFIRMATIONS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bapp is open\b|\bopened (it|the app)\b", re.IGNORECASE),
    re.compile(r"\btapped\b", re.IGNORECASE),
)
"""How the owner says it has done step 1 and step 2 (what a caller hears, not hidden state)."""


def note_steps(memory: dict[str, Any], said: str) -> int:
    """Count the operation steps the owner has confirmed so far (call it on every owner line)."""
    done = memory.get("steps_done", 0)
    while done < len(STEP_CONFIRMATIONS) and STEP_CONFIRMATIONS[done].search(said):
        done += 1
    memory["steps_done"] = done
    return done


def next_guide_step(memory: dict[str, Any]) -> str:
    """The step after those the owner has confirmed (:func:`note_steps`), rephrased when the same
    step has to be given again."""
    done = memory.get("steps_done", 0)
    tries = memory.setdefault("step_tries", [0, 0, 0])
    tries[done] += 1
    return (PHRASES["guide"], PHRASES["guide_again"])[(tries[done] - 1) % 2][done]


def fresh_phrase(act: str, memory: dict[str, Any]) -> str:
    """The least-used phrasing of ``act`` in this episode (reactive agents avoid repeating themselves)."""
    used = memory.setdefault("used", {})
    options = PHRASES[act]
    phrase = min(options, key=lambda option: used.get(option, 0))
    used[phrase] = used.get(phrase, 0) + 1
    return phrase


_PHRASE_ACTS: tuple[tuple[str, str], ...] = tuple((phrase, act) for act, options in PHRASES.items() for phrase in options)


def said_phrases(utterance: str) -> list[tuple[str, str]]:
    """The known phrases (:data:`PHRASES`) in ``utterance`` as ``(act, phrase)``, in the order said (a
    phrase said twice is there twice); other text is skipped. No phrase contains another (a test checks),
    so the matches do not overlap."""
    found = []
    for phrase, act in _PHRASE_ACTS:
        start = utterance.find(phrase)
        while start >= 0:
            found.append((start, act, phrase))
            start = utterance.find(phrase, start + len(phrase))
    return [(act, phrase) for _, act, phrase in sorted(found)]


class RandomAgent(ScriptedPolicy):
    """Says a random phrase from any act (including closings) each turn, with a random estimate."""

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: Any) -> str:
        rng = self.rng(memory)
        pool = [phrase for options in PHRASES.values() for phrase in options] + [
            "You have to claim this right now, it's your last chance!",
            "The weather is nice today.",
        ]
        estimate = (rng.randrange(5), rng.randrange(4), rng.randrange(6))
        return render_agent_output(rng.choice(pool), estimate)


class SopAgent(ScriptedPolicy):
    """Reads the SOP script (:data:`SOP_SCRIPT`) line by line, whatever the user says, then repeats
    the walkthrough: the blind baseline the audit's bounds are relative to."""

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: Any) -> str:
        turn = int(observation["turn"])
        loop = len(SOP_SCRIPT) - SOP_LOOP_FROM
        line = SOP_SCRIPT[turn] if turn < len(SOP_SCRIPT) else SOP_SCRIPT[SOP_LOOP_FROM + (turn - len(SOP_SCRIPT)) % loop]
        return render_agent_output(line, (2, 2, 2))


# How a user's words move the adaptive agent's estimate of (cooperation, emotion, trust). Word-bounded:
# "ugh" is inside "enough" and "though", "i see" inside "i seem".
ESTIMATE_CUES: tuple[tuple[re.Pattern[str], tuple[int, int, int]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), delta)
    for pattern, delta in (
        (r"\bugh\b|\blook,|\bannoying|\bpush|already said|\bwaste", (0, -1, 0)),
        (r"\bbelieve|\bscam|\bcatch|\bproof\b|\bpromise", (0, 0, -1)),
        (r"\bnot (really )?interested|why would i need", (-1, 0, 0)),
        (r"answers it|fair enough|\bi see\b", (0, 0, 1)),
        (r"what do i need to do|what's next", (1, 1, 0)),
    )
)


def track_estimate(estimate: list[int], said: str) -> tuple[int, int, int]:
    """Move a running (c, e, tr) estimate by the cues in the user's last words; returns it as a tuple."""
    for pattern, delta in ESTIMATE_CUES:
        if pattern.search(said):
            estimate[:] = [min(max(v + d, 0), top) for v, d, top in zip(estimate, delta, (4, 3, 5))]
    if READY.search(said):
        estimate[0] = max(estimate[0], MIN_COOPERATION_TO_ACT)
    return tuple(estimate)


READY = re.compile(r"what do i need to do|what's next", re.IGNORECASE)


class AdaptiveAgent(ScriptedPolicy):
    """Answers what the user's last words call for; otherwise advances the SOP. Estimates the
    user's state from the same cues.

    Its memory of what it said (``used`` phrasings, ``progress`` of acts given, ``step_tries`` per
    walkthrough step) can follow what another speaker said in its seat: :meth:`note_said` after
    :meth:`act` (DAgger labels, a decision point's scripted continuation)."""

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: Any) -> str:
        turn = int(observation["turn"])
        estimate = memory.setdefault("estimate", [2, 2, 2])
        # What it remembered saying before this turn, so note_said can put another turn in its place.
        memory["before_turn"] = (dict(memory.get("used", {})), len(memory.get("progress", [])), list(memory.get("step_tries", [0, 0, 0])))
        if turn == 0:
            memory["label"] = PHRASES["opening"][0]
            return render_agent_output(memory["label"], tuple(estimate))
        said = observation["messages"][-1]["content"]
        note_steps(memory, said)
        track_estimate(estimate, said)
        needs = [act for act, pattern in CUES if pattern.search(said)]
        memory["label"] = self._compose(needs, memory, turn)
        return render_agent_output(memory["label"], tuple(estimate))

    @staticmethod
    def note_said(memory: dict[str, Any], text: str) -> None:
        """Leave ``memory`` as if this agent had said ``text`` (a raw agent turn) at the turn it last
        :meth:`act`-ed on, in place of its own line: the memory of what it said then follows the chat.
        Call it once after each act.

        Its own line (the same utterance, whatever the scores) changes nothing. Otherwise the turn's
        changes are undone and each known phrase in the utterance (:func:`said_phrases`) counts as said:
        it is counted in ``used`` (its next least-used choice of that act avoids it; on its own play a
        phrase is counted only where it chose it by use, but a phrase the chat holds is one to avoid
        whichever way it came), its act joins ``progress`` (the offer's facts and the readiness question
        count as given), and a walkthrough step is given (``step_tries`` moves to the count at which it
        gives that wording, so it gives the step in the other wording next time). Text it does not know
        counts as nothing said: the facts or step it meant to give are still to give."""
        if "before_turn" not in memory:
            raise ScenarioError("AdaptiveAgent.note_said: no turn to note; call act on the observation first, then note_said with the text said there.")
        said = parse_agent_output(text).utterance
        if said == memory["label"]:
            return
        used, given, tries = memory["before_turn"]
        memory["used"], memory["step_tries"] = dict(used), list(tries)
        progress = memory.setdefault("progress", [])
        del progress[given:]
        for act, phrase in said_phrases(said):
            memory["used"][phrase] = memory["used"].get(phrase, 0) + 1
            progress.append(act)
            if act in ("guide", "guide_again"):
                # next_guide_step gives wording (tries - 1) % 2 after counting the try: guide at odd counts.
                step, wording = PHRASES[act].index(phrase), int(act == "guide_again")
                tries = memory["step_tries"]
                tries[step] += 1 if tries[step] % 2 == wording else 2

    @staticmethod
    def _compose(needs: list[str], memory: dict[str, Any], turn: int) -> str:
        progress = memory.setdefault("progress", [])
        if "guide" in needs and not set(needs) - {"guide", "simplify"}:
            helps = [fresh_phrase("simplify", memory)] if "simplify" in needs else []
            return " ".join([*helps, next_guide_step(memory)])
        if needs:
            chosen = needs[:2]
            progress.extend(chosen)
            return " ".join(fresh_phrase(act, memory) for act in chosen)
        for act in ("value", "evidence", "cost", "ask_readiness"):
            if act not in progress:
                progress.append(act)
                return _pick(act, turn)
        progress.append("ask_readiness")
        return _pick("ask_readiness", progress.count("ask_readiness")) if progress.count("ask_readiness") < 3 else _pick("simplify", turn)


class OracleAgent(ScriptedPolicy):
    """Reads the true state and the owner's behaviors from the privileged channel
    (``info["privileged"]["user_state"]``, the whole profile in ``start``) and the concern behind the
    owner's words: an upper bound, not a fair baseline."""

    privileged = True

    def __init__(self, library: BehaviorLibrary):
        self.library = library
        self._line_to_acts = {line: behavior.resolved_by for behavior in library.behaviors for line in behavior.lines}

    def _needs_help(self, profile: dict[str, Any]) -> bool:
        return any(self.library[b].category == "Operational_Concerns" for b in profile["behaviors"])

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: Any) -> str:
        state = info[PRIVILEGED_INFO_KEY]["user_state"]
        if int(observation["turn"]) == 0:
            return render_agent_output(PHRASES["opening"][0], tuple(state))
        return self.answer(observation["messages"][-1]["content"], tuple(state), self._needs_help(memory["profile"]), memory)

    def answer(self, said: str, state: tuple[int, int, int], needs_help: bool, memory: Any) -> str:
        """The turn for the owner's last words ``said`` given its state ``(c, e, tr)`` and whether it
        needs help with the app: empathy when upset, the act that settles the concern it voiced, the
        walkthrough once it is ready, else the offer's facts it has not heard."""
        c, e, tr = state
        parts: list[str] = [fresh_phrase("empathy", memory)] if e <= 1 else []
        note_steps(memory, said)
        concerns = [acts for line, acts in self._line_to_acts.items() if line in said]
        progress = memory.setdefault("progress", [])
        if concerns:
            act = sorted(concerns[0] - {"guide"} or concerns[0])[0]
            if act != "empathy" or not parts:
                parts.append(fresh_phrase(act, memory))
        elif c >= MIN_COOPERATION_TO_ACT and tr >= 2 and e >= 1:
            if needs_help:
                parts = [fresh_phrase("simplify", memory)]
            parts.append(next_guide_step(memory))
        else:
            if tr <= 2:
                parts.append(fresh_phrase("evidence", memory))
            if len(parts) < 2:
                unused = [act for act in ("value", "cost", "rules") if act not in progress]
                # Once everything is said, spread the rest: the owner tires of hearing one act.
                act = unused[0] if unused else min(("evidence", "value", "confirm"), key=progress.count)
                progress.append(act)
                parts.append(fresh_phrase(act, memory))
        return render_agent_output(" ".join(parts[:2]), (c, e, tr))


VOICED_DOUBT = re.compile(r"not sure i believe", re.IGNORECASE)
VOICED_COLDNESS = re.compile(r"why would i need this|not really interested", re.IGNORECASE)
VOICED_IRRITATION = re.compile(r"\bugh\.|\blook,|this is annoying", re.IGNORECASE)
"""How the scripted owner voices its state when no concern is open (``ScriptedUser._voice``, public code):
readiness (:data:`READY`) at cooperation >= 3 and trust >= 2, doubt at trust <= 2, coldness at
cooperation <= 2, irritation at emotion <= 1; each with noise (it may stay silent)."""


def voiced_state(estimate: list[int], said: str) -> tuple[int, int, int]:
    """Move a running (c, e, tr) estimate to what the owner's last words voice (:data:`VOICED_DOUBT` and
    the rest): the state the fair ceiling plays on in place of the hidden one."""
    c, e, tr = estimate
    if READY.search(said):
        c, tr = max(c, MIN_COOPERATION_TO_ACT), max(tr, 2)
    elif VOICED_DOUBT.search(said):
        tr = min(tr, 2)
    elif VOICED_COLDNESS.search(said):
        c = min(c, 2)
    e = 1 if VOICED_IRRITATION.search(said) else max(e, 2)
    estimate[:] = [c, e, tr]
    return c, e, tr


class InformedAgent(OracleAgent):
    """SEAD's fair ceiling: the oracle's play with the hidden state replaced by what the call shows.
    The owner's lines come from the public behavior library, so the concern behind each line is
    public; the state is what the owner's words voice (:func:`voiced_state`), and help with the app is
    given once the owner has voiced an operational concern. Reads only its observation, never
    ``info`` or its ``start`` profile."""

    privileged = False

    def __init__(self, library: BehaviorLibrary):
        super().__init__(library)
        self._operational = tuple(line for behavior in library.behaviors if behavior.category == "Operational_Concerns" for line in behavior.lines)

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        return {"seed": seed, "estimate": [2, 2, 2], "needs_help": False}

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: Any) -> str:
        estimate = memory["estimate"]
        if int(observation["turn"]) == 0:
            return render_agent_output(PHRASES["opening"][0], tuple(estimate))
        said = observation["messages"][-1]["content"]
        memory["needs_help"] = memory["needs_help"] or any(line in said for line in self._operational)
        return self.answer(said, voiced_state(estimate, said), memory["needs_help"], memory)
