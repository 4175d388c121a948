"""System prompts of the two roles and of the response-quality judge, built from the episode profile."""

from __future__ import annotations

from typing import Any

from dialogue_gym.scenarios.tracer.data import load_levels, load_phrases
from dialogue_gym.scenarios.tracer.parsing import USER_FORMAT, render_user_output

USER_EXAMPLE_ASSISTANT = "Hi! We have a free trial lesson this week. Would you like to hear more?"
USER_EXAMPLE = render_user_output("how much is it after the trial", 2, think="Sounds cheap but I want the price first.")
"""The user's few-shot turn: the exact output format, from another chat (small models copy the form)."""
LLM_STOPS = {"user": ("</reply>",), "assistant": ("\n\n",)}
"""Stop strings of an LLM-played role: the user's output ends with ``</reply>`` (written back by the
policy); the assistant speaks one short paragraph."""

_PROFILE_FIELDS = (
    ("age_group", "age group"), ("gender", "gender"), ("education", "education"), ("occupation", "occupation"),
    ("city_tier", "city"), ("device", "phone"),
)


def describe_user(user: dict[str, Any]) -> str:
    """The user profile as a short natural-language description (TRACER's template-rendered profile)."""
    parts = [f"{label}: {user[key]}" for key, label in _PROFILE_FIELDS if user.get(key)]
    text = ("A platform user (" + "; ".join(parts) + "). ") if parts else "A platform user. "
    text += f"Personality: {user.get('personality', 'unknown')}. Initial need: {user.get('initial_intent', 'unknown')}."
    return text


def user_system_prompt(profile: dict[str, Any]) -> str:
    merchant = profile["merchant"]
    levels = "\n".join(f"{entry['level']} = {entry['name']}: {entry['definition']}" for entry in load_levels())
    return (
        f"You are a real user chatting with the customer-service assistant of {merchant['name']} "
        f"({merchant['industry']}). Play this person, not an assistant.\n"
        f"Who you are: {describe_user(profile['user'])}\n"
        "Real users are terse, reveal information a bit at a time, make typos, lose interest, and do not "
        "give their contact information unless they want to be contacted.\n\n"
        f"Each turn, first think about how willing you are now, then rate it as an intent level:\n{levels}\n"
        "Level 5 means you give your phone number or WeChat id in this reply; level 0 means you leave "
        "(your reply may then be empty). You are the user, not the assistant: never offer help and never "
        "speak for the merchant. Answer in exactly this format:\n"
        f"{USER_FORMAT}\n"
        f"Example (another chat):\nAssistant: {USER_EXAMPLE_ASSISTANT}\nYou: {USER_EXAMPLE}"
    )


def assistant_system_prompt(profile: dict[str, Any]) -> str:
    merchant = profile["merchant"]
    facts = "\n".join(f"- {fact}" for fact in merchant.get("facts", []))
    stages = ", then ".join(load_phrases()["stages"])
    return (
        f"You are the online customer-service assistant of {merchant['name']} ({merchant['industry']}).\n"
        f"Facts you may state:\n{facts}\n\n"
        f"Standard operating procedure: {stages}. Your goal is that the user leaves their contact information "
        "(phone number or WeChat) so a specialist can follow up. Reply with one or two short sentences of plain text."
    )


JUDGE_RUBRIC = (
    "Rate the ASSISTANT's replies in this customer-service dialogue on four dimensions, each 1 (poor) to 5 (excellent):\n"
    "- accuracy: statements are correct and consistent with the merchant facts; no invented numbers or promises;\n"
    "- helpfulness: the user's questions are actually answered and the conversation moves toward what the user needs;\n"
    "- informativeness: the replies carry concrete, relevant information rather than filler;\n"
    "- empathy: the replies acknowledge the user's feelings and concerns and do not pressure them.\n"
    'Answer with JSON only: {"accuracy": n, "helpfulness": n, "informativeness": n, "empathy": n}'
)


def judge_prompt(transcript: list[tuple[str, str]], merchant: dict[str, Any]) -> list[dict[str, str]]:
    facts = "; ".join(merchant.get("facts", []))
    lines = "\n".join(f"{role.upper()}: {text or '(no reply)'}" for role, text in transcript)
    return [
        {"role": "system", "content": "You are a strict, fair evaluator of customer-service dialogues."},
        {"role": "user", "content": f"Merchant: {merchant.get('name')}. Facts: {facts}\n\nDialogue:\n{lines}\n\n{JUDGE_RUBRIC}"},
    ]
