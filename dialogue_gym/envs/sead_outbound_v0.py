"""SEAD-Outbound-v0: an outbound promotion call, agent vs. a user with hidden state.

## Description
A service agent phones a restaurant owner to get them to claim a free advertising trial credit
(SEAD, paper 000; SPEC section 1). The owner has a hidden state (cooperation 0-4, emotion 0-3,
trust 0-5) and 1-3 behaviors (asks whether the caller is a robot, asks about hidden costs, ...).
The scripted simulator (default) reacts to the agent's free text; an LLM can play the user instead.

## Roles
``agent`` (speaks first) and ``user``. Single-agent view: ``learner="agent"`` (default) or ``"user"``.

## Observation Space
``Dict(messages=ChatMessages, turn=Discrete(T_max + 1))`` for the agent: the chat from its side
(system prompt with SOP and facts, then the call), ready for ``apply_chat_template``. The user
additionally gets ``state=MultiDiscrete([5, 4, 6])`` and ``behaviors=MultiBinary(|L|)``, and its
system prompt carries its persona, state and rules. The agent never observes the hidden state;
``info["user_state"]`` carries it for metrics.

## Action Space
``Utterance``: the role's raw text. Agent: SEAD tags (``<response>`` + ``<cooperation_score>``,
``<emotion_score>``, ``<trust_score>``), the same fields as JSON, or plain text. User:
``<think>``, ``<reply>``, ``<cooperation>``, ``<emotion>``, ``<trust>``, ``<status>``.
A non-``str`` action raises :class:`~dialogue_gym.errors.InvalidAction`.

## Rewards
Agent: ``success_reward`` (1.0) when the user completes the operation, else 0; minus
``invalid_action_penalty`` (0.1) per malformed output. User: ``success_reward`` when the agent
fails (``user_reward="adversarial"``, SEAD's "Train URM" ablation) or 0 (``"none"``).

## Starting State
A profile drawn uniformly: one of the 120 states and 1-3 behaviors; or ``reset(options={"profile":
{"state": [c, e, tr], "behaviors": [ids]}})``.

## Episode End
Terminated on success (user status 1 with cooperation >= 3), hang-up (status -1), timeout after
``max_agent_turns`` (15) agent turns, or a malformed output with ``invalid_action="end"``. The
timeout is a task failure with the turn counter in the observation, so it is a termination, not a
truncation. When an LLM-played role's backend fails after its retries, the episode ends with
outcome ``backend_failure`` (cause in ``trajectory().meta["failure"]``); metrics leave such
episodes out rather than count them as the agent's failures. ``info["outcome"]`` names the end.

## Arguments
``learner`` ("agent" | "user"), ``agent`` ("sop" | "adaptive" | "oracle" | "random" | "llm"; plays
the agent when the user learns), ``user`` ("scripted" | "llm"), ``agent_backend`` / ``user_backend``
(backend spec such as ``{"name": "transformers", "model": "smollm2"}``), ``agent_sampling`` /
``user_sampling`` (sampling params), ``render_mode``, and every :class:`SeadConfig` field
(``max_agent_turns``, ``success_reward``, ``invalid_action``, ``invalid_action_penalty``,
``user_reward``, ``max_utterance_chars``, ``scenario_file``, ``behaviors_file``).

## Version History
* v0: initial release.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from pettingzoo.utils import wrappers

from dialogue_gym.envs.multiagent import DialogueAECEnv, DialogueParallelEnv
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.envs.vector import DialogueVectorEnv
from dialogue_gym.game import build_config
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy

ROLES = SeadGame.roles


@dataclass(frozen=True)
class RolePlayers:
    """Who plays which role (JSON-serializable kwargs shared by the single-agent and vector envs)."""

    learner: str = "agent"
    agent: Any = "sop"
    user: Any = "scripted"
    agent_backend: Any = None
    user_backend: Any = None
    agent_sampling: dict | None = None
    user_sampling: dict | None = None

    @classmethod
    def split(cls, kwargs: dict[str, Any]) -> tuple[RolePlayers, SeadGame]:
        """Separate role kwargs from game-config kwargs; build the players and a template game."""
        names = {f.name for f in fields(cls)}
        players = cls(**{k: v for k, v in kwargs.items() if k in names})
        game = SeadGame(build_config(SeadConfig, {k: v for k, v in kwargs.items() if k not in names}))
        return players, game

    def policies(self, game: SeadGame) -> dict[str, Any]:
        return {
            role: make_policy(role, getattr(self, role), game.library, getattr(self, f"{role}_backend"), getattr(self, f"{role}_sampling"))
            for role in ROLES
            if role != self.learner
        }


class SeadOutboundEnv(DialogueEnv):
    __doc__ = __doc__

    def __init__(self, render_mode: str | None = None, **kwargs: Any):
        players, game = RolePlayers.split(kwargs)
        super().__init__(game, players.learner, players.policies(game), render_mode)

    def make_role_policy(self, role: str, spec: Any, backend: Any = None, sampling: dict | None = None):
        return make_policy(role, spec, self.game.library, backend, sampling)


class SeadOutboundVectorEnv(DialogueVectorEnv):
    __doc__ = __doc__

    def __init__(self, num_envs: int = 1, **kwargs: Any):
        players, template = RolePlayers.split(kwargs)
        super().__init__(template.spawn, num_envs, players.learner, players.policies(template))


class raw_env(DialogueAECEnv):
    __doc__ = __doc__
    metadata = {**DialogueAECEnv.metadata, "name": "sead_outbound_v0"}

    def __init__(self, render_mode: str | None = None, **config: Any):
        super().__init__(SeadGame(build_config(SeadConfig, config)), render_mode)


def env(render_mode: str | None = None, **config: Any) -> DialogueAECEnv:
    """The AEC env, wrapped like PettingZoo's own (order enforcing)."""
    return wrappers.OrderEnforcingWrapper(raw_env(render_mode=render_mode, **config))


def parallel_env(render_mode: str | None = None, **config: Any) -> DialogueParallelEnv:
    environment = DialogueParallelEnv(SeadGame(build_config(SeadConfig, config)), render_mode)
    environment.metadata = {**environment.metadata, "name": "sead_outbound_v0"}
    return environment
