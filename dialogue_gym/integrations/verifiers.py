"""Every registered id as a ``verifiers`` environment (``pip install 'dialogue_gym[verifiers]'``).

The installed ``verifiers`` (0.4, its ``verifiers.v1`` stack) has no ``MultiTurnEnv``; its equivalent
is an ``Env`` whose ``run()`` steps an engine host-side as the user (as its TextArena and OpenEnv
tasksets do). Here the engine is the dialogue: :class:`DialogueTaskset` yields one task per training
episode (the learner's opening chat as the prompt, the start in ``info``), and :class:`DialogueEnv`
plays it: each reply of the ``player`` agent is the learner's move, what the learner hears next
(counterpart replies; tool results as user messages, since the learner's own text carries its tool
calls) comes back as the next user turn, and the dialogue ends by the env's rules.

The rubric is the env's reward: the trace's one reward ``reward`` is the learner's return, each of its
reward terms is a metric (``reward/<term>``), and ``trace.info`` keeps the outcome and the trajectory.
A player that stops early (its ``max_turns``, an error) is silent for the rest of the dialogue, which
the rules then score (:class:`~dialogue_gym.integrations.common.LearnerEpisodes`).

verifiers finds tasksets by the name of an installed top-level module; :func:`environment` builds the
env for an id directly and registers this module as the taskset ``dialogue-gym``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Iterator

from dialogue_gym.errors import DependencyNotInstalled

try:
    import verifiers.v1 as vf
except ImportError as exc:
    raise DependencyNotInstalled("verifiers", "verifiers", "Using dialogue_gym environments from verifiers") from exc

from dialogue_gym.integrations.common import LearnerEpisodes, check_episode, json_kwargs, learner_of

TASKSET_ID = "dialogue-gym"
_TASKSET_MODULE = "verifiers.v1.tasksets.dialogue_gym"


class DialogueTasksetConfig(vf.TasksetConfig):
    env_id: str = "SEAD-Outbound-v0"
    """The dialogue_gym id to play."""
    learner: str | None = None
    """The role the model plays (default: the id's default learner)."""
    env_kwargs: dict[str, Any] = {}
    """The env's keyword arguments (JSON data: counterparts by name, backends by spec)."""
    episodes: int = 100
    """Tasks: training episodes ``0 .. episodes - 1``."""
    seed: int = 0
    """Episode ``i`` starts like evaluation episode ``i`` of a run with this seed."""


class DialogueTaskData(vf.TaskData):
    info: dict[str, Any]
    """``env_id``, ``learner``, ``env_kwargs``, ``episode`` and ``seed``: what :class:`DialogueEnv` starts the episode from."""


class DialogueTask(vf.Task[DialogueTaskData, vf.State, vf.TaskConfig]):
    pass


def _task(config: DialogueTasksetConfig, opening: LearnerEpisodes, episode: int) -> DialogueTask:
    messages = opening.start(0, episode, config.seed)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    info = {"env_id": config.env_id, "learner": opening.learner, "env_kwargs": config.env_kwargs, "episode": episode, "seed": config.seed}
    data = DialogueTaskData(
        name=f"{config.env_id}#{episode}", system_prompt=system, prompt=messages[1:] if system is not None else messages, info=info
    )
    return DialogueTask(data, config.task)


class DialogueTaskset(vf.Taskset[DialogueTask, DialogueTasksetConfig]):
    def load(self) -> Iterator[DialogueTask]:
        config = self.config
        check_episode(config.episodes, config.seed)
        opening = LearnerEpisodes(config.env_id, learner=config.learner, env_kwargs=json_kwargs(config.env_kwargs))
        for episode in range(config.episodes):
            yield _task(config, opening, episode)


class DialogueEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()
    """The agent that plays the learner role."""


def _heard_turn(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"role": "user", "content": m["content"] if m["role"] != "tool" else f"Tool result: {m['content']}"} for m in messages]


class _Slots:
    """The episodes concurrent rollouts of one (id, learner, env kwargs) play in, one slot each."""

    def __init__(self, episodes: LearnerEpisodes):
        self.episodes = episodes
        self.free: list[int] = []
        self.made = 0

    def take(self) -> int:
        if self.free:
            return self.free.pop()
        self.made += 1
        return self.made - 1


class DialogueEnv(vf.Env[DialogueEnvConfig]):
    """Plays a :class:`DialogueTaskset` task: the ``player`` agent is the learner, the env every other role."""

    def __init__(self, config: DialogueEnvConfig) -> None:
        super().__init__(config)
        self._slots: dict[str, _Slots] = {}

    def _slots_for(self, info: dict[str, Any]) -> _Slots:
        key = json.dumps([info["env_id"], info["learner"], info["env_kwargs"]], sort_keys=True)
        if key not in self._slots:
            self._slots[key] = _Slots(LearnerEpisodes(info["env_id"], learner=info["learner"], env_kwargs=info["env_kwargs"]))
        return self._slots[key]

    async def run(self, task: DialogueTask, agents: vf.Agents) -> None:
        info = task.data.info
        slots = self._slots_for(info)
        episodes, slot = slots.episodes, slots.take()
        try:
            episodes.start(slot, info["episode"], info["seed"])
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated and episodes.learners_turn(slot):
                    (heard,) = episodes.move([slot], [segment.last_reply])
                    if not episodes.learners_turn(slot):
                        break
                    segment = await interaction.turn(_heard_turn(heard))
            episodes.finish_silently([slot])
            trajectory = episodes.trajectory(slot)
            trace = interaction.trace
            trace.record_reward("reward", episodes.reward(slot))
            prefix = f"{episodes.learner}/"
            for name, value in trajectory.reward_terms.items():
                if name.startswith(prefix):
                    trace.record_metric(f"reward/{name[len(prefix):]}", value)
            trace.info["outcome"] = trajectory.outcome.value
            trace.info["trajectory"] = json.loads(trajectory.to_json())
        finally:
            slots.free.append(slot)


def environment(
    env_id: str,
    *,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    episodes: int = 100,
    seed: int = 0,
    player: dict[str, Any] | None = None,
) -> DialogueEnv:
    """The verifiers env for ``env_id`` (see the module docstring); ``player`` is the player's
    ``AgentConfig`` fields (harness, runtime, model, client, sampling, max_turns)."""
    learner = learner_of(env_id, learner)
    check_episode(episodes, seed)
    sys.modules.setdefault(_TASKSET_MODULE, sys.modules[__name__])
    taskset = DialogueTasksetConfig(id=TASKSET_ID, env_id=env_id, learner=learner, env_kwargs=json_kwargs(env_kwargs), episodes=episodes, seed=seed)
    return DialogueEnv(DialogueEnvConfig(taskset=taskset, player=vf.AgentConfig(**(player or {}))))


__all__ = ["DialogueEnv", "DialogueTaskset", "environment"]
