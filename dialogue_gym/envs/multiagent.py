"""PettingZoo views: AEC (every role is an agent, taking turns) and parallel.

The parallel view is written directly rather than through ``aec_to_parallel``: in a dialogue only
the role whose turn it is can move, and PettingZoo's conversion would feed each agent an action
chosen before it saw the other's reply. Each parallel step applies the acting role's action and
ignores the others'; ``infos[agent]["to_act"]`` says who acts next.

Every role is an agent here, so ``reset`` never plays a move: the episode it returns has not ended.
If ``reset`` or a move raises (bad seed or options, ``invalid_action="raise"``), no episode is running
afterwards: ``step`` raises :class:`~dialogue_gym.errors.EpisodeStateError` until the next successful
``reset`` (the :class:`~dialogue_gym.game.Game` keeps that state). The parallel view also empties
``agents``; the AEC view leaves them, so that PettingZoo's order-enforcing wrapper passes ``step`` on
(with no agents it would drop the call with a warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pettingzoo import AECEnv, ParallelEnv

from dialogue_gym.envs.rendering import RENDER_MODES, TranscriptRendering
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game


class _RoleSpaces:
    """Each agent's spaces are its role's spaces in the game."""

    game: Game

    def observation_space(self, agent: str):
        return self.game.observation_space(agent)

    def action_space(self, agent: str):
        return self.game.action_space(agent)


class DialogueAECEnv(_RoleSpaces, TranscriptRendering, AECEnv):
    metadata = {"render_modes": RENDER_MODES, "render_fps": 1, "is_parallelizable": False}

    def __init__(self, game: Game, render_mode: str | None = None):
        super().__init__()
        self.game = game
        self.render_mode = self.check_render_mode(render_mode)
        self.possible_agents = list(game.roles)
        self.agents: list[str] = []

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.game.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: self.game.info(agent) for agent in self.agents}
        self.agent_selection = self.game.current_role

    def observe(self, agent: str) -> dict[str, Any]:
        return self.game.observe(agent)

    def step(self, action: Any) -> None:
        self.game.check_started("step")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        result = self.game.step(action)
        self.rewards = {a: result.rewards.get(a, 0.0) for a in self.agents}
        self.infos = {a: self.game.info(a) for a in self.agents}
        if self.game.done:
            self.terminations = {a: True for a in self.agents}
            next_agent = self.agents[(self.agents.index(agent) + 1) % len(self.agents)]
        else:
            next_agent = self.game.current_role
        self._accumulate_rewards()
        self.agent_selection = next_agent
        self._after_step()



class DialogueParallelEnv(_RoleSpaces, TranscriptRendering, ParallelEnv):
    metadata = {"render_modes": RENDER_MODES, "render_fps": 1}

    def __init__(self, game: Game, render_mode: str | None = None):
        self.game = game
        self.render_mode = self.check_render_mode(render_mode)
        self.possible_agents = list(game.roles)
        self.agents: list[str] = []

    def _infos(self) -> dict[str, dict[str, Any]]:
        return {a: {**self.game.info(a), "to_act": a == self.game.current_role} for a in self.agents}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self.agents = []
        self.game.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        return {a: self.game.observe(a) for a in self.agents}, self._infos()

    def step(self, actions: dict[str, Any]):
        role = self.game.require_turn("step")
        if not isinstance(actions, Mapping):
            raise ConfigError(
                f"step() needs a dict of actions keyed by agent, got {type(actions).__name__}: {actions!r:.80}; "
                f"pass e.g. {{{role!r}: text}} (only the acting role's action is used)."
            )
        if role not in actions:
            raise ConfigError(
                f"It is {role!r}'s turn but actions has no entry for it (got keys {list(actions)!r:.200}). "
                "Pass an action for every live agent; only the acting role's is used."
            )
        try:
            result = self.game.step(actions[role])
        except BaseException:
            if not self.game.started:
                self.agents = []
            raise
        observations = {a: self.game.observe(a) for a in self.agents}
        rewards = {a: result.rewards.get(a, 0.0) for a in self.agents}
        done = self.game.done
        terminations = {a: done for a in self.agents}
        truncations = {a: False for a in self.agents}
        infos = self._infos()
        self._after_step()
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

