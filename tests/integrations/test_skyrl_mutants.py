"""SkyRL text env: where the start comes from (the row's extras, then SkyRL's per-env config), close()
on an env never started or already finished, and the episode count of a dataset."""

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from dialogue_gym.errors import ConfigError  # noqa: E402
from dialogue_gym.integrations.common import LearnerEpisodes  # noqa: E402
from dialogue_gym.integrations.skyrl import DialogueTextEnv, dataset_rows  # noqa: E402


class _Settings:
    """SkyRL's per-env config is an OmegaConf mapping: read through ``keys()`` and item access."""

    def __init__(self, **values):
        self.values = values

    def keys(self):
        return self.values.keys()

    def __getitem__(self, key):
        return self.values[key]


def test_the_per_env_config_supplies_what_the_row_leaves_out_and_anything_else_is_ignored():
    env = DialogueTextEnv(_Settings(learner="customer", env_seed=3), {"env_episode": 1}, env_id="RLADA-Banking-v0")
    assert (env.learner, env.episode, env.seed) == ("customer", 1, 3)
    assert env.init()[0] == LearnerEpisodes("RLADA-Banking-v0", learner="customer").start(0, 1, 3)
    # a config without keys() (not a mapping) is no source of the start: the defaults hold
    env = DialogueTextEnv(object(), {}, env_id="RLADA-Banking-v0")
    assert (env.learner, env.episode, env.seed) == ("agent", 0, 0)


def test_close_leaves_an_env_never_started_or_already_finished_as_it_is():
    env = DialogueTextEnv(None, {"env_kwargs": {"max_agent_turns": 1}}, env_id="SEAD-Outbound-v0")
    env.close()  # never started: nothing to finish
    assert env.get_metrics() == {}
    assert env.init()[0] == LearnerEpisodes("SEAD-Outbound-v0", env_kwargs={"max_agent_turns": 1}).start(0, 0, 0)
    out = env.step("Hello, I am calling about your car insurance.")
    assert out["done"]
    before = env.trajectory().to_dict()
    env.close()
    assert env.trajectory().to_dict() == before


@pytest.mark.parametrize("episodes", [0, -2, True, 2.0, "3"])
def test_a_dataset_of_no_episodes_or_a_count_that_is_not_an_int_is_refused(episodes):
    with pytest.raises(ConfigError, match="episodes must be a positive int"):
        dataset_rows("RLADA-Banking-v0", episodes)


def test_the_rows_extras_win_over_the_per_env_config():
    env = DialogueTextEnv(_Settings(env_episode=5, env_seed=3), {"extra_info": {"env_episode": 1}}, env_id="RLADA-Banking-v0")
    assert (env.episode, env.seed) == (1, 3)


def test_a_rows_env_kwargs_are_json_text_and_the_last_step_has_no_observations():
    (row,) = dataset_rows("SEAD-Outbound-v0", 1, env_kwargs={"max_agent_turns": 1, "invalid_action_penalty": 0.2})
    assert row["extra_info"]["env_kwargs"] == '{"invalid_action_penalty": 0.2, "max_agent_turns": 1}'  # a Parquet column of text
    env = skyrl_gym.make("SEAD-Outbound-v0", extras=row)
    env.init(row["prompt"])
    out = env.step("Hello, I am calling about your car insurance.")
    assert out["done"] and out["observations"] == [] and out["metadata"]["outcome"] == env.trajectory().outcome.value


def test_close_finishes_a_dialogue_left_open_with_the_learner_silent():
    speak = '{"action_type": "speak", "content": "Could you tell me a little more about the problem?"}'
    env = DialogueTextEnv(None, {"env_kwargs": {"max_agent_turns": 3}, "env_seed": 4}, env_id="RLADA-Banking-v0")
    env.init()
    assert not env.step(speak)["done"]
    env.close()
    silent = LearnerEpisodes("RLADA-Banking-v0", env_kwargs={"max_agent_turns": 3})
    silent.start(0, 0, 4)
    silent.move([0], [speak])
    silent.finish_silently([0])
    assert env.trajectory().outcome is not None and env.trajectory().to_dict() == silent.trajectory(0).to_dict()
