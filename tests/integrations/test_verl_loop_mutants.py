"""The verl agent loop class: a role other than the id's default, a row without a start (episode 0 of seed
0), the timing metric verl logs, OmegaConf interpolations, and the curriculum's one shared Ray actor.
Skipped where verl is not installed (run it in verl's own environment, see test_verl_loop.py)."""

import asyncio

import pytest

pytest.importorskip("verl.experimental.agent_loop.agent_loop")

from omegaconf import OmegaConf  # noqa: E402
from test_verl import SHORT, FakeRolloutServer  # noqa: E402
from test_verl_loop import InProcessActor, instantiate  # noqa: E402

from dialogue_gym.integrations import verl_loop  # noqa: E402
from dialogue_gym.integrations.verl import agent_loop_configs, dataset_rows  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def test_the_loop_file_plays_the_role_it_names_not_the_ids_default(tokenizer):
    (config,) = [OmegaConf.create(c) for c in agent_loop_configs(SHORT) if c["name"] == "dialogue_gym/TRACER-UserSim-v0/assistant"]
    loop = instantiate(config, tokenizer, FakeRolloutServer(tokenizer, "TRACER-UserSim-v0", "assistant"))
    assert loop.learner == "assistant" and loop.env_kwargs == SHORT["TRACER-UserSim-v0"]


def test_a_row_without_a_start_plays_episode_0_of_seed_0_and_reports_its_timing(tokenizer):
    (config,) = [OmegaConf.create(c) for c in agent_loop_configs(SHORT) if c["name"] == "dialogue_gym/RLADA-Banking-v0/agent"]
    loop = instantiate(config, tokenizer, FakeRolloutServer(tokenizer, "RLADA-Banking-v0", "agent"))
    first = dataset_rows("RLADA-Banking-v0", 1, seed=0, env_kwargs=SHORT["RLADA-Banking-v0"])[0]["prompt"]
    output = asyncio.run(loop.run({}, raw_prompt=first))  # the prompt check would refuse any other start
    assert output.num_turns >= 3 and output.metrics.generate_sequences > 0


def test_omegaconf_values_are_plain_data_with_interpolations_resolved():
    config = OmegaConf.create({"turns": 3, "env_kwargs": {"max_agent_turns": "${turns}"}, "ids": [1, 2]})
    assert verl_loop._plain(config) == {"turns": 3, "env_kwargs": {"max_agent_turns": 3}, "ids": [1, 2]}


def test_every_loop_shares_one_curriculum_actor_that_takes_no_cpu():
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    ray.init(num_cpus=0, include_dashboard=False, log_to_driver=False)  # no CPU to spare: an actor asking for one never starts
    try:
        first = verl_loop._curriculum_actor({"batch_size": 2, "seed": 0})
        again = verl_loop._curriculum_actor({"batch_size": 2, "seed": 0})
        profiles = ray.get([first.profile.remote("g"), again.profile.remote("g")], timeout=60)
        assert len(profiles) == 2 and profiles[0] != profiles[1]  # one batch of two, handed out once each
        assert ray.get(again.state.remote(), timeout=60)["iterations"] == 1
    finally:
        ray.shutdown()


def test_each_rollouts_uid_is_its_curriculum_group(tokenizer, monkeypatch):
    """Rollouts of two rows (two uids) draw from two batches: two iterations of the controller, and every
    finished dialogue handed back."""
    starts = verl_loop.CurriculumStarts(batch_size=1, seed=0)
    monkeypatch.setattr(verl_loop, "_curriculum_actor", lambda kwargs: InProcessActor(starts))
    server = FakeRolloutServer(tokenizer, "SEAD-Outbound-v0", "agent")
    loop = instantiate(OmegaConf.create(agent_loop_configs(SHORT, curriculum={"batch_size": 1})[0]), tokenizer, server)
    (row,) = dataset_rows("SEAD-Outbound-v0", 1, seed=2, env_kwargs=SHORT["SEAD-Outbound-v0"])
    outputs = [asyncio.run(loop.run({}, raw_prompt=row["prompt"], extra_info=row["extra_info"], uid=uid)) for uid in ("a", "b")]
    assert starts.iterations == 2 and starts.spent == {"a", "b"} and len(starts.finished_since_update) == 1
    assert all(output.reward_score == output.extra_fields["reward_extra_info"]["env_return"] for output in outputs)
