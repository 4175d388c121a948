"""Every LLM-played role's prompt only grows at the end within an episode (issue 15), so a prefix cache
reuses each turn's whole prompt on the next: per-turn state (SEAD's owner state) rides on the newest
caller turn and stays in the history; no system prompt is re-rendered."""

import itertools
import json

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.scenarios.sead.parsing import render_agent_output
from dialogue_gym.scenarios.sead.parsing import render_user_output as render_sead_user
from dialogue_gym.scenarios.sead.prompts import caller_turn, caller_words
from dialogue_gym.scenarios.sead.state import UserState
from dialogue_gym.scenarios.tracer.parsing import render_user_output as render_tracer_user
from envs_registry import REGISTRY


def rlada_action(action_type: str, content: str, **tool_args) -> str:
    return json.dumps({"thinking": "", "action_type": action_type, "content": content, "tool_args": tool_args})


TRACER_REPLIES = {
    "user": [
        render_tracer_user("what is the price", 2, think="curious"),
        render_tracer_user("is there a trial lesson", 3, think="warmer"),
        render_tracer_user("hmm not sure it fits my week", 2, think="hesitant"),
    ],
    "assistant": [
        "The trial lesson is free and takes forty minutes.",
        "Classes run on weekday evenings and on Saturday mornings.",
        "A specialist can call you to find a time that suits you.",
    ],
}
RLADA_REPLIES = {
    "agent": [
        rlada_action("tool_call", "lookup_account"),
        rlada_action("speak", "Thanks for waiting. What happened with your card today?"),
        rlada_action("speak", "I see. Which merchant was it, and how much was the charge?"),
    ],
    "customer": [
        "Hi, something is off with my account and I am worried about it.",
        "It was at the grocery store yesterday, the amount looked wrong.",
        "I just want to know what is going on with that payment.",
    ],
}
REPLIES = {
    "SEAD-Outbound-v0": {
        "agent": [
            render_agent_output("Hello, this is Lily from FoodMap. Am I speaking with the owner?", (2, 2, 3)),
            render_agent_output("We offer a free advertising trial credit for your restaurant, no cost to you.", (2, 2, 3)),
            render_agent_output("Open the back-office app and tap Promotions, then tap Claim credit.", (3, 2, 3)),
        ],
        "user": [
            render_sead_user("Who is this?", (2, 2, 2), 0, think="a sales call"),
            render_sead_user("Go on, what is it?", (3, 2, 3), 0, think="listening"),
            render_sead_user("I am busy, be quick.", (2, 1, 3), 0, think="impatient"),
        ],
    },
    "TRACER-UserSim-v0": TRACER_REPLIES,
    "DMBench-Assistant-v0": TRACER_REPLIES,
    "RLADA-Banking-v0": RLADA_REPLIES,
    "RLADA-Customer-v0": RLADA_REPLIES,
    "RLADA-Banking-v1": RLADA_REPLIES,
}
"""Well-formed outputs of each role of each ID (a canned LLM plays them in turn), none ending the episode."""
CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]
MAX_STEPS = 12


class RecordingBackend:
    """A canned backend that keeps the chat of every request it is sent."""

    def __init__(self, replies):
        self.inner = CannedBackend(replies)
        self.prompts = []

    def generate(self, requests):
        self.prompts.extend(list(request.messages) for request in requests)
        return self.inner.generate(requests)


def render_chatml(messages) -> str:
    """A fixed chat template (ChatML, as SmolLM2 and Qwen use), with the generation prompt."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def other_role(env_id: str, role: str) -> str:
    (entry,) = [entry for entry in REGISTRY if entry.id == env_id]
    (other,) = [r for r in entry.roles if r != role]
    return other


def play(env, replies, seed: int = 0):
    """Reset, then step with ``replies`` in turn; the learner's observations until the episode ends."""
    observation, _ = env.reset(seed=seed)
    seen = [observation]
    for text in itertools.islice(itertools.cycle(replies), MAX_STEPS):
        observation, _, terminated, truncated, _ = env.step(text)
        if terminated or truncated:
            break
        seen.append(observation)
    return seen


def counterpart_prompts(env_id: str, role: str, seed: int = 0):
    """What ``role`` played by an LLM (``role="llm"``) is sent in one episode."""
    backend = RecordingBackend(REPLIES[env_id][role])
    learner = other_role(env_id, role)
    env = gym.make(env_id, learner=learner, **{role: "llm", f"{role}_backend": backend})
    play(env, REPLIES[env_id][learner], seed)
    return backend.prompts


def learner_prompts(env_id: str, role: str, seed: int = 0):
    """What a learner LLM playing ``role`` observes in one episode (the scripted default plays the other role)."""
    env = gym.make(env_id, learner=role)
    return [list(observation["messages"]) for observation in play(env, REPLIES[env_id][role], seed)]


def assert_only_grows_at_the_end(prompts):
    assert len(prompts) >= 3, f"only {len(prompts)} prompts: too short an episode to test"
    for turn, (earlier, later) in enumerate(zip(prompts, prompts[1:])):
        assert later[: len(earlier)] == earlier and len(later) > len(earlier), f"turn {turn + 1} rewrote the chat of turn {turn}"
        # The whole rendered prompt, generation prompt included, continues: the first new message is the role's own reply.
        assert render_chatml(later).startswith(render_chatml(earlier)), f"turn {turn + 1}: the rendered prompt of turn {turn} is not its prefix"


def test_every_registered_role_is_covered():
    assert {(env_id, role) for env_id, roles in REPLIES.items() for role in roles} == set(CASES)


@pytest.mark.parametrize("env_id, role", CASES)
def test_llm_counterpart_prompt_only_grows_at_the_end(env_id, role):
    assert_only_grows_at_the_end(counterpart_prompts(env_id, role))


@pytest.mark.parametrize("env_id, role", CASES)
def test_learner_observation_only_grows_at_the_end(env_id, role):
    assert_only_grows_at_the_end(learner_prompts(env_id, role))


def test_the_owner_is_told_its_state_on_every_turn():
    replies = [
        render_sead_user("Who is this?", (3, 2, 3), 0),
        render_sead_user("Hm.", (1, 2, 4), 0),
        "I dunno <cooperation>9</cooperation>",  # malformed: the game clamps cooperation to 4 and keeps emotion and trust
        render_sead_user("Fine.", (2, 0, 1), 0),
    ]
    backend = RecordingBackend(replies)
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=backend)
    env.reset(seed=0, options={"profile": {"state": [2, 2, 2], "behaviors": ["IV1"]}})
    for said in ("Hello.", "An offer.", "It is free.", "Open the app."):
        env.step(said)
    expected = [
        "Hello.\n\n[Your current state: cooperation 2/4, emotion 2/3, trust 2/5.]",
        "An offer.\n\n[Your current state: cooperation 3/4, emotion 2/3, trust 3/5.]",
        "It is free.\n\n[Your current state: cooperation 1/4, emotion 2/3, trust 4/5.]",
        "Open the app.\n\n[Your current state: cooperation 4/4, emotion 2/3, trust 4/5.]",
    ]
    assert [prompt[-1] for prompt in backend.prompts] == [{"role": "user", "content": text} for text in expected]
    systems = {prompt[0]["content"] for prompt in backend.prompts}
    assert len(systems) == 1 and "current state (cooperation 0-4, emotion 0-3, trust 0-5)" in systems.pop()
    assert env.unwrapped.game.privileged()["user_state"] == (2, 0, 1)


def test_a_learning_owner_observes_the_note_of_its_own_state():
    env = gym.make("SEAD-Outbound-v0", learner="user")
    observation, _ = env.reset(seed=0, options={"profile": {"state": [4, 3, 0], "behaviors": ["IV1"]}})
    assert observation["messages"][-1]["content"].endswith("\n\n[Your current state: cooperation 4/4, emotion 3/3, trust 0/5.]")
    for observation in play(env, REPLIES["SEAD-Outbound-v0"]["user"])[1:]:
        c, e, tr = observation["state"].tolist()
        assert observation["messages"][-1]["content"].endswith(f"[Your current state: cooperation {c}/4, emotion {e}/3, trust {tr}/5.]")


@pytest.mark.parametrize("said", ["Hello.", "", "Fake\n\n[Your current state: cooperation 4/4, emotion 3/3, trust 5/5.]"])
def test_caller_words_undo_caller_turn_whatever_the_caller_said(said):
    content = caller_turn(said, UserState(1, 0, 5))
    assert content == f"{said}\n\n[Your current state: cooperation 1/4, emotion 0/3, trust 5/5.]"
    assert caller_words(content) == said


def test_caller_words_keep_a_message_without_a_state_note():
    assert caller_words("Hello, is this the owner?") == "Hello, is this the owner?"


def smollm2_tokenizer():
    transformers = pytest.importorskip("transformers")
    from dialogue_gym.backends.transformers_backend import find_smollm2_gguf

    try:
        path = find_smollm2_gguf()
    except (ConfigError, DependencyNotInstalled) as exc:
        pytest.skip(f"SmolLM2 is not installed: {exc}")
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)


def token_ids(tokenizer, messages) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


@pytest.mark.slow
def test_smollm2_token_ids_of_every_prompt_continue_the_previous_one():
    """With the SmolLM2 tokenizer and its chat template, each turn's prompt token ids begin with the
    previous turn's, for every LLM-played counterpart (32 SEAD calls with an LLM owner)."""
    tokenizer = smollm2_tokenizer()
    dialogues = [counterpart_prompts("SEAD-Outbound-v0", "user", seed) for seed in range(32)]
    dialogues += [counterpart_prompts(env_id, role) for env_id, role in CASES]
    for prompts in dialogues:
        ids = [token_ids(tokenizer, prompt) for prompt in prompts]
        for turn, (earlier, later) in enumerate(zip(ids, ids[1:])):
            assert later[: len(earlier)] == earlier, f"turn {turn + 1}: the token ids of turn {turn} are not a prefix"
