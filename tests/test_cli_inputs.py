"""The CLI's own flags and hostile inputs to ``export`` and ``compare``: exit 2 with one line that
names the file, the field and the fix; never a traceback."""

from __future__ import annotations

import pytest

import dialogue_gym
from dialogue_gym.cli import main


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"dialogue-gym {dialogue_gym.__version__}\n"
