"""``dialogue-gym serve --sealed`` (issue 32, item 3): a client's seed picks an episode keyed by the
server's secret, revealed when the server stops; ``--unseal`` serves the same episodes again."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openenv")

import uvicorn  # noqa: E402

from dialogue_gym.cli import main  # noqa: E402
from dialogue_gym.integrations.openenv_server import DialogueGymEnvironment  # noqa: E402
from dialogue_gym.sealing import Seal  # noqa: E402

SECRET = "00112233445566778899aabbccddeeff"


def start(seal, seed=3):
    """The owner's profile a client playing SEAD's owner gets on ``reset(seed=...)`` (it depends on the episode seed)."""
    session = DialogueGymEnvironment("SEAD-Outbound-v0", "user", seal=seal)
    profile = session.reset(seed=seed).profile
    return session, profile


def test_a_sealed_session_keys_the_clients_seed_by_the_secret():
    session, sealed = start(Seal.parse(SECRET))
    assert session.state.seed == 3 and session._env.game.seed == Seal.parse(SECRET).seed("session", 3)
    assert start(Seal.parse(SECRET))[1] == sealed
    assert [start(Seal.parse(f"{n:032x}"))[1] for n in range(1, 6)].count(sealed) < 5
    open_session, _ = start(None)
    assert open_session.state.seed == open_session._env.game.seed == 3
    assert session._env.driver.seal == Seal.parse(SECRET) and open_session._env.driver.seal is None


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
