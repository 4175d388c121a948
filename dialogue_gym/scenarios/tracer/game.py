"""The TRACER / DM-Bench game: its rules, written once.

Roles: ``assistant`` (the merchant's customer-service agent) and ``user`` (the simulated user). Each
episode starts from a reference session: the user's profile, the merchant, and the session's first
assistant utterance, which is already said when the episode begins, so the user moves first. Turns
alternate. A user turn carries an intent level 0-5; the episode ends after a user turn on conversion
(level 5), dropout (level 0) or the ``max_user_turns``-th user turn (15; a dropout, outcome ``timeout``).

Opening rule: the user's first move answers the reference opening, which no policy chose, so it
cannot end the episode (a user cannot convert or leave before the assistant has said anything):
level 5 there is read as 4 and level 0 as 1, the move scores 0 on R_fmt (``format_ok`` false) and its
turn record keeps the level asked for as ``parsed["requested_intent_level"]``; ``max_user_turns`` is
at least 2. So a well-formed first move never ends the episode, and a view whose ``reset`` plays the
user's first move never hands back an ended episode (only ``invalid_action="end"`` ends one, on a
malformed move, as it does on any move). Reference sessions obey the same rule: only their last user
turn may be at level 0 or 5, and they have 3 or more.

Model output is parsed by :mod:`dialogue_gym.scenarios.tracer.parsing`: any ``str`` is read (the
first ``MAX_ACTION_CHARS`` = 20,000 characters of it) or flagged, never raised on. A user reply must
also be a reply a person writes (:func:`~dialogue_gym.scenarios.tracer.acts.reply_problem`: no
made-up words, keyword lists or babble, no copy of the assistant's last line); one that is not is
flagged and scores 0 on R_fmt, like any other format failure.

At the end the user role is scored against its paired reference (TRACER's reward, SPEC section 2:
``l1 R_fmt + l2 R_final + l3 R_traj``) and the assistant by conversion (DM-Bench); a response-quality
judge may score the assistant's turns. ``info`` carries the intent trajectory and its DTW alignment
to the reference (cost D, per-turn deviations d_t, discounted suffixes c_t) after every user turn.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gymnasium import spaces

from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game, StepResult, check_invalid_action_mode
from dialogue_gym.health import HEALTH_KEY
from dialogue_gym.metrics.dtw import Alignment, align
from dialogue_gym.readonly import message, message_views, thawed
from dialogue_gym.rewards.tracer import TracerReward, tracer_reward
from dialogue_gym.scenarios.common import check_max_utterance_chars, config_number
from dialogue_gym.scenarios.tracer.data import (
    CONVERSION_LEVEL,
    DEFAULT_SESSIONS_FILE,
    DROPOUT_LEVEL,
    LEVELS,
    MAX_USER_TURNS,
    ReferenceSession,
    ReferenceSet,
    load_sessions,
)

from dialogue_gym.scenarios.tracer.acts import reply_problem
from dialogue_gym.scenarios.tracer.health import assistant_turn_health, load_health_rules, user_turn_health
from dialogue_gym.scenarios.tracer.judges import JUDGES, make_judge
from dialogue_gym.scenarios.tracer.parsing import (
    parse_assistant_output,
    parse_user_output,
)
from dialogue_gym.scenarios.tracer.prompts import (
    assistant_system_prompt,
    user_system_prompt,
)
from dialogue_gym.spaces import ChatMessages, Utterance
from dialogue_gym.types import Outcome, Trajectory, Turn

OPENING_REPLY_LEVELS = {CONVERSION_LEVEL: CONVERSION_LEVEL - 1, DROPOUT_LEVEL: DROPOUT_LEVEL + 1}
"""The opening rule: how a level that would end the episode is read on the user's first move."""
SILENCE = "(silence)"
NO_REPLY = "(no reply)"
USER_REWARD_MODES = ("tracer", "none")


@lru_cache(maxsize=65536)
def _aligned(intents: tuple[int, ...], reference: tuple[int, ...], rho: float) -> tuple[Alignment, tuple[float, ...]]:
    """The DTW alignment of ``intents`` to ``reference`` and its discounted suffixes: pure, and
    memoised because scripted users replay the same short level sequences."""
    alignment = align(intents, reference)
    return alignment, tuple(alignment.suffix(rho).tolist())


@dataclass(frozen=True)
class TracerConfig:
    """Rules' constants (SPEC section 2); every one is a keyword of the envs."""

    max_user_turns: int = MAX_USER_TURNS
    """Sessions end (outcome ``timeout``, a dropout) after this many user turns (at least 2: the opening rule)."""
    sessions_file: str | None = None
    """Reference sessions (JSONL, see ``data/README.md``); default: the packaged SYNTHETIC sample."""
    sessions: tuple[str, ...] | list[str] | None = None
    """Session ids to draw episodes from (default: every session of the file)."""
    user_reward: str = "tracer"
    """Reward of the user role at the end: ``tracer`` (``l1 R_fmt + l2 R_final + l3 R_traj`` against the reference) or ``none``."""
    reward_weights: tuple[float, float, float] | list[float] = (0.2, 0.5, 0.3)
    """(l1, l2, l3): weights of R_fmt, R_final, R_traj (paper, appendix A.1)."""
    alpha: float = 1.0
    """R_traj sensitivity to the normalised DTW cost."""
    beta: float = 1.0
    """R_traj weight of the length mismatch |T* - T|."""
    eta_flat: float = 0.2
    """R_traj factor when the reference has >= 2 distinct levels and the simulated sequence one (paper: 0.2)."""
    rho: float = 0.4
    """Discount of the deviation suffixes c_t = sum_k rho^k d_{t+k} reported in ``info`` (paper: 0.4)."""
    conversion_reward: float = 1.0
    """Reward of the assistant role when the user converts (DM-Bench)."""
    invalid_action: str = "penalize"
    """What a malformed output does: ``penalize`` (flag, penalty, continue), ``end``, ``raise``."""
    invalid_action_penalty: float = 0.0
    """Subtracted from the mover's reward for each flagged move. 0 for TRACER: R_fmt already prices format."""
    fallback_intent_level: int = 2
    """Level used when a user output's level cannot be read and there is no previous level to keep."""
    max_utterance_chars: int = 2000
    """Longer assistant utterances are truncated and flagged (at most ``MAX_ACTION_CHARS``, what a parser reads)."""
    judge: str = "none"
    """Response-quality judge of the assistant's turns at the end: ``none``, ``heuristic``, ``llm``."""
    judge_backend: dict | None = None
    """Backend spec of the LLM judge, e.g. ``{"name": "transformers", "model": "smollm2"}``."""

    def __post_init__(self) -> None:
        check_invalid_action_mode(self.invalid_action)
        if isinstance(self.max_user_turns, bool) or not isinstance(self.max_user_turns, int) or self.max_user_turns < 2:
            raise ConfigError(
                f"max_user_turns must be an int >= 2 (the user's first move cannot end an episode), got {self.max_user_turns!r}."
            )
        check_max_utterance_chars(self.max_utterance_chars)
        if self.user_reward not in USER_REWARD_MODES:
            raise ConfigError(f"user_reward={self.user_reward!r} is not supported; use one of {USER_REWARD_MODES}.")
        if self.judge not in JUDGES:
            raise ConfigError(f"judge={self.judge!r} is not supported; use one of {list(JUDGES)}.")
        weights = self.reward_weights
        if not isinstance(weights, (list, tuple)) or len(weights) != 3:
            raise ConfigError(f"reward_weights must be three numbers (l1, l2, l3), got {weights!r}.")
        for position, weight in enumerate(weights):
            config_number(f"reward_weights[{position}]", weight)
        config_number("alpha", self.alpha, 0.0)
        config_number("beta", self.beta, 0.0)
        if config_number("eta_flat", self.eta_flat, 0.0, 1.0) == 0.0:
            raise ConfigError("eta_flat must be in (0, 1], got 0; 1 turns the flatness discount off.")
        config_number("rho", self.rho, 0.0, 1.0)
        config_number("conversion_reward", self.conversion_reward)
        config_number("invalid_action_penalty", self.invalid_action_penalty)
        if self.fallback_intent_level not in range(1, LEVELS - 1):
            raise ConfigError(f"fallback_intent_level must be an int 1-{LEVELS - 2}, got {self.fallback_intent_level!r}.")
        if self.sessions is not None and (
            not isinstance(self.sessions, (list, tuple)) or not self.sessions or not all(isinstance(s, str) for s in self.sessions)
        ):
            raise ConfigError(f"sessions must be a non-empty list of session ids or None, got {self.sessions!r}.")


@dataclass(frozen=True)
class DMBenchConfig(TracerConfig):
    """DM-Bench's defaults: the heuristic judge scores every episode; malformed assistant turns cost 0.1."""

    invalid_action_penalty: float = 0.1
    """Subtracted from the mover's reward for each flagged move."""
    judge: str = "heuristic"
    """Response-quality judge of the assistant's turns at the end: ``none``, ``heuristic``, ``llm``."""


class TracerGame(Game):
    id = "TRACER-UserSim-v0"
    roles = ("assistant", "user")
    reset_options = ("session_id",)
    config_class = TracerConfig

    def __init__(self, config: TracerConfig | None = None, references: ReferenceSet | None = None, **kwargs: Any):
        """``references`` overrides the sessions file with sessions built in Python (e.g. by the synthetic generator)."""
        super().__init__()
        self.config = config if config is not None else self.config_class(**kwargs)
        if references is None:
            references = load_sessions(self.config.sessions_file or DEFAULT_SESSIONS_FILE)
        self.references = references.subset(tuple(self.config.sessions)) if self.config.sessions else references
        self.judge = make_judge(self.config.judge, self.config.judge_backend)
        self.health_rules = load_health_rules()
        self._utterance_space = Utterance(max_length=max(4096, self.config.max_utterance_chars * 2))
        self._observation_space = spaces.Dict(
            {"messages": ChatMessages(), "turn": spaces.Discrete(self.config.max_user_turns + 1)}
        )

    def spawn(self) -> TracerGame:
        return type(self)(self.config, self.references)

    # -- spaces ----------------------------------------------------------------------
    def observation_space(self, role: str) -> spaces.Space:
        self.check_role(role)
        return self._observation_space

    def action_space(self, role: str) -> spaces.Space:
        self.check_role(role)
        return self._utterance_space

    # -- episode ---------------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> None:
        if "session_id" in options:
            self.session: ReferenceSession = self.references[options["session_id"]]
        else:
            self.session = self.references.sessions[self.rng.randrange(len(self.references))]
        self.profile = {
            "session_id": self.session.session_id,
            "group_id": self.session.group_id,
            "user": thawed(self.session.profile),
            "merchant": thawed(self.session.merchant),
            "opening": self.session.opening,
        }
        self.turns: list[Turn] = []
        self.intents: list[int] = []
        self.format_ok: list[bool] = []
        self._user_replies: list[str] = []
        self.outcome: Outcome | None = None
        self.failure: str | None = None
        self.scores: TracerReward | None = None
        self.judged: dict[str, Any] | None = None
        self.begin_accounting()
        self._messages = {
            "user": [message("system", user_system_prompt(self.profile)), message("user", self.session.opening)],
            "assistant": [message("system", assistant_system_prompt(self.profile)), message("assistant", self.session.opening)],
        }
        self._role = "user"


    def _finish(self, outcome: Outcome, rewards: dict[str, float]) -> None:
        self.outcome = outcome
        self._role = None
        config = self.config
        if outcome is Outcome.SUCCESS:
            self.add_reward(rewards, "assistant", "conversion", float(config.conversion_reward))
        if config.user_reward == "tracer" and self.intents:
            self.scores = tracer_reward(
                self.intents, self.session.intents, self.format_ok,
                weights=tuple(config.reward_weights), alpha=config.alpha, beta=config.beta, eta_flat=config.eta_flat,
                cost=self.alignment.cost,
            )
            for term, value in self.scores.weighted().items():
                self.add_reward(rewards, "user", term, value)
        if self.judge is not None:
            scores = self.judge.score(self.transcript(), self.profile["merchant"], opening=self.session.opening)
            self.judged = {**scores, "judge": self.judge.name}

    def _abort(self, role: str, cause: str) -> None:
        self.outcome = Outcome.BACKEND_FAILURE
        self.failure = cause
        self._role = None

    def _step(self, role: str, text: str, token_ids: list[int] | None, logprobs: list[float] | None) -> StepResult:
        rewards = {"assistant": 0.0, "user": 0.0}
        current = self.intents[-1] if self.intents else None
        if role == "assistant":
            move = parse_assistant_output(text, self.config.max_utterance_chars)
            heard = move.utterance or SILENCE
            state = (current,) if current is not None else None
            parsed = {HEALTH_KEY: assistant_turn_health(move, self.health_rules).to_dict()}
            self.turns.append(Turn("assistant", text, heard, parsed, state, move.problem, token_ids, logprobs))
            self._messages["assistant"].append(message("assistant", text))
            self._messages["user"].append(message("user", heard))
            if self.flag_invalid(role, move.problem, rewards):
                self._finish(Outcome.INVALID, rewards)
            else:
                self._role = "user"
        else:
            move = parse_user_output(text, current if current is not None else self.config.fallback_intent_level)
            language = reply_problem(move.reply, self._messages["user"][-1]["content"])
            health = user_turn_health(move, language, self.health_rules, self._user_replies)
            self._user_replies.append(move.reply)
            if language is not None:
                move = dataclasses.replace(move, format_ok=False, problem="; ".join(p for p in (move.problem, language) if p))
            level, format_ok = move.intent_level, move.format_ok
            parsed: dict[str, Any] = {}
            if current is None and level in OPENING_REPLY_LEVELS:
                parsed["requested_intent_level"] = level
                level, format_ok = OPENING_REPLY_LEVELS[level], False
            self.intents.append(level)
            self.format_ok.append(format_ok)
            parsed.update(intent_level=level, think=move.think, format_ok=format_ok)
            parsed[HEALTH_KEY] = health.to_dict()
            self.turns.append(Turn("user", text, move.reply, parsed, (level,), move.problem, token_ids, logprobs))
            self._messages["user"].append(message("assistant", text))
            self._messages["assistant"].append(message("user", move.reply or NO_REPLY))
            if self.flag_invalid(role, move.problem, rewards):
                self._finish(Outcome.INVALID, rewards)
            elif level == CONVERSION_LEVEL:
                self._finish(Outcome.SUCCESS, rewards)
            elif level == DROPOUT_LEVEL:
                self._finish(Outcome.HANGUP, rewards)
            elif len(self.intents) >= self.config.max_user_turns:
                self._finish(Outcome.TIMEOUT, rewards)
            else:
                self._role = "assistant"
        return StepResult(role, rewards, terminated=self._role is None, truncated=False, info=self.info(role))

    # -- views -----------------------------------------------------------------------
    @property
    def alignment(self) -> Alignment | None:
        """The DTW alignment of the intent levels so far to the reference (None before the first user
        turn); computed when read, since only the episode's end and the privileged channel need it."""
        if not self.intents:
            return None
        return _aligned(tuple(self.intents), tuple(self.session.intents), self.config.rho)[0]

    @property
    def suffix(self) -> list[float]:
        """The discounted deviation suffixes c_t of :attr:`alignment` (empty before the first user turn)."""
        if not self.intents:
            return []
        return list(_aligned(tuple(self.intents), tuple(self.session.intents), self.config.rho)[1])

    def transcript(self) -> list[tuple[str, str]]:
        """``(role, text heard)`` of every move so far (the opening excluded)."""
        return [(turn.role, turn.text) for turn in self.turns]

    def observe(self, role: str) -> dict[str, Any]:
        self.check_role(role)
        return {"messages": message_views(self._messages[role]), "turn": len(self.intents)}

    def info(self, role: str) -> dict[str, Any]:
        """What ``role`` knows: the user its own intent levels (``intent_trajectory``, and
        ``intent_level`` from its first turn on, so a vector env's batched infos keep one dtype per
        key); both roles the scores once the episode is over. The reference session and the per-turn
        DTW numbers are in :meth:`privileged`."""
        info: dict[str, Any] = {
            "turn": len(self.intents),
            "invalid_action": self._last_problem[role],
            "outcome": self.outcome.value if self.outcome is not None else None,
        }
        if role == "user":
            info["intent_trajectory"] = list(self.intents)
            if self.intents:
                info["intent_level"] = self.intents[-1]
        if self.scores is not None:
            info["reward_terms"] = self.scores.to_dict()
        if self.judged is not None:
            info["response_quality"] = thawed(self.judged)
        return info

    def role_profile(self, role: str) -> dict[str, Any]:
        """The user knows its persona, the merchant it contacts and its opening; the assistant knows
        its merchant. Neither knows which reference session the episode follows."""
        known = ("user", "merchant", "opening") if role == "user" else ("merchant",)
        return {key: thawed(self.profile[key]) for key in known}

    def privileged(self) -> dict[str, Any]:
        alignment = self.alignment
        return {
            **super().privileged(),
            "session_id": self.session.session_id,
            "group_id": self.session.group_id,
            "reference_intents": list(self.session.intents),
            "deviations": list(alignment.deviations) if alignment is not None else [],
            "deviation_suffix": list(self.suffix),
            "dtw_cost": alignment.cost if alignment is not None else None,
        }

    def evaluation_options(self, episode: int, seed: int) -> dict[str, Any]:
        """Every reference session in turn: episode ``i`` starts from session ``i % len(sessions)``."""
        return {"session_id": self.references.sessions[episode % len(self.references)].session_id}

    def public_targets(self) -> str | None:
        """The shipped reference sessions are public, and a start (persona, merchant, opening) names
        its session: a sealed run on them is sealed in its seeds only."""
        if self.config.sessions_file is not None:
            return None
        return (
            "the reference sessions are the public sample shipped with dialogue_gym, and what the user is handed at the start "
            "(persona, merchant, opening) identifies its session, whose intents the user is scored against: sealing hides seeds, "
            "not public data. Publish sealed TRACER / DM-Bench numbers on a private reference file (env kwarg sessions_file)."
        )

    def evaluation_strata(self) -> tuple[dict[str, Any], ...]:
        """One stratum per reference session, faceted by its group and its real outcome."""
        return tuple({"group": session.group_id, "outcome": session.outcome} for session in self.references.sessions)

    def episode_profile(self) -> dict[str, Any]:
        return thawed(self.profile)

    def start_options(self, profile: dict[str, Any]) -> dict[str, Any]:
        """A reference session starts the episode, so its id is the whole start."""
        return {"session_id": profile["session_id"]}

    def trajectory(self) -> Trajectory:
        session = self.session
        meta: dict[str, Any] = {
            "reference": {
                "session_id": session.session_id,
                "group_id": session.group_id,
                "intents": list(session.intents),
                "outcome": session.outcome,
                "replies": [turn.text for turn in session.user_turns],
                "synthetic": session.synthetic,
            }
        }
        if self.alignment is not None:
            meta["alignment"] = {**self.alignment.to_dict(), "rho": self.config.rho, "suffix": list(self.suffix)}
        if self.scores is not None:
            meta["tracer_reward"] = self.scores.to_dict()
        if self.judged is not None:
            meta["response_quality"] = dict(self.judged)
        if self.failure is not None:
            meta["failure"] = self.failure
        return Trajectory(
            scenario=self.id,
            seed=self.seed,
            profile=self.profile,
            turns=list(self.turns),
            outcome=self.outcome,
            rewards=dict(self.returns),
            reward_terms=dict(self.reward_terms),
            meta=meta,
        )


class DMBenchGame(TracerGame):
    """The same rules under DM-Bench's id and defaults (the assistant is the learner)."""

    id = "DMBench-Assistant-v0"
    config_class = DMBenchConfig

