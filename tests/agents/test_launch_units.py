"""The agent launcher's numba cache seeding, run in this process (issue 43, item 6: launch.py's mutants):
each in-tree cache's index and code files land in numba's folder for that source folder under the
private cache folder, which may already hold it."""

from __future__ import annotations

import hashlib
import os

from dialogue_gym.agents import launch


def test_numba_caches_are_copied_into_the_private_folder_even_where_their_folder_already_exists(tmp_path, monkeypatch):
    private = tmp_path / "private"
    monkeypatch.setattr(launch, "NUMBA_CACHE_DIR", str(private))
    monkeypatch.setenv("NUMBA_CACHE_DIR", "unset")  # restored after the test
    cache = tmp_path / "pkg" / "__pycache__"
    cache.mkdir(parents=True)
    for name in ("dtw.align-1.py311.nbi", "dtw.align-1.py311.1.nbc", "dtw.cpython-311.pyc"):
        (cache / name).write_bytes(name.encode())
    folder = str(tmp_path / "pkg")
    target = private / f"pkg_{hashlib.sha1(folder.encode()).hexdigest()}"  # numba's own subpath rule
    target.mkdir(parents=True)  # numba (or an earlier copy) made it first
    (target / "old.nbi").write_bytes(b"kept")
    launch.seed_numba_cache([str(cache)])
    assert sorted(os.listdir(target)) == ["dtw.align-1.py311.1.nbc", "dtw.align-1.py311.nbi", "old.nbi"]
    assert (target / "dtw.align-1.py311.nbi").read_bytes() == b"dtw.align-1.py311.nbi"
    assert os.environ["NUMBA_CACHE_DIR"] == str(private)
