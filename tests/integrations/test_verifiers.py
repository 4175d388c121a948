"""verifiers: every id as a ``verifiers.v1`` environment whose rubric is the env's reward, played
end to end through verifiers' own agent stack (its ``null`` chat harness in a subprocess, its
interception server and eval client) against a canned OpenAI-compatible model."""

import asyncio
import importlib
import json
import os
import re
import shutil
import sys

import pytest

pytest.importorskip("verifiers")

from canned_chat import CannedChat  # noqa: E402

from dialogue_gym.errors import ConfigError, DependencyNotInstalled  # noqa: E402
from dialogue_gym.integrations.common import LearnerEpisodes  # noqa: E402
from dialogue_gym.integrations.verifiers import environment  # noqa: E402

needs_uv = pytest.mark.skipif(shutil.which("uv") is None, reason="verifiers runs its chat harness with uv (pip install uv)")
PLAYER = {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}, "max_turns": 12}


def play(env, server, tasks):
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.configs.client import EvalClientConfig

    os.environ["CANNED_CHAT_KEY"] = "not-a-secret"
    context = ModelContext(model="canned", client=EvalClientConfig(base_url=server.base_url, api_key_var="CANNED_CHAT_KEY"))

    async def episodes():
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(task, context) for task in tasks))

    return asyncio.run(episodes())


def banking_agent(messages):
    """A scripted support agent: verify the caller, look at the card, explain, end the call."""
    said = sum(1 for m in messages if m["role"] == "assistant")
    account = re.search(r"ACC-\d{6}", messages[0]["content"]).group(0)
    script = [
        {"action_type": "tool_call", "content": "lookup_account", "tool_args": {"account_id": account}},
        {"action_type": "speak", "content": "Thank you, I have your account open. Could you tell me what went wrong?"},
        {"action_type": "end_call", "content": "Thank you for calling, goodbye."},
    ]
    return json.dumps({"thinking": "", **script[min(said, len(script) - 1)]})


def test_the_taskset_is_the_learners_opening_chat_and_nothing_privileged():
    env = environment("RLADA-Banking-v0", episodes=3, seed=2, player=PLAYER)
    tasks = list(env.taskset)
    assert [task.data.name for task in tasks] == ["RLADA-Banking-v0#0", "RLADA-Banking-v0#1", "RLADA-Banking-v0#2"]
    opening = LearnerEpisodes("RLADA-Banking-v0")
    for episode, task in enumerate(tasks):
        chat = opening.start(0, episode, 2)
        assert task.data.system_prompt == chat[0]["content"]
        assert [(m.role, m.content) for m in task.data.prompt] == [(m["role"], m["content"]) for m in chat[1:]]
        assert task.data.info == {"env_id": "RLADA-Banking-v0", "learner": "agent", "env_kwargs": {}, "episode": episode, "seed": 2}
        assert opening.trajectory(0).profile["intent"] not in json.dumps(task.data.model_dump(mode="json"))


@needs_uv
def test_banking_agent_plays_through_verifiers_and_is_scored_by_the_env():
    with CannedChat(banking_agent) as server:
        env = environment("RLADA-Banking-v0", episodes=1, seed=2, player=PLAYER)
        (episode,) = play(env, server, list(env.taskset))
    (trace,) = episode.traces
    assert episode.ok and trace.ok, trace.errors
    trajectory = trace.info["trajectory"]
    moves = [json.loads(turn["raw"])["action_type"] for turn in trajectory["turns"] if turn["role"] == "agent"]
    assert moves == ["tool_call", "speak", "end_call"]
    # the tool call ran in the env, against the episode's bank: its result came back as the next user turn
    assert server.requests[1]["messages"][-1]["content"].startswith('Tool result: {"tool": "lookup_account", "ok": true')
    # the rubric is the env's reward: one reward, the learner's return; its terms as metrics
    agent_terms = {name.split("/", 1)[1]: value for name, value in trajectory["reward_terms"].items() if name.startswith("agent/")}
    assert trace.reward == pytest.approx(trajectory["rewards"]["agent"]) and list(trace.rewards) == ["reward"]
    assert trace.metrics == {f"reward/{name}": value for name, value in agent_terms.items()}
    # the same moves in process give the same episode
    replayed = LearnerEpisodes("RLADA-Banking-v0")
    replayed.start(0, 0, 2)
    for turn in trajectory["turns"]:
        if turn["role"] == "agent" and replayed.learners_turn(0):
            replayed.move([0], [turn["raw"]])
    assert json.loads(replayed.trajectory(0).to_json())["turns"] == trajectory["turns"]


@needs_uv
@pytest.mark.slow
def test_a_player_cut_short_is_silent_and_the_rules_score_it():
    reply = "<think>I want to know the price.</think><intent_level>3</intent_level><reply>How much does it cost?</reply>"
    with CannedChat(lambda messages: reply) as server:
        env = environment("TRACER-UserSim-v0", env_kwargs={"max_user_turns": 6}, episodes=2, seed=1, player={**PLAYER, "max_turns": 2})
        episodes = play(env, server, list(env.taskset))
    for episode in episodes:
        (trace,) = episode.traces
        users = [turn for turn in trace.info["trajectory"]["turns"] if turn["role"] == "user"]
        assert [turn["raw"] for turn in users[:2]] == [reply, reply] and all(turn["raw"] == "" for turn in users[2:])
        assert trace.reward == pytest.approx(trace.info["trajectory"]["rewards"]["user"])


def test_bad_arguments_are_typed_errors():
    with pytest.raises(ConfigError, match="Unknown environment id"):
        environment("SEAD-Inbound-v9")
    with pytest.raises(ConfigError, match="learner='judge' is not a role"):
        environment("SEAD-Outbound-v0", learner="judge")
    with pytest.raises(ConfigError, match="env_kwargs must be JSON data"):
        environment("SEAD-Outbound-v0", env_kwargs={"user": object()})


def test_missing_verifiers_names_the_extra(monkeypatch):
    for name in [name for name in sys.modules if name.split(".")[0] == "verifiers"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "dialogue_gym.integrations.verifiers")
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'dialogue_gym\[verifiers\]'"):
        importlib.import_module("dialogue_gym.integrations.verifiers")
