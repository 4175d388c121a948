"""Every registered id as an OpenEnv environment server (``pip install 'dialogue_gym[openenv]'``).

``dialogue-gym serve SEAD-Outbound-v0 --port 8000`` (or :func:`serve`) runs ``openenv-core``'s own
server: each WebSocket client (OpenEnv's ``EnvClient``, e.g. :class:`DialogueGymClient` or
``GenericEnvClient``) gets its own session, a single-agent env of the id built from ``--env-kwargs``,
so concurrent episodes never share a game or a counterpart's memory; sessions idle longer than
``idle_timeout`` seconds are closed. This is also how environments run as services next to a trainer.

A session is the Gymnasium single-agent view, so ``reset(seed=s)`` then the same learner moves give
the transcript ``gym.make(ENV_ID, **env_kwargs)`` gives in-process:

- ``reset(seed=None, options=None)`` -> :class:`DialogueObservation`: the learner's ``messages``,
  the observation's other keys (``features``), the learner's ``info`` and what it knows of the start
  (``profile``, its role's part of the episode profile).
- ``step(DialogueAction(text=...))`` -> the same, with the step's ``reward`` (the learner's) and ``done``.
- ``state`` -> :class:`DialogueState`: id, learner, seed, turn count, outcome and return; once the
  episode is over, its whole ``trajectory`` (privileged data included, as metrics read it after an
  episode), never while it runs.

Malformed model output is part of the episode as in-process (``info["invalid_action"]``); a call out of
turn (``step`` before ``reset`` or after the end) is answered with the env's error message.
"""

from __future__ import annotations

import functools
import json
import uuid
from typing import Any

from dialogue_gym.errors import ConfigError, DependencyNotInstalled, EpisodeStateError

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
    from pydantic import Field
except ImportError as exc:
    raise DependencyNotInstalled("openenv-core", "openenv", "Serving environments with OpenEnv") from exc

import dialogue_gym
from dialogue_gym.integrations.common import check_kwargs, json_kwargs, learner_of, make_learner_env
from envs_registry import get


def plain(value: Any) -> Any:
    """``value`` as JSON data: NumPy scalars and arrays as numbers and lists, tuples as lists."""

    def convert(item: Any) -> Any:
        for method in ("tolist", "item"):
            if hasattr(item, method):
                return getattr(item, method)()
        raise TypeError(f"{type(item).__name__} is not JSON data")

    return json.loads(json.dumps(value, default=convert))


class DialogueAction(Action):
    """The learner's turn: its raw text, exactly what a model emitted."""

    text: str = Field(description="The learner's raw output for this turn, in the scenario's output format")


class DialogueObservation(Observation):
    """What the learner sees after ``reset`` or ``step`` (nothing privileged)."""

    messages: list[dict[str, str]] = Field(default_factory=list, description="The learner's chat so far")
    features: dict[str, Any] = Field(default_factory=dict, description="The observation's other keys (turn counter, ...)")
    info: dict[str, Any] = Field(default_factory=dict, description="The learner's info (invalid_action, outcome, ...)")
    profile: dict[str, Any] = Field(default_factory=dict, description="What the learner knows of how the episode started")


class DialogueState(State):
    env_id: str = Field(description="The environment id")
    learner: str = Field(description="The role the client plays")
    seed: int | None = Field(default=None, description="The seed of the episode played")
    done: bool = Field(default=False, description="Whether the episode is over")
    outcome: str | None = Field(default=None, description="How the episode ended, once it has")
    learner_return: float = Field(default=0.0, description="The learner's reward so far")
    trajectory: dict[str, Any] | None = Field(default=None, description="The whole trajectory, once the episode is over")


class DialogueGymEnvironment(Environment):
    """One session: a single-agent env of ``env_id`` with the ``learner`` role played by the client."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, learner: str | None = None, env_kwargs: dict[str, Any] | None = None):
        super().__init__()
        self.env_id = env_id
        self.learner = learner_of(env_id, learner)
        self._env = make_learner_env(env_id, self.learner, check_kwargs(env_kwargs))
        self._episode_id: str | None = None
        self._steps = 0

    def _live_env(self, method: str):
        if self._env is None:
            raise EpisodeStateError(f"{method}() on a closed {self.env_id} session (it was idle too long or closed); open a new session.")
        return self._env

    def _observation(self, observation: dict[str, Any], info: dict[str, Any], reward: float | None, done: bool) -> DialogueObservation:
        return DialogueObservation(
            messages=[dict(m) for m in observation["messages"]],
            features=plain({key: value for key, value in observation.items() if key != "messages"}),
            info=plain(info),
            profile=plain(self._env.game.role_profile(self.learner)),
            reward=reward,
            done=done,
        )

    def reset(self, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None, **unknown: Any) -> DialogueObservation:
        if unknown:
            raise ConfigError(f"reset() got unknown argument(s) {sorted(unknown)}; it takes seed, episode_id and options.")
        environment = self._live_env("reset")
        observation, info = environment.reset(seed=seed, options=options)
        self._episode_id = episode_id or str(uuid.uuid4())
        self._steps = 0
        return self._observation(observation, info, None, False)

    def step(self, action: DialogueAction, timeout_s: float | None = None, **kwargs: Any) -> DialogueObservation:
        environment = self._live_env("step")
        observation, reward, terminated, truncated, info = environment.step(action.text)
        self._steps += 1
        return self._observation(observation, info, reward, terminated or truncated)

    @property
    def state(self) -> DialogueState:
        environment = self._live_env("state")
        game = environment.game
        state = DialogueState(env_id=self.env_id, learner=self.learner, episode_id=self._episode_id, step_count=self._steps)
        if game.started:
            trajectory = environment.trajectory()
            state.seed = game.seed
            state.done = game.done
            state.learner_return = float(game.returns[self.learner])
            if game.done:
                state.outcome = trajectory.outcome.value
                state.trajectory = json.loads(trajectory.to_json())
        return state

    def get_metadata(self) -> EnvironmentMetadata:
        entry = get(self.env_id)
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"dialogue_gym {self.env_id}: the client plays the {self.learner!r} role (roles: {', '.join(entry.roles)}).",
            version=dialogue_gym.__version__,
        )

    def close(self) -> None:
        """Drop the session's env: later calls on this session raise, naming the fix."""
        if self._env is not None:
            self._env.close()
        self._env = None


def make_app(
    env_id: str,
    *,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int = 64,
    idle_timeout: float | None = 300.0,
):
    """The OpenEnv FastAPI app serving ``env_id`` (see the module docstring); the id, learner and
    env kwargs are checked by building one env first, so a mistake fails here, not in a session."""
    env_kwargs = json_kwargs(env_kwargs)
    DialogueGymEnvironment(env_id, learner, env_kwargs).close()
    factory = functools.partial(DialogueGymEnvironment, env_id=env_id, learner=learner, env_kwargs=env_kwargs)
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout)
    return create_app(factory, DialogueAction, DialogueObservation, env_name=env_id, concurrency_config=concurrency)


def serve(
    env_id: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int = 64,
    idle_timeout: float | None = 300.0,
) -> None:
    """Serve ``env_id`` over OpenEnv's HTTP/WebSocket protocol until interrupted."""
    import uvicorn

    app = make_app(env_id, learner=learner, env_kwargs=env_kwargs, max_sessions=max_sessions, idle_timeout=idle_timeout)
    uvicorn.run(app, host=host, port=port, log_level="warning")


class DialogueGymClient(EnvClient[DialogueAction, DialogueObservation, DialogueState]):
    """OpenEnv client of a ``dialogue-gym serve`` server: typed observations and state.

    ``with DialogueGymClient(base_url="http://127.0.0.1:8000").sync() as env: env.reset(seed=0); env.step(DialogueAction(text=...))``
    """

    def _step_payload(self, action: DialogueAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[DialogueObservation]:
        observation = DialogueObservation(**payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> DialogueState:
        return DialogueState(**payload)
