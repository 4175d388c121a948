"""Run-folder writes at their edges (issue 43, item 6): the free-space line under which an unexplained
write failure is a full disk, and the checks that a saved file is whole, byte for byte at their limits."""

from __future__ import annotations

import shutil

import pytest

from trainers.common import DiskFullError, atomic

UNEXPLAINED = RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")


@pytest.mark.parametrize(("free", "full"), [(0, True), (1024 * 1024 - 1, True), (1024 * 1024, False)])
def test_an_unexplained_failure_is_a_full_disk_below_one_mebibyte_free(tmp_path, monkeypatch, free, full):
    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(1 << 30, (1 << 30) - free, free))
    error = atomic.disk_full_error(tmp_path / "optimizer.pt", UNEXPLAINED)
    assert isinstance(error, DiskFullError) if full else error is None


@pytest.mark.parametrize("words", ["No space left on device", "Disk quota exceeded"])
def test_an_error_that_only_says_the_disk_or_quota_is_full_is_disk_full_with_space_free(tmp_path, monkeypatch, words):
    """A library that re-raises ENOSPC or EDQUOT as text (no errno) still names a full disk, even where
    the disk has room again by the time it is checked."""
    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(1 << 30, 0, 1 << 30))
    error = atomic.disk_full_error(tmp_path / "model.safetensors", RuntimeError(f"write failed: {words}"))
    assert isinstance(error, DiskFullError) and words in str(error)
    assert atomic.disk_full_error(tmp_path / "model.safetensors", RuntimeError("write failed")) is None
