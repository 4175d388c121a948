"""Policies played in a process of their own (``evaluate(..., isolate=True)``, ``dialogue-gym eval --isolate``).

In-process, a policy shares the interpreter with the live game: it can walk the stack or the garbage
collector to the game object and read (or change) its hidden state, or patch a module the game uses.
An isolated policy lives in a fresh interpreter started with ``spawn`` (never ``fork``, which would
hand it a copy of the evaluator's memory, a sealed run's secret included). It is built there from its
name (or unpickled from a copy of the object), is started and asked to act over a pipe, and is handed
exactly what it would be handed in-process (:class:`~dialogue_gym.game.Game`'s copies), so the same
policy plays the same episodes either way; its memories stay in its process.
"""

from __future__ import annotations

import multiprocessing
import pickle
from typing import Any, Sequence

from dialogue_gym.errors import BackendError, ConfigError, DialogueGymError

CLOSE_SECONDS = 5.0
"""How long :meth:`IsolatedPolicy.close` waits for the policy's process to exit before ending it."""


def _serve(connection: Any, env_id: str, learner: str, env_kwargs: dict[str, Any], agent: Any, agent_backend: Any) -> None:
    """The policy's process: build the policy, then answer ``start`` and ``act`` until ``close``."""
    from dialogue_gym.envs.driver import act_with_errors
    from dialogue_gym.evaluation import make_learner_env
    from dialogue_gym.game import is_privileged

    memories: dict[int, Any] = {}
    try:
        policy = make_learner_env(env_id, learner, env_kwargs).make_role_policy(learner, agent, agent_backend)
        connection.send(("ok", is_privileged(policy)))
    except Exception as exc:  # the parent re-raises it: building the policy is part of its call
        connection.send(("error", _sendable(exc)))
        return
    while True:
        request = connection.recv()
        try:
            if request[0] == "close":
                return
            if request[0] == "start":
                memories[len(memories)] = policy.start(*request[1:])
                connection.send(("ok", len(memories) - 1))
            else:
                observations, infos, handles = request[1:]
                connection.send(("ok", act_with_errors(policy, observations, infos, [memories[handle] for handle in handles])))
        except Exception as exc:  # a policy that raises in-process raises in the evaluator too
            connection.send(("error", _sendable(exc)))


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a :class:`DialogueGymError` with its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return DialogueGymError(f"{type(exc).__name__}: {exc}")


class IsolatedPolicy:
    """The ``learner`` role's policy ``agent`` (a name, as ``make_role_policy`` takes it, or a picklable
    policy object, of which the process gets a copy) played in a spawned process; a role policy here
    (``start``, ``act_batch``, ``act_batch_with_errors``) whose memories are handles into that process.
    :meth:`close` ends the process."""

    def __init__(self, env_id: str, learner: str, env_kwargs: dict[str, Any], agent: Any, agent_backend: Any = None):
        if not isinstance(agent, str):
            try:
                pickle.dumps(agent)
            except Exception as exc:
                raise ConfigError(
                    f"isolate=True plays the agent in a process of its own, so it must be a policy name or a picklable policy "
                    f"object; {type(agent).__name__} cannot be pickled ({exc}). Define its class at module level of an importable module."
                ) from exc
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, env_id, learner, env_kwargs, agent, agent_backend), daemon=True, name=f"dialogue-gym {learner} policy"
        )
        self._process.start()
        child.close()
        self.privileged = self._answer()
        """Whether the policy reads the privileged channel: the evaluator then sends it in ``info``."""

    def _answer(self) -> Any:
        try:
            status, value = self._connection.recv()
        except (EOFError, OSError) as exc:
            self._process.join(CLOSE_SECONDS)
            raise BackendError(
                f"the isolated policy's process ended (exit code {self._process.exitcode}); run without isolate to see its error."
            ) from exc
        if status == "error":
            raise value
        return value

    def _call(self, *request: Any) -> Any:
        try:
            self._connection.send(request)
        except (BrokenPipeError, OSError) as exc:
            raise BackendError(f"the isolated policy's process is gone (exit code {self._process.exitcode}); start a new evaluation.") from exc
        return self._answer()

    def start(self, profile: dict[str, Any], seed: int) -> int:
        return self._call("start", profile, seed)

    def act_batch_with_errors(
        self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[int]
    ) -> tuple[list[str], list[str | None]]:
        return self._call("act", list(observations), list(infos), list(memories))

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[int]) -> list[str]:
        texts, errors = self.act_batch_with_errors(observations, infos, memories)
        failed = [error for error in errors if error is not None]
        if failed:
            raise BackendError(f"the isolated policy failed {len(failed)} of {len(texts)} requests (first: {failed[0]}).")
        return texts

    def close(self) -> None:
        """End the policy's process (asked first, then terminated after :data:`CLOSE_SECONDS`)."""
        if self._process.is_alive():
            try:
                self._connection.send(("close",))
            except (BrokenPipeError, OSError):
                pass
            self._process.join(CLOSE_SECONDS)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join()
        self._connection.close()
