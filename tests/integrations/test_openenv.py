"""``dialogue-gym serve``: every id as an OpenEnv server, driven by OpenEnv's own clients."""

import asyncio
import contextlib
import importlib
import json
import sys
import time

import gymnasium as gym
import pytest

pytest.importorskip("openenv")
uvicorn = pytest.importorskip("uvicorn")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from server_thread import in_thread  # noqa: E402

from dialogue_gym.cli import main  # noqa: E402
from dialogue_gym.errors import ConfigError, DependencyNotInstalled  # noqa: E402
from dialogue_gym.integrations.openenv import DialogueAction, DialogueGymClient  # noqa: E402
from dialogue_gym.integrations.openenv_server import make_app  # noqa: E402
from envs_registry import REGISTRY  # noqa: E402


@contextlib.contextmanager
def running(app):
    """``app`` served by uvicorn on a free local port, in a thread; yields its base URL."""
    with in_thread(uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))) as port:
        yield f"http://127.0.0.1:{port}"


def in_process(env_id, agent, seed, env_kwargs=None):
    """The trajectory of ``agent`` in the learner role of ``gym.make(env_id)`` reset with ``seed``."""
    environment = gym.make(env_id, **(env_kwargs or {}))
    learner = environment.unwrapped.learner
    policy = environment.unwrapped.make_role_policy(learner, agent)
    observation, info = environment.reset(seed=seed)
    memory = policy.start(environment.unwrapped.game.role_profile(learner), seed)
    done = False
    while not done:
        observation, _, terminated, truncated, info = environment.step(policy.act(observation, info, memory))
        done = terminated or truncated
    return json.loads(environment.unwrapped.trajectory().to_json())


async def served_generic(url, env_id, agent, seed):
    """The same, played over the wire with OpenEnv's GenericEnvClient (plain dicts)."""
    policy = gym.make(env_id).unwrapped.make_role_policy(REGISTRY_BY_ID[env_id].default_learner, agent)
    async with GenericEnvClient(base_url=url) as environment:
        result = await environment.reset(seed=seed)
        memory = policy.start(result.observation["profile"], seed)
        rewards = []
        while not result.done:
            seen = result.observation
            result = await environment.step({"text": policy.act({"messages": seen["messages"], **seen["features"]}, seen["info"], memory)})
            rewards.append(result.reward)
        state = await environment.state()
    assert sum(rewards) == pytest.approx(state["learner_return"])
    return state["trajectory"]


REGISTRY_BY_ID = {entry.id: entry for entry in REGISTRY}


def test_fifty_concurrent_episodes_equal_the_in_process_ones():
    with running(make_app("SEAD-Outbound-v0", max_sessions=64)) as url:

        async def all_episodes():
            return await asyncio.gather(*(served_generic(url, "SEAD-Outbound-v0", "adaptive", seed) for seed in range(50)))

        served = asyncio.run(all_episodes())
    assert served == [in_process("SEAD-Outbound-v0", "adaptive", seed) for seed in range(50)]
    assert len({json.dumps(t["turns"]) for t in served}) > 40  # the sessions played their own episodes


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda e: e.id)
def test_every_id_is_served_with_its_default_learner(entry):
    agent = entry.agents[0]
    with running(make_app(entry.id)) as url:

        async def episodes():
            return await asyncio.gather(*(served_generic(url, entry.id, agent, seed) for seed in range(4)))

        served = asyncio.run(episodes())
    assert served == [in_process(entry.id, agent, seed) for seed in range(4)]


def test_typed_client_state_and_errors():
    with running(make_app("RLADA-Banking-v0", env_kwargs={"max_agent_turns": 2})) as url:
        with DialogueGymClient(base_url=url).sync() as environment:
            with pytest.raises(RuntimeError, match=r"step\(\) called before reset\(\)"):
                environment.step(DialogueAction(text="hello"))
            with pytest.raises(RuntimeError, match=r"reset\(\) got unknown argument\(s\) \['sed'\]"):
                environment.reset(sed=7)
            result = environment.reset(seed=7)
            assert result.observation.messages[0]["role"] == "system" and result.observation.profile == {}  # the agent knows nothing of the start
            assert "intent" not in result.observation.info
            state = environment.state()
            assert state.env_id == "RLADA-Banking-v0" and state.learner == "agent" and state.seed == 7
            assert state.trajectory is None and not state.done  # nothing privileged while the episode runs
            result = environment.step(DialogueAction(text="not json at all"))
            assert result.observation.info["invalid_action"]  # malformed output is part of the episode
            while not result.done:
                result = environment.step(DialogueAction(text="still not json"))
            state = environment.state()
            assert state.done and state.outcome == state.trajectory["outcome"] and state.trajectory["profile"]["intent"]
            with pytest.raises(RuntimeError, match=r"step\(\) called after the episode ended"):
                environment.step(DialogueAction(text="hello?"))


def test_sessions_beyond_the_limit_are_refused():
    with running(make_app("SEAD-Outbound-v0", max_sessions=2)) as url:
        first, second = DialogueGymClient(base_url=url).sync(), DialogueGymClient(base_url=url).sync()
        with first, second:
            first.reset(seed=0)
            second.reset(seed=1)

            async def third_session():
                from websockets.asyncio.client import connect

                async with connect(url.replace("http", "ws") + "/ws") as socket:
                    return json.loads(await socket.recv())

            refused = asyncio.run(third_session())
            assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
            assert first.step(DialogueAction(text="Hello, is this the owner?")).observation.messages  # the two sessions go on


def test_idle_sessions_are_closed():
    """OpenEnv's reaper looks every max(timeout / 4, 5 s); a session idle past the timeout is closed."""
    with running(make_app("SEAD-Outbound-v0", idle_timeout=1.0)) as url:
        with DialogueGymClient(base_url=url).sync() as environment:
            environment.reset(seed=0)
            time.sleep(6.5)
            with pytest.raises(RuntimeError, match="closed SEAD-Outbound-v0 session.*open a new session"):
                environment.step(DialogueAction(text="Hello?"))


def test_bad_ids_and_kwargs_fail_before_serving(capsys, monkeypatch):
    with pytest.raises(ConfigError, match="Unknown environment id"):
        make_app("SEAD-Inbound-v9")
    with pytest.raises(ConfigError, match="env_kwargs must be JSON data"):
        make_app("SEAD-Outbound-v0", env_kwargs={"user": object()})
    assert main(["serve", "SEAD-Outbound-v0", "--env-kwargs", '{"max_agent_turns": 0}']) == 2
    assert "max_agent_turns must be a positive int" in capsys.readouterr().err
    served = {}
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: served.update(app=self.config.app, sockets=sockets))
    assert main(["serve", "TRACER-UserSim-v0", "--port", "0"]) == 0
    (sock,) = served["sockets"]
    host, port = sock.getsockname()
    sock.close()
    assert host == "127.0.0.1" and served["app"] is not None
    assert f"TRACER-UserSim-v0 at http://127.0.0.1:{port} " in capsys.readouterr().err


def test_missing_openenv_names_the_extra_for_the_server_and_the_client_needs_only_websockets(monkeypatch):
    for name in {"openenv", "openenv.core", *(name for name in sys.modules if name.split(".")[0] == "openenv")}:
        monkeypatch.setitem(sys.modules, name, None)
    for module in ("dialogue_gym.integrations.openenv_server", "dialogue_gym.integrations.openenv"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(DependencyNotInstalled, match=r"Serving environments with OpenEnv needs .*pip install 'dialogue_gym\[openenv\]'"):
        importlib.import_module("dialogue_gym.integrations.openenv_server")
    client = importlib.import_module("dialogue_gym.integrations.openenv")  # openenv-core is not needed to play
    assert client.DialogueGymClient("http://127.0.0.1:8000")._ws_url == "ws://127.0.0.1:8000/ws"
    monkeypatch.delitem(sys.modules, "dialogue_gym.integrations.openenv")
    for name in [name for name in sys.modules if name.split(".")[0] == "websockets"] + ["websockets"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(DependencyNotInstalled, match=r"The OpenEnv client needs the optional package 'websockets'.*pip install 'dialogue_gym\[openenv\]'"):
        importlib.import_module("dialogue_gym.integrations.openenv")


def test_the_client_speaks_to_openenv_urls_like_openenvs_own():
    from dialogue_gym.integrations.openenv import ws_url

    assert ws_url("http://host:8000/") == "ws://host:8000/ws" and ws_url("https://host/env") == "wss://host/env/ws"
    assert ws_url("host:8000") == "ws://host:8000/ws" and ws_url("wss://host") == "wss://host/ws"


def test_server_names_imported_from_the_client_module_load_the_server():
    from dialogue_gym.integrations import openenv, openenv_server

    assert openenv.make_app is openenv_server.make_app and openenv.serve is openenv_server.serve
    with pytest.raises(AttributeError):
        openenv.no_such_name


def test_the_client_raises_server_errors_with_their_code_and_closes_a_session_left_unanswered():
    from dialogue_gym.integrations.openenv import ServerError

    with running(make_app("SEAD-Outbound-v0")) as url:
        with DialogueGymClient(base_url=url).sync() as environment:
            with pytest.raises(ServerError) as refused:
                environment.step("Hello?")  # the move's text alone is an action too
            assert refused.value.code == "EXECUTION_ERROR" and refused.value.message.startswith("step() called before reset()")
            assert environment.reset(seed=0).observation.messages
        impatient = DialogueGymClient(base_url=url, message_timeout_s=1e-6).sync()
        with pytest.raises(TimeoutError, match=r"no answer to reset\(\) from ws://127\.0\.0\.1:\d+/ws within 1e-06 s.*the session was closed"):
            impatient.reset(seed=0)
        assert impatient._ws is None
        with pytest.raises(TypeError, match="takes a DialogueAction"):
            DialogueGymClient(base_url=url).sync().step(3)

        async def late():
            async with DialogueGymClient(base_url=url, message_timeout_s=1e-6) as environment:
                await environment.reset(seed=0)

        with pytest.raises(TimeoutError, match="the session was closed"):
            asyncio.run(late())
    with pytest.raises(TypeError, match="async: use 'async with client:'"):
        with DialogueGymClient(base_url="http://127.0.0.1:1"):
            pass
