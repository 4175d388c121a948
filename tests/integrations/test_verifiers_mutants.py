"""verifiers integration: the behaviours its end-to-end tests leave open, pinned without a chat harness
(the taskset built the way verifiers builds it from a config, a learner chat without a system prompt,
and how concurrent rollouts share the env's episode slots)."""

import pytest

pytest.importorskip("verifiers")

from dialogue_gym.integrations.common import LearnerEpisodes  # noqa: E402
from dialogue_gym.integrations.verifiers import (  # noqa: E402
    TASKSET_ID,
    DialogueTaskset,
    DialogueTasksetConfig,
    _Slots,
    _task,
    environment,
)


def test_a_taskset_config_without_a_seed_starts_like_evaluation_seed_0():
    """verifiers builds the taskset from a config file by name; a config that leaves the seed out gets
    episode i of an evaluation run with seed 0 (the documented default)."""
    tasks = list(DialogueTaskset(DialogueTasksetConfig(id=TASKSET_ID, env_id="RLADA-Banking-v0", episodes=2)))
    opening = LearnerEpisodes("RLADA-Banking-v0")
    for episode, task in enumerate(tasks):
        assert task.data.info["seed"] == 0
        assert [m.content for m in task.data.prompt] == [m["content"] for m in opening.start(0, episode, 0)[1:]]


class _NoSystemPrompt:
    """A learner whose chat opens with a user message (no system prompt)."""

    learner = "agent"

    def start(self, slot, episode, seed):
        return [{"role": "user", "content": "Hello, I have a question about my card."}]


def test_a_chat_without_a_system_message_is_all_prompt_and_no_system_prompt():
    config = DialogueTasksetConfig(id=TASKSET_ID, env_id="RLADA-Banking-v0", episodes=1)
    task = _task(config, _NoSystemPrompt(), 0)
    assert task.data.system_prompt is None
    assert [(m.role, m.content) for m in task.data.prompt] == [("user", "Hello, I have a question about my card.")]


def test_rollouts_take_the_lowest_free_slot_and_slot_0_is_the_template_game():
    slots = _Slots(LearnerEpisodes("RLADA-Banking-v0"))
    assert [slots.take(), slots.take(), slots.take()] == [0, 1, 2]
    slots.free.append(1)
    assert slots.take() == 1 and slots.take() == 3
    # the first rollout plays in the game LearnerEpisodes built, not in a spawned copy
    slots = _Slots(LearnerEpisodes("RLADA-Banking-v0"))
    slots.episodes.start(slots.take(), 0, 0)
    assert len(slots.episodes.games) == 1


def test_equal_env_kwargs_in_another_order_share_one_pool_of_episodes():
    env = environment("RLADA-Banking-v0", episodes=1)
    info = {"env_id": "RLADA-Banking-v0", "learner": "agent", "episode": 0, "seed": 0}
    first = env._slots_for({**info, "env_kwargs": {"max_agent_turns": 3, "customer_max_sentences": 2}})
    again = env._slots_for({**info, "env_kwargs": {"customer_max_sentences": 2, "max_agent_turns": 3}})
    other = env._slots_for({**info, "env_kwargs": {"max_agent_turns": 4, "customer_max_sentences": 2}})
    assert first is again and other is not first


class _Trace:
    def __init__(self):
        self.rewards, self.metrics, self.info = {}, {}, {}

    def record_reward(self, name, value):
        self.rewards[name] = value

    def record_metric(self, name, value):
        self.metrics[name] = value


class _Player:
    """verifiers' player agent, in process: replies ``replies`` in turn, then ends its interaction (a
    terminated segment, no new reply: its ``max_turns``), and records what it heard."""

    def __init__(self, replies):
        self.replies, self.heard = list(replies), []

    def interaction(self, task):
        player = self

        class Interaction:
            trace = _Trace()

            async def __aenter__(self):
                return self

            async def __aexit__(self, *exc):
                return False

            async def turn(self, messages=None):
                if messages is not None:
                    player.heard.append(messages)
                said = len(player.heard) + 1
                if said > len(player.replies):
                    return type("Segment", (), {"terminated": True, "last_reply": None})()
                return type("Segment", (), {"terminated": False, "last_reply": player.replies[said - 1]})()

        player.last = Interaction()
        return player.last


def _run(env, task, player):
    import asyncio

    asyncio.run(env.run(task, type("Agents", (), {"player": player})()))
    return player.last.trace


def test_a_player_that_stops_early_is_silent_and_the_rules_score_the_whole_dialogue():
    """Two replies, then the player is out of turns: the env plays the user's remaining turns as silence
    up to its own turn limit, and the trace's reward and metrics are the learner's return and terms."""
    env = environment("TRACER-UserSim-v0", env_kwargs={"max_user_turns": 4}, episodes=2, seed=5)
    task = list(env.taskset)[1]
    reply = "<think>I want to know the price.</think><intent_level>3</intent_level><reply>How much does it cost?</reply>"
    player = _Player([reply, reply])
    trace = _run(env, task, player)
    turns = trace.info["trajectory"]["turns"]
    said = [turn["raw"] for turn in turns if turn["role"] == "user"]
    assert said == [reply, reply, "", ""]  # two said, two silent up to the 4-turn limit
    # the same moves in process, from episode 1 of seed 5, give the same dialogue and reward
    replayed = LearnerEpisodes("TRACER-UserSim-v0", env_kwargs={"max_user_turns": 4})
    replayed.start(0, 1, 5)
    for raw in said:
        replayed.move([0], [raw])
    trajectory = replayed.trajectory(0)
    assert [turn.raw for turn in trajectory.turns] == [turn["raw"] for turn in turns]
    assert trace.rewards == {"reward": pytest.approx(trajectory.rewards["user"])} and trajectory.rewards["user"] > 0
    terms = {name.split("/", 1)[1]: value for name, value in trajectory.reward_terms.items() if name.startswith("user/")}
    assert terms and trace.metrics == {f"reward/{name}": pytest.approx(value) for name, value in terms.items()}
    assert trace.info["outcome"] == trajectory.outcome.value
    # after each of its moves the player heard the assistant's answer, as a user turn
    answers = [turn.raw for turn in trajectory.turns if turn.role == "assistant"]
    assert player.heard == [[{"role": "user", "content": answers[0]}], [{"role": "user", "content": answers[1]}]]
    # the slot went back: the next rollout plays in the same game
    (slots,) = env._slots.values()
    assert slots.free == [0] and slots.made == 1
