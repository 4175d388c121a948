"""The SEAD outbound-call game: its rules, written once.

Roles: ``agent`` (the service caller) and ``user`` (the restaurant owner with hidden state).
The agent speaks first; turns alternate. The user role emits a record (reply, c/e/tr, status),
whether played by the scripted simulator, an LLM, or a learner. Both are parsed by
:mod:`dialogue_gym.scenarios.sead.parsing`: any ``str`` is read (the first ``MAX_ACTION_CHARS`` =
20,000 characters of it) or flagged, never raised on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game, StepResult, check_invalid_action_mode
from dialogue_gym.health import HEALTH_KEY
from dialogue_gym.readonly import message, message_views
from dialogue_gym.scenarios.common import check_max_utterance_chars, config_number
from dialogue_gym.scenarios.sead.data import (
    DEFAULT_BEHAVIORS_FILE,
    DEFAULT_SCENARIO_FILE,
    load_behaviors,
    load_campaign,
)
from dialogue_gym.scenarios.sead.health import agent_turn_health, load_health_rules, user_turn_health
from dialogue_gym.scenarios.sead.parsing import parse_agent_output, parse_user_output
from dialogue_gym.scenarios.sead.prompts import agent_system_prompt, caller_turn, user_system_prompt
from dialogue_gym.scenarios.sead.state import (
    ALL_STATES,
    STATE_DIMS,
    STATE_NAMES,
    Profile,
    UserState,
    sample_profile,
)
from dialogue_gym.seeding import mix_seed
from dialogue_gym.spaces import ChatMessages, Utterance
from dialogue_gym.types import Outcome, Trajectory, Turn

CALL_CONNECTED = "(The call connects. The owner picks up: \"Hello?\")"
SILENCE = "(silence)"
MIN_COOPERATION_TO_ACT = 3
USER_REWARD_MODES = ("adversarial", "none")


def _state_array(state: UserState) -> np.ndarray:
    array = np.array(state, dtype=np.int64)
    array.setflags(write=False)
    return array


_STATE_ARRAYS: dict[tuple[int, int, int], np.ndarray] = {state: _state_array(state) for state in ALL_STATES}
"""The owner's observed ``state`` of each of the 120 states, built once and read-only: copying one costs
a quarter of building it from the tuple, and the owner observes it every turn. Only copies are handed out."""


@dataclass(frozen=True)
class SeadConfig:
    """Rules' constants (SPEC section 1); every one is a keyword of the envs."""

    max_agent_turns: int = 15
    """T_max: the call fails with outcome ``timeout`` after this many agent turns."""
    success_reward: float = 1.0
    """Terminal reward of the agent when the user completes the operation."""
    invalid_action: str = "penalize"
    """What a malformed or out-of-range output does: ``penalize`` (flag, penalty, continue), ``end``, ``raise``."""
    invalid_action_penalty: float = 0.1
    """Subtracted from the mover's reward for each flagged move."""
    user_reward: str = "adversarial"
    """Reward of the user role: ``adversarial`` (success_reward when the agent fails; SEAD's 'Train URM' ablation) or ``none``."""
    max_utterance_chars: int = 2000
    """Longer utterances are truncated and flagged (at most ``MAX_ACTION_CHARS``, what a parser reads)."""
    scenario_file: str | None = None
    """Campaign JSON (facts + SOP); default: the packaged restaurant ad-credit campaign."""
    behaviors_file: str | None = None
    """Behavior library JSON; default: the packaged library."""

    def __post_init__(self) -> None:
        check_invalid_action_mode(self.invalid_action)
        if not isinstance(self.max_agent_turns, int) or self.max_agent_turns < 1:
            raise ConfigError(f"max_agent_turns must be a positive int, got {self.max_agent_turns!r}.")
        if self.user_reward not in USER_REWARD_MODES:
            raise ConfigError(f"user_reward={self.user_reward!r} is not supported; use one of {USER_REWARD_MODES}.")
        check_max_utterance_chars(self.max_utterance_chars)
        for name in ("success_reward", "invalid_action_penalty"):
            config_number(name, getattr(self, name))


class SeadGame(Game):
    id = "SEAD-Outbound-v0"
    roles = ("agent", "user")
    reset_options = ("profile",)
    config_class = SeadConfig

    def __init__(self, config: SeadConfig | None = None, **kwargs: Any):
        super().__init__()
        self.config = config if config is not None else SeadConfig(**kwargs)
        self.campaign = load_campaign(self.config.scenario_file or DEFAULT_SCENARIO_FILE)
        self.library = load_behaviors(self.config.behaviors_file or DEFAULT_BEHAVIORS_FILE)
        self._agent_system = agent_system_prompt(self.campaign)
        self.health_rules = load_health_rules(self.campaign, self.library)
        self._utterance_space = Utterance(max_length=max(4096, self.config.max_utterance_chars * 2))
        turn_space = spaces.Discrete(self.config.max_agent_turns + 1)
        self._observation_spaces = {
            "agent": spaces.Dict({"messages": ChatMessages(), "turn": turn_space}),
            "user": spaces.Dict(
                {
                    "messages": ChatMessages(),
                    "turn": turn_space,
                    "state": spaces.MultiDiscrete(STATE_DIMS),
                    "behaviors": spaces.MultiBinary(len(self.library.behaviors)),
                }
            ),
        }

    # -- spaces ----------------------------------------------------------------------
    def observation_space(self, role: str) -> spaces.Space:
        return self._observation_spaces[self.check_role(role)]

    def action_space(self, role: str) -> spaces.Space:
        self.check_role(role)
        return self._utterance_space

    # -- episode ---------------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> None:
        if "profile" in options:
            self.profile = Profile.coerce(options["profile"], self.library.ids)
        else:
            self.profile = sample_profile(self.rng, self.library.ids)
        self.state = self.profile.state
        self.turns: list[Turn] = []
        self.agent_turns = 0
        self.outcome: Outcome | None = None
        self.failure: str | None = None
        self.begin_accounting()
        self._agent_messages = [message("system", self._agent_system), message("user", CALL_CONNECTED)]
        self._user_messages: list[dict[str, str]] = []
        self._user_system: dict[str, str] | None = None
        self._user_replies: list[str] = []
        self._profile_categories = frozenset(self.library[b].category for b in self.profile.behaviors)
        self._behavior_mask = np.zeros(len(self.library.behaviors), dtype=np.int8)
        for behavior_id in self.profile.behaviors:
            self._behavior_mask[self.library.index(behavior_id)] = 1
        self._role = "agent"


    def _finish(self, outcome: Outcome, rewards: dict[str, float]) -> None:
        self.outcome = outcome
        self._role = None
        if outcome is Outcome.SUCCESS:
            self.add_reward(rewards, "agent", "success", float(self.config.success_reward))
        elif self.config.user_reward == "adversarial":
            self.add_reward(rewards, "user", "agent_failed", float(self.config.success_reward))

    def _abort(self, role: str, cause: str) -> None:
        self.outcome = Outcome.BACKEND_FAILURE
        self.failure = cause
        self._role = None

    def _step(self, role: str, text: str, token_ids: list[int] | None, logprobs: list[float] | None) -> StepResult:
        rewards = {"agent": 0.0, "user": 0.0}
        if role == "agent":
            move = parse_agent_output(text, self.config.max_utterance_chars)
            heard = move.utterance or SILENCE
            parsed = move.parsed()  # a fresh dict each call: the turn's own
            parsed[HEALTH_KEY] = agent_turn_health(move, self.health_rules).to_dict()
            self.turns.append(Turn("agent", text, heard, parsed, self.state, move.problem, token_ids, logprobs))
            self.agent_turns += 1
            self._agent_messages.append(message("assistant", text))
            self._user_messages.append(message("user", caller_turn(heard, self.state)))
            if self.flag_invalid(role, move.problem, rewards):
                self._finish(Outcome.INVALID, rewards)
            else:
                self._role = "user"
        else:
            move = parse_user_output(text, self.state)
            health = user_turn_health(
                move, self.state, self._profile_categories, self.health_rules, self._user_replies, self.turns[-1].text
            )
            self._user_replies.append(move.reply)
            problem = move.problem
            status = move.status
            if status == 1 and move.state.cooperation < MIN_COOPERATION_TO_ACT:
                problem = "; ".join(
                    filter(None, [problem, f"completed with cooperation {move.state.cooperation} < {MIN_COOPERATION_TO_ACT}; treated as 0"])
                )
                status = 0
            self.state = move.state
            parsed = {"status": status, "think": move.think, HEALTH_KEY: health.to_dict()}
            self.turns.append(Turn("user", text, move.reply, parsed, self.state, problem, token_ids, logprobs))
            self._user_messages.append(message("assistant", text))
            self._agent_messages.append(message("user", move.reply or SILENCE))
            if self.flag_invalid(role, problem, rewards):
                self._finish(Outcome.INVALID, rewards)
            elif status == 1:
                self._finish(Outcome.SUCCESS, rewards)
            elif status == -1:
                self._finish(Outcome.HANGUP, rewards)
            elif self.agent_turns >= self.config.max_agent_turns:
                self._finish(Outcome.TIMEOUT, rewards)
            else:
                self._role = "agent"
        done = self._role is None
        return StepResult(role, rewards, terminated=done, truncated=False, info=self.info(role))

    # -- views -----------------------------------------------------------------------
    def observe(self, role: str) -> dict[str, Any]:
        if role == "agent":
            return {"messages": message_views(self._agent_messages), "turn": self.agent_turns}
        if self._user_system is None:
            self._user_system = message("system", user_system_prompt(self.campaign, self.profile, self.library))
        return {
            "messages": [self._user_system, *self._user_messages],  # shared read-only messages, as message_views hands them
            "turn": self.agent_turns,
            "state": _STATE_ARRAYS[self.state].copy(),  # the state is always in range: parsed ones are clamped
            "behaviors": self._behavior_mask.copy(),
        }

    def info(self, role: str) -> dict[str, Any]:
        """The owner's own state (``user_state``) is in the ``user`` role's info only; the agent's
        policy never sees it (it is in :meth:`privileged`)."""
        info: dict[str, Any] = {
            "turn": self.agent_turns,
            "invalid_action": self._last_problem[role],
            "outcome": self.outcome.value if self.outcome is not None else None,
        }
        if role == "user":
            info["user_state"] = tuple(self.state)
        return info

    def role_profile(self, role: str) -> dict[str, Any]:
        """The owner knows its persona, state and behaviors; the caller knows nothing of the owner."""
        return self.profile.to_dict() if role == "user" else {}

    def privileged(self) -> dict[str, Any]:
        return {**super().privileged(), "user_state": tuple(self.state)}

    def evaluation_options(self, episode: int, seed: int) -> dict[str, Any]:
        """Stratified: initial state ``episode % 120``, behaviors drawn from ``(seed, episode)``."""
        rng = random.Random(mix_seed(seed, episode))
        profile = sample_profile(rng, self.library.ids, ALL_STATES[episode % len(ALL_STATES)])
        return {"profile": profile.to_dict()}

    def evaluation_strata(self) -> tuple[dict[str, Any], ...]:
        """The 120 initial states, faceted by cooperation, emotion and trust."""
        return tuple(dict(zip(STATE_NAMES, state)) for state in ALL_STATES)

    def episode_profile(self) -> dict[str, Any]:
        return self.profile.to_dict()

    def trajectory(self) -> Trajectory:
        return Trajectory(
            scenario=self.id,
            seed=self.seed,
            profile=self.profile.to_dict(),
            turns=list(self.turns),
            outcome=self.outcome,
            rewards=dict(self.returns),
            reward_terms=dict(self.reward_terms),
            meta={"failure": self.failure} if self.failure is not None else {},
        )
