"""The turn-based game every scenario implements once; all views (AEC, parallel, single-agent,
vector) drive a :class:`Game` and never re-implement its rules."""

from __future__ import annotations

import difflib
import math
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, Sequence

import numpy as np
from gymnasium import logger
from gymnasium.spaces import Space

from dialogue_gym.errors import (
    ConfigError,
    EpisodeStateError,
    InvalidAction,
    ScenarioError,
)
from dialogue_gym.types import Trajectory

INVALID_ACTION_MODES = ("penalize", "end", "raise")
_CAUSE_CHARS = 300
"""How much of an exception's message an EpisodeStateError quotes when naming what broke an episode."""


def check_seed(seed: Any) -> int | None:
    """``seed`` as an int, or ``None``; anything but a non-negative int (or ``None``) is a ConfigError."""
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
        raise ConfigError(f"seed must be a non-negative int or None, got {type(seed).__name__}: {seed!r:.80}.")
    return int(seed) if seed is not None else None


PRIVILEGED_INFO_KEY = "privileged"
"""The ``info`` key under which a policy that declares ``privileged = True`` gets :meth:`Game.privileged`."""


def is_privileged(policy: Any) -> bool:
    """Whether ``policy`` declares it needs the privileged channel (``privileged = True``)."""
    return getattr(policy, "privileged", False) is True


@dataclass
class StepResult:
    """What one move did: reward increments per role, whether the episode ended, the mover's info."""

    role: str
    rewards: dict[str, float]
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


def build_config(config_class: type, kwargs: dict[str, Any], role_keywords: Sequence[str] = ()) -> Any:
    """Instantiate a config dataclass, naming unknown keywords, the closest accepted one, and the
    accepted ones: the config's fields and the ``role_keywords`` the view took before (``learner``,
    ``user``, ``user_backend``, ...)."""
    accepted = [*role_keywords, *(f.name for f in fields(config_class))]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        close = {name: difflib.get_close_matches(name, accepted, n=1) for name in unknown}
        hints = [f"{match[0]!r} for {name!r}" for name, match in close.items() if match]
        hint = f" Did you mean {', '.join(hints)}?" if hints else ""
        raise ConfigError(
            f"Unknown keyword(s) {unknown} for {config_class.__name__}.{hint} Accepted keywords: {accepted}."
        )
    return config_class(**kwargs)


def check_invalid_action_mode(mode: str) -> str:
    if mode not in INVALID_ACTION_MODES:
        raise ConfigError(
            f"invalid_action={mode!r} is not supported; use one of {', '.join(map(repr, INVALID_ACTION_MODES))}."
        )
    return mode


class StartSource(Protocol):
    """Where episodes start when ``reset`` gets no options (e.g. a curriculum), and who hears how they end."""

    def next_options(self) -> dict[str, Any]: ...

    def episode_finished(self, trajectory: Trajectory) -> None: ...


class Game(ABC):
    """A turn-based dialogue game: roles take turns emitting raw text until the episode ends.

    What it hands out (:meth:`observe`, :meth:`info`, :meth:`role_profile`, :meth:`episode_profile`,
    :meth:`privileged`) belongs to the caller: copies that share nothing mutable with the game or its
    cached data (:mod:`dialogue_gym.readonly`), so a policy that edits what it is handed changes
    neither this episode nor any later one."""

    id: str
    roles: tuple[str, ...]
    config: Any
    view_id: str | None = None
    """The registered id of the view that plays this game where it is not ``id`` (``RLADA-Customer-v0``
    plays ``RLADA-Banking-v0``'s game): messages to the user name it; trajectories keep ``id``."""
    reset_options: tuple[str, ...] = ()
    """The ``reset(options=...)`` keys the game reads; others are ignored with a warning (PettingZoo's
    api_test passes arbitrary options)."""
    public_reset_options: tuple[str, ...] = ()
    """The keys of :attr:`reset_options` that neither choose nor reveal the episode's hidden start (a
    profile, a reference session, an intent do): the only options a sealed server (``serve --sealed``)
    passes on. None of the registered games has one yet."""

    def __init__(self) -> None:
        self._rng: random.Random | None = None
        self.seed: int | None = None
        self._started = False
        self._interruption: str | None = None
        """Why no episode is running although ``reset`` was called: a ``reset`` or ``step`` that raised."""
        self.start_source: StartSource | None = None
        self._role: str | None = None

    @property
    def rng(self) -> random.Random:
        """The episode's random stream, seeded with :attr:`seed` when a game first draws from it in the
        episode: the same stream as seeding it at ``reset``, but an episode whose start comes whole from
        its options (every evaluation start of SEAD, TRACER, DM-Bench and RL-ADA) seeds none. Seeding a
        ``random.Random`` was 3.7% of a scripted SEAD episode's time (py-spy), three seedings an episode,
        this one never drawn from. Before the first ``reset``, seeded from the OS like ``random.Random()``."""
        if self._rng is None:
            self._rng = random.Random(self.seed)
        return self._rng

    # -- lifecycle -----------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new episode. If this raises (a bad seed or options, a scenario error), no episode is
        running afterwards: ``step`` raises :class:`EpisodeStateError` until a ``reset`` succeeds, so a
        failed ``reset`` never leaves the previous episode running under the new seed."""
        self._started = False
        try:
            self._start_episode(seed, options)
        except BaseException as exc:
            self.interrupt("reset", exc)
            raise
        self._interruption = None
        self._started = True

    def _start_episode(self, seed: Any, options: Any) -> None:
        seed = check_seed(seed)
        if options is not None and not isinstance(options, dict):
            raise ConfigError(f"options must be a dict or None, got {type(options).__name__}: {options!r:.80}.")
        self.seed = seed if seed is not None else random.SystemRandom().getrandbits(62)
        self._rng = None
        if not options and self.start_source is not None:
            options = self.start_source.next_options()
        unknown = sorted(set(options or {}) - set(self.reset_options))
        if unknown:
            logger.warn(f"Ignoring unknown reset options {unknown}; {self.view_id or self.id} reads {list(self.reset_options)}.")
        self._reset(options or {})

    def check_started(self, method: str) -> None:
        """Raise :class:`EpisodeStateError` naming the fix unless an episode was started (it may have ended)."""
        if self._started:
            return
        if self._interruption is None:
            raise EpisodeStateError(f"{method}() called before reset(); call reset(seed=...) first.")
        raise EpisodeStateError(
            f"{method}() called but {self._interruption}, so no episode is running; call reset() to start a new one."
        )

    def require_turn(self, method: str) -> str:
        """The role to move; :class:`EpisodeStateError` naming the fix when no episode is running."""
        self.check_started(method)
        role = self.current_role
        if role is None:
            raise EpisodeStateError(f"{method}() called after the episode ended; call reset() to start a new one.")
        return role

    def step(self, action: Any, *, token_ids: list[int] | None = None, logprobs: list[float] | None = None) -> StepResult:
        """Apply ``action`` (raw text) for :attr:`current_role`.

        A non-``str`` action raises :class:`InvalidAction` before anything changes. Any exception from
        the move itself (``invalid_action="raise"``, a scenario error) ends the episode: the move may be
        half applied, so ``step`` raises :class:`EpisodeStateError` until the next ``reset``."""
        role = self.require_turn("step")
        if not isinstance(action, str):
            raise InvalidAction(
                f"The {role!r} role's action must be a str (its raw text output), got "
                f"{type(action).__name__}: {action!r:.80}. Decode model output to text before calling step()."
            )
        result = self._guarded("step", self._step, role, action, token_ids, logprobs)
        if self.start_source is not None and self.current_role is None:
            self.start_source.episode_finished(self.trajectory())
        return result

    def abort(self, cause: str) -> StepResult:
        """End the running episode because a role could not move (e.g. its backend failed after its
        bounded retries): outcome :attr:`~dialogue_gym.types.Outcome.BACKEND_FAILURE`, no rewards, and
        ``cause`` kept in the trajectory's ``meta["failure"]``. Returns a truncation :class:`StepResult`
        for the role that could not move."""
        if not isinstance(cause, str) or not cause.strip():
            raise ConfigError(f"abort(cause) needs a non-empty str naming what failed, got {cause!r}.")
        role = self.require_turn("abort")
        self._guarded("abort", self._abort, role, cause)
        return StepResult(role, {}, terminated=False, truncated=True, info=self.info(role))

    def _guarded(self, method: str, move: Any, *args: Any) -> Any:
        """``move(*args)``; if it raises, the episode is over (see :meth:`step`)."""
        try:
            return move(*args)
        except BaseException as exc:
            self.interrupt(method, exc)
            raise

    def interrupt(self, method: str, exc: BaseException) -> None:
        """End the running episode because ``method`` raised ``exc`` (here or in a view driving this
        game, e.g. a counterpart policy that crashed): until the next successful ``reset``, moves raise
        :class:`EpisodeStateError` naming what broke it."""
        message = str(exc)
        if len(message) > _CAUSE_CHARS:
            message = message[:_CAUSE_CHARS] + "..."
        self._started = False
        self._interruption = f"the last {method}() raised {type(exc).__name__}: {message}"

    # -- what scenarios implement --------------------------------------------------
    @abstractmethod
    def _reset(self, options: dict[str, Any]) -> None: ...

    @abstractmethod
    def _step(self, role: str, text: str, token_ids: list[int] | None, logprobs: list[float] | None) -> StepResult: ...

    def _abort(self, role: str, cause: str) -> None:
        """End the episode with outcome ``BACKEND_FAILURE`` and record ``cause`` (see :meth:`abort`)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement _abort(role, cause), so a backend failure cannot end "
            "its episodes; implement it (set the outcome to Outcome.BACKEND_FAILURE, end the episode, and put "
            "the cause in the trajectory's meta['failure'])."
        )

    @property
    def current_role(self) -> str | None:
        """The role to move next, or ``None`` once the episode is over or none is running (scenarios set
        ``_role``)."""
        return self._role if self._started else None

    @abstractmethod
    def observe(self, role: str) -> dict[str, Any]: ...

    @abstractmethod
    def info(self, role: str) -> dict[str, Any]: ...

    @abstractmethod
    def observation_space(self, role: str) -> Space: ...

    @abstractmethod
    def action_space(self, role: str) -> Space: ...

    @abstractmethod
    def trajectory(self) -> Trajectory: ...

    @abstractmethod
    def episode_profile(self) -> dict[str, Any]:
        """JSON form of how this episode started (``reset(options=start_options(profile))`` replays it;
        the trajectory keeps it). Privileged: a policy's ``start`` receives :meth:`role_profile` instead."""

    def start_options(self, profile: dict[str, Any]) -> dict[str, Any]:
        """The ``reset`` options that start the episode :meth:`episode_profile` returned ``profile`` for
        (with the same seed, the same episode): how a recorded trajectory is replayed."""
        return {"profile": profile}

    def role_profile(self, role: str) -> dict[str, Any]:
        """What ``role`` knows of how the episode started: the part of :meth:`episode_profile` a person
        in that role would know (its own persona and goal, say), which its policy's ``start`` receives.
        Nothing by default; each scenario names what each role knows."""
        return {}

    def privileged(self) -> dict[str, Any]:
        """The privileged channel: what no role can know while playing (hidden state, the reference
        session, target labels, reference-derived numbers) plus the whole :meth:`episode_profile`.

        Only policies that declare ``privileged = True`` (oracles, analysis) receive it: their
        ``start`` gets the whole profile and every ``info`` they get carries this dict under
        :data:`PRIVILEGED_INFO_KEY`. For analysis, read ``env.unwrapped.game.privileged()``; metrics
        read the trajectory after the episode.
        """
        return {"profile": self.episode_profile()}

    def spawn(self) -> Game:
        """A fresh game with the same configuration (for batches of parallel episodes)."""
        return type(self)(self.config)

    # -- reward and invalid-output bookkeeping shared by the scenarios -------------------
    def begin_accounting(self) -> None:
        """Start an episode's returns, reward terms and last-problem records (call in ``_reset``)."""
        self.returns = {role: 0.0 for role in self.roles}
        self.reward_terms: dict[str, float] = {}
        self._last_problem: dict[str, str | None] = {role: None for role in self.roles}

    def add_reward(self, rewards: dict[str, float], role: str, term: str, value: float) -> None:
        """Credit ``value`` to ``role`` in this step's ``rewards``, its return and its ``<role>/<term>``.

        A non-finite ``value`` raises :class:`ScenarioError` before anything is credited: trajectories
        must stay strict JSON and returns finite, so a NaN or infinite reward is a bug to fix where it
        was computed (or a non-finite reward setting), never something to record."""
        if not math.isfinite(value):
            raise ScenarioError(
                f"{type(self).__name__} computed a non-finite reward {value!r} for the term {role}/{term}; rewards "
                "must be finite numbers. Check the env's reward settings (weights, bonuses, penalties) for NaN or "
                "infinity; if they are finite, the scenario's reward computation has a bug."
            )
        rewards[role] = rewards.get(role, 0.0) + value
        self.returns[role] += value
        key = f"{role}/{term}"
        self.reward_terms[key] = self.reward_terms.get(key, 0.0) + value

    def flag_invalid(self, role: str, problem: str | None, rewards: dict[str, float]) -> bool:
        """Apply ``config.invalid_action`` to a malformed output; True when the episode must end."""
        self._last_problem[role] = problem
        if problem is None:
            return False
        if self.config.invalid_action == "raise":
            raise InvalidAction(
                f"The {role!r} output was malformed: {problem}. "
                "Fix the output format, or create the env with invalid_action='penalize' or 'end'. "
                "The episode cannot continue after this error; call reset()."
            )
        if self.config.invalid_action_penalty:
            self.add_reward(rewards, role, "invalid_action", -float(self.config.invalid_action_penalty))
        return self.config.invalid_action == "end"

    def evaluation_options(self, episode: int, seed: int) -> dict[str, Any] | None:
        """Reset options of the ``episode``-th start of a fixed evaluation set (``None``: sample from the seed)."""
        return None

    def public_targets(self) -> str | None:
        """Why sealing (:mod:`dialogue_gym.sealing`) cannot hide what this game scores a role against,
        when that is public data a policy can identify from what it is handed (a reference set shipped
        with the library, say), or None. Sealed runs print it and record it in their provenance."""
        return None

    def evaluation_strata(self) -> tuple[dict[str, Any], ...]:
        """The strata of the fixed evaluation set, one per start of a cycle: start ``episode`` of
        :meth:`evaluation_options` plays stratum ``episode % len(strata)``, described by its facets (e.g.
        an initial state's three dimensions). :mod:`dialogue_gym.evaluation` plays the starts in a
        seeded order whose every prefix is balanced over the strata and, as far as it can be, over each
        facet. Empty (no fixed set): the starts are played in their own order."""
        return ()

    @property
    def started(self) -> bool:
        """Whether an episode was started and no ``reset`` or move has raised since (it may have ended)."""
        return self._started

    @property
    def done(self) -> bool:
        return self._started and self.current_role is None

    def check_role(self, role: str) -> str:
        if role not in self.roles:
            raise ConfigError(f"Unknown role {role!r}; this game's roles are {list(self.roles)}.")
        return role
