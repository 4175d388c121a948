"""``dialogue-gym serve --sealed`` (issue 32, item 3; issue 42, item 5): every reset plays a fresh
episode keyed by the server's secret, the session and the reset (a client cannot replay an episode it
has studied), reset options that pick the hidden start are refused, ``state`` holds no hidden state;
the secret is revealed when the server stops and ``--unseal`` serves the same episodes again."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("openenv")

import uvicorn  # noqa: E402

from dialogue_gym.cli import main  # noqa: E402
from dialogue_gym.errors import ConfigError  # noqa: E402
from dialogue_gym.integrations.openenv_server import DialogueAction, DialogueGymEnvironment  # noqa: E402
from dialogue_gym.sealing import Seal  # noqa: E402

SECRET = "00112233445566778899aabbccddeeff"


def start(seal, seed=3):
    """The owner's profile a client playing SEAD's owner gets on ``reset(seed=...)`` (it depends on the episode seed)."""
    session = DialogueGymEnvironment("SEAD-Outbound-v0", "user", seal=seal)
    profile = session.reset(seed=seed).profile
    return session, profile


def test_a_sealed_session_keys_the_clients_seed_by_the_secret_the_session_and_the_reset():
    seal = Seal.parse(SECRET)
    session = DialogueGymEnvironment("SEAD-Outbound-v0", "user", seal=seal, session_numbers=iter([7]))
    session.reset(seed=3)
    assert session.state.seed == 3 and session._env.game.seed == seal.seed("session", 7, 0, 3)
    session.reset(seed=3)
    assert session._env.game.seed == seal.seed("session", 7, 1, 3)
    replay = DialogueGymEnvironment("SEAD-Outbound-v0", "user", seal=Seal.parse(SECRET), session_numbers=iter([7]))
    replay.reset(seed=3)
    assert replay._env.game.seed == seal.seed("session", 7, 0, 3)  # --unseal: the same sessions, resets and seeds play the same episodes
    open_session, _ = start(None)
    assert open_session.state.seed == open_session._env.game.seed == 3
    assert session._env.driver.seal == seal and open_session._env.driver.seal is None


def test_attack_a_client_cannot_replay_an_episode_it_has_studied():
    """The issue's attack: 20 resets with one seed gave one episode for the server's life. Now every
    reset, in one session or in new ones, is a fresh episode."""
    seal = Seal.parse(SECRET)
    numbers = iter(range(100))
    session = DialogueGymEnvironment("SEAD-Outbound-v0", "user", seal=seal, session_numbers=numbers)
    profiles = [json.dumps(session.reset(seed=3).profile, sort_keys=True) for _ in range(10)]
    seeds = {session._env.game.seed}
    for _ in range(10):
        other = DialogueGymEnvironment("SEAD-Outbound-v0", "user", seal=seal, session_numbers=numbers)
        profiles.append(json.dumps(other.reset(seed=3).profile, sort_keys=True))
        seeds.add(other._env.game.seed)
    assert len(seeds) == 11 and len(set(profiles)) > 1


@pytest.mark.parametrize(
    ("env_id", "learner", "options"),
    [
        ("SEAD-Outbound-v0", "agent", {"profile": {"state": [2, 2, 2]}}),
        ("TRACER-UserSim-v0", "user", {"session_id": "anything"}),
        ("RLADA-Banking-v0", "agent", {"intent": "card_arrival"}),
        ("RLADA-Banking-v0", "agent", {"concealment": 0}),
        ("RLADA-Customer-v0", "customer", {"scenario": "x"}),
        ("DMBench-Assistant-v0", "assistant", {"whatever": 1}),
    ],
)
def test_attack_reset_options_that_pick_the_hidden_start_are_refused_when_sealed(env_id, learner, options):
    session = DialogueGymEnvironment(env_id, learner, seal=Seal.parse(SECRET))
    with pytest.raises(ConfigError, match=r"refused by a sealed server: they would choose or reveal the episode's hidden start; .* takes no options when sealed"):
        session.reset(seed=1, options=options)
    session.reset(seed=1, options={})  # no options: a fresh episode as usual
    assert session.state.seed == 1


def test_attack_state_reveals_no_hidden_state_while_sealed():
    """The issue's attack: ``state()`` handed the hidden profile. Sealed, it never holds the trajectory."""
    for seal in (Seal.parse(SECRET), None):
        session = DialogueGymEnvironment("SEAD-Outbound-v0", "agent", seal=seal)
        session.reset(seed=0)
        while not session.state.done:
            session.step(DialogueAction(text="<response>Hello, how are you?</response>"))
        state = session.state.model_dump()
        if seal is None:
            assert state["trajectory"]["profile"]  # open: the whole episode once it is over
        else:
            assert state["trajectory"] is None and state["outcome"] is not None
            hidden = json.dumps(session._env.trajectory().profile)
            assert hidden not in json.dumps(state)


def test_serve_sealed_says_so_at_start_and_logs_the_secret_when_it_stops(monkeypatch, capsys):
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: [sock.close() for sock in sockets])
    assert main(["serve", "SEAD-Outbound-v0", "--port", "0", "--sealed"]) == 0
    err = capsys.readouterr().err
    assert "sealed (the secret is logged when the server stops)" in err
    secret = re.search(r"sealed server's secret: ([0-9a-f]{32}) \(`--unseal \1` serves the same episodes", err).group(1)
    assert main(["serve", "SEAD-Outbound-v0", "--port", "0", "--unseal", secret]) == 0
    assert f"sealed server's secret: {secret}" in capsys.readouterr().err
    assert main(["serve", "SEAD-Outbound-v0", "--port", "0", "--unseal", "12"]) == 2
    assert "unseal (--unseal) needs the secret of a sealed run" in capsys.readouterr().err
