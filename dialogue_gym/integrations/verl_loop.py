"""The verl agent loop of every id and role (``pip install 'dialogue_gym[verl]'``, in verl's own environment).

:class:`DialogueAgentLoop` subclasses verl's ``AgentLoopBase``: its ``run`` plays one dialogue with
:func:`dialogue_gym.integrations.verl.play_dialogue` through verl's rollout server handle and returns an
``AgentLoopOutput``. Importing this module registers one loop per id and role with verl's ``@register``
under :func:`~dialogue_gym.integrations.verl.agent_loop_name` (``dialogue_gym/SEAD-Outbound-v0/agent``);
verl's workers are separate processes, so select the loops from a config instead:
``actor_rollout_ref.rollout.agent.agent_loop_config_path`` pointing at the file
:func:`~dialogue_gym.integrations.verl.write_agent_loop_config` writes (which also carries each loop's
env kwargs), and each dataset row's ``agent_name`` (:func:`~dialogue_gym.integrations.verl.dataset_rows`).
"""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from dialogue_gym.errors import ConfigError, DependencyNotInstalled

try:
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        register,
    )
    from verl.utils.profiler import simple_timer
except ImportError as exc:
    raise DependencyNotInstalled("verl", "verl", "Training dialogue_gym environments with verl") from exc

from dialogue_gym.integrations.common import json_kwargs, learner_of
from dialogue_gym.integrations.verl import CurriculumStarts, agent_loops, play_dialogue


class DialogueAgentLoop(AgentLoopBase):
    """One dialogue of ``env_id`` with the rollout model as ``learner`` (hydra instantiates one per row).

    Args (from the agent loop config, beside verl's own):
        env_id: the dialogue_gym id.
        learner: the role the model plays (default: the id's default learner).
        env_kwargs: the env's keyword arguments (JSON data: counterparts by name, backends by spec).
        max_turn_tokens: the most tokens one turn generates (default: what is left of ``response_length``).
        curriculum: SEAD only: ``ProfileController`` keyword arguments (``mode``, ``batch_size``, ``n_max``,
            ``seed``, ...); each rollout then starts from the profile the controller chose for its GRPO
            group (:class:`~dialogue_gym.integrations.verl.CurriculumStarts`, one named Ray actor per run).
    """

    env_id: str = ""
    learner: str | None = None

    def __init__(self, *args: Any, env_id: str | None = None, learner: str | None = None, env_kwargs: dict[str, Any] | None = None,
                 max_turn_tokens: int | None = None, curriculum: dict[str, Any] | None = None, name: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.env_id = env_id or type(self).env_id
        self.learner = learner_of(self.env_id, learner if learner is not None else type(self).learner)
        self.env_kwargs = json_kwargs(_plain(env_kwargs))
        self.max_turn_tokens = max_turn_tokens
        self.curriculum = _plain(curriculum)
        if self.curriculum is not None and self.env_id != "SEAD-Outbound-v0":
            raise ConfigError(f"curriculum (the Profile Controller) drives SEAD-Outbound-v0, not {self.env_id!r}.")

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        info = _plain(kwargs.get("extra_info")) or {}
        metrics: dict[str, Any] = {}
        starts = _curriculum_actor(self.curriculum) if self.curriculum is not None else None
        profile = await starts.profile.remote(str(kwargs.get("uid", "default"))) if starts is not None else None
        with simple_timer("generate_sequences", metrics):
            tokens = await play_dialogue(
                self.server_manager,
                self.tokenizer,
                self.env_id,
                episode=int(info.get("env_episode", info.get("index", 0))),
                seed=int(info.get("env_seed", 0)),
                learner=self.learner,
                env_kwargs=self.env_kwargs,
                sampling_params=sampling_params,
                response_length=self.rollout_config.response_length,
                prompt_length=self.rollout_config.prompt_length,
                max_turn_tokens=self.max_turn_tokens,
                request_id=uuid4().hex,
                raw_prompt=_plain(kwargs.get("raw_prompt")),
                template_kwargs=dict(self.apply_chat_template_kwargs or {}),
                profile=profile,
            )
        if starts is not None:
            await starts.finished.remote(tokens.trajectory.to_dict())
        return AgentLoopOutput(
            prompt_ids=tokens.prompt_ids,
            response_ids=tokens.response_ids,
            response_mask=tokens.response_mask,
            response_logprobs=tokens.response_logprobs or None,
            reward_score=tokens.reward,
            num_turns=tokens.num_turns,
            metrics=AgentLoopMetrics(**{k: v for k, v in metrics.items() if k in AgentLoopMetrics.model_fields}),
            extra_fields={
                "reward_extra_info": {"env_return": tokens.reward, "outcome": tokens.outcome or ""},
                "reward_terms": tokens.reward_terms,
                "stopped": tokens.stopped,
                "turn_scores": [],
                "tool_rewards": [],
            },
        )


CURRICULUM_ACTOR = "dialogue_gym_curriculum"


def _curriculum_actor(kwargs: dict[str, Any]) -> Any:
    """The run's one :class:`CurriculumStarts`, a named Ray actor every agent loop worker shares."""
    import ray

    actor = ray.remote(num_cpus=0)(CurriculumStarts)
    return actor.options(name=CURRICULUM_ACTOR, get_if_exists=True).remote(**kwargs)


def _plain(value: Any) -> Any:
    """OmegaConf containers and numpy arrays (what verl hands over) as plain Python data."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover - verl depends on omegaconf
        pass
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _class_name(name: str) -> str:
    return "DialogueAgentLoop_" + re.sub(r"\W", "_", name.split("/", 1)[1])


for _name, _env_id, _learner in agent_loops():
    _cls = type(_class_name(_name), (DialogueAgentLoop,), {"env_id": _env_id, "learner": _learner, "__module__": __name__})
    _cls.__qualname__ = _cls.__name__
    globals()[_cls.__name__] = register(_name)(_cls)
