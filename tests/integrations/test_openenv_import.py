"""Importing the OpenEnv client must not import the server or gradio (issue 44: the client took 31 s to
import at load 15, 20 s of it gradio, pulled in through the server's web interface).

The cause was upstream as well as here: openenv-core 0.3.0's ``openenv/core/__init__.py`` imports
``env_server`` (its FastAPI app and gradio web interface) before any submodule, so even
``openenv.core.env_client`` brings gradio. So the client (:mod:`dialogue_gym.integrations.openenv`)
imports no ``openenv`` module at all: it speaks the server's ``/ws`` protocol itself with ``websockets``,
and the server is :mod:`dialogue_gym.integrations.openenv_server`, loaded only when serving.
``python -X importtime -c "import dialogue_gym.integrations.openenv"`` on the shared 2-core machine at
load 3-4: 7.0-8.5 s cumulative before (4.7 s of it gradio), about 0.15 s after.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("websockets") is None, reason="needs the openenv extra (websockets)")


def test_the_client_imports_neither_the_server_nor_gradio():
    code = (
        "import sys\n"
        "from dialogue_gym.integrations.openenv import DialogueAction, DialogueGymClient, SyncDialogueGymClient\n"
        "heavy = sorted(name for name in sys.modules if name.split('.')[0] in {'gradio', 'uvicorn', 'fastapi', 'starlette', 'openenv', 'pydantic'}"
        " or name == 'dialogue_gym.integrations.openenv_server')\n"
        "print(' '.join(heavy[:5]))\n"
        "sys.exit(1 if heavy else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"importing the client imported: {done.stdout.strip()} {done.stderr[-2000:]}"
