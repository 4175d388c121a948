"""Every id as a SkyRL-gym text environment, driven through SkyRL-gym's own registry and ``make``."""

import json

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402
from skyrl_gym.metrics import aggregate_for_environment  # noqa: E402

from dialogue_gym.errors import ConfigError, DependencyNotInstalled, EpisodeStateError  # noqa: E402
from dialogue_gym.integrations.common import LearnerEpisodes  # noqa: E402
from dialogue_gym.integrations.skyrl import (  # noqa: E402
    dataset_rows,
    register_environments,
)
from envs_registry import REGISTRY  # noqa: E402

SHORT = {"SEAD-Outbound-v0": {"max_agent_turns": 3}, "TRACER-UserSim-v0": {"max_user_turns": 3}, "DMBench-Assistant-v0": {"max_user_turns": 3},
         "RLADA-Banking-v0": {"max_agent_turns": 3}, "RLADA-Customer-v0": {"max_agent_turns": 3},
         "RLADA-Banking-v1": {"max_agent_turns": 3}}

ROLES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]


def line(env_id, turn):
    """A learner move that keeps any id's dialogue going (RL-ADA's agent speaks in JSON actions)."""
    text = f"Thank you, could you tell me a little more about that? ({turn})"
    return json.dumps({"action_type": "speak", "content": text}) if env_id == "RLADA-Banking-v0" else text


def play(env, prompt, env_id):
    chat, _ = env.init(prompt)
    rewards, turn = [], 0
    while True:
        out = env.step(line(env_id, turn))
        rewards.append(out["reward"])
        turn += 1
        if out["done"]:
            return chat, rewards, out
        assert out["observations"] and all(set(m) == {"role", "content"} for m in out["observations"])
        chat = chat + [{"role": "assistant", "content": line(env_id, turn - 1)}] + out["observations"]


@pytest.mark.parametrize("env_id, learner", ROLES, ids=[f"{e}-{r}" for e, r in ROLES])
def test_every_role_of_every_id_is_a_skyrl_text_env(env_id, learner):
    assert env_id in register_environments() and skyrl_gym.spec(env_id).entry_point.endswith(":DialogueTextEnv")
    (row,) = dataset_rows(env_id, 1, seed=4, learner=learner, env_kwargs=SHORT[env_id])
    env = skyrl_gym.make(row["env_class"], env_config=None, extras={"extra_info": row["extra_info"]})
    assert isinstance(env, BaseTextEnv)
    chat, rewards, last = play(env, row["prompt"], env_id)
    # what the env answered is the learner's chat as the rules show it, and the rewards sum to its return
    reference = LearnerEpisodes(env_id, learner=learner, env_kwargs=SHORT[env_id])
    assert reference.start(0, 0, 4) == row["prompt"] and chat[: len(row["prompt"])] == row["prompt"]
    assert env._episodes.messages(0)[: len(chat)] == chat
    trajectory = env.trajectory()
    assert trajectory.learner == learner and trajectory.outcome is not None and len(rewards) == len(trajectory.turns_of(learner))
    assert sum(rewards) == pytest.approx(trajectory.rewards[learner]) == pytest.approx(last["metadata"]["reward"])
    assert last["metadata"]["reward_terms"] == trajectory.reward_terms and last["metadata"]["outcome"] == trajectory.outcome.value
    metrics = env.get_metrics()
    assert metrics["reward/return"] == pytest.approx(trajectory.rewards[learner]) and metrics["episode/turns"] == len(trajectory.turns)
    assert aggregate_for_environment(env_id, [metrics, metrics])["reward/return"] == pytest.approx(metrics["reward/return"])
    with pytest.raises(EpisodeStateError, match="after the .* dialogue ended"):
        env.step("more")
    env.close()


def test_same_start_same_dialogue_and_a_closed_env_is_scored_silent():
    (row,) = dataset_rows("SEAD-Outbound-v0", 1, seed=2, env_kwargs=SHORT["SEAD-Outbound-v0"])
    first = skyrl_gym.make("SEAD-Outbound-v0", extras=row)
    second = skyrl_gym.make("SEAD-Outbound-v0", extras=row)
    assert play(first, row["prompt"], "SEAD-Outbound-v0")[1] == play(second, row["prompt"], "SEAD-Outbound-v0")[1]
    assert first.trajectory().to_dict() == second.trajectory().to_dict()
    # the generator stops after one turn: close() lets the rules finish the dialogue with the agent silent
    cut = skyrl_gym.make("SEAD-Outbound-v0", extras=row)
    cut.init(row["prompt"])
    cut.step(line("SEAD-Outbound-v0", 0))
    cut.close()
    silent = LearnerEpisodes("SEAD-Outbound-v0", env_kwargs=SHORT["SEAD-Outbound-v0"])
    silent.start(0, 0, 2)
    silent.move([0], [line("SEAD-Outbound-v0", 0)])
    silent.finish_silently([0])
    assert cut.trajectory().to_dict() == silent.trajectory(0).to_dict()


def test_wrong_rows_and_calls_are_typed_errors():
    (row,) = dataset_rows("RLADA-Banking-v0", 1, seed=1)
    with pytest.raises(ConfigError, match="not the opening chat"):
        skyrl_gym.make("RLADA-Banking-v0", extras={**row, "extra_info": {**row["extra_info"], "env_episode": 3}}).init(row["prompt"])
    with pytest.raises(ConfigError, match="is not a role of"):
        skyrl_gym.make("RLADA-Banking-v0", extras={"learner": "judge"})
    with pytest.raises(ConfigError, match="env_kwargs must be a JSON object"):
        skyrl_gym.make("RLADA-Banking-v0", extras={"env_kwargs": "{oops"})
    with pytest.raises(ConfigError, match="episode must be a non-negative int"):
        skyrl_gym.make("RLADA-Banking-v0", extras={"env_episode": -1})
    with pytest.raises(EpisodeStateError, match="before init"):
        skyrl_gym.make("RLADA-Banking-v0").step("hi")
    env = skyrl_gym.make("RLADA-Banking-v0")
    env.init()
    with pytest.raises(ConfigError, match="must be the model's text"):
        env.step(["not", "text"])


def test_missing_skyrl_gym_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "skyrl_gym", None)
    monkeypatch.delitem(sys.modules, "dialogue_gym.integrations.skyrl")
    with pytest.raises(DependencyNotInstalled, match=r"dialogue_gym\[skyrl\]"):
        import dialogue_gym.integrations.skyrl  # noqa: F401
