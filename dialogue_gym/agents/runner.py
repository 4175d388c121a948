"""The agent's side of the boundary: ``python -m dialogue_gym.agents.runner``, started by
:class:`~dialogue_gym.agents.process.AgentProcess` (never by hand).

It builds the policy named in the evaluator's ``hello`` (a registered name, ``module:Class`` with
keyword arguments, or a pickled policy object the evaluator sent) and answers ``act`` until
``close`` (:mod:`dialogue_gym.agents.protocol`). The protocol keeps private copies of the process's
stdin and stdout; file descriptors 0 and 1 are then pointed at ``/dev/null`` and the run's log, so
whatever the policy prints goes to the log and can never be mistaken for an answer. This side is the
agent's own code as far as the evaluator is concerned: it is a convenience for honest agents, and
the evaluator trusts nothing it sends.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import sys
import traceback
import warnings
from typing import Any, BinaryIO

from dialogue_gym.agents.process import agent_class
from dialogue_gym.agents.protocol import MAX_ERROR_CHARS, encode


def failure(exc: BaseException) -> str:
    """An exception as the message sent over the boundary; the traceback goes to the log."""
    traceback.print_exc(file=sys.stderr)
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."


def build(hello: dict[str, Any]) -> Any:
    """The policy the ``hello`` message names, built as the evaluator would build it in its own process."""
    from dialogue_gym.evaluation import make_learner_env

    sys.path[:0] = hello.get("path", [])
    agent = hello["agent"]
    if "pickle" in agent:  # sent by the evaluator, which is trusted on this side
        spec = pickle.loads(base64.b64decode(agent["pickle"]))
    elif "class" in agent:
        spec = agent_class(agent["class"])(**agent.get("kwargs", {}))
    else:
        spec = agent["name"]
    with warnings.catch_warnings():
        # Gymnasium's "out of date" warning for an id with a newer version was shown by the evaluator,
        # which chose the id; here it would only fill the agent's log.
        warnings.filterwarnings("ignore", message=r".*is out of date", category=DeprecationWarning)
        environment = make_learner_env(hello["env_id"], hello["learner"], hello["env_kwargs"])
    return environment.make_role_policy(hello["learner"], spec, hello.get("agent_backend"))


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    from dialogue_gym.envs.driver import act_with_errors
    from dialogue_gym.game import is_privileged

    def send(message: dict[str, Any]) -> None:
        try:
            answers.write(encode(message))
        except (TypeError, ValueError) as exc:  # a move that is not JSON text (an object, NaN): the call failed
            answers.write(encode({"id": message.get("id"), "error": failure(exc)}))
        answers.flush()

    try:
        policy = build(json.loads(requests.readline()))
    except Exception as exc:
        send({"type": "error", "message": failure(exc)})
        return
    send({"type": "ready", "privileged": is_privileged(policy)})
    memories: dict[int, Any] = {}
    failed: dict[int, str] = {}
    for line in requests:
        request = json.loads(line)
        kind = request["type"]
        if kind == "close":
            return
        if kind == "end":
            memories.pop(request["episode"], None)
            failed.pop(request["episode"], None)
        elif kind == "start":
            try:
                memories[request["episode"]] = policy.start(request["profile"], request["seed"])
            except Exception as exc:
                failed[request["episode"]] = f"start failed: {failure(exc)}"
        elif kind == "act":
            episodes = request["episodes"]
            playing = [index for index, episode in enumerate(episodes) if episode not in failed]
            texts: list[Any] = [None] * len(episodes)
            errors: list[Any] = [failed.get(episode) for episode in episodes]
            try:
                played, played_errors = act_with_errors(
                    policy,
                    [request["observations"][index] for index in playing],
                    [request["infos"][index] for index in playing],
                    [memories[episodes[index]] for index in playing],
                )
            except Exception as exc:
                send({"id": request["id"], "error": failure(exc)})
                continue
            for index, text, error in zip(playing, played, played_errors):
                texts[index], errors[index] = text, error
            send({"id": request["id"], "texts": texts, "errors": errors})


def main() -> None:
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    silent = os.open(os.devnull, os.O_RDONLY)
    os.dup2(silent, 0)
    os.dup2(2, 1)  # the policy's prints go to the log (stderr), never into the answers
    os.close(silent)
    sys.stdout = sys.stderr
    serve(requests, answers)


if __name__ == "__main__":
    main()
