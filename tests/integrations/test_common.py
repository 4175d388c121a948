"""What every integration shares: learner-driven episodes, training starts, silence, replay."""

import json

import numpy as np
import pytest

from dialogue_gym.envs.driver import role_seed
from dialogue_gym.errors import ConfigError
from dialogue_gym.integrations.common import LearnerEpisodes, make_learner_env, replay
from dialogue_gym.types import Trajectory
from envs_registry import REGISTRY


def play(episodes, policy, episode, seed, slot=0):
    """``policy`` in the learner role of training episode ``episode``; returns the learner's return."""
    episodes.start(slot, episode, seed)
    game = episodes.games[slot]
    memory = policy.start(game.role_profile(episodes.learner), role_seed(game.seed, episodes.learner, game.roles))
    while episodes.learners_turn(slot):
        episodes.move([slot], [policy.act(game.observe(episodes.learner), game.info(episodes.learner), memory)])
    return episodes.reward(slot)


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda e: e.id)
def test_a_learner_that_goes_silent_earns_less_than_every_baseline(entry):
    """The cheapest policy of every integration that hands the model the mic: say nothing (a model that
    never calls the env's tool, a rollout out of budget). The rules score the silence below every fair
    baseline, random included, so stopping early is never a way around a scenario's costs."""
    episodes = LearnerEpisodes(entry.id)
    silent = []
    for episode in range(30):
        episodes.start(0, episode, 900)
        episodes.finish_silently([0])
        silent.append(episodes.reward(0))
    environment = make_learner_env(entry.id, entry.default_learner, {})
    for agent in entry.agents:
        policy = environment.make_role_policy(entry.default_learner, agent)
        if getattr(policy, "privileged", False):
            continue
        baseline = np.mean([play(episodes, policy, episode, 900) for episode in range(30)])
        assert np.mean(silent) < baseline, (agent, np.mean(silent), baseline)


def test_training_episode_i_starts_like_evaluation_episode_i():
    episodes = LearnerEpisodes("SEAD-Outbound-v0")
    game = episodes.games[0]
    for episode in (0, 7, 121):
        episodes.start(0, episode, 3)
        assert game.seed == 3 + episode and game.episode_profile() == game.evaluation_options(episode, 3)["profile"]
    with pytest.raises(ConfigError, match="episode must be a non-negative int"):
        episodes.start(0, -1, 3)


def test_start_from_a_profile_meets_what_reset_with_that_profile_shows():
    """verl's Profile Controller starts dialogues from chosen profiles: the learner's opening chat and the
    game's start equal a Gymnasium reset with the same seed and profile, slot by slot."""
    import gymnasium as gym

    episodes = LearnerEpisodes("SEAD-Outbound-v0")
    other = episodes.games[0].evaluation_options(5, 0)["profile"]
    profile = episodes.games[0].evaluation_options(3, 0)["profile"]
    opening = episodes.start_from(1, 42, profile)
    env = gym.make("SEAD-Outbound-v0")
    observation, _ = env.reset(seed=42, options={"profile": profile})
    assert opening == [dict(message) for message in observation["messages"]]
    assert episodes.games[1].seed == 42 and episodes.games[1].episode_profile() == profile != other
    episodes.start_from(0, 42, other)  # the profile, not the seed alone, picks the hidden start
    assert episodes.games[0].episode_profile() == other and episodes.games[1].episode_profile() == profile


def test_move_returns_what_the_learner_hears_next():
    episodes = LearnerEpisodes("RLADA-Banking-v0")
    chat = episodes.start(0, 0, 5)
    account = chat[0]["content"].split("matched account ")[1][:10]
    lookup = json.dumps({"action_type": "tool_call", "content": "lookup_account", "tool_args": {"account_id": account}})
    (heard,) = episodes.move([0], [lookup])
    assert [m["role"] for m in heard] == ["tool"] and json.loads(heard[0]["content"])["ok"] is True
    (heard,) = episodes.move([0], [json.dumps({"action_type": "speak", "content": "How can I help you today?"})])
    assert [m["role"] for m in heard] == ["user"]
    now = episodes.messages(0)
    assert now[: len(chat)] == chat and now[len(chat)] == {"role": "assistant", "content": lookup}
    assert [m["role"] for m in now[len(chat) :]] == ["assistant", "tool", "assistant", "user"] and now[-1] == heard[0]


def test_episodes_in_slots_are_independent_and_batched():
    episodes = LearnerEpisodes("SEAD-Outbound-v0")
    first = episodes.start(0, 1, 0)
    episodes.start(1, 2, 0)
    episodes.move([0, 1], ["Hello, is this the owner?", "Hi there."])
    alone = LearnerEpisodes("SEAD-Outbound-v0")
    assert alone.start(0, 1, 0) == first
    alone.move([0], ["Hello, is this the owner?"])
    assert alone.trajectory(0).to_dict() == episodes.trajectory(0).to_dict()


def test_replay_refuses_a_record_its_rules_do_not_give():
    episodes = LearnerEpisodes("SEAD-Outbound-v0")
    episodes.start(0, 0, 0)
    episodes.finish_silently([0])
    record = episodes.trajectory(0).to_dict()
    assert replay(Trajectory.from_dict(record)).trajectory().to_dict()["turns"] == record["turns"]
    swapped = {**record, "turns": [record["turns"][1], record["turns"][0], *record["turns"][2:]]}
    with pytest.raises(ConfigError, match=r"turn 0 is by 'user' but the rules give the move to 'agent'"):
        replay(Trajectory.from_dict(swapped))
    with pytest.raises(ConfigError, match="the rules give other outcome for the same moves"):
        replay(Trajectory.from_dict({**record, "outcome": "success"}))


@pytest.mark.parametrize("env_id,role", [(entry.id, role) for entry in REGISTRY for role in entry.roles])
def test_every_role_of_every_id_can_be_the_learner(env_id, role):
    """Each integration drives LearnerEpisodes, so every (id, role) pair works in each: a move, then
    silence, ends by the rules, and the record replays."""
    episodes = LearnerEpisodes(env_id, learner=role)
    chat = episodes.start(0, 4, 2)
    assert chat and episodes.learners_turn(0)
    episodes.move([0], ["Hello, could you tell me more?"])
    episodes.finish_silently([0])
    trajectory = episodes.trajectory(0)
    assert episodes.done(0) and trajectory.learner == role and trajectory.outcome is not None
    assert episodes.reward(0) == trajectory.rewards[role]
    assert replay(trajectory).trajectory().to_dict()["turns"] == trajectory.to_dict()["turns"]


class LetterTokenizer:
    """A duck-typed chat tokenizer with one id per character: ``<r>content</e>`` per message, ``<assistant>``
    as the generation prompt, a BOS id (0) only when special tokens are asked for, and a template keyword
    (``strip``) that rewrites the assistant's earlier turns, as some templates do."""

    eos_token = "</e>"

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True, strip=False):
        text = "".join(f"<{m['role']}>{m['content'].strip() if strip and m['role'] == 'assistant' else m['content']}</e>" for m in messages)
        text += "<assistant>" if add_generation_prompt else ""
        return self(text)["input_ids"] if tokenize else text

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": ([0] if add_special_tokens else []) + [ord(c) for c in text]}


def test_heard_tokens_are_the_template_between_a_turn_and_the_next_opening():
    """By hand: after the learner said ``yo`` (its last generated token the eos), what it hears next is the
    user's reply and its own next opening, without the eos it already generated and without a BOS."""
    from dialogue_gym.integrations.common import encode, heard_tokens, render

    tokenizer = LetterTokenizer()
    seen = [{"role": "user", "content": "hi"}]
    now = seen + [{"role": "assistant", "content": "yo "}, {"role": "user", "content": "ok"}]
    assert render(tokenizer, seen) == "<user>hi</e><assistant>"
    assert encode(tokenizer, "ab") == [97, 98]
    assert heard_tokens(tokenizer, seen, "yo ", now, ended_with_eos=True) == encode(tokenizer, "<user>ok</e><assistant>")
    assert heard_tokens(tokenizer, seen, "yo ", now, ended_with_eos=False) == encode(tokenizer, "</e><user>ok</e><assistant>")
    # a template that rewrites the learner's turn once more follows: no one sequence holds both
    assert heard_tokens(tokenizer, seen, "yo ", now, ended_with_eos=True, strip=True) is None
    assert heard_tokens(tokenizer, seen, "yo", [*seen, {"role": "assistant", "content": "yo "}, {"role": "user", "content": "ok"}], True, strip=True) == encode(tokenizer, "<user>ok</e><assistant>")
