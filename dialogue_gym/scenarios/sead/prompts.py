"""System prompts of the two SEAD roles, built from the campaign data and the profile."""

from __future__ import annotations

from dialogue_gym.scenarios.sead.data import BehaviorLibrary, Campaign
from dialogue_gym.scenarios.sead.parsing import render_agent_output, render_user_output
from dialogue_gym.scenarios.sead.state import TOP_COOPERATION, TOP_EMOTION, TOP_TRUST, Profile, UserState

AGENT_EXAMPLE_UTTERANCE = "Hello, this is {agent_name} from {company}. Am I speaking with the owner?"
AGENT_EXAMPLE_ESTIMATE = (2, 2, 3)
USER_EXAMPLE_CALLER = "Hi, I'm calling about a free advertising offer for your restaurant."
USER_EXAMPLE = render_user_output(
    "I'm in the middle of lunch service. What offer is this?", (2, 1, 2), 0, think="A sales call while I am busy; I will listen a little."
)
"""The owner's few-shot turn: the exact record format, from another call (small models copy the form, not the words)."""
LLM_STOPS = {"user": ("</status>",), "agent": ("</trust_score>",)}
"""Stop strings of an LLM-played role: each record ends with that closing tag (written back by the policy)."""


def agent_example(campaign: Campaign) -> str:
    """The caller's few-shot turn in the exact tagged format."""
    utterance = AGENT_EXAMPLE_UTTERANCE.format(agent_name=campaign.agent_name, company=campaign.company)
    return render_agent_output(utterance, AGENT_EXAMPLE_ESTIMATE)


def agent_system_prompt(campaign: Campaign) -> str:
    facts = "\n".join(f"- {value}" for value in campaign.facts.values())
    sop = "\n".join(f"Stage {i}: {stage['name']}. {stage['instruction']}" for i, stage in enumerate(campaign.sop))
    c, e, tr = TOP_COOPERATION, TOP_EMOTION, TOP_TRUST
    return (
        f"You are {campaign.agent_name}, calling restaurant owners on behalf of {campaign.company}. "
        f"Goal: get the owner to claim the free advertising trial credit during this call.\n\n"
        f"Facts you may state:\n{facts}\n\nStandard operating procedure:\n{sop}\n\n"
        "Each turn, say one short spoken utterance and estimate the owner's current state. Answer in this format:\n"
        "<response>what you say</response>"
        f"<cooperation_score>0-{c}</cooperation_score><emotion_score>0-{e}</emotion_score><trust_score>0-{tr}</trust_score>\n"
        f"Example of a first turn:\n{agent_example(campaign)}"
    )


REFERENCE_RULES = (
    "Rules: only when your cooperation is 3 or more will you actually do the operation in the app. "
    "If your cooperation drops to 1 or below, or your emotion to 0, you hang up. "
    "Your trust falls when the caller evades, sounds robotic or fails to clarify. "
    "If one of your concerns stays unresolved for more than 3 rounds, you hang up. "
    "Repetition and pressure annoy you."
)


def user_system_prompt(campaign: Campaign, profile: Profile, library: BehaviorLibrary) -> str:
    """The owner's system prompt: the same all call long, so every turn's prompt begins with the
    previous turn's (a prefix cache reuses it); the state, which changes, comes with each caller turn
    (:func:`caller_turn`)."""
    behaviors = "\n".join(f"- {library[b].description}" for b in profile.behaviors)
    stages = ", then ".join(stage["name"] for stage in campaign.sop)
    c, e, tr = TOP_COOPERATION, TOP_EMOTION, TOP_TRUST
    return (
        f"You are a restaurant owner receiving a phone call from {campaign.company}. Play this person realistically.\n"
        f"The caller wants you to claim {campaign.facts.get('credit', 'an offer')}; their script goes: {stages}. "
        "Success means you complete the operation in your back-office app.\n"
        + (f"Who you are: {profile.persona}\n" if profile.persona else "")
        + f"After each thing the caller says, a note in brackets gives your current state (cooperation 0-{c}, emotion 0-{e}, trust 0-{tr}).\n"
        f"Your behaviors in this call:\n{behaviors}\n{REFERENCE_RULES}\n\n"
        f"You are the owner, not the caller: never offer help, never speak for {campaign.company}, never call yourself "
        f"{campaign.agent_name}.\n\n"
        "Each turn, think, reply in one or two spoken sentences, and update your state. Answer in this format:\n"
        "<think>your private reasoning</think><reply>what you say</reply>"
        f"<cooperation>0-{c}</cooperation><emotion>0-{e}</emotion><trust>0-{tr}</trust>"
        "<status>1 if you completed the operation, -1 if you hang up, else 0</status>\n"
        f"Example (another call):\nCaller: {USER_EXAMPLE_CALLER}\nYou: {USER_EXAMPLE}"
    )


STATE_NOTE_START = "\n\n[Your current state: "
"""Where the owner's state note begins in a caller turn (:func:`caller_turn`)."""


def caller_turn(heard: str, state: UserState) -> str:
    """What the owner is sent for one caller turn: the caller's words, then the owner's state now.

    The note stays in the history, so the owner's prompt only grows at the end from turn to turn and
    every earlier turn's prompt is a prefix of the next (the system prompt never changes)."""
    return f"{heard}{STATE_NOTE_START}cooperation {state.cooperation}/{TOP_COOPERATION}, emotion {state.emotion}/{TOP_EMOTION}, trust {state.trust}/{TOP_TRUST}.]"


def caller_words(content: str) -> str:
    """The caller's words of a :func:`caller_turn` message (``content`` itself when it has no state note).

    The note is the last thing in the message and holds no ``STATE_NOTE_START``, so cutting at the last
    one is exact whatever the caller said."""
    words, found, _ = content.rpartition(STATE_NOTE_START)
    return words if found else content
