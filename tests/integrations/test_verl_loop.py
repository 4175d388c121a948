"""The verl agent loop class with verl itself: instantiated the way verl's ``AgentLoopWorker`` does
(hydra, from the registry or the agent loop file) and run against a fake rollout server. Skipped where
verl is not installed: it runs in verl's own environment (docs/integrations.md, "verl"), as CI's slow step does:

    python -m venv --system-site-packages /tmp/verl-env
    /tmp/verl-env/bin/pip install 'verl==0.9.*' 'kernels>=0.12,<0.13'
    /tmp/verl-env/bin/python -m pytest tests/integrations/test_verl_loop.py
"""

import asyncio

import pytest

pytest.importorskip("verl.experimental.agent_loop.agent_loop")

import hydra  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from test_verl import SHORT, FakeRolloutServer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry  # noqa: E402

from dialogue_gym.integrations import verl_loop  # noqa: E402
from dialogue_gym.integrations.verl import (  # noqa: E402
    agent_loop_configs,
    agent_loop_name,
    dataset_rows,
)


class InProcessActor:
    """The named Ray actor, in process: ``actor.method.remote(*args)`` awaits ``method(*args)``."""

    def __init__(self, starts):
        self.starts = starts

    def __getattr__(self, name):
        method = getattr(self.starts, name)

        async def call(*args):
            return method(*args)

        return type("Method", (), {"remote": staticmethod(call)})


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def instantiate(config, tokenizer, server):
    trainer = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096, "response_length": 512}}, "data": {}})
    return hydra.utils.instantiate(config=config, trainer_config=DictConfigWrap(trainer), server_manager=server, tokenizer=tokenizer,
                                   processor=None, hf_model_type=None, dataset_cls=None, data_config=DictConfigWrap(trainer.data))


@pytest.mark.parametrize("env_id", list(SHORT))
def test_the_loop_from_the_agent_loop_file_returns_verls_output(env_id, tokenizer):
    assert all(name in _agent_loop_registry for name, *_ in verl_loop.agent_loops())
    (config,) = [OmegaConf.create(c) for c in agent_loop_configs(SHORT, 32) if c["name"] == agent_loop_name(env_id)]
    server = FakeRolloutServer(tokenizer, env_id, config.learner)
    loop = instantiate(config, tokenizer, server)
    (row,) = dataset_rows(env_id, 1, seed=2, env_kwargs=SHORT[env_id])
    output = asyncio.run(loop.run({"temperature": 1.0}, raw_prompt=row["prompt"], extra_info=row["extra_info"], uid="u0", index=0))
    assert len(output.response_ids) == len(output.response_mask) == len(output.response_logprobs) <= 512
    assert sum(output.response_mask) == sum(len(call[3].token_ids) for call in server.calls)
    assert output.reward_score == output.extra_fields["reward_extra_info"]["env_return"]
    tensors = output.as_dict()
    assert tensors["rm_scores"][-1] == output.reward_score and tensors["response_mask"].sum() == sum(output.response_mask)


def test_the_registered_loop_and_the_curriculum(tokenizer, monkeypatch):
    server = FakeRolloutServer(tokenizer, "SEAD-Outbound-v0", "agent")
    loop = instantiate(_agent_loop_registry[agent_loop_name("SEAD-Outbound-v0")], tokenizer, server)
    assert loop.env_id == "SEAD-Outbound-v0" and loop.learner == "agent"
    (row,) = dataset_rows("SEAD-Outbound-v0", 1, seed=2)
    assert asyncio.run(loop.run({}, raw_prompt=row["prompt"], extra_info=row["extra_info"])).num_turns >= 3

    starts = verl_loop.CurriculumStarts(batch_size=2, seed=0)
    monkeypatch.setattr(verl_loop, "_curriculum_actor", lambda kwargs: InProcessActor(starts))
    loop = instantiate(OmegaConf.create(agent_loop_configs(curriculum={"batch_size": 2})[0]), tokenizer, server)
    outputs = [asyncio.run(loop.run({}, raw_prompt=row["prompt"], extra_info=row["extra_info"], uid="g")) for _ in range(2)]
    assert len(outputs) == 2 and len(starts.finished_since_update) == 2 and starts.iterations == 1
